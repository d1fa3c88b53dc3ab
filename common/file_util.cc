#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace ristretto {

const char* DescribeFileType(unsigned int st_mode) {
  switch (st_mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the file type is
  // checked before anything is read.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat("cannot open ", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is ", DescribeFileType(st.st_mode), ", not a regular file"));
  }
  if (st.st_size > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is ", st.st_size,
                                                   " bytes, more than the ",
                                                   max_bytes, " allowed"));
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof(buffer));
    if (got < 0) {
      const int error = errno;
      if (error == EINTR) continue;
      return absl::ErrnoToStatus(error, absl::StrCat("cannot read ", path));
    }
    if (got == 0) break;
    out.append(buffer, static_cast<size_t>(got));
    // A file that grows while it is read is capped all the same.
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " is more than the ", max_bytes, " bytes allowed"));
    }
  }
  return out;
}

}  // namespace ristretto
