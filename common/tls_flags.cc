#include "common/tls_flags.h"

#include <string>

#include "absl/flags/flag.h"

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

}  // namespace ristretto
