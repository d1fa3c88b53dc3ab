// Small file helpers shared by components that read whole files.
// Thread-compatible.
#ifndef RISTRETTO_COMMON_FILE_UTIL_H_
#define RISTRETTO_COMMON_FILE_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ristretto {

// The cap of ReadFileToString: every file the tools read whole (contracts,
// checkpoint state, evaluations, study files) is far smaller; a larger one
// is refused before it is read, not loaded into memory.
inline constexpr int64_t kMaxReadFileBytes = int64_t{64} << 20;  // 64 MiB

// Returns the bytes of the regular file at `path`, at most max_bytes.
// Errors name the path and what went wrong:
//   kNotFound "cannot open PATH: No such file or directory";
//   other open errors with their strerror (a symbolic-link loop, a denied
//   permission), via absl::ErrnoToStatus;
//   kInvalidArgument "PATH is a directory" (a FIFO, a character device, a
//   block device, a socket: never opened for a blocking read), or
//   "PATH is N bytes, more than the M allowed".
absl::StatusOr<std::string> ReadFileToString(
    const std::string& path, int64_t max_bytes = kMaxReadFileBytes);

// "a directory", "a FIFO", … for a st_mode that is not a regular file;
// "a regular file" otherwise. For messages.
const char* DescribeFileType(unsigned int st_mode);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_FILE_UTIL_H_
