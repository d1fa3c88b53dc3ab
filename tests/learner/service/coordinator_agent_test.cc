// CoordinatorAgent driven in-process through FakeCoordinatorClient: what it
// sends the coordinator and how it reacts to the coordinator's answers.
// Runs that would train (RunHost) are not hosted here: the leases used
// either fail to build or do not fit the memory budget, which the agent
// decides before any torch code runs. GrpcCoordinatorClientTest checks the
// real client's credentials on an in-process gRPC server on 127.0.0.1.
#include "learner/service/coordinator_agent.h"

#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "learner/run_config_codec.h"
#include "learner/service/learner_service.h"
#include "proto/coordinator.grpc.pb.h"
#include "tests/learner/service/fake_coordinator_client.h"

namespace ristretto::learner {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Polls `done` until it holds or 5 s pass (a test fails long before).
bool WaitUntil(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return done();
}

v1::LeaseRunResponse Lease(int64_t run_id, const std::string& name,
                           const v1::RunConfig& config,
                           const std::string& dataset_id) {
  v1::LeaseRunResponse response;
  response.set_has_run(true);
  v1::RunLease* lease = response.mutable_lease();
  lease->set_run_id(run_id);
  lease->set_run_name(name);
  *lease->mutable_run_config() = config;
  lease->set_dataset_id(dataset_id);
  lease->set_attempt(1);
  return response;
}

class CoordinatorAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/agent_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    options_.coordinator_address = "coordinator.test:7070";
    options_.member_id = "learner-a";
    options_.advertise_address = "10.0.0.5:7000";
    options_.token = "t0k3n";
    options_.slots = 3;
    options_.memory_budget_bytes = int64_t{512} << 20;
    options_.device = "cpu";
    options_.cache_dir = dir_ + "/cache";
    options_.poll_interval = absl::Milliseconds(5);
    service_ = std::make_unique<LearnerService>(
        std::vector<std::shared_ptr<RunHost>>{}, LearnerServiceOptions{});
  }
  void TearDown() override {
    agent_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Creates the agent on a fresh fake (scripted by `script`) and starts it.
  void Start(const std::function<void(FakeCoordinatorClient&)>& script) {
    auto fake = std::make_unique<FakeCoordinatorClient>();
    fake_ = fake.get();
    script(*fake_);
    agent_ = std::make_unique<CoordinatorAgent>(options_, service_.get(),
                                                std::move(fake));
    agent_->Start();
  }

  std::string dir_;
  AgentOptions options_;
  std::unique_ptr<LearnerService> service_;
  FakeCoordinatorClient* fake_ = nullptr;  // owned by agent_
  std::unique_ptr<CoordinatorAgent> agent_;
};

TEST_F(CoordinatorAgentTest, RegistersItsCapacityLeasesHeartbeatsAndReleases) {
  Start([](FakeCoordinatorClient&) {});
  ASSERT_TRUE(WaitUntil([&] {
    return fake_->Count("LeaseRun") >= 2 && fake_->Count("Heartbeat") >= 2;
  }));
  agent_->Stop();

  const std::vector<v1::RegisterLearnerRequest> registers = fake_->registers();
  ASSERT_EQ(registers.size(), 1u);
  EXPECT_EQ(registers[0].member_id(), "learner-a");
  EXPECT_EQ(registers[0].address(), "10.0.0.5:7000");
  EXPECT_EQ(registers[0].slots(), 3);
  EXPECT_EQ(registers[0].memory_budget_mb(), 512);
  EXPECT_EQ(registers[0].device(), "cpu");
  EXPECT_EQ(registers[0].token(), "t0k3n");
  for (const v1::LeaseRunRequest& l : fake_->leases()) {
    EXPECT_EQ(l.member_id(), "learner-a");
  }
  for (const v1::HeartbeatRequest& h : fake_->heartbeats()) {
    EXPECT_EQ(h.member_id(), "learner-a");
    EXPECT_EQ(h.runs_size(), 0);  // nothing leased
  }
  const std::vector<FakeCoordinatorClient::Call> calls = fake_->calls();
  EXPECT_EQ(calls.front().method, "RegisterLearner");
  EXPECT_EQ(calls.back().method, "Release");
  ASSERT_EQ(fake_->releases().size(), 1u);
  EXPECT_EQ(fake_->releases()[0].member_id(), "learner-a");
  EXPECT_TRUE(agent_->summaries().empty());

  agent_->Stop();  // idempotent: nothing is released twice
  EXPECT_EQ(fake_->Count("Release"), 1);
}

