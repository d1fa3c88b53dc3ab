#include "common/grpc_security.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/text_util.h"
#include "grpcpp/security/server_credentials.h"

namespace ristretto {
namespace {

// Larger than any certificate chain or key we expect; bounds what a wrong
// path (a log file, /dev/zero) can make us read.
constexpr size_t kMaxPemBytes = 1 << 20;

absl::StatusOr<std::string> ReadPem(const std::string& flag,
                                    const std::string& path, bool private_key) {
  const std::string where =
      absl::StrCat("--", flag, " ", EscapeForMessage(path, 200));
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": cannot read it"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": not a regular file"));
  }
  if (private_key && (st.st_mode & 077) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": private key is readable by group or others (chmod 600)"));
  }
  if (static_cast<size_t>(st.st_size) > kMaxPemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": larger than ", kMaxPemBytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": cannot read it"));
  }
  const std::string pem = text.str();
  if (!absl::StrContains(pem, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": not a PEM file (no -----BEGIN line)"));
  }
  return pem;
}

absl::Status CheckPair(const TlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(files.cert_file.empty()
                                          ? "--tls-key needs --tls-cert"
                                          : "--tls-cert needs --tls-key");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files) {
  if (files.empty()) return grpc::InsecureServerCredentials();
  if (absl::Status pair = CheckPair(files); !pair.ok()) return pair;
  if (files.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-ca on a server needs --tls-cert and --tls-key");
  }
  grpc::SslServerCredentialsOptions options(
      files.ca_file.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  absl::StatusOr<std::string> cert =
      ReadPem("tls-cert", files.cert_file, false);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls-key", files.key_file, true);
  if (!key.ok()) return key.status();
  if (!files.ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("tls-ca", files.ca_file, false);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
  }
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeChannelCredentials(const TlsFiles& files) {
  if (files.empty()) return grpc::InsecureChannelCredentials();
  if (absl::Status pair = CheckPair(files); !pair.ok()) return pair;
  if (files.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert/--tls-key on a client need --tls-ca (the CA that signed "
        "the server's certificate)");
  }
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> ca = ReadPem("tls-ca", files.ca_file, false);
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *std::move(ca);
  if (!files.cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        ReadPem("tls-cert", files.cert_file, false);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem("tls-key", files.key_file, true);
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *std::move(cert);
    options.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(options);
}

std::string HostOfAddress(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close != absl::string_view::npos) {
      return std::string(address.substr(1, close - 1));
    }
    return std::string(address);
  }
  // One colon: HOST:PORT; several: a bare IPv6 address.
  const size_t colon = address.find(':');
  if (colon != absl::string_view::npos &&
      address.find(':', colon + 1) == absl::string_view::npos) {
    return std::string(address.substr(0, colon));
  }
  return std::string(address);
}

bool IsLoopbackHost(absl::string_view host) {
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "::1") return true;
  const std::vector<absl::string_view> parts = absl::StrSplit(host, '.');
  if (parts.size() != 4 || parts[0] != "127") return false;
  for (const absl::string_view part : parts) {
    int value = 0;
    if (part.empty() || !absl::SimpleAtoi(part, &value) || value < 0 ||
        value > 255) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::string> CheckExposure(absl::string_view bind_address,
                                          bool tls, bool authenticated,
                                          bool allow_insecure_network) {
  const std::string host = HostOfAddress(bind_address);
  const bool loopback = IsLoopbackHost(host);
  if (tls && authenticated) {
    return std::string("TLS on, every call authenticated");
  }
  if (!authenticated && !loopback && !allow_insecure_network) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve on ", EscapeForMessage(bind_address, 200),
        " without credentials: anyone on the network could call it; give a "
        "token (and --tls-cert/--tls-key), bind to 127.0.0.1, or pass "
        "--allow-insecure-network"));
  }
  std::string notice = absl::StrCat(
      tls ? "TLS on" : "plaintext (no TLS)", ", ",
      authenticated ? "every call authenticated" : "calls NOT authenticated");
  if (!loopback) {
    absl::StrAppend(&notice, ", reachable from the network");
    if (!tls) absl::StrAppend(&notice, ": tokens and data cross it in clear");
  } else {
    absl::StrAppend(&notice, ", loopback only");
  }
  return notice;
}

}  // namespace ristretto
