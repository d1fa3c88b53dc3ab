// RunHost in-process: a tiny run on a small synthetic market, chunks
// ingested directly (no gRPC), the training thread real. Covers the weight
// versions it publishes, which chunks it accepts and refuses (future,
// stale, finished, stopped), the counters' balance and the shutdown.
#include "learner/service/run_host.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/learner/service/run_test_util.h"

namespace ristretto::learner {
namespace {

using testing::EvaluationGate;
using testing::OpenOnExit;
using testing::SmallChunk;
using testing::SmallMarket;
using testing::SmallSpec;
using testing::WaitFor;

std::unique_ptr<RunHost> MustCreate(const RunSpec& spec) {
  absl::StatusOr<std::unique_ptr<RunHost>> host =
      RunHost::Create(spec, SmallMarket());
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? std::move(*host) : nullptr;
}

// Records the versions a subscriber is told about (-1: the run ended).
// Declared before the RunHost it listens to: the host's Stop (in its
// destructor) still calls it.
class VersionLog {
 public:
  RunHost::Listener Listener() {
    return [this](const std::shared_ptr<const RunHost::PublishedWeights>& w) {
      std::lock_guard<std::mutex> lock(mu_);
      versions_.push_back(w == nullptr ? -1 : w->version);
    };
  }
  std::vector<int64_t> versions() {
    std::lock_guard<std::mutex> lock(mu_);
    return versions_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> versions_;
};

TEST(RunHostTest, CreatePublishesVersionZeroWithTheRunsContract) {
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0"));
  ASSERT_NE(host, nullptr);
  ASSERT_NE(host->latest_weights(), nullptr);
  EXPECT_EQ(host->latest_weights()->version, 0);
  EXPECT_EQ(host->counters().policy_version, 0);
  EXPECT_EQ(host->obs_size(), testing::SmallObsSize());
  EXPECT_EQ(host->action_size(), testing::kActions);
  EXPECT_TRUE(host->accepting());
  EXPECT_FALSE(host->budget_reached());
}

TEST(RunHostTest, CreateRefusesABadSpecBeforeBuildingAnything) {
  RunSpec no_id = SmallSpec("");
  EXPECT_EQ(RunHost::Create(no_id, SmallMarket()).status().code(),
            absl::StatusCode::kInvalidArgument);
  RunSpec no_samples = SmallSpec("run-0");
  no_samples.samples_per_update = 0;
  EXPECT_EQ(RunHost::Create(no_samples, SmallMarket()).status().code(),
            absl::StatusCode::kInvalidArgument);
  RunSpec bad_objective = SmallSpec("run-0");
  bad_objective.trainer.objective = "no-such-objective";
  EXPECT_FALSE(RunHost::Create(bad_objective, SmallMarket()).ok());
  RunSpec wrong_features = SmallSpec("run-0");
  wrong_features.trainer.feature_names.push_back("one-too-many");
  const absl::Status s =
      RunHost::Create(wrong_features, SmallMarket()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("observation"), std::string::npos) << s;
}

TEST(RunHostTest, AFullUpdateTrainsAndPublishesTheNextVersion) {
  VersionLog log;
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0"));
  ASSERT_NE(host, nullptr);
  host->Subscribe(log.Listener());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return host->counters().policy_version == 1; }));
  ASSERT_TRUE(WaitFor([&] { return !log.versions().empty(); }));
  EXPECT_EQ(log.versions(), (std::vector<int64_t>{1}));
  EXPECT_EQ(host->latest_weights()->version, 1);
  const RunCounters c = host->counters();
  EXPECT_EQ(c.env_steps_received, 16);
  EXPECT_EQ(c.env_steps_trained, 16);
  EXPECT_EQ(c.updates, 1);
  EXPECT_EQ(c.chunks_rejected, 0);
}

