// Scheduler and CoordinatorService in process, on InMemoryStore (no
// PostgreSQL, no processes): a study advances to max_trials, a complete
// trial gets exactly one final run, the study is done only after its final
// runs end, leases expire and are re-leased up to max_attempts, pruning
// stops a trial and its runs, the service maps scheduler errors to gRPC
// codes, and with a token it authenticates and authorises every call (session
// secrets bound to member ids, runs only by their lease holder, actors by
// the cluster token, denials counted). tests/coordinator/store_contract_test.cc
// keeps the fake honest; tests/security/ runs the same attacks on a real
// coordinator process.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "coordinator/core/verdict.h"
#include "coordinator/service/coordinator_service.h"
#include "coordinator/service/scheduler.h"
#include "coordinator/store/in_memory_store.h"
#include "gmock/gmock.h"
#include "grpcpp/server_context.h"
#include "grpcpp/test/server_context_test_spouse.h"
#include "gtest/gtest.h"
#include "learner/run_config_codec.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tests/coordinator/scheduler_test_helpers.h"

namespace ristretto::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kMember[] = "learner-unit";
constexpr char kStudyName[] = "unit";

// One fold per trial, a 200-bar lockbox, two trials at a time, three in all,
// two leases per run. NAME, PRUNER and LIMITS are replaced per test.
constexpr char kStudyTemplate[] = R"(name: unit
dataset:
  synthetic: {rows: 2000, assets: 2, seed: 3, interval: 30m}
cv: {scheme: holdout, validation_fraction: 0.25}
lockbox: {bars: 200}
budget_env_steps: 8000
eval_every_env_steps: 1000
sampler: {type: random, seed: 1}
PRUNER
LIMITS
space:
  learning_rate: {type: float, low: 1.0e-4, high: 3.0e-3, log: true}
)";

std::string StudyText(const std::string& limits,
                      const std::string& pruner = "pruner: {type: none}") {
  return absl::StrReplaceAll(kStudyTemplate,
                             {{"PRUNER", pruner}, {"LIMITS", limits}});
}

class SchedulerUnitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir =
        absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                     "/ristretto-su-XXXXXX");
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    data_dir_ = dir;
    auto store = std::make_unique<InMemoryStore>();
    store_ = store.get();
    owned_store_ = std::move(store);
    ASSERT_TRUE(store_->Migrate().ok());
  }

  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }

  // Creates the running study and a scheduler with a registered learner
  // (none with a `token`: the test registers through a CoordinatorService
  // holding it).
  void Start(const std::string& study_text,
             absl::Duration lease_ttl = absl::Seconds(30),
             const std::string& token = "") {
    absl::StatusOr<StudyRow> study =
        store_->CreateStudy(kStudyName, study_text);
    ASSERT_TRUE(study.ok()) << study.status();
    study_id_ = study->id;
    ASSERT_TRUE(store_->SetStudyState(study_id_, StudyState::kRunning).ok());
    SchedulerOptions options;
    options.data_dir = data_dir_;
    options.lease_ttl = lease_ttl;
    options.clock = clock_;
    options.metrics = scheduler_metrics_;
    options.max_learners = max_learners_;
    options.member_retention = member_retention_;
    scheduler_ = std::make_unique<Scheduler>(std::move(owned_store_),
                                             std::move(options));
    if (!token.empty()) return;
    v1::RegisterLearnerRequest reg;
    reg.set_member_id(kMember);
    reg.set_address("127.0.0.1:1");
    reg.set_slots(4);
    absl::StatusOr<v1::RegisterLearnerResponse> registered =
        scheduler_->RegisterLearner(reg);
    ASSERT_TRUE(registered.ok()) << registered.status();
  }

  void Tick() {
    const absl::Status s = scheduler_->Tick();
    ASSERT_TRUE(s.ok()) << s;
  }

  // The next lease for `member` (kMember by default); has_run() false when
  // none.
  v1::LeaseRunResponse Lease(const std::string& member = kMember) {
    v1::LeaseRunRequest request;
    request.set_member_id(member);
    absl::StatusOr<v1::LeaseRunResponse> lease = scheduler_->LeaseRun(request);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : v1::LeaseRunResponse();
  }

  absl::Status Complete(int64_t run_id, double sharpe, int bars = 0) {
    v1::CompleteRunRequest done;
    done.set_member_id(kMember);
    done.set_run_id(run_id);
    *done.mutable_final_evaluation() = Eval(sharpe, 8000, bars);
    return scheduler_->CompleteRun(done);
  }

  std::vector<TrialRow> Trials() {
    absl::StatusOr<std::vector<TrialRow>> trials =
        store_->ListTrials(study_id_);
    EXPECT_TRUE(trials.ok()) << trials.status();
    return trials.ok() ? *trials : std::vector<TrialRow>();
  }

  // The study's state; nullopt (and a failure) if it cannot be read.
  std::optional<StudyState> StateOfStudy() {
    absl::StatusOr<StudyRow> study = store_->GetStudyById(study_id_);
    EXPECT_TRUE(study.ok()) << study.status();
    if (!study.ok()) return std::nullopt;
    return study->state;
  }

  // The trial's final (lockbox) runs.
  int FinalRuns(int64_t trial_id) {
    absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(trial_id);
    EXPECT_TRUE(runs.ok()) << runs.status();
    int n = 0;
    for (const RunRow& r : runs.ok() ? *runs : std::vector<RunRow>()) {
      if (r.fold == kLockboxFold) ++n;
    }
    return n;
  }

  std::string data_dir_;
  std::unique_ptr<Store> owned_store_;
  InMemoryStore* store_ = nullptr;  // owned by scheduler_ once started
  std::unique_ptr<Scheduler> scheduler_;
  int64_t study_id_ = 0;
  // The scheduler's clock (Start passes it); empty: the real one.
  std::function<absl::Time()> clock_;
  int64_t max_learners_ = 256;
  absl::Duration member_retention_ = SchedulerOptions{}.member_retention;
  // The scheduler's metrics (Start passes them); null: none.
  CoordinatorMetrics* scheduler_metrics_ = nullptr;
};

TEST_F(SchedulerUnitTest, StudyAdvancesTrialsUpToConcurrencyAndMaxTrials) {
  Start(StudyText("concurrency: 2\nmax_trials: 3"));
  Tick();
  EXPECT_EQ(Trials().size(), 2U);
  Tick();  // both still running: nothing new
  EXPECT_EQ(Trials().size(), 2U);
  for (int k = 0; k < 2; ++k) {
    const v1::LeaseRunResponse lease = Lease();
    ASSERT_TRUE(lease.has_run());
    EXPECT_EQ(lease.lease().attempt(), 1);
    ASSERT_TRUE(Complete(lease.lease().run_id(), 1.0 + k).ok());
  }
  EXPECT_EQ(scheduler_->counters().trials_completed, 2);
  Tick();
  Tick();
  std::vector<TrialRow> trials = Trials();
  ASSERT_EQ(trials.size(), 3U);  // max_trials, never more
  EXPECT_EQ(trials[0].state, TrialState::kComplete);
  ASSERT_TRUE(trials[1].score.has_value());
  EXPECT_DOUBLE_EQ(*trials[1].score, 2.0);  // the fold's Sharpe
  EXPECT_EQ(trials[2].state, TrialState::kRunning);
  EXPECT_EQ(scheduler_->counters().trials_created, 3);
  EXPECT_EQ(StateOfStudy(), StudyState::kRunning);
}

