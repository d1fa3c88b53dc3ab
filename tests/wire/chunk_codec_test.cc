#include "learner/chunk_codec.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

using ::testing::HasSubstr;

// T = 3 steps, B = 2 copies, D = 4, A = 2, one done at (t=1, b=0).
TrajectoryChunk MakeChunk() {
  TrajectoryChunk c;
  c.run_id = "run-1";
  c.actor_id = "actor-7";
  c.policy_version = 5;
  c.steps = 3;
  c.copies = 2;
  c.obs_size = 4;
  c.action_size = 2;
  for (int i = 0; i < 4 * 2 * 4; ++i) c.obs.push_back(0.25f * i);
  for (int i = 0; i < 3 * 2 * 2; ++i) c.actions.push_back(-0.5f + 0.1f * i);
  for (int i = 0; i < 6; ++i) c.log_probs.push_back(-1.0f - i);
  for (int i = 0; i < 6; ++i) c.rewards.push_back(0.01f * i);
  c.dones = {0, 0, 1, 0, 0, 0};
  c.final_obs = {9, 8, 7, 6};
  return c;
}

TEST(ChunkCodecTest, RoundTripPreservesEveryField) {
  const TrajectoryChunk c = MakeChunk();
  v1::TrajectoryChunk proto;
  ChunkToProto(c, 42, &proto);
  EXPECT_EQ(proto.sequence(), 42);
  EXPECT_EQ(proto.env_copy_ids_size(), 2);
  auto back = ChunkFromProto(proto, 4, 2, ChunkLimits{});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_id, c.run_id);
  EXPECT_EQ(back->actor_id, c.actor_id);
  EXPECT_EQ(back->policy_version, 5);
  EXPECT_EQ(back->steps, 3);
  EXPECT_EQ(back->copies, 2);
  EXPECT_EQ(back->obs, c.obs);
  EXPECT_EQ(back->actions, c.actions);
  EXPECT_EQ(back->log_probs, c.log_probs);
  EXPECT_EQ(back->rewards, c.rewards);
  EXPECT_EQ(back->dones, c.dones);
  EXPECT_EQ(back->final_obs, c.final_obs);
}

absl::Status Decode(const TrajectoryChunk& c, int obs_size = 4,
                    int action_size = 2, ChunkLimits limits = {}) {
  v1::TrajectoryChunk proto;
  ChunkToProto(c, 0, &proto);
  return ChunkFromProto(proto, obs_size, action_size, limits).status();
}

TEST(ChunkCodecTest, ObservationSizeOfAnotherRunIsRejected) {
  const absl::Status s = Decode(MakeChunk(), /*obs_size=*/5);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "chunk.observations: shape [4, 2, 4], expected [*, *, 5]");
}

TEST(ChunkCodecTest, ActionSizeOfAnotherRunIsRejected) {
  const absl::Status s = Decode(MakeChunk(), 4, /*action_size=*/3);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("chunk.actions"));
}

TEST(ChunkCodecTest, NanRewardIsRejectedNamingStepAndCopy) {
  TrajectoryChunk c = MakeChunk();
  c.rewards[3] = std::numeric_limits<float>::quiet_NaN();
  const absl::Status s = Decode(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("rewards[3] (step 1, copy 1)"));
}

TEST(ChunkCodecTest, InfiniteObservationIsRejected) {
  TrajectoryChunk c = MakeChunk();
  c.obs[5] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Decode(c).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkCodecTest, FinalObservationsMustMatchTheDones) {
  TrajectoryChunk c = MakeChunk();
  c.final_obs.clear();  // one done but no terminal observation
  v1::TrajectoryChunk proto;
  ChunkToProto(MakeChunk(), 0, &proto);
  proto.mutable_final_observations()->clear_shape();
  proto.mutable_final_observations()->add_shape(0);
  proto.mutable_final_observations()->add_shape(4);
  proto.mutable_final_observations()->clear_data();
  const absl::Status s = ChunkFromProto(proto, 4, 2, ChunkLimits{}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "chunk.final_observations: shape [0, 4], expected [1, 4]");
}

TEST(ChunkCodecTest, ChunksOverTheServerLimitsAreRejected) {
  ChunkLimits limits;
  limits.max_steps = 2;
  const absl::Status s = Decode(MakeChunk(), 4, 2, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("3 steps x 2 copies is outside"));
}

TEST(ChunkCodecTest, EmptyRunIdAndNegativeVersionAreRejected) {
  TrajectoryChunk c = MakeChunk();
  c.run_id.clear();
  EXPECT_EQ(Decode(c).message(), "chunk: run_id is empty");
  c = MakeChunk();
  c.policy_version = -1;
  EXPECT_EQ(Decode(c).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkCodecTest, DoneValuesOtherThanZeroOrOneAreRejected) {
  v1::TrajectoryChunk proto;
  ChunkToProto(MakeChunk(), 0, &proto);
  (*proto.mutable_dones()->mutable_data())[2] = 2;  // count stays 1
  const absl::Status s = ChunkFromProto(proto, 4, 2, ChunkLimits{}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dones"));
}

}  // namespace
}  // namespace ristretto::learner