TEST(RunHostTest, DivergedUpdatesAreRolledBackAndRepeatedOnesFailTheRun) {
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0"));
  ASSERT_NE(host, nullptr);
  // Finite but absurd rewards make the update diverge; it is rolled back
  // (version stays 0), counted, and the run goes on ...
  auto poisoned = [](uint64_t seed) {
    TrajectoryChunk c = SmallChunk("run-0", 0, seed);
    for (float& r : c.rewards) r = 3e38f;
    c.actor_id = "evil-actor";
    return c;
  };
  ASSERT_TRUE(host->Ingest(poisoned(1), [] {}).ok());
  ASSERT_TRUE(
      WaitFor([&] { return host->counters().updates_rolled_back == 1; }));
  EXPECT_TRUE(host->failure().ok()) << host->failure();
  EXPECT_EQ(host->counters().policy_version, 0);
  EXPECT_EQ(host->counters().env_steps_dropped, 16);
  // ... a good chunk still trains ...
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0, 2), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return host->counters().policy_version == 1; }));
  // ... and only kMaxConsecutiveDivergedUpdates in a row fail the run,
  // naming the actor.
  for (int i = 0; i < kMaxConsecutiveDivergedUpdates; ++i) {
    TrajectoryChunk c = poisoned(10 + i);
    c.policy_version = 1;
    ASSERT_TRUE(host->Ingest(std::move(c), [] {}).ok());
    ASSERT_TRUE(
        WaitFor([&] { return host->counters().updates_rolled_back == 2 + i; }));
  }
  const absl::Status failure = host->failure();
  EXPECT_FALSE(failure.ok());
  // The last diverged update's own code (PpoLearner: kAborted).
  EXPECT_EQ(failure.code(), absl::StatusCode::kAborted) << failure;
  EXPECT_NE(failure.message().find("diverged 3 updates in a row"),
            std::string::npos)
      << failure;
  EXPECT_NE(failure.message().find("evil-actor"), std::string::npos) << failure;
  EXPECT_EQ(host->counters().policy_version, 1);
}

// Issue 35, item 4: one actor cannot fail a run. An update over an honest
// actor's chunk and a poisoned one diverges; retried without each actor in
// turn (without the honest one it diverges again, without the poisoned one
// it trains), the poisoned actor is cut off: its stream is told, its later
// chunks are refused with kPermissionDenied, the run trains on and does not
// fail, and every env step received is trained or dropped.
TEST(RunHostTest, TheActorWhoseChunksMadeAnUpdateDivergeIsCutOff) {
  RunSpec spec = SmallSpec("run-0");
  spec.samples_per_update = 32;  // two chunks per update
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  auto honest = [](uint64_t seed, int64_t version) {
    TrajectoryChunk c = SmallChunk("run-0", version, seed);
    c.actor_id = "honest-actor";
    return c;
  };
  auto poisoned = [](uint64_t seed, int64_t version) {
    TrajectoryChunk c = SmallChunk("run-0", version, seed);
    for (float& r : c.rewards) r = 3e38f;
    c.actor_id = "evil-actor";
    return c;
  };
  std::mutex mu;
  std::vector<absl::Status> told_evil, told_honest;
  host->Subscribe([](auto) {}, "evil-actor",
                  [&](const absl::Status& why) {
                    std::lock_guard<std::mutex> lock(mu);
                    told_evil.push_back(why);
                  });
  host->Subscribe([](auto) {}, "honest-actor",
                  [&](const absl::Status& why) {
                    std::lock_guard<std::mutex> lock(mu);
                    told_honest.push_back(why);
                  });
  EXPECT_FALSE(host->IsCutOff("evil-actor"));
  ASSERT_TRUE(host->Ingest(honest(1, 0), [] {}).ok());
  ASSERT_TRUE(host->Ingest(poisoned(2, 0), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return host->counters().actors_cut_off == 1; }));
  ASSERT_TRUE(WaitFor([&] { return host->counters().policy_version == 1; }));
  EXPECT_TRUE(host->IsCutOff("evil-actor"));
  EXPECT_FALSE(host->IsCutOff("honest-actor"));
  EXPECT_TRUE(host->failure().ok()) << host->failure();
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(told_evil.size(), 1u);
    EXPECT_EQ(told_evil[0].code(), absl::StatusCode::kPermissionDenied);
    EXPECT_NE(told_evil[0].message().find("evil-actor"), std::string::npos)
        << told_evil[0];
    EXPECT_TRUE(told_honest.empty());
  }
  RunCounters c = host->counters();
  EXPECT_EQ(c.env_steps_trained, 16);  // the honest chunk alone
  EXPECT_EQ(c.env_steps_dropped, 16);  // the poisoned one
  EXPECT_EQ(c.updates, 1);
  EXPECT_EQ(c.updates_rolled_back, 1);
  // Its chunks are refused from now on, even honest-looking ones ...
  const absl::Status refused = host->Ingest(
      [] {
        TrajectoryChunk clean = SmallChunk("run-0", 1, 5);
        clean.actor_id = "evil-actor";
        return clean;
      }(),
      [] {});
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_EQ(host->CutOffStatus("evil-actor"), refused);
  // ... and the honest actor's train.
  ASSERT_TRUE(host->Ingest(honest(3, 1), [] {}).ok());
  ASSERT_TRUE(host->Ingest(honest(4, 1), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return host->counters().policy_version == 2; }));
  c = host->counters();
  EXPECT_EQ(c.env_steps_trained, 48);
  EXPECT_EQ(c.env_steps_received, c.env_steps_trained + c.env_steps_dropped);
  EXPECT_EQ(c.chunks_rejected, 1);
  EXPECT_TRUE(host->failure().ok()) << host->failure();
}