// The study must not be done in the window between a trial's completion
// (CompleteRun, every CV run done, nothing open) and the queuing of its
// final run (the next Tick): `ristretto up` once read "no open runs" there
// as the end of the study.
TEST_F(SchedulerUnitTest, CompleteTrialGetsOneFinalRunAndTheStudyWaitsForIt) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  Tick();
  ASSERT_EQ(Trials().size(), 1U);
  const int64_t trial_id = Trials()[0].id;
  const v1::LeaseRunResponse cv = Lease();
  ASSERT_TRUE(cv.has_run());
  ASSERT_TRUE(Complete(cv.lease().run_id(), 1.5).ok());
  ASSERT_EQ(Trials()[0].state, TrialState::kComplete);
  absl::StatusOr<int64_t> open = store_->CountOpenRuns(study_id_);
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(*open, 0);  // the window: complete, no final run yet
  Tick();
  EXPECT_EQ(StateOfStudy(), StudyState::kRunning);
  EXPECT_EQ(FinalRuns(trial_id), 1);
  Tick();
  Tick();
  EXPECT_EQ(FinalRuns(trial_id), 1);  // exactly one, however many passes
  EXPECT_EQ(StateOfStudy(), StudyState::kRunning);

  const v1::LeaseRunResponse final_lease = Lease();
  ASSERT_TRUE(final_lease.has_run());
  EXPECT_EQ(final_lease.lease().fold(), kLockboxFold);
  EXPECT_THAT(final_lease.lease().run_name(), HasSubstr("/lockbox"));
  absl::StatusOr<learner::TrainerOptions> o =
      learner::TrainerOptionsFromRunConfig(final_lease.lease().run_config());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->final_evaluation);
  Tick();  // leased, not finished: still running
  EXPECT_EQ(StateOfStudy(), StudyState::kRunning);
  // Its evaluation is never a pruning input.
  v1::ReportEvaluationRequest report;
  report.set_member_id(kMember);
  report.set_run_id(final_lease.lease().run_id());
  *report.mutable_evaluation() = Eval(-9, 1000, 10);
  absl::StatusOr<v1::ReportEvaluationResponse> r =
      scheduler_->ReportEvaluation(report);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->prune());
  absl::StatusOr<std::vector<IntermediateRow>> values =
      store_->ListIntermediates(study_id_);
  ASSERT_TRUE(values.ok());
  EXPECT_TRUE(values->empty());

  ASSERT_TRUE(Complete(final_lease.lease().run_id(), -2.0, 190).ok());
  absl::StatusOr<std::vector<LockboxRow>> lockbox =
      store_->ListLockbox(study_id_);
  ASSERT_TRUE(lockbox.ok());
  ASSERT_EQ(lockbox->size(), 1U);
  EXPECT_EQ((*lockbox)[0].bars, 190);
  EXPECT_GT((*lockbox)[0].sharpe_se, 0);  // every Sharpe with its error
  EXPECT_GT((*lockbox)[0].random_seeds, 0);
  EXPECT_NE((*lockbox)[0].bh_sharpe, 0);
  Tick();
  EXPECT_EQ(StateOfStudy(), StudyState::kDone);
  EXPECT_DOUBLE_EQ(*Trials()[0].score, 1.5);  // the lockbox never scores
  absl::StatusOr<std::optional<std::string>> result =
      store_->GetStudyResult(study_id_);
  ASSERT_TRUE(result.ok() && result->has_value());
  absl::StatusOr<StudyStatistics> stats = StudyStatisticsFromJson(**result);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->edge);  // a lockbox Sharpe of -2 is no edge
}

// lockbox.refits: 3 queues three final runs that differ in their seed; the
// trial's lockbox result waits for all three and is their capital split,
// and the study waits for it.
TEST_F(SchedulerUnitTest, RefitsAreQueuedTogetherAndCombinedWhenAllAreDone) {
  Start(absl::StrReplaceAll(
      StudyText("concurrency: 1\nmax_trials: 1"),
      {{"lockbox: {bars: 200}", "lockbox: {bars: 200, refits: 3}"}}));
  Tick();
  const int64_t trial_id = Trials()[0].id;
  const v1::LeaseRunResponse cv = Lease();
  ASSERT_TRUE(cv.has_run());
  ASSERT_TRUE(Complete(cv.lease().run_id(), 1.5).ok());
  Tick();
  Tick();
  absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(trial_id);
  ASSERT_TRUE(runs.ok());
  std::set<int> folds;
  for (const RunRow& r : *runs) {
    if (IsFinalFold(r.fold)) folds.insert(r.fold);
  }
  EXPECT_THAT(folds, ElementsAre(-3, -2, -1));
  std::vector<v1::LeaseRunResponse> leases;
  std::set<uint64_t> seeds;
  int64_t bars = 0;
  for (int k = 0; k < 3; ++k) {
    leases.push_back(Lease());
    ASSERT_TRUE(leases.back().has_run());
    EXPECT_TRUE(IsFinalFold(leases.back().lease().fold()));
    absl::StatusOr<learner::TrainerOptions> o =
        learner::TrainerOptionsFromRunConfig(
            leases.back().lease().run_config());
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_TRUE(o->final_evaluation);
    seeds.insert(o->seed);
    bars = 0;
    for (const env::Domain& d : o->validation_domains) {
      bars += d.size() - 2 * o->env.lookback;
    }
  }
  EXPECT_EQ(seeds.size(), 3U);  // one seed each
  EXPECT_THAT(leases[1].lease().run_name(), HasSubstr("/lockbox-refit-1"));
  ASSERT_GT(bars, 0);
  // A refit whose returns do not cover the lockbox is refused at its own
  // completion, the first as well as the last.
  const absl::Status long_refit =
      Complete(leases[0].lease().run_id(), 3.0, bars + 1);
  EXPECT_FALSE(long_refit.ok());
  EXPECT_EQ(long_refit.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(long_refit.message(),
              HasSubstr(absl::StrCat("reported ", bars + 1,
                                     " lockbox returns, expected ", bars)));
  ASSERT_TRUE(Complete(leases[0].lease().run_id(), 3.0, bars).ok());
  ASSERT_TRUE(Complete(leases[1].lease().run_id(), -1.0, bars).ok());
  absl::StatusOr<std::vector<LockboxRow>> lockbox =
      store_->ListLockbox(study_id_);
  ASSERT_TRUE(lockbox.ok());
  EXPECT_TRUE(lockbox->empty());  // one refit still to come
  Tick();
  EXPECT_EQ(StateOfStudy(), StudyState::kRunning);
  const absl::Status short_refit =
      Complete(leases[2].lease().run_id(), 2.0, bars - 1);
  EXPECT_FALSE(short_refit.ok());
  EXPECT_EQ(short_refit.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_refit.message(),
              HasSubstr(absl::StrCat("reported ", bars - 1,
                                     " lockbox returns, expected ", bars)));
  ASSERT_TRUE(Complete(leases[2].lease().run_id(), 2.0, bars).ok());
  lockbox = store_->ListLockbox(study_id_);
  ASSERT_TRUE(lockbox.ok());
  ASSERT_EQ(lockbox->size(), 1U);
  const LockboxRow& x = (*lockbox)[0];
  EXPECT_EQ(x.refits, 3);
  EXPECT_EQ(x.bars, bars);
  EXPECT_GT(x.sharpe_se, 0);
  absl::StatusOr<std::vector<RefitRow>> refits = store_->ListRefits(study_id_);
  ASSERT_TRUE(refits.ok());
  ASSERT_EQ(refits->size(), 3U);
  std::vector<double> own;
  for (const RefitRow& r : *refits) own.push_back(r.policy.sharpe);
  // The refits' own Sharpes as their learners reported them; the
  // combination's is computed from the split account's returns.
  EXPECT_THAT(own, ElementsAre(3.0, -1.0, 2.0));
  for (double sharpe : own) EXPECT_NE(x.policy.sharpe, sharpe);
  Tick();
  EXPECT_EQ(StateOfStudy(), StudyState::kDone);
}

// The learner's received and dropped env steps reach the run's row (CV
// and final runs); impossible counts are left out, not a refused result.
TEST_F(SchedulerUnitTest, CompleteRunStoresTheRunsEnvStepsReceivedAndDropped) {
  Start(StudyText("concurrency: 2\nmax_trials: 2"));
  Tick();
  const v1::LeaseRunResponse a = Lease();
  const v1::LeaseRunResponse b = Lease();
  ASSERT_TRUE(a.has_run() && b.has_run());
  v1::CompleteRunRequest done;
  done.set_member_id(kMember);
  done.set_run_id(a.lease().run_id());
  *done.mutable_final_evaluation() = Eval(1.0, 8000, 0);
  done.set_env_steps_received(102400);
  done.set_env_steps_dropped(768);
  ASSERT_TRUE(scheduler_->CompleteRun(done).ok());
  absl::StatusOr<RunRow> run = store_->GetRun(a.lease().run_id());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->env_steps_received, 102400);
  EXPECT_EQ(run->env_steps_dropped, 768);
  // More dropped than received: completed, counts not kept.
  done.set_run_id(b.lease().run_id());
  done.set_env_steps_dropped(102401);
  ASSERT_TRUE(scheduler_->CompleteRun(done).ok());
  run = store_->GetRun(b.lease().run_id());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kDone);
  EXPECT_EQ(run->env_steps_received, 0);
  EXPECT_EQ(run->env_steps_dropped, 0);
}

