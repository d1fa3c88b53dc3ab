// Scheduler against a real PostgreSQL (pg_test_env.h): pruning decisions
// from ReportEvaluation see every intermediate value of the study,
// including repeated reports and values recorded before a restart.
#include "coordinator/service/scheduler.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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
    ASSERT_TRUE(admin_->SetStudyState(study->id, kStudyRunning).ok());
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

}  // namespace
}  // namespace ristretto::coordinator
