// The Store contract (coordinator/store/store.h), run against every
// implementation: InMemoryStore in ristretto_store_contract_test (unit);
// PgStore on the test harness's PostgreSQL (pg_test_env.h) in
// ristretto_store_contract_pg_test, built with
// RISTRETTO_CONTRACT_WITH_POSTGRES (integration). Whatever the
// fake does differently from PostgreSQL fails here, so the scheduler tests
// that run on the fake test what production does.
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "coordinator/store/in_memory_store.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/store_test_helpers.h"
#if RISTRETTO_CONTRACT_WITH_POSTGRES
#include "tests/coordinator_store/pg_test_env.h"
#endif

namespace ristretto::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

enum class Backend { kInMemory, kPostgres };

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kInMemory ? "InMemory" : "Postgres";
}

const std::string kSha(64, 'b');
constexpr char kMember[] = "learner-a";
constexpr char kOther[] = "learner-b";
const absl::Duration kTtl = absl::Seconds(30);

FoldMetrics Metrics(double sharpe, int64_t steps) {
  FoldMetrics m = BaseMetrics(sharpe, steps);
  m.fees = 0.01;
  m.turnover = 2;
  m.exposure = 0.5;
  m.score = sharpe - 0.5;
  m.log_returns = {0.0012345678912345, -0.002, 1e-12};
  return m;
}

LockboxRow Lockbox(double sharpe) {
  LockboxRow row;
  row.bars = 3;
  row.policy = Metrics(sharpe, 500);
  row.sharpe_se = 0.4;
  row.bh_sharpe = 0.7;
  row.bh_sharpe_se = 0.3;
  row.bh_sortino = 0.9;
  row.bh_return = 0.02;
  row.bh_max_drawdown = 0.1;
  row.random_seeds = 5;
  row.random_sharpe_mean = -0.1;
  row.random_sharpe_std = 0.2;
  row.random_return_mean = -0.01;
  row.random_return_std = 0.02;
  row.bh_log_returns = {0.0007654321098765, -0.001, 2e-12};
  row.rules_json =
      R"([{"name":"momentum","parameter":"N = 3 bars","log_returns":[0.5]}])";
  return row;
}

class StoreContractTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kInMemory) {
      store_ = std::make_unique<InMemoryStore>();
    } else {
#if RISTRETTO_CONTRACT_WITH_POSTGRES
      testing::PgTestCluster& env = testing::PgTestCluster::Get();
      ASSERT_TRUE(env.status().ok()) << env.status();
      ASSERT_OK_AND_ASSIGN(dsn_, env.NewDatabase());
      ASSERT_OK_AND_ASSIGN(store_, Store::Connect(dsn_));
#else
      GTEST_SKIP() << "built without PostgreSQL";
#endif
    }
    ASSERT_OK(store_->Migrate());
  }

  // A study in state running.
  StudyRow RunningStudy(const std::string& name) {
    return MakeRunningStudy(*store_, name);
  }

  // A trial with `folds` queued runs.
  TrialRow Trial(int64_t study_id, int folds) {
    std::vector<std::string> configs;
    configs.reserve(static_cast<size_t>(folds));
    for (int k = 0; k < folds; ++k) {
      configs.push_back(absl::StrCat("{\"fold\":", k, "}"));
    }
    absl::StatusOr<TrialRow> trial = store_->CreateTrial(
        study_id, {{"lr", "0.001"}, {"gamma", "0.99"}}, configs, "/ckpt");
    EXPECT_TRUE(trial.ok()) << trial.status();
    return trial.ok() ? *trial : TrialRow{};
  }

  // Leases the next run to `member` (must exist).
  RunRow Lease(const std::string& member = kMember) {
    absl::StatusOr<std::optional<RunRow>> run = store_->LeaseRun(member, kTtl);
    EXPECT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run.ok() && run->has_value());
    return run.ok() && run->has_value() ? **run : RunRow{};
  }

  // A Store for another thread: PgStore is thread-compatible (a connection
  // each), InMemoryStore is thread-safe (the same instance, not owned).
  absl::StatusOr<std::shared_ptr<Store>> StoreForThread() {
    if (GetParam() == Backend::kInMemory) {
      return std::shared_ptr<Store>(store_.get(), [](Store*) {});
    }
    ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Connect(dsn_));
    return std::shared_ptr<Store>(std::move(store));
  }

  std::unique_ptr<Store> store_;
  std::string dsn_;  // PgStore only
};

TEST_P(StoreContractTest, SchemaVersionIsTheLatestAfterMigrate) {
  ASSERT_OK_AND_ASSIGN(const int version, store_->SchemaVersion());
  EXPECT_EQ(version, LatestSchemaVersion());
}

