// End-to-end tests of `ristretto study …` and `ristretto dataset ls|import
// --db`: the real binary against a real PostgreSQL server (PgCluster), with
// trials, runs, fold metrics and artifacts filled through the Store as a
// coordinator and a learner would.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/study_views.h"
#include "cli/table.h"
#include "common/sha256.h"
#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/study.h"
#include "tests/cli/run_command.h"
#include "tests/coordinator_store/pg_test_env.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using coordinator::ArtifactRow;
using coordinator::FoldMetrics;
using coordinator::ParamRow;
using coordinator::RunRow;
using coordinator::Store;
using coordinator::TrialRow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = ristretto::test_util::CommandResult;
using ristretto::test_util::RunCommand;

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// Runs the binary with `env` prepended (e.g. "RISTRETTO_DB=…").
Result RunCli(const std::string& args, const std::string& env = "") {
  const std::string command = absl::StrCat(
      "env -u RISTRETTO_DB ", env, " ", RISTRETTO_BINARY, " ", args, " 2>&1");
  return RunCommand(command);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

// The lines of `text` that contain `needle`.
std::vector<std::string> LinesWith(const std::string& text,
                                   const std::string& needle) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StrContains(line, needle)) lines.emplace_back(line);
  }
  return lines;
}

// A small valid study file named `name` on the synthetic market.
std::string StudyYaml(const std::string& name, int max_trials) {
  return absl::StrCat("name: ", name, R"(
dataset:
  synthetic: {rows: 3000, assets: 2, seed: 7}
cv: {scheme: walk_forward, train_bars: 1600, test_bars: 600, step_bars: 600}
budget_env_steps: 20000
sampler: {type: random, seed: 3}
concurrency: 2
max_trials: )",
                      max_trials, R"(
space:
  learning_rate: {type: float, low: 1.0e-6, high: 1.0e-3, log: true}
  batch_size: {type: categorical, choices: [2048, 4096, 8192]}
)");
}

