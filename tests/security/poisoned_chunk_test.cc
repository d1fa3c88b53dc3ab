// Poisoned trajectories at a learner: an actor within its rights streams
// chunks whose values are finite but impossible for the run's contract (a
// reward of 1e6, an observation of 1e6, a negative holding). The ±1e9
// catch-all let them through; the bounds the learner derives for each run
// from its contract and market (learner/chunk_limits.h) refuse them with
// INVALID_ARGUMENT naming field, index, value and bound, count them, and
// keep the stream open, while chunks of an honest env on the same market
// are accepted. In-process: a LearnerService with one tiny RunHost, the
// actor an ActorStream on a recording transport.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/rng.h"
#include "env/vector_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/service/learner_service.h"
#include "tests/learner/service/run_test_util.h"
#include "wire/chunk_codec.h"

namespace ristretto::learner {
namespace {

using ::testing::HasSubstr;
using testing::InProcessActor;
using ::testing::Not;
using testing::SmallMarket;
using testing::SmallSpec;

constexpr int kInvalid = static_cast<int>(absl::StatusCode::kInvalidArgument);

class PoisonedChunkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RunSpec spec = SmallSpec("run-0");
    spec.trainer.ppo.max_policy_lag = 8;  // room for every chunk below
    Start(spec);
  }
  // A run of `spec`, its learner service and the actor "a0" (after Hello).
  void Start(const RunSpec& spec) {
    if (actor_ != nullptr) actor_.reset();
    if (run_ != nullptr) run_->Stop();
    absl::StatusOr<std::unique_ptr<RunHost>> host =
        RunHost::Create(spec, SmallMarket());
    ASSERT_TRUE(host.ok()) << host.status();
    run_ = std::shared_ptr<RunHost>(std::move(*host));
    LearnerServiceOptions options;
    options.dataset_id = "small-market";
    options.dataset_path = "/nonexistent/small-market.rds";
    service_ = std::make_unique<LearnerService>(
        std::vector<std::shared_ptr<RunHost>>{run_}, options);
    actor_ = std::make_unique<InProcessActor>(service_.get());
    actor_->Hello("a0");
  }
  void TearDown() override {
    actor_.reset();
    if (run_ != nullptr) run_->Stop();
  }

  // 8 steps × 2 copies of an honest env on the run's market with the run's
  // env options, played by a random policy (the actor's sampling and log
  // probability arithmetic, tanh-corrected).
  TrajectoryChunk HonestChunk(uint64_t seed) {
    const PolicyContract& contract = run_->contract();
    env::VectorEnvOptions vo;
    vo.env = contract.env;
    vo.num_copies = 2;
    vo.episode_steps = run_->spec().trainer.episode_steps;
    vo.seed = seed;
    absl::StatusOr<std::unique_ptr<env::VectorEnv>> e =
        env::VectorEnv::Create(SmallMarket(), vo);
    EXPECT_TRUE(e.ok()) << e.status();
    const int T = 8, B = 2, D = contract.obs_size, A = contract.action_size;
    TrajectoryChunk c;
    c.run_id = "run-0";
    c.actor_id = "a0";
    c.policy_version = 0;
    c.steps = T;
    c.copies = B;
    c.obs_size = D;
    c.action_size = A;
    c.obs.resize(static_cast<size_t>(T + 1) * B * D);
    c.actions.resize(static_cast<size_t>(T) * B * A);
    c.log_probs.resize(static_cast<size_t>(T) * B);
    c.rewards.resize(static_cast<size_t>(T) * B);
    c.dones.resize(static_cast<size_t>(T) * B);
    (*e)->Reset(c.obs.data());
    Rng rng(seed);
    std::vector<float> actions(static_cast<size_t>(B) * A),
        final_obs(static_cast<size_t>(B) * D);
    const float log_std = -0.5f, std = std::exp(log_std);
    for (int t = 0; t < T; ++t) {
      for (int b = 0; b < B; ++b) {
        float lp = 0.0f;
        for (int j = 0; j < A; ++j) {
          const float noise = static_cast<float>(rng.Normal());
          const float u = static_cast<float>(rng.Normal()) + std * noise;
          c.actions[(static_cast<size_t>(t) * B + b) * A + j] = u;
          actions[static_cast<size_t>(b) * A + j] = std::tanh(u);
          lp += -0.5f * noise * noise - log_std - 0.9189385f -
                std::log(1.0f - std::tanh(u) * std::tanh(u) + 1e-12f);
        }
        c.log_probs[static_cast<size_t>(t) * B + b] = lp;
      }
      env::StepOutput out;
      out.obs = c.obs.data() + static_cast<size_t>(t + 1) * B * D;
      out.reward = c.rewards.data() + static_cast<size_t>(t) * B;
      out.done = c.dones.data() + static_cast<size_t>(t) * B;
      out.final_obs = final_obs.data();
      EXPECT_TRUE((*e)->Step(actions.data(), out).ok());
      for (int b = 0; b < B; ++b) {
        if (out.done[b]) {
          c.final_obs.insert(c.final_obs.end(), final_obs.begin() + b * D,
                             final_obs.begin() + (b + 1) * D);
        }
      }
    }
    return c;
  }