TEST_F(SchedulerUnitTest, ExpiredLeasesAreReLeasedUpToMaxAttemptsThenFail) {
  Start(StudyText("concurrency: 1\nmax_trials: 2\nmax_attempts: 2"),
        absl::Milliseconds(20));
  Tick();
  const v1::LeaseRunResponse first = Lease();
  ASSERT_TRUE(first.has_run());
  const int64_t run_id = first.lease().run_id();
  EXPECT_EQ(first.lease().attempt(), 1);
  absl::SleepFor(absl::Milliseconds(40));
  Tick();
  EXPECT_EQ(scheduler_->counters().leases_expired, 1);
  absl::StatusOr<RunRow> run = store_->GetRun(run_id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, RunState::kQueued);
  const v1::LeaseRunResponse second = Lease();
  ASSERT_TRUE(second.has_run());
  EXPECT_EQ(second.lease().run_id(), run_id);  // the same run, resumed
  EXPECT_EQ(second.lease().attempt(), 2);
  EXPECT_EQ(second.lease().checkpoint_dir(), first.lease().checkpoint_dir());
  absl::SleepFor(absl::Milliseconds(40));
  Tick();
  EXPECT_EQ(scheduler_->counters().leases_expired, 2);
  std::vector<TrialRow> trials = Trials();
  ASSERT_EQ(trials.size(), 2U);  // the failed trial is replaced
  EXPECT_EQ(trials[0].state, TrialState::kFailed);
  EXPECT_THAT(trials[0].fail_reason,
              HasSubstr("lease expired after 2 attempts"));
  EXPECT_EQ(trials[1].state, TrialState::kRunning);
  // The former holder is told to stop at its next heartbeat.
  v1::HeartbeatRequest beat;
  beat.set_member_id(kMember);
  v1::RunProgress* progress = beat.add_runs();
  progress->set_run_id(run_id);
  progress->set_env_steps(100);
  absl::StatusOr<v1::HeartbeatResponse> heard = scheduler_->Heartbeat(beat);
  ASSERT_TRUE(heard.ok()) << heard.status();
  EXPECT_THAT(heard->stop_run_ids(), ElementsAre(run_id));
  EXPECT_EQ(Complete(run_id, 1.0).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SchedulerUnitTest, HeartbeatsKeepALeaseAliveAcrossTicks) {
  // Two runs leased at once; only kMember heartbeats. After more than a TTL
  // the silent learner's run expires and the other does not (a heartbeat
  // extends the lease from the moment it arrives).
  Start(StudyText("concurrency: 2\nmax_trials: 2"), absl::Milliseconds(500));
  v1::RegisterLearnerRequest reg;
  reg.set_member_id("learner-silent");
  reg.set_address("127.0.0.1:2");
  reg.set_slots(1);
  ASSERT_TRUE(scheduler_->RegisterLearner(reg).ok());
  Tick();
  const v1::LeaseRunResponse lease = Lease();
  ASSERT_TRUE(lease.has_run());
  v1::LeaseRunRequest silent_request;
  silent_request.set_member_id("learner-silent");
  absl::StatusOr<v1::LeaseRunResponse> silent =
      scheduler_->LeaseRun(silent_request);
  ASSERT_TRUE(silent.ok() && silent->has_run());
  absl::SleepFor(absl::Milliseconds(600));  // both leases are past their TTL
  v1::HeartbeatRequest beat;
  beat.set_member_id(kMember);
  v1::RunProgress* progress = beat.add_runs();
  progress->set_run_id(lease.lease().run_id());
  progress->set_env_steps(1234);
  absl::StatusOr<v1::HeartbeatResponse> heard = scheduler_->Heartbeat(beat);
  ASSERT_TRUE(heard.ok()) << heard.status();
  EXPECT_TRUE(heard->stop_run_ids().empty());
  Tick();
  EXPECT_EQ(scheduler_->counters().leases_expired, 1);
  absl::StatusOr<RunRow> expired = store_->GetRun(silent->lease().run_id());
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(expired->state, RunState::kQueued);
  absl::StatusOr<RunRow> run = store_->GetRun(lease.lease().run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, RunState::kLeased);
  EXPECT_EQ(run->env_steps, 1234);
  // A clean release requeues it at once.
  v1::ReleaseRequest release;
  release.set_member_id(kMember);
  ASSERT_TRUE(scheduler_->Release(release).ok());
  run = store_->GetRun(lease.lease().run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, RunState::kQueued);
  // A released learner is no longer registered.
  v1::LeaseRunRequest request;
  request.set_member_id(kMember);
  EXPECT_EQ(scheduler_->LeaseRun(request).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SchedulerUnitTest, ARestartedLearnerProcessLosesItsPredecessorsLeases) {
  // A learner container killed and restarted comes back under the same
  // member id. Its first process's leases must go back to the queue (the
  // new process's heartbeats would otherwise keep them alive for ever);
  // the same process registering again (after a coordinator restart)
  // keeps them.
  Start(StudyText("concurrency: 2\nmax_trials: 2"));
  auto register_as = [&](const std::string& incarnation) {
    v1::RegisterLearnerRequest reg;
    reg.set_member_id("learner-pod");
    reg.set_address("127.0.0.1:3");
    reg.set_slots(2);
    reg.set_incarnation(incarnation);
    return scheduler_->RegisterLearner(reg).status();
  };
  auto state_of = [&](int64_t run_id) {
    absl::StatusOr<RunRow> run = store_->GetRun(run_id);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? run->state : RunState::kFailed;
  };
  ASSERT_TRUE(register_as("aaaa01").ok());
  Tick();
  const v1::LeaseRunResponse first = Lease("learner-pod");
  const v1::LeaseRunResponse second = Lease("learner-pod");
  ASSERT_TRUE(first.has_run() && second.has_run());

  // The same process again: nothing is released.
  ASSERT_TRUE(register_as("aaaa01").ok());
  EXPECT_EQ(state_of(first.lease().run_id()), RunState::kLeased);
  EXPECT_EQ(state_of(second.lease().run_id()), RunState::kLeased);

  // A new process: both leases are back in the queue, leasable again, and
  // each keeps the attempt the dead process used.
  ASSERT_TRUE(register_as("bbbb02").ok());
  EXPECT_EQ(state_of(first.lease().run_id()), RunState::kQueued);
  EXPECT_EQ(state_of(second.lease().run_id()), RunState::kQueued);
  const v1::LeaseRunResponse again = Lease("learner-pod");
  ASSERT_TRUE(again.has_run());
  EXPECT_EQ(again.lease().attempt(), first.lease().attempt() + 1);

  // An older learner that sends no incarnation changes nothing.
  ASSERT_TRUE(register_as("").ok());
  EXPECT_EQ(state_of(again.lease().run_id()), RunState::kLeased);

  // Not hex, or too long: refused before anything is touched.
  EXPECT_EQ(register_as("not-hex").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(register_as(std::string(65, 'a')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state_of(again.lease().run_id()), RunState::kLeased);
}

// Member ids, addresses and devices are logged, stored and handed to
// actors: long or control-character ones are refused; a device is stored
// as JSON text whatever quotes it holds, so it cannot forge the
// incarnation that decides whether a restarted learner's leases go back.
// A holder of the learners' token registered 6,600 member ids in 25 s and
// then FindLearner named a fake learner for 20 of 20 honest actors. Only
// learners that lease or heartbeat are handed out while any does.
TEST_F(SchedulerUnitTest, ARegistrationFloodDoesNotDrawActorsAway) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  Tick();
  ASSERT_TRUE(Lease().has_run());  // kMember works
  for (int k = 0; k < 200; ++k) {
    v1::RegisterLearnerRequest fake;
    fake.set_member_id(absl::StrCat("fake-", k));
    fake.set_address(absl::StrCat("10.66.0.1:", 1000 + k));
    fake.set_slots(4);
    ASSERT_TRUE(scheduler_->RegisterLearner(fake).ok());
  }
  for (int k = 0; k < 20; ++k) {
    v1::FindLearnerRequest find;
    find.set_actor_id(absl::StrCat("actor-", k));
    absl::StatusOr<v1::FindLearnerResponse> found =
        scheduler_->FindLearner(find);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_EQ(found->learner_member_id(), kMember);
    EXPECT_EQ(found->learner_address(), "127.0.0.1:1");
  }
  // A fake that starts to work (leases) joins the rotation: it is then a
  // learner like any other.
  ASSERT_FALSE(Lease("fake-7").has_run());  // nothing left to lease
  bool fake_named = false;
  for (int k = 0; k < 4; ++k) {
    v1::FindLearnerRequest find;
    find.set_actor_id("actor-x");
    absl::StatusOr<v1::FindLearnerResponse> found =
        scheduler_->FindLearner(find);
    ASSERT_TRUE(found.ok());
    fake_named = fake_named || found->learner_member_id() == "fake-7";
  }
  EXPECT_TRUE(fake_named);
}

// Issue 35, item 5: a flood of learner ids leaves no rows behind. Members
// past the retention that never held a lease are deleted from the store at
// the next Tick; the learner that works (leased) stays, and actors are
// still sent to it. (The store's cut-off is real time, the scheduler's
// own map of live learners follows its clock; the retention here is far
// below what the coordinator accepts, so kMember calls just before.)
TEST_F(SchedulerUnitTest, AFloodOfMemberIdsIsForgottenAfterTheRetention) {
  absl::Time now = absl::Now();
  clock_ = [&now] { return now; };
  member_retention_ = absl::Microseconds(1);
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  Tick();
  ASSERT_TRUE(Lease().has_run());  // kMember works
  for (int k = 0; k < 50; ++k) {
    v1::RegisterLearnerRequest fake;
    fake.set_member_id(absl::StrCat("fake-", k));
    fake.set_address(absl::StrCat("10.66.0.1:", 1000 + k));
    fake.set_slots(4);
    ASSERT_TRUE(scheduler_->RegisterLearner(fake).ok());
  }
  absl::StatusOr<std::vector<MemberRow>> members = store_->ListMembers();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_EQ(members->size(), 51U);
  // Past the retention (the store's clock moves on) ...
  const absl::Time registered = absl::Now();
  while (absl::Now() <= registered + absl::Milliseconds(2)) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  now += absl::Minutes(2);          // forgetting runs about once a minute
  EXPECT_FALSE(Lease().has_run());  // kMember calls: it stays live
  Tick();
  members = store_->ListMembers();
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 1U);
  EXPECT_EQ((*members)[0].id, kMember);
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-0");
  absl::StatusOr<v1::FindLearnerResponse> found = scheduler_->FindLearner(find);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->learner_member_id(), kMember);
}

// The coordinator holds at most max_learners live learner ids: a flood of
// new ids is refused with the cap named, a live id re-registers, and a
// silent learner's place is free again after a lease lifetime.
TEST_F(SchedulerUnitTest, NewLearnerIdsBeyondTheCapAreRefused) {
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  clock_ = [&now] { return now; };
  max_learners_ = 3;
  Start(StudyText("concurrency: 1\nmax_trials: 1"));  // kMember is one
  auto register_as = [&](const std::string& id) {
    v1::RegisterLearnerRequest reg;
    reg.set_member_id(id);
    reg.set_address("10.0.0.1:1");
    reg.set_slots(1);
    return scheduler_->RegisterLearner(reg).status();
  };
  ASSERT_TRUE(register_as("second").ok());
  ASSERT_TRUE(register_as("third").ok());
  const absl::Status refused = register_as("fourth");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              HasSubstr("3 learner member ids are live, the coordinator's "
                        "cap (--max-learners 3)"));
  EXPECT_TRUE(register_as("third").ok());  // a live id re-registers
  // kMember keeps working; the other two fall silent for a lease lifetime.
  now += absl::Seconds(31);
  Lease();  // kMember calls: it stays live
  EXPECT_TRUE(register_as("fourth").ok());
  EXPECT_TRUE(register_as("fifth").ok());
  EXPECT_EQ(register_as("sixth").code(), absl::StatusCode::kResourceExhausted);
}

