// Scheduler against a real PostgreSQL (pg_test_env.h): pruning decisions
// from ReportEvaluation see every intermediate value of the study,
// including repeated reports and values recorded before a restart.
#include "coordinator/service/scheduler.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/core/verdict.h"
#include "gtest/gtest.h"
#include "learner/run_config_codec.h"
#include "tests/coordinator/scheduler_test_helpers.h"
#include "tests/coordinator_store/pg_test_env.h"

namespace ristretto::coordinator {
namespace {

constexpr char kMember[] = "learner-test";

// One fold per trial, median pruner from the first report, three trials
// at a time.
constexpr char kStudy[] = R"(name: prune
dataset:
  synthetic: {rows: 2000, assets: 2, seed: 3, interval: 30m}
cv: {scheme: holdout, validation_fraction: 0.25}
budget_env_steps: 8000
eval_every_env_steps: 1000
sampler: {type: random, seed: 1}
pruner: {type: median, warmup_steps: 0, min_trials: 1}
concurrency: 3
max_trials: 10
space:
  learning_rate: {type: float, low: 1.0e-4, high: 3.0e-3, log: true}
)";

class SchedulerTest : public testing::PgDatabaseTest {
 protected:
  std::unique_ptr<Scheduler> NewScheduler() {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Connect(dsn());
    EXPECT_TRUE(store.ok()) << store.status();
    SchedulerOptions options;
    options.data_dir = data_dir_;
    auto scheduler =
        std::make_unique<Scheduler>(std::move(store).value(), options);
    v1::RegisterLearnerRequest reg;
    reg.set_member_id(kMember);
    reg.set_address("127.0.0.1:1");
    reg.set_slots(8);
    reg.set_memory_budget_mb(8192);
    reg.set_device("cpu");
    EXPECT_TRUE(scheduler->RegisterLearner(reg).ok());
    return scheduler;
  }

  // Leases the next run (one fold per trial).
  int64_t Lease(Scheduler* s) {
    v1::LeaseRunRequest request;
    request.set_member_id(kMember);
    absl::StatusOr<v1::LeaseRunResponse> lease = s->LeaseRun(request);
    EXPECT_TRUE(lease.ok()) << lease.status();
    EXPECT_TRUE(lease.ok() && lease->has_run());
    return lease.ok() ? lease->lease().run_id() : -1;
  }

  // Reports value `v` (sharpe - benchmark) at `step`; returns prune.
  bool Report(Scheduler* s, int64_t run, int64_t step, double v) {
    v1::ReportEvaluationRequest request;
    request.set_member_id(kMember);
    request.set_run_id(run);
    request.mutable_evaluation()->set_env_steps(step);
    request.mutable_evaluation()->set_sharpe(v + 0.5);
    request.mutable_evaluation()->set_benchmark_sharpe(0.5);
    absl::StatusOr<v1::ReportEvaluationResponse> r =
        s->ReportEvaluation(request);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->prune();
  }

  void SetUp() override {
    PgDatabaseTest::SetUp();
    absl::StatusOr<std::unique_ptr<Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    admin_ = std::move(store).value();
    absl::StatusOr<std::string> dir = testing::MakeTempDir("ristretto-sched-");
    ASSERT_TRUE(dir.ok());
    data_dir_ = *dir;
    absl::StatusOr<StudyRow> study = admin_->CreateStudy("prune", kStudy);
    ASSERT_TRUE(study.ok()) << study.status();
    ASSERT_TRUE(admin_->SetStudyState(study->id, StudyState::kRunning).ok());
  }

  // The study's data directory (datasets) goes with the test.
  void TearDown() override {
    std::error_code ec;
    if (!data_dir_.empty()) std::filesystem::remove_all(data_dir_, ec);
  }

