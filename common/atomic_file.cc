#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace ristretto {
namespace {

std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::Status ErrnoStatus(int err, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status WriteFileDurably(const std::string& path,
                              absl::string_view content) {
  const absl::string_view pieces[] = {content};
  return WriteFileDurably(path, absl::MakeConstSpan(pieces));
}

namespace {

// WriteFileDurably with the open(2) flags given (besides O_WRONLY,
// O_CREAT and O_CLOEXEC).
absl::Status WriteWithFlags(const std::string& path, int flags,
                            absl::Span<const absl::string_view> pieces) {
  const int raw =
      open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (raw < 0) return ErrnoStatus(errno, absl::StrCat("cannot create ", path));
  UniqueFd fd(raw);
  auto fail = [&](const char* verb) {
    const int err = errno;
    close(fd.Release());
    unlink(path.c_str());
    return ErrnoStatus(err, absl::StrCat("cannot ", verb, " ", path));
  };
  for (const absl::string_view content : pieces) {
    const char* p = content.data();
    size_t left = content.size();
    while (left > 0) {
      const ssize_t n = write(raw, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail("write");
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  // Delayed allocation can report a full disk only here.
  if (fsync(raw) != 0) return fail("fsync");
  if (close(fd.Release()) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return ErrnoStatus(err, absl::StrCat("cannot close ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileDurably(const std::string& path,
                              absl::Span<const absl::string_view> pieces) {
  return WriteWithFlags(path, O_TRUNC, pieces);
}

absl::Status SyncDirectory(const std::string& dir) {
  const int raw = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", dir));
  UniqueFd fd(raw);
  if (fsync(raw) != 0 && errno != EINVAL) {  // EINVAL: no dir fsync here
    return ErrnoStatus(errno, absl::StrCat("cannot fsync ", dir));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content) {
  const absl::string_view pieces[] = {content};
  return WriteFileAtomically(path, absl::MakeConstSpan(pieces));
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::Span<const absl::string_view> pieces) {
  // Unique per process and call (two threads replacing one file never
  // share a temporary file); created exclusively, never through a link.
  static std::atomic<uint64_t> next{0};
  const std::string tmp =
      absl::StrCat(path, ".tmp.", getpid(), ".",
                   next.fetch_add(1, std::memory_order_relaxed));
  if (absl::Status s = WriteWithFlags(tmp, O_EXCL | O_NOFOLLOW, pieces);
      !s.ok()) {
    return s;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(err, absl::StrCat("cannot rename into ", path));
  }
  return SyncDirectory(ParentDirectory(path));
}

}  // namespace ristretto