TEST_P(StoreContractTest, StudiesFollowTheStateMachine) {
  ASSERT_OK_AND_ASSIGN(const StudyRow a, store_->CreateStudy("a", "x: 1"));
  EXPECT_GT(a.id, 0);
  EXPECT_EQ(a.state, StudyState::kCreated);
  EXPECT_EQ(store_->CreateStudy("a", "x: 2").status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->CreateStudy("", "x").status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(const StudyRow b, store_->CreateStudy("b", "y: 1"));
  EXPECT_GT(b.id, a.id);
  EXPECT_EQ(store_->GetStudy("nope").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetStudyById(b.id + 100).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const StudyRow got, store_->GetStudy("a"));
  EXPECT_EQ(got.id, a.id);
  EXPECT_EQ(got.config_text, "x: 1");

  ASSERT_OK(store_->SetStudyState(a.id, StudyState::kRunning));
  ASSERT_OK(
      store_->SetStudyState(a.id, StudyState::kRunning));  // no change: OK
  EXPECT_EQ(store_->SetStudyState(a.id, StudyState::kCreated).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->SetStudyState(a.id, StudyState::kStopped));
  ASSERT_OK(store_->SetStudyState(a.id, StudyState::kRunning));
  ASSERT_OK(store_->SetStudyState(a.id, StudyState::kDone));
  EXPECT_EQ(store_->SetStudyState(a.id, StudyState::kRunning).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->SetStudyState(a.id, static_cast<StudyState>(17)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->SetStudyState(b.id + 100, StudyState::kRunning).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const std::vector<StudyRow> all, store_->ListStudies());
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_EQ(all[0].state, StudyState::kDone);
  EXPECT_EQ(all[1].name, "b");
  // A done study takes no more trials.
  EXPECT_EQ(store_->CreateTrial(a.id, {}, {"{}"}, "/c").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_P(StoreContractTest, CreateTrialNumbersTrialsAndQueuesOneRunPerFold) {
  const StudyRow study = RunningStudy("s");
  const TrialRow t0 = Trial(study.id, 2);
  const TrialRow t1 = Trial(study.id, 2);
  EXPECT_EQ(t0.number, 0);
  EXPECT_EQ(t1.number, 1);
  EXPECT_EQ(t0.state, TrialState::kRunning);
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs, store_->ListRuns(t1.id));
  ASSERT_EQ(runs.size(), 2U);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(runs[k].fold, k);
    EXPECT_EQ(runs[k].state, RunState::kQueued);
    EXPECT_EQ(runs[k].attempts, 0);
    EXPECT_EQ(runs[k].study_id, study.id);
    EXPECT_EQ(runs[k].config_json, absl::StrCat("{\"fold\":", k, "}"));
    EXPECT_EQ(runs[k].checkpoint_dir, absl::StrCat("/ckpt/s/trial-1/fold-", k));
    EXPECT_FALSE(runs[k].lease_expires_at.has_value());
  }
  ASSERT_OK_AND_ASSIGN(const TrialRow got, store_->GetTrial(t1.id));
  ASSERT_EQ(got.params.size(), 2U);  // in the order given
  EXPECT_EQ(got.params[0].name, "lr");
  EXPECT_EQ(got.params[1].name, "gamma");
  EXPECT_EQ(got.params[1].value, "0.99");

  // Refusals write nothing.
  EXPECT_EQ(
      store_->CreateTrial(study.id, {{"a", "1"}, {"a", "2"}}, {"{}"}, "/c")
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      store_->CreateTrial(study.id, {{"", "1"}}, {"{}"}, "/c").status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->CreateTrial(study.id, {}, {}, "/c").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      store_->CreateTrial(study.id + 100, {}, {"{}"}, "/c").status().code(),
      absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const std::vector<TrialRow> trials,
                       store_->ListTrials(study.id));
  ASSERT_EQ(trials.size(), 2U);
  EXPECT_EQ(trials[1].params.size(), 2U);
  EXPECT_EQ(Trial(study.id, 1).number, 2);  // no gap from the refusals
  EXPECT_EQ(store_->ListTrials(study.id + 100).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetTrial(t1.id + 100).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListRuns(t1.id + 100).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreContractTest, LeaseRunHandsOutTheOldestQueuedRunOfRunningStudies) {
  ASSERT_OK_AND_ASSIGN(const StudyRow idle, store_->CreateStudy("idle", "x"));
  const TrialRow waiting = Trial(idle.id, 1);  // study not running
  ASSERT_OK_AND_ASSIGN(std::optional<RunRow> none,
                       store_->LeaseRun(kMember, kTtl));
  EXPECT_FALSE(none.has_value());
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 2);
  const absl::Time before = absl::Now();
  const RunRow first = Lease();
  EXPECT_EQ(first.trial_id, trial.id);
  EXPECT_EQ(first.fold, 0);
  EXPECT_EQ(first.state, RunState::kLeased);
  EXPECT_EQ(first.member_id, kMember);
  EXPECT_EQ(first.attempts, 1);
  ASSERT_TRUE(first.lease_expires_at.has_value());
  EXPECT_GE(*first.lease_expires_at, before + kTtl - absl::Milliseconds(1));
  EXPECT_EQ(Lease(kOther).fold, 1);
  ASSERT_OK_AND_ASSIGN(none, store_->LeaseRun(kMember, kTtl));
  EXPECT_FALSE(none.has_value());
  // Leasing records an unknown member as a learner.
  ASSERT_OK_AND_ASSIGN(const std::vector<MemberRow> members,
                       store_->ListMembers());
  ASSERT_EQ(members.size(), 2U);
  EXPECT_EQ(members[0].id, kMember);
  EXPECT_EQ(members[0].kind, "learner");
  EXPECT_EQ(members[0].capacity_json, "{}");
  // The stopped study's run becomes leasable when it runs.
  ASSERT_OK(store_->SetStudyState(idle.id, StudyState::kRunning));
  EXPECT_EQ(Lease().trial_id, waiting.id);
  EXPECT_EQ(store_->LeaseRun("", kTtl).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->LeaseRun(kMember, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, HeartbeatExtendsLeasesRecordsStepsAndNamesLostRuns) {
  const StudyRow study = RunningStudy("s");
  Trial(study.id, 2);
  const RunRow mine = Lease();
  const RunRow theirs = Lease(kOther);
  ASSERT_OK_AND_ASSIGN(
      const std::vector<int64_t> lost,
      store_->Heartbeat(kMember, absl::Hours(1),
                        {{mine.id, 1234}, {theirs.id, 99}, {987654, 1}}));
  EXPECT_THAT(lost, ElementsAre(theirs.id, 987654));
  ASSERT_OK_AND_ASSIGN(const RunRow after, store_->GetRun(mine.id));
  EXPECT_EQ(after.env_steps, 1234);
  ASSERT_TRUE(after.lease_expires_at.has_value());
  EXPECT_GT(*after.lease_expires_at, absl::Now() + absl::Minutes(59));
  ASSERT_OK_AND_ASSIGN(const RunRow other, store_->GetRun(theirs.id));
  EXPECT_EQ(other.env_steps, 0);
  EXPECT_LT(*other.lease_expires_at, absl::Now() + absl::Minutes(1));
  EXPECT_EQ(store_->Heartbeat(kMember, kTtl, {{mine.id, -1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetRun(987654).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreContractTest, ExpiredLeasesRequeueThenFailTheTrialAtMaxAttempts) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 2);
  const RunRow run = Lease();
  const absl::Time later = absl::Now() + absl::Hours(1);
  // Not yet expired: nothing happens.
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> expired,
                       store_->ExpireLeases(absl::Now(), 2));
  EXPECT_TRUE(expired.empty());
  ASSERT_OK_AND_ASSIGN(expired, store_->ExpireLeases(later, 2));
  EXPECT_THAT(expired, ElementsAre(run.id));
  ASSERT_OK_AND_ASSIGN(RunRow again, store_->GetRun(run.id));
  EXPECT_EQ(again.state, RunState::kQueued);
  EXPECT_EQ(again.member_id, "");
  EXPECT_THAT(again.last_error, HasSubstr("expired (attempt 1)"));
  // The former holder has lost it.
  EXPECT_EQ(
      store_->CompleteRun(run.id, kMember, Metrics(1, 10), {}).status().code(),
      absl::StatusCode::kFailedPrecondition);
  again = Lease(kOther);
  EXPECT_EQ(again.id, run.id);  // the oldest queued run again
  EXPECT_EQ(again.attempts, 2);
  ASSERT_OK_AND_ASSIGN(expired, store_->ExpireLeases(later, 2));
  EXPECT_THAT(expired, ElementsAre(run.id));
  ASSERT_OK_AND_ASSIGN(const RunRow failed, store_->GetRun(run.id));
  EXPECT_EQ(failed.state, RunState::kFailed);
  ASSERT_OK_AND_ASSIGN(const TrialRow t, store_->GetTrial(trial.id));
  EXPECT_EQ(t.state, TrialState::kFailed);
  EXPECT_THAT(t.fail_reason, HasSubstr("lease expired after 2 attempts"));
  EXPECT_THAT(t.fail_reason, HasSubstr("fold 0"));
  EXPECT_TRUE(t.finished_at.has_value());
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                       store_->ListRuns(trial.id));
  EXPECT_EQ(runs[1].state, RunState::kCancelled);
  EXPECT_EQ(runs[1].last_error, "trial failed");
  EXPECT_EQ(store_->ExpireLeases(later, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ExpireLeases(later, {{study.id, 0}}, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, ExpireLeasesAppliesEachStudysOwnLimit) {
  const StudyRow strict = RunningStudy("strict");
  const StudyRow lenient = RunningStudy("lenient");
  const TrialRow a = Trial(strict.id, 1);
  const TrialRow b = Trial(lenient.id, 1);
  const RunRow ra = Lease();
  const RunRow rb = Lease();
  ASSERT_OK_AND_ASSIGN(
      const std::vector<int64_t> expired,
      store_->ExpireLeases(absl::Now() + absl::Hours(1), {{strict.id, 1}}, 3));
  EXPECT_THAT(expired, ElementsAre(ra.id, rb.id));
  ASSERT_OK_AND_ASSIGN(const TrialRow ta, store_->GetTrial(a.id));
  ASSERT_OK_AND_ASSIGN(const TrialRow tb, store_->GetTrial(b.id));
  EXPECT_EQ(ta.state, TrialState::kFailed);
  EXPECT_EQ(tb.state, TrialState::kRunning);
  ASSERT_OK_AND_ASSIGN(const RunRow qb, store_->GetRun(rb.id));
  EXPECT_EQ(qb.state, RunState::kQueued);
}

TEST_P(StoreContractTest, CompleteRunOnlyByTheHolderOnceAndSaysWhenAllDone) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 2);
  const RunRow f0 = Lease();
  const RunRow f1 = Lease();
  EXPECT_EQ(
      store_->CompleteRun(f0.id, kOther, Metrics(1, 10), {}).status().code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_
                ->CompleteRun(f0.id, kMember, Metrics(1, 10),
                              {{0, 0, 0, 0, "model", "/p", kSha}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_
                ->CompleteRun(f0.id, kMember, Metrics(1, 10),
                              {{0, 0, 0, 0, "policy", "/p", "ABC"}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  FoldMetrics negative = Metrics(1, 10);
  negative.trades = -1;
  EXPECT_EQ(store_->CompleteRun(f0.id, kMember, negative, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      store_->CompleteRun(999999, kMember, Metrics(1, 10), {}).status().code(),
      absl::StatusCode::kNotFound);
  ASSERT_OK(store_->Heartbeat(kMember, kTtl, {{f0.id, 5000}}).status());
  FoldMetrics m1 = Metrics(1.5, 4000);
  m1.fold = 7;  // ignored: the run's fold is stored
  ASSERT_OK_AND_ASSIGN(
      const bool done_after_first,
      store_->CompleteRun(f0.id, kMember, m1,
                          {{0, 0, 0, 0, "policy", "/p0", kSha},
                           {0, 0, 0, 0, "checkpoint", "/c0", kSha}}));
  EXPECT_FALSE(done_after_first);
  EXPECT_EQ(store_->CompleteRun(f0.id, kMember, m1, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);  // nothing twice
  ASSERT_OK_AND_ASSIGN(const RunRow r0, store_->GetRun(f0.id));
  EXPECT_EQ(r0.state, RunState::kDone);
  EXPECT_EQ(r0.member_id, "");
  EXPECT_EQ(r0.env_steps, 5000);  // the larger of progress and metrics
  const std::string other_sha(64, 'c');
  ASSERT_OK_AND_ASSIGN(
      const bool all_done,
      store_->CompleteRun(f1.id, kMember, Metrics(2.5, 6000),
                          {{0, 0, 0, 0, "policy", "/p0", other_sha}}));
  EXPECT_TRUE(all_done);
  ASSERT_OK_AND_ASSIGN(const std::vector<FoldMetrics> folds,
                       store_->ListFoldMetrics(trial.id));
  ASSERT_EQ(folds.size(), 2U);
  EXPECT_EQ(folds[0].fold, 0);
  EXPECT_EQ(folds[1].fold, 1);
  EXPECT_DOUBLE_EQ(folds[0].sharpe, 1.5);
  EXPECT_DOUBLE_EQ(folds[0].score, 1.0);
  EXPECT_DOUBLE_EQ(folds[0].exposure, 0.5);
  EXPECT_EQ(folds[0].env_steps, 4000);
  ASSERT_EQ(folds[0].log_returns.size(), 3U);
  // 9 significant digits are kept.
  EXPECT_NEAR(folds[0].log_returns[0], 0.0012345678912345, 1e-11);
  EXPECT_DOUBLE_EQ(folds[0].log_returns[1], -0.002);
  // Artifacts: one per (trial, kind, path); a second report replaces it.
  ASSERT_OK_AND_ASSIGN(const std::vector<ArtifactRow> artifacts,
                       store_->ListArtifacts(trial.id));
  ASSERT_EQ(artifacts.size(), 2U);
  EXPECT_EQ(artifacts[0].path, "/p0");
  EXPECT_EQ(artifacts[0].sha256, other_sha);
  EXPECT_EQ(artifacts[0].run_id, f1.id);
  EXPECT_EQ(artifacts[0].study_id, study.id);
  EXPECT_EQ(artifacts[1].kind, "checkpoint");
  EXPECT_LT(artifacts[0].id, artifacts[1].id);
  // Completing every run does not complete the trial: the scheduler does.
  ASSERT_OK_AND_ASSIGN(const TrialRow t, store_->GetTrial(trial.id));
  EXPECT_EQ(t.state, TrialState::kRunning);
  EXPECT_EQ(store_->ListFoldMetrics(trial.id + 100).status().code(),
            absl::StatusCode::kNotFound);
}

// The env steps a run's learner received and dropped are kept on the run
// (CV and final runs alike), read back by GetRun and ListRuns; impossible
// counts are refused with nothing written.
TEST_P(StoreContractTest, CompletedRunsKeepTheirEnvStepsReceivedAndDropped) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 1);
  const RunRow cv = Lease();
  ASSERT_OK_AND_ASSIGN(const RunRow before, store_->GetRun(cv.id));
  EXPECT_EQ(before.env_steps_received, 0);
  EXPECT_EQ(before.env_steps_dropped, 0);
  FoldMetrics m = Metrics(1, 100000);
  m.env_steps_received = 101376;
  m.env_steps_dropped = 1024;
  FoldMetrics more_dropped = m;
  more_dropped.env_steps_dropped = m.env_steps_received + 1;
  EXPECT_EQ(
      store_->CompleteRun(cv.id, kMember, more_dropped, {}).status().code(),
      absl::StatusCode::kInvalidArgument);
  FoldMetrics negative = m;
  negative.env_steps_received = -1;
  EXPECT_EQ(store_->CompleteRun(cv.id, kMember, negative, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(store_->CompleteRun(cv.id, kMember, m, {}).status());
  ASSERT_OK_AND_ASSIGN(const RunRow done, store_->GetRun(cv.id));
  EXPECT_EQ(done.env_steps_received, 101376);
  EXPECT_EQ(done.env_steps_dropped, 1024);
  // Not part of the fold's metrics.
  ASSERT_OK_AND_ASSIGN(const std::vector<FoldMetrics> folds,
                       store_->ListFoldMetrics(trial.id));
  ASSERT_EQ(folds.size(), 1U);
  EXPECT_EQ(folds[0].env_steps_received, 0);
  EXPECT_EQ(folds[0].env_steps_dropped, 0);
  // The final run's come from its policy's metrics.
  ASSERT_OK(store_->CompleteTrial(trial.id, 0.5));
  ASSERT_OK(store_->AddFinalRun(trial.id, "{}", "/ckpt").status());
  const RunRow final_run = Lease();
  LockboxRow l = Lockbox(2);
  l.policy.env_steps_received = 50000;
  l.policy.env_steps_dropped = 0;
  ASSERT_OK(store_->CompleteFinalRun(final_run.id, kMember, l, {}));
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                       store_->ListRuns(trial.id));
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0].fold, kLockboxFold);
  EXPECT_EQ(runs[0].env_steps_received, 50000);
  EXPECT_EQ(runs[0].env_steps_dropped, 0);
  EXPECT_EQ(runs[1].env_steps_received, 101376);
  EXPECT_EQ(runs[1].env_steps_dropped, 1024);
}

TEST_P(StoreContractTest, FailRunFailsTheTrialAndCancelsItsSiblings) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 3);
  const RunRow f0 = Lease();
  const RunRow f1 = Lease(kOther);
  EXPECT_EQ(store_->FailRun(f0.id, kOther, "x").code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->FailRun(f1.id, kOther, ""));
  ASSERT_OK_AND_ASSIGN(const TrialRow t, store_->GetTrial(trial.id));
  EXPECT_EQ(t.state, TrialState::kFailed);
  EXPECT_EQ(t.fail_reason, "fold 1: unknown error");
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                       store_->ListRuns(trial.id));
  EXPECT_EQ(runs[0].state, RunState::kCancelled);  // was leased
  EXPECT_EQ(runs[1].state, RunState::kFailed);
  EXPECT_EQ(runs[1].last_error, "unknown error");
  EXPECT_EQ(runs[2].state, RunState::kCancelled);  // was queued
  EXPECT_EQ(runs[0].member_id, "");
  // The former holder of a cancelled run hears so at its next heartbeat.
  ASSERT_OK_AND_ASSIGN(const std::vector<int64_t> lost,
                       store_->Heartbeat(kMember, kTtl, {{f0.id, 1}}));
  EXPECT_THAT(lost, ElementsAre(f0.id));
  ASSERT_OK_AND_ASSIGN(const TrialCounts counts, store_->CountTrials(study.id));
  EXPECT_EQ(counts.failed, 1);
  EXPECT_EQ(counts.running, 0);
}

// RetryRun queues a failed run again, backing off: LeaseRun skips it before
// retry_after, and skips it for the member that failed it before
// avoid_until; the attempts go on counting; only the holder may call it.
TEST_P(StoreContractTest, RetryRunQueuesTheRunBackingOffFromItsHolder) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 1);
  const RunRow run = Lease();
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  const absl::Time retry = t0 + absl::Seconds(5);
  const absl::Time avoid = t0 + absl::Seconds(10);
  EXPECT_EQ(store_->RetryRun(run.id, kOther, "x", retry, avoid).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->RetryRun(run.id, kMember, "x", avoid, retry).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(store_->RetryRun(run.id, kMember, "disk full", retry, avoid));
  ASSERT_OK_AND_ASSIGN(const RunRow queued, store_->GetRun(run.id));
  EXPECT_EQ(queued.state, RunState::kQueued);
  EXPECT_EQ(queued.member_id, "");
  EXPECT_EQ(queued.last_error, "disk full");
  EXPECT_EQ(queued.attempts, 1);
  EXPECT_EQ(queued.retry_after, retry);
  EXPECT_EQ(queued.avoid_member, kMember);
  EXPECT_EQ(queued.avoid_until, avoid);
  ASSERT_OK_AND_ASSIGN(const TrialRow t, store_->GetTrial(trial.id));
  EXPECT_EQ(t.state, TrialState::kRunning);
  ASSERT_OK_AND_ASSIGN(std::optional<RunRow> none,
                       store_->LeaseRun(kOther, kTtl, t0 + absl::Seconds(4)));
  EXPECT_FALSE(none.has_value());
  ASSERT_OK_AND_ASSIGN(none,
                       store_->LeaseRun(kMember, kTtl, t0 + absl::Seconds(6)));
  EXPECT_FALSE(none.has_value());  // the member that failed it waits longer
  ASSERT_OK_AND_ASSIGN(std::optional<RunRow> again,
                       store_->LeaseRun(kOther, kTtl, t0 + absl::Seconds(6)));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, run.id);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(again->member_id, kOther);
  // Retried by kOther, then leased by kMember once its own wait is over.
  ASSERT_OK(store_->RetryRun(run.id, kOther, "", retry, avoid));
  ASSERT_OK_AND_ASSIGN(const RunRow unknown, store_->GetRun(run.id));
  EXPECT_EQ(unknown.last_error, "unknown error");
  ASSERT_OK_AND_ASSIGN(again,
                       store_->LeaseRun(kMember, kTtl, t0 + absl::Seconds(6)));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->attempts, 3);
}

// A study's stop reason is stored with its state and cleared by the next
// change of state.
TEST_P(StoreContractTest, SetStudyStateRecordsTheStopReason) {
  const StudyRow study = RunningStudy("s");
  EXPECT_EQ(study.stop_reason, "");
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kStopped,
                                  "cannot run: disk full"));
  ASSERT_OK_AND_ASSIGN(StudyRow read, store_->GetStudyById(study.id));
  EXPECT_EQ(read.state, StudyState::kStopped);
  EXPECT_EQ(read.stop_reason, "cannot run: disk full");
  ASSERT_OK_AND_ASSIGN(read, store_->GetStudy("s"));
  EXPECT_EQ(read.stop_reason, "cannot run: disk full");
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kRunning));
  ASSERT_OK_AND_ASSIGN(read, store_->GetStudyById(study.id));
  EXPECT_EQ(read.stop_reason, "");
}