// A diverged update of one actor's data has no one to blame (nothing would
// be left to train): it is rolled back and counted, nobody is cut off.
TEST(RunHostTest, ADivergedUpdateOfOneActorsDataCutsNobodyOff) {
  RunSpec spec = SmallSpec("run-0");
  spec.samples_per_update = 32;
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  for (uint64_t seed : {1, 2}) {
    TrajectoryChunk c = SmallChunk("run-0", 0, seed);
    if (seed == 2) {
      for (float& r : c.rewards) r = 3e38f;
    }
    c.actor_id = "only-actor";
    ASSERT_TRUE(host->Ingest(std::move(c), [] {}).ok());
  }
  ASSERT_TRUE(
      WaitFor([&] { return host->counters().updates_rolled_back == 1; }));
  EXPECT_EQ(host->counters().actors_cut_off, 0);
  EXPECT_FALSE(host->IsCutOff("only-actor"));
  EXPECT_EQ(host->counters().policy_version, 0);
  EXPECT_EQ(host->counters().env_steps_dropped, 32);
}

TEST(RunHostTest, AChunkFromAFutureVersionIsRejected) {
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0"));
  ASSERT_NE(host, nullptr);
  const absl::Status s = host->Ingest(SmallChunk("run-0", 3), [] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  const RunCounters c = host->counters();
  EXPECT_EQ(c.chunks_rejected, 1);
  EXPECT_EQ(c.env_steps_received, 0);  // rejected, not received
}

TEST(RunHostTest, AChunkOlderThanMaxPolicyLagIsReceivedAndDropped) {
  RunSpec spec = SmallSpec("run-0");
  spec.trainer.ppo.max_policy_lag = 0;
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return host->counters().policy_version == 1; }));
  const absl::Status s = host->Ingest(SmallChunk("run-0", 0, 2), [] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("stale"), std::string::npos) << s;
  const RunCounters c = host->counters();
  EXPECT_EQ(c.env_steps_received, 32);
  EXPECT_EQ(c.env_steps_dropped, 16);
  EXPECT_EQ(c.env_steps_trained, 16);
}

TEST(RunHostTest, ReachingTheBudgetFinishesTheRunAndRefusesLaterChunks) {
  VersionLog log;
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0", 16));
  ASSERT_NE(host, nullptr);
  host->Subscribe(log.Listener());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0), [] {}).ok());
  ASSERT_TRUE(host->WaitFinished(5000));
  EXPECT_TRUE(host->budget_reached());
  EXPECT_FALSE(host->accepting());
  // The subscribers heard the new version and the end (the end first: the
  // actors stop as soon as the budget is reached).
  ASSERT_TRUE(WaitFor([&] { return log.versions().size() >= 2; }));
  const std::vector<int64_t> heard = log.versions();
  EXPECT_NE(std::find(heard.begin(), heard.end(), 1), heard.end());
  EXPECT_NE(std::find(heard.begin(), heard.end(), -1), heard.end());
  const absl::Status late = host->Ingest(SmallChunk("run-0", 1), [] {});
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  const RunCounters c = host->counters();
  EXPECT_TRUE(c.finished);
  EXPECT_EQ(c.env_steps_trained, 16);
  EXPECT_EQ(c.env_steps_received, c.env_steps_trained + c.env_steps_dropped);
  EXPECT_TRUE(host->failure().ok()) << host->failure();
}

