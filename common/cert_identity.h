// Which id a process takes from its client certificate: a certificate that
// names its holder (auth::CertificateNames: URI SAN urn:ristretto:actor:ID
// or urn:ristretto:learner:ID) admits only those ids at the coordinator, so
// an actor or learner started with it uses the id it names when none is
// given, and refuses at start-up an id the coordinator would refuse on
// every call.
//
// Thread-safety: pure functions (they read the file named).
#ifndef RISTRETTO_COMMON_CERT_IDENTITY_H_
#define RISTRETTO_COMMON_CERT_IDENTITY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/auth.h"

namespace ristretto {

// The URI subject alternative names of the first certificate in the PEM
// file `cert_file`, in order (none: empty). kInvalidArgument naming the
// file when it holds no certificate; kNotFound when it cannot be opened.
absl::StatusOr<std::vector<std::string>> ReadCertificateUris(
    const std::string& cert_file);

// The id to use in `role` (kActor or kLearner) given `given_id` (the
// `flag`, e.g. "--actor-id"; "" when not given) and the client certificate
// `cert_file` ("" when none):
//   * no certificate, or one that names nothing: `given_id` as it is;
//   * `given_id` among the ids it names for `role`: `given_id`;
//   * no `given_id` and exactly one id named for `role`: that id.
// Otherwise kInvalidArgument naming the file, the flag and the names (the
// coordinator would refuse every call): an id it does not name, or none
// given where it names several or none for `role`.
absl::StatusOr<std::string> ResolveIdFromCertificate(
    auth::Role role, const std::string& given_id, const std::string& cert_file,
    absl::string_view flag);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_CERT_IDENTITY_H_
