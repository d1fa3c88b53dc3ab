// TLS for ristretto's gRPC servers and clients, from PEM files
// (scripts/make_dev_certs.sh makes a development set), and the rule that
// keeps an unprotected server off the network.
//
// Server (--tls-cert, --tls-key [, --tls-ca]):
//   none          plaintext (insecure credentials)
//   cert + key    TLS; clients verify the server against their CA
//   + ca          mutual TLS: every client must present a certificate signed
//                 by that CA, or the handshake fails
// Client (--tls-ca [, --tls-cert, --tls-key]):
//   none          plaintext
//   ca            TLS, the server's certificate verified against ca (its
//                 name must match the address dialled: DNS or IP SAN)
//   + cert + key  also presents a client certificate (servers under mTLS)
//
// Bad input is kInvalidArgument naming the flag and the file: a cert
// without its key (or the reverse), an unreadable or non-PEM file, a
// private key readable by group or others (as ssh refuses such keys).
//
// Thread-safety: pure functions.
#ifndef RISTRETTO_COMMON_GRPC_SECURITY_H_
#define RISTRETTO_COMMON_GRPC_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace ristretto {

struct TlsFiles {
  std::string cert_file;  // PEM certificate chain (--tls-cert)
  std::string key_file;   // PEM private key, mode 600 (--tls-key)
  std::string ca_file;    // PEM CA certificate(s) (--tls-ca)

  bool empty() const {
    return cert_file.empty() && key_file.empty() && ca_file.empty();
  }
};

// Server credentials per the table above.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files);

// Client credentials per the table above; a cert or key without ca is
// kInvalidArgument (a client that does not verify the server is not TLS).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeChannelCredentials(const TlsFiles& files);

// True for "localhost", 127.0.0.0/8 and ::1 ("[::1]" too).
bool IsLoopbackHost(absl::string_view host);

// The host part of "HOST:PORT", "[V6]:PORT" or a bare host.
std::string HostOfAddress(absl::string_view address);

// A server that authenticates nobody (no token, no mutual TLS) may bind
// only to loopback: kFailedPrecondition for any other address (naming it
// and the flags that fix it) unless `allow_insecure_network`; TLS alone
// does not count, it hides the traffic but lets anyone call. Returns the
// one-line notice main() logs at start-up (what protects the server, or that
// nothing does).
absl::StatusOr<std::string> CheckExposure(absl::string_view bind_address,
                                          bool tls, bool authenticated,
                                          bool allow_insecure_network);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_GRPC_SECURITY_H_
