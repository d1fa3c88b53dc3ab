#include "common/shutdown_signal.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ristretto {
namespace {

int g_pipe[2] = {-1, -1};
constexpr char kSignalByte = 's';
constexpr char kExitByte = 'x';  // the watcher's own wake-up to stop

void OnSignal(int /*sig*/) {
  const int saved = errno;  // write() may change it under the interrupted code
  const char byte = kSignalByte;
  [[maybe_unused]] const ssize_t n = write(g_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

absl::Status InstallShutdownHandlers() {
  static std::once_flag once;
  static absl::Status result;
  std::call_once(once, [] {
    if (pipe(g_pipe) != 0) {
      result = absl::InternalError(
          absl::StrCat("pipe() for signal handling: ", std::strerror(errno)));
      return;
    }
    struct sigaction action = {};
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
  });
  return result;
}

SignalWatcher::SignalWatcher(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)), thread_([this] { Loop(); }) {}

SignalWatcher::~SignalWatcher() {
  const char byte = kExitByte;
  [[maybe_unused]] const ssize_t n = write(g_pipe[1], &byte, 1);
  thread_.join();
}

void SignalWatcher::Loop() {
  while (true) {
    char byte = 0;
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == kExitByte) return;
    int count = 0;
    {
      absl::MutexLock lock(&mu_);
      count = ++signals_;
    }
    if (on_signal_) on_signal_(count);
  }
}

bool SignalWatcher::WaitForSignal(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto signalled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return signals_ > 0;
  };
  mu_.AwaitWithTimeout(absl::Condition(&signalled), timeout);
  return signals_ > 0;
}

int SignalWatcher::signals() const {
  absl::MutexLock lock(&mu_);
  return signals_;
}

}  // namespace ristretto
