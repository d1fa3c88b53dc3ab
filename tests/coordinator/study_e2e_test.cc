// A whole study with real processes: PostgreSQL (started by the harness),
// ristretto-coordinator, ristretto-learner and ristretto-actor processes on
// 127.0.0.1, real files. Then the same with the learner killed (-9), the
// coordinator killed and restarted, and PostgreSQL restarted mid-study.
#include <torch/script.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/artifact_hash.h"
#include "coordinator/store/store.h"
#include "gtest/gtest.h"
#include "learner/contract.h"
#include "learner/service/coordinator_agent.h"
#include "tests/common/log_lines.h"
#include "tests/coordinator_store/pg_test_env.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"

namespace ristretto::coordinator {
namespace {

namespace fs = std::filesystem;
using ::ristretto::testing::CoordinatedActorArgv;
using ::ristretto::testing::CoordinatedLearnerArgv;
using ::ristretto::testing::CoordinatorArgv;
using ::ristretto::testing::LogsOf;
using ::ristretto::testing::PollUntil;
using ::ristretto::testing::Process;
using ::ristretto::testing::Terminate;
using ::ristretto::testing::TinyStudy;
using ::ristretto::testing::TinyStudyYaml;
using namespace std::chrono_literals;

// 3 trials × 1 holdout fold × 16384 env steps, 32×32 nets: seconds per run.
std::string E2eStudy() {
  TinyStudy study;
  study.name = "e2e";
  study.max_trials = 3;
  study.concurrency = 2;
  study.budget_env_steps = 16384;
  study.predictability = 0.5;
  study.max_attempts = 4;
  study.search_gamma = true;
  return TinyStudyYaml(study);
}

std::string Address(Process& p) {
  return tests::WaitForListeningAddress(p, 60s);
}

// The env steps of the checkpoint LATEST points to in `run_dir`
// ("step-<n>"); -1 if there is none (yet).
int64_t LatestCheckpointStep(const std::string& run_dir) {
  std::ifstream in(run_dir + "/LATEST");
  std::string name;
  std::smatch m;
  if (!std::getline(in, name) ||
      !std::regex_search(name, m, std::regex("^step-0*([0-9]+)$"))) {
    return -1;
  }
  return std::stoll(m[1].str());
}

// 16384 env steps per run (kStudy's budget_env_steps).
constexpr int64_t kBudgetEnvSteps = 16384;

class StudyEndToEndTest : public testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> dir = testing::MakeTempDir("ristretto_e2e_");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    absl::StatusOr<std::unique_ptr<Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    absl::StatusOr<StudyRow> study = store_->CreateStudy("e2e", E2eStudy());
    ASSERT_TRUE(study.ok()) << study.status();
    study_id_ = study->id;
    ASSERT_TRUE(store_->SetStudyState(study_id_, StudyState::kRunning).ok());
  }
  void TearDown() override {
    actors_.clear();
    learner_.reset();
    coordinator_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // The first start picks a free port; restarts reuse it, as a restarted
  // service at a fixed address would (actors and learners keep the address).
  void StartCoordinator() {
    const std::string port =
        coordinator_address_.empty()
            ? "0"
            : coordinator_address_.substr(coordinator_address_.rfind(':') + 1);
    coordinator_ = std::make_unique<Process>(
        CoordinatorArgv(RISTRETTO_COORDINATOR_BINARY, dsn(),
                        dir_ + "/coordinator", {"--lease-ttl-s", "3"}, port),
        absl::StrCat(dir_, "/coordinator-", ++starts_, ".log"));
    coordinator_address_ = Address(*coordinator_);
    ASSERT_FALSE(coordinator_address_.empty()) << coordinator_->Log();
  }
  void StartLearner() {
    learner_ = std::make_unique<Process>(
        CoordinatedLearnerArgv(RISTRETTO_LEARNER_BINARY, coordinator_address_,
                               dir_ + "/learner", {"--slots", "2"}),
        absl::StrCat(dir_, "/learner-", ++starts_, ".log"));
    ASSERT_FALSE(Address(*learner_).empty()) << learner_->Log();
  }
  void StartActors(int n) {
    for (int i = 0; i < n; ++i) {
      actors_.push_back(std::make_unique<Process>(
          CoordinatedActorArgv(RISTRETTO_ACTOR_BINARY, coordinator_address_,
                               absl::StrCat("actor-", i),
                               dir_ + "/actor-cache"),
          absl::StrCat(dir_, "/actor-", i, ".log")));
    }
  }
  // Polls the study until done or stopped (or `timeout`); returns the last
  // state seen (kCreated if it could never be read).
  StudyState WaitDone(std::chrono::seconds timeout) {
    StudyState state = StudyState::kCreated;
    PollUntil(
        [&] {
          absl::StatusOr<StudyRow> row = store_->GetStudyById(study_id_);
          if (row.ok()) state = row->state;
          return state == StudyState::kDone || state == StudyState::kStopped;
        },
        timeout, 300ms);
    return state;
  }
  std::string Logs() {
    return LogsOf(
        {{"coordinator", coordinator_.get()}, {"learner", learner_.get()}});
  }

  // Every trial complete with a finite score; two done runs each (its fold
  // and its final run on the lockbox), one fold_metrics row, one lockbox
  // result, and a policy artifact per run that matches its hash.
  void ExpectCompleteStudy() {
    absl::StatusOr<std::vector<TrialRow>> trials =
        store_->ListTrials(study_id_);
    ASSERT_TRUE(trials.ok()) << trials.status();
    ASSERT_EQ(trials->size(), 3u);
    for (const TrialRow& t : *trials) {
      EXPECT_EQ(t.state, TrialState::kComplete)
          << "trial " << t.number << " " << t.fail_reason;
      ASSERT_TRUE(t.score.has_value());
      EXPECT_TRUE(std::isfinite(*t.score));
      EXPECT_EQ(t.params.size(), 2u);  // learning_rate, gamma
      absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(t.id);
      ASSERT_TRUE(runs.ok());
      ASSERT_EQ(runs->size(), 2u);
      for (const RunRow& r : *runs) EXPECT_EQ(r.state, RunState::kDone);
      absl::StatusOr<std::vector<FoldMetrics>> folds =
          store_->ListFoldMetrics(t.id);
      ASSERT_TRUE(folds.ok());
      ASSERT_EQ(folds->size(), 1u);
      // The best checkpoint's steps (validated every 4096).
      EXPECT_GE((*folds)[0].env_steps, 4096);
      EXPECT_FALSE((*folds)[0].log_returns.empty());
      // The default objective: the fold's Sharpe.
      EXPECT_NEAR(*t.score, (*folds)[0].sharpe, 1e-9);
      absl::StatusOr<std::vector<ArtifactRow>> artifacts =
          store_->ListArtifacts(t.id);
      ASSERT_TRUE(artifacts.ok());
      int policies = 0;
      for (const ArtifactRow& a : *artifacts) {
        if (a.kind != "policy") continue;
        ++policies;
        absl::StatusOr<std::string> sha = PolicyArtifactSha256(a.path);
        ASSERT_TRUE(sha.ok()) << sha.status();
        EXPECT_EQ(*sha, a.sha256);
      }
      EXPECT_EQ(policies, 2);
    }
    absl::StatusOr<std::vector<LockboxRow>> lockbox =
        store_->ListLockbox(study_id_);
    ASSERT_TRUE(lockbox.ok());
    ASSERT_EQ(lockbox->size(), 3u);
    for (const LockboxRow& l : *lockbox) {
      EXPECT_GT(l.bars, 10);
      EXPECT_EQ(static_cast<int64_t>(l.policy.log_returns.size()), l.bars);
      EXPECT_TRUE(std::isfinite(l.policy.sharpe));
      EXPECT_GT(l.sharpe_se, 0);
      EXPECT_EQ(l.random_seeds, 20);
    }
    absl::StatusOr<std::optional<std::string>> result =
        store_->GetStudyResult(study_id_);
    ASSERT_TRUE(result.ok() && result->has_value());
    EXPECT_NE((*result)->find("\"verdict\""), std::string::npos);
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
  int64_t study_id_ = 0;
  int starts_ = 0;
  std::string coordinator_address_;
  std::unique_ptr<Process> coordinator_, learner_;
  std::vector<std::unique_ptr<Process>> actors_;
};

TEST_F(StudyEndToEndTest, SmallStudyCompletesAndBestPolicyLoads) {
  StartCoordinator();
  StartLearner();
  StartActors(2);
  ASSERT_EQ(WaitDone(240s), StudyState::kDone) << Logs();
  ExpectCompleteStudy();

  // Export the best policy with the real CLI; it loads and its contract
  // describes this dataset (2 assets × 14 features, lookback 1).
  const std::string out = dir_ + "/best";
  Process exporter({RISTRETTO_CLI_BINARY, "study", "export", "e2e", "--db",
                    dsn(), "--out", out},
                   dir_ + "/export.log");
  ASSERT_EQ(exporter.Wait(60s), 0) << exporter.Log();
  std::ifstream contract_file(out + "/contract.json");
  std::stringstream json;
  json << contract_file.rdbuf();
  absl::StatusOr<learner::PolicyContract> contract =
      learner::PolicyContract::FromJson(json.str());
  ASSERT_TRUE(contract.ok()) << contract.status();
  EXPECT_EQ(contract->action_size, 2);
  EXPECT_EQ(contract->obs_size, 1 + 2 + 2 * 14);
  EXPECT_TRUE(learner::CheckContract(*contract, *contract, true).ok());
  torch::jit::Module policy = torch::jit::load(out + "/policy.pt");
  torch::Tensor action =
      policy.forward({torch::zeros({3, contract->obs_size})}).toTensor();
  EXPECT_EQ(action.size(0), 3);
  EXPECT_EQ(action.size(1), 2);
  EXPECT_LE(action.abs().max().item<float>(), 1.0f);

  // Clean shutdown of every process on SIGTERM.
  for (auto& a : actors_) a->Signal(SIGTERM);
  for (auto& a : actors_) EXPECT_EQ(a->Wait(30s), 0) << a->Log();
  EXPECT_EQ(Terminate(*learner_, 60s).exit_code, 0) << learner_->Log();
  EXPECT_EQ(Terminate(*coordinator_, 30s).exit_code, 0) << coordinator_->Log();
}

// Whether every thread of process `pid` is stopped (state T in
// /proc/<pid>/task/<tid>/stat): SIGSTOP returns before the process has
// stopped, and each thread stops on its own.
bool AllThreadsStopped(pid_t pid) {
  std::error_code ec;
  const fs::path tasks = fs::path("/proc") / std::to_string(pid) / "task";
  int threads = 0;
  for (const fs::directory_entry& task : fs::directory_iterator(tasks, ec)) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    // "tid (comm) S ...": the state follows the last ')' (comm may hold
    // spaces and parentheses). 't' is a stop under a tracer (gdb, strace
    // -f): a thread stopped by SIGSTOP shows it when traced.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return false;
    const char state = stat[close + 2];
    if (state != 'T' && state != 't') return false;
    ++threads;
  }
  return !ec && threads > 0;
}

TEST_F(StudyEndToEndTest, SurvivesLearnerKillCoordinatorRestartAndDbRestart) {
  StartCoordinator();
  StartLearner();
  StartActors(2);
  // Kill the learner (-9) once a run it leases has a checkpoint on disk
  // that is past the first evaluation and short of the budget. No timing
  // window: the runs are looked at with the learner running (it trains at
  // full speed between looks) and, once one qualifies, looked at again
  // with the learner frozen (SIGSTOP, every thread seen stopped), so
  // nothing moves between that check and the kill; a frozen run whose
  // newest checkpoint is short of the budget cannot have completed either
  // (a run checkpoints its final step before it reports completion). Every
  // run checkpoints at 4096, 8192 and 12288 steps, so such a moment exists
  // for three quarters of each run's training; the deadline only catches a
  // study that hangs.
  const auto deadline = std::chrono::steady_clock::now() + 150s;
  int64_t killed_run = -1;
  int64_t killed_at_step = -1;
  int killed_attempts = 0;
  std::string seen;  // the last look at the runs, for the failure message
  // One look at the runs: the first that qualifies into killed_*.
  auto look = [&] {
    seen.clear();
    absl::StatusOr<std::vector<TrialRow>> trials =
        store_->ListTrials(study_id_);
    if (!trials.ok()) return false;
    for (const TrialRow& t : *trials) {
      absl::StatusOr<std::vector<RunRow>> runs = store_->ListRuns(t.id);
      if (!runs.ok()) continue;
      for (const RunRow& r : *runs) {
        const int64_t step = LatestCheckpointStep(r.checkpoint_dir);
        absl::StrAppend(&seen, "  run ", r.id, " trial ", t.number, " fold ",
                        r.fold, ": ", ToString(r.state), ", ", r.env_steps,
                        " steps reported, checkpoint at ", step, "\n");
        if (killed_run < 0 && r.state == RunState::kLeased && step >= 4096 &&
            step < kBudgetEnvSteps) {
          killed_run = r.id;
          killed_at_step = step;
          killed_attempts = r.attempts;
        }
      }
    }
    return killed_run >= 0;
  };
  while (std::chrono::steady_clock::now() < deadline) {
    ASSERT_FALSE(learner_->Wait(0ms).has_value()) << Logs();
    if (!look()) {
      std::this_thread::sleep_for(20ms);  // poll interval, not a wait
      continue;
    }
    learner_->Signal(SIGSTOP);
    // Also ends if the learner died meanwhile (its log says why).
    ASSERT_TRUE(PollUntil(
        [&] {
          return AllThreadsStopped(learner_->pid()) ||
                 learner_->Wait(0ms).has_value();
        },
        10s, 1ms))
        << "the learner did not stop on SIGSTOP\n"
        << Logs();
    ASSERT_FALSE(learner_->Wait(0ms).has_value()) << Logs();
    killed_run = -1;
    if (look()) break;  // frozen: killed below
    learner_->Signal(SIGCONT);
  }
  ASSERT_GE(killed_run, 0) << "no leased run with a checkpoint in [4096, "
                           << kBudgetEnvSteps
                           << ") steps within 150 s; last seen:\n"
                           << seen << Logs();
  learner_->Signal(SIGKILL);
  ASSERT_TRUE(learner_->Wait(30s).has_value());
  coordinator_->Signal(SIGKILL);
  ASSERT_TRUE(coordinator_->Wait(30s).has_value());
  {
    // The kill really came mid-run: the run is not done (it is leased, or
    // queued again if its lease already ran out).
    absl::StatusOr<RunRow> run = store_->GetRun(killed_run);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_NE(run->state, RunState::kDone) << seen;
  }
  // PostgreSQL restarts while nobody is connected but the test's store.
  ASSERT_TRUE(cluster().Restart().ok());
  StartCoordinator();
  StartLearner();
  // And once more while the coordinator and learner are connected: after
  // the new learner has registered (through the coordinator, in the
  // database).
  ASSERT_TRUE(learner_->WaitForLog("registered with", 60s)) << Logs();
  ASSERT_TRUE(cluster().Restart().ok());
  ASSERT_EQ(WaitDone(240s), StudyState::kDone) << Logs();
  ExpectCompleteStudy();
  // The killed runs were leased again (their leases expired).
  absl::StatusOr<std::vector<TrialRow>> trials = store_->ListTrials(study_id_);
  ASSERT_TRUE(trials.ok());
  absl::StatusOr<RunRow> killed = store_->GetRun(killed_run);
  ASSERT_TRUE(killed.ok());
  EXPECT_GT(killed->attempts, killed_attempts);
  EXPECT_EQ(killed->state, RunState::kDone);
  // The second learner resumed it from its checkpoint, not from step 0.
  absl::StatusOr<TrialRow> trial = store_->GetTrial(killed->trial_id);
  ASSERT_TRUE(trial.ok());
  const std::string name = absl::StrCat(
      "e2e/trial-", trial->number,
      killed->fold == kLockboxFold ? std::string("/lockbox")
                                   : absl::StrCat("/fold-", killed->fold));
  std::smatch m;
  const std::string log = learner_->Log();
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex("hosting " + name + " \\(attempt [0-9]+, from step ([0-9]+)")))
      << log;
  EXPECT_GE(std::stoll(m[1].str()), 4096) << log;
  // At least the checkpoint it was killed after (it is kept: the newest two
  // are).
  EXPECT_GE(std::stoll(m[1].str()), killed_at_step) << log;
}

}  // namespace
}  // namespace ristretto::coordinator
