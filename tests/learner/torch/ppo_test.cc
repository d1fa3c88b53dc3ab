#include "learner/torch/ppo.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/trajectory.h"
#include "tests/learner/torch/learner_test_util.h"

namespace ristretto::learner {
namespace {

using testing::kActions;
using testing::kObs;
using testing::MakeChunk;
using testing::SmallNetwork;
using testing::SmallPpo;

using ::testing::HasSubstr;

torch::Tensor F64(const std::vector<double>& v) {
  return torch::tensor(v, torch::kFloat64);
}

double Scalar(const torch::Tensor& t) { return t.item<double>(); }

std::unique_ptr<PpoLearner> MakeLearner(const PpoOptions& ppo,
                                        uint64_t seed = 1, int64_t budget = 0) {
  absl::StatusOr<std::unique_ptr<PpoLearner>> learner =
      PpoLearner::Create(kObs, kActions, SmallNetwork(), ppo, budget, seed);
  EXPECT_TRUE(learner.ok()) << learner.status();
  return learner.ok() ? std::move(*learner) : nullptr;
}

// Bit-identical parameters and buffers.
void ExpectSameState(PpoLearner& a, PpoLearner& b) {
  const auto pa = a.model()->named_parameters();
  const auto pb = b.model()->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) {
    EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
  }
  const auto ba = a.model()->named_buffers();
  const auto bb = b.model()->named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (const auto& item : ba) {
    EXPECT_TRUE(torch::equal(item.value(), bb[item.key()])) << item.key();
  }
}

void ExpectSameStats(const UpdateStats& a, const UpdateStats& b) {
  EXPECT_EQ(a.policy_loss, b.policy_loss);
  EXPECT_EQ(a.value_loss, b.value_loss);
  EXPECT_EQ(a.entropy, b.entropy);
  EXPECT_EQ(a.approx_kl, b.approx_kl);
  EXPECT_EQ(a.clip_fraction, b.clip_fraction);
  EXPECT_EQ(a.grad_norm, b.grad_norm);
  EXPECT_EQ(a.explained_variance, b.explained_variance);
  EXPECT_EQ(a.learning_rate, b.learning_rate);
  EXPECT_EQ(a.samples_trained, b.samples_trained);
  EXPECT_EQ(a.gradient_steps, b.gradient_steps);
  EXPECT_EQ(a.policy_version, b.policy_version);
}

// ---- ComputePpoLosses by hand ----------------------------------------------

// Three samples with log π − log μ = log 1.5, log 0.5, 0 (ratios 1.5, 0.5,
// 1), advantages +1, −1, +2 and ε = 0.2, so clip(ρ) = 1.2, 0.8, 1:
//   min(1.5·1, 1.2·1) = 1.2;  min(0.5·−1, 0.8·−1) = −0.8;  min(2, 2) = 2
//   policy loss = −(1.2 − 0.8 + 2) / 3 = −0.8.
// Values 1, 2, 3 against returns 1.5, 0, 3 (errors −0.5, 2, 0).
struct HandCase {
  torch::Tensor log_prob = F64({std::log(1.5), std::log(0.5), 0.0}) + 0.25;
  torch::Tensor old_log_prob = F64({0.25, 0.25, 0.25});
  torch::Tensor advantages = F64({1.0, -1.0, 2.0});
  torch::Tensor value = F64({1.0, 2.0, 3.0});
  torch::Tensor old_value = F64({0.8, 1.0, 3.5});
  torch::Tensor returns = F64({1.5, 0.0, 3.0});
  torch::Tensor entropy = F64({1.0, 2.0, 3.0});