  // Sends `chunk` with the next sequence number; returns its ack.
  v1::ChunkAck Send(const TrajectoryChunk& chunk) {
    const int64_t sequence = sequence_++;
    actor_->Chunk(chunk, sequence);
    // A chunk parked behind a full ingest queue is acknowledged once the
    // training thread has made room.
    EXPECT_TRUE(actor_->WaitForMessage([sequence](const v1::LearnerMessage& m) {
      return m.has_ack() && m.ack().sequence() == sequence;
    }));
    return actor_->AckOf(sequence).value_or(v1::ChunkAck{});
  }

  std::shared_ptr<RunHost> run_;
  std::unique_ptr<LearnerService> service_;
  std::unique_ptr<InProcessActor> actor_;
  int64_t sequence_ = 0;
};

TEST_F(PoisonedChunkTest, LargeFiniteValuesAreRefusedHonestChunksAccepted) {
  ASSERT_NE(run_->chunk_bounds(), nullptr);
  const ChunkValueBounds& bounds = *run_->chunk_bounds();
  const TrajectoryChunk honest = HonestChunk(1);
  ASSERT_EQ(Send(honest).code(), 0);

  struct Poison {
    const char* name;
    void (*apply)(TrajectoryChunk*);
    const char* message;  // where and what
  };
  const int n = SmallMarket()->num_assets;
  const Poison poisons[] = {
      {"reward", [](TrajectoryChunk* c) { c->rewards[3] = 1e6f; },
       "chunk rewards[3] (step 1, copy 1) is 1e+06, outside the run's bound"},
      {"cash observation",
       [](TrajectoryChunk* c) { c->obs[c->obs_size * 2] = 1e6f; },
       "(step 1, copy 0, element 0) is 1e+06, outside the run's bound"},
      {"negative holding",
       [](TrajectoryChunk* c) { c->obs[c->obs_size + 1] = -1.0f; },
       "(step 0, copy 1, element 1) is -1, outside the run's bound"},
      {"feature observation",
       [](TrajectoryChunk* c) { c->obs[c->obs_size - 1] = -1e6f; },
       "is -1e+06, outside the run's bound"},
      {"log probability", [](TrajectoryChunk* c) { c->log_probs[0] = 1e6f; },
       "chunk log_probs[0] (step 0, copy 0) is 1e+06"},
      {"action", [](TrajectoryChunk* c) { c->actions[1] = -1e6f; },
       "chunk actions[1] (step 0, copy 0, element 1) is -1e+06"},
  };
  int64_t rejected = 0;
  for (const Poison& p : poisons) {
    SCOPED_TRACE(p.name);
    TrajectoryChunk poisoned = honest;
    p.apply(&poisoned);
    // The catch-all alone (what every run had before) lets it through.
    v1::TrajectoryChunk proto;
    wire::ChunkToProto(poisoned, 0, &proto);
    EXPECT_TRUE(
        wire::ChunkFromProto(proto, poisoned.obs_size, n, wire::ChunkLimits{})
            .ok());
    const v1::ChunkAck ack = Send(poisoned);
    EXPECT_EQ(ack.code(), kInvalid);
    EXPECT_THAT(ack.message(), HasSubstr(p.message));
    // The refusal names field, index and value, never the bound: a
    // poisoning actor is not handed the exact limits to stay inside.
    EXPECT_THAT(ack.message(), Not(HasSubstr("bound [")));
    EXPECT_EQ(service_->chunks_rejected(), ++rejected);
  }
  // A terminal observation is held to the same bounds: an honest chunk with
  // an episode end, its final observation's cash poisoned.
  TrajectoryChunk ended = honest;
  ended.dones[5] = 1;
  ended.final_obs.assign(honest.obs.begin(),
                         honest.obs.begin() + honest.obs_size);
  ASSERT_EQ(Send(ended).code(), 0);
  ended.final_obs[0] = bounds.obs[0].hi * 2 + 1;
  EXPECT_THAT(Send(ended).message(),
              HasSubstr("chunk final_obs[0] (done 0, element 0)"));
  ++rejected;
  EXPECT_EQ(service_->chunks_rejected(), rejected);
  // Only the two honest chunks reached the run; the stream stays open and
  // the next honest chunk is accepted.
  EXPECT_EQ(run_->counters().env_steps_received, 2 * 16);
  EXPECT_EQ(Send(HonestChunk(2)).code(), 0);
  EXPECT_TRUE(actor_->transport().read_pending());
  EXPECT_FALSE(actor_->transport().ended().has_value());
}