// Each test: its own database on the shared server, its own directory.
class StudyCliTest : public coordinator::testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> dir =
        coordinator::testing::MakeTempDir("ristretto-study-cli-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    absl::StatusOr<std::unique_ptr<Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string DbEnv() const {
    return absl::StrCat("RISTRETTO_DB=", ShellQuote(dsn()));
  }

  Result Cli(const std::string& args) { return RunCli(args, DbEnv()); }

  // Creates study `name` through the binary and starts it.
  void CreateAndStart(const std::string& name, int max_trials) {
    const std::string file = absl::StrCat(dir_, "/", name, ".yaml");
    WriteFile(file, StudyYaml(name, max_trials));
    const Result created = Cli(absl::StrCat("study create ", file));
    ASSERT_EQ(created.exit_code, 0) << created.output;
    const Result started = Cli(absl::StrCat("study start ", name));
    ASSERT_EQ(started.exit_code, 0) << started.output;
  }

  // A policy directory as learner::ExportPolicy writes it, with bytes that
  // depend on `tag`; returns its path.
  std::string WritePolicyDir(const std::string& tag) {
    std::string dir = absl::StrCat(dir_, "/policies/", tag);
    fs::create_directories(dir);
    WriteFile(dir + "/contract.json",
              absl::StrCat("{\"contract_version\":1,\"tag\":\"", tag, "\"}"));
    const size_t seed = std::hash<std::string>()(tag);
    std::string weights(4096, '\0');
    for (size_t i = 0; i < weights.size(); ++i) {
      weights[i] = static_cast<char>((i * 31 + seed) % 251);
    }
    WriteFile(dir + "/policy.pt", weights);
    return dir;
  }

  static std::string DirSha256(const std::string& dir) {
    Sha256 hash;
    hash.Update(ReadBytes(dir + "/contract.json"));
    hash.Update(ReadBytes(dir + "/policy.pt"));
    return Sha256::ToHex(hash.Finish());
  }

  // As the coordinator and a learner would: a trial with `folds` runs, each
  // leased and completed with its metrics and a policy artifact; then the
  // trial completes with `score`. Returns the trial.
  // With `with_final_run` false the trial gets no final run (the caller
  // adds its refits).
  TrialRow CompleteTrial(int64_t study_id, const std::vector<ParamRow>& params,
                         int folds, double score, bool with_final_run = true) {
    const std::vector<std::string> configs(folds, "{}");
    absl::StatusOr<TrialRow> trial =
        store_->CreateTrial(study_id, params, configs, dir_ + "/checkpoints");
    EXPECT_TRUE(trial.ok()) << trial.status();
    for (int k = 0; k < folds; ++k) {
      absl::StatusOr<std::optional<RunRow>> run =
          store_->LeaseRun("learner-test", absl::Minutes(5));
      EXPECT_TRUE(run.ok() && run->has_value()) << run.status();
      if (!run.ok() || !run->has_value()) return *trial;
      const RunRow& r = **run;
      EXPECT_EQ(r.trial_id, trial->id);
      FoldMetrics m;
      m.sharpe = score + 1.0 + 0.25 * r.fold;
      m.benchmark_sharpe = 0.5;
      m.sortino = 2.0;
      m.max_drawdown = 0.125;
      m.calmar = 3.0;
      m.total_return = 0.0625;
      m.benchmark_return = 0.03125;
      m.trades = 40 + r.fold;
      m.env_steps = 20000;
      // What the learner reports: 256 · (fold + 1) of 20,480 dropped.
      m.env_steps_received = 20480;
      m.env_steps_dropped = 256 * (r.fold + 1);
      const std::string policy =
          WritePolicyDir(absl::StrCat("trial", trial->number, "-fold", r.fold));
      ArtifactRow artifact;
      artifact.kind = "policy";
      artifact.path = policy;
      artifact.sha256 = DirSha256(policy);
      absl::StatusOr<bool> all_done =
          store_->CompleteRun(r.id, "learner-test", m, {artifact});
      EXPECT_TRUE(all_done.ok()) << all_done.status();
    }
    EXPECT_TRUE(store_->CompleteTrial(trial->id, score).ok());
    if (!with_final_run) return *store_->GetTrial(trial->id);
    // The final run: refit and evaluated on the lockbox (Sharpe score + 2).
    absl::StatusOr<RunRow> final_run =
        store_->AddFinalRun(trial->id, "{}", dir_ + "/checkpoints");
    EXPECT_TRUE(final_run.ok()) << final_run.status();
    absl::StatusOr<std::optional<RunRow>> leased =
        store_->LeaseRun("learner-test", absl::Minutes(5));
    EXPECT_TRUE(leased.ok() && leased->has_value());
    if (leased.ok() && leased->has_value()) {
      EXPECT_EQ((*leased)->fold, coordinator::kLockboxFold);
      coordinator::LockboxRow l;
      l.bars = 300;
      l.policy.sharpe = score + 2;
      l.sharpe_se = 1.5;
      l.policy.total_return = 0.01;
      l.bh_sharpe = 0.25;
      l.random_seeds = 20;
      const std::string policy =
          WritePolicyDir(absl::StrCat("trial", trial->number, "-lockbox"));
      ArtifactRow artifact;
      artifact.kind = "policy";
      artifact.path = policy;
      artifact.sha256 = DirSha256(policy);
      EXPECT_TRUE(
          store_->CompleteFinalRun((*leased)->id, "learner-test", l, {artifact})
              .ok());
    }
    return *store_->GetTrial(trial->id);
  }

  // A trial whose fold 1 fails with `reason`.
  TrialRow FailedTrial(int64_t study_id, const std::vector<ParamRow>& params,
                       const std::string& reason) {
    absl::StatusOr<TrialRow> trial = store_->CreateTrial(
        study_id, params, {"{}", "{}"}, dir_ + "/checkpoints");
    EXPECT_TRUE(trial.ok()) << trial.status();
    // Lease until fold 1 comes; failing it cancels the other run.
    for (int k = 0; k < 2; ++k) {
      absl::StatusOr<std::optional<RunRow>> run =
          store_->LeaseRun("learner-test", absl::Minutes(5));
      EXPECT_TRUE(run.ok() && run->has_value()) << run.status();
      if (!run.ok() || !run->has_value()) break;
      if ((*run)->fold == 1) {
        EXPECT_TRUE(store_->FailRun((*run)->id, "learner-test", reason).ok());
        break;
      }
    }
    return *store_->GetTrial(trial->id);
  }

  // Study `name` with trials 0 (score 0.5), 1 (score 0.9, the best) and
  // 2 (failed on fold 1), two folds each.
  int64_t StudyWithThreeTrials(const std::string& name) {
    CreateAndStart(name, 3);
    absl::StatusOr<coordinator::StudyRow> study = store_->GetStudy(name);
    EXPECT_TRUE(study.ok()) << study.status();
    CompleteTrial(study->id,
                  {{"batch_size", "4096"}, {"learning_rate", "0.0003"}}, 2,
                  0.5);
    CompleteTrial(study->id,
                  {{"batch_size", "8192"}, {"learning_rate", "0.0001"}}, 2,
                  0.9);
    FailedTrial(study->id, {{"batch_size", "2048"}, {"learning_rate", "0.001"}},
                "loss is NaN");
    return study->id;
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
};

// ---- helpers linked into this binary (no database) ------------------------

