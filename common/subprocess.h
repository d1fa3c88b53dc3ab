// Subprocess: runs a child process with its stdout+stderr captured to a log
// file, and talks to it with signals. The child gets its own process group
// (a terminal's Ctrl-C reaches only the parent, which shuts children down in
// order) and SIGTERM if the parent dies. Used by `ristretto up` and the
// integration tests. Not thread-safe.
#ifndef RISTRETTO_COMMON_SUBPROCESS_H_
#define RISTRETTO_COMMON_SUBPROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ristretto {

class Subprocess {
 public:
  // argv[0] must be a path (execv, no PATH search). The log is truncated
  // here, before the child exists: a caller that reads the log right after
  // construction never sees an earlier process's lines (a restarted
  // coordinator's old "listening on" address). Everything the child runs
  // before execv is prepared here too (no allocation after fork).
  Subprocess(std::vector<std::string> argv, std::string log_path)
      : log_path_(std::move(log_path)) {
    const int fd =
        open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      // An ignored SIGPIPE (`up` ignores it) would be inherited across
      // execv: the child starts with the default.
      struct sigaction default_action = {};
      default_action.sa_handler = SIG_DFL;
      sigaction(SIGPIPE, &default_action, nullptr);
      if (fd >= 0) {
        dup2(fd, 1);  // dup2 clears O_CLOEXEC on the copies
        dup2(fd, 2);
      }
      execv(args[0], args.data());
      _exit(127);
    }
    if (fd >= 0) close(fd);
  }
  ~Subprocess() {
    if (running()) {
      kill(pid_, SIGKILL);
      Wait(std::chrono::seconds(10));
    }
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // Whether the process has not exited yet. Reaps it when it has (a
  // Wait(0)), so a crash is seen without anyone waiting first: a flag set
  // only by Wait never changed for a process nobody waited for.
  bool running() {
    return pid_ > 0 && !Wait(std::chrono::milliseconds(0)).has_value();
  }
  // Nothing once the process has exited: running() reaps it, and a reaped
  // PID may already belong to another process.
  void Signal(int sig) {
    if (running()) kill(pid_, sig);
  }

  // Waits for exit; returns the exit code (128 + signal if killed; -1 when
  // the process was reaped elsewhere, so its status is lost), or nullopt on
  // timeout. Wait(0) looks once, without sleeping.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    // Never started: waitpid(-1) would reap any child.
    if (pid_ <= 0) return std::nullopt;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_code_.has_value()) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (r < 0 && errno == ECHILD) {
        // Not our child any more (reaped elsewhere, or SIGCHLD ignored so
        // the kernel reaped it): it has exited, with a status nobody can
        // read. Looping would call it running for ever and a later kill()
        // could reach whatever process reuses the PID.
        exit_code_ = -1;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exit_code_;
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Waits until the log contains `text`; false on timeout or exit.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Log().find(text) != std::string::npos) return true;
      if (Wait(std::chrono::milliseconds(0)).has_value()) {
        return Log().find(text) != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_SUBPROCESS_H_