// Before any learner has worked (a stack starting), a fresh registration
// is all there is, and it is handed out.
TEST_F(SchedulerUnitTest, BeforeAnyLeaseARegisteredLearnerIsFound) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-1");
  absl::StatusOr<v1::FindLearnerResponse> found = scheduler_->FindLearner(find);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->learner_member_id(), kMember);
}

TEST_F(SchedulerUnitTest, RegistrationFieldsAreCheckedAndStoredSafely) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  auto register_as = [&](const std::string& member, const std::string& address,
                         const std::string& device,
                         const std::string& incarnation = "aaaa01") {
    v1::RegisterLearnerRequest reg;
    reg.set_member_id(member);
    reg.set_address(address);
    reg.set_slots(1);
    reg.set_device(device);
    reg.set_incarnation(incarnation);
    return scheduler_->RegisterLearner(reg).status();
  };
  absl::Status s = register_as("learner\nforged log line", "127.0.0.1:3", "");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "member_id 'learner\\x0aforged log line' contains control "
            "characters");
  s = register_as(std::string(257, 'm'), "127.0.0.1:3", "");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "member_id is 257 bytes (limit 256)");
  EXPECT_EQ(register_as("m", std::string(300, 'a'), "").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(register_as("m", "127.0.0.1:3", "cuda\t0").code(),
            absl::StatusCode::kInvalidArgument);
  // Nothing was recorded for them (only the fixture's learner-unit).
  absl::StatusOr<std::vector<MemberRow>> members = store_->ListMembers();
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ(members->front().id, "learner-unit");

  const std::string forged = "gpu\",\"incarnation\":\"ffff";
  ASSERT_TRUE(register_as("learner-1", "127.0.0.1:3", forged).ok());
  absl::StatusOr<MemberRow> row = store_->GetMember("learner-1");
  ASSERT_TRUE(row.ok()) << row.status();
  const nlohmann::json capacity = nlohmann::json::parse(row->capacity_json);
  EXPECT_EQ(capacity.at("device"), forged);
  EXPECT_EQ(capacity.at("incarnation"), "aaaa01");
  Tick();
  const v1::LeaseRunResponse leased = Lease("learner-1");
  ASSERT_TRUE(leased.has_run());
  // The same process (incarnation aaaa01) registering again keeps its
  // lease: the device did not plant "ffff" as its incarnation.
  ASSERT_TRUE(register_as("learner-1", "127.0.0.1:3", forged).ok());
  absl::StatusOr<RunRow> run = store_->GetRun(leased.lease().run_id());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kLeased);
}