TEST(RedactDsnTest, MasksThePasswordInEveryDsnForm) {
  EXPECT_EQ(ops::RedactDsn("host=db user=u password=s3cret dbname=x"),
            "host=db user=u password=*** dbname=x");
  EXPECT_EQ(ops::RedactDsn("password='a b' host=db"), "password='***' host=db");
  EXPECT_EQ(ops::RedactDsn("postgresql://u:s3cret@db:5432/x"),
            "postgresql://u:***@db:5432/x");
  EXPECT_EQ(ops::RedactDsn("postgresql:///x?host=/run&password=s3cret"),
            "postgresql:///x?host=/run&password=***");
  EXPECT_EQ(ops::RedactDsn("host=db password = 'it\\'s' user=u"),
            "host=db password = '***' user=u");
  EXPECT_EQ(ops::RedactDsn("postgresql://u:p%40ss@db/x?sslmode=require"),
            "postgresql://u:***@db/x?sslmode=require");
  EXPECT_EQ(ops::RedactDsn("host=/run/pg dbname=x"), "host=/run/pg dbname=x");
  EXPECT_EQ(ops::RedactDsn("host=/run/pg passwordfile=/x"),
            "host=/run/pg passwordfile=/x");
  EXPECT_EQ(ops::RedactDsn("postgresql://u@db/x"), "postgresql://u@db/x");
}

TEST(ArtifactSha256Test, DirectoryHashesContractThenPolicyBytes) {
  absl::StatusOr<std::string> dir =
      coordinator::testing::MakeTempDir("ristretto-artifact-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  WriteFile(*dir + "/contract.json", "{\"v\":1}");
  WriteFile(*dir + "/policy.pt", std::string("\0weights\xff", 9));
  WriteFile(*dir + "/notes.txt", "not part of the hash");
  const std::string expected =
      Sha256::ToHex(Sha256::Hash(std::string("{\"v\":1}\0weights\xff", 16)));
  absl::StatusOr<std::string> sha = ops::ArtifactSha256(*dir);
  ASSERT_TRUE(sha.ok()) << sha.status();
  EXPECT_EQ(*sha, expected);

  // A file hashes as its bytes.
  absl::StatusOr<std::string> file = ops::ArtifactSha256(*dir + "/policy.pt");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file,
            Sha256::ToHex(Sha256::Hash(std::string("\0weights\xff", 9))));

  fs::remove(*dir + "/policy.pt");
  EXPECT_EQ(ops::ArtifactSha256(*dir).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ops::ArtifactSha256(*dir + "/missing").status().code(),
            absl::StatusCode::kNotFound);
  fs::remove_all(*dir);
}

TEST(FormatDroppedShareTest, TwoDecimalsOfAPercentOrADashWithoutData) {
  EXPECT_EQ(cli::FormatDroppedShare(81920, 1536), "1.88 %");
  EXPECT_EQ(cli::FormatDroppedShare(1000, 0), "0.00 %");
  EXPECT_EQ(cli::FormatDroppedShare(1000, 1000), "100.00 %");
  EXPECT_EQ(cli::FormatDroppedShare(0, 0), "-");
}

TEST(TableTest, PadsColumnsAndRightAlignsNumbers) {
  cli::Table table({"name", "score", "note"});
  table.AddRow({"alpha", "0.5000", "ok"});
  table.AddRow({"β-long", "-", "two words"});
  table.AddRow({"c", "12.2500"});
  EXPECT_EQ(table.Render(),
            "name      score  note\n"
            "------  -------  ---------\n"
            "alpha    0.5000  ok\n"
            "β-long        -  two words\n"
            "c       12.2500\n");
}

TEST_F(StudyCliTest, CreateStoresTheFileAndLsListsTheNewStudy) {
  const std::string file = dir_ + "/alpha.yaml";
  WriteFile(file, StudyYaml("alpha", 4));
  const Result created = Cli(absl::StrCat("study create ", file));
  ASSERT_EQ(created.exit_code, 0) << created.output;
  EXPECT_THAT(created.output, HasSubstr("created study alpha"));
  absl::StatusOr<coordinator::StudyRow> study = store_->GetStudy("alpha");
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->config_text, StudyYaml("alpha", 4));
  EXPECT_EQ(study->state, coordinator::StudyState::kCreated);

  const Result ls = Cli("study ls");
  ASSERT_EQ(ls.exit_code, 0) << ls.output;
  EXPECT_THAT(ls.output, HasSubstr("name"));
  const std::vector<std::string> rows = LinesWith(ls.output, "alpha");
  ASSERT_EQ(rows.size(), 1u) << ls.output;
  EXPECT_THAT(rows[0], HasSubstr("created"));

  // The same name again is refused, naming the study.
  const Result again = Cli(absl::StrCat("study create ", file));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.output, HasSubstr("a study named 'alpha' already exists"));
}

