#include "common/blas_thread_tuner.h"

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace ristretto {
namespace {

// Runs `steps` steps where a step with one thread takes `single` and one
// with the full count takes `full` per sample; returns the counts used.
std::vector<int> RunSteps(BlasThreadTuner& tuner, int steps,
                          absl::Duration single, absl::Duration full) {
  std::vector<int> used;
  for (int i = 0; i < steps; ++i) {
    const int threads = tuner.BeginStep();
    used.push_back(threads);
    tuner.EndStep(threads, (threads == 1 ? single : full) * 100, 100);
  }
  return used;
}

int CountOnes(const std::vector<int>& used, size_t from = 0) {
  int ones = 0;
  for (size_t i = from; i < used.size(); ++i) ones += used[i] == 1 ? 1 : 0;
  return ones;
}

TEST(BlasThreadTunerTest, QuietMachineKeepsTheFullCountExceptToExplore) {
  std::vector<int> applied;
  BlasThreadTuner tuner(2, [&](int n) { applied.push_back(n); });
  // Two threads 1.44x faster (a quiet 2-core box).
  const std::vector<int> used =
      RunSteps(tuner, 320, absl::Microseconds(144), absl::Microseconds(100));
  EXPECT_EQ(tuner.preferred(), 2);
  // After the five alternating steps, one step in 32 explores one thread.
  EXPECT_EQ(CountOnes(used, 5), (320 - 5) / 32);
  EXPECT_EQ(tuner.steps(), 320);
  EXPECT_EQ(tuner.single_thread_steps(), CountOnes(used));
  // OpenBLAS is told the count of every step.
  EXPECT_EQ(applied, used);
}

TEST(BlasThreadTunerTest, LoadedMachineSwitchesToOneThreadAndBackWhenQuiet) {
  BlasThreadTuner tuner(2, [](int) {});
  // Oversubscribed: the full count is 3x slower.
  std::vector<int> used =
      RunSteps(tuner, 200, absl::Microseconds(100), absl::Microseconds(300));
  EXPECT_EQ(tuner.preferred(), 1);
  EXPECT_GE(CountOnes(used, 5), 200 - 5 - (200 / 32) - 1);
  // The load goes away: the exploring steps notice within a few rounds.
  used = RunSteps(tuner, 200, absl::Microseconds(144), absl::Microseconds(100));
  EXPECT_EQ(tuner.preferred(), 2);
  EXPECT_LE(CountOnes(used), 4 * 32 + 200 / 32);
  EXPECT_EQ(used.back(), 2);
}

TEST(BlasThreadTunerTest, NoiseWithinTheMarginKeepsTheFullCount) {
  BlasThreadTuner tuner(4, [](int) {});
  // One thread 3 % faster: within the margin, the full count stays.
  RunSteps(tuner, 100, absl::Microseconds(97), absl::Microseconds(100));
  EXPECT_EQ(tuner.preferred(), 4);
}

TEST(BlasThreadTunerTest, TheWarmUpStepIsNotMeasured) {
  BlasThreadTuner tuner(2, [](int) {});
  // Step 0 (full count) is 50x slow, as a first step with cold caches can
  // be; it must not make one thread look better.
  int threads = tuner.BeginStep();
  ASSERT_EQ(threads, 2);
  tuner.EndStep(threads, absl::Milliseconds(500), 100);
  RunSteps(tuner, 4, absl::Microseconds(144), absl::Microseconds(100));
  EXPECT_EQ(tuner.preferred(), 2);
}

TEST(BlasThreadTunerTest, OneThreadBetweenUpdates) {
  std::vector<int> applied;
  BlasThreadTuner tuner(2, [&](int n) { applied.push_back(n); });
  tuner.EndSteps();
  ASSERT_EQ(applied, std::vector<int>({1}));
  tuner.EndStep(tuner.BeginStep(), absl::Milliseconds(1), 10);  // 2 threads
  ASSERT_EQ(applied, std::vector<int>({1, 2}));
  tuner.EndSteps();
  EXPECT_EQ(applied, std::vector<int>({1, 2, 1}));
}

// A reproducible run's steps always get the full count, even where the
// measurements prefer one thread, and do not move the measurements.
TEST(BlasThreadTunerTest, FixedStepsUseTheFullCountAndMeasureNothing) {
  std::vector<int> applied;
  BlasThreadTuner tuner(4, [&](int n) { applied.push_back(n); });
  // Measured: one thread is much faster (a loaded machine).
  for (int i = 0; i < 12; ++i) {
    const int threads = tuner.BeginStep();
    tuner.EndStep(threads, absl::Milliseconds(threads == 1 ? 1 : 9), 10);
  }
  ASSERT_EQ(tuner.preferred(), 1);
  const int64_t steps = tuner.steps(), single = tuner.single_thread_steps();
  applied.clear();
  for (int i = 0; i < 40; ++i) EXPECT_EQ(tuner.BeginFixedStep(), 4);
  EXPECT_EQ(applied, std::vector<int>(40, 4));
  EXPECT_EQ(tuner.steps(), steps);
  EXPECT_EQ(tuner.single_thread_steps(), single);
  EXPECT_EQ(tuner.preferred(), 1);
}

TEST(BlasThreadTunerTest, InactiveWithOneThreadOrNoBlas) {
  int calls = 0;
  for (int max : {1, -1}) {
    BlasThreadTuner tuner(max, [&](int) { ++calls; });
    EXPECT_FALSE(tuner.active());
    for (int i = 0; i < 40; ++i) {
      const int threads = tuner.BeginStep();
      EXPECT_EQ(threads, max);
      tuner.EndStep(threads, absl::Milliseconds(1), 10);
    }
    tuner.EndSteps();
    EXPECT_EQ(tuner.steps(), 0);
  }
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace ristretto
