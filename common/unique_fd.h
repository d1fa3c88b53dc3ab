// A file descriptor closed on every return path (RAII), for code that uses
// POSIX I/O directly (common/atomic_file.cc, common/secret_file.cc).
// Thread-compatible.
#ifndef RISTRETTO_COMMON_UNIQUE_FD_H_
#define RISTRETTO_COMMON_UNIQUE_FD_H_

#include <unistd.h>

namespace ristretto {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  // Gives up ownership: the caller closes it (and can check close's error).
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_UNIQUE_FD_H_
