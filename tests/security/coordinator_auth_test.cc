// Attacks on a real coordinator with a token: a ristretto-coordinator
// process (--token-file, --metrics-port auto) on 127.0.0.1 over the
// harness's PostgreSQL, called by a raw gRPC stub that plays a hostile
// client. One test per attack; each checks the refusal's gRPC code, that
// nothing was changed in the database, and that
// ristretto_coordinator_rpc_denied_total counted it.
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/auth.h"
#include "common/secret_file.h"
#include "coordinator/store/store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"
#include "tests/common/metrics_scrape.h"
#include "tests/coordinator_store/pg_test_env.h"
#include "tests/integration/dev_certs.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"

namespace ristretto::coordinator {
namespace {

using ::ristretto::testing::CoordinatedActorArgv;
using ::ristretto::testing::CoordinatorArgv;
using ::ristretto::testing::PollUntil;
using ::ristretto::testing::Process;
using ::ristretto::testing::TinyStudy;
using ::ristretto::testing::TinyStudyYaml;
using namespace std::chrono_literals;

// One small holdout study: trials (and runs to lease) appear at the first
// scheduling pass.
std::string SecStudy() {
  TinyStudy study;
  study.name = "sec";
  study.max_trials = 2;
  study.concurrency = 2;
  study.max_attempts = std::nullopt;
  return TinyStudyYaml(study);
}

constexpr char kA[] = "learner-a";
constexpr char kB[] = "learner-b";

// The first "<what> HOST:PORT" in the process's log ("" after 60 s).
std::string Logged(Process& p, const std::string& what) {
  return ristretto::testing::WaitForLoggedWord(p, what, 60s);
}

class CoordinatorAuthTest : public testing::PgDatabaseTest {
 protected:
  // `with_learner_token`: the coordinator also gets --learner-token-file
  // (learners then register with it, not with the cluster token).
  // `with_mtls`: it runs mutual TLS (scripts/make_dev_certs.sh certificates,
  // with client certificates host-a and host-b besides client); stub_
  // presents client.pem.
  // `require_named`: it also runs with --require-named-certificates.
  // `with_token` false: no --token-file nor --actor-token-file (mutual TLS
  // alone authenticates, if on).
  explicit CoordinatorAuthTest(bool with_learner_token = false,
                               bool with_mtls = false,
                               bool require_named = false,
                               bool with_token = true)
      : with_learner_token_(with_learner_token),
        with_mtls_(with_mtls),
        require_named_(require_named),
        with_token_(with_token) {}

  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    unsetenv("RISTRETTO_TOKEN");  // the token comes from the file only
    absl::StatusOr<std::string> dir = testing::MakeTempDir("ristretto_sec_");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    absl::StatusOr<std::unique_ptr<Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    absl::StatusOr<StudyRow> study = store_->CreateStudy("sec", SecStudy());
    ASSERT_TRUE(study.ok()) << study.status();
    study_id_ = study->id;
    ASSERT_TRUE(store_->SetStudyState(study_id_, StudyState::kRunning).ok());
    absl::StatusOr<std::string> token = GenerateToken();
    ASSERT_TRUE(token.ok()) << token.status();
    token_ = *token;
    ASSERT_TRUE(WriteSecretFile(dir_ + "/token", token_).ok());
    absl::StatusOr<std::string> actor_token = GenerateToken();
    ASSERT_TRUE(actor_token.ok()) << actor_token.status();
    actor_token_ = *actor_token;
    ASSERT_TRUE(WriteSecretFile(dir_ + "/actor-token", actor_token_).ok());
    absl::StatusOr<std::string> learner_token = GenerateToken();
    ASSERT_TRUE(learner_token.ok()) << learner_token.status();
    learner_token_ = *learner_token;
    ASSERT_TRUE(WriteSecretFile(dir_ + "/learner-token", learner_token_).ok());
    std::vector<std::string> flags = {"--metrics-port", "auto",
                                      "--metrics-address", "127.0.0.1"};
    if (with_token_) {
      flags.insert(flags.end(), {"--token-file", dir_ + "/token",
                                 "--actor-token-file", dir_ + "/actor-token"});
    }
    if (with_learner_token_) {
      flags.insert(flags.end(),
                   {"--learner-token-file", dir_ + "/learner-token"});
    }
    if (with_mtls_) {
      // host-a, host-b: actor hosts' certificates that name nothing;
      // actor-x, actor-y, learner-learner-a: certificates that name their
      // holder (urn:ristretto:actor:x, ...).
      ASSERT_TRUE(tests::MakeDevCerts(
          dir_ + "/tls", {"host-a", "host-b"},
          {"--actor", "x", "--actor", "y", "--learner", kA}));
      flags.insert(flags.end(), {"--tls-cert", dir_ + "/tls/server.pem",
                                 "--tls-key", dir_ + "/tls/server.key",
                                 "--tls-ca", dir_ + "/tls/ca.pem"});
    }
    if (require_named_) flags.push_back("--require-named-certificates");
    coordinator_ = std::make_unique<Process>(
        CoordinatorArgv(RISTRETTO_COORDINATOR_BINARY, dsn(),
                        dir_ + "/coordinator", flags, "0", "100"),
        dir_ + "/coordinator.log");
    const std::string address = Logged(*coordinator_, "listening on ");
    ASSERT_FALSE(address.empty()) << coordinator_->Log();
    const std::string metrics = Logged(*coordinator_, "metrics on ");
    ASSERT_FALSE(metrics.empty()) << coordinator_->Log();
    metrics_port_ = std::stoi(metrics.substr(metrics.rfind(':') + 1));
    address_ = address;
    stub_ = with_mtls_ ? StubAs("client")
                       : v1::Coordinator::NewStub(grpc::CreateChannel(
                             address, grpc::InsecureChannelCredentials()));
  }

  // Under mutual TLS: a stub presenting the client certificate `name`.pem.
  std::unique_ptr<v1::Coordinator::Stub> StubAs(const std::string& name) {
    const std::string tls = dir_ + "/tls/";
    return v1::Coordinator::NewStub(grpc::CreateChannel(
        address_,
        ristretto::testing::ChannelCredentials(
            {tls + name + ".pem", tls + name + ".key", tls + "ca.pem"})));
  }
  void TearDown() override {
    coordinator_.reset();
    if (!HasFailure() && !dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // A client context with a deadline and, unless empty, `authorization`.
  static std::unique_ptr<grpc::ClientContext> Context(
      const std::string& authorization) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + 10s);
    if (!authorization.empty()) {
      ctx->AddMetadata(auth::kMetadataKey, authorization);
    }
    return ctx;
  }

  grpc::Status Register(const std::string& member, const std::string& token,
                        v1::RegisterLearnerResponse* response) {
    v1::RegisterLearnerRequest request;
    request.set_member_id(member);
    request.set_address("127.0.0.1:9");
    request.set_slots(2);
    request.set_token(token);
    return stub_->RegisterLearner(Context("").get(), request, response);
  }

