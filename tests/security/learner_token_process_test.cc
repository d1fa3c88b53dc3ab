// A stand-alone ristretto-learner with a token (--token-file), real
// processes on 127.0.0.1: an actor without the token is refused
// (UNAUTHENTICATED, counted in ristretto_learner_rpc_denied_total) and
// never streams a step, while an actor with the same --token-file trains
// the run to its budget. And servers without credentials stay on loopback:
// a learner or coordinator told to bind 0.0.0.0 with neither a token nor
// mutual TLS refuses to start unless --allow-insecure-network. A
// coordinated learner's token (the one every learner registers with) is no
// actor credential at its port: Act and FetchDataset need a ticket.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/secret_file.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/common/log_lines.h"
#include "tests/common/metrics_scrape.h"
#include "tests/common/temp_dir.h"
#include "tests/integration/log_fields.h"
#include "tests/integration/process.h"

namespace ristretto {
namespace {

using ::ristretto::testing::Field;
using ::ristretto::testing::Process;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(LearnerTokenProcessTest, OnlyActorsWithTheTokenStreamIntoTheRun) {
  tests::TempDir dir("ristretto_learner_token_");
  absl::StatusOr<std::string> token = GenerateToken();
  ASSERT_TRUE(token.ok()) << token.status();
  const std::string token_file = dir.Path("token");
  ASSERT_TRUE(WriteSecretFile(token_file, *token).ok());
  Process learner({RISTRETTO_LEARNER_BINARY,
                   "--port",
                   "0",
                   "--run-dir",
                   dir.Path("runs"),
                   "--synthetic-rows",
                   "1200",
                   "--synthetic-assets",
                   "2",
                   "--policy-hidden",
                   "16,16",
                   "--samples-per-update",
                   "512",
                   "--rollout",
                   "32",
                   "--episode",
                   "200",
                   "--epochs",
                   "1",
                   "--minibatch",
                   "256",
                   "--budget",
                   "4096",
                   "--token-file",
                   token_file,
                   "--metrics-port",
                   "auto",
                   "--metrics-address",
                   "127.0.0.1"},
                  dir.Path("learner.log"));
  const std::string address = tests::WaitForListeningAddress(learner, 60s);
  ASSERT_FALSE(address.empty()) << learner.Log();
  EXPECT_THAT(learner.Log(), HasSubstr("every call authenticated"));
  ASSERT_TRUE(learner.WaitForLog("metrics on ", 60s)) << learner.Log();
  const std::string metrics_line =
      learner.Log().substr(learner.Log().find("metrics on "));
  const int metrics_port = std::stoi(
      metrics_line.substr(metrics_line.find(':') + 1, metrics_line.find('\n')));

  // The stranger: no token. Its streams end UNAUTHENTICATED (it retries).
  Process stranger(
      {RISTRETTO_ACTOR_BINARY, "--learner", address, "--envs", "4",
       "--actor-id", "stranger", "--cache-dir", dir.Path("cache-stranger")},
      dir.Path("stranger.log"));
  ASSERT_TRUE(stranger.WaitForLog("UNAUTHENTICATED", 60s)) << stranger.Log();
  const std::optional<double> denied = ristretto::testing::SampleValue(
      ristretto::testing::HttpGet(metrics_port).value_or(""),
      "ristretto_learner_rpc_denied_total",
      {{"method", "Act"}, {"code", "unauthenticated"}});
  ASSERT_TRUE(denied.has_value());
  EXPECT_GE(*denied, 1);

  // The actor with the token trains the run to its budget.
  Process actor(
      {RISTRETTO_ACTOR_BINARY, "--learner", address, "--envs", "8",
       "--actor-id", "member", "--cache-dir", dir.Path("cache-member"),
       "--token-file", token_file, "--exit-when-idle"},
      dir.Path("member.log"));
  ASSERT_EQ(actor.Wait(300s), 0) << actor.Log() << learner.Log();
  EXPECT_GT(Field(actor.Log(), "env_steps_sent=", "env_steps_sent"), 0)
      << actor.Log();

  stranger.Signal(SIGTERM);
  ASSERT_EQ(stranger.Wait(30s), 0) << stranger.Log();
  EXPECT_EQ(Field(stranger.Log(), "env_steps_sent=", "env_steps_sent"), 0)
      << stranger.Log();
  learner.Signal(SIGTERM);
  ASSERT_EQ(learner.Wait(60s), 0) << learner.Log();
  // Every step the learner received came from the member.
  EXPECT_EQ(Field(learner.Log(), "learner: run run-0", "received"),
            Field(actor.Log(), "env_steps_sent=", "env_steps_sent"))
      << learner.Log();
}

// A coordinated ristretto-learner: its --token-file is what it registers
// with (the learners' token, which every learner host holds), so at its own
// port the token reads GetStatus but joins no run as any actor and
// downloads nothing: actors present the coordinator's tickets. No
// coordinator answers at --coordinator: the learner serves while it retries
// registering.
TEST(LearnerTokenProcessTest, ACoordinatedLearnersTokenIsNoActorCredential) {
  tests::TempDir dir("ristretto_learner_coordinated_token_");
  absl::StatusOr<std::string> token = GenerateToken();
  ASSERT_TRUE(token.ok()) << token.status();
  const std::string token_file = dir.Path("token");
  ASSERT_TRUE(WriteSecretFile(token_file, *token).ok());
  Process learner(
      {RISTRETTO_LEARNER_BINARY, "--coordinator", "127.0.0.1:1", "--port", "0",
       "--run-dir", dir.Path("runs"), "--token-file", token_file},
      dir.Path("learner.log"));
  const std::string address = tests::WaitForListeningAddress(learner, 60s);
  ASSERT_FALSE(address.empty()) << learner.Log();
  const std::unique_ptr<v1::Learner::Stub> stub = v1::Learner::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  const auto with_token = [&] {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + 10s);
    context->AddMetadata(auth::kMetadataKey, auth::BearerValue(*token));
    return context;
  };
  {
    const std::unique_ptr<grpc::ClientContext> context = with_token();
    const auto call = stub->Act(context.get());
    v1::ActorMessage hello;
    hello.mutable_hello()->set_actor_id("any-actor");
    hello.mutable_hello()->set_env_copies(1);
    (void)call->Write(hello);  // the server may have answered already
    (void)call->WritesDone();
    v1::LearnerMessage message;
    while (call->Read(&message)) {
    }
    const grpc::Status act = call->Finish();
    EXPECT_EQ(act.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << act.error_message();
    EXPECT_THAT(act.error_message(), HasSubstr("ticket"));
  }
  {
    const std::unique_ptr<grpc::ClientContext> context = with_token();
    v1::FetchDatasetRequest request;
    request.set_dataset_id(std::string(64, 'a'));
    const auto reader = stub->FetchDataset(context.get(), request);
    v1::DatasetPiece piece;
    while (reader->Read(&piece)) {
    }
    EXPECT_EQ(reader->Finish().error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  v1::LearnerStatus status;
  const grpc::Status read =
      stub->GetStatus(with_token().get(), v1::StatusRequest(), &status);
  EXPECT_TRUE(read.ok()) << read.error_message();
  learner.Signal(SIGTERM);
  EXPECT_TRUE(learner.Wait(60s).has_value()) << learner.Log();
}

#ifdef RISTRETTO_COORDINATOR_BINARY
// The coordinator's learners' token follows the secret-file rules and must
// be a token of its own, beside a cluster token: each misuse exits 2 with
// one line, before the database is touched (this DSN is never dialled).
TEST(CoordinatorTokenFlagsTest, ALearnersTokenMustBeATokenOfItsOwn) {
  tests::TempDir dir("ristretto_learner_token_flags_");
  absl::StatusOr<std::string> cluster = GenerateToken();
  absl::StatusOr<std::string> learners = GenerateToken();
  ASSERT_TRUE(cluster.ok() && learners.ok());
  ASSERT_TRUE(WriteSecretFile(dir.Path("token"), *cluster).ok());
  ASSERT_TRUE(WriteSecretFile(dir.Path("learner-token"), *learners).ok());
  const auto refused = [&](const std::vector<std::string>& flags,
                           const std::string& says) {
    std::vector<std::string> argv = {RISTRETTO_COORDINATOR_BINARY, "--db",
                                     "host=/nonexistent dbname=none",
                                     "--data-dir", dir.Path("coordinator")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Process coordinator(argv, dir.Path("coordinator.log"));
    EXPECT_EQ(coordinator.Wait(60s), 2) << coordinator.Log();
    EXPECT_THAT(coordinator.Log(), HasSubstr(says));
    EXPECT_THAT(coordinator.Log(), ::testing::Not(HasSubstr(*learners)));
  };
  refused({"--learner-token", *learners}, "--learner-token VALUE is refused");
  refused({"--learner-token-file", dir.Path("learner-token")},
          "needs a cluster token");
  refused({"--token-file", dir.Path("token"), "--learner-token-file",
           dir.Path("token")},
          "the learners' token equals the cluster token");
  refused({"--token-file", dir.Path("token"), "--actor-token-file",
           dir.Path("learner-token"), "--learner-token-file",
           dir.Path("learner-token")},
          "the learners' token equals the actors' token");
}
#endif  // RISTRETTO_COORDINATOR_BINARY

TEST(LoopbackOnlyTest, ServersWithoutCredentialsRefuseANetworkAddress) {
  tests::TempDir dir("ristretto_loopback_");
  Process learner({RISTRETTO_LEARNER_BINARY, "--address", "0.0.0.0", "--port",
                   "0", "--run-dir", dir.Path("runs")},
                  dir.Path("learner.log"));
  EXPECT_EQ(learner.Wait(60s), 1) << learner.Log();
  EXPECT_THAT(learner.Log(), HasSubstr("refusing to serve on 0.0.0.0 without "
                                       "credentials"));
  EXPECT_THAT(learner.Log(), ::testing::Not(HasSubstr("listening on")));
#ifdef RISTRETTO_COORDINATOR_BINARY
  // Refused before the database is touched: this DSN is never dialled.
  Process coordinator(
      {RISTRETTO_COORDINATOR_BINARY, "--db", "host=/nonexistent dbname=none",
       "--address", "0.0.0.0", "--data-dir", dir.Path("coordinator")},
      dir.Path("coordinator.log"));
  EXPECT_EQ(coordinator.Wait(60s), 1) << coordinator.Log();
  EXPECT_THAT(coordinator.Log(),
              HasSubstr("refusing to serve on 0.0.0.0 without credentials"));
#endif
  // Explicitly allowed: it serves, and says what is open.
  Process allowed(
      {RISTRETTO_LEARNER_BINARY, "--address", "0.0.0.0", "--port", "0",
       "--run-dir", dir.Path("runs-2"), "--allow-insecure-network"},
      dir.Path("allowed.log"));
  EXPECT_FALSE(tests::WaitForListeningAddress(allowed, 60s).empty())
      << allowed.Log();
  EXPECT_THAT(allowed.Log(), HasSubstr("calls NOT authenticated, reachable "
                                       "from the network"));
  allowed.Signal(SIGTERM);
  EXPECT_EQ(allowed.Wait(60s), 0) << allowed.Log();
}

}  // namespace
}  // namespace ristretto