TEST(RunHostTest, EveryEvaluationIsScoredReportedAndKeptAsTheBest) {
  RunSpec spec = SmallSpec("run-0", 16);
  const int64_t rows = SmallMarket()->num_rows;
  spec.trainer.train_domains = {env::Domain{0, rows / 2}};
  spec.trainer.validation_domains = {env::Domain{rows / 2, rows}};
  std::mutex mu;
  std::vector<EvaluationResult> reported;
  spec.on_evaluation = [&](const EvaluationResult& e) {
    std::lock_guard<std::mutex> lock(mu);
    reported.push_back(e);
  };
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  EXPECT_FALSE(host->last_evaluation().has_value());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0), [] {}).ok());
  ASSERT_TRUE(host->WaitFinished(5000));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].at_env_steps, 16);
  EXPECT_GT(reported[0].steps, 0);
  ASSERT_TRUE(host->last_evaluation().has_value());
  EXPECT_EQ(host->last_evaluation()->score, reported[0].score);
  ASSERT_TRUE(host->best_evaluation().has_value());
  EXPECT_EQ(host->best_evaluation()->score, reported[0].score);
  EXPECT_EQ(host->counters().last_score, reported[0].score);
  EXPECT_TRUE(host->best_policy_dir().empty());  // no run_dir: nothing saved
}

TEST(RunHostTest, StopBeforeTheBudgetTellsSubscribersAndRefusesChunks) {
  VersionLog log;
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0"));
  ASSERT_NE(host, nullptr);
  host->Subscribe(log.Listener());
  host->Stop();
  // Told at Stop() and again when the training thread has ended.
  const std::vector<int64_t> heard = log.versions();
  ASSERT_FALSE(heard.empty());
  for (int64_t v : heard) EXPECT_EQ(v, -1);
  EXPECT_FALSE(host->accepting());
  EXPECT_FALSE(host->budget_reached());  // stopped, not finished
  const absl::Status s = host->Ingest(SmallChunk("run-0", 0), [] {});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  const RunCounters c = host->counters();
  EXPECT_FALSE(c.finished);
  EXPECT_EQ(c.env_steps_received, 16);
  EXPECT_EQ(c.env_steps_dropped, 16);
  host->Stop();  // idempotent
}

// A stopped run checkpoints without evaluating; the resumed run reads that
// checkpoint (steps, version) and evaluates at the next point of its
// eval_every grid (64), as an uninterrupted run would — not at the stop's
// steps + eval_every (80).
TEST(RunHostTest, StopCheckpointsWithoutEvaluatingAndResumesOnTheGrid) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") +
      "/ristretto-rh-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  RunSpec spec = SmallSpec("run-0");
  const int64_t rows = SmallMarket()->num_rows;
  spec.trainer.train_domains = {env::Domain{0, rows / 2}};
  spec.trainer.validation_domains = {env::Domain{rows / 2, rows}};
  spec.trainer.eval_every_env_steps = 32;
  spec.trainer.run_dir = dir + "/run";
  std::mutex mu;
  std::vector<int64_t> evaluated_at;
  spec.on_evaluation = [&](const EvaluationResult& e) {
    std::lock_guard<std::mutex> lock(mu);
    evaluated_at.push_back(e.at_env_steps);
  };
  auto train = [](RunHost& host, int64_t updates) {
    for (int64_t k = host.counters().updates; k < updates; ++k) {
      const int64_t version = host.counters().policy_version;
      ASSERT_TRUE(host.Ingest(SmallChunk("run-0", version), [] {}).ok());
      ASSERT_TRUE(WaitFor([&] { return host.counters().updates == k + 1; }));
    }
  };
  {
    std::unique_ptr<RunHost> host = MustCreate(spec);
    ASSERT_NE(host, nullptr);
    train(*host, 3);  // 48 env steps: evaluated at 32
    host->Stop();
    EXPECT_TRUE(host->failure().ok()) << host->failure();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(evaluated_at, std::vector<int64_t>({32}));  // none at the stop
  }
  std::ifstream latest(spec.trainer.run_dir + "/LATEST");
  std::string name;
  std::getline(latest, name);
  EXPECT_EQ(name, "step-000000000048");

  std::unique_ptr<RunHost> resumed = MustCreate(spec);
  ASSERT_NE(resumed, nullptr);
  EXPECT_EQ(resumed->counters().env_steps_trained, 48);
  EXPECT_EQ(resumed->counters().policy_version, 3);
  train(*resumed, 4);  // 64 env steps: the grid's next point
  // The evaluation follows the update on the training thread: wait for it
  // (a Stop before it would skip it).
  EXPECT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return evaluated_at.size() >= 2;
  }));
  resumed->Stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(evaluated_at, std::vector<int64_t>({32, 64}));
  }
  resumed.reset();
  std::filesystem::remove_all(dir);
}