  // The token learners register with.
  const std::string& RegistrationToken() const {
    return with_learner_token_ ? learner_token_ : token_;
  }

  // Registers `member` with the right token; its session secret.
  std::string Session(const std::string& member) {
    v1::RegisterLearnerResponse response;
    const grpc::Status s = Register(member, RegistrationToken(), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(response.session_token().empty());
    return response.session_token();
  }

  grpc::Status Lease(const std::string& authorization,
                     const std::string& member, v1::LeaseRunResponse* lease) {
    v1::LeaseRunRequest request;
    request.set_member_id(member);
    return stub_->LeaseRun(Context(authorization).get(), request, lease);
  }

  // Registers kA and leases a run for it (waiting for the first pass to
  // create the trials); the lease.
  v1::RunLease LeaseForA() {
    secret_a_ = Session(kA);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      v1::LeaseRunResponse lease;
      const grpc::Status s = Lease(auth::BearerValue(secret_a_), kA, &lease);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) break;
      if (lease.has_run()) return lease.lease();
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "no run leased; " << coordinator_->Log();
    return v1::RunLease();
  }

  // FetchDataset of `dataset_id` with `authorization`, the whole stream
  // read: its final status, and in `bytes` the bytes received.
  grpc::Status Fetch(const std::string& authorization,
                     const std::string& dataset_id, int64_t* bytes,
                     v1::Coordinator::Stub* stub = nullptr) {
    v1::FetchDatasetRequest request;
    request.set_dataset_id(dataset_id);
    std::unique_ptr<grpc::ClientContext> ctx = Context(authorization);
    std::unique_ptr<grpc::ClientReader<v1::DatasetPiece>> reader =
        (stub != nullptr ? stub : stub_.get())
            ->FetchDataset(ctx.get(), request);
    v1::DatasetPiece piece;
    *bytes = 0;
    while (reader->Read(&piece)) {
      *bytes += static_cast<int64_t>(piece.data().size());
    }
    return reader->Finish();
  }

  // ristretto_coordinator_rpc_denied_total{method, code} (-1: absent).
  double Denied(const std::string& method, const std::string& code) {
    const std::optional<std::string> body =
        ristretto::testing::HttpGet(metrics_port_);
    if (!body.has_value()) return -1;
    return ristretto::testing::SampleValue(
               *body, "ristretto_coordinator_rpc_denied_total",
               {{"code", code}, {"method", method}})
        .value_or(-1);
  }

  // Whether the database has a member `id` (FindLearner records actors).
  bool MemberKnown(const std::string& id) {
    absl::StatusOr<std::vector<MemberRow>> members = store_->ListMembers();
    if (!members.ok()) return false;
    for (const MemberRow& m : *members) {
      if (m.id == id) return true;
    }
    return false;
  }

  // The run as the database has it.
  RunRow Run(int64_t run_id) {
    absl::StatusOr<RunRow> run = store_->GetRun(run_id);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : RunRow();
  }