TEST_P(StoreContractTest, TrialTransitionsPruneFailAndComplete) {
  const StudyRow study = RunningStudy("s");
  const TrialRow pruned = Trial(study.id, 2);
  const TrialRow failed = Trial(study.id, 1);
  const TrialRow complete = Trial(study.id, 1);
  Trial(study.id, 1);  // stays running
  const RunRow leased = Lease();
  ASSERT_EQ(leased.trial_id, pruned.id);
  ASSERT_OK(store_->PruneTrial(pruned.id));
  ASSERT_OK(store_->PruneTrial(pruned.id));  // idempotent
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                       store_->ListRuns(pruned.id));
  for (const RunRow& r : runs) {
    EXPECT_EQ(r.state, RunState::kCancelled);
    EXPECT_EQ(r.last_error, "trial pruned");
  }
  EXPECT_EQ(store_->FailTrial(failed.id, "").code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(store_->FailTrial(failed.id, "first"));
  ASSERT_OK(store_->FailTrial(failed.id, "second"));  // keeps the first
  ASSERT_OK_AND_ASSIGN(const TrialRow f, store_->GetTrial(failed.id));
  EXPECT_EQ(f.fail_reason, "first");
  ASSERT_OK(store_->CompleteTrial(complete.id, 0.75));
  ASSERT_OK_AND_ASSIGN(const TrialRow c, store_->GetTrial(complete.id));
  EXPECT_EQ(c.state, TrialState::kComplete);
  ASSERT_TRUE(c.score.has_value());
  EXPECT_DOUBLE_EQ(*c.score, 0.75);
  EXPECT_TRUE(c.finished_at.has_value());
  for (const int64_t id : {pruned.id, failed.id, complete.id}) {
    EXPECT_EQ(store_->CompleteTrial(id, 1).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(store_->PruneTrial(complete.id).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FailTrial(pruned.id, "x").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->PruneTrial(999999).code(), absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const TrialCounts counts, store_->CountTrials(study.id));
  EXPECT_EQ(counts.running, 1);
  EXPECT_EQ(counts.complete, 1);
  EXPECT_EQ(counts.pruned, 1);
  EXPECT_EQ(counts.failed, 1);
  EXPECT_EQ(store_->CountTrials(study.id + 100).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreContractTest, FinalRunOnlyForACompleteTrialOnceAndOnTheLockbox) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 1);
  EXPECT_EQ(store_->AddFinalRun(trial.id, "{}", "/ckpt").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->AddFinalRun(999999, "{}", "/ckpt").status().code(),
            absl::StatusCode::kNotFound);
  const RunRow cv = Lease();
  ASSERT_OK_AND_ASSIGN(const bool all_done,
                       store_->CompleteRun(cv.id, kMember, Metrics(1, 10), {}));
  ASSERT_TRUE(all_done);
  ASSERT_OK_AND_ASSIGN(int64_t open, store_->CountOpenRuns(study.id));
  EXPECT_EQ(open, 0);
  ASSERT_OK(store_->CompleteTrial(trial.id, 0.5));
  ASSERT_OK_AND_ASSIGN(const RunRow final_run,
                       store_->AddFinalRun(trial.id, "{\"final\":1}", "/ckpt"));
  EXPECT_EQ(final_run.fold, kLockboxFold);
  EXPECT_EQ(final_run.state, RunState::kQueued);
  EXPECT_EQ(final_run.checkpoint_dir, "/ckpt/s/trial-0/lockbox");
  ASSERT_OK_AND_ASSIGN(const RunRow again,
                       store_->AddFinalRun(trial.id, "{\"other\":1}", "/x"));
  EXPECT_EQ(again.id, final_run.id);  // idempotent
  EXPECT_EQ(again.config_json, "{\"final\":1}");
  ASSERT_OK_AND_ASSIGN(open, store_->CountOpenRuns(study.id));
  EXPECT_EQ(open, 1);
  // A complete trial's final run is leasable; ListRuns puts it first.
  const RunRow leased = Lease();
  EXPECT_EQ(leased.id, final_run.id);
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                       store_->ListRuns(trial.id));
  ASSERT_EQ(runs.size(), 2U);
  EXPECT_EQ(runs[0].fold, kLockboxFold);
  EXPECT_EQ(store_->CompleteRun(leased.id, kMember, Metrics(1, 10), {})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  LockboxRow bad = Lockbox(1);
  bad.bh_sharpe = std::nan("");
  EXPECT_EQ(store_->CompleteFinalRun(leased.id, kMember, bad, {}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(store_->CompleteFinalRun(leased.id, kMember, Lockbox(2.25),
                                     {{0, 0, 0, 0, "policy", "/final", kSha}}));
  EXPECT_EQ(
      store_->CompleteFinalRun(leased.id, kMember, Lockbox(2.25), {}).code(),
      absl::StatusCode::kFailedPrecondition);
  ASSERT_OK_AND_ASSIGN(open, store_->CountOpenRuns(study.id));
  EXPECT_EQ(open, 0);
  ASSERT_OK_AND_ASSIGN(const std::vector<LockboxRow> lockbox,
                       store_->ListLockbox(study.id));
  ASSERT_EQ(lockbox.size(), 1U);
  const LockboxRow& x = lockbox[0];
  EXPECT_EQ(x.trial_id, trial.id);
  EXPECT_EQ(x.run_id, final_run.id);
  EXPECT_EQ(x.bars, 3);
  EXPECT_EQ(x.policy.fold, kLockboxFold);
  EXPECT_DOUBLE_EQ(x.policy.sharpe, 2.25);
  EXPECT_DOUBLE_EQ(x.sharpe_se, 0.4);
  EXPECT_DOUBLE_EQ(x.bh_sharpe, 0.7);
  EXPECT_DOUBLE_EQ(x.policy.benchmark_sharpe, 0.7);  // buy and hold
  EXPECT_DOUBLE_EQ(x.policy.score, 0);               // not stored
  EXPECT_EQ(x.random_seeds, 5);
  EXPECT_DOUBLE_EQ(x.random_return_std, 0.02);
  EXPECT_EQ(x.policy.log_returns.size(), 3U);
  // Buy and hold's returns on the same bars, for the paired test.
  ASSERT_EQ(x.bh_log_returns.size(), 3U);
  EXPECT_NEAR(x.bh_log_returns[0], 0.0007654321098765, 1e-11);
  EXPECT_DOUBLE_EQ(x.bh_log_returns[1], -0.001);
  // The rule baselines on the same bars, kept as given.
  EXPECT_EQ(
      x.rules_json,
      R"([{"name":"momentum","parameter":"N = 3 bars","log_returns":[0.5]}])");
  // The lockbox never enters the CV metrics.
  ASSERT_OK_AND_ASSIGN(const std::vector<FoldMetrics> folds,
                       store_->ListFoldMetrics(trial.id));
  EXPECT_EQ(folds.size(), 1U);
  // A CV run cannot be completed as a final run.
  const TrialRow other = Trial(study.id, 1);
  const RunRow cv2 = Lease();
  ASSERT_EQ(cv2.trial_id, other.id);
  EXPECT_EQ(store_->CompleteFinalRun(cv2.id, kMember, Lockbox(1), {}).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_P(StoreContractTest, RefitsAreFinalRunsAndTheTrialResultWaitsForAll) {
  const StudyRow study = RunningStudy("s");
  const TrialRow trial = Trial(study.id, 1);
  const RunRow cv = Lease();
  ASSERT_OK(store_->CompleteRun(cv.id, kMember, Metrics(1, 10), {}).status());
  ASSERT_OK(store_->CompleteTrial(trial.id, 0.5));
  EXPECT_EQ(store_->AddRefitRun(trial.id, kMaxFinalRefits, "{}", "/ckpt")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<RunRow> refits;
  for (int r = 0; r < 3; ++r) {
    ASSERT_OK_AND_ASSIGN(
        const RunRow run,
        store_->AddRefitRun(trial.id, r, absl::StrCat("{\"r\":", r, "}"),
                            "/ckpt"));
    EXPECT_EQ(run.fold, FinalRunFold(r));
    EXPECT_EQ(run.checkpoint_dir,
              r == 0 ? std::string("/ckpt/s/trial-0/lockbox")
                     : absl::StrCat("/ckpt/s/trial-0/lockbox-refit-", r));
    refits.push_back(run);
  }
  // Idempotent per refit.
  ASSERT_OK_AND_ASSIGN(const RunRow again,
                       store_->AddRefitRun(trial.id, 2, "{}", "/x"));
  EXPECT_EQ(again.id, refits[2].id);
  // The highest fold a schema allows: refit 15.
  ASSERT_OK(store_->AddRefitRun(trial.id, kMaxFinalRefits - 1, "{}", "/ckpt")
                .status());
  const RunRow a = Lease(), b = Lease();
  auto own = [](double sharpe) {
    RefitRow r;
    r.policy = Metrics(sharpe, 400);
    r.sharpe_se = 0.5;
    return r;
  };
  // No combined result while another refit is open.
  LockboxRow combined = Lockbox(1.5);
  combined.refits = 4;
  EXPECT_EQ(store_->CompleteRefit(a.id, kMember, own(1), combined, {}).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->CompleteRefit(a.id, kMember, own(1), std::nullopt, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<LockboxRow> lockbox,
                       store_->ListLockbox(study.id));
  EXPECT_TRUE(lockbox.empty());
  ASSERT_OK(store_->CompleteRefit(b.id, kMember, own(2), std::nullopt, {}));
  const RunRow c = Lease(), d = Lease();
  ASSERT_OK(store_->CompleteRefit(c.id, kMember, own(3), std::nullopt, {}));
  combined.refits = kMaxFinalRefits + 1;
  EXPECT_EQ(store_->CompleteRefit(d.id, kMember, own(4), combined, {}).code(),
            absl::StatusCode::kInvalidArgument);
  combined.refits = 4;
  ASSERT_OK(store_->CompleteRefit(d.id, kMember, own(4), combined,
                                  {{0, 0, 0, 0, "policy", "/refit", kSha}}));
  ASSERT_OK_AND_ASSIGN(lockbox, store_->ListLockbox(study.id));
  ASSERT_EQ(lockbox.size(), 1U);
  EXPECT_EQ(lockbox[0].run_id, d.id);
  EXPECT_EQ(lockbox[0].refits, 4);
  EXPECT_DOUBLE_EQ(lockbox[0].policy.sharpe, 1.5);
  ASSERT_OK_AND_ASSIGN(const std::vector<RefitRow> rows,
                       store_->ListRefits(study.id));
  ASSERT_EQ(rows.size(), 4U);
  std::vector<int> numbers;
  for (const RefitRow& r : rows) {
    EXPECT_EQ(r.trial_id, trial.id);
    EXPECT_EQ(r.policy.fold, FinalRunFold(r.refit));
    EXPECT_DOUBLE_EQ(r.sharpe_se, 0.5);
    EXPECT_EQ(r.policy.log_returns.size(), 3U);
    numbers.push_back(r.refit);
  }
  EXPECT_THAT(numbers, ::testing::ElementsAre(0, 1, 2, 15));
  ASSERT_OK_AND_ASSIGN(const std::vector<RefitRow> of_trial,
                       store_->ListTrialRefits(trial.id));
  EXPECT_EQ(of_trial.size(), 4U);
  ASSERT_OK_AND_ASSIGN(const std::vector<RefitRow> none,
                       store_->ListTrialRefits(999999));
  EXPECT_TRUE(none.empty());
  // A single final run's result still says one refit.
  const TrialRow single = Trial(study.id, 1);
  const RunRow cv2 = Lease();
  ASSERT_EQ(cv2.trial_id, single.id);
  ASSERT_OK(store_->CompleteRun(cv2.id, kMember, Metrics(1, 10), {}).status());
  ASSERT_OK(store_->CompleteTrial(single.id, 0.4));
  ASSERT_OK(store_->AddFinalRun(single.id, "{}", "/ckpt").status());
  const RunRow f = Lease();
  ASSERT_OK(store_->CompleteFinalRun(f.id, kMember, Lockbox(2), {}));
  ASSERT_OK_AND_ASSIGN(lockbox, store_->ListLockbox(study.id));
  ASSERT_EQ(lockbox.size(), 2U);
  EXPECT_EQ(lockbox[1].refits, 1);
  // ... and keeps its own row as refit 0.
  ASSERT_OK_AND_ASSIGN(const std::vector<RefitRow> single_refits,
                       store_->ListTrialRefits(single.id));
  ASSERT_EQ(single_refits.size(), 1U);
  EXPECT_EQ(single_refits[0].refit, 0);
  EXPECT_DOUBLE_EQ(single_refits[0].policy.sharpe, 2);
}

TEST_P(StoreContractTest, StudyFoldMetricsCountOnlyCompleteTrials) {
  const StudyRow study = RunningStudy("s");
  const TrialRow done = Trial(study.id, 1);
  const TrialRow pruned = Trial(study.id, 1);
  const RunRow a = Lease();
  const RunRow b = Lease();
  ASSERT_OK(store_->CompleteRun(a.id, kMember, Metrics(1, 10), {}).status());
  ASSERT_OK(store_->CompleteRun(b.id, kMember, Metrics(2, 10), {}).status());
  ASSERT_OK(store_->CompleteTrial(done.id, 1));
  ASSERT_OK(store_->PruneTrial(pruned.id));
  ASSERT_OK_AND_ASSIGN(const auto by_trial,
                       store_->ListStudyFoldMetrics(study.id));
  ASSERT_EQ(by_trial.size(), 1U);
  EXPECT_EQ(by_trial.begin()->first, done.id);
  EXPECT_EQ(store_->ListStudyFoldMetrics(study.id + 100).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreContractTest, IntermediatesOnlyFromTheHolderOnePerStep) {
  const StudyRow study = RunningStudy("s");
  const TrialRow t0 = Trial(study.id, 2);
  const TrialRow t1 = Trial(study.id, 1);
  const RunRow r00 = Lease();
  const RunRow r01 = Lease();
  const RunRow r10 = Lease();
  ASSERT_OK(store_->ReportIntermediate(r10.id, kMember, 100, 3.0));
  ASSERT_OK(store_->ReportIntermediate(r01.id, kMember, 200, 2.0));
  ASSERT_OK(store_->ReportIntermediate(r00.id, kMember, 200, 1.0));
  ASSERT_OK(store_->ReportIntermediate(r00.id, kMember, 100, 0.5));
  ASSERT_OK(store_->ReportIntermediate(r00.id, kMember, 200, 1.5));  // upsert
  EXPECT_EQ(store_->ReportIntermediate(r00.id, kOther, 300, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->ReportIntermediate(r00.id, kMember, -1, 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ReportIntermediate(999999, kMember, 1, 1).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const std::vector<IntermediateRow> rows,
                       store_->ListIntermediates(study.id));
  ASSERT_EQ(rows.size(), 4U);  // by trial, fold, step
  EXPECT_EQ(rows[0].run_id, r00.id);
  EXPECT_EQ(rows[0].step, 100);
  EXPECT_EQ(rows[1].step, 200);
  EXPECT_DOUBLE_EQ(rows[1].value, 1.5);
  EXPECT_EQ(rows[2].run_id, r01.id);
  EXPECT_EQ(rows[2].fold, 1);
  EXPECT_EQ(rows[3].trial_id, t1.id);
  EXPECT_EQ(rows[0].trial_id, t0.id);
  // Pruning keeps the values (the pruner compares with pruned trials).
  ASSERT_OK(store_->PruneTrial(t0.id));
  ASSERT_OK_AND_ASSIGN(const std::vector<IntermediateRow> kept,
                       store_->ListIntermediates(study.id));
  EXPECT_EQ(kept.size(), 4U);
  EXPECT_EQ(store_->ListIntermediates(study.id + 100).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(StoreContractTest, ReleaseLeasesRequeuesTheMembersRunsAtOnce) {
  const StudyRow study = RunningStudy("s");
  Trial(study.id, 2);
  const RunRow mine = Lease();
  const RunRow theirs = Lease(kOther);
  ASSERT_OK(store_->ReleaseLeases(kMember));
  ASSERT_OK_AND_ASSIGN(const RunRow a, store_->GetRun(mine.id));
  EXPECT_EQ(a.state, RunState::kQueued);
  EXPECT_EQ(a.attempts, 1);  // a released lease still counts
  EXPECT_FALSE(a.lease_expires_at.has_value());
  ASSERT_OK_AND_ASSIGN(const RunRow b, store_->GetRun(theirs.id));
  EXPECT_EQ(b.state, RunState::kLeased);
  EXPECT_EQ(Lease().attempts, 2);
}

// Issue 35, item 5: members not seen since the cut-off are deleted unless
// they ever held a lease (the lease history names them); a member seen
// after the cut-off stays; a forgotten member comes back as new.
TEST_P(StoreContractTest, ForgetMembersDeletesOnlyStaleMembersThatNeverLeased) {
  const StudyRow study = RunningStudy("s");
  Trial(study.id, 1);
  for (const char* id : {"flood-1", "flood-2", "actor-ok"}) {
    MemberRow m;
    m.id = id;
    m.kind = "actor";
    ASSERT_OK(store_->UpsertMember(m));
  }
  const RunRow leased = Lease(kMember);  // kMember holds a lease
  EXPECT_EQ(leased.member_id, kMember);
  // Nothing was last seen an hour ago.
  ASSERT_OK_AND_ASSIGN(int64_t forgotten,
                       store_->ForgetMembers(absl::Now() - absl::Hours(1)));
  EXPECT_EQ(forgotten, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<MemberRow> members, store_->ListMembers());
  EXPECT_EQ(members.size(), 4U);
  // A cut-off after every upsert: the three that never leased go, the
  // lease holder stays, ...
  ASSERT_OK_AND_ASSIGN(forgotten,
                       store_->ForgetMembers(absl::Now() + absl::Hours(1)));
  EXPECT_EQ(forgotten, 3);
  ASSERT_OK_AND_ASSIGN(members, store_->ListMembers());
  ASSERT_EQ(members.size(), 1U);
  EXPECT_EQ(members[0].id, kMember);
  EXPECT_EQ(store_->GetMember("flood-1").status().code(),
            absl::StatusCode::kNotFound);
  // ... also after its run is done (the lease history still names it).
  ASSERT_OK(
      store_->CompleteRun(leased.id, kMember, Metrics(1, 10), {}).status());
  ASSERT_OK_AND_ASSIGN(forgotten,
                       store_->ForgetMembers(absl::Now() + absl::Hours(1)));
  EXPECT_EQ(forgotten, 0);
  // A forgotten member registers again.
  MemberRow back;
  back.id = "flood-1";
  back.kind = "actor";
  ASSERT_OK(store_->UpsertMember(back));
  ASSERT_OK_AND_ASSIGN(const MemberRow got, store_->GetMember("flood-1"));
  EXPECT_EQ(got.kind, "actor");
}

TEST_P(StoreContractTest, DatasetsMembersAndResultsRoundTrip) {
  DatasetRow d;
  d.id = "abc";
  d.path = "/d/abc.rds";
  d.symbols = "BTC,ETH";
  d.rows = 100;
  d.interval_seconds = 60;
  ASSERT_OK(store_->PutDataset(d));
  d.path = "/d/moved.rds";
  ASSERT_OK(store_->PutDataset(d));  // upsert
  ASSERT_OK_AND_ASSIGN(const DatasetRow got, store_->GetDataset("abc"));
  EXPECT_EQ(got.path, "/d/moved.rds");
  EXPECT_EQ(got.symbols, "BTC,ETH");
  EXPECT_EQ(got.rows, 100);
  EXPECT_EQ(store_->GetDataset("zzz").status().code(),
            absl::StatusCode::kNotFound);
  d.id = "";
  EXPECT_EQ(store_->PutDataset(d).code(), absl::StatusCode::kInvalidArgument);
  d.id = "neg";
  d.rows = -1;
  EXPECT_EQ(store_->PutDataset(d).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(const std::vector<DatasetRow> datasets,
                       store_->ListDatasets());
  EXPECT_EQ(datasets.size(), 1U);

  MemberRow m;
  m.id = "learner-1";
  m.kind = "learner";
  m.address = "host:1";
  m.capacity_json = "{\"slots\":2}";
  ASSERT_OK(store_->UpsertMember(m));
  ASSERT_OK_AND_ASSIGN(std::vector<MemberRow> members, store_->ListMembers());
  ASSERT_EQ(members.size(), 1U);
  const absl::Time first_seen = members[0].first_seen;
  m.address = "host:2";
  m.capacity_json = "";
  ASSERT_OK(store_->UpsertMember(m));
  m.id = "actor-1";
  m.kind = "actor";
  ASSERT_OK(store_->UpsertMember(m));
  m.kind = "robot";
  EXPECT_EQ(store_->UpsertMember(m).code(), absl::StatusCode::kInvalidArgument);
  m.id = "";
  m.kind = "actor";
  EXPECT_EQ(store_->UpsertMember(m).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(members, store_->ListMembers());
  ASSERT_EQ(members.size(), 2U);  // by id
  EXPECT_EQ(members[0].id, "actor-1");
  EXPECT_EQ(members[1].address, "host:2");
  EXPECT_EQ(members[1].capacity_json, "{}");
  EXPECT_EQ(members[1].first_seen, first_seen);
  EXPECT_GE(members[1].last_seen, first_seen);
  // One member by id: the row ListMembers has, whatever its kind.
  ASSERT_OK_AND_ASSIGN(const MemberRow learner, store_->GetMember("learner-1"));
  EXPECT_EQ(learner.kind, "learner");
  EXPECT_EQ(learner.address, "host:2");
  EXPECT_EQ(learner.capacity_json, "{}");
  EXPECT_EQ(learner.first_seen, first_seen);
  EXPECT_EQ(learner.last_seen, members[1].last_seen);
  ASSERT_OK_AND_ASSIGN(const MemberRow actor, store_->GetMember("actor-1"));
  EXPECT_EQ(actor.kind, "actor");
  EXPECT_EQ(store_->GetMember("learner-2").status().code(),
            absl::StatusCode::kNotFound);
  // An actor naming itself after a learner changes nothing of its row
  // (address, capacity: a learner's incarnation lives there); a learner may
  // take an id an actor used.
  MemberRow impostor;
  impostor.id = "learner-1";
  impostor.kind = "actor";
  EXPECT_EQ(store_->UpsertMember(impostor).code(),
            absl::StatusCode::kAlreadyExists);
  MemberRow learner_after_actor = m;
  learner_after_actor.id = "actor-1";
  learner_after_actor.kind = "learner";
  learner_after_actor.address = "host:3";
  ASSERT_OK(store_->UpsertMember(learner_after_actor));
  ASSERT_OK_AND_ASSIGN(const MemberRow was_actor, store_->GetMember("actor-1"));
  EXPECT_EQ(was_actor.kind, "learner");
  EXPECT_EQ(was_actor.address, "host:3");
  ASSERT_OK_AND_ASSIGN(const MemberRow still_learner,
                       store_->GetMember("learner-1"));
  EXPECT_EQ(still_learner.kind, "learner");
  EXPECT_EQ(still_learner.address, "host:2");

  const StudyRow study = RunningStudy("s");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> result,
                       store_->GetStudyResult(study.id));
  EXPECT_FALSE(result.has_value());
  ASSERT_OK(store_->PutStudyResult(study.id, "{\"v\":1}"));
  ASSERT_OK(store_->PutStudyResult(study.id, "{\"v\":2}"));
  ASSERT_OK_AND_ASSIGN(result, store_->GetStudyResult(study.id));
  EXPECT_EQ(result.value_or(""), "{\"v\":2}");
  EXPECT_EQ(store_->PutStudyResult(study.id + 100, "{}").code(),
            absl::StatusCode::kNotFound);
  // Two reads that answer for an unknown study instead of kNotFound.
  ASSERT_OK_AND_ASSIGN(result, store_->GetStudyResult(study.id + 100));
  EXPECT_FALSE(result.has_value());
  ASSERT_OK_AND_ASSIGN(const int64_t open,
                       store_->CountOpenRuns(study.id + 100));
  EXPECT_EQ(open, 0);
}

TEST_P(StoreContractTest, ConcurrentLeasersAndCompletersNeverShareARun) {
  const StudyRow study = RunningStudy("race");
  std::set<int64_t> trial_ids;
  for (int t = 0; t < 6; ++t) trial_ids.insert(Trial(study.id, 3).id);
  constexpr int kThreads = 4;
  std::vector<std::shared_ptr<Store>> stores;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Store> store, StoreForThread());
    stores.push_back(std::move(store));
  }
  // Per thread: (run id, "every run of its trial done?").
  std::vector<std::vector<std::pair<int64_t, bool>>> completed(kThreads);
  std::vector<absl::Status> errors(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const std::string member = absl::StrCat("learner-", i);
      for (;;) {
        absl::StatusOr<std::optional<RunRow>> run =
            stores[i]->LeaseRun(member, absl::Minutes(5));
        if (!run.ok()) {
          errors[i] = run.status();
          return;
        }
        if (!run->has_value()) return;
        absl::StatusOr<bool> all_done =
            stores[i]->CompleteRun((*run)->id, member, Metrics(1, 10), {});
        if (!all_done.ok()) {
          errors[i] = all_done.status();
          return;
        }
        completed[i].emplace_back((*run)->id, *all_done);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int64_t> runs;
  int trials_done = 0;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(errors[i].ok()) << errors[i];
    for (const auto& [run_id, all_done] : completed[i]) {
      EXPECT_TRUE(runs.insert(run_id).second) << "run " << run_id << " twice";
      trials_done += all_done ? 1 : 0;
    }
  }
  EXPECT_EQ(runs.size(), 18U);
  EXPECT_EQ(trials_done, 6);  // exactly one "all done" per trial
  for (const int64_t trial_id : trial_ids) {
    ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> rows,
                         store_->ListRuns(trial_id));
    for (const RunRow& r : rows) {
      EXPECT_EQ(r.state, RunState::kDone);
      EXPECT_EQ(r.attempts, 1);
    }
  }
}

// One backend per binary, so ctest names never collide.
#if RISTRETTO_CONTRACT_WITH_POSTGRES
INSTANTIATE_TEST_SUITE_P(Postgres, StoreContractTest,
                         ::testing::Values(Backend::kPostgres), BackendName);
#else
INSTANTIATE_TEST_SUITE_P(InMemory, StoreContractTest,
                         ::testing::Values(Backend::kInMemory), BackendName);
#endif

}  // namespace
}  // namespace ristretto::coordinator
