#include "wire/chunk_codec.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::wire {
namespace {

using learner::TrajectoryChunk;
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
                    int action_size = 2, const ChunkLimits& limits = {}) {
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

TEST(ChunkCodecTest, FiniteButAbsurdValuesAreRejectedInEveryField) {
  // The poisoned chunk of a hostile actor: finite, far beyond any real value.
  const float kAbsurd[] = {1e30f, -3e38f, 2e9f};
  for (const float v : kAbsurd) {
    TrajectoryChunk obs = MakeChunk();
    obs.obs[5] = v;
    const absl::Status s = Decode(obs);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << v;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("obs[5] (step 0, copy 1, element 1)"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("beyond the bound"));

    TrajectoryChunk rewards = MakeChunk();
    rewards.rewards[4] = v;
    EXPECT_THAT(std::string(Decode(rewards).message()),
                HasSubstr("rewards[4] (step 2, copy 0)"));
    TrajectoryChunk actions = MakeChunk();
    actions.actions[1] = v;
    EXPECT_EQ(Decode(actions).code(), absl::StatusCode::kInvalidArgument);
    TrajectoryChunk log_probs = MakeChunk();
    log_probs.log_probs[0] = v;
    EXPECT_EQ(Decode(log_probs).code(), absl::StatusCode::kInvalidArgument);
    TrajectoryChunk final_obs = MakeChunk();
    final_obs.final_obs[2] = v;
    EXPECT_THAT(std::string(Decode(final_obs).message()),
                HasSubstr("final_obs[2]"));
  }
  // The bound itself passes; the limit is the caller's.
  TrajectoryChunk at_bound = MakeChunk();
  at_bound.rewards[0] = 1e9f;
  EXPECT_TRUE(Decode(at_bound).ok());
  ChunkLimits tight;
  tight.max_abs_value = 10.0f;
  TrajectoryChunk over = MakeChunk();
  over.obs[0] = 11.0f;
  EXPECT_EQ(Decode(over, 4, 2, tight).code(),
            absl::StatusCode::kInvalidArgument);
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

// Every float field is checked for finiteness, with Validate()'s wording
// (field, flat index, position, value).
TEST(ChunkCodecTest, NonFiniteValuesInEveryFieldAreRejected) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    float* (*field)(TrajectoryChunk*);
    float value;
    std::string message;
  };
  const Case cases[] = {
      {[](TrajectoryChunk* c) { return &c->obs[13]; }, inf,
       "chunk obs[13] (step 1, copy 1, element 1) is inf"},
      {[](TrajectoryChunk* c) { return &c->actions[5]; }, -inf,
       "chunk actions[5] (step 1, copy 0, element 1) is -inf"},
      {[](TrajectoryChunk* c) { return &c->log_probs[0]; }, nan,
       "chunk log_probs[0] (step 0, copy 0) is nan"},
      {[](TrajectoryChunk* c) { return &c->rewards[5]; }, nan,
       "chunk rewards[5] (step 2, copy 1) is nan"},
      {[](TrajectoryChunk* c) { return &c->final_obs[3]; }, -nan,
       "chunk final_obs[3] (done 0, element 3) is"},
  };
  for (const Case& k : cases) {
    TrajectoryChunk c = MakeChunk();
    *k.field(&c) = k.value;
    const absl::Status s = Decode(c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << k.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(k.message));
    EXPECT_EQ(s.message(), c.Validate().message());  // the same wording
  }
}

// T = 64, B = 8, D = 20, A = 3: arrays past one 4096-value copy block.
TrajectoryChunk MakeLargeChunk() {
  TrajectoryChunk c;
  c.run_id = "run-2";
  c.actor_id = "actor-1";
  c.policy_version = 3;
  c.steps = 64;
  c.copies = 8;
  c.obs_size = 20;
  c.action_size = 3;
  for (int i = 0; i < 65 * 8 * 20; ++i) c.obs.push_back(0.001f * i - 5.0f);
  for (int i = 0; i < 64 * 8 * 3; ++i) c.actions.push_back(0.01f * (i % 97));
  for (int i = 0; i < 64 * 8; ++i) c.log_probs.push_back(-0.01f * i);
  for (int i = 0; i < 64 * 8; ++i) c.rewards.push_back(i % 2 ? 1e-3f : -0.0f);
  c.dones.assign(64 * 8, 0);
  for (int i : {7, 100, 511}) {
    c.dones[i] = 1;
    for (int d = 0; d < 20; ++d) c.final_obs.push_back(i + 0.5f * d);
  }
  return c;
}

