// The ChunkAck credit a run gives its actors (PolicyLagCredits): as much
// in flight as max_policy_lag allows, never less than one chunk.
#include "gtest/gtest.h"
#include "learner/service/run_host.h"

namespace ristretto::learner {
namespace {

TEST(PolicyLagCreditsTest, OneChunkPerUpdateWithOneActorLeavesTwoInFlight) {
  // Lag 4: 3 updates' worth may be ahead of a new chunk; the queue holds
  // one, so two chunks of this actor may be unacknowledged.
  EXPECT_EQ(PolicyLagCredits(/*max_policy_lag=*/4, /*samples_per_update=*/4096,
                             /*queue_capacity=*/1, /*chunk_steps=*/4096,
                             /*actors=*/1, /*max_credits=*/4),
            2);
}

TEST(PolicyLagCreditsTest, RoomIsSharedByTheRunsActors) {
  // 8 updates of 1024 steps per 256-step chunk: room for
  // 7·1024 − 2·256 = 6656 steps = 26 chunks, split among the actors.
  EXPECT_EQ(PolicyLagCredits(8, 1024, 2, 256, 1, 64), 26);
  EXPECT_EQ(PolicyLagCredits(8, 1024, 2, 256, 2, 64), 13);
  EXPECT_EQ(PolicyLagCredits(8, 1024, 2, 256, 4, 64), 6);
}

TEST(PolicyLagCreditsTest, NeverMoreThanTheServiceCap) {
  EXPECT_EQ(PolicyLagCredits(100, 4096, 1, 128, 1, 4), 4);
}

TEST(PolicyLagCreditsTest, AtLeastOneChunkEvenWithoutRoom) {
  // The queue alone already fills the lag budget, or lag 0/1: one chunk
  // in flight keeps the run going (fewer would stall it for good).
  EXPECT_EQ(PolicyLagCredits(4, 1024, 2, 1024, 2, 4), 1);
  EXPECT_EQ(PolicyLagCredits(1, 1024, 2, 1024, 1, 4), 1);
  EXPECT_EQ(PolicyLagCredits(0, 1024, 2, 1024, 1, 4), 1);
  EXPECT_EQ(PolicyLagCredits(4, 1024, 2, 1024, 0, 4), 1);
}

TEST(PolicyLagCreditsTest, UnknownChunkSizeGivesTheCap) {
  EXPECT_EQ(PolicyLagCredits(4, 1024, 2, 0, 1, 3), 3);
  EXPECT_EQ(PolicyLagCredits(4, 1024, 2, 1024, 1, 0), 1);
}

}  // namespace
}  // namespace ristretto::learner