TEST(RunHostTest, AnUnsubscribedListenerHearsNothingMore) {
  VersionLog kept, dropped;
  std::unique_ptr<RunHost> host = MustCreate(SmallSpec("run-0"));
  ASSERT_NE(host, nullptr);
  host->Subscribe(kept.Listener());
  const int id = host->Subscribe(dropped.Listener());
  host->Unsubscribe(id);
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return !kept.versions().empty(); }));
  EXPECT_TRUE(dropped.versions().empty());
}

// The update that reaches the budget trains one update's worth like the
// others; the run stops accepting chunks once it holds enough for the
// budget, and every chunk beyond that is dropped, counted.
TEST(RunHostTest, TheLastUpdateTrainsOneUpdatesWorthAndCountsTheRestDropped) {
  VersionLog log;
  RunSpec spec = SmallSpec("run-0", /*budget=*/32);
  spec.queue_capacity = 1;
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  host->Subscribe(log.Listener());
  // Six chunks of 16 steps at once: two updates of one chunk each reach
  // the budget (the last update is no bigger than the others, as in
  // `ristretto train`); whatever else was accepted or refused is dropped.
  int64_t accepted = 0, refused = 0;
  for (uint64_t k = 0; k < 6; ++k) {
    const absl::Status s = host->Ingest(SmallChunk("run-0", 0, k + 1), [] {});
    if (s.ok() || absl::IsUnavailable(s)) {
      accepted += 16;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      refused += 16;
    }
  }
  ASSERT_TRUE(host->WaitFinished(5000));
  const RunCounters c = host->counters();
  EXPECT_TRUE(c.finished);
  EXPECT_EQ(c.env_steps_trained, 32);
  EXPECT_GE(accepted, 32);
  EXPECT_EQ(c.env_steps_received, accepted + refused);
  EXPECT_EQ(c.env_steps_dropped, c.env_steps_received - 32);
  // The subscribers were told the run ended.
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<int64_t> heard = log.versions();
    return std::find(heard.begin(), heard.end(), -1) != heard.end();
  }));
}

// A run of budget 64 in updates of 16 (one chunk each) that evaluates
// after every update, its first evaluation held by `gate`.
RunSpec GatedSpec(EvaluationGate* gate, int max_policy_lag = 4) {
  RunSpec spec = SmallSpec("run-0", /*budget=*/64);
  const int64_t rows = SmallMarket()->num_rows;
  spec.trainer.train_domains = {env::Domain{0, rows / 2}};
  spec.trainer.validation_domains = {env::Domain{rows / 2, rows}};
  spec.trainer.eval_every_env_steps = 16;
  spec.trainer.ppo.max_policy_lag = max_policy_lag;
  spec.on_evaluation = [gate](const EvaluationResult&) { gate->Pass(); };
  return spec;
}