TEST_F(CoordinatorAgentTest, RetriesRegistrationWithGrowingBackoff) {
  Start([](FakeCoordinatorClient& f) {
    f.ScriptRegister(absl::UnavailableError("connection refused"));
    f.ScriptRegister(absl::UnavailableError("connection refused"));
  });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("LeaseRun") >= 1; }));
  agent_->Stop();

  std::vector<absl::Time> registered_at;
  bool leased_before_registered = false;
  for (const FakeCoordinatorClient::Call& c : fake_->calls()) {
    if (c.method == "RegisterLearner") registered_at.push_back(c.at);
    if (c.method != "RegisterLearner" && c.method != "Release" &&
        registered_at.size() < 3) {
      leased_before_registered = true;
    }
  }
  ASSERT_EQ(registered_at.size(), 3u);
  EXPECT_FALSE(leased_before_registered);
  // Waits 100 ms after the first refusal, then 200 ms.
  EXPECT_GE(registered_at[1] - registered_at[0], absl::Milliseconds(100));
  EXPECT_GE(registered_at[2] - registered_at[1], absl::Milliseconds(200));
}

TEST_F(CoordinatorAgentTest, RegistersAgainWhenAHeartbeatIsNotKnown) {
  Start([](FakeCoordinatorClient& f) {
    f.ScriptHeartbeat(absl::NotFoundError("unknown member learner-a"));
  });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("RegisterLearner") >= 2; }));
  agent_->Stop();
  EXPECT_GE(fake_->Count("Heartbeat"), 1);
}

TEST_F(CoordinatorAgentTest, RegistersAgainWhenALeaseIsNotKnown) {
  Start([](FakeCoordinatorClient& f) {
    f.ScriptLease(absl::NotFoundError("unknown member learner-a"));
  });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("RegisterLearner") >= 2; }));
  agent_->Stop();
}

v1::RegisterLearnerResponse Session(const std::string& secret) {
  v1::RegisterLearnerResponse response;
  response.set_lease_ttl_ms(30000);
  response.set_session_token(secret);
  return response;
}

TEST_F(CoordinatorAgentTest, PresentsItsSessionSecretOnEveryLaterCall) {
  Start([](FakeCoordinatorClient& f) { f.ScriptRegister(Session("s-1")); });
  ASSERT_TRUE(WaitUntil([&] {
    return fake_->Count("LeaseRun") >= 2 && fake_->Count("Heartbeat") >= 2;
  }));
  agent_->Stop();
  const std::vector<FakeCoordinatorClient::Call> calls = fake_->calls();
  ASSERT_GE(calls.size(), 4u);
  EXPECT_EQ(calls[0].method, "RegisterLearner");
  EXPECT_EQ(calls[0].session, "");  // the registration token is in the request
  for (size_t i = 1; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].session, "s-1") << calls[i].method;
  }
  EXPECT_EQ(calls.back().method, "Release");
}

TEST_F(CoordinatorAgentTest, RegistersAgainAndRetriesWhenUnauthenticated) {
  // The coordinator restarted: the first lease is refused for the unknown
  // secret; the agent registers again and repeats the lease with the new
  // secret at once.
  Start([](FakeCoordinatorClient& f) {
    f.ScriptRegister(Session("old"));
    f.ScriptRegister(Session("new"));
    f.ScriptLease(absl::UnauthenticatedError("unknown credentials"));
  });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("Heartbeat") >= 2; }));
  agent_->Stop();
  const std::vector<FakeCoordinatorClient::Call> calls = fake_->calls();
  ASSERT_GE(calls.size(), 5u);
  EXPECT_EQ(calls[0].method, "RegisterLearner");
  EXPECT_EQ(calls[1].method, "Heartbeat");
  EXPECT_EQ(calls[1].session, "old");
  EXPECT_EQ(calls[2].method, "LeaseRun");  // refused
  EXPECT_EQ(calls[2].session, "old");
  EXPECT_EQ(calls[3].method, "RegisterLearner");
  EXPECT_EQ(calls[4].method, "LeaseRun");  // repeated with the new secret
  EXPECT_EQ(calls[4].session, "new");
  EXPECT_EQ(fake_->Count("RegisterLearner"), 2);
  for (size_t i = 4; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].session, "new") << calls[i].method;
  }
}

