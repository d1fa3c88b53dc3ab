// What a call to one of ristretto's gRPC servers presents to authenticate,
// read the same way by the coordinator and the learner (docs/security.md):
// the one bearer secret of its "authorization" metadata, and the client
// certificate of a mutual-TLS peer with the ids it names.
//
// Thread-safety: pure functions of the call's context.
#ifndef RISTRETTO_COMMON_CALL_CREDENTIALS_H_
#define RISTRETTO_COMMON_CALL_CREDENTIALS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/auth.h"
#include "grpcpp/server_context.h"

namespace ristretto::auth {

// The secret of the call's "authorization: Bearer <secret>" metadata
// (ParseBearer). kUnauthenticated when the call carries none, more than
// one (even identical copies: a proxy that adds its own must not be read
// as either), or a malformed one.
absl::StatusOr<std::string> CallBearerSecret(
    const grpc::ServerContextBase& context);

// A call's client certificate: the hex SHA-256 of its DER and the ids it
// names (URI SANs, CertificateNames).
struct PeerCertificate {
  std::string sha256;
  CertificateNames names;
};

// The call's client certificate; nullopt without one. gRPC reports the
// peer's leaf certificate only when it presented one, which under mutual
// TLS the handshake has verified against the server's CA (a server without
// a CA requests none). kInternal when the reported certificate cannot be
// read.
absl::StatusOr<std::optional<PeerCertificate>> CallPeerCertificate(
    const grpc::ServerContextBase& context);

}  // namespace ristretto::auth

#endif  // RISTRETTO_COMMON_CALL_CREDENTIALS_H_