  PpoLosses Compute(const PpoOptions& options) const {
    return ComputePpoLosses(log_prob, old_log_prob, advantages, value,
                            old_value, returns, entropy, options);
  }
};

TEST(ComputePpoLossesTest, ClippedSurrogateMatchesTheHandComputedValue) {
  PpoOptions options;
  options.clip_ratio = 0.2;
  const PpoLosses l = HandCase().Compute(options);
  ASSERT_EQ(l.ratio.sizes(), torch::IntArrayRef({3}));
  EXPECT_NEAR(Scalar(l.ratio[0]), 1.5, 1e-12);
  EXPECT_NEAR(Scalar(l.ratio[1]), 0.5, 1e-12);
  EXPECT_NEAR(Scalar(l.ratio[2]), 1.0, 1e-12);
  EXPECT_NEAR(Scalar(l.policy), -(1.2 - 0.8 + 2.0) / 3.0, 1e-12);
  EXPECT_NEAR(Scalar(l.policy), -0.8, 1e-12);
  EXPECT_NEAR(Scalar(l.entropy), 2.0, 1e-12);  // (1 + 2 + 3) / 3
}

TEST(ComputePpoLossesTest, WideClipLeavesTheUnclippedSurrogate) {
  // ε = 0.6: clip(ρ) = 1.5, 0.5, 1, so the loss is −(1.5 − 0.5 + 2) / 3 = −1.
  PpoOptions options;
  options.clip_ratio = 0.6;
  EXPECT_NEAR(Scalar(HandCase().Compute(options).policy), -1.0, 1e-12);
}

TEST(ComputePpoLossesTest, HugeLogRatiosFromAnActorStayFinite) {
  // An actor can stream behaviour log-probabilities at the low end of the
  // run's bound (−777 here) while the policy's are near 0: exp(777) is inf
  // in float and double, and inf·(−A) would poison the update. The ratio is
  // exp of the clamped log-ratio, so it stays exp(±kMaxLogRatio).
  PpoOptions options;
  options.clip_ratio = 0.2;
  const torch::Tensor log_prob = F64({0.0, -777.0}).to(torch::kFloat32);
  const torch::Tensor old = F64({-777.0, 0.0}).to(torch::kFloat32);
  const torch::Tensor adv = F64({-1.0, 1.0}).to(torch::kFloat32);
  const torch::Tensor v = F64({0.0, 0.0}).to(torch::kFloat32);
  const PpoLosses l = ComputePpoLosses(log_prob, old, adv, v, v, v, v, options);
  EXPECT_NEAR(Scalar(l.ratio[0]) / std::exp(kMaxLogRatio), 1.0, 1e-5);
  EXPECT_NEAR(Scalar(l.ratio[1]) * std::exp(kMaxLogRatio), 1.0, 1e-5);
  EXPECT_TRUE(std::isfinite(Scalar(l.policy)));
  // min(ρA, clip(ρ)A) for sample 0 is e^20·(−1); sample 1 is e^−20·1.
  EXPECT_NEAR(Scalar(l.policy) / (std::exp(kMaxLogRatio) / 2.0), 1.0, 1e-4);
}

TEST(ComputePpoLossesTest, MseValueLossIsTheMeanSquaredError) {
  // (0.25 + 4 + 0) / 3.
  PpoOptions options;
  options.value_loss = ValueLoss::kMse;
  EXPECT_NEAR(Scalar(HandCase().Compute(options).value), 4.25 / 3.0, 1e-12);
}

TEST(ComputePpoLossesTest, SmoothL1ValueLossIsQuadraticBelowOneLinearAbove) {
  // |e| < 1: e²/2;  otherwise |e| − 1/2:  (0.125 + 1.5 + 0) / 3.
  PpoOptions options;
  options.value_loss = ValueLoss::kSmoothL1;
  EXPECT_NEAR(Scalar(HandCase().Compute(options).value), 1.625 / 3.0, 1e-12);
}

TEST(ComputePpoLossesTest,
     ClippedValueLossTakesTheLargerOfClippedAndUnclipped) {
  // value − old = 0.2, 1.0, −0.5 clipped to ±0.1 → V_clip = 0.9, 1.1, 3.4;
  // clipped errors² (0.9−1.5)² = 0.36, (1.1−0)² = 1.21, (3.4−3)² = 0.16;
  // unclipped 0.25, 4, 0 → max 0.36, 4, 0.16 → mean 4.52 / 3.
  PpoOptions options;
  options.value_loss = ValueLoss::kMse;
  options.value_clip = 0.1;
  EXPECT_NEAR(Scalar(HandCase().Compute(options).value), 4.52 / 3.0, 1e-12);
  // Smooth L1: clipped 0.18, 0.605, 0.08; unclipped 0.125, 1.5, 0
  // → max 0.18, 1.5, 0.08 → mean 1.76 / 3.
  options.value_loss = ValueLoss::kSmoothL1;
  EXPECT_NEAR(Scalar(HandCase().Compute(options).value), 1.76 / 3.0, 1e-12);
}

// ---- PpoLearner -------------------------------------------------------------

TEST(PpoLearnerTest, SameSeedGivesBitIdenticalInitialParameters) {
  std::unique_ptr<PpoLearner> a = MakeLearner(SmallPpo(), 42);
  std::unique_ptr<PpoLearner> b = MakeLearner(SmallPpo(), 42);
  ASSERT_TRUE(a && b);
  ExpectSameState(*a, *b);
  EXPECT_EQ(a->version(), 0);
  EXPECT_EQ(a->samples_consumed(), 0);
}

TEST(PpoLearnerTest, DifferentSeedGivesDifferentInitialWeights) {
  std::unique_ptr<PpoLearner> a = MakeLearner(SmallPpo(), 42);
  std::unique_ptr<PpoLearner> b = MakeLearner(SmallPpo(), 43);
  ASSERT_TRUE(a && b);
  const auto pa = a->model()->named_parameters();
  const auto pb = b->model()->named_parameters();
  EXPECT_FALSE(torch::equal(pa["policy0.weight"], pb["policy0.weight"]));
  EXPECT_FALSE(torch::equal(pa["value0.weight"], pb["value0.weight"]));
  // log_std is a constant, not drawn.
  EXPECT_TRUE(torch::equal(pa["log_std"], pb["log_std"]));
}

TEST(PpoLearnerTest, SameSeedUpdatesAreBitIdenticalOnCpu) {
  std::unique_ptr<PpoLearner> a = MakeLearner(SmallPpo(), 42);
  std::unique_ptr<PpoLearner> b = MakeLearner(SmallPpo(), 42);
  ASSERT_TRUE(a && b);
  for (int round = 0; round < 2; ++round) {
    const std::vector<TrajectoryChunk> chunks = {
        MakeChunk(round, 4, 3, 100 + round),
        MakeChunk(round, 4, 3, 200 + round)};
    absl::StatusOr<UpdateStats> sa = a->Update(chunks);
    absl::StatusOr<UpdateStats> sb = b->Update(chunks);
    ASSERT_TRUE(sa.ok()) << sa.status();
    ASSERT_TRUE(sb.ok()) << sb.status();
    ExpectSameStats(*sa, *sb);
    EXPECT_TRUE(std::isfinite(sa->policy_loss) &&
                std::isfinite(sa->value_loss));
    ExpectSameState(*a, *b);
  }
  // And the update did train: the weights moved from their initial values.
  std::unique_ptr<PpoLearner> fresh = MakeLearner(SmallPpo(), 42);
  EXPECT_FALSE(
      torch::equal(a->model()->named_parameters()["policy0.weight"],
                   fresh->model()->named_parameters()["policy0.weight"]));
}

TEST(PpoLearnerTest, DivergedUpdateIsRolledBackAndNamesTheActors) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(SmallPpo(), 42);
  std::unique_ptr<PpoLearner> twin = MakeLearner(SmallPpo(), 42);
  ASSERT_TRUE(learner && twin);
  ASSERT_TRUE(learner->Update({MakeChunk(0, 4, 3, 1)}).ok());
  ASSERT_TRUE(twin->Update({MakeChunk(0, 4, 3, 1)}).ok());