TEST(RunHostTest, HeldUpdatesFreshStepsCountsCompleteUpdatesOfFreshChunks) {
  // Updates of 16 steps, lag 2, next update at version 5.
  auto fresh = [](const std::vector<HeldChunk>& held) {
    return HeldUpdatesFreshSteps(held, 5, 2, 16);
  };
  EXPECT_EQ(fresh({}), 0);
  // A partial batch trains nothing yet.
  EXPECT_EQ(fresh({{5, 8}}), 0);
  EXPECT_EQ(fresh({{5, 8}, {5, 8}}), 16);
  // Chunks of version 4 are fresh at versions 5 and 6 (lag 2): the first
  // two updates train them; the third is at version 7, where they are
  // stale. One of version 3 is fresh for the first update only.
  EXPECT_EQ(fresh({{4, 16}, {4, 16}}), 32);
  EXPECT_EQ(fresh({{4, 16}, {4, 16}, {4, 16}}), 32);
  EXPECT_EQ(fresh({{3, 16}, {3, 16}}), 16);
  // A batch of one fresh and one stale chunk trains the fresh one only,
  // and still makes a version.
  EXPECT_EQ(fresh({{5, 8}, {2, 8}, {6, 16}}), 8 + 16);
  // An update of stale chunks only fails and makes no version: the
  // version-5 chunk behind it is still trained at 5.
  EXPECT_EQ(fresh({{2, 16}, {3, 16}}), 16);
  // Overshooting chunks make a bigger batch, not a second update.
  EXPECT_EQ(fresh({{5, 12}, {5, 12}, {5, 4}}), 24);
}

// The actors are told to stop by the Ingest whose chunk makes the trained
// steps plus the complete updates held (queued, parked) reach the budget —
// while three updates are still to be trained, not when the last one
// starts — so no chunk is queued only to be dropped at the end.
TEST(RunHostTest, ActorsStopWhenTheHeldChunksFirstCoverTheBudget) {
  VersionLog log;
  EvaluationGate gate;
  std::atomic<bool> parked_queued{false};
  std::unique_ptr<RunHost> host = MustCreate(GatedSpec(&gate));
  ASSERT_NE(host, nullptr);
  OpenOnExit open{&gate};
  host->Subscribe(log.Listener());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0, 1), [] {}).ok());
  // Update 1 trained 16 steps; the training thread waits in its evaluation.
  ASSERT_TRUE(WaitFor([&] { return gate.entered(); }));
  EXPECT_EQ(host->counters().env_steps_trained, 16);
  // 16 trained + 32 queued: not yet the budget.
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 1, 2), [] {}).ok());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 1, 3), [] {}).ok());
  EXPECT_EQ(log.versions(), (std::vector<int64_t>{1}));
  EXPECT_TRUE(host->accepting());
  EXPECT_FALSE(host->budget_reached());
  EXPECT_FALSE(host->may_reopen());
  // The queue (capacity 2) is full: parked. 16 + 32 + 16 = 64 covers the
  // budget, so the subscribers hear the end before Ingest returns.
  const absl::Status parked =
      host->Ingest(SmallChunk("run-0", 1, 4), [&] { parked_queued = true; });
  EXPECT_TRUE(absl::IsUnavailable(parked)) << parked;
  EXPECT_EQ(log.versions(), (std::vector<int64_t>{1, -1}));
  EXPECT_FALSE(host->accepting());
  EXPECT_TRUE(host->budget_reached());
  EXPECT_TRUE(host->may_reopen());  // 16 of 64 trained
  EXPECT_EQ(host->counters().env_steps_trained, 16);
  // A chunk sent after the stop is refused and dropped.
  const absl::Status late = host->Ingest(SmallChunk("run-0", 1, 5), [] {});
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;

  gate.Open();
  ASSERT_TRUE(host->WaitFinished(5000));
  const RunCounters c = host->counters();
  EXPECT_TRUE(c.finished);
  EXPECT_FALSE(host->may_reopen());
  EXPECT_EQ(c.updates, 4);  // one chunk each: no update trained more
  EXPECT_EQ(c.env_steps_trained, 64);
  EXPECT_EQ(c.env_steps_received, 80);
  EXPECT_EQ(c.env_steps_dropped, 16);  // only the refused chunk
  EXPECT_TRUE(parked_queued.load());
  EXPECT_TRUE(host->failure().ok()) << host->failure();
}

