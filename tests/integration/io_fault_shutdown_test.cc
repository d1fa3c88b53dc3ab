// I/O faults and prompt shutdown, with real processes on 127.0.0.1:
//  * SIGTERM to a learner training two runs (actors streaming, updates in
//    progress): it exits 0 within its documented 10 s with a final
//    checkpoint of each run written after the signal; an actor exits within
//    its 10 s (learner/README.md, actor/README.md, "Shutdown");
//  * SIGTERM to a coordinator: exit 0 within its 10 s (coordinator/README.md);
//  * a run whose checkpoint cannot be written (its directory is a file) is
//    failed through FailRun with the reason, retried once after the
//    coordinator's back-off, then its trial fails naming both; the learner
//    keeps training (and completes) its other run;
//  * a study whose dataset the coordinator cannot write is stopped with the
//    reason, and `ristretto study start --wait` prints it and exits non-zero.
// Every wait is for an event (a log line, a GetStatus count, a database
// state); the only time asserted is the shutdown deadline the issue sets.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/common/log_lines.h"
#include "tests/coordinator_store/pg_test_env.h"
#include "tests/integration/dev_certs.h"
#include "tests/integration/learner_status.h"
#include "tests/integration/log_fields.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using ::ristretto::coordinator::testing::MakeTempDir;
using ::ristretto::testing::ChannelCredentials;
using ::ristretto::testing::CoordinatedActorArgv;
using ::ristretto::testing::CoordinatedLearnerArgv;
using ::ristretto::testing::CoordinatorArgv;
using ::ristretto::testing::Field;
using ::ristretto::testing::LearnerStatusOf;
using ::ristretto::testing::ListeningPort;
using ::ristretto::testing::LogsOf;
using ::ristretto::testing::MakeDevCerts;
using ::ristretto::testing::PollUntil;
using ::ristretto::testing::Process;
using ::ristretto::testing::Stopped;
using ::ristretto::testing::Terminate;
using ::ristretto::testing::TinyStudy;
using ::ristretto::testing::TinyStudyYaml;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// The documented SIGTERM deadlines (learner/README.md, actor/README.md,
// coordinator/README.md).
constexpr auto kLearnerDeadline = 10s;
constexpr auto kActorDeadline = 10s;
constexpr auto kCoordinatorDeadline = 10s;

// How long a process may take to exit after SIGTERM before the test calls
// it a hang (Terminate); the deadlines above are what is asserted.
constexpr auto kHang = 60s;

// How many times `needle` occurs in `text`.
int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// A fresh directory for the test's files (empty on failure, with a test
// failure).
std::string TempDir(const char* prefix) {
  absl::StatusOr<std::string> dir = MakeTempDir(prefix);
  EXPECT_TRUE(dir.ok()) << dir.status();
  return dir.value_or("");
}

// ------------------------------------------------------------- learner

class LearnerShutdownTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("ristretto_shutdown_");
    ASSERT_TRUE(MakeDevCerts(dir_ + "/certs"));
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string Cert(const std::string& name) const {
    return dir_ + "/certs/" + name;
  }
  std::string dir_;
};