  // Finite but absurd rewards (as a hostile actor could send) overflow the
  // returns: the update diverges.
  TrajectoryChunk poisoned = MakeChunk(1, 4, 3, 7);
  for (float& r : poisoned.rewards) r = 3e38f;
  const absl::StatusOr<UpdateStats> diverged = learner->Update({poisoned});
  ASSERT_EQ(diverged.status().code(), absl::StatusCode::kAborted)
      << diverged.status();
  EXPECT_THAT(std::string(diverged.status().message()),
              HasSubstr("rolled back to version 1"));
  EXPECT_THAT(std::string(diverged.status().message()), HasSubstr("actor-7"));
  EXPECT_EQ(learner->version(), 1);
  EXPECT_EQ(learner->samples_consumed(), 12);
  // Weights and observation statistics are those before the update ...
  ExpectSameState(*learner, *twin);
  // ... and so are Adam's moments and the shuffling: the next update is
  // bit-identical to that of a learner that never saw the poisoned chunk.
  const absl::StatusOr<UpdateStats> a =
      learner->Update({MakeChunk(1, 4, 3, 2)});
  const absl::StatusOr<UpdateStats> b = twin->Update({MakeChunk(1, 4, 3, 2)});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSameStats(*a, *b);
  ExpectSameState(*learner, *twin);
  EXPECT_EQ(learner->version(), 2);
}