TEST_F(SchedulerUnitTest, PruningStopsTheTrialAndItsRunsAndFreesASlot) {
  Start(StudyText("concurrency: 2\nmax_trials: 3",
                  "pruner: {type: median, warmup_steps: 0, min_trials: 1}"));
  Tick();
  const v1::LeaseRunResponse a = Lease();
  const v1::LeaseRunResponse b = Lease();
  ASSERT_TRUE(a.has_run() && b.has_run());
  auto report = [&](int64_t run_id, int64_t step, double value) {
    v1::ReportEvaluationRequest request;
    request.set_member_id(kMember);
    request.set_run_id(run_id);
    request.mutable_evaluation()->set_env_steps(step);
    request.mutable_evaluation()->set_sharpe(value + 0.5);
    request.mutable_evaluation()->set_benchmark_sharpe(0.5);
    absl::StatusOr<v1::ReportEvaluationResponse> r =
        scheduler_->ReportEvaluation(request);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->prune();
  };
  EXPECT_FALSE(report(a.lease().run_id(), 1000, 2.0));  // nothing to compare
  EXPECT_TRUE(report(b.lease().run_id(), 1000, 1.0));   // below the median
  EXPECT_EQ(scheduler_->counters().trials_pruned, 1);
  absl::StatusOr<TrialRow> pruned = store_->GetTrial(b.lease().trial_id());
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(pruned->state, TrialState::kPruned);
  absl::StatusOr<RunRow> run = store_->GetRun(b.lease().run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state, RunState::kCancelled);
  EXPECT_EQ(Complete(b.lease().run_id(), 1.0).code(),
            absl::StatusCode::kFailedPrecondition);
  // NaN metrics are refused with their name, before anything is stored.
  v1::ReportEvaluationRequest bad;
  bad.set_member_id(kMember);
  bad.set_run_id(a.lease().run_id());
  *bad.mutable_evaluation() = Eval(1, 2000, 0);
  bad.mutable_evaluation()->set_calmar(std::nan(""));
  EXPECT_EQ(scheduler_->ReportEvaluation(bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tick();  // the pruned trial's slot goes to a new trial
  std::vector<TrialRow> trials = Trials();
  ASSERT_EQ(trials.size(), 3U);
  EXPECT_EQ(trials[2].state, TrialState::kRunning);
}

TEST_F(SchedulerUnitTest, FailRunOnTheLastAttemptFailsTheTrialWithTheReason) {
  Start(StudyText("concurrency: 1\nmax_trials: 2\nmax_attempts: 1"));
  Tick();
  const v1::LeaseRunResponse lease = Lease();
  ASSERT_TRUE(lease.has_run());
  v1::FailRunRequest fail;
  fail.set_member_id(kMember);
  fail.set_run_id(lease.lease().run_id());
  fail.set_reason("out of memory");
  ASSERT_TRUE(scheduler_->FailRun(fail).ok());
  EXPECT_EQ(scheduler_->FailRun(fail).code(),
            absl::StatusCode::kFailedPrecondition);  // not twice
  std::vector<TrialRow> trials = Trials();
  ASSERT_EQ(trials.size(), 1U);
  EXPECT_EQ(trials[0].state, TrialState::kFailed);
  EXPECT_EQ(trials[0].fail_reason, "fold 0: out of memory (attempt 1 of 1)");
  Tick();
  EXPECT_EQ(Trials().size(), 2U);
}

// A run its learner reports failed (a checkpoint disk that is full, say) is
// not leased straight back into the same failure: it is queued again after
// 5 s × 2^(attempts − 1), the learner that failed it waits twice as long
// (another learner gets it first, but it is not starved when none does),
// and the trial fails with the last reason when its attempts are spent.
// On the scheduler's fake clock.
TEST_F(SchedulerUnitTest, FailedRunsBackOffPreferAnotherLearnerThenFailTrial) {
  absl::Time now = absl::Now();
  clock_ = [&now] { return now; };
  Start(StudyText("concurrency: 1\nmax_trials: 2\nmax_attempts: 3"),
        absl::Hours(1));
  constexpr char kOther[] = "learner-other";
  v1::RegisterLearnerRequest reg;
  reg.set_member_id(kOther);
  reg.set_address("127.0.0.1:2");
  reg.set_slots(1);
  ASSERT_TRUE(scheduler_->RegisterLearner(reg).ok());
  Tick();
  const v1::LeaseRunResponse first = Lease();
  ASSERT_TRUE(first.has_run());
  const int64_t run_id = first.lease().run_id();
  auto fail = [&](const std::string& member, const std::string& reason) {
    v1::FailRunRequest request;
    request.set_member_id(member);
    request.set_run_id(run_id);
    request.set_reason(reason);
    return scheduler_->FailRun(request);
  };
  auto run = [&] {
    absl::StatusOr<RunRow> r = store_->GetRun(run_id);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RunRow();
  };

  ASSERT_TRUE(fail(kMember, "checkpoint: No space left on device").ok());
  EXPECT_EQ(run().state, RunState::kQueued);
  EXPECT_EQ(run().last_error, "checkpoint: No space left on device");
  EXPECT_EQ(Trials()[0].state, TrialState::kRunning);
  EXPECT_EQ(scheduler_->counters().runs_retried, 1);
  // Backing off: nobody gets it before 5 s ...
  EXPECT_FALSE(Lease().has_run());
  EXPECT_FALSE(Lease(kOther).has_run());
  now += absl::Milliseconds(4900);
  Tick();
  EXPECT_FALSE(Lease(kOther).has_run());
  // ... then another learner does; the one that failed it waits 10 s.
  now += absl::Milliseconds(200);
  EXPECT_FALSE(Lease().has_run());
  const v1::LeaseRunResponse second = Lease(kOther);
  ASSERT_TRUE(second.has_run());
  EXPECT_EQ(second.lease().run_id(), run_id);
  EXPECT_EQ(second.lease().attempt(), 2);

  // The second failure doubles the back-off: 10 s, 20 s for kOther, which
  // still gets it when no other learner took it.
  ASSERT_TRUE(fail(kOther, "checkpoint: Permission denied").ok());
  now += absl::Milliseconds(10100);
  EXPECT_FALSE(Lease(kOther).has_run());
  now += absl::Seconds(10);
  const v1::LeaseRunResponse third = Lease(kOther);
  ASSERT_TRUE(third.has_run());
  EXPECT_EQ(third.lease().attempt(), 3);

  // The last attempt fails the trial with the learner's reason; the study
  // replaces it.
  ASSERT_TRUE(fail(kOther, "checkpoint: Permission denied").ok());
  EXPECT_EQ(run().state, RunState::kFailed);
  std::vector<TrialRow> trials = Trials();
  ASSERT_EQ(trials.size(), 1U);
  EXPECT_EQ(trials[0].state, TrialState::kFailed);
  EXPECT_EQ(trials[0].fail_reason,
            "fold 0: checkpoint: Permission denied (attempt 3 of 3)");
  EXPECT_EQ(scheduler_->counters().runs_retried, 2);
  EXPECT_EQ(scheduler_->counters().trials_failed, 1);
  Tick();
  EXPECT_EQ(Trials().size(), 2U);
}

// A study whose dataset cannot be written (here the data directory is a
// plain file) is stopped, and the reason is stored with the state for
// `study start --wait`, `up` and `study show`; starting it again clears it.
TEST_F(SchedulerUnitTest, AStudyWhoseDatasetCannotBeWrittenStopsWithTheReason) {
  const std::string file = data_dir_ + "/not-a-directory";
  std::ofstream(file) << "x";
  data_dir_ = file;  // the datasets go to <file>/datasets: impossible
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  data_dir_ = file.substr(0, file.rfind('/'));  // TearDown removes this
  Tick();
  absl::StatusOr<StudyRow> study = store_->GetStudyById(study_id_);
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->state, StudyState::kStopped);
  EXPECT_THAT(study->stop_reason, HasSubstr("cannot run: "));
  EXPECT_THAT(study->stop_reason, HasSubstr("not-a-directory"));
  EXPECT_TRUE(Trials().empty());
  ASSERT_TRUE(store_->SetStudyState(study_id_, StudyState::kRunning).ok());
  study = store_->GetStudyById(study_id_);
  ASSERT_TRUE(study.ok());
  EXPECT_EQ(study->stop_reason, "");
}

// CoordinatorService, called in process: proto in, Scheduler, gRPC codes
// out.
// A run queued by an earlier coordinator holds the older JSON layout in
// runs.config_json; it is leased as a typed RunConfig all the same.
TEST_F(SchedulerUnitTest, RunsStoredInTheOlderJsonLayoutAreLeasedTyped) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  const std::string legacy =
      R"({"ppo": {"epochs": 3, "learning_rate": 0.001}, "dataset_id": "d0",)"
      R"( "seed": 18446744073709551615, "train_domains": [[0, 1000]]})";
  absl::StatusOr<TrialRow> trial = store_->CreateTrial(
      study_id_, {{"learning_rate", "0.001"}}, {legacy}, data_dir_ + "/runs");
  ASSERT_TRUE(trial.ok()) << trial.status();
  const v1::LeaseRunResponse lease = Lease();
  ASSERT_TRUE(lease.has_run());
  ASSERT_TRUE(lease.lease().has_run_config());
  EXPECT_EQ(lease.lease().dataset_id(), "d0");
  absl::StatusOr<learner::TrainerOptions> o =
      learner::TrainerOptionsFromRunConfig(lease.lease().run_config());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ppo.epochs, 3);
  EXPECT_EQ(o->ppo.learning_rate, 0.001);
  EXPECT_EQ(o->seed, UINT64_MAX);
  EXPECT_EQ(o->train_domains, (std::vector<env::Domain>{{0, 1000}}));
}

// A server-side context whose call carries `authorization` metadata (none
// when empty), as gRPC would hand it to a handler.
class CallContext {
 public:
  explicit CallContext(const std::string& authorization = "")
      : spouse_(&context_) {
    if (!authorization.empty()) {
      spouse_.AddClientMetadata(auth::kMetadataKey, authorization);
    }
  }
  grpc::ServerContext* get() { return &context_; }

 private:
  grpc::ServerContext context_;
  grpc::testing::ServerContextTestSpouse spouse_;  // keeps the metadata
};