// Two runs with updates of many minibatches (8 epochs of 4096 samples in
// minibatches of 64), so the signal lands in the middle of training: the
// updates in progress are abandoned at a minibatch boundary and rolled
// back, no evaluation runs, each run writes its final checkpoint, the gRPC
// drain is cut at 2 s. The bound: 10 s, on a loaded machine.
TEST_F(LearnerShutdownTest, LearnerTrainingTwoRunsStopsWithinItsDeadline) {
  Process learner({RISTRETTO_LEARNER_BINARY,
                   "--port",
                   "0",
                   "--run-dir",
                   dir_ + "/runs",
                   "--runs",
                   "2",
                   "--budget",
                   "100000000",
                   "--synthetic-rows",
                   "1200",
                   "--synthetic-assets",
                   "3",
                   "--policy-hidden",
                   "64,64",
                   "--samples-per-update",
                   "4096",
                   "--rollout",
                   "32",
                   "--episode",
                   "200",
                   "--epochs",
                   "8",
                   "--minibatch",
                   "64",
                   "--tls-cert",
                   Cert("server.pem"),
                   "--tls-key",
                   Cert("server.key")},
                  dir_ + "/learner.log");
  const int port = ListeningPort(learner, 120s);
  ASSERT_GT(port, 0) << learner.Log();
  std::vector<std::unique_ptr<Process>> actors;
  for (int i = 0; i < 2; ++i) {
    const std::string id = absl::StrCat("actor-", i);
    actors.push_back(std::make_unique<Process>(
        std::vector<std::string>{
            RISTRETTO_ACTOR_BINARY, "--learner",
            absl::StrCat("127.0.0.1:", port), "--envs", "8", "--actor-id", id,
            "--cache-dir", dir_ + "/cache-" + id, "--tls-ca", Cert("ca.pem")},
        dir_ + "/" + id + ".log"));
  }
  // The event: both runs have finished at least one update (GetStatus).
  const auto credentials = ChannelCredentials({"", "", Cert("ca.pem")});
  bool trained = false;
  PollUntil(
      [&] {
        v1::LearnerStatus status;
        trained = LearnerStatusOf(port, credentials, &status).ok() &&
                  status.runs_size() == 2 &&
                  status.runs(0).policy_version() >= 1 &&
                  status.runs(1).policy_version() >= 1;
        return trained || !learner.running();
      },
      300s, 100ms);
  ASSERT_TRUE(trained) << learner.Log();

  // An actor first (the learner keeps serving the other).
  const Stopped actor = Terminate(*actors[1], kHang);
  ASSERT_TRUE(actor.exit_code.has_value()) << actors[1]->Log();
  EXPECT_EQ(*actor.exit_code, 0) << actors[1]->Log();
  EXPECT_LE(actor.took, kActorDeadline) << actors[1]->Log();

  // "Written after the signal" on the clock that stamps files: the kernel
  // stamps them from a clock that moves once per tick, so a file written
  // just after reading the fine clock can carry an earlier time. A marker
  // written before the signal has a time no later than any file written
  // after it.
  const fs::path marker = fs::path(dir_) / "signalled";
  { std::ofstream(marker) << "SIGTERM follows\n"; }
  const fs::file_time_type signalled = fs::last_write_time(marker);
  const Stopped stopped = Terminate(learner, kHang);
  ASSERT_TRUE(stopped.exit_code.has_value()) << learner.Log();
  EXPECT_EQ(*stopped.exit_code, 0) << learner.Log();
  EXPECT_LE(stopped.took, kLearnerDeadline) << learner.Log();
  std::printf(
      "SIGTERM to exit: learner (2 runs) %lld ms (%d update(s) abandoned), "
      "actor %lld ms\n",
      static_cast<long long>(stopped.took.count()),
      Count(learner.Log(), "update in progress was abandoned"),
      static_cast<long long>(actor.took.count()));

  // Each run's final checkpoint: written after the signal, at the step
  // count the learner reports trained (the abandoned update is not in it).
  const std::string log = learner.Log();
  for (const std::string run : {"run-0", "run-1"}) {
    const std::string run_dir = dir_ + "/runs/local/" + run + "/fold-0";
    const fs::path latest = fs::path(run_dir) / "LATEST";
    ASSERT_TRUE(fs::exists(latest)) << run << "\n" << log;
    EXPECT_GE(fs::last_write_time(latest), signalled) << run;
    std::ifstream in(latest);
    std::string name;
    std::getline(in, name);
    const int64_t trained_steps =
        Field(log, absl::StrCat("learner: run ", run, " "), "trained");
    EXPECT_GT(trained_steps, 0) << log;
    EXPECT_EQ(name, absl::StrFormat("step-%012d", trained_steps)) << log;
    EXPECT_TRUE(fs::is_directory(fs::path(run_dir) / name)) << name;
  }
  EXPECT_TRUE(Terminate(*actors[0], kHang).exit_code.has_value());
}