// A rehearsal (RunHost's blame asks whether data would train) trains and
// then rolls back: it reports the stats of the update it would make, and
// the learner is bit-identical to a twin that never rehearsed, version and
// samples included; the real update afterwards gives the same stats.
TEST(PpoLearnerTest, ARehearsedUpdateReportsItsStatsAndChangesNothing) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(SmallPpo(), 42);
  std::unique_ptr<PpoLearner> twin = MakeLearner(SmallPpo(), 42);
  ASSERT_TRUE(learner && twin);
  const absl::StatusOr<UpdateStats> rehearsed =
      learner->Update({MakeChunk(0, 4, 3, 1)}, /*rehearse=*/true);
  ASSERT_TRUE(rehearsed.ok()) << rehearsed.status();
  EXPECT_EQ(rehearsed->policy_version, 0);
  EXPECT_EQ(learner->version(), 0);
  EXPECT_EQ(learner->samples_consumed(), 0);
  ExpectSameState(*learner, *twin);
  const absl::StatusOr<UpdateStats> a =
      learner->Update({MakeChunk(0, 4, 3, 1)});
  const absl::StatusOr<UpdateStats> b = twin->Update({MakeChunk(0, 4, 3, 1)});
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectSameStats(*a, *b);
  EXPECT_EQ(a->policy_loss, rehearsed->policy_loss);
  EXPECT_EQ(a->value_loss, rehearsed->value_loss);
  ExpectSameState(*learner, *twin);
  // A poisoned rehearsal diverges like an update (kAborted), also
  // changing nothing.
  TrajectoryChunk poisoned = MakeChunk(1, 4, 3, 7);
  for (float& r : poisoned.rewards) r = 3e38f;
  EXPECT_EQ(learner->Update({poisoned}, true).status().code(),
            absl::StatusCode::kAborted);
  ExpectSameState(*learner, *twin);
  // With optimiser state (Adam's moments and step count) and a used
  // shuffle generator: a rehearsal restores them too, so the next real
  // update is the twin's bit for bit.
  ASSERT_TRUE(learner->Update({MakeChunk(1, 4, 3, 9)}, true).ok());
  EXPECT_EQ(learner->version(), 1);
  const absl::StatusOr<UpdateStats> c =
      learner->Update({MakeChunk(1, 4, 3, 5)});
  const absl::StatusOr<UpdateStats> d = twin->Update({MakeChunk(1, 4, 3, 5)});
  ASSERT_TRUE(c.ok() && d.ok());
  ExpectSameStats(*c, *d);
  ExpectSameState(*learner, *twin);
}

