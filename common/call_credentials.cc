#include "common/call_credentials.h"

#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"

namespace ristretto::auth {

absl::StatusOr<std::string> CallBearerSecret(
    const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto [first, last] = metadata.equal_range(kMetadataKey);
  if (first == last) {
    return absl::UnauthenticatedError(absl::StrCat(
        "no credentials: the call carries no '", kMetadataKey, "' metadata"));
  }
  if (std::next(first) != last) {
    return absl::UnauthenticatedError(
        absl::StrCat("more than one '", kMetadataKey, "' metadata"));
  }
  return ParseBearer(
      absl::string_view(first->second.data(), first->second.size()));
}

absl::StatusOr<std::optional<PeerCertificate>> CallPeerCertificate(
    const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> peer = context.auth_context();
  if (peer == nullptr) return std::nullopt;
  const std::vector<grpc::string_ref> pem =
      peer->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pem.empty()) return std::nullopt;
  absl::StatusOr<std::string> hash = CertificateSha256(
      absl::string_view(pem.front().data(), pem.front().size()));
  if (!hash.ok()) {
    return absl::InternalError(absl::StrCat(
        "cannot read the client certificate: ", hash.status().message()));
  }
  std::vector<std::string> uris;
  for (const grpc::string_ref& uri :
       peer->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
    uris.emplace_back(uri.data(), uri.size());
  }
  return std::optional<PeerCertificate>(
      PeerCertificate{*std::move(hash), ParseCertificateNames(uris)});
}

}  // namespace ristretto::auth