TEST_F(StudyCliTest, NameOptionOverridesTheFileAndStartStopChangeState) {
  const std::string file = dir_ + "/s.yaml";
  WriteFile(file, StudyYaml("in-file", 4));
  ASSERT_EQ(Cli(absl::StrCat("study create ", file, " --name beta")).exit_code,
            0);
  EXPECT_TRUE(store_->GetStudy("beta").ok());
  EXPECT_TRUE(absl::IsNotFound(store_->GetStudy("in-file").status()));

  const Result start = Cli("study start beta");
  ASSERT_EQ(start.exit_code, 0) << start.output;
  EXPECT_EQ(store_->GetStudy("beta")->state, coordinator::StudyState::kRunning);
  const Result stop = Cli("study stop beta");
  ASSERT_EQ(stop.exit_code, 0) << stop.output;
  EXPECT_EQ(store_->GetStudy("beta")->state, coordinator::StudyState::kStopped);

  const Result missing = Cli("study start no-such-study");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("no study named 'no-such-study'"));
}

TEST_F(StudyCliTest, BadStudyFileExitsTwoWithOneMessageNamingTheFile) {
  const std::string file = dir_ + "/bad.yaml";
  WriteFile(file, absl::StrCat(StudyYaml("bad", 4), "not_a_setting: 3\n"));
  const Result r = Cli(absl::StrCat("study create ", file));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("ristretto: ", file, ": ")));
  EXPECT_THAT(r.output, HasSubstr("not_a_setting"));
  EXPECT_EQ(LinesWith(r.output, "ristretto:").size(), 1u) << r.output;
  EXPECT_TRUE(absl::IsNotFound(store_->GetStudy("bad").status()));
}

TEST_F(StudyCliTest, StudyOnAnUnregisteredDatasetIsRefusedWithExitTwo) {
  const std::string file = dir_ + "/d.yaml";
  const std::string id(64, 'a');
  std::string text = StudyYaml("on-data", 4);
  const std::string synthetic = "  synthetic: {rows: 3000, assets: 2, seed: 7}";
  text.replace(text.find(synthetic), synthetic.size(),
               absl::StrCat("  id: ", id));
  WriteFile(file, text);
  const Result r = Cli(absl::StrCat("study create ", file));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("ristretto: ", file, ": dataset ", id,
                                     " is not registered")));
  EXPECT_TRUE(absl::IsNotFound(store_->GetStudy("on-data").status()));
}

TEST_F(StudyCliTest, MissingDatabaseIsAClearErrorAndPasswordsAreNeverPrinted) {
  const Result none = RunCli("study ls");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.output, HasSubstr("no database given: pass --db DSN or set "
                                     "RISTRETTO_DB"));

  // A password in --db is refused before connecting (every local user reads
  // argv with ps), in both libpq forms, without echoing it.
  for (const char* db :
       {"'host=/nonexistent-dir dbname=x user=u password=hunter2secret'",
        "postgresql://u:hunter2secret@localhost:1/x"}) {
    const Result argv = RunCli(absl::StrCat("study ls --db ", db));
    EXPECT_EQ(argv.exit_code, 2) << argv.output;
    EXPECT_THAT(argv.output, HasSubstr("--db carries a database password"));
    EXPECT_THAT(argv.output, HasSubstr("PGPASSFILE"));
    EXPECT_THAT(argv.output, Not(HasSubstr("hunter2secret")));
  }

  // The same DSN from the environment is accepted; an unreachable server
  // names the DSN with the password masked.
  const Result down =
      RunCli("study ls",
             "RISTRETTO_DB='host=/nonexistent-dir port=1 dbname=x user=u "
             "password=hunter2secret'");
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_THAT(down.output, HasSubstr("password=***"));
  EXPECT_THAT(down.output, Not(HasSubstr("hunter2secret")));
}