// Issue 35, item 4: one actor streams chunks whose every value is inside
// the run's bounds but chosen to hurt (log-probabilities at the lowest the
// bounds allow, so PPO's ratio exp(new - old) is as large as it gets;
// rewards at the top of their bound), beside an honest actor. The ratio is
// computed from a clamped log-ratio, and should an update still diverge,
// the actor without whom it trains is cut off: either way the run reaches
// its budget, does not fail, and scores its validation slice; the honest
// actor is never cut off.
TEST_F(PoisonedChunkTest, InBoundsPoisonFromOneOfTwoActorsCannotFailTheRun) {
  RunSpec spec = SmallSpec("run-0", 320);
  const int64_t rows = SmallMarket()->num_rows;
  spec.trainer.train_domains = {env::Domain{0, rows / 2}};
  spec.trainer.validation_domains = {env::Domain{rows / 2, rows}};
  spec.trainer.ppo.max_policy_lag = 8;
  spec.samples_per_update = 32;  // one honest and one poisoned chunk
  Start(spec);
  const ChunkValueBounds& bounds = *run_->chunk_bounds();
  InProcessActor evil(service_.get());
  evil.Hello("evil");
  int64_t evil_sequence = 0;
  bool evil_open = true;
  for (uint64_t seed = 1; seed < 100 && !run_->budget_reached(); ++seed) {
    const int64_t version = run_->counters().policy_version;
    TrajectoryChunk honest = HonestChunk(seed);
    honest.policy_version = version;
    const v1::ChunkAck ack = Send(honest);
    ASSERT_THAT(ack.code(),
                ::testing::AnyOf(
                    0, static_cast<int>(absl::StatusCode::kFailedPrecondition)))
        << ack.message();
    if (!evil_open) continue;
    TrajectoryChunk poisoned = HonestChunk(seed + 1000);
    poisoned.policy_version = version;
    for (float& lp : poisoned.log_probs) lp = bounds.log_prob.lo + 1.0f;
    for (float& r : poisoned.rewards) r = bounds.reward.hi * 0.999f;
    const int64_t sequence = evil_sequence++;
    evil.Chunk(poisoned, sequence);
    ASSERT_TRUE(evil.WaitForMessage([sequence](const v1::LearnerMessage& m) {
      return m.has_ack() && m.ack().sequence() == sequence;
    }));
    const v1::ChunkAck evil_ack = evil.AckOf(sequence).value_or(v1::ChunkAck{});
    // Inside the bounds: never refused as malformed.
    EXPECT_NE(evil_ack.code(), kInvalid) << evil_ack.message();
    if (evil_ack.code() ==
        static_cast<int>(absl::StatusCode::kPermissionDenied)) {
      EXPECT_THAT(evil_ack.message(), HasSubstr("cut off"));
      evil_open = false;  // its stream was ended
    }
  }
  ASSERT_TRUE(run_->WaitFinished(120000));
  EXPECT_TRUE(run_->failure().ok()) << run_->failure();
  const RunCounters c = run_->counters();
  EXPECT_GE(c.env_steps_trained, 320);
  const std::optional<EvaluationResult> scored = run_->last_evaluation();
  ASSERT_TRUE(scored.has_value());
  EXPECT_TRUE(std::isfinite(scored->score));
  EXPECT_FALSE(run_->IsCutOff("a0"));
  // Each rolled-back update either cut the poisoning actor off or is one
  // of fewer than kMaxConsecutiveDivergedUpdates in a row.
  EXPECT_EQ(c.actors_cut_off, run_->IsCutOff("evil") ? 1 : 0);
  std::cout << "in-bounds poison: " << c.updates << " updates, "
            << c.updates_rolled_back << " rolled back, poisoning actor "
            << (run_->IsCutOff("evil") ? "cut off" : "not cut off") << "\n";
}

}  // namespace
}  // namespace ristretto::learner