TEST_F(CoordinatorAgentTest, FailsALeaseWhoseOptionsDoNotParse) {
  // A value outside the schema: refused by the learner's decoder.
  v1::RunConfig bad = TrainerOptionsToRunConfig(TrainerOptions());
  for (v1::RunOptionValue& v : *bad.mutable_options()) {
    if (v.name() == "epochs") v.set_integer(0);
  }
  const absl::Status parse_error = TrainerOptionsFromRunConfig(bad).status();
  ASSERT_FALSE(parse_error.ok());
  EXPECT_EQ(parse_error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parse_error.message()), HasSubstr("epochs"));
  Start([&](FakeCoordinatorClient& f) {
    f.ScriptLease(Lease(42, "study-x/trial-3/fold-0", bad, "d0"));
  });
  ASSERT_TRUE(WaitUntil([&] {
    return fake_->Count("FailRun") >= 1 && fake_->Count("Heartbeat") >= 2;
  }));
  agent_->Stop();

  const std::vector<v1::FailRunRequest> fails = fake_->fails();
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_EQ(fails[0].member_id(), "learner-a");
  EXPECT_EQ(fails[0].run_id(), 42);
  EXPECT_EQ(fails[0].reason(), parse_error.message());
  // The failed lease holds no slot and is never heartbeated.
  for (const v1::HeartbeatRequest& h : fake_->heartbeats()) {
    EXPECT_EQ(h.runs_size(), 0);
  }
  EXPECT_EQ(fake_->Count("FetchDataset"), 0);  // refused before fetching
  const std::vector<AgentRunSummary> summaries = agent_->summaries();
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].run_name, "study-x/trial-3/fold-0");
  EXPECT_EQ(summaries[0].outcome,
            "failed: " + std::string(parse_error.message()));
}

TEST_F(CoordinatorAgentTest, FailsALeaseWithoutItsRunConfig) {
  v1::LeaseRunResponse lease =
      Lease(43, "study-x/trial-4/fold-0", v1::RunConfig(), "d0");
  lease.mutable_lease()->clear_run_config();  // not the defaults: nothing
  Start([&](FakeCoordinatorClient& f) { f.ScriptLease(lease); });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("FailRun") >= 1; }));
  agent_->Stop();

  const std::vector<v1::FailRunRequest> fails = fake_->fails();
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_EQ(fails[0].run_id(), 43);
  EXPECT_THAT(fails[0].reason(), HasSubstr("carries no run_config"));
  EXPECT_EQ(fake_->Count("FetchDataset"), 0);
}

TEST_F(CoordinatorAgentTest, FailsRunsLargerThanTheMemoryBudget) {
  env::SyntheticMarketOptions market;
  market.num_assets = 2;
  market.num_rows = 300;
  market.seed = 5;
  absl::StatusOr<env::Dataset> dataset = env::GenerateSyntheticDataset(market);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  const std::string id = dataset->ComputeId();
  const v1::RunConfig config = TrainerOptionsToRunConfig(TrainerOptions());
  options_.memory_budget_bytes = int64_t{1} << 20;  // 1 MiB: nothing fits
  Start([&](FakeCoordinatorClient& f) {
    f.AddDataset(*dataset);
    f.ScriptLease(Lease(7, "s/trial-0/fold-0", config, id));
    f.ScriptLease(Lease(8, "s/trial-0/fold-1", config, id));
  });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("FailRun") >= 2; }));
  agent_->Stop();

  const std::vector<v1::FailRunRequest> fails = fake_->fails();
  ASSERT_EQ(fails.size(), 2u);
  EXPECT_EQ(fails[0].run_id(), 7);
  EXPECT_EQ(fails[1].run_id(), 8);
  for (const v1::FailRunRequest& f : fails) {
    EXPECT_THAT(f.reason(), StartsWith("the run needs about "));
    EXPECT_THAT(f.reason(),
                HasSubstr("but the learner's memory budget is 1 MiB"));
  }
  // Fetched once into the cache, then reused for the second run.
  EXPECT_EQ(fake_->Count("FetchDataset"), 1);
  EXPECT_TRUE(std::filesystem::exists(options_.cache_dir + "/" + id + ".rds"));
  EXPECT_EQ(agent_->summaries().size(), 2u);
}

