// A study over mutual TLS with real processes on 127.0.0.1: PostgreSQL (the
// harness's), ristretto-coordinator, ristretto-learner and ristretto-actor,
// every one with --tls-* from scripts/make_dev_certs.sh. The coordinator
// and the learner require client certificates the development CA signed;
// the learner presents its server certificate (clientAuth too) to the
// coordinator, the actors client.pem to both. The study test also gives
// every process the cluster token: the actors reach the learner with the
// tickets the coordinator mints (docs/security.md). And a learner whose CA
// did not sign the coordinator's certificate never registers, unless its
// --coordinator-tls-* name the coordinator's CA.
#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/secret_file.h"
#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/log_lines.h"
#include "tests/coordinator_store/pg_test_env.h"
#include "tests/integration/dev_certs.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using ::ristretto::testing::CoordinatedActorArgv;
using ::ristretto::testing::CoordinatedLearnerArgv;
using ::ristretto::testing::CoordinatorArgv;
using ::ristretto::testing::HoldUntilAllAssigned;
using ::ristretto::testing::MakeDevCerts;
using ::ristretto::testing::PollUntil;
using ::ristretto::testing::Process;
using ::ristretto::testing::Terminate;
using ::ristretto::testing::TinyStudy;
using ::ristretto::testing::TinyStudyYaml;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// 1 trial × 1 holdout fold and its final run, small nets.
std::string TlsStudy() {
  TinyStudy study;
  study.name = "tls";
  study.predictability = 0.5;
  return TinyStudyYaml(study);
}

// The HOST:PORT of a process's "listening on HOST:PORT" line ("" if none
// within a minute).
std::string Address(Process& p) {
  return tests::WaitForListeningAddress(p, 60s);
}

class TlsStudyTest : public coordinator::testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> dir =
        coordinator::testing::MakeTempDir("ristretto_tls_study_");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    ASSERT_TRUE(MakeDevCerts(dir_ + "/certs"));
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string Cert(const std::string& name) const {
    return dir_ + "/certs/" + name;
  }

  // A coordinator under mutual TLS (with `token_file`, if given); returns
  // its address ("" on failure).
  std::string StartCoordinator(const std::string& token_file = "") {
    std::vector<std::string> extra = {"--tls-cert", Cert("server.pem"),
                                      "--tls-key",  Cert("server.key"),
                                      "--tls-ca",   Cert("ca.pem")};
    if (!token_file.empty()) {
      extra.insert(extra.end(), {"--token-file", token_file});
    }
    coordinator_ = std::make_unique<Process>(
        CoordinatorArgv(RISTRETTO_COORDINATOR_BINARY, dsn(),
                        dir_ + "/coordinator", extra),
        dir_ + "/coordinator.log");
    return Address(*coordinator_);
  }

  std::string dir_;
  std::unique_ptr<Process> coordinator_;
};