// --------------------------------------------------------- coordinator

// 2 trials × 1 holdout fold, both at once; a run gets 2 attempts.
std::string IoStudy() {
  TinyStudy study;
  study.name = "io";
  study.max_trials = 2;
  study.concurrency = 2;
  study.eval_every_env_steps = 2048;
  return TinyStudyYaml(study);
}

class CoordinatorFaultTest : public coordinator::testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    dir_ = TempDir("ristretto_iofault_");
    absl::StatusOr<std::unique_ptr<coordinator::Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }
  void TearDown() override {
    actors_.clear();
    learner_.reset();
    coordinator_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void StartCoordinator() {
    coordinator_ = std::make_unique<Process>(
        CoordinatorArgv(RISTRETTO_COORDINATOR_BINARY, dsn(), data_dir()),
        dir_ + "/coordinator.log");
    address_ = tests::WaitForListeningAddress(*coordinator_, 60s);
    ASSERT_FALSE(address_.empty()) << coordinator_->Log();
  }
  std::string data_dir() const { return dir_ + "/coordinator"; }
  std::string Logs() const {
    return LogsOf(
        {{"coordinator", coordinator_.get()}, {"learner", learner_.get()}});
  }
  // Polls the database until `done(trials)` or `timeout` (hangs only).
  bool WaitForTrials(
      int64_t study_id,
      const std::function<bool(const std::vector<coordinator::TrialRow>&)>&
          done,
      std::chrono::seconds timeout) {
    return PollUntil(
        [&] {
          absl::StatusOr<std::vector<coordinator::TrialRow>> trials =
              store_->ListTrials(study_id);
          return trials.ok() && done(*trials);
        },
        timeout, 200ms);
  }

  std::string dir_;
  std::unique_ptr<coordinator::Store> store_;
  std::unique_ptr<Process> coordinator_, learner_;
  std::vector<std::unique_ptr<Process>> actors_;
  std::string address_;
};

TEST_F(CoordinatorFaultTest, CoordinatorStopsWithinItsDeadline) {
  StartCoordinator();
  const Stopped stopped = Terminate(*coordinator_, kHang);
  ASSERT_TRUE(stopped.exit_code.has_value()) << coordinator_->Log();
  EXPECT_EQ(*stopped.exit_code, 0) << coordinator_->Log();
  EXPECT_LE(stopped.took, kCoordinatorDeadline) << coordinator_->Log();
  std::printf("SIGTERM to exit: coordinator %lld ms\n",
              static_cast<long long>(stopped.took.count()));
}

// The coordinator cannot write the study's synthetic dataset (its datasets
// directory is a file): the study is stopped with the reason, and `study
// start --wait` says it and exits non-zero instead of reporting success.
TEST_F(CoordinatorFaultTest, UnwritableDatasetFailsStudyStartWait) {
  fs::create_directories(data_dir());
  std::ofstream(data_dir() + "/datasets") << "not a directory";
  const std::string file = dir_ + "/io.yaml";
  std::ofstream(file) << IoStudy();
  StartCoordinator();
  Process create({RISTRETTO_CLI_BINARY, "study", "create", file, "--db", dsn()},
                 dir_ + "/create.log");
  ASSERT_EQ(create.Wait(60s), 0) << create.Log();
  Process wait(
      {RISTRETTO_CLI_BINARY, "study", "start", "io", "--wait", "--db", dsn()},
      dir_ + "/start.log");
  const std::optional<int> code = wait.Wait(120s);
  ASSERT_TRUE(code.has_value()) << wait.Log() << Logs();
  EXPECT_NE(*code, 0) << wait.Log();
  EXPECT_THAT(wait.Log(), HasSubstr("stopped by the coordinator: cannot run"));
  EXPECT_THAT(wait.Log(), HasSubstr(data_dir() + "/datasets"));
  absl::StatusOr<coordinator::StudyRow> study = store_->GetStudy("io");
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->state, coordinator::StudyState::kStopped);
  Process show({RISTRETTO_CLI_BINARY, "study", "show", "io", "--db", dsn()},
               dir_ + "/show.log");
  ASSERT_EQ(show.Wait(60s), 0) << show.Log();
  EXPECT_THAT(show.Log(), HasSubstr("stopped by  the coordinator: cannot run"));
}

