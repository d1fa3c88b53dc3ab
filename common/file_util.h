// Small file helpers shared by components that read whole files.
// Thread-compatible.
#ifndef RISTRETTO_COMMON_FILE_UTIL_H_
#define RISTRETTO_COMMON_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"

namespace ristretto {

// Returns the bytes of the file at `path`. kNotFound ("cannot open PATH")
// if it cannot be opened.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_FILE_UTIL_H_