// The hang of the first early stop: chunks that are fresh when queued but
// stale by the time their update comes do not count toward the budget. With
// lag 1, chunks of version 1 are trained at versions 1 and 2 only: of the
// three held, the third would be stale at version 3, so the actors are not
// stopped until a chunk of the newest version completes the budget.
TEST(RunHostTest, ChunksThatTurnStaleBeforeTheirUpdateDoNotStopTheActors) {
  VersionLog log;
  EvaluationGate gate;
  std::unique_ptr<RunHost> host =
      MustCreate(GatedSpec(&gate, /*max_policy_lag=*/1));
  ASSERT_NE(host, nullptr);
  OpenOnExit open{&gate};
  host->Subscribe(log.Listener());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0, 1), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return gate.entered(); }));
  ASSERT_EQ(host->counters().policy_version, 1);
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 1, 2), [] {}).ok());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 1, 3), [] {}).ok());
  // 16 trained + 48 held, but only 32 of them fresh when trained.
  EXPECT_TRUE(
      absl::IsUnavailable(host->Ingest(SmallChunk("run-0", 1, 4), [] {})));
  EXPECT_TRUE(host->accepting());
  EXPECT_FALSE(host->budget_reached());
  EXPECT_EQ(log.versions(), (std::vector<int64_t>{1}));

  gate.Open();
  // Updates 2 and 3 train the first two; the third (version 1 at version
  // 3) is dropped as stale by update 4's attempt, which fails.
  ASSERT_TRUE(WaitFor([&] { return host->counters().updates == 3; }));
  ASSERT_TRUE(
      WaitFor([&] { return host->counters().env_steps_dropped == 16; }));
  EXPECT_TRUE(host->accepting());
  EXPECT_FALSE(host->counters().finished);
  // A chunk of the newest version completes the budget: stop now.
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 3, 5), [] {}).ok());
  EXPECT_FALSE(host->accepting());
  ASSERT_TRUE(host->WaitFinished(5000));
  const RunCounters c = host->counters();
  EXPECT_EQ(c.env_steps_trained, 64);
  EXPECT_EQ(c.updates, 4);
  EXPECT_EQ(c.updates_rolled_back, 0);
  EXPECT_EQ(c.env_steps_received, 80);
  EXPECT_EQ(c.env_steps_dropped, 16);  // the chunk that went stale
  // The actors were told to stop once, when the budget was covered.
  const std::vector<int64_t> heard = log.versions();
  ASSERT_GE(heard.size(), 4u);
  EXPECT_EQ(std::vector<int64_t>(heard.begin(), heard.begin() + 4),
            (std::vector<int64_t>{1, 2, 3, -1}));
  EXPECT_TRUE(host->failure().ok()) << host->failure();
}

// The held chunks covered the budget and the actors were stopped, but one
// of those updates diverges and is rolled back: the run no longer covers
// its budget, accepts actors again, and stops them again once it does.
TEST(RunHostTest, ARolledBackUpdateAfterTheStopAcceptsActorsAgain) {
  // Counts the stops heard on this thread, i.e. from inside Ingest (the
  // training thread announces the end of the run too).
  const std::thread::id test_thread = std::this_thread::get_id();
  std::mutex mu;
  int stops_from_ingest = 0;
  EvaluationGate gate;
  std::unique_ptr<RunHost> host = MustCreate(GatedSpec(&gate));
  ASSERT_NE(host, nullptr);
  OpenOnExit open{&gate};
  host->Subscribe(
      [&](const std::shared_ptr<const RunHost::PublishedWeights>& w) {
        if (w != nullptr || std::this_thread::get_id() != test_thread) return;
        std::lock_guard<std::mutex> lock(mu);
        ++stops_from_ingest;
      });
  auto stops = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return stops_from_ingest;
  };
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 0, 1), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] { return gate.entered(); }));
  TrajectoryChunk poisoned = SmallChunk("run-0", 1, 2);
  for (float& r : poisoned.rewards) r = 3e38f;  // the update diverges
  ASSERT_TRUE(host->Ingest(std::move(poisoned), [] {}).ok());
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", 1, 3), [] {}).ok());
  EXPECT_TRUE(
      absl::IsUnavailable(host->Ingest(SmallChunk("run-0", 1, 4), [] {})));
  EXPECT_TRUE(host->budget_reached());
  EXPECT_TRUE(host->may_reopen());
  EXPECT_FALSE(host->accepting());
  EXPECT_EQ(stops(), 1);

  gate.Open();
  // Update 2 is rolled back: 16 trained + 32 held < 64.
  ASSERT_TRUE(
      WaitFor([&] { return host->counters().updates_rolled_back == 1; }));
  ASSERT_TRUE(WaitFor([&] { return host->accepting(); }));
  EXPECT_FALSE(host->budget_reached());
  EXPECT_FALSE(host->may_reopen());
  ASSERT_TRUE(WaitFor([&] { return host->counters().updates == 3; }));
  EXPECT_FALSE(host->counters().finished);
  EXPECT_TRUE(host->accepting());  // 48 trained, nothing held
  // One more chunk covers the budget: the actors are stopped again.
  const int64_t version = host->counters().policy_version;
  ASSERT_TRUE(host->Ingest(SmallChunk("run-0", version, 6), [] {}).ok());
  EXPECT_FALSE(host->accepting());
  EXPECT_EQ(stops(), 2);
  ASSERT_TRUE(host->WaitFinished(5000));
  const RunCounters c = host->counters();
  EXPECT_EQ(c.env_steps_trained, 64);
  EXPECT_EQ(c.updates, 4);
  EXPECT_EQ(c.updates_rolled_back, 1);
  EXPECT_EQ(c.env_steps_dropped, 16);  // the rolled-back batch
  EXPECT_EQ(c.env_steps_received, 80);
  EXPECT_TRUE(host->failure().ok()) << host->failure();
}