TEST_F(StudyCliTest, LsShowAndBestReportTrialsFoldsAndArtifacts) {
  StudyWithThreeTrials("gamma");
  const Result ls = Cli("study ls");
  ASSERT_EQ(ls.exit_code, 0) << ls.output;
  const std::vector<std::string> ls_rows = LinesWith(ls.output, "gamma");
  ASSERT_EQ(ls_rows.size(), 1u) << ls.output;
  // name, state, complete, running, pruned, failed, best.
  EXPECT_THAT(ls_rows[0],
              testing::ContainsRegex("gamma +running +2 +0 +0 +1 +0\\.9000"));

  const Result show = Cli("study show gamma");
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_THAT(show.output, HasSubstr("2 complete, 0 running, 0 pruned, "
                                     "1 failed"));
  // The dropped share per trial: (256 + 512) of 2 × 20,480 = 1.875 %; the
  // failed trial's runs reported nothing.
  EXPECT_THAT(show.output, testing::ContainsRegex(
                               "\n +0 +complete +0\\.5000 +1\\.88 % +2\\.50 ± "
                               "1\\.50 \\(b&h 0\\.25\\) +batch_size=4096 "
                               "learning_rate=0\\.0003\n"));
  EXPECT_THAT(show.output, testing::ContainsRegex(
                               "\n +1 +complete +0\\.9000 +1\\.88 % +2\\.90 ± "
                               "1\\.50 \\(b&h 0\\.25\\) +batch_size=8192 "
                               "learning_rate=0\\.0001\n"));
  EXPECT_THAT(show.output, testing::ContainsRegex(
                               "\n +2 +failed +- +- +- +batch_size=2048 "
                               "learning_rate=0\\.001 +fold 1: loss is NaN\n"));
  // The study's total over the four CV runs that reported (the final runs
  // here did not): 1,536 of 81,920.
  EXPECT_THAT(show.output,
              HasSubstr("\nenv steps dropped 1.88 %: 1536 of 81920 received "
                        "(stale, or left over when a run ended), 4 completed "
                        "runs\n"));

  const Result best = Cli("study best gamma");
  ASSERT_EQ(best.exit_code, 0) << best.output;
  EXPECT_THAT(best.output, HasSubstr("trial   1\n"));
  EXPECT_THAT(best.output, HasSubstr("score   0.9000\n"));
  EXPECT_THAT(best.output, testing::ContainsRegex("\nbatch_size +8192\n"));
  // Fold rows: sharpe = score + 1 + 0.25·fold, trades 40 + fold.
  EXPECT_THAT(best.output, testing::ContainsRegex(
                               "\n +0 +1\\.90 ± n/a +0\\.50 ± n/a +2\\.0000 "
                               "+12\\.50 +3\\.0000 +6\\.25 +3\\.12 +40 .* "
                               "+20000\n"));
  EXPECT_THAT(best.output,
              testing::ContainsRegex("\n +1 +2\\.15 ± n/a .* +41 .* +20000\n"));
  // Without the dataset's bar interval buy & hold's errors are n/a too, and
  // the table says why.
  EXPECT_THAT(best.output, HasSubstr("(buy & hold's standard errors: "));
  // The lockbox section and the verdict (the last line).
  EXPECT_THAT(best.output,
              testing::ContainsRegex("\n *trial 1 +2\\.90 ± 1\\.50 "));
  EXPECT_THAT(best.output,
              testing::ContainsRegex("\nverdict: NO EDGE[^\n]*\n$"));
  const std::string policy = dir_ + "/policies/trial1-fold1";
  EXPECT_THAT(best.output,
              AllOf(HasSubstr(policy), HasSubstr(DirSha256(policy))));

  // The leaderboard ranks complete trials only, best first. `--wait` ends
  // on the coordinator's word only (counts that look final can precede the
  // queuing of a final run), so a stand-in coordinator on its own
  // connection marks the study done once `study start` has set it running
  // (it is stopped first: the trials above left it running).
  const Result stop = Cli("study stop gamma");
  ASSERT_EQ(stop.exit_code, 0) << stop.output;
  absl::StatusOr<coordinator::StudyRow> stopped = store_->GetStudy("gamma");
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  ASSERT_EQ(stopped->state, coordinator::StudyState::kStopped);
  std::thread coordinator([this] {
    absl::StatusOr<std::unique_ptr<Store>> own = Store::Connect(dsn());
    ASSERT_TRUE(own.ok()) << own.status();
    for (int i = 0; i < 6000; ++i) {  // the CLI's start, at most 10 minutes
      absl::StatusOr<coordinator::StudyRow> row = (*own)->GetStudy("gamma");
      ASSERT_TRUE(row.ok()) << row.status();
      if (row->state == coordinator::StudyState::kRunning) {
        EXPECT_TRUE((*own)
                        ->SetStudyState(row->id, coordinator::StudyState::kDone)
                        .ok());
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "study gamma never became running";
  });
  const Result board = Cli("study start gamma --wait");
  coordinator.join();
  ASSERT_EQ(board.exit_code, 0) << board.output;
  EXPECT_THAT(board.output, HasSubstr("trials 3/3 done: 2 complete, 0 pruned, "
                                      "1 failed; 0 running"));
  EXPECT_THAT(board.output, HasSubstr("best 0.9000 (trial 1)"));
  EXPECT_THAT(board.output, HasSubstr("study gamma is done"));
  EXPECT_THAT(board.output, testing::ContainsRegex(
                                "\n +1 +1 +0\\.9000 +2\\.90 ± 1\\.50 [^\n]*"
                                "batch_size=8192 [^\n]*\n +2 +0 +0\\.5000 "
                                "[^\n]*batch_size=4096 "));
}

// A run its learner failed, backing off before it is tried again: `study
// show` says why on its (still running) trial.
TEST_F(StudyCliTest, ShowSaysWhyARunningTrialsRunIsRetrying) {
  CreateAndStart("retry", 1);
  absl::StatusOr<coordinator::StudyRow> study = store_->GetStudy("retry");
  ASSERT_TRUE(study.ok()) << study.status();
  absl::StatusOr<TrialRow> trial = store_->CreateTrial(
      study->id, {{"learning_rate", "0.001"}}, {"{}"}, dir_ + "/checkpoints");
  ASSERT_TRUE(trial.ok()) << trial.status();
  absl::StatusOr<std::optional<RunRow>> run =
      store_->LeaseRun("learner-test", absl::Minutes(5));
  ASSERT_TRUE(run.ok() && run->has_value()) << run.status();
  ASSERT_TRUE(store_
                  ->RetryRun((*run)->id, "learner-test",
                             "checkpoint: No space left on device",
                             absl::Now() + absl::Seconds(5),
                             absl::Now() + absl::Seconds(10))
                  .ok());
  const Result show = Cli("study show retry");
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_THAT(show.output,
              HasSubstr("fold 0 retrying after attempt 1: checkpoint: No "
                        "space left on device"));
  EXPECT_THAT(show.output,
              HasSubstr("\nenv steps dropped: no completed run reported them "
                        "yet\n"));
}

// `up` and `study start --wait` wait in WaitForStudy. PostgreSQL going away
// and coming back (a restart, a failover) must not end the wait: the outage
// is said and the reads are retried until the server answers again. Events,
// not timing: the server is stopped once the first progress line is out and
// started again once the outage line is out.
TEST_F(StudyCliTest, WaitingGoesOnThroughAPostgresRestart) {
  CreateAndStart("outage", 1);
  coordinator::RetryPolicy retry;
  retry.initial_backoff = absl::Milliseconds(20);
  retry.max_backoff = absl::Milliseconds(200);
  retry.give_up_after = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Store>> waiter = Store::Connect(dsn(), retry);
  ASSERT_TRUE(waiter.ok()) << waiter.status();
  const std::string log = dir_ + "/wait.log";
  std::FILE* out = std::fopen(log.c_str(), "w");
  ASSERT_NE(out, nullptr);
  std::atomic<bool> give_up{false};
  absl::Status waited;
  std::thread wait([&] {
    waited = cli::WaitForStudy(
        **waiter, "outage", [&] { return give_up.load(); }, out);
  });
  // Waits (polling a file the waiter flushes) until the log holds `text`.
  auto await_log = [&](const std::string& text) {
    for (int i = 0; i < 1200; ++i) {  // a bound against a hang, not a window
      if (absl::StrContains(ReadBytes(log), text)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  const bool polled = await_log("[running]");
  EXPECT_TRUE(polled) << ReadBytes(log);
  ASSERT_TRUE(cluster().Stop().ok());
  const bool said = await_log("the database did not answer");
  EXPECT_TRUE(said) << ReadBytes(log);
  ASSERT_TRUE(cluster().Restart().ok());
  // The study ends while the waiter is backing off; it must see that.
  absl::StatusOr<std::unique_ptr<Store>> writer = Store::Connect(dsn(), retry);
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::StatusOr<coordinator::StudyRow> study = (*writer)->GetStudy("outage");
  ASSERT_TRUE(study.ok()) << study.status();
  ASSERT_TRUE(
      (*writer)->SetStudyState(study->id, coordinator::StudyState::kDone).ok());
  const bool done = await_log("study outage is done");
  if (!done) give_up = true;
  wait.join();
  std::fclose(out);
  EXPECT_TRUE(done) << ReadBytes(log);
  EXPECT_TRUE(waited.ok()) << waited;
  EXPECT_THAT(ReadBytes(log), HasSubstr("retrying in 1s"));
}

TEST_F(StudyCliTest, ExportCopiesTheVerifiedPolicyAndRefusesATamperedOne) {
  StudyWithThreeTrials("delta");
  const std::string out = dir_ + "/export";
  const Result r = Cli(absl::StrCat("study export delta --out ", out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The best trial's final run: the policy the lockbox judged.
  const std::string source = dir_ + "/policies/trial1-lockbox";
  for (const char* name : {"policy.pt", "contract.json"}) {
    EXPECT_EQ(ReadBytes(absl::StrCat(out, "/", name)),
              ReadBytes(absl::StrCat(source, "/", name)))
        << name;
  }
  // policy.pt, contract.json and evaluation.json (verdict, lockbox).
  EXPECT_EQ(
      std::distance(fs::directory_iterator(out), fs::directory_iterator()), 3);
  const std::string meta = ReadBytes(out + "/evaluation.json");
  EXPECT_THAT(meta, AllOf(HasSubstr("\"edge\":false"),
                          HasSubstr("\"sharpe\":2.8999999999999999"),
                          HasSubstr("\"verdict\":\"NO EDGE")));

  std::string weights = ReadBytes(source + "/policy.pt");
  weights[100] = static_cast<char>(weights[100] ^ 1);
  WriteFile(source + "/policy.pt", weights);
  const std::string out2 = dir_ + "/export2";
  const Result tampered = Cli(absl::StrCat("study export delta --out ", out2));
  EXPECT_EQ(tampered.exit_code, 1);
  EXPECT_THAT(tampered.output,
              AllOf(HasSubstr("sha256 mismatch"), HasSubstr(source),
                    HasSubstr("nothing exported")));
  EXPECT_FALSE(fs::exists(out2 + "/policy.pt"));
  EXPECT_FALSE(fs::exists(out2 + "/contract.json"));
}

// A trial with two refits: export waits for both (and for the trial's
// lockbox result), then writes each refit's policy into refit-<r>/ in place
// of an earlier export; a failed export leaves the earlier one whole;
// `study best` names each refit's artifact.
TEST_F(StudyCliTest, ExportAndShowOfATrialWithRefits) {
  CreateAndStart("zeta", 1);
  absl::StatusOr<coordinator::StudyRow> study = store_->GetStudy("zeta");
  ASSERT_TRUE(study.ok()) << study.status();
  const TrialRow trial = CompleteTrial(study->id, {{"lr", "0.01"}}, 1, 0.7,
                                       /*with_final_run=*/false);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(
        store_->AddRefitRun(trial.id, r, "{}", dir_ + "/checkpoints").ok());
  }
  // An earlier export (a single policy) in the directory.
  const std::string out = dir_ + "/export";
  fs::create_directories(out);
  WriteFile(out + "/policy.pt", "an earlier export's weights");
  WriteFile(out + "/contract.json", "{}");
  // Completes the next leased refit with its own result (and the split,
  // given `split`); returns its policy directory.
  auto complete_refit =
      [&](int refit,
          const std::optional<coordinator::LockboxRow>& split) -> std::string {
    absl::StatusOr<std::optional<RunRow>> leased =
        store_->LeaseRun("learner-test", absl::Minutes(5));
    EXPECT_TRUE(leased.ok() && leased->has_value());
    if (!leased.ok() || !leased->has_value()) return "";
    EXPECT_EQ((*leased)->fold, coordinator::FinalRunFold(refit));
    coordinator::RefitRow own;
    own.policy.sharpe = 1.25 + refit;
    own.sharpe_se = 0.5;
    std::string policy = WritePolicyDir(absl::StrCat("zeta-refit-", refit));
    ArtifactRow artifact;
    artifact.kind = "policy";
    artifact.path = policy;
    artifact.sha256 = DirSha256(policy);
    EXPECT_TRUE(store_
                    ->CompleteRefit((*leased)->id, "learner-test", own, split,
                                    {artifact})
                    .ok());
    return policy;
  };
  const std::string policy0 = complete_refit(0, std::nullopt);
  // Half of the trial's policy: nothing is exported, the directory is
  // untouched.
  const Result early = Cli(absl::StrCat("study export zeta --out ", out));
  EXPECT_EQ(early.exit_code, 1);
  EXPECT_THAT(early.output, HasSubstr("1 of 2 refits done"));
  EXPECT_EQ(ReadBytes(out + "/policy.pt"), "an earlier export's weights");
  coordinator::LockboxRow split;
  split.bars = 300;
  split.refits = 2;
  split.policy.sharpe = 2.5;
  split.sharpe_se = 1.0;
  split.bh_sharpe = 0.25;
  split.random_seeds = 20;
  const std::string policy1 = complete_refit(1, split);
  const Result r = Cli(absl::StrCat("study export zeta --out ", out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"policy.pt", "contract.json"}) {
    EXPECT_EQ(ReadBytes(absl::StrCat(out, "/refit-0/", name)),
              ReadBytes(absl::StrCat(policy0, "/", name)))
        << name;
    EXPECT_EQ(ReadBytes(absl::StrCat(out, "/refit-1/", name)),
              ReadBytes(absl::StrCat(policy1, "/", name)))
        << name;
  }
  // The earlier single policy is gone (a backtest of the directory would
  // otherwise play it); nothing but the export is left.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("evaluation.json", "refit-0", "refit-1"));
  const std::string meta = ReadBytes(out + "/evaluation.json");
  EXPECT_THAT(meta, HasSubstr("\"refits\":2"));

  // Refit 1's files changed after its run: exporting again fails and leaves
  // the export above exactly as it was.
  std::string weights = ReadBytes(policy1 + "/policy.pt");
  weights[100] = static_cast<char>(weights[100] ^ 1);
  WriteFile(policy1 + "/policy.pt", weights);
  const Result tampered = Cli(absl::StrCat("study export zeta --out ", out));
  EXPECT_EQ(tampered.exit_code, 1);
  EXPECT_THAT(tampered.output,
              AllOf(HasSubstr("sha256 mismatch"), HasSubstr("refit 1"),
                    HasSubstr("nothing exported")));
  std::vector<std::string> after;
  for (const auto& e : fs::directory_iterator(out)) {
    after.push_back(e.path().filename().string());
  }
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, names);
  EXPECT_EQ(ReadBytes(out + "/evaluation.json"), meta);
  EXPECT_NE(ReadBytes(out + "/refit-1/policy.pt"), weights);

  const Result best = Cli("study best zeta");
  ASSERT_EQ(best.exit_code, 0) << best.output;
  EXPECT_THAT(best.output, HasSubstr("lockbox refit 1"));
}

TEST_F(StudyCliTest, ExportWithoutACompleteTrialIsAClearError) {
  CreateAndStart("epsilon", 2);
  const Result r =
      Cli(absl::StrCat("study export epsilon --out ", dir_, "/export"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("study 'epsilon' has no complete trial yet"));
  const Result best = Cli("study best epsilon");
  EXPECT_EQ(best.exit_code, 1);
  EXPECT_THAT(best.output, HasSubstr("has no complete trial yet"));
}

TEST_F(StudyCliTest, DatasetImportWithDbRegistersTheDatasetAndLsListsIt) {
  const std::string csv_dir = dir_ + "/csv";
  fs::create_directories(csv_dir);
  for (const char* symbol : {"BTC", "ETH"}) {
    std::string text = "timestamp,open,high,low,close,volume\n";
    for (int t = 0; t < 300; ++t) {
      const double base = symbol[0] == 'B' ? 40000.0 : 2000.0;
      const double close = base * (1.0 + 0.01 * std::sin(t * 0.1));
      absl::StrAppend(&text, 1704067200 + 300 * t, ",", close, ",",
                      close * 1.001, ",", close * 0.999, ",", close, ",",
                      10 + t % 7, "\n");
    }
    WriteFile(absl::StrCat(csv_dir, "/", symbol, ".csv"), text);
  }
  const std::string data_dir = dir_ + "/data";
  const Result imp = RunCli(absl::StrCat(
      "dataset import --csv-dir ", csv_dir, " --interval 5m --out ", dir_,
      "/d.rds --db ", ShellQuote(dsn()), " --data-dir ", data_dir));
  ASSERT_EQ(imp.exit_code, 0) << imp.output;
  const size_t pos = imp.output.find("dataset id      ");
  ASSERT_NE(pos, std::string::npos) << imp.output;
  const std::string id = imp.output.substr(pos + 16, 64);
  EXPECT_THAT(imp.output, HasSubstr(absl::StrCat("registered dataset ", id)));

  absl::StatusOr<coordinator::DatasetRow> row = store_->GetDataset(id);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->path, absl::StrCat(data_dir, "/datasets/", id, ".rds"));
  EXPECT_EQ(ReadBytes(row->path), ReadBytes(dir_ + "/d.rds"));
  EXPECT_EQ(row->symbols, "BTC,ETH");
  EXPECT_EQ(row->rows, 237);  // 300 bars minus the 63-row feature warm-up
  EXPECT_EQ(row->interval_seconds, 300);

  const Result ls = Cli("dataset ls");
  ASSERT_EQ(ls.exit_code, 0) << ls.output;
  const std::vector<std::string> rows = LinesWith(ls.output, id);
  ASSERT_EQ(rows.size(), 1u) << ls.output;
  EXPECT_THAT(rows[0], testing::ContainsRegex("BTC,ETH +237 +5m"));

  // Without --db the import only writes the file, as before.
  const Result plain =
      Cli(absl::StrCat("dataset import --csv-dir ", csv_dir,
                       " --interval 5m --out ", dir_, "/e.rds"));
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_THAT(plain.output, Not(HasSubstr("registered dataset")));
}

// `dataset synth --data-dir DIR` registers with the database of
// $RISTRETTO_DB; --db without --data-dir is refused before anything is
// written.
TEST_F(StudyCliTest, DatasetSynthWithDataDirRegistersInTheEnvironmentsDb) {
  const std::string data_dir = dir_ + "/data";
  const Result synth = Cli(absl::StrCat("dataset synth --out ", dir_,
                                        "/s.rds --rows 400 --assets 2 "
                                        "--seed 4 --data-dir ",
                                        data_dir));
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  const size_t pos = synth.output.find("dataset id      ");
  ASSERT_NE(pos, std::string::npos) << synth.output;
  const std::string id = synth.output.substr(pos + 16, 64);
  EXPECT_THAT(synth.output, HasSubstr(absl::StrCat("registered dataset ", id)));
  absl::StatusOr<coordinator::DatasetRow> row = store_->GetDataset(id);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->rows, 337);  // 400 bars minus the 63-row feature warm-up
  EXPECT_EQ(std::count(row->symbols.begin(), row->symbols.end(), ','), 1)
      << row->symbols;  // 2 assets

  const Result no_dir = RunCli(absl::StrCat("dataset synth --out ", dir_,
                                            "/t.rds --db ", ShellQuote(dsn())));
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.output;
  EXPECT_THAT(no_dir.output, HasSubstr("registering a dataset needs "
                                       "--data-dir DIR"));
  EXPECT_FALSE(fs::exists(dir_ + "/t.rds"));
}

}  // namespace
}  // namespace ristretto