  std::unique_ptr<Store> admin_;
  std::string data_dir_;
};

TEST_F(SchedulerTest, PruningSeesRepeatedReportsAndValuesFromBeforeARestart) {
  auto first = NewScheduler();
  ASSERT_TRUE(first->Tick().ok());  // three trials
  const int64_t a = Lease(first.get());
  const int64_t b = Lease(first.get());
  const int64_t c = Lease(first.get());
  EXPECT_FALSE(Report(first.get(), a, 1000, 1.0));  // nothing to compare
  EXPECT_FALSE(Report(first.get(), b, 1000, 2.0));  // above A
  EXPECT_FALSE(Report(first.get(), a, 1000, 3.0));  // A again: replaces 1.0
  // Others at 1000: A 3.0, B 2.0, median 2.5 (with A's old 1.0 it would
  // be 1.5 and C would go on).
  EXPECT_TRUE(Report(first.get(), c, 1000, 2.2));
  EXPECT_EQ(first->counters().trials_pruned, 1);
  first.reset();

  // A restarted coordinator: its first report must see all of the above.
  auto second = NewScheduler();
  ASSERT_TRUE(second->Tick().ok());  // replaces the pruned trial
  const int64_t d = Lease(second.get());
  EXPECT_NE(d, c);
  // Others at 1000: A 3.0, B 2.0, C 2.2 (pruned trials still count):
  // median 2.2.
  EXPECT_TRUE(Report(second.get(), d, 1000, 2.1));
  // B at 2000 has no other trial at or beyond 2000 to compare with.
  EXPECT_FALSE(Report(second.get(), b, 2000, -5.0));
}

// Two trials, one fold each, no pruner: each complete trial gets a final
// run on the lockbox, which never feeds the pruner or the score, and the
// study is done (with its statistics stored) only after the final runs.
constexpr char kLockboxStudy[] = R"(name: lockbox
dataset:
  synthetic: {rows: 2000, assets: 2, seed: 3, interval: 30m}
cv: {scheme: holdout, validation_fraction: 0.25}
lockbox: {bars: 200}
budget_env_steps: 8000
eval_every_env_steps: 4000
sampler: {type: random, seed: 1}
concurrency: 2
max_trials: 2
space:
  learning_rate: {type: float, low: 1.0e-4, high: 3.0e-3, log: true}
)";