// ristretto_coordinator_rpc_denied_total{method, code}; -1 if absent.
double Denied(prometheus::Registry& registry, const std::string& method,
              const std::string& code) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "ristretto_coordinator_rpc_denied_total") continue;
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string got_method;
      std::string got_code;
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (l.name == "method") got_method = l.value;
        if (l.name == "code") got_code = l.value;
      }
      if (got_method == method && got_code == code) return m.counter.value;
    }
  }
  return -1;
}

constexpr char kToken[] = "sesame-cluster-token";

TEST_F(SchedulerUnitTest, CoordinatorServiceMapsSchedulerResultsToGrpc) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"), absl::Seconds(30), kToken);
  CoordinatorService service(scheduler_.get(), kToken);
  CallContext anonymous;
  v1::RegisterLearnerRequest reg;
  reg.set_member_id(kMember);
  reg.set_address("127.0.0.1:7");
  reg.set_slots(1);
  reg.set_token("wrong");
  v1::RegisterLearnerResponse registered;
  EXPECT_EQ(
      service.RegisterLearner(anonymous.get(), &reg, &registered).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  reg.set_token(kToken);
  reg.set_slots(0);
  EXPECT_EQ(
      service.RegisterLearner(anonymous.get(), &reg, &registered).error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);
  reg.set_slots(1);
  ASSERT_TRUE(service.RegisterLearner(anonymous.get(), &reg, &registered).ok());
  ASSERT_FALSE(registered.session_token().empty());
  CallContext context_holder(auth::BearerValue(registered.session_token()));
  grpc::ServerContext* context = context_holder.get();
  v1::LeaseRunRequest lease_request;
  lease_request.set_member_id(kMember);
  v1::LeaseRunResponse lease;
  EXPECT_EQ(registered.lease_ttl_ms(), 30000);
  EXPECT_EQ(registered.heartbeat_interval_ms(), 5000);
  ASSERT_TRUE(service.LeaseRun(context, &lease_request, &lease).ok());
  EXPECT_FALSE(lease.has_run());  // no Tick yet: no trial
  Tick();
  ASSERT_TRUE(service.LeaseRun(context, &lease_request, &lease).ok());
  ASSERT_TRUE(lease.has_run());
  EXPECT_EQ(lease.lease().run_name(), "unit/trial-0/fold-0");
  EXPECT_FALSE(lease.lease().dataset_id().empty());
  // The dataset the run names is the one the coordinator serves.
  absl::StatusOr<std::string> path =
      scheduler_->DatasetPath(lease.lease().dataset_id());
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_TRUE(std::filesystem::exists(*path));
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-1");
  v1::FindLearnerResponse found;
  CallContext actor(auth::BearerValue(kToken));
  ASSERT_TRUE(service.FindLearner(actor.get(), &find, &found).ok());
  EXPECT_EQ(found.learner_address(), "127.0.0.1:7");
  v1::CompleteRunRequest mine;
  mine.set_member_id(kMember);
  mine.set_run_id(999999);
  *mine.mutable_final_evaluation() = Eval(1, 8000, 0);
  v1::CompleteRunResponse completed;
  EXPECT_EQ(service.CompleteRun(context, &mine, &completed).error_code(),
            grpc::StatusCode::NOT_FOUND);
  absl::StatusOr<std::vector<MemberRow>> members = store_->ListMembers();
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 2U);  // the actor and the learner
  EXPECT_EQ((*members)[0].kind, "actor");
}

// Fixture part for the authenticated service: learners "learner-a" and
// "learner-b" registered through the service with the cluster token.
class AuthServiceTest : public SchedulerUnitTest {
 protected:
  static constexpr char kA[] = "learner-a";
  static constexpr char kB[] = "learner-b";

  void StartService() {
    Start(StudyText("concurrency: 1\nmax_trials: 1"), absl::Seconds(30),
          kToken);
    metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
    service_ = std::make_unique<CoordinatorService>(scheduler_.get(), kToken,
                                                    metrics_.get());
    secret_a_ = Register(kA);
    secret_b_ = Register(kB);
    ASSERT_FALSE(secret_a_.empty());
    ASSERT_FALSE(secret_b_.empty());
  }