// A stop cancels the update in progress at a minibatch boundary: the
// cancel check answers true on its third call (inside the first epoch), the
// update is rolled back like a diverged one, and the learner goes on
// bit-identical to a twin that never started it.
TEST(PpoLearnerTest, CancelledUpdateStopsAtAMinibatchAndIsRolledBack) {
  PpoOptions ppo = SmallPpo();
  ppo.epochs = 3;
  std::unique_ptr<PpoLearner> learner = MakeLearner(ppo, 42);
  std::unique_ptr<PpoLearner> twin = MakeLearner(ppo, 42);
  ASSERT_TRUE(learner && twin);
  ASSERT_TRUE(learner->Update({MakeChunk(0, 8, 4, 1)}).ok());
  ASSERT_TRUE(twin->Update({MakeChunk(0, 8, 4, 1)}).ok());

  int asked = 0;
  learner->set_cancel_check([&asked] { return ++asked >= 3; });
  const absl::StatusOr<UpdateStats> cancelled =
      learner->Update({MakeChunk(1, 8, 4, 2)});
  ASSERT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled)
      << cancelled.status();
  EXPECT_EQ(asked, 3);  // before the update, then two minibatch boundaries
  EXPECT_EQ(learner->version(), 1);
  EXPECT_EQ(learner->samples_consumed(), 32);
  ExpectSameState(*learner, *twin);
  // Raised before an update: nothing is done at all.
  const absl::StatusOr<UpdateStats> refused =
      learner->Update({MakeChunk(1, 8, 4, 2)});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(asked, 4);
  ExpectSameState(*learner, *twin);

  // Adam's moments and the shuffling were restored too.
  learner->set_cancel_check(nullptr);
  const absl::StatusOr<UpdateStats> a =
      learner->Update({MakeChunk(1, 8, 4, 2)});
  const absl::StatusOr<UpdateStats> b = twin->Update({MakeChunk(1, 8, 4, 2)});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSameStats(*a, *b);
  ExpectSameState(*learner, *twin);
  EXPECT_EQ(learner->version(), 2);
}

TEST(PpoLearnerTest, VersionGrowsByOneAndSamplesConsumedByTimesBPerUpdate) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(SmallPpo());
  ASSERT_TRUE(learner);
  absl::StatusOr<UpdateStats> s = learner->Update({MakeChunk(0, 4, 3, 1)});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(learner->version(), 1);
  EXPECT_EQ(s->policy_version, 1);
  EXPECT_EQ(s->samples_trained, 12);
  EXPECT_EQ(learner->samples_consumed(), 12);
  s = learner->Update({MakeChunk(1, 4, 3, 2), MakeChunk(0, 4, 3, 3)});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(learner->version(), 2);
  EXPECT_EQ(s->policy_version, 2);
  EXPECT_EQ(s->samples_trained, 24);
  EXPECT_EQ(s->samples_dropped, 0);
  EXPECT_EQ(s->chunks_dropped, 0);
  EXPECT_EQ(learner->samples_consumed(), 36);
}

// A learner at version 2 with max_policy_lag = 1.
std::unique_ptr<PpoLearner> LearnerAtVersionTwo() {
  PpoOptions ppo = SmallPpo();
  ppo.max_policy_lag = 1;
  std::unique_ptr<PpoLearner> learner = MakeLearner(ppo);
  if (!learner) return nullptr;
  for (int v = 0; v < 2; ++v) {
    absl::StatusOr<UpdateStats> s =
        learner->Update({MakeChunk(v, 4, 3, 10 + v)});
    EXPECT_TRUE(s.ok()) << s.status();
  }
  EXPECT_EQ(learner->version(), 2);
  return learner;
}

TEST(PpoLearnerTest, ChunkOlderThanMaxPolicyLagIsDroppedAndCounted) {
  std::unique_ptr<PpoLearner> learner = LearnerAtVersionTwo();
  ASSERT_TRUE(learner);
  // Version 0 = 2 − lag − 1 is stale; version 1 = 2 − lag is still fresh.
  absl::StatusOr<UpdateStats> s =
      learner->Update({MakeChunk(0, 4, 3, 20), MakeChunk(1, 4, 3, 21)});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->samples_dropped, 12);
  EXPECT_EQ(s->chunks_dropped, 1);
  EXPECT_EQ(s->samples_trained, 12);
  EXPECT_EQ(s->policy_version, 3);
  EXPECT_EQ(learner->version(), 3);
  EXPECT_EQ(learner->samples_consumed(), 36);
}

TEST(PpoLearnerTest, AllStaleChunksAreFailedPreconditionAndChangeNothing) {
  std::unique_ptr<PpoLearner> learner = LearnerAtVersionTwo();
  ASSERT_TRUE(learner);
  const torch::Tensor before =
      learner->model()->named_parameters()["policy0.weight"].clone();
  const double count_before = learner->model()->obs_count();
  absl::StatusOr<UpdateStats> s =
      learner->Update({MakeChunk(0, 4, 3, 20), MakeChunk(0, 4, 3, 21)});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("all 2 chunks were older than max_policy_lag = 1"));
  EXPECT_EQ(learner->version(), 2);
  EXPECT_EQ(learner->samples_consumed(), 24);
  EXPECT_EQ(learner->model()->obs_count(), count_before);
  EXPECT_TRUE(torch::equal(
      learner->model()->named_parameters()["policy0.weight"], before));
}

