#include "common/shutdown_signal.h"

#include <signal.h>

#include <atomic>

#include "gtest/gtest.h"

namespace ristretto {
namespace {

TEST(ShutdownSignalTest, SignalsReachTheWatcherInOrderAndWaitReturns) {
  ASSERT_TRUE(InstallShutdownHandlers().ok());
  ASSERT_TRUE(InstallShutdownHandlers().ok());  // idempotent
  // A signal before the watcher exists waits in the pipe.
  ASSERT_EQ(raise(SIGTERM), 0);
  std::atomic<int> last{0};
  {
    SignalWatcher watcher([&last](int n) { last.store(n); });
    EXPECT_TRUE(watcher.WaitForSignal(absl::Seconds(10)));
    EXPECT_EQ(watcher.signals(), 1);
    ASSERT_EQ(raise(SIGINT), 0);
    for (int i = 0; i < 1000 && watcher.signals() < 2; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_EQ(watcher.signals(), 2);
    EXPECT_EQ(last.load(), 2);
  }
  // A new watcher starts from zero and times out without a signal.
  SignalWatcher quiet;
  EXPECT_FALSE(quiet.WaitForSignal(absl::Milliseconds(50)));
  EXPECT_EQ(quiet.signals(), 0);
}

}  // namespace
}  // namespace ristretto
