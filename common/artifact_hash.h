// Content hashes of the artifacts a learner records with the coordinator and
// `ristretto study export` verifies (lowercase hex SHA-256):
//  * a policy: for a directory, the bytes of <dir>/contract.json followed by
//    the bytes of <dir>/policy.pt (as written by learner::ExportPolicy),
//    nothing between them; for a regular file, its bytes;
//  * a checkpoint directory: for every regular file in name order, its name,
//    one NUL byte, and its bytes.
#ifndef RISTRETTO_COMMON_ARTIFACT_HASH_H_
#define RISTRETTO_COMMON_ARTIFACT_HASH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sha256.h"

namespace ristretto {

// Feeds the bytes of `path` to `hash`. kNotFound if it cannot be opened,
// kInternal on a read error.
absl::Status HashFile(const std::string& path, Sha256* hash);

// Errors: kNotFound (path, contract.json or policy.pt missing), kInternal.
absl::StatusOr<std::string> PolicyArtifactSha256(const std::string& path);

// Errors: kNotFound (not a readable directory), kInternal.
absl::StatusOr<std::string> CheckpointSha256(const std::string& dir);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_ARTIFACT_HASH_H_
