#include "common/tls_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain: a server's certificate, or a client's "
          "under mutual TLS (with --tls-key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert (mode 600)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificate: clients verify the server against it; a "
          "server given it requires client certificates it signed (mutual "
          "TLS)");

namespace ristretto {

TlsFiles TlsFilesFromFlags() {
  return {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
          absl::GetFlag(FLAGS_tls_ca)};
}

bool MutualTlsFromFlags() { return !absl::GetFlag(FLAGS_tls_ca).empty(); }

absl::StatusOr<TlsFiles> CoordinatorClientTlsFiles(const TlsFiles& server,
                                                   const TlsFiles& client) {
  if (client.cert_file.empty() != client.key_file.empty()) {
    return absl::InvalidArgumentError(
        client.cert_file.empty()
            ? "--coordinator-tls-key needs --coordinator-tls-cert"
            : "--coordinator-tls-cert needs --coordinator-tls-key");
  }
  TlsFiles files = client;
  if (files.ca_file.empty()) files.ca_file = server.ca_file;
  if (files.cert_file.empty()) {
    files.cert_file = server.cert_file;
    files.key_file = server.key_file;
  }
  if (files.ca_file.empty() && !files.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "no CA to verify the coordinator against: the learner would show "
        "its certificate (--tls-cert or --coordinator-tls-cert) to a "
        "coordinator it cannot verify; give --coordinator-tls-ca (or "
        "--tls-ca)");
  }
  return files;
}

}  // namespace ristretto