  // Registers `member` with the cluster token; its session secret.
  std::string Register(const std::string& member) {
    v1::RegisterLearnerRequest reg;
    reg.set_member_id(member);
    reg.set_address("127.0.0.1:9");
    reg.set_slots(2);
    reg.set_token(kToken);
    v1::RegisterLearnerResponse response;
    CallContext call;
    const grpc::Status s =
        service_->RegisterLearner(call.get(), &reg, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.session_token();
  }

  // LeaseRun for `member` as the caller presenting `authorization`.
  grpc::Status LeaseAs(const std::string& authorization,
                       const std::string& member, v1::LeaseRunResponse* lease) {
    v1::LeaseRunRequest request;
    request.set_member_id(member);
    CallContext call(authorization);
    return service_->LeaseRun(call.get(), &request, lease);
  }

  double DeniedCount(const std::string& method, const std::string& code) {
    return Denied(registry_, method, code);
  }

  prometheus::Registry registry_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::unique_ptr<CoordinatorService> service_;
  std::string secret_a_;
  std::string secret_b_;
};

TEST_F(AuthServiceTest, SessionSecretsAreBoundToTheirMember) {
  StartService();
  EXPECT_NE(secret_a_, secret_b_);
  EXPECT_NE(secret_a_, kToken);
  EXPECT_EQ(DeniedCount("LeaseRun", "unauthenticated"), 0);
  v1::LeaseRunResponse lease;
  EXPECT_TRUE(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).ok());
  // No credential, a malformed one, an unknown secret: unauthenticated.
  EXPECT_EQ(LeaseAs("", kA, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(LeaseAs(secret_a_, kA, &lease).error_code(),  // no "Bearer "
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(
      LeaseAs(auth::BearerValue(std::string(64, 'f')), kA, &lease).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(DeniedCount("LeaseRun", "unauthenticated"), 3);
  // B's secret with A's member id, and the cluster token (not a learner):
  // permission denied.
  EXPECT_EQ(LeaseAs(auth::BearerValue(secret_b_), kA, &lease).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(LeaseAs(auth::BearerValue(kToken), kA, &lease).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(DeniedCount("LeaseRun", "permission_denied"), 2);
  // Registering again issues a new secret and revokes the old one.
  const std::string again = Register(kA);
  ASSERT_FALSE(again.empty());
  EXPECT_NE(again, secret_a_);
  EXPECT_EQ(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(LeaseAs(auth::BearerValue(again), kA, &lease).ok());
  // A wrong registration token is refused and counted.
  v1::RegisterLearnerRequest reg;
  reg.set_member_id(kA);
  reg.set_address("127.0.0.1:9");
  reg.set_slots(1);
  reg.set_token(std::string(kToken) + "x");
  v1::RegisterLearnerResponse response;
  CallContext call;
  EXPECT_EQ(service_->RegisterLearner(call.get(), &reg, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(response.session_token().empty());
  EXPECT_EQ(DeniedCount("RegisterLearner", "unauthenticated"), 1);
  EXPECT_TRUE(LeaseAs(auth::BearerValue(again), kA, &lease).ok());
}

TEST_F(AuthServiceTest, OnlyTheLeaseHolderTouchesARun) {
  StartService();
  Tick();
  v1::LeaseRunResponse lease;
  ASSERT_TRUE(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).ok());
  ASSERT_TRUE(lease.has_run());
  const int64_t run_id = lease.lease().run_id();
  CallContext as_b(auth::BearerValue(secret_b_));
  // B, authenticated as itself, on A's run: every call refused.
  v1::ReportEvaluationRequest report;
  report.set_member_id(kB);
  report.set_run_id(run_id);
  *report.mutable_evaluation() = Eval(99, 1000, 0);
  v1::ReportEvaluationResponse reported;
  EXPECT_EQ(
      service_->ReportEvaluation(as_b.get(), &report, &reported).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::CompleteRunRequest complete;
  complete.set_member_id(kB);
  complete.set_run_id(run_id);
  *complete.mutable_final_evaluation() = Eval(99, 8000, 0);
  v1::CompleteRunResponse completed;
  EXPECT_EQ(
      service_->CompleteRun(as_b.get(), &complete, &completed).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::FailRunRequest fail;
  fail.set_member_id(kB);
  fail.set_run_id(run_id);
  fail.set_reason("sabotage");
  v1::FailRunResponse failed;
  EXPECT_EQ(service_->FailRun(as_b.get(), &fail, &failed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // B releasing A: refused; without a credential: unauthenticated.
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  EXPECT_EQ(service_->Release(as_b.get(), &release, &released).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  CallContext anonymous;
  EXPECT_EQ(
      service_->Release(anonymous.get(), &release, &released).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  // B's heartbeat naming A's run does not extend it: B is told to stop.
  v1::HeartbeatRequest beat;
  beat.set_member_id(kB);
  beat.add_runs()->set_run_id(run_id);
  v1::HeartbeatResponse heard;
  ASSERT_TRUE(service_->Heartbeat(as_b.get(), &beat, &heard).ok());
  EXPECT_THAT(heard.stop_run_ids(), ElementsAre(run_id));
  // B releasing itself is fine and leaves A's run alone.
  release.set_member_id(kB);
  EXPECT_TRUE(service_->Release(as_b.get(), &release, &released).ok());
  // Nothing of B's was recorded: A's run is leased to A, no value stored,
  // the trial runs.
  absl::StatusOr<RunRow> run = store_->GetRun(run_id);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kLeased);
  EXPECT_EQ(run->member_id, kA);
  absl::StatusOr<std::vector<IntermediateRow>> values =
      store_->ListIntermediates(study_id_);
  ASSERT_TRUE(values.ok());
  EXPECT_TRUE(values->empty());
  EXPECT_EQ(Trials()[0].state, TrialState::kRunning);
  EXPECT_EQ(DeniedCount("ReportEvaluation", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("CompleteRun", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("FailRun", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("Release", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("Release", "unauthenticated"), 1);
  // A, the holder, reports and completes.
  CallContext as_a(auth::BearerValue(secret_a_));
  report.set_member_id(kA);
  EXPECT_TRUE(service_->ReportEvaluation(as_a.get(), &report, &reported).ok());
  complete.set_member_id(kA);
  const grpc::Status done =
      service_->CompleteRun(as_a.get(), &complete, &completed);
  EXPECT_TRUE(done.ok()) << done.error_message();
  // A's secret dies with its Release.
  release.set_member_id(kA);
  EXPECT_TRUE(service_->Release(as_a.get(), &release, &released).ok());
  EXPECT_EQ(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(AuthServiceTest, ActorsNeedTheClusterToken) {
  StartService();
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-1");
  v1::FindLearnerResponse found;
  CallContext anonymous;
  EXPECT_EQ(service_->FindLearner(anonymous.get(), &find, &found).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  CallContext wrong(auth::BearerValue("not-the-token"));
  EXPECT_EQ(service_->FindLearner(wrong.get(), &find, &found).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  CallContext learner(auth::BearerValue(secret_a_));
  EXPECT_EQ(service_->FindLearner(learner.get(), &find, &found).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(DeniedCount("FindLearner", "unauthenticated"), 2);
  EXPECT_EQ(DeniedCount("FindLearner", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("FetchDataset", "unauthenticated"), 0);
  CallContext actor(auth::BearerValue(kToken));
  ASSERT_TRUE(service_->FindLearner(actor.get(), &find, &found).ok());
  EXPECT_FALSE(found.learner_address().empty());
}

// With a learners' token, learners register with it alone (the cluster
// token no longer does) and it is no credential on any other call.
TEST_F(AuthServiceTest, TheLearnersTokenOnlyRegisters) {
  constexpr char kLearnerToken[] = "sesame-learners-token";
  Start(StudyText("concurrency: 1\nmax_trials: 1"), absl::Seconds(30), kToken);
  metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
  service_ = std::make_unique<CoordinatorService>(
      scheduler_.get(), kToken, metrics_.get(), /*actor_token=*/"",
      kLearnerToken);
  const auto register_with = [&](const std::string& token,
                                 v1::RegisterLearnerResponse* response) {
    v1::RegisterLearnerRequest reg;
    reg.set_member_id(kA);
    reg.set_address("127.0.0.1:9");
    reg.set_slots(1);
    reg.set_token(token);
    CallContext call;
    return service_->RegisterLearner(call.get(), &reg, response);
  };
  v1::RegisterLearnerResponse refused;
  EXPECT_EQ(register_with(kToken, &refused).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(refused.session_token().empty());
  EXPECT_EQ(DeniedCount("RegisterLearner", "unauthenticated"), 1);
  v1::RegisterLearnerResponse registered;
  ASSERT_TRUE(register_with(kLearnerToken, &registered).ok());
  ASSERT_FALSE(registered.session_token().empty());
  // As a Bearer: refused on every call, the learner's own included.
  const std::string bearer = auth::BearerValue(kLearnerToken);
  v1::LeaseRunResponse lease;
  EXPECT_EQ(LeaseAs(bearer, kA, &lease).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-1");
  v1::FindLearnerResponse found;
  CallContext find_call(bearer);
  EXPECT_EQ(service_->FindLearner(find_call.get(), &find, &found).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  CallContext release_call(bearer);
  EXPECT_EQ(
      service_->Release(release_call.get(), &release, &released).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(DeniedCount("LeaseRun", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("FindLearner", "permission_denied"), 1);
  EXPECT_EQ(DeniedCount("Release", "permission_denied"), 1);
  // The session secret it got is the learner's credential.
  EXPECT_TRUE(
      LeaseAs(auth::BearerValue(registered.session_token()), kA, &lease).ok());
}

// A learner that dies without Release (a killed pod: a new one comes back
// under another name) must not keep getting actors sent to its address,
// nor stay in the coordinator's memory with its secret and ticket key.
TEST_F(AuthServiceTest, ALearnerThatStopsCallingIsForgottenWithItsSecret) {
  absl::Time now = absl::FromUnixSeconds(1800000000);
  clock_ = [&now] { return now; };
  StartService();  // lease lifetime 30 s; A and B registered now
  now += absl::Seconds(20);
  v1::LeaseRunResponse lease;
  ASSERT_TRUE(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).ok());
  now += absl::Seconds(15);  // A heard from 15 s ago, B 35 s ago
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-1");
  CallContext actor(auth::BearerValue(kToken));
  for (int i = 0; i < 3; ++i) {
    v1::FindLearnerResponse found;
    ASSERT_TRUE(service_->FindLearner(actor.get(), &find, &found).ok());
    EXPECT_EQ(found.learner_member_id(), kA);
    EXPECT_FALSE(found.actor_ticket().empty());
  }
  // B was forgotten with its session secret; it registers again.
  EXPECT_EQ(LeaseAs(auth::BearerValue(secret_b_), kB, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const std::string again = Register(kB);
  ASSERT_FALSE(again.empty());
  EXPECT_TRUE(LeaseAs(auth::BearerValue(again), kB, &lease).ok());
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    v1::FindLearnerResponse found;
    ASSERT_TRUE(service_->FindLearner(actor.get(), &find, &found).ok());
    seen.insert(found.learner_member_id());
  }
  EXPECT_EQ(seen, (std::set<std::string>{kA, kB}));
  EXPECT_EQ(service_->ForgetSilentLearners(), 0);
  // Both silent for more than a lease lifetime: no learner to go to.
  now += absl::Seconds(31);
  EXPECT_EQ(service_->ForgetSilentLearners(), 2);
  v1::FindLearnerResponse none;
  ASSERT_TRUE(service_->FindLearner(actor.get(), &find, &none).ok());
  EXPECT_TRUE(none.learner_address().empty());
  EXPECT_TRUE(none.actor_ticket().empty());
  EXPECT_EQ(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

// Without a token: the scheduler alone skips and forgets silent learners;
// a forgotten one gets NOT_FOUND (the learner then registers again).
TEST_F(SchedulerUnitTest, ActorsGoOnlyToLearnersHeardFromWithinALeaseLifetime) {
  absl::Time now = absl::FromUnixSeconds(1800000000);
  clock_ = [&now] { return now; };
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  scheduler_metrics_ = &metrics;
  const auto metric = [&registry](const std::string& name) {
    for (const prometheus::MetricFamily& family : registry.Collect()) {
      if (family.name != name || family.metric.size() != 1) continue;
      const prometheus::ClientMetric& m = family.metric[0];
      return family.type == prometheus::MetricType::Gauge ? m.gauge.value
                                                          : m.counter.value;
    }
    return -1.0;
  };
  Start(StudyText("concurrency: 1\nmax_trials: 1"));  // kMember, 127.0.0.1:1
  v1::RegisterLearnerRequest other;
  other.set_member_id("learner-other");
  other.set_address("127.0.0.1:2");
  other.set_slots(1);
  ASSERT_TRUE(scheduler_->RegisterLearner(other).ok());
  const auto addresses = [&](int calls) {
    std::set<std::string> seen;
    v1::FindLearnerRequest find;
    find.set_actor_id("actor-1");
    for (int i = 0; i < calls; ++i) {
      absl::StatusOr<v1::FindLearnerResponse> found =
          scheduler_->FindLearner(find);
      EXPECT_TRUE(found.ok()) << found.status();
      if (found.ok()) seen.insert(found->learner_address());
    }
    return seen;
  };
  EXPECT_EQ(addresses(4),
            (std::set<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
  now += absl::Seconds(20);
  v1::HeartbeatRequest beat;
  beat.set_member_id(kMember);
  ASSERT_TRUE(scheduler_->Heartbeat(beat).ok());
  now += absl::Seconds(15);
  EXPECT_EQ(addresses(4), (std::set<std::string>{"127.0.0.1:1"}));
  EXPECT_THAT(scheduler_->ForgetSilentLearners(), ElementsAre("learner-other"));
  EXPECT_EQ(metric("ristretto_coordinator_learners"), 1);
  EXPECT_EQ(metric("ristretto_coordinator_learners_forgotten_total"), 1);
  EXPECT_TRUE(scheduler_->ForgetSilentLearners().empty());
  v1::HeartbeatRequest gone;
  gone.set_member_id("learner-other");
  EXPECT_EQ(scheduler_->Heartbeat(gone).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(scheduler_->RegisterLearner(other).ok());
  // Registered again but not working yet, while kMember works: actors go
  // to the learner that works (a registration alone draws none).
  EXPECT_EQ(addresses(4), (std::set<std::string>{"127.0.0.1:1"}));
  v1::HeartbeatRequest back;
  back.set_member_id("learner-other");
  ASSERT_TRUE(scheduler_->Heartbeat(back).ok());
  EXPECT_EQ(addresses(4),
            (std::set<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
  now += absl::Seconds(31);
  EXPECT_EQ(addresses(2), (std::set<std::string>{""}));
  EXPECT_THAT(scheduler_->ForgetSilentLearners(),
              ElementsAre("learner-other", kMember));
  EXPECT_EQ(metric("ristretto_coordinator_learners"), 0);
  EXPECT_EQ(metric("ristretto_coordinator_learners_forgotten_total"), 3);
  v1::LeaseRunRequest lease;
  lease.set_member_id(kMember);
  EXPECT_EQ(scheduler_->LeaseRun(lease).status().code(),
            absl::StatusCode::kNotFound);
  scheduler_.reset();  // before the metrics it points to
}

TEST_F(AuthServiceTest, DatasetsOnlyOfRunningStudiesWhenAuthenticating) {
  StartService();
  Tick();
  v1::LeaseRunResponse lease;
  ASSERT_TRUE(LeaseAs(auth::BearerValue(secret_a_), kA, &lease).ok());
  ASSERT_TRUE(lease.has_run());
  const std::string id = lease.lease().dataset_id();
  EXPECT_TRUE(scheduler_->DatasetPath(id, true).ok());
  EXPECT_EQ(scheduler_->DatasetPath("no-such-dataset", true).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->SetStudyState(study_id_, StudyState::kStopped).ok());
  EXPECT_EQ(scheduler_->DatasetPath(id, true).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(scheduler_->DatasetPath(id, false).ok());  // no token
}

// A learner fetches only the dataset of a run leased to it: found among
// the runs this scheduler leased it, or (a lease granted before a restart,
// which this process never saw) by scanning the store; another member, and
// the same member once released, is refused.
TEST_F(SchedulerUnitTest, LearnersFetchOnlyTheDatasetsOfTheirLeasedRuns) {
  Start(StudyText("concurrency: 2\nmax_trials: 2"));
  constexpr char kOther[] = "learner-other";
  v1::RegisterLearnerRequest reg;
  reg.set_member_id(kOther);
  reg.set_address("127.0.0.1:2");
  reg.set_slots(1);
  ASSERT_TRUE(scheduler_->RegisterLearner(reg).ok());
  Tick();
  const v1::LeaseRunResponse lease = Lease();
  ASSERT_TRUE(lease.has_run());
  const std::string id = lease.lease().dataset_id();
  ASSERT_FALSE(id.empty());
  const absl::StatusOr<std::string> own =
      scheduler_->DatasetPathForLearner(id, kMember);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_TRUE(std::filesystem::exists(*own)) << *own;
  // The other learner holds no run of it; an unknown dataset is unknown.
  const absl::Status stranger =
      scheduler_->DatasetPathForLearner(id, kOther).status();
  EXPECT_EQ(stranger.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(stranger.message(), HasSubstr(kOther));
  EXPECT_EQ(scheduler_->DatasetPathForLearner("no-such-dataset", kMember)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  // A lease this scheduler did not grant (as before a coordinator restart).
  absl::StatusOr<std::optional<RunRow>> direct =
      store_->LeaseRun(kOther, absl::Seconds(30));
  ASSERT_TRUE(direct.ok()) << direct.status();
  ASSERT_TRUE(direct->has_value());
  EXPECT_TRUE(scheduler_->DatasetPathForLearner(id, kOther).ok());
  // Released: kMember's run is queued again and its dataset refused to it.
  v1::ReleaseRequest release;
  release.set_member_id(kMember);
  ASSERT_TRUE(scheduler_->Release(release).ok());
  EXPECT_EQ(scheduler_->DatasetPathForLearner(id, kMember).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(scheduler_->DatasetPathForLearner(id, kOther).ok());
}

TEST_F(SchedulerUnitTest, WithoutATokenTheServiceAuthenticatesNothing) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  CoordinatorService service(scheduler_.get());
  EXPECT_FALSE(service.authenticating());
  CallContext anonymous;
  v1::LeaseRunRequest request;
  request.set_member_id("never-registered");
  v1::LeaseRunResponse lease;
  EXPECT_EQ(service.LeaseRun(anonymous.get(), &request, &lease).error_code(),
            grpc::StatusCode::NOT_FOUND);  // not registered
  v1::RegisterLearnerRequest reg;
  reg.set_member_id("dev");
  reg.set_address("127.0.0.1:9");
  reg.set_slots(1);
  v1::RegisterLearnerResponse registered;
  ASSERT_TRUE(service.RegisterLearner(anonymous.get(), &reg, &registered).ok());
  EXPECT_TRUE(registered.session_token().empty());
  request.set_member_id("dev");
  EXPECT_TRUE(service.LeaseRun(anonymous.get(), &request, &lease).ok());
  v1::FindLearnerRequest find;
  v1::FindLearnerResponse found;
  EXPECT_TRUE(service.FindLearner(anonymous.get(), &find, &found).ok());
}

// The ids a refusal names come from the caller: escaped (no newline, no
// control byte reaches a log line) and capped (common/text_util.h), as
// every other message of the tree renders untrusted text.
TEST_F(SchedulerUnitTest, RefusalsEscapeAndCapTheIdsTheyName) {
  Start(StudyText("concurrency: 1\nmax_trials: 1"));
  Tick();
  const v1::LeaseRunResponse lease = Lease();
  ASSERT_TRUE(lease.has_run());
  // Another member's id (206 bytes, a newline and a quote in it) on
  // kMember's run.
  v1::FailRunRequest fail;
  fail.set_member_id("evil\n'" + std::string(200, 'x'));
  fail.set_run_id(lease.lease().run_id());
  const absl::Status refused = scheduler_->FailRun(fail);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.message(),
            absl::StrCat("FailRun: run ", lease.lease().run_id(),
                         " is not leased to learner 'evil\\x0a'",
                         std::string(71, 'x'), "...(206 bytes)'"));
  // A registered dataset that no running study trains on, under an id of
  // 104 bytes with a control byte.
  DatasetRow odd;
  odd.id = "odd\x01" + std::string(100, 'd');
  odd.path = data_dir_ + "/odd.rds";
  ASSERT_TRUE(store_->PutDataset(odd).ok());
  const absl::StatusOr<std::string> path =
      scheduler_->DatasetPath(odd.id, /*running_studies_only=*/true);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(path.status().message(),
            absl::StrCat("dataset odd\\x01", std::string(73, 'd'),
                         "...(104 bytes) is not the dataset of a running "
                         "study"));
}

}  // namespace
}  // namespace ristretto::coordinator
