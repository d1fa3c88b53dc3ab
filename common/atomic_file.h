// Writing files so that a full disk or a crash never leaves a torn file:
// ristretto's own writer (POSIX open/write/fsync/rename, every error with
// its errno text). Checkpoints and exported policies are serialised to
// memory first and written with these, so no library writer that can throw
// from a destructor (LibTorch's PyTorchStreamWriter does) touches the disk.
// Thread-compatible (distinct paths may be written from distinct threads).
#ifndef RISTRETTO_COMMON_ATOMIC_FILE_H_
#define RISTRETTO_COMMON_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ristretto {

// The status for a failed system call on `what`, with strerror(err):
// kResourceExhausted for ENOSPC and EDQUOT ("... : No space left on
// device"), kPermissionDenied for EACCES/EPERM/EROFS, kNotFound for ENOENT,
// else kInternal.
absl::Status ErrnoStatus(int err, absl::string_view what);

// Creates (or truncates) `path`, writes `content`, fsyncs and closes it.
// On any error the partial file is removed.
absl::Status WriteFileDurably(const std::string& path,
                              absl::string_view content);
// The same with the content given in pieces, written one after the other
// (e.g. a header and a body, without joining them in memory first).
absl::Status WriteFileDurably(const std::string& path,
                              absl::Span<const absl::string_view> pieces);

// Replaces `path` with `content` atomically: a temporary file beside it
// ("PATH.tmp.PID.N", N counting the process's calls; created with O_EXCL
// and O_NOFOLLOW), written durably, renamed over `path`, and the directory
// fsynced. A reader sees the previous file or the whole new one; on error
// the previous file is untouched and the temporary file removed (an error
// from the directory's fsync comes after the rename: the new file is in
// place, its survival of a crash is not assured).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content);
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::Span<const absl::string_view> pieces);

// fsyncs a directory (so that a rename inside it survives a crash).
absl::Status SyncDirectory(const std::string& dir);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_ATOMIC_FILE_H_