TEST(ChunkCodecTest, NanPastTheFirstCopyBlockIsRejectedWithItsIndex) {
  TrajectoryChunk c = MakeLargeChunk();
  c.obs[10000] = std::numeric_limits<float>::quiet_NaN();  // step 62, copy 4
  const absl::Status s = Decode(c, 20, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "chunk obs[10000] (step 62, copy 4, element 0) is nan");
}

TEST(ChunkCodecTest, LargeChunkRoundTripsAndPassesValidate) {
  const TrajectoryChunk c = MakeLargeChunk();
  v1::TrajectoryChunk proto;
  ChunkToProto(c, 9, &proto);
  auto back = ChunkFromProto(proto, 20, 3, ChunkLimits{});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->Validate().ok());
  EXPECT_EQ(back->obs, c.obs);
  EXPECT_EQ(back->actions, c.actions);
  EXPECT_EQ(back->log_probs, c.log_probs);
  EXPECT_EQ(back->rewards, c.rewards);
  EXPECT_EQ(back->dones, c.dones);
  EXPECT_EQ(back->final_obs, c.final_obs);
  EXPECT_EQ(back->num_samples(), 64 * 8);
}

TEST(ChunkCodecTest, DecodingIntoAReusedChunkMatchesAFreshDecode) {
  v1::TrajectoryChunk large, small;
  ChunkToProto(MakeLargeChunk(), 0, &large);
  ChunkToProto(MakeChunk(), 0, &small);
  TrajectoryChunk reused;
  ASSERT_TRUE(ChunkFromProto(large, 20, 3, ChunkLimits{}, &reused).ok());
  const float* storage = reused.obs.data();
  // A smaller chunk into the same arrays: no reallocation, nothing left over.
  ASSERT_TRUE(ChunkFromProto(small, 4, 2, ChunkLimits{}, &reused).ok());
  EXPECT_EQ(reused.obs.data(), storage);
  const TrajectoryChunk expected = MakeChunk();
  EXPECT_EQ(reused.run_id, expected.run_id);
  EXPECT_EQ(reused.steps, 3);
  EXPECT_EQ(reused.copies, 2);
  EXPECT_EQ(reused.obs, expected.obs);
  EXPECT_EQ(reused.actions, expected.actions);
  EXPECT_EQ(reused.log_probs, expected.log_probs);
  EXPECT_EQ(reused.rewards, expected.rewards);
  EXPECT_EQ(reused.dones, expected.dones);
  EXPECT_EQ(reused.final_obs, expected.final_obs);
  EXPECT_TRUE(reused.Validate().ok());
  // After a rejected chunk the same object decodes the next one correctly.
  TrajectoryChunk bad = MakeLargeChunk();
  bad.rewards[300] = std::numeric_limits<float>::infinity();
  v1::TrajectoryChunk bad_proto;
  ChunkToProto(bad, 0, &bad_proto);
  EXPECT_EQ(ChunkFromProto(bad_proto, 20, 3, ChunkLimits{}, &reused).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(ChunkFromProto(large, 20, 3, ChunkLimits{}, &reused).ok());
  EXPECT_EQ(reused.obs, MakeLargeChunk().obs);
  EXPECT_EQ(reused.rewards, MakeLargeChunk().rewards);
}

TEST(ChunkCodecTest, ShapeErrorsAreReportedBeforeValueErrors) {
  // A NaN observation and a wrong action shape: every tensor's shape is
  // checked before any value is copied.
  TrajectoryChunk c = MakeChunk();
  c.obs[0] = std::numeric_limits<float>::quiet_NaN();
  v1::TrajectoryChunk proto;
  ChunkToProto(c, 0, &proto);
  proto.mutable_actions()->set_shape(2, 5);
  const absl::Status s = ChunkFromProto(proto, 4, 2, ChunkLimits{}).status();
  EXPECT_EQ(s.message(), "chunk.actions: shape [3, 2, 5], expected [3, 2, 2]");
}

TEST(ChunkCodecTest, WrongDtypesAndByteCountsAreRejected) {
  v1::TrajectoryChunk proto;
  ChunkToProto(MakeChunk(), 0, &proto);
  v1::TrajectoryChunk dones_as_float = proto;
  dones_as_float.mutable_dones()->set_dtype(v1::Tensor::FLOAT32);
  EXPECT_EQ(
      ChunkFromProto(dones_as_float, 4, 2, ChunkLimits{}).status().message(),
      "chunk.dones: dtype is float32, expected uint8");
  v1::TrajectoryChunk short_rewards = proto;
  short_rewards.mutable_rewards()->mutable_data()->resize(23);
  EXPECT_THAT(std::string(ChunkFromProto(short_rewards, 4, 2, ChunkLimits{})
                              .status()
                              .message()),
              HasSubstr("chunk.rewards: 23 data bytes for shape [3, 2]"));
}

TEST(ChunkCodecTest, RunSizesBelowOneAreRejected) {
  v1::TrajectoryChunk proto;
  ChunkToProto(MakeChunk(), 0, &proto);
  EXPECT_EQ(ChunkFromProto(proto, 4, 0, ChunkLimits{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChunkFromProto(proto, 0, 2, ChunkLimits{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ChunkCodecTest, EncodingIntoAReusedMessageReplacesEveryField) {
  v1::TrajectoryChunk proto;
  ChunkToProto(MakeLargeChunk(), 1, &proto);
  ChunkToProto(MakeChunk(), 2, &proto);
  EXPECT_EQ(proto.sequence(), 2);
  EXPECT_EQ(proto.env_copy_ids_size(), 2);
  auto back = ChunkFromProto(proto, 4, 2, ChunkLimits{});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->obs, MakeChunk().obs);
  EXPECT_EQ(back->final_obs, MakeChunk().final_obs);
}

// Per-field bounds of a run (learner/chunk_limits.h) for MakeChunk's D = 4:
// every value of MakeChunk lies inside.
std::shared_ptr<learner::ChunkValueBounds> SmallBounds() {
  auto b = std::make_shared<learner::ChunkValueBounds>();
  b->obs = {{0.0f, 9.0f}, {0.0f, 8.0f}, {-1.0f, 8.0f}, {-2.0f, 9.0f}};
  b->action = {-1.0f, 1.0f};
  b->log_prob = {-6.0f, 0.5f};
  b->reward = {-0.25f, 0.25f};
  return b;
}

ChunkLimits WithValues(std::shared_ptr<const learner::ChunkValueBounds> b) {
  ChunkLimits limits;
  limits.values = std::move(b);
  return limits;
}

TEST(ChunkCodecTest, RunBoundsAdmitValuesOnTheirEdgesAndRefuseOneUlpBeyond) {
  const ChunkLimits limits = WithValues(SmallBounds());
  ASSERT_TRUE(Decode(MakeChunk(), 4, 2, limits).ok());
  auto next = [](float v, float toward) { return std::nextafter(v, toward); };
  struct Case {
    const char* field;
    float* (*at)(TrajectoryChunk*);
    float lo, hi;
    std::string where;
  };
  // One case per field, and for the observations one per element (each
  // has its own range), in the first and in a later row.
  const Case cases[] = {
      {"obs", [](TrajectoryChunk* c) { return &c->obs[0]; }, 0.0f, 9.0f,
       "obs[0] (step 0, copy 0, element 0)"},
      {"obs", [](TrajectoryChunk* c) { return &c->obs[5]; }, 0.0f, 8.0f,
       "obs[5] (step 0, copy 1, element 1)"},
      {"obs", [](TrajectoryChunk* c) { return &c->obs[14]; }, -1.0f, 8.0f,
       "obs[14] (step 1, copy 1, element 2)"},
      {"obs", [](TrajectoryChunk* c) { return &c->obs[31]; }, -2.0f, 9.0f,
       "obs[31] (step 3, copy 1, element 3)"},
      {"actions", [](TrajectoryChunk* c) { return &c->actions[7]; }, -1.0f,
       1.0f, "actions[7] (step 1, copy 1, element 1)"},
      {"log_probs", [](TrajectoryChunk* c) { return &c->log_probs[4]; }, -6.0f,
       0.5f, "log_probs[4] (step 2, copy 0)"},
      {"rewards", [](TrajectoryChunk* c) { return &c->rewards[3]; }, -0.25f,
       0.25f, "rewards[3] (step 1, copy 1)"},
      {"final_obs", [](TrajectoryChunk* c) { return &c->final_obs[2]; }, -1.0f,
       8.0f, "final_obs[2] (done 0, element 2)"},
  };
  const float big = std::numeric_limits<float>::max();
  for (const Case& k : cases) {
    SCOPED_TRACE(k.where);
    for (const float inside : {k.lo, k.hi}) {
      TrajectoryChunk c = MakeChunk();
      *k.at(&c) = inside;
      EXPECT_TRUE(Decode(c, 4, 2, limits).ok()) << inside;
    }
    for (const float outside : {next(k.lo, -big), next(k.hi, big), 1e6f}) {
      TrajectoryChunk c = MakeChunk();
      *k.at(&c) = outside;
      const absl::Status s = Decode(c, 4, 2, limits);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << outside;
      // The sender is told field, index and value; the bound goes to the
      // learner's log only (the payload).
      EXPECT_EQ(s.message(), absl::StrCat("chunk ", k.where, " is ", outside,
                                          ", outside the run's bound"));
      const auto bound = s.GetPayload(kBoundPayload);
      ASSERT_TRUE(bound.has_value());
      EXPECT_EQ(std::string(*bound), absl::StrCat("[", k.lo, ", ", k.hi, "]"));
    }
  }
  // Non-finite values keep Validate()'s wording under run bounds too.
  TrajectoryChunk nan = MakeChunk();
  nan.rewards[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(Decode(nan, 4, 2, limits).message(),
            "chunk rewards[5] (step 2, copy 1) is nan");
}

TEST(ChunkCodecTest, LargeFiniteValuesTheCatchAllAdmitsAreRefusedByRunBounds) {
  // 1e6 is far inside the catch-all ±1e9 but no honest run produces it.
  TrajectoryChunk c = MakeChunk();
  c.rewards[0] = 1e6f;
  EXPECT_TRUE(Decode(c).ok());
  EXPECT_EQ(Decode(c, 4, 2, WithValues(SmallBounds())).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ChunkCodecTest, RunBoundsOfAnotherObservationSizeAreAnInternalError) {
  auto b = SmallBounds();
  b->obs.pop_back();
  const absl::Status s = Decode(MakeChunk(), 4, 2, WithValues(b));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), HasSubstr("3 observation values"));
}

// The range check runs block by block over received byte ranges: a value
// may straddle two ranges and a block boundary; the index reported must be
// the value's index in the whole tensor.
TEST(ChunkCodecTest, RunBoundsApplyAcrossBlocksAndSplitByteRanges) {
  // Observations in [-5, 5.4], terminal observations in [7, 520.5].
  TrajectoryChunk c = MakeLargeChunk();
  auto b = std::make_shared<learner::ChunkValueBounds>();
  b->obs.assign(20, learner::ValueRange{-5.0f, 600.0f});
  b->action = {0.0f, 1.0f};
  b->log_prob = {-6.0f, 0.0f};
  b->reward = {-0.001f, 0.001f};
  const ChunkLimits limits = WithValues(b);
  // Every tensor cut into 7-byte ranges (values straddle them).
  auto decode = [&](const TrajectoryChunk& chunk, TrajectoryChunk* out) {
    v1::TrajectoryChunk proto;
    ChunkToProto(chunk, 0, &proto);
    ChunkView view = ViewOf(proto);
    auto split = [](TensorView* t) {
      std::vector<absl::string_view> pieces;
      for (absl::string_view p : t->data) {
        for (size_t at = 0; at < p.size(); at += 7) {
          pieces.push_back(p.substr(at, 7));
        }
      }
      t->data.assign(pieces.begin(), pieces.end());
    };
    for (TensorView* t : {&view.observations, &view.actions, &view.log_probs,
                          &view.rewards, &view.final_observations}) {
      split(t);
    }
    return DecodeChunk(view, 20, 3, limits, out);
  };
  TrajectoryChunk out;
  ASSERT_TRUE(decode(c, &out).ok());
  EXPECT_EQ(out.obs, c.obs);
  EXPECT_EQ(out.final_obs, c.final_obs);
  // Row 500 (step 62, copy 4) element 3: past two 4096-value blocks.
  c.obs[500 * 20 + 3] = 600.5f;
  EXPECT_EQ(decode(c, &out).message(),
            "chunk obs[10003] (step 62, copy 4, element 3) is 600.5, outside "
            "the run's bound");
  EXPECT_EQ(std::string(*decode(c, &out).GetPayload(kBoundPayload)),
            "[-5, 600]");
  c = MakeLargeChunk();
  c.final_obs[2 * 20 + 3] = -5.5f;
  EXPECT_THAT(std::string(decode(c, &out).message()),
              HasSubstr("final_obs[43] (done 2, element 3) is -5.5"));
  c = MakeLargeChunk();
  c.rewards[511] = 0.002f;
  EXPECT_THAT(std::string(decode(c, &out).message()),
              HasSubstr("rewards[511] (step 63, copy 7) is 0.002"));
}

}  // namespace
}  // namespace ristretto::wire