TEST(RunHostTest, PolicyLagAbsorbsActorsWhoseChunksArriveWithinTheLag) {
  // lag 4, 512 steps per update: 3 × 512 = 1,536 steps may be ahead of a
  // new chunk. A queue of 2 chunks of 384 leaves 768: two actors of 384.
  EXPECT_TRUE(PolicyLagAbsorbs(4, 512, 2, 384, 2 * 384));
  EXPECT_FALSE(PolicyLagAbsorbs(4, 512, 2, 384, 3 * 384));
  // Chunks of 512 (8 envs × 64): one actor only.
  EXPECT_TRUE(PolicyLagAbsorbs(4, 512, 2, 512, 512));
  EXPECT_FALSE(PolicyLagAbsorbs(4, 512, 2, 512, 2 * 512));
  // The run's own rule: its rollout (8 steps) × env copies, against what
  // its other actors already send. SmallSpec with lag 4: 3 × 16 − 2 × 16 =
  // 16 steps of room, one actor of 2 copies; lag 8 gives 5.
  RunSpec spec = SmallSpec("run-0");
  spec.trainer.ppo.max_policy_lag = 4;
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->ChunkSteps(2), 16);
  EXPECT_TRUE(host->AbsorbsActor(0, 2));
  EXPECT_FALSE(host->AbsorbsActor(16, 2));
  spec.trainer.ppo.max_policy_lag = 8;
  std::unique_ptr<RunHost> roomy = MustCreate(spec);
  ASSERT_NE(roomy, nullptr);
  EXPECT_TRUE(roomy->AbsorbsActor(4 * 16, 2));
  EXPECT_FALSE(roomy->AbsorbsActor(5 * 16, 2));
}

TEST(RunHostTest, ActorCreditsShrinkAsTheRunsActorsGrow) {
  RunSpec spec = SmallSpec("run-0");
  spec.trainer.ppo.max_policy_lag = 8;
  spec.samples_per_update = 64;
  spec.queue_capacity = 1;
  std::unique_ptr<RunHost> host = MustCreate(spec);
  ASSERT_NE(host, nullptr);
  // No actor yet: counted as one. 7 updates of 64 minus the queue's 16 =
  // 432 steps of room = 27 chunks of 16, capped at 16.
  EXPECT_EQ(host->ActorCredits(16, 16), 16);
  for (int i = 0; i < 3; ++i) host->Subscribe([](auto) {});
  EXPECT_EQ(host->ActorCredits(16, 64), 9);  // 27 / 3
  EXPECT_EQ(host->ActorCredits(16, 64), PolicyLagCredits(8, 64, 1, 16, 3, 64));
}

}  // namespace
}  // namespace ristretto::learner