TEST(PpoLearnerTest, ChunkFromAFutureVersionIsInvalidArgument) {
  std::unique_ptr<PpoLearner> learner = LearnerAtVersionTwo();
  ASSERT_TRUE(learner);
  absl::StatusOr<UpdateStats> s =
      learner->Update({MakeChunk(2, 4, 3, 20), MakeChunk(3, 4, 3, 21)});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("claims policy version 3 but the learner is at 2"));
  EXPECT_EQ(learner->version(), 2);
  EXPECT_EQ(learner->samples_consumed(), 24);
}

TEST(PpoLearnerTest, ChunkWithTheWrongObsSizeIsInvalidArgument) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(SmallPpo());
  ASSERT_TRUE(learner);
  const TrajectoryChunk c = MakeChunk(0, 4, 3, 5, /*obs_size=*/6);
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  absl::StatusOr<UpdateStats> s = learner->Update({c});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("has obs_size 6 and action_size 2; the run expects 5 "
                        "and 2"));
  EXPECT_EQ(learner->version(), 0);
  EXPECT_EQ(learner->samples_consumed(), 0);
  EXPECT_EQ(learner->model()->obs_count(), 0.0);
}

// A rejected update changes nothing: the good chunk before a mis-shaped one
// must not be folded into the observation statistics (a retry without the
// bad chunk would otherwise count it twice).
TEST(PpoLearnerTest, RejectedUpdateLeavesTheObservationStatisticsUntouched) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(SmallPpo());
  ASSERT_TRUE(learner);
  absl::StatusOr<UpdateStats> s = learner->Update(
      {MakeChunk(0, 4, 3, 5), MakeChunk(0, 4, 3, 6, /*obs_size=*/6)});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(learner->version(), 0);
  EXPECT_EQ(learner->model()->obs_count(), 0.0);
  EXPECT_TRUE(torch::equal(learner->model()->obs_mean(),
                           torch::zeros({kObs}, torch::kFloat64)));
}

TEST(PpoLearnerTest, LinearScheduleDecaysTheLearningRateToZeroAtTheBudget) {
  // Budget 36 samples, 12 per update: lr·(1 − 0/36), lr·(1 − 12/36),
  // lr·(1 − 24/36), then 0 once the budget is spent (and stays 0 past it).
  PpoOptions ppo = SmallPpo();
  ppo.lr_schedule = LrSchedule::kLinear;
  ppo.learning_rate = 1e-3;
  std::unique_ptr<PpoLearner> learner = MakeLearner(ppo, 1, 36);
  ASSERT_TRUE(learner);
  const std::vector<double> expected = {1e-3, 1e-3 * (1.0 - 12.0 / 36.0),
                                        1e-3 * (1.0 - 24.0 / 36.0), 0.0, 0.0};
  for (size_t i = 0; i < expected.size(); ++i) {
    const torch::Tensor before =
        learner->model()->named_parameters()["policy0.weight"].clone();
    absl::StatusOr<UpdateStats> s =
        learner->Update({MakeChunk(static_cast<int64_t>(i), 4, 3, 30 + i)});
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_DOUBLE_EQ(s->learning_rate, expected[i]) << "update " << i;
    EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamOptions&>(
                         learner->optimizer().param_groups()[0].options())
                         .lr(),
                     expected[i])
        << "update " << i;
    const bool moved = !torch::equal(
        learner->model()->named_parameters()["policy0.weight"], before);
    EXPECT_EQ(moved, expected[i] > 0) << "update " << i;
  }
}