TEST_F(SchedulerTest, CompleteTrialsGetOneLockboxRunThatNeverScores) {
  absl::StatusOr<StudyRow> study =
      admin_->CreateStudy("lockbox", kLockboxStudy);
  ASSERT_TRUE(study.ok()) << study.status();
  ASSERT_TRUE(admin_->SetStudyState(study->id, StudyState::kRunning).ok());
  // Only this study runs.
  absl::StatusOr<StudyRow> prune = admin_->GetStudy("prune");
  ASSERT_TRUE(prune.ok());
  ASSERT_TRUE(admin_->SetStudyState(prune->id, StudyState::kStopped).ok());
  auto s = NewScheduler();
  ASSERT_TRUE(s->Tick().ok());
  int64_t runs[2];
  int64_t fold_rows = 0;
  for (int64_t& run : runs) {
    v1::LeaseRunRequest request;
    request.set_member_id(kMember);
    absl::StatusOr<v1::LeaseRunResponse> lease = s->LeaseRun(request);
    ASSERT_TRUE(lease.ok() && lease->has_run());
    run = lease->lease().run_id();
    // CV runs never see the lockbox rows.
    absl::StatusOr<learner::TrainerOptions> o =
        learner::TrainerOptionsFromRunConfig(lease->lease().run_config());
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o->final_evaluation);
    EXPECT_TRUE(learner::CheckLockbox(*o).ok());
    for (const env::Domain& d : o->validation_domains) {
      EXPECT_LE(d.end, o->lockbox_guard);
    }
    fold_rows = 0;
    for (const env::Domain& d : o->train_domains) fold_rows += d.size();
  }
  // A NaN metric is refused with its name, and nothing is stored.
  v1::CompleteRunRequest bad;
  bad.set_member_id(kMember);
  bad.set_run_id(runs[0]);
  *bad.mutable_final_evaluation() = Eval(1.0, 4000, 300);
  bad.mutable_final_evaluation()->set_sortino(std::nan(""));
  absl::Status refused = s->CompleteRun(bad);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.message()).find("evaluation.sortino"),
            std::string::npos);
  for (int k = 0; k < 2; ++k) {
    v1::CompleteRunRequest done;
    done.set_member_id(kMember);
    done.set_run_id(runs[k]);
    *done.mutable_final_evaluation() = Eval(1.0 + k, 4000, 300);
    ASSERT_TRUE(s->CompleteRun(done).ok());
  }
  ASSERT_TRUE(s->Tick().ok());
  // Both trials complete, scored by the default objective (fold Sharpe).
  absl::StatusOr<std::vector<TrialRow>> trials = admin_->ListTrials(study->id);
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(trials->size(), 2u);
  for (const TrialRow& t : *trials) {
    EXPECT_EQ(t.state, TrialState::kComplete);
  }
  // The study waits for the final runs.
  absl::StatusOr<StudyRow> now = admin_->GetStudy("lockbox");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->state, StudyState::kRunning);
  for (int k = 0; k < 2; ++k) {
    v1::LeaseRunRequest request;
    request.set_member_id(kMember);
    absl::StatusOr<v1::LeaseRunResponse> lease = s->LeaseRun(request);
    ASSERT_TRUE(lease.ok() && lease->has_run());
    EXPECT_EQ(lease->lease().fold(), kLockboxFold);
    EXPECT_NE(lease->lease().run_name().find("/lockbox"), std::string::npos);
    absl::StatusOr<learner::TrainerOptions> o =
        learner::TrainerOptionsFromRunConfig(lease->lease().run_config());
    ASSERT_TRUE(o.ok());
    EXPECT_TRUE(o->final_evaluation);
    // The folds' best checkpoint (4000 steps) scaled to the refit's rows.
    int64_t refit_rows = 0;
    for (const env::Domain& d : o->train_domains) refit_rows += d.size();
    EXPECT_GT(refit_rows, fold_rows);
    EXPECT_EQ(o->budget_env_steps,
              std::llround(4000.0 * static_cast<double>(refit_rows) /
                           static_cast<double>(fold_rows)));
    EXPECT_EQ(o->eval_every_env_steps, 0);
    ASSERT_EQ(o->validation_domains.size(), 1u);
    EXPECT_EQ(o->validation_domains[0].begin, o->lockbox_begin);
    // Its evaluation is not a pruning point and records nothing.
    v1::ReportEvaluationRequest report;
    report.set_member_id(kMember);
    report.set_run_id(lease->lease().run_id());
    *report.mutable_evaluation() = Eval(-50, 4000, 10);
    absl::StatusOr<v1::ReportEvaluationResponse> r =
        s->ReportEvaluation(report);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->prune());
    v1::CompleteRunRequest done;
    done.set_member_id(kMember);
    done.set_run_id(lease->lease().run_id());
    *done.mutable_final_evaluation() = Eval(-3.0, 4000, 190);
    ASSERT_TRUE(s->CompleteRun(done).ok());
  }
  ASSERT_TRUE(s->Tick().ok());
  // Scores are untouched by the (bad) lockbox results.
  trials = admin_->ListTrials(study->id);
  ASSERT_TRUE(trials.ok());
  EXPECT_DOUBLE_EQ(*(*trials)[0].score, 1.0);
  EXPECT_DOUBLE_EQ(*(*trials)[1].score, 2.0);
  absl::StatusOr<std::vector<LockboxRow>> lockbox =
      admin_->ListLockbox(study->id);
  ASSERT_TRUE(lockbox.ok());
  ASSERT_EQ(lockbox->size(), 2u);
  for (const LockboxRow& l : *lockbox) {
    EXPECT_EQ(l.policy.sharpe, -3.0);
    EXPECT_EQ(l.bars, 190);
    EXPECT_GT(l.sharpe_se, 0);
    EXPECT_EQ(l.random_seeds, kRandomPolicySeeds);
    EXPECT_GT(l.random_sharpe_std, 0);  // the random policy really varies
    EXPECT_NE(l.bh_sharpe, 0);
  }
  now = admin_->GetStudy("lockbox");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->state, StudyState::kDone);
  absl::StatusOr<std::optional<std::string>> result =
      admin_->GetStudyResult(study->id);
  ASSERT_TRUE(result.ok() && result->has_value());
  absl::StatusOr<StudyStatistics> stats = StudyStatisticsFromJson(**result);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->best_trial, 1);
  EXPECT_FALSE(stats->edge);  // a lockbox Sharpe of −3 is no edge
  EXPECT_NE(stats->verdict.find("NO EDGE"), std::string::npos);
}

}  // namespace
}  // namespace ristretto::coordinator