// Trial 0's checkpoint directory is a file: its run trains until its first
// checkpoint, which fails; the learner reports it (FailRun) and keeps
// training trial 1. The coordinator queues the run again after its back-off
// (the same learner, the only one, gets it after twice the back-off), it
// fails again, and trial 0 fails with the reason and "attempt 2 of 2".
// Trial 1 completes on the same learner process.
TEST_F(CoordinatorFaultTest, UnwritableCheckpointFailsOnlyThatRun) {
  absl::StatusOr<coordinator::StudyRow> study =
      store_->CreateStudy("io", IoStudy());
  ASSERT_TRUE(study.ok()) << study.status();
  ASSERT_TRUE(
      store_->SetStudyState(study->id, coordinator::StudyState::kRunning).ok());
  const std::string blocked = data_dir() + "/runs/io/trial-0/fold-0";
  fs::create_directories(fs::path(blocked).parent_path());
  std::ofstream(blocked) << "not a directory";
  StartCoordinator();
  learner_ = std::make_unique<Process>(
      CoordinatedLearnerArgv(RISTRETTO_LEARNER_BINARY, address_,
                             dir_ + "/learner", {"--slots", "2"}),
      dir_ + "/learner.log");
  ASSERT_FALSE(tests::WaitForListeningAddress(*learner_, 120s).empty())
      << learner_->Log();
  for (int i = 0; i < 2; ++i) {
    actors_.push_back(std::make_unique<Process>(
        CoordinatedActorArgv(RISTRETTO_ACTOR_BINARY, address_,
                             absl::StrCat("actor-", i), dir_ + "/actor-cache"),
        absl::StrCat(dir_, "/actor-", i, ".log")));
  }
  using coordinator::TrialRow;
  using coordinator::TrialState;
  ASSERT_TRUE(WaitForTrials(
      study->id,
      [](const std::vector<TrialRow>& t) {
        return t.size() == 2 && t[0].state == TrialState::kFailed &&
               t[1].state == TrialState::kComplete;
      },
      600s))
      << Logs();
  absl::StatusOr<std::vector<TrialRow>> trials = store_->ListTrials(study->id);
  ASSERT_TRUE(trials.ok());
  std::printf("trial 0 failed: %s\n", (*trials)[0].fail_reason.c_str());
  EXPECT_THAT((*trials)[0].fail_reason, HasSubstr("fold 0: "));
  EXPECT_THAT((*trials)[0].fail_reason, HasSubstr(blocked));
  EXPECT_THAT((*trials)[0].fail_reason, HasSubstr("(attempt 2 of 2)"));
  // One learner process did all of it: never restarted, still serving.
  EXPECT_TRUE(learner_->running()) << learner_->Log();
  EXPECT_THAT(coordinator_->Log(), HasSubstr("(attempt 1 of 2)"));
  EXPECT_THAT(coordinator_->Log(), HasSubstr("retried in 5s"));
}