  const bool with_learner_token_;
  const bool with_mtls_;
  const bool require_named_;
  const bool with_token_;
  std::string address_;
  std::string dir_;
  std::string token_;
  std::string actor_token_;
  std::string learner_token_;
  std::string secret_a_;
  int64_t study_id_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Process> coordinator_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(CoordinatorAuthTest, WrongRegistrationTokenIsUnauthenticated) {
  v1::RegisterLearnerResponse response;
  EXPECT_EQ(Register(kA, token_ + "0", &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register(kA, "", &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(response.session_token().empty());
  EXPECT_EQ(Denied("RegisterLearner", "unauthenticated"), 2);
  absl::StatusOr<std::vector<MemberRow>> members = store_->ListMembers();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_TRUE(members->empty());  // nothing registered
}

TEST_F(CoordinatorAuthTest, MemberIdWithoutItsSecretIsUnauthenticated) {
  Session(kA);  // the real learner is registered
  v1::LeaseRunResponse lease;
  EXPECT_EQ(Lease("", kA, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // The cluster token is no learner credential; a guessed secret is none.
  EXPECT_EQ(Lease(auth::BearerValue(token_), kA, &lease).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(
      Lease(auth::BearerValue(std::string(64, '0')), kA, &lease).error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  v1::HeartbeatRequest beat;
  beat.set_member_id(kA);
  v1::HeartbeatResponse heard;
  EXPECT_EQ(stub_->Heartbeat(Context("").get(), beat, &heard).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Denied("LeaseRun", "unauthenticated"), 2);
  EXPECT_EQ(Denied("LeaseRun", "permission_denied"), 1);
  EXPECT_EQ(Denied("Heartbeat", "unauthenticated"), 1);
}

TEST_F(CoordinatorAuthTest, AnotherLearnersSecretIsPermissionDenied) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  const std::string secret_b = Session(kB);
  // B, with its own valid secret, claims to be A.
  v1::LeaseRunResponse stolen;
  EXPECT_EQ(Lease(auth::BearerValue(secret_b), kA, &stolen).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::HeartbeatRequest beat;
  beat.set_member_id(kA);
  v1::HeartbeatResponse heard;
  EXPECT_EQ(
      stub_->Heartbeat(Context(auth::BearerValue(secret_b)).get(), beat, &heard)
          .error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("LeaseRun", "permission_denied"), 1);
  EXPECT_EQ(Denied("Heartbeat", "permission_denied"), 1);
  // A re-registering revokes its old secret.
  const std::string old = secret_a_;
  const std::string fresh = Session(kA);
  EXPECT_NE(fresh, old);
  v1::LeaseRunResponse lease_again;
  EXPECT_EQ(Lease(auth::BearerValue(old), kA, &lease_again).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Lease(auth::BearerValue(fresh), kA, &lease_again).ok());
}

TEST_F(CoordinatorAuthTest, ReleaseByAStrangerIsRefused) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  const std::string secret_b = Session(kB);
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  EXPECT_EQ(stub_->Release(Context("").get(), release, &released).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(stub_
                ->Release(Context(auth::BearerValue(secret_b)).get(), release,
                          &released)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  const RunRow run = Run(lease.run_id());
  EXPECT_EQ(run.state, RunState::kLeased);
  EXPECT_EQ(run.member_id, kA);
  EXPECT_EQ(run.attempts, 1);  // no attempt burnt
  EXPECT_EQ(Denied("Release", "unauthenticated"), 1);
  EXPECT_EQ(Denied("Release", "permission_denied"), 1);
}

TEST_F(CoordinatorAuthTest, FailRunAndCompleteRunByAStrangerAreRefused) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  const std::string secret_b = Session(kB);
  for (const std::string& member : {std::string(kA), std::string(kB)}) {
    // As A (impersonation) and as itself (another member's run).
    v1::FailRunRequest fail;
    fail.set_member_id(member);
    fail.set_run_id(lease.run_id());
    fail.set_reason("sabotage");
    v1::FailRunResponse failed;
    EXPECT_EQ(
        stub_
            ->FailRun(Context(auth::BearerValue(secret_b)).get(), fail, &failed)
            .error_code(),
        grpc::StatusCode::PERMISSION_DENIED)
        << member;
    v1::CompleteRunRequest complete;
    complete.set_member_id(member);
    complete.set_run_id(lease.run_id());
    complete.mutable_final_evaluation()->set_sharpe(99);
    complete.mutable_final_evaluation()->set_env_steps(8192);
    v1::CompleteRunResponse completed;
    EXPECT_EQ(stub_
                  ->CompleteRun(Context(auth::BearerValue(secret_b)).get(),
                                complete, &completed)
                  .error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << member;
  }
  v1::FailRunRequest anonymous;
  anonymous.set_member_id(kA);
  anonymous.set_run_id(lease.run_id());
  anonymous.set_reason("sabotage");
  v1::FailRunResponse failed;
  EXPECT_EQ(stub_->FailRun(Context("").get(), anonymous, &failed).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const RunRow run = Run(lease.run_id());
  EXPECT_EQ(run.state, RunState::kLeased);
  EXPECT_EQ(run.member_id, kA);
  absl::StatusOr<TrialRow> trial = store_->GetTrial(lease.trial_id());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->state, TrialState::kRunning);
  EXPECT_EQ(Denied("FailRun", "permission_denied"), 2);
  EXPECT_EQ(Denied("FailRun", "unauthenticated"), 1);
  EXPECT_EQ(Denied("CompleteRun", "permission_denied"), 2);
}

TEST_F(CoordinatorAuthTest, ReportEvaluationOnARunNotLeasedToTheCaller) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  const std::string secret_b = Session(kB);
  v1::ReportEvaluationRequest report;
  report.set_member_id(kB);
  report.set_run_id(lease.run_id());
  report.mutable_evaluation()->set_sharpe(99);
  report.mutable_evaluation()->set_env_steps(4096);
  v1::ReportEvaluationResponse reported;
  EXPECT_EQ(stub_
                ->ReportEvaluation(Context(auth::BearerValue(secret_b)).get(),
                                   report, &reported)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  absl::StatusOr<std::vector<IntermediateRow>> values =
      store_->ListIntermediates(study_id_);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TRUE(values->empty());  // no Sharpe of 99 recorded
  EXPECT_EQ(Denied("ReportEvaluation", "permission_denied"), 1);
  // The holder reports.
  report.set_member_id(kA);
  report.mutable_evaluation()->set_sharpe(0.5);
  const grpc::Status own = stub_->ReportEvaluation(
      Context(auth::BearerValue(secret_a_)).get(), report, &reported);
  EXPECT_TRUE(own.ok()) << own.error_message();
  values = store_->ListIntermediates(study_id_);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->size(), 1u);
}

TEST_F(CoordinatorAuthTest, UnauthenticatedFindLearnerAndFetchDataset) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_FALSE(lease.dataset_id().empty());
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-x");
  v1::FindLearnerResponse found;
  EXPECT_EQ(stub_->FindLearner(Context("").get(), find, &found).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(
      stub_
          ->FindLearner(Context(auth::BearerValue("guess")).get(), find, &found)
          .error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
  auto fetch = [&](const std::string& authorization, int64_t* bytes) {
    return Fetch(authorization, lease.dataset_id(), bytes);
  };
  int64_t bytes = 0;
  EXPECT_EQ(fetch("", &bytes).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(bytes, 0);
  EXPECT_EQ(Denied("FindLearner", "unauthenticated"), 2);
  EXPECT_EQ(Denied("FetchDataset", "unauthenticated"), 1);
  // The legitimate callers: an actor with the cluster token, the learner
  // with its session secret.
  const grpc::Status as_actor = stub_->FindLearner(
      Context(auth::BearerValue(token_)).get(), find, &found);
  EXPECT_TRUE(as_actor.ok()) << as_actor.error_message();
  EXPECT_EQ(found.learner_address(), "127.0.0.1:9");
  const grpc::Status as_learner = fetch(auth::BearerValue(secret_a_), &bytes);
  EXPECT_TRUE(as_learner.ok()) << as_learner.error_message();
  EXPECT_GT(bytes, 0);
  // Once the study stops, its dataset is no longer served.
  ASSERT_TRUE(store_->SetStudyState(study_id_, StudyState::kStopped).ok());
  EXPECT_EQ(fetch(auth::BearerValue(token_), &bytes).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 1);
}

// The credential is one "authorization: Bearer <secret>" metadata: two of
// them (even two copies of the operator's token) or another scheme are
// refused, not read as either.
TEST_F(CoordinatorAuthTest, RepeatedOrMalformedAuthorizationIsUnauthenticated) {
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-x");
  auto find_with = [&](const std::vector<std::string>& values) {
    std::unique_ptr<grpc::ClientContext> ctx = Context("");
    for (const std::string& value : values) {
      ctx->AddMetadata(auth::kMetadataKey, value);
    }
    v1::FindLearnerResponse found;
    return stub_->FindLearner(ctx.get(), find, &found).error_code();
  };
  const std::string bearer = auth::BearerValue(token_);
  EXPECT_EQ(find_with({bearer, bearer}), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(find_with({"Basic " + token_}), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(find_with({"Bearer "}), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Denied("FindLearner", "unauthenticated"), 3);
  EXPECT_NE(find_with({bearer}), grpc::StatusCode::UNAUTHENTICATED);
}

// The actors' token finds learners (with a ticket), and is refused
// everywhere a learner or an operator acts: an actor host cannot register a
// learner, lease its runs, report on them, evict it or download datasets
// (actors fetch from their learner).
TEST_F(CoordinatorAuthTest, ActorTokenFindsLearnersAndNothingMore) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_FALSE(lease.dataset_id().empty());
  const std::string actor = auth::BearerValue(actor_token_);
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-x");
  v1::FindLearnerResponse found;
  const grpc::Status found_status =
      stub_->FindLearner(Context(actor).get(), find, &found);
  ASSERT_TRUE(found_status.ok()) << found_status.error_message();
  EXPECT_EQ(found.learner_address(), "127.0.0.1:9");
  EXPECT_EQ(found.learner_member_id(), kA);
  EXPECT_FALSE(found.actor_ticket().empty());
  // Actors fetch datasets from their learner, never here.
  int64_t bytes = 0;
  const grpc::Status fetched = Fetch(actor, lease.dataset_id(), &bytes);
  EXPECT_EQ(fetched.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(fetched.error_message().find("from their learner"),
            std::string::npos)
      << fetched.error_message();
  EXPECT_EQ(bytes, 0);

  // Not a registration token.
  v1::RegisterLearnerResponse registered;
  EXPECT_EQ(Register("learner-evil", actor_token_, &registered).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(registered.session_token().empty());
  // Not kA's session secret, nor the operator's token.
  v1::LeaseRunResponse leased;
  EXPECT_EQ(Lease(actor, kA, &leased).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(leased.has_run());
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_member_id(kA);
  v1::HeartbeatResponse beat;
  EXPECT_EQ(
      stub_->Heartbeat(Context(actor).get(), heartbeat, &beat).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::FailRunRequest fail;
  fail.set_member_id(kA);
  fail.set_run_id(lease.run_id());
  fail.set_reason("poisoned by an actor");
  v1::FailRunResponse failed;
  EXPECT_EQ(stub_->FailRun(Context(actor).get(), fail, &failed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  EXPECT_EQ(
      stub_->Release(Context(actor).get(), release, &released).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("RegisterLearner", "unauthenticated"), 1);
  EXPECT_EQ(Denied("LeaseRun", "permission_denied"), 1);
  EXPECT_EQ(Denied("Heartbeat", "permission_denied"), 1);
  EXPECT_EQ(Denied("FailRun", "permission_denied"), 1);
  EXPECT_EQ(Denied("Release", "permission_denied"), 1);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 1);
  // kA still holds its run, untouched: leased to it, not failed.
  const RunRow run = Run(lease.run_id());
  EXPECT_EQ(run.state, RunState::kLeased);
  EXPECT_EQ(run.member_id, kA);
  EXPECT_TRUE(run.last_error.empty()) << run.last_error;
  // And kA's own secret still works (the actor's calls revoked nothing).
  v1::HeartbeatResponse own;
  EXPECT_TRUE(stub_
                  ->Heartbeat(Context(auth::BearerValue(secret_a_)).get(),
                              heartbeat, &own)
                  .ok());
}

// A learner's session secret fetches only the dataset of a run leased to
// it: a learner holding no run of it is refused, the holder is served, and
// once the holder released its leases it is refused too.
TEST_F(CoordinatorAuthTest, ALearnerFetchesOnlyTheDatasetsOfItsLeasedRuns) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_FALSE(lease.dataset_id().empty());
  const std::string secret_b = Session(kB);  // registered, no run
  int64_t bytes = 0;
  const grpc::Status stranger =
      Fetch(auth::BearerValue(secret_b), lease.dataset_id(), &bytes);
  EXPECT_EQ(stranger.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << stranger.error_message();
  EXPECT_EQ(bytes, 0);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 1);
  const grpc::Status holder =
      Fetch(auth::BearerValue(secret_a_), lease.dataset_id(), &bytes);
  EXPECT_TRUE(holder.ok()) << holder.error_message();
  EXPECT_GT(bytes, 0);
  // The operator (cluster token) fetches any running study's dataset.
  const grpc::Status operator_fetch =
      Fetch(auth::BearerValue(token_), lease.dataset_id(), &bytes);
  EXPECT_TRUE(operator_fetch.ok()) << operator_fetch.error_message();
  // A's leases handed back (by an operator): its secret is revoked with
  // them, and a fresh registration holds no run of the dataset.
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  ASSERT_TRUE(stub_
                  ->Release(Context(auth::BearerValue(token_)).get(), release,
                            &released)
                  .ok());
  const std::string again = Session(kA);
  EXPECT_EQ(
      Fetch(auth::BearerValue(again), lease.dataset_id(), &bytes).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 2);
}

// With a learners' token (--learner-token-file) learners register with it
// and with nothing else: the cluster token no longer registers, and the
// learners' token is no credential on any other call, so a compromised
// learner host cannot evict, find or fetch for the other learners.
class CoordinatorLearnerTokenTest : public CoordinatorAuthTest {
 protected:
  CoordinatorLearnerTokenTest() : CoordinatorAuthTest(true) {}
};

TEST_F(CoordinatorLearnerTokenTest, TheClusterTokenNoLongerRegistersLearners) {
  v1::RegisterLearnerResponse response;
  EXPECT_EQ(Register(kA, token_, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Register(kA, actor_token_, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(response.session_token().empty());
  EXPECT_EQ(Denied("RegisterLearner", "unauthenticated"), 2);
  absl::StatusOr<std::vector<MemberRow>> members = store_->ListMembers();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_TRUE(members->empty());  // nothing registered
  const grpc::Status registered = Register(kA, learner_token_, &response);
  ASSERT_TRUE(registered.ok()) << registered.error_message();
  EXPECT_FALSE(response.session_token().empty());
  EXPECT_FALSE(response.ticket_key().empty());
}

TEST_F(CoordinatorLearnerTokenTest, TheLearnersTokenRegistersAndNothingMore) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  const std::string learners = auth::BearerValue(learner_token_);
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  EXPECT_EQ(
      stub_->Release(Context(learners).get(), release, &released).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::FindLearnerRequest find;
  find.set_actor_id("actor-x");
  v1::FindLearnerResponse found;
  EXPECT_EQ(
      stub_->FindLearner(Context(learners).get(), find, &found).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(found.actor_ticket().empty());
  int64_t bytes = 0;
  EXPECT_EQ(Fetch(learners, lease.dataset_id(), &bytes).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(bytes, 0);
  v1::LeaseRunResponse leased;
  EXPECT_EQ(Lease(learners, kA, &leased).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("Release", "permission_denied"), 1);
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 1);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 1);
  EXPECT_EQ(Denied("LeaseRun", "permission_denied"), 1);
  // A still holds its run; the operators' token still finds and releases.
  const RunRow run = Run(lease.run_id());
  EXPECT_EQ(run.state, RunState::kLeased);
  EXPECT_EQ(run.member_id, kA);
  EXPECT_EQ(run.attempts, 1);
  const grpc::Status as_operator = stub_->FindLearner(
      Context(auth::BearerValue(token_)).get(), find, &found);
  EXPECT_TRUE(as_operator.ok()) << as_operator.error_message();
  EXPECT_FALSE(found.actor_ticket().empty());
  EXPECT_TRUE(stub_
                  ->Release(Context(auth::BearerValue(token_)).get(), release,
                            &released)
                  .ok());
}

// Secrets live in coordinator memory: after a restart the old secret is
// unknown (the learner registers again, see CoordinatorAgent).
TEST_F(CoordinatorAuthTest, SessionSecretsDieWithTheCoordinator) {
  const std::string old = Session(kA);
  const std::string address = Logged(*coordinator_, "listening on ");
  coordinator_->Signal(SIGTERM);
  ASSERT_TRUE(coordinator_->Wait(15s).has_value());
  coordinator_ = std::make_unique<Process>(
      CoordinatorArgv(RISTRETTO_COORDINATOR_BINARY, dsn(),
                      dir_ + "/coordinator", {"--token-file", dir_ + "/token"},
                      address.substr(address.rfind(':') + 1), "100"),
      dir_ + "/coordinator-2.log");
  ASSERT_EQ(Logged(*coordinator_, "listening on "), address)
      << coordinator_->Log();
  v1::LeaseRunResponse lease;
  EXPECT_EQ(Lease(auth::BearerValue(old), kA, &lease).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const std::string fresh = Session(kA);
  EXPECT_NE(fresh, old);
  const grpc::Status s = Lease(auth::BearerValue(fresh), kA, &lease);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// FindLearner answers an actor ticket for the asking actor id at the
// learner named, made with that learner's ticket key (which it got at
// registration): the learner can verify it; a registration again issues a
// new key, and the new tickets are made with it.
TEST_F(CoordinatorAuthTest, FindLearnerHandsOutTicketsOfTheLearnersKey) {
  v1::RegisterLearnerResponse registered;
  ASSERT_TRUE(Register(kA, token_, &registered).ok());
  ASSERT_EQ(registered.ticket_key().size(), 64u);
  const auto find = [&](const std::string& actor) {
    v1::FindLearnerRequest request;
    request.set_actor_id(actor);
    v1::FindLearnerResponse found;
    const grpc::Status s = stub_->FindLearner(
        Context(auth::BearerValue(token_)).get(), request, &found);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return found;
  };
  const v1::FindLearnerResponse found = find("actor-1");
  EXPECT_EQ(found.learner_address(), "127.0.0.1:9");
  EXPECT_EQ(found.learner_member_id(), kA);
  absl::StatusOr<auth::ActorTicket> ticket = auth::VerifyActorTicket(
      found.actor_ticket(), {registered.ticket_key()}, kA, absl::Now());
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  EXPECT_EQ(ticket->actor_id, "actor-1");
  // Without mutual TLS: an unbound (rt1) ticket, as before.
  EXPECT_EQ(found.actor_ticket().substr(0, 4), "rt1.");
  EXPECT_TRUE(ticket->cert_sha256.empty());
  // Not made with another key, not for another learner.
  EXPECT_FALSE(
      auth::VerifyActorTicket(found.actor_ticket(), {token_}, kA, absl::Now())
          .ok());
  EXPECT_FALSE(auth::VerifyActorTicket(found.actor_ticket(),
                                       {registered.ticket_key()}, kB,
                                       absl::Now())
                   .ok());
  // Registering again rotates the key.
  v1::RegisterLearnerResponse again;
  ASSERT_TRUE(Register(kA, token_, &again).ok());
  EXPECT_NE(again.ticket_key(), registered.ticket_key());
  const std::string fresh = find("actor-1").actor_ticket();
  EXPECT_TRUE(
      auth::VerifyActorTicket(fresh, {again.ticket_key()}, kA, absl::Now())
          .ok());
  EXPECT_FALSE(
      auth::VerifyActorTicket(fresh, {registered.ticket_key()}, kA, absl::Now())
          .ok());
  // An id too long for a ticket is refused before anything is recorded.
  v1::FindLearnerRequest huge;
  huge.set_actor_id(std::string(auth::kMaxTicketIdBytes + 1, 'x'));
  v1::FindLearnerResponse refused;
  EXPECT_EQ(stub_
                ->FindLearner(Context(auth::BearerValue(token_)).get(), huge,
                              &refused)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // So is one with a control character (it would forge log lines).
  huge.set_actor_id("actor\nforged");
  EXPECT_EQ(stub_
                ->FindLearner(Context(auth::BearerValue(token_)).get(), huge,
                              &refused)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Under mutual TLS an actor id belongs to the client certificate that first
// asked for it (while its tickets may be live), and its tickets carry that
// certificate's hash: one actor host cannot get tickets in another's name.
class CoordinatorMutualTlsTest : public CoordinatorAuthTest {
 protected:
  explicit CoordinatorMutualTlsTest(bool require_named = false,
                                    bool with_token = true)
      : CoordinatorAuthTest(/*with_learner_token=*/false, /*with_mtls=*/true,
                            require_named, with_token) {}

  // The hex SHA-256 of client certificate `name`.pem.
  std::string CertHash(const std::string& name) {
    std::ifstream in(dir_ + "/tls/" + name + ".pem");
    const std::string pem((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
    absl::StatusOr<std::string> hash = auth::CertificateSha256(pem);
    EXPECT_TRUE(hash.ok()) << hash.status();
    return hash.value_or("");
  }

  // FindLearner for `actor` with the actors' token, from `stub`'s
  // certificate.
  grpc::Status FindAs(v1::Coordinator::Stub& stub, const std::string& actor,
                      v1::FindLearnerResponse* found) {
    v1::FindLearnerRequest request;
    request.set_actor_id(actor);
    return stub.FindLearner(Context(auth::BearerValue(actor_token_)).get(),
                            request, found);
  }

  // RegisterLearner of `member` with the learners' token, from `stub`'s
  // certificate.
  grpc::Status RegisterAs(v1::Coordinator::Stub& stub,
                          const std::string& member,
                          v1::RegisterLearnerResponse* response,
                          const std::string& incarnation = "1") {
    v1::RegisterLearnerRequest request;
    request.set_member_id(member);
    request.set_address("127.0.0.1:9");
    request.set_slots(2);
    request.set_token(RegistrationToken());
    request.set_incarnation(incarnation);
    return stub.RegisterLearner(Context("").get(), request, response);
  }
};

TEST_F(CoordinatorMutualTlsTest, AnActorIdBelongsToTheFirstCertificate) {
  v1::RegisterLearnerResponse registered;
  ASSERT_TRUE(Register(kA, token_, &registered).ok());
  std::unique_ptr<v1::Coordinator::Stub> host_a = StubAs("host-a");
  std::unique_ptr<v1::Coordinator::Stub> host_b = StubAs("host-b");
  const auto bound_to = [&](const v1::FindLearnerResponse& found) {
    absl::StatusOr<auth::ActorTicket> ticket = auth::VerifyActorTicket(
        found.actor_ticket(), {registered.ticket_key()}, kA, absl::Now());
    EXPECT_TRUE(ticket.ok()) << ticket.status();
    return ticket.ok() ? ticket->cert_sha256 : "";
  };
  v1::FindLearnerResponse found;
  grpc::Status s = FindAs(*host_a, "x", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(found.actor_ticket().substr(0, 4), "rt2.");
  EXPECT_EQ(bound_to(found), CertHash("host-a"));
  // Another host's certificate asking for "x": refused, counted.
  v1::FindLearnerResponse stolen;
  s = FindAs(*host_b, "x", &stolen);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("is in use by another client certificate"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(stolen.actor_ticket().empty());
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 1);
  // The same certificate again (the actor restarted on its host): fine.
  s = FindAs(*host_a, "x", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(bound_to(found), CertHash("host-a"));
  // B with an id of its own: its ticket is bound to B.
  s = FindAs(*host_b, "y", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(bound_to(found), CertHash("host-b"));
  EXPECT_NE(CertHash("host-a"), CertHash("host-b"));
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 1);
}

// Under mutual TLS a learner's member id belongs to the client certificate
// that registered it while the member is live: another learner host
// holding the learners' token cannot register under it (taking its
// incarnation and so its leases), nor use its session secret; the same
// certificate registers again as before, and after Release anyone may.
TEST_F(CoordinatorMutualTlsTest, AMemberIdBelongsToItsCertificateWhileLive) {
  std::unique_ptr<v1::Coordinator::Stub> host_b = StubAs("host-b");
  // kA registers from client.pem and leases a run.
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  v1::RegisterLearnerResponse a;
  // Another certificate registering kA as a new process (which would hand
  // kA's leases back): refused before anything changed.
  v1::RegisterLearnerResponse stolen;
  grpc::Status s = RegisterAs(*host_b, kA, &stolen, "2");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("learner member id 'learner-a' is in use "
                                   "by another client certificate"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(stolen.session_token().empty());
  EXPECT_EQ(Denied("RegisterLearner", "permission_denied"), 1);
  EXPECT_EQ(Run(lease.run_id()).member_id, kA);
  EXPECT_EQ(Run(lease.run_id()).state, RunState::kLeased);
  // kA's session secret from B's host: refused; from its own: fine.
  a.set_session_token(secret_a_);
  v1::HeartbeatRequest beat;
  beat.set_member_id(kA);
  v1::HeartbeatResponse beat_response;
  EXPECT_EQ(host_b
                ->Heartbeat(Context(auth::BearerValue(a.session_token())).get(),
                            beat, &beat_response)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  s = stub_->Heartbeat(Context(auth::BearerValue(a.session_token())).get(),
                       beat, &beat_response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // The same certificate registers again (a restarted learner); B takes an
  // id of its own.
  s = RegisterAs(*stub_, kA, &a, "3");
  EXPECT_TRUE(s.ok()) << s.error_message();
  v1::RegisterLearnerResponse b;
  s = RegisterAs(*host_b, kB, &b);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // Released, the id is free.
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  s = stub_->Release(Context(auth::BearerValue(a.session_token())).get(),
                     release, &released);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = RegisterAs(*host_b, kA, &stolen);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Denied("RegisterLearner", "permission_denied"), 1);
  EXPECT_EQ(Denied("Heartbeat", "permission_denied"), 1);
}

// A member's session secret works only from the certificate the member is
// bound to on every call it makes, not just on LeaseRun and Heartbeat: from
// another host's certificate it cannot report, complete or fail the
// member's runs, fetch their datasets or release the member.
TEST_F(CoordinatorMutualTlsTest, ASessionSecretWorksOnlyFromItsCertificate) {
  std::unique_ptr<v1::Coordinator::Stub> host_b = StubAs("host-b");
  const v1::RunLease lease = LeaseForA();  // kA, from client.pem
  ASSERT_GT(lease.run_id(), 0);
  const auto as_a = [&] { return Context(auth::BearerValue(secret_a_)); };
  v1::ReportEvaluationRequest report;
  report.set_member_id(kA);
  report.set_run_id(lease.run_id());
  report.mutable_evaluation()->set_sharpe(99);
  report.mutable_evaluation()->set_env_steps(4096);
  v1::ReportEvaluationResponse reported;
  EXPECT_EQ(
      host_b->ReportEvaluation(as_a().get(), report, &reported).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::CompleteRunRequest complete;
  complete.set_member_id(kA);
  complete.set_run_id(lease.run_id());
  complete.mutable_final_evaluation()->set_sharpe(99);
  complete.mutable_final_evaluation()->set_env_steps(8192);
  v1::CompleteRunResponse completed;
  EXPECT_EQ(
      host_b->CompleteRun(as_a().get(), complete, &completed).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  v1::FailRunRequest fail;
  fail.set_member_id(kA);
  fail.set_run_id(lease.run_id());
  fail.set_reason("sabotage");
  v1::FailRunResponse failed;
  EXPECT_EQ(host_b->FailRun(as_a().get(), fail, &failed).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  int64_t bytes = 0;
  EXPECT_EQ(Fetch(auth::BearerValue(secret_a_), lease.dataset_id(), &bytes,
                  host_b.get())
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(bytes, 0);
  v1::ReleaseRequest release;
  release.set_member_id(kA);
  v1::ReleaseResponse released;
  EXPECT_EQ(host_b->Release(as_a().get(), release, &released).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  for (const char* method : {"ReportEvaluation", "CompleteRun", "FailRun",
                             "FetchDataset", "Release"}) {
    EXPECT_EQ(Denied(method, "permission_denied"), 1) << method;
  }
  // Nothing changed: the run is still kA's, no value was recorded.
  const RunRow run = Run(lease.run_id());
  EXPECT_EQ(run.state, RunState::kLeased);
  EXPECT_EQ(run.member_id, kA);
  absl::StatusOr<std::vector<IntermediateRow>> values =
      store_->ListIntermediates(study_id_);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TRUE(values->empty());
  // From kA's own certificate the same calls go ahead.
  grpc::Status s = stub_->ReportEvaluation(as_a().get(), report, &reported);
  EXPECT_TRUE(s.ok()) << s.error_message();
  s = Fetch(auth::BearerValue(secret_a_), lease.dataset_id(), &bytes);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_GT(bytes, 0);
  // A member id the coordinator would not store is refused before any
  // certificate binding remembers it.
  v1::RegisterLearnerResponse refused;
  EXPECT_EQ(RegisterAs(*host_b, std::string(300, 'm'), &refused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(RegisterAs(*host_b, "learner\nforged", &refused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// An actor naming itself after a learner (FindLearner hands out learners'
// member ids) is refused and changes nothing of the learner's member row:
// it used to overwrite it, incarnation included, so a restarted learner no
// longer handed its previous process's leases back.
TEST_F(CoordinatorAuthTest, AnActorCannotTakeALearnersMemberId) {
  const v1::RunLease lease = LeaseForA();
  ASSERT_GT(lease.run_id(), 0);
  absl::StatusOr<MemberRow> before = store_->GetMember(kA);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->kind, "learner");
  v1::FindLearnerRequest find;
  find.set_actor_id(kA);
  v1::FindLearnerResponse found;
  const grpc::Status s = stub_->FindLearner(
      Context(auth::BearerValue(actor_token_)).get(), find, &found);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << s.error_message();
  EXPECT_NE(s.error_message().find("is a learner's"), std::string::npos)
      << s.error_message();
  EXPECT_TRUE(found.actor_ticket().empty());
  absl::StatusOr<MemberRow> after = store_->GetMember(kA);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->kind, "learner");
  EXPECT_EQ(after->address, before->address);
  EXPECT_EQ(after->capacity_json, before->capacity_json);
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 1);
  // An actor id of its own is fine.
  find.set_actor_id("actor-1");
  const grpc::Status own = stub_->FindLearner(
      Context(auth::BearerValue(actor_token_)).get(), find, &found);
  EXPECT_TRUE(own.ok()) << own.error_message();
  EXPECT_FALSE(found.actor_ticket().empty());
}

// With --require-named-certificates (as `ristretto up` runs it) a client
// certificate that names no id of the caller's role cannot act as an actor
// or a learner at all: no first use to win after a restart or an idle
// spell. Certificates naming their holder work as before.
class CoordinatorNamedOnlyTest : public CoordinatorMutualTlsTest {
 protected:
  CoordinatorNamedOnlyTest()
      : CoordinatorMutualTlsTest(/*require_named=*/true) {}
};

TEST_F(CoordinatorNamedOnlyTest, OnlyCertificatesThatNameTheirHolderAct) {
  std::unique_ptr<v1::Coordinator::Stub> host_a = StubAs("host-a");
  std::unique_ptr<v1::Coordinator::Stub> actor_x = StubAs("actor-x");
  std::unique_ptr<v1::Coordinator::Stub> learner_a =
      StubAs(std::string("learner-") + kA);
  v1::RegisterLearnerResponse registered;
  grpc::Status s = RegisterAs(*host_a, kA, &registered);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("names no learner id"), std::string::npos)
      << s.error_message();
  s = RegisterAs(*learner_a, kA, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::FindLearnerResponse found;
  s = FindAs(*host_a, "x", &found);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("--require-named-certificates"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(found.actor_ticket().empty());
  s = FindAs(*actor_x, "x", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(found.actor_ticket().empty());
  EXPECT_EQ(Denied("RegisterLearner", "permission_denied"), 1);
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 1);
  // The operator's token is no actor or learner: it still finds learners.
  v1::FindLearnerRequest look;
  v1::FindLearnerResponse seen;
  s = host_a->FindLearner(Context(auth::BearerValue(token_)).get(), look,
                          &seen);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(seen.learner_member_id(), kA);
}

// Without a token FetchDataset has no caller identity; with
// --require-named-certificates only a certificate naming a learner may
// fetch (one naming nothing, or an actor, is refused).
class CoordinatorNamedOnlyNoTokenTest : public CoordinatorMutualTlsTest {
 protected:
  CoordinatorNamedOnlyNoTokenTest()
      : CoordinatorMutualTlsTest(/*require_named=*/true,
                                 /*with_token=*/false) {}
};

TEST_F(CoordinatorNamedOnlyNoTokenTest, OnlyALearnersCertificateFetches) {
  std::unique_ptr<v1::Coordinator::Stub> host_a = StubAs("host-a");
  std::unique_ptr<v1::Coordinator::Stub> actor_x = StubAs("actor-x");
  std::unique_ptr<v1::Coordinator::Stub> learner_a =
      StubAs(std::string("learner-") + kA);
  const std::string unknown(64, '0');
  int64_t bytes = 0;
  const grpc::Status unnamed = Fetch("", unknown, &bytes, host_a.get());
  EXPECT_EQ(unnamed.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(unnamed.error_message().find("names no learner"), std::string::npos)
      << unnamed.error_message();
  EXPECT_EQ(Fetch("", unknown, &bytes, actor_x.get()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // A learner's certificate gets the store's answer (no such dataset).
  EXPECT_EQ(Fetch("", unknown, &bytes, learner_a.get()).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 2);
}

TEST(CoordinatorNamedOnlyFlagTest, NeedsMutualTls) {
  absl::StatusOr<std::string> dir = testing::MakeTempDir("ristretto_named_");
  ASSERT_TRUE(dir.ok()) << dir.status();
  Process coordinator(
      {RISTRETTO_COORDINATOR_BINARY, "--db", "host=/nonexistent dbname=x",
       "--data-dir", *dir + "/coordinator", "--require-named-certificates"},
      *dir + "/coordinator.log");
  const std::optional<int> status = coordinator.Wait(60s);
  ASSERT_TRUE(status.has_value()) << coordinator.Log();
  EXPECT_EQ(*status, 2) << coordinator.Log();
  EXPECT_NE(
      coordinator.Log().find("--require-named-certificates needs mutual TLS"),
      std::string::npos)
      << coordinator.Log();
  std::filesystem::remove_all(*dir);
}

// A client certificate that names its holder (URI SAN urn:ristretto:actor:
// ID or urn:ristretto:learner:ID, as `ristretto up` and make_dev_certs.sh
// --actor/--learner issue them) may use only the ids it names, in their
// role, and its name outranks a first use by a certificate that names
// nothing.
TEST_F(CoordinatorMutualTlsTest, ANamedCertificateUsesOnlyTheIdsItNames) {
  std::unique_ptr<v1::Coordinator::Stub> actor_x = StubAs("actor-x");
  std::unique_ptr<v1::Coordinator::Stub> actor_y = StubAs("actor-y");
  std::unique_ptr<v1::Coordinator::Stub> host_a = StubAs("host-a");
  std::unique_ptr<v1::Coordinator::Stub> learner_a =
      StubAs(std::string("learner-") + kA);
  // The learner's named certificate registers its own member id only.
  v1::RegisterLearnerResponse registered;
  grpc::Status s = RegisterAs(*learner_a, kB, &registered);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("learner member id 'learner-b' is not "
                                   "named by this client certificate (it "
                                   "names 'learner-a')"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(registered.session_token().empty());
  s = RegisterAs(*learner_a, kA, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // A certificate that names nothing cannot register it while it is live.
  v1::RegisterLearnerResponse stolen;
  EXPECT_EQ(RegisterAs(*stub_, kA, &stolen).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("RegisterLearner", "permission_denied"), 2);

  // actor-x.pem finds the learner as x, its ticket bound to it, but not
  // as y; the learner's certificate names no actor id.
  v1::FindLearnerResponse found;
  s = FindAs(*actor_x, "x", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  absl::StatusOr<auth::ActorTicket> ticket = auth::VerifyActorTicket(
      found.actor_ticket(), {registered.ticket_key()}, kA, absl::Now());
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  EXPECT_EQ(ticket->actor_id, "x");
  EXPECT_EQ(ticket->cert_sha256, CertHash("actor-x"));
  v1::FindLearnerResponse refused;
  s = FindAs(*actor_x, "y", &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("actor id 'y' is not named by this client "
                                   "certificate (it names 'x')"),
            std::string::npos)
      << s.error_message();
  EXPECT_TRUE(refused.actor_ticket().empty());
  s = FindAs(*learner_a, "x", &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("(it names no actor id)"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 2);

  // host-a (names nothing) takes y first; y's own certificate claims it,
  // after which host-a is refused as any other certificate would be.
  s = FindAs(*host_a, "y", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = FindAs(*actor_y, "y", &found);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ticket = auth::VerifyActorTicket(found.actor_ticket(),
                                   {registered.ticket_key()}, kA, absl::Now());
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  EXPECT_EQ(ticket->cert_sha256, CertHash("actor-y"));
  s = FindAs(*host_a, "y", &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("is named by another client certificate"),
            std::string::npos)
      << s.error_message();
  // Nor can host-a take x, which x's certificate used.
  EXPECT_EQ(FindAs(*host_a, "x", &refused).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("FindLearner", "permission_denied"), 4);
}

#ifdef RISTRETTO_ACTOR_BINARY
// A real ristretto-actor: without the cluster token its FindLearner calls
// are refused (counted, and logged by the actor); with it (--token-file) it
// is answered and recorded as a member.
TEST_F(CoordinatorAuthTest, ActorNeedsTheClusterTokenToFindALearner) {
  Session(kA);  // a learner to be found (nobody listens there)
  const std::string coordinator = Logged(*coordinator_, "listening on ");
  auto actor = [&](const std::string& id, bool with_token) {
    return std::make_unique<Process>(
        CoordinatedActorArgv(
            RISTRETTO_ACTOR_BINARY, coordinator, id, dir_ + "/actor-cache",
            with_token
                ? std::vector<std::string>{"--token-file", dir_ + "/token"}
                : std::vector<std::string>{},
            /*envs=*/1),
        dir_ + "/" + id + ".log");
  };
  std::unique_ptr<Process> stranger = actor("actor-stranger", false);
  PollUntil([&] { return Denied("FindLearner", "unauthenticated") >= 1; }, 30s,
            100ms);
  EXPECT_GE(Denied("FindLearner", "unauthenticated"), 1) << stranger->Log();
  // The actor says why it gets nowhere (it retries with back-off).
  const std::string said =
      "actor-stranger: the coordinator found no learner: UNAUTHENTICATED";
  PollUntil([&] { return stranger->Log().find(said) != std::string::npos; },
            30s, 100ms);
  EXPECT_NE(stranger->Log().find(said), std::string::npos) << stranger->Log();
  stranger.reset();
  EXPECT_FALSE(MemberKnown("actor-stranger"));
  std::unique_ptr<Process> trusted = actor("actor-trusted", true);
  PollUntil([&] { return MemberKnown("actor-trusted"); }, 60s, 100ms);
  EXPECT_TRUE(MemberKnown("actor-trusted")) << trusted->Log();
}

// A real ristretto-actor with a certificate that names it: without
// --actor-id it takes the id its certificate names (and is recorded as
// that member); with another --actor-id it refuses to start, saying why,
// instead of being refused by the coordinator on every call.
TEST_F(CoordinatorMutualTlsTest, AnActorTakesTheIdItsCertificateNames) {
  Session(kA);  // a learner to be found (nobody listens there)
  const std::string tls = dir_ + "/tls/";
  auto actor = [&](const std::string& log,
                   const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {RISTRETTO_ACTOR_BINARY,
                                     "--coordinator",
                                     address_,
                                     "--envs",
                                     "1",
                                     "--cache-dir",
                                     dir_ + "/actor-cache",
                                     "--token-file",
                                     dir_ + "/actor-token",
                                     "--tls-ca",
                                     tls + "ca.pem",
                                     "--tls-cert",
                                     tls + "actor-x.pem",
                                     "--tls-key",
                                     tls + "actor-x.key"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(argv, dir_ + "/" + log);
  };
  std::unique_ptr<Process> wrong = actor("wrong.log", {"--actor-id", "y"});
  const std::optional<int> status = wrong->Wait(60s);
  ASSERT_TRUE(status.has_value()) << wrong->Log();
  EXPECT_EQ(*status, 2) << wrong->Log();
  EXPECT_NE(wrong->Log().find("--actor-id 'y' is not named by the client "
                              "certificate"),
            std::string::npos)
      << wrong->Log();
  EXPECT_FALSE(MemberKnown("y"));
  std::unique_ptr<Process> named = actor("named.log", {});
  PollUntil([&] { return MemberKnown("x"); }, 60s, 100ms);
  EXPECT_TRUE(MemberKnown("x")) << named->Log();
  EXPECT_NE(named->Log().find("actor x: "), std::string::npos) << named->Log();
  EXPECT_LE(Denied("FindLearner", "permission_denied"), 0);  // -1: none yet
}
#endif  // RISTRETTO_ACTOR_BINARY

#ifdef RISTRETTO_LEARNER_BINARY
// A real ristretto-learner showing the coordinator a certificate that
// names it: another --member-id is refused at start-up (exit 2, saying
// why); without one it registers as the member its certificate names.
TEST_F(CoordinatorMutualTlsTest, ALearnerTakesTheMemberIdItsCertificateNames) {
  const std::string tls = dir_ + "/tls/";
  auto learner = [&](const std::string& name,
                     const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {RISTRETTO_LEARNER_BINARY,
                                     "--coordinator",
                                     address_,
                                     "--port",
                                     "0",
                                     "--slots",
                                     "1",
                                     "--run-dir",
                                     dir_ + "/" + name,
                                     "--token-file",
                                     dir_ + "/token",
                                     "--tls-cert",
                                     tls + "server.pem",
                                     "--tls-key",
                                     tls + "server.key",
                                     "--tls-ca",
                                     tls + "ca.pem",
                                     "--coordinator-tls-cert",
                                     tls + "learner-" + kA + ".pem",
                                     "--coordinator-tls-key",
                                     tls + "learner-" + kA + ".key"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(argv, dir_ + "/" + name + ".log");
  };
  std::unique_ptr<Process> wrong = learner("wrong", {"--member-id", kB});
  const std::optional<int> status = wrong->Wait(60s);
  ASSERT_TRUE(status.has_value()) << wrong->Log();
  EXPECT_EQ(*status, 2) << wrong->Log();
  EXPECT_NE(wrong->Log().find("--member-id 'learner-b' is not named by the "
                              "client certificate"),
            std::string::npos)
      << wrong->Log();
  std::unique_ptr<Process> named = learner("named", {});
  const std::string said = std::string(" as ") + kA + " (1 slots)";
  PollUntil([&] { return named->Log().find(said) != std::string::npos; }, 60s,
            100ms);
  EXPECT_NE(named->Log().find(said), std::string::npos) << named->Log();
  EXPECT_LE(Denied("RegisterLearner", "permission_denied"), 0);
}
#endif  // RISTRETTO_LEARNER_BINARY

}  // namespace
}  // namespace ristretto::coordinator