TEST_F(TlsStudyTest, StudyCompletesWithEveryProcessOnMutualTls) {
  absl::StatusOr<std::unique_ptr<coordinator::Store>> store = MigratedStore();
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<coordinator::StudyRow> study =
      (*store)->CreateStudy("tls", TlsStudy());
  ASSERT_TRUE(study.ok()) << study.status();
  ASSERT_TRUE((*store)
                  ->SetStudyState(study->id, coordinator::StudyState::kRunning)
                  .ok());
  // The cluster token: the actors' credential at the coordinator, which
  // hands them tickets for the learner.
  absl::StatusOr<std::string> token = GenerateToken();
  ASSERT_TRUE(token.ok()) << token.status();
  const std::string token_file = dir_ + "/token";
  ASSERT_TRUE(WriteSecretFile(token_file, *token).ok());
  const std::string coordinator = StartCoordinator(token_file);
  ASSERT_FALSE(coordinator.empty()) << coordinator_->Log();
  EXPECT_THAT(coordinator_->Log(),
              HasSubstr("security: TLS on, every call authenticated"));

  Process learner(CoordinatedLearnerArgv(
                      RISTRETTO_LEARNER_BINARY, coordinator, dir_ + "/learner",
                      {"--slots", "1", "--tls-cert", Cert("server.pem"),
                       "--tls-key", Cert("server.key"), "--tls-ca",
                       Cert("ca.pem"), "--token-file", token_file}),
                  dir_ + "/learner.log");
  ASSERT_FALSE(Address(learner).empty()) << learner.Log();
  std::vector<std::unique_ptr<Process>> actors;
  actors.reserve(2);
  for (int i = 0; i < 2; ++i) {
    actors.push_back(std::make_unique<Process>(
        CoordinatedActorArgv(
            RISTRETTO_ACTOR_BINARY, coordinator, absl::StrCat("a", i),
            dir_ + "/cache",
            {"--tls-ca", Cert("ca.pem"), "--tls-cert", Cert("client.pem"),
             "--tls-key", Cert("client.key"), "--token-file", token_file}),
        absl::StrCat(dir_, "/actor-", i, ".log")));
  }
  // Both actors reach the learner over mutual TLS with their tickets and are
  // assigned the run, however fast the study is.
  ASSERT_TRUE(HoldUntilAllAssigned({actors[0].get(), actors[1].get()}, 300s))
      << actors[0]->Log() << actors[1]->Log() << learner.Log();

  // Polls the study until it is done (the timeout only catches hangs).
  coordinator::StudyState state = coordinator::StudyState::kCreated;
  PollUntil(
      [&] {
        absl::StatusOr<coordinator::StudyRow> row =
            (*store)->GetStudyById(study->id);
        if (row.ok()) state = row->state;
        return state == coordinator::StudyState::kDone;
      },
      300s, 300ms);
  ASSERT_EQ(state, coordinator::StudyState::kDone)
      << coordinator_->Log() << learner.Log();
  absl::StatusOr<std::vector<coordinator::TrialRow>> trials =
      (*store)->ListTrials(study->id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ((*trials)[0].state, coordinator::TrialState::kComplete)
      << (*trials)[0].fail_reason;
  EXPECT_THAT(learner.Log(), HasSubstr("registered with " + coordinator));
  // Every actor was assigned the run (held above): past the handshake and
  // the ticket check at the learner.
  for (auto& actor : actors) {
    EXPECT_THAT(actor->Log(), HasSubstr("assigned run")) << actor->Log();
  }
  // With their tickets: the learner and the coordinator refused nothing.
  EXPECT_THAT(learner.Log(), ::testing::Not(HasSubstr("denied ")));
  EXPECT_THAT(coordinator_->Log(), ::testing::Not(HasSubstr("denied ")));

  for (auto& actor : actors) {
    EXPECT_EQ(Terminate(*actor, 30s).exit_code, 0) << actor->Log();
  }
  EXPECT_EQ(Terminate(learner, 60s).exit_code, 0) << learner.Log();
  EXPECT_EQ(Terminate(*coordinator_, 30s).exit_code, 0) << coordinator_->Log();
}

// Learners the coordinator's mutual TLS keeps out, each failing every
// registration and trying again: one that verifies the coordinator against
// another CA, and one whose client certificate another CA signed.
TEST_F(TlsStudyTest, LearnerThatCannotVerifyOrAuthenticateNeverRegisters) {
  const std::string coordinator = StartCoordinator();
  ASSERT_FALSE(coordinator.empty()) << coordinator_->Log();
  const std::string other = dir_ + "/other-certs";
  ASSERT_TRUE(MakeDevCerts(other));
  const auto start = [&](const std::string& name, const std::string& ca) {
    return std::make_unique<Process>(
        CoordinatedLearnerArgv(
            RISTRETTO_LEARNER_BINARY, coordinator, dir_ + "/" + name,
            {"--tls-cert", other + "/server.pem", "--tls-key",
             other + "/server.key", "--tls-ca", ca}),
        dir_ + "/" + name + ".log");
  };
  std::unique_ptr<Process> stranger = start("stranger", other + "/ca.pem");
  std::unique_ptr<Process> impostor = start("impostor", Cert("ca.pem"));
  const std::string refused = "cannot register with " + coordinator;
  for (Process* learner : {stranger.get(), impostor.get()}) {
    ASSERT_TRUE(learner->WaitForLog(refused, 60s)) << learner->Log();
    EXPECT_THAT(learner->Log(), ::testing::Not(HasSubstr("registered with")));
    EXPECT_FALSE(learner->Wait(0ms).has_value()) << "still trying";
    EXPECT_EQ(Terminate(*learner, 60s).exit_code, 0) << learner->Log();
  }
  EXPECT_EQ(Terminate(*coordinator_, 30s).exit_code, 0) << coordinator_->Log();
}

// A learner whose actors are under another CA than the coordinator: its
// --tls-* (server side) come from one CA, its --coordinator-tls-* (client
// side) from the coordinator's. It registers; the same learner without
// the --coordinator-tls-* flags (verifying the coordinator against its
// actors' CA) cannot.
TEST_F(TlsStudyTest,
       LearnerWithItsOwnActorCaRegistersThroughCoordinatorTlsFlags) {
  const std::string coordinator = StartCoordinator();
  ASSERT_FALSE(coordinator.empty()) << coordinator_->Log();
  const std::string actors_ca = dir_ + "/actor-certs";
  ASSERT_TRUE(MakeDevCerts(actors_ca));
  const auto start = [&](const std::string& name,
                         std::vector<std::string> coordinator_tls) {
    std::vector<std::string> extra = {"--tls-cert", actors_ca + "/server.pem",
                                      "--tls-key",  actors_ca + "/server.key",
                                      "--tls-ca",   actors_ca + "/ca.pem"};
    extra.insert(extra.end(), coordinator_tls.begin(), coordinator_tls.end());
    return std::make_unique<Process>(
        CoordinatedLearnerArgv(RISTRETTO_LEARNER_BINARY, coordinator,
                               dir_ + "/" + name, extra),
        dir_ + "/" + name + ".log");
  };
  std::unique_ptr<Process> split =
      start("split",
            {"--coordinator-tls-ca", Cert("ca.pem"), "--coordinator-tls-cert",
             Cert("client.pem"), "--coordinator-tls-key", Cert("client.key")});
  std::unique_ptr<Process> shared = start("shared", {});
  ASSERT_TRUE(split->WaitForLog("registered with " + coordinator, 60s))
      << split->Log();
  ASSERT_TRUE(shared->WaitForLog("cannot register with " + coordinator, 60s))
      << shared->Log();
  EXPECT_THAT(shared->Log(), ::testing::Not(HasSubstr("registered with")));
  for (Process* learner : {split.get(), shared.get()}) {
    EXPECT_EQ(Terminate(*learner, 60s).exit_code, 0) << learner->Log();
  }
  EXPECT_EQ(Terminate(*coordinator_, 30s).exit_code, 0) << coordinator_->Log();
}

// A coordinator given a certificate without its key stops before it
// connects to the database: one line naming the flag, exit 2.
TEST(TlsFlagsTest, CoordinatorWithACertificateButNoKeyExitsTwo) {
  absl::StatusOr<std::string> dir =
      coordinator::testing::MakeTempDir("ristretto_tls_flags_");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_TRUE(MakeDevCerts(*dir + "/certs"));
  Process coordinator(
      {RISTRETTO_COORDINATOR_BINARY, "--db", "dbname=none", "--data-dir",
       *dir + "/coordinator", "--tls-cert", *dir + "/certs/server.pem"},
      *dir + "/coordinator.log");
  ASSERT_EQ(coordinator.Wait(60s), 2) << coordinator.Log();
  EXPECT_THAT(coordinator.Log(), HasSubstr("--tls-cert needs --tls-key"));
  EXPECT_THAT(coordinator.Log(), ::testing::Not(HasSubstr("listening on")));
  if (!::testing::Test::HasFailure()) fs::remove_all(*dir);
}

// The learner's --coordinator-tls-* are checked before anything starts:
// an unreadable one names the coordinator side and the file, and the flags
// without --coordinator are refused. Exit 2 both times.
TEST(TlsFlagsTest, LearnerCoordinatorTlsFlagsAreCheckedBeforeItStarts) {
  absl::StatusOr<std::string> dir =
      coordinator::testing::MakeTempDir("ristretto_tls_flags_");
  ASSERT_TRUE(dir.ok()) << dir.status();
  Process missing({RISTRETTO_LEARNER_BINARY, "--coordinator", "127.0.0.1:1",
                   "--port", "0", "--run-dir", *dir + "/a",
                   "--coordinator-tls-ca", *dir + "/no-such-ca.pem"},
                  *dir + "/a.log");
  ASSERT_EQ(missing.Wait(60s), 2) << missing.Log();
  EXPECT_THAT(missing.Log(), HasSubstr("TLS towards the coordinator"));
  EXPECT_THAT(missing.Log(), HasSubstr("no-such-ca.pem"));
  EXPECT_THAT(missing.Log(), ::testing::Not(HasSubstr("listening on")));
  Process alone({RISTRETTO_LEARNER_BINARY, "--port", "0", "--run-dir",
                 *dir + "/b", "--coordinator-tls-ca", *dir + "/ca.pem"},
                *dir + "/b.log");
  ASSERT_EQ(alone.Wait(60s), 2) << alone.Log();
  EXPECT_THAT(alone.Log(), HasSubstr("--coordinator-tls-* need --coordinator"));
  if (!::testing::Test::HasFailure()) fs::remove_all(*dir);
}

}  // namespace
}  // namespace ristretto