TEST_F(CoordinatorAgentTest, FailsALeaseWhoseDatasetCannotBeFetched) {
  const v1::RunConfig config = TrainerOptionsToRunConfig(TrainerOptions());
  Start([&](FakeCoordinatorClient& f) {
    f.ScriptLease(Lease(9, "s/trial-1/fold-0", config, "no-such-id"));
  });
  ASSERT_TRUE(WaitUntil([&] { return fake_->Count("FailRun") >= 1; }));
  agent_->Stop();

  const std::vector<v1::FailRunRequest> fails = fake_->fails();
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_EQ(fails[0].run_id(), 9);
  EXPECT_THAT(fails[0].reason(), HasSubstr("no-such-id"));
  EXPECT_EQ(fake_->Count("FetchDataset"), 1);
}

// The gRPC CoordinatorClient against an in-process server on 127.0.0.1 that
// records the "authorization" metadata of each call.
class RecordingCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status RegisterLearner(grpc::ServerContext* context,
                               const v1::RegisterLearnerRequest* /*request*/,
                               v1::RegisterLearnerResponse* response) override {
    Record("RegisterLearner", *context);
    response->set_session_token("session-1");
    return grpc::Status::OK;
  }
  grpc::Status LeaseRun(grpc::ServerContext* context,
                        const v1::LeaseRunRequest* /*request*/,
                        v1::LeaseRunResponse* /*response*/) override {
    Record("LeaseRun", *context);
    return grpc::Status::OK;
  }
  grpc::Status FetchDataset(
      grpc::ServerContext* context, const v1::FetchDatasetRequest* /*request*/,
      grpc::ServerWriter<v1::DatasetPiece>* /*writer*/) override {
    Record("FetchDataset", *context);
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no dataset");
  }

  // method -> the authorization values it carried ("" for none).
  std::vector<std::pair<std::string, std::string>> seen() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  void Record(const std::string& method, const grpc::ServerContext& context) {
    std::string value;
    const auto it = context.client_metadata().find("authorization");
    if (it != context.client_metadata().end()) {
      value.assign(it->second.data(), it->second.size());
    }
    absl::MutexLock lock(&mu_);
    seen_.emplace_back(method, value);
  }

  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, std::string>> seen_ ABSL_GUARDED_BY(mu_);
};

TEST(GrpcCoordinatorClientTest, SendsTheSessionSecretOnEveryCallButRegister) {
  RecordingCoordinator coordinator;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&coordinator);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);
  std::unique_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(
      absl::StrCat("127.0.0.1:", port), absl::Seconds(5));
  v1::LeaseRunRequest lease;
  ASSERT_TRUE(client->LeaseRun(lease).ok());  // before any session: none
  absl::StatusOr<v1::RegisterLearnerResponse> registered =
      client->RegisterLearner(v1::RegisterLearnerRequest());
  ASSERT_TRUE(registered.ok()) << registered.status();
  client->SetSessionToken(registered->session_token());
  ASSERT_TRUE(client->LeaseRun(lease).ok());
  EXPECT_FALSE(  // the server has no such dataset
      client->FetchDataset("d0", ::testing::TempDir() + "/d0.rds").ok());
  ASSERT_TRUE(client->RegisterLearner(v1::RegisterLearnerRequest()).ok());
  server->Shutdown();
  using Seen = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(coordinator.seen(), (Seen{{"LeaseRun", ""},
                                      {"RegisterLearner", ""},
                                      {"LeaseRun", "Bearer session-1"},
                                      {"FetchDataset", "Bearer session-1"},
                                      {"RegisterLearner", ""}}));
}

}  // namespace
}  // namespace ristretto::learner
