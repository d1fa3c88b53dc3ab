#include "learner/trajectory.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// T = 3 steps, B = 6 copies, D = 4, A = 2, with episodes ending at
// (step 0, copy 3) and (step 2, copy 2): obs 4·6·4 = 96, actions 3·6·2 = 36,
// per-step arrays 18, final_obs 2·4 = 8 values.
TrajectoryChunk MakeChunk() {
  TrajectoryChunk c;
  c.run_id = "run";
  c.actor_id = "actor-0";
  c.policy_version = 7;
  c.steps = 3;
  c.copies = 6;
  c.obs_size = 4;
  c.action_size = 2;
  c.obs.assign(96, 0.5f);
  c.actions.assign(36, -0.25f);
  c.log_probs.assign(18, -1.5f);
  c.rewards.assign(18, 0.01f);
  c.dones.assign(18, 0);
  c.dones[3] = 1;
  c.dones[14] = 1;
  c.final_obs.assign(8, 1.0f);
  return c;
}

void ExpectRefused(const TrajectoryChunk& c, const std::string& message) {
  const absl::Status s = c.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << message;
  EXPECT_EQ(s.message(), message);
}

TEST(TrajectoryChunkTest, WellFormedChunkIsValid) {
  const TrajectoryChunk c = MakeChunk();
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  EXPECT_EQ(c.num_samples(), 18);
}

TEST(TrajectoryChunkTest, NumDonesCountsTheOnes) {
  TrajectoryChunk c = MakeChunk();
  EXPECT_EQ(c.num_dones(), 2);
  c.dones.assign(18, 0);
  EXPECT_EQ(c.num_dones(), 0);
  c.dones.assign(18, 1);
  EXPECT_EQ(c.num_dones(), 18);
  EXPECT_EQ(TrajectoryChunk().num_dones(), 0);
}

TEST(TrajectoryChunkTest, ChunkWithoutDonesNeedsNoFinalObservations) {
  TrajectoryChunk c = MakeChunk();
  c.dones.assign(18, 0);
  c.final_obs.clear();
  EXPECT_TRUE(c.Validate().ok());
}

TEST(TrajectoryChunkTest, DimensionsBelowOneAreRefused) {
  TrajectoryChunk c = MakeChunk();
  c.steps = 0;
  ExpectRefused(c, "chunk steps = 0 must be >= 1");
  c = MakeChunk();
  c.copies = -1;
  ExpectRefused(c, "chunk copies = -1 must be >= 1");
  c = MakeChunk();
  c.obs_size = 0;
  ExpectRefused(c, "chunk obs_size = 0 must be >= 1");
  c = MakeChunk();
  c.action_size = 0;
  ExpectRefused(c, "chunk action_size = 0 must be >= 1");
  ExpectRefused(TrajectoryChunk(), "chunk steps = 0 must be >= 1");
}

TEST(TrajectoryChunkTest, NegativePolicyVersionIsRefused) {
  TrajectoryChunk c = MakeChunk();
  c.policy_version = -3;
  ExpectRefused(c, "chunk policy_version = -3 must be >= 0");
}

TEST(TrajectoryChunkTest, WrongSizesAreRefusedNamingTheFieldAndShape) {
  TrajectoryChunk c = MakeChunk();
  c.obs.resize(72);  // forgot the bootstrap row
  ExpectRefused(c,
                "chunk obs has 72 elements but (steps + 1) * copies * "
                "obs_size = 96");
  c = MakeChunk();
  c.actions.push_back(0);
  ExpectRefused(c,
                "chunk actions has 37 elements but steps * copies * "
                "action_size = 36");
  c = MakeChunk();
  c.log_probs.pop_back();
  ExpectRefused(c, "chunk log_probs has 17 elements but steps * copies = 18");
  c = MakeChunk();
  c.rewards.clear();
  ExpectRefused(c, "chunk rewards has 0 elements but steps * copies = 18");
  c = MakeChunk();
  c.dones.resize(12);
  ExpectRefused(c, "chunk dones has 12 elements but steps * copies = 18");
}

TEST(TrajectoryChunkTest, FinalObservationsMustMatchTheNumberOfDones) {
  TrajectoryChunk c = MakeChunk();
  c.final_obs.resize(4);
  ExpectRefused(c,
                "chunk final_obs has 4 elements but num_dones (2) * obs_size "
                "= 8");
  c = MakeChunk();
  c.dones[17] = 1;
  ExpectRefused(c,
                "chunk final_obs has 8 elements but num_dones (3) * obs_size "
                "= 12");
}

TEST(TrajectoryChunkTest, DonesOtherThanZeroOrOneAreRefusedNamingStepAndCopy) {
  TrajectoryChunk c = MakeChunk();
  c.dones[8] = 2;
  ExpectRefused(c, "chunk dones[8] (step 1, copy 2) is 2, not 0 or 1");
}

TEST(TrajectoryChunkTest, NonFiniteRewardIsRefusedNamingIndexStepAndCopy) {
  TrajectoryChunk c = MakeChunk();
  c.rewards[17] = kNan;
  ExpectRefused(c, "chunk rewards[17] (step 2, copy 5) is nan");
}

TEST(TrajectoryChunkTest, NonFiniteLogProbIsRefused) {
  TrajectoryChunk c = MakeChunk();
  c.log_probs[6] = -kInf;
  ExpectRefused(c, "chunk log_probs[6] (step 1, copy 0) is -inf");
}

TEST(TrajectoryChunkTest, NonFiniteObservationIsRefusedNamingTheElement) {
  // Index 81 = row 20 (step 3 = the bootstrap row, copy 2), element 1.
  TrajectoryChunk c = MakeChunk();
  c.obs[81] = kInf;
  ExpectRefused(c, "chunk obs[81] (step 3, copy 2, element 1) is inf");
}

TEST(TrajectoryChunkTest, NonFiniteActionIsRefusedNamingTheElement) {
  // Index 7 = row 3 (step 0, copy 3), element 1.
  TrajectoryChunk c = MakeChunk();
  c.actions[7] = kNan;
  ExpectRefused(c, "chunk actions[7] (step 0, copy 3, element 1) is nan");
}

TEST(TrajectoryChunkTest, NonFiniteFinalObservationIsRefusedNamingTheDone) {
  TrajectoryChunk c = MakeChunk();
  c.final_obs[5] = kNan;
  ExpectRefused(c, "chunk final_obs[5] (done 1, element 1) is nan");
}

TEST(TrajectoryChunkTest, OnlyTheFirstBadValueIsReported) {
  TrajectoryChunk c = MakeChunk();
  c.rewards[4] = kInf;
  c.rewards[2] = kNan;
  ExpectRefused(c, "chunk rewards[2] (step 0, copy 2) is nan");
}

TEST(TrajectoryChunkTest, AbsurdlyLargeDimensionsAreRefusedWithoutOverflow) {
  TrajectoryChunk c = MakeChunk();
  c.steps = std::numeric_limits<int>::max();
  c.copies = std::numeric_limits<int>::max();
  c.obs_size = std::numeric_limits<int>::max();
  ExpectRefused(c,
                "chunk of 2147483647 steps * 2147483647 copies * (2147483647 "
                "obs, 2 actions) is too large");
}

}  // namespace
}  // namespace ristretto::learner
