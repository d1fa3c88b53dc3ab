// Subprocess (common/subprocess.h) on real child processes: it notices an
// exit nobody waited for, reports the status, and signals nothing once the
// child is gone.
#include "common/subprocess.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/common/temp_dir.h"

namespace ristretto {
namespace {

using std::chrono::milliseconds;

// Polls running() alone (no Wait) until it is false; the deadline only
// catches a hang.
bool SeenExitedByRunning(Subprocess& p) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!p.running()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

TEST(SubprocessTest, RunningSeesAnExitNobodyWaitedFor) {
  tests::TempDir dir("subprocess");
  Subprocess p({"/bin/sh", "-c", "echo bye; exit 3"}, dir.path() + "/log");
  ASSERT_TRUE(SeenExitedByRunning(p)) << "running() never turned false";
  EXPECT_EQ(p.Wait(milliseconds(0)), std::optional<int>(3));
  EXPECT_EQ(p.Log(), "bye\n");
}

TEST(SubprocessTest, RunningSeesAKillAndTheStatusIs128PlusTheSignal) {
  tests::TempDir dir("subprocess");
  Subprocess p({"/bin/sh", "-c", "echo up; exec sleep 600"},
               dir.path() + "/log");
  ASSERT_TRUE(p.WaitForLog("up", std::chrono::minutes(2)));
  EXPECT_TRUE(p.running());
  EXPECT_FALSE(p.Wait(milliseconds(0)).has_value());
  ASSERT_EQ(kill(p.pid(), SIGKILL), 0);  // from outside, as a crash would be
  ASSERT_TRUE(SeenExitedByRunning(p));
  EXPECT_EQ(p.Wait(milliseconds(0)), std::optional<int>(128 + SIGKILL));
  // Reaped: a signal now goes nowhere (the PID may be another process's).
  p.Signal(SIGTERM);
  EXPECT_FALSE(p.running());
}

// A child reaped by someone else (here the test itself; in a process that
// ignores SIGCHLD, the kernel) has exited, with its status lost: running()
// must not call it alive for ever (waitpid answers ECHILD).
TEST(SubprocessTest, AChildReapedElsewhereHasExitedWithAnUnknownStatus) {
  tests::TempDir dir("subprocess");
  Subprocess p({"/bin/sh", "-c", "exit 5"}, dir.path() + "/log");
  int status = 0;
  ASSERT_EQ(waitpid(p.pid(), &status, 0), p.pid());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 5);
  EXPECT_FALSE(p.running());
  EXPECT_EQ(p.Wait(milliseconds(0)), std::optional<int>(-1));
}

TEST(SubprocessTest, SignalStopsARunningChild) {
  tests::TempDir dir("subprocess");
  Subprocess p({"/bin/sh", "-c", "echo up; exec sleep 600"},
               dir.path() + "/log");
  ASSERT_TRUE(p.WaitForLog("up", std::chrono::minutes(2)));
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(std::chrono::minutes(2)), std::optional<int>(128 + SIGTERM));
  EXPECT_FALSE(p.running());
}

}  // namespace
}  // namespace ristretto
