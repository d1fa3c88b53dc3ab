// SIGTERM/SIGINT for the long-running binaries (learner, actor,
// coordinator). A self-pipe: the handler only writes one byte
// (async-signal-safe) and a watcher thread turns it into a notification
// and an optional callback. Libraries (OpenBLAS, gRPC) start threads
// before main, so masking + sigwait would not cover them all.
//
//   InstallShutdownHandlers();          // first thing in main
//   ...
//   SignalWatcher signals([&](int n) {  // n = 1 for the first signal, …
//     if (n == 1) actor.Stop(); else std::_Exit(1);
//   });
//   while (!signals.WaitForSignal(absl::Milliseconds(100))) { … }
//
// Signals that arrive between the two calls wait in the pipe and are
// delivered when the watcher starts.
#ifndef RISTRETTO_COMMON_SHUTDOWN_SIGNAL_H_
#define RISTRETTO_COMMON_SHUTDOWN_SIGNAL_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ristretto {

// Routes SIGTERM and SIGINT to the self-pipe (idempotent; thread-safe).
// kInternal if the pipe cannot be created.
absl::Status InstallShutdownHandlers();

// Watches for the signals installed above. At most one per process at a
// time (they share the pipe). Thread-safe.
class SignalWatcher {
 public:
  // `on_signal(n)` runs on the watcher thread for the n-th signal (may be
  // empty). InstallShutdownHandlers() must have succeeded.
  explicit SignalWatcher(std::function<void(int)> on_signal = nullptr);
  // Stops and joins the watcher; later signals wait in the pipe.
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // True once a signal has arrived; waits up to `timeout` for one.
  bool WaitForSignal(absl::Duration timeout);
  int signals() const;

 private:
  void Loop();

  const std::function<void(int)> on_signal_;
  mutable absl::Mutex mu_;
  int signals_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_SHUTDOWN_SIGNAL_H_