// Issue 35, item 3, with real processes on a real full file system: trial
// 0's run directory is on a 256 KiB tmpfs filled to the last byte (mounting
// needs root, as in CI; skipped otherwise). Its first checkpoint fails with
// ENOSPC: the learner reports it (FailRun, "No space left on device") and
// keeps training trial 1 — no crash (LibTorch's writer never touches the
// disk). The learner is then restarted while trial 0 waits for its retry:
// the new process resumes trial 1 from its checkpoint, takes the retry,
// fails it the same way without aborting, and completes trial 1.
TEST_F(CoordinatorFaultTest,
       AFullDiskFailsOnlyThatRunAndARestartedLearnerGoesOn) {
  absl::StatusOr<coordinator::StudyRow> study =
      store_->CreateStudy("io", IoStudy());
  ASSERT_TRUE(study.ok()) << study.status();
  const std::string full = data_dir() + "/runs/io/trial-0";
  fs::create_directories(full);
  if (mount("tmpfs", full.c_str(), "tmpfs", 0, "size=256k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs (needs root): "
                 << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{full};
  fs::create_directories(full + "/fold-0");
  {
    const int fd = open((full + "/filler").c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string block(4096, 'x');
    int last_errno = 0;
    while (true) {
      const ssize_t n = write(fd, block.data(), block.size());
      if (n <= 0) {
        last_errno = errno;
        break;
      }
    }
    close(fd);
    ASSERT_EQ(last_errno, ENOSPC) << std::strerror(last_errno);
  }
  ASSERT_TRUE(
      store_->SetStudyState(study->id, coordinator::StudyState::kRunning).ok());
  StartCoordinator();
  const std::vector<std::string> learner_argv = CoordinatedLearnerArgv(
      RISTRETTO_LEARNER_BINARY, address_, dir_ + "/learner", {"--slots", "2"});
  learner_ = std::make_unique<Process>(learner_argv, dir_ + "/learner.log");
  ASSERT_FALSE(tests::WaitForListeningAddress(*learner_, 120s).empty())
      << learner_->Log();
  for (int i = 0; i < 2; ++i) {
    actors_.push_back(std::make_unique<Process>(
        CoordinatedActorArgv(RISTRETTO_ACTOR_BINARY, address_,
                             absl::StrCat("actor-", i), dir_ + "/actor-cache"),
        absl::StrCat(dir_, "/actor-", i, ".log")));
  }
  // The first failure reaches the coordinator.
  ASSERT_TRUE(PollUntil(
      [&] {
        return coordinator_->Log().find("(attempt 1 of 2)") !=
               std::string::npos;
      },
      600s, 200ms))
      << Logs();
  EXPECT_THAT(coordinator_->Log(), HasSubstr("No space left on device"));
  EXPECT_TRUE(learner_->running()) << learner_->Log();
  // Restart the learner while the retry waits.
  const Stopped stopped = Terminate(*learner_, kHang);
  ASSERT_TRUE(stopped.exit_code.has_value()) << learner_->Log();
  EXPECT_EQ(*stopped.exit_code, 0) << learner_->Log();
  learner_ = std::make_unique<Process>(learner_argv, dir_ + "/learner-2.log");
  ASSERT_FALSE(tests::WaitForListeningAddress(*learner_, 120s).empty())
      << learner_->Log();
  using coordinator::TrialRow;
  using coordinator::TrialState;
  ASSERT_TRUE(WaitForTrials(
      study->id,
      [](const std::vector<TrialRow>& t) {
        return t.size() == 2 && t[0].state == TrialState::kFailed &&
               t[1].state == TrialState::kComplete;
      },
      600s))
      << Logs();
  absl::StatusOr<std::vector<TrialRow>> trials = store_->ListTrials(study->id);
  ASSERT_TRUE(trials.ok());
  std::printf("trial 0 failed: %s\n", (*trials)[0].fail_reason.c_str());
  EXPECT_THAT((*trials)[0].fail_reason, HasSubstr("No space left on device"));
  EXPECT_THAT((*trials)[0].fail_reason, HasSubstr("(attempt 2 of 2)"));
  // The restarted learner failed the retry and finished trial 1 without
  // aborting.
  EXPECT_TRUE(learner_->running()) << learner_->Log();
  const Stopped again = Terminate(*learner_, kHang);
  ASSERT_TRUE(again.exit_code.has_value()) << learner_->Log();
  EXPECT_EQ(*again.exit_code, 0) << learner_->Log();
}

}  // namespace
}  // namespace ristretto
