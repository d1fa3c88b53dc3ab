#include "common/auth.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/secret_file.h"
#include "common/sha256.h"
#include "common/text_util.h"

namespace ristretto::auth {
namespace {

bool PrintableAscii(absl::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte > 0x7e) return false;
  }
  return true;
}

std::string DigestHex(absl::string_view secret) {
  return Sha256::ToHex(Sha256::Hash(secret));
}

std::string Describe(const Principal& principal) {
  return absl::StrCat(RoleName(principal.role), " '",
                      EscapeForMessage(principal.id), "'");
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kLearner:
      return "learner";
    case Role::kActor:
      return "actor";
    case Role::kOperator:
      break;
  }
  return "operator";
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ParseBearer(absl::string_view metadata_value) {
  if (metadata_value.empty()) {
    return absl::UnauthenticatedError("no credentials: the call carries no '" +
                                      std::string(kMetadataKey) + "' metadata");
  }
  if (!absl::StartsWith(metadata_value, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "malformed credentials: expected 'Bearer <token>'");
  }
  const absl::string_view secret =
      metadata_value.substr(sizeof(kBearerPrefix) - 1);
  if (secret.empty() || !PrintableAscii(secret)) {
    return absl::UnauthenticatedError(
        "malformed credentials: the token is empty or not printable ASCII");
  }
  return std::string(secret);
}

std::string BearerValue(absl::string_view secret) {
  return absl::StrCat(kBearerPrefix, secret);
}

absl::Status RequireRole(const Principal& principal,
                         std::initializer_list<Role> allowed,
                         absl::string_view what) {
  for (const Role role : allowed) {
    if (principal.role == role) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Describe(principal), " may not ", what));
}

absl::Status RequireLearner(const Principal& principal,
                            absl::string_view member_id,
                            absl::string_view what) {
  if (principal.role == Role::kLearner && principal.id == member_id) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Describe(principal), " may not ", what, " as learner '",
                   EscapeForMessage(member_id), "'"));
}

absl::Status TokenRegistry::Add(absl::string_view secret, Principal principal) {
  if (secret.size() < kMinSecretBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a token must be at least ", kMinSecretBytes,
                     " characters, got ", secret.size()));
  }
  if (!PrintableAscii(secret)) {
    return absl::InvalidArgumentError(
        "a token must be printable ASCII without spaces");
  }
  const std::string digest = DigestHex(secret);
  absl::MutexLock lock(&mu_);
  by_digest_[digest] = std::move(principal);
  return absl::OkStatus();
}

absl::StatusOr<std::string> TokenRegistry::Issue(Principal principal) {
  absl::StatusOr<std::string> secret = GenerateToken();
  if (!secret.ok()) return secret.status();
  absl::Status added = Add(*secret, std::move(principal));
  if (!added.ok()) return added;
  return secret;
}

int TokenRegistry::Revoke(const Principal& principal) {
  absl::MutexLock lock(&mu_);
  int removed = 0;
  for (auto it = by_digest_.begin(); it != by_digest_.end();) {
    if (it->second == principal) {
      by_digest_.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

absl::StatusOr<Principal> TokenRegistry::Authenticate(
    absl::string_view metadata_value) const {
  absl::StatusOr<std::string> secret = ParseBearer(metadata_value);
  if (!secret.ok()) return secret.status();
  const std::string digest = DigestHex(*secret);
  absl::MutexLock lock(&mu_);
  // Keyed by the digest, which a caller cannot steer towards a stored one:
  // the lookup's timing says nothing about the secret (see the header).
  const auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) {
    return absl::UnauthenticatedError("unknown credentials");
  }
  return it->second;
}

size_t TokenRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return by_digest_.size();
}

}  // namespace ristretto::auth