TEST(PpoLearnerTest, ConstantScheduleKeepsTheLearningRate) {
  PpoOptions ppo = SmallPpo();
  ppo.lr_schedule = LrSchedule::kConstant;
  ppo.learning_rate = 2.5e-4;
  std::unique_ptr<PpoLearner> learner = MakeLearner(ppo, 1, 24);
  ASSERT_TRUE(learner);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<UpdateStats> s =
        learner->Update({MakeChunk(i, 4, 3, 40 + i)});
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->learning_rate, 2.5e-4) << "update " << i;
  }
}

TEST(PpoLearnerTest, GradientStepsAreEpochsTimesMinibatchesPerEpoch) {
  struct Case {
    int steps, copies, minibatch, epochs;
    int64_t expected;
  };
  for (const Case& c : {Case{8, 12, 32, 3, 9},   // 96 / 32 = 3 per epoch
                        Case{4, 25, 32, 3, 12},  // ceil(100 / 32) = 4
                        Case{4, 3, 1000, 2, 2},  // minibatch capped at N
                        Case{4, 3, 1, 1, 12}}) {
    PpoOptions ppo = SmallPpo();
    ppo.minibatch_size = c.minibatch;
    ppo.epochs = c.epochs;
    std::unique_ptr<PpoLearner> learner = MakeLearner(ppo);
    ASSERT_TRUE(learner);
    absl::StatusOr<UpdateStats> s =
        learner->Update({MakeChunk(0, c.steps, c.copies, 50)});
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->gradient_steps, c.expected)
        << c.steps * c.copies << " samples, minibatch " << c.minibatch;
    EXPECT_EQ(s->samples_trained, int64_t{c.steps} * c.copies);
  }
}

TEST(PpoLearnerTest, SamplingWithReplacementTakesTheSameNumberOfSteps) {
  PpoOptions ppo = SmallPpo();
  ppo.sample_with_replacement = true;
  ppo.minibatch_size = 32;
  ppo.epochs = 3;
  std::unique_ptr<PpoLearner> learner = MakeLearner(ppo);
  ASSERT_TRUE(learner);
  absl::StatusOr<UpdateStats> s = learner->Update({MakeChunk(0, 8, 12, 50)});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->gradient_steps, 9);
}

TEST(PpoLearnerTest, UpdateFoldsTheChunkObservationsIntoTheStatistics) {
  // Rows 0..T−1 of every chunk count; the bootstrap row T does not.
  std::unique_ptr<PpoLearner> learner = MakeLearner(SmallPpo());
  ASSERT_TRUE(learner);
  const TrajectoryChunk a = MakeChunk(0, 4, 3, 60);
  const TrajectoryChunk b = MakeChunk(0, 4, 3, 61);
  ASSERT_TRUE(learner->Update({a, b}).ok());
  EXPECT_EQ(learner->model()->obs_count(), 24.0);
  std::vector<float> rows(a.obs.begin(), a.obs.begin() + 12 * kObs);
  rows.insert(rows.end(), b.obs.begin(), b.obs.begin() + 12 * kObs);
  const torch::Tensor all =
      torch::from_blob(rows.data(), {24, kObs}).to(torch::kFloat64);
  EXPECT_LT(
      (learner->model()->obs_mean() - all.mean(0)).abs().max().item<double>(),
      1e-12);
}

TEST(PpoLearnerTest, CreatingOnCudaWithoutAGpuIsUnavailable) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  PpoOptions ppo = SmallPpo();
  ppo.device = "cuda";
  absl::StatusOr<std::unique_ptr<PpoLearner>> learner =
      PpoLearner::Create(kObs, kActions, SmallNetwork(), ppo, 0, 1);
  EXPECT_EQ(learner.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(learner.status().message()),
              HasSubstr("device 'cuda' requested but CUDA is not available"));
}

TEST(PpoLearnerTest, CreateRefusesInvalidShapesAndOptions) {
  EXPECT_EQ(PpoLearner::Create(0, kActions, SmallNetwork(), SmallPpo(), 0, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PpoLearner::Create(kObs, 0, SmallNetwork(), SmallPpo(), 0, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  PpoOptions ppo = SmallPpo();
  ppo.device = "tpu";
  EXPECT_EQ(PpoLearner::Create(kObs, kActions, SmallNetwork(), ppo, 0, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ristretto::learner
