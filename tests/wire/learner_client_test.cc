// The gRPC implementations behind wire/learner_client.h, against real
// Learner and Coordinator servers on 127.0.0.1: what crosses the Act
// stream (Hello, chunks decoded by the learner's codec, replies), how the
// call ends (the server's status through FromGrpcStatus, Cancel from
// another thread, an unreachable learner), GetStatus with its deadline,
// dataset downloads (and a fetch cancelled before it starts),
// FindLearner, and both clients' credentials against a TLS server.
#include "wire/learner_client.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_security.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "learner/trajectory.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/common/temp_dir.h"
#include "wire/chunk_codec.h"
#include "wire/grpc_status.h"

namespace ristretto::wire {
namespace {

using ::testing::HasSubstr;

constexpr char kFile[] = "0123456789abcdefghijklmnopqrstuvwxyz";

// A learner that records what arrives on Act, answers a Hello with an
// assignment and a chunk with its ack, and ends the call with `end` once
// the actor half-closes (or at once after the Hello, with fail_after_hello).
class TestLearner final : public v1::Learner::Service {
 public:
  grpc::Status Act(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::LearnerMessage, v1::ActorMessage>* stream)
      override {
    Record(*context);
    v1::ActorMessage in;
    while (stream->Read(&in)) {
      v1::LearnerMessage out;
      if (in.has_hello()) {
        {
          absl::MutexLock lock(&mu_);
          hellos_.push_back(in.hello());
        }
        out.mutable_assignment()->set_run_id("run-for-" +
                                             in.hello().actor_id());
        stream->Write(out);
        absl::MutexLock lock(&mu_);
        if (fail_after_hello_) return ToGrpcStatus(end_);
      } else if (in.has_chunk()) {
        absl::StatusOr<learner::TrajectoryChunk> chunk =
            ChunkFromProto(in.chunk(), 3, 1, ChunkLimits());
        absl::MutexLock lock(&mu_);
        if (!chunk.ok()) return ToGrpcStatus(chunk.status());
        chunks_.push_back(*std::move(chunk));
        sequences_.push_back(in.chunk().sequence());
        out.mutable_ack()->set_sequence(in.chunk().sequence());
        out.mutable_ack()->set_credits(7);
        stream->Write(out);
      }
    }
    absl::MutexLock lock(&mu_);
    return ToGrpcStatus(end_);
  }

  grpc::Status FetchDataset(
      grpc::ServerContext* context, const v1::FetchDatasetRequest* request,
      grpc::ServerWriter<v1::DatasetPiece>* writer) override {
    Record(*context);
    if (request->dataset_id() != "the-id") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such dataset");
    }
    const std::string file = kFile;
    for (size_t offset = 0; offset < file.size(); offset += 10) {
      v1::DatasetPiece piece;
      piece.set_data(file.substr(offset, 10));
      piece.set_offset(static_cast<int64_t>(offset));
      piece.set_total_size(static_cast<int64_t>(file.size()));
      piece.set_last(offset + 10 >= file.size());
      writer->Write(piece);
    }
    return grpc::Status::OK;
  }

  grpc::Status GetStatus(grpc::ServerContext* context,
                         const v1::StatusRequest* /*request*/,
                         v1::LearnerStatus* response) override {
    Record(*context);
    absl::Duration delay;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      delay = status_delay_;
      status = status_;
    }
    absl::SleepFor(delay);
    response->set_chunks_rejected(5);
    return ToGrpcStatus(status);
  }

  void set_end(absl::Status end, bool after_hello) {
    absl::MutexLock lock(&mu_);
    end_ = std::move(end);
    fail_after_hello_ = after_hello;
  }
  void set_status(absl::Status status, absl::Duration delay) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
    status_delay_ = delay;
  }
  std::vector<v1::Hello> hellos() {
    absl::MutexLock lock(&mu_);
    return hellos_;
  }
  std::vector<learner::TrajectoryChunk> chunks() {
    absl::MutexLock lock(&mu_);
    return chunks_;
  }
  std::vector<int64_t> sequences() {
    absl::MutexLock lock(&mu_);
    return sequences_;
  }
  // The "authorization" metadata of every call, in order ("" : none).
  std::vector<std::string> authorizations() {
    absl::MutexLock lock(&mu_);
    return authorizations_;
  }

 private:
  void Record(const grpc::ServerContext& context) {
    const auto it = context.client_metadata().find("authorization");
    std::string value;
    if (it != context.client_metadata().end()) {
      value.assign(it->second.data(), it->second.size());
    }
    absl::MutexLock lock(&mu_);
    authorizations_.push_back(std::move(value));
  }

  absl::Mutex mu_;
  absl::Status end_ ABSL_GUARDED_BY(mu_);
  bool fail_after_hello_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Duration status_delay_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Hello> hellos_ ABSL_GUARDED_BY(mu_);
  std::vector<learner::TrajectoryChunk> chunks_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> sequences_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> authorizations_ ABSL_GUARDED_BY(mu_);
};

class TestCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status FindLearner(grpc::ServerContext* /*context*/,
                           const v1::FindLearnerRequest* request,
                           v1::FindLearnerResponse* response) override {
    if (request->actor_id().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no actor id");
    }
    response->set_learner_address("learner-for-" + request->actor_id());
    response->set_actor_ticket("ticket-for-" + request->actor_id());
    return grpc::Status::OK;
  }
};

class LearnerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&learner_);
    builder.RegisterService(&coordinator_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = absl::StrCat("127.0.0.1:", port);
    client_ = NewGrpcLearnerClient(address_, options_);
  }
  void TearDown() override {
    client_.reset();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }

  static std::shared_ptr<const learner::TrajectoryChunk> Chunk() {
    auto chunk = std::make_shared<learner::TrajectoryChunk>();
    chunk->run_id = "run-for-a1";
    chunk->actor_id = "a1";
    chunk->policy_version = 4;
    chunk->steps = 2;
    chunk->copies = 1;
    chunk->obs_size = 3;
    chunk->action_size = 1;
    chunk->obs = {0.5f, 1, 2, 3, 4, 5, 6, 7, 8};
    chunk->actions = {0.25f, -0.75f};
    chunk->log_probs = {-1, -2};
    chunk->rewards = {0.125f, 0};
    chunk->dones = {0, 1};
    chunk->final_obs = {9, 10, 11};
    return chunk;
  }

  TestLearner learner_;
  TestCoordinator coordinator_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  GrpcLearnerClientOptions options_;
  std::unique_ptr<LearnerClient> client_;
};

TEST_F(LearnerClientTest, ActCarriesHelloChunksAndReplies) {
  std::unique_ptr<ActCall> call = client_->Act();
  v1::Hello hello;
  hello.set_actor_id("a1");
  hello.set_env_copies(1);
  ASSERT_TRUE(call->WriteHello(hello));
  v1::LearnerMessage reply;
  ASSERT_TRUE(call->Read(&reply));
  EXPECT_EQ(reply.assignment().run_id(), "run-for-a1");

  const std::shared_ptr<const learner::TrajectoryChunk> chunk = Chunk();
  ASSERT_TRUE(call->WriteChunk(chunk, 41));
  ASSERT_TRUE(call->Read(&reply));
  EXPECT_EQ(reply.ack().sequence(), 41);
  EXPECT_EQ(reply.ack().credits(), 7);
  ASSERT_TRUE(call->WritesDone());
  EXPECT_FALSE(call->Read(&reply));
  EXPECT_TRUE(call->Finish().ok());

  ASSERT_EQ(learner_.hellos().size(), 1u);
  EXPECT_EQ(learner_.hellos()[0].actor_id(), "a1");
  ASSERT_EQ(learner_.chunks().size(), 1u);
  const learner::TrajectoryChunk got = learner_.chunks()[0];
  EXPECT_EQ(learner_.sequences()[0], 41);
  EXPECT_EQ(got.run_id, chunk->run_id);
  EXPECT_EQ(got.policy_version, 4);
  EXPECT_EQ(got.obs, chunk->obs);
  EXPECT_EQ(got.actions, chunk->actions);
  EXPECT_EQ(got.dones, chunk->dones);
  EXPECT_EQ(got.final_obs, chunk->final_obs);
}

TEST_F(LearnerClientTest, TheLearnersEndStatusReachesFinishByName) {
  learner_.set_end(absl::ResourceExhaustedError("run is full"), true);
  std::unique_ptr<ActCall> call = client_->Act();
  v1::Hello hello;
  hello.set_actor_id("a2");
  ASSERT_TRUE(call->WriteHello(hello));
  v1::LearnerMessage reply;
  ASSERT_TRUE(call->Read(&reply));  // what it sent before ending
  EXPECT_EQ(reply.assignment().run_id(), "run-for-a2");
  EXPECT_FALSE(call->Read(&reply));
  EXPECT_EQ(call->Finish(), absl::ResourceExhaustedError("run is full"));
}

TEST_F(LearnerClientTest, CancelEndsABlockedReadFromAnotherThread) {
  std::unique_ptr<ActCall> call = client_->Act();
  v1::Hello hello;
  hello.set_actor_id("a3");
  ASSERT_TRUE(call->WriteHello(hello));
  v1::LearnerMessage reply;
  ASSERT_TRUE(call->Read(&reply));
  std::thread canceller([&call] {
    absl::SleepFor(absl::Milliseconds(20));
    call->Cancel();
  });
  const absl::Time start = absl::Now();
  EXPECT_FALSE(call->Read(&reply));  // the learner sends nothing more
  canceller.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(call->Finish().code(), absl::StatusCode::kCancelled);
}

TEST_F(LearnerClientTest, AnUnreachableLearnerIsUnavailable) {
  const std::string gone = address_;
  server_->Shutdown(absl::ToChronoTime(absl::Now()));
  server_->Wait();
  std::unique_ptr<LearnerClient> client = NewGrpcLearnerClient(gone, options_);
  std::unique_ptr<ActCall> call = client->Act();
  call->WriteHello(v1::Hello());  // may or may not report the failure
  v1::LearnerMessage reply;
  EXPECT_FALSE(call->Read(&reply));
  EXPECT_EQ(call->Finish().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client->GetStatus().status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(LearnerClientTest, GetStatusMapsCodesAndKeepsItsDeadline) {
  absl::StatusOr<v1::LearnerStatus> status = client_->GetStatus();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->chunks_rejected(), 5);

  learner_.set_status(absl::FailedPreconditionError("draining"),
                      absl::ZeroDuration());
  EXPECT_EQ(client_->GetStatus().status(),
            absl::FailedPreconditionError("draining"));

  options_.rpc_deadline = absl::Milliseconds(20);
  std::unique_ptr<LearnerClient> hurried =
      NewGrpcLearnerClient(address_, options_);
  learner_.set_status(absl::OkStatus(), absl::Milliseconds(150));
  EXPECT_EQ(hurried->GetStatus().status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(LearnerClientTest, FetchDatasetWritesTheFile) {
  tests::TempDir dir("learner_client_");
  const std::string path = dir.Path("the-id.rds");
  ASSERT_TRUE(client_->FetchDataset("the-id")->Receive(path).ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(), kFile);

  // The server's refusal is kUnavailable with its reason (the caller
  // retries downloads), and no file is left.
  const std::string missing = dir.Path("other.rds");
  const absl::Status refused = client_->FetchDataset("other")->Receive(missing);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.message(), HasSubstr("no such dataset"));
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST_F(LearnerClientTest, AFetchCancelledBeforeItStartsFailsAtOnce) {
  tests::TempDir dir("learner_client_");
  const std::string path = dir.Path("the-id.rds");
  std::unique_ptr<DatasetFetch> fetch = client_->FetchDataset("the-id");
  fetch->Cancel();
  EXPECT_EQ(fetch->Receive(path).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(LearnerClientTest, FindLearnerAsksTheCoordinator) {
  std::unique_ptr<ActorCoordinatorClient> coordinator =
      NewGrpcActorCoordinatorClient(address_, absl::Seconds(5));
  v1::FindLearnerRequest request;
  request.set_actor_id("a9");
  absl::StatusOr<v1::FindLearnerResponse> found =
      coordinator->FindLearner(request);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->learner_address(), "learner-for-a9");
  EXPECT_EQ(coordinator->FindLearner(v1::FindLearnerRequest()).status(),
            absl::InvalidArgumentError("no actor id"));
}

// The actor's credential path: the coordinator client stores each
// FindLearner answer's ticket in the shared credential, and the learner
// client presents the current one as "Bearer <ticket>" on every call.
TEST_F(LearnerClientTest, TheLearnerIsShownTheTicketOfTheLastFindLearner) {
  auto bearer = std::make_shared<LearnerCredential>();
  std::unique_ptr<ActorCoordinatorClient> coordinator =
      NewGrpcActorCoordinatorClient(address_, absl::Seconds(5), nullptr, "",
                                    bearer);
  options_.bearer = bearer;
  std::unique_ptr<LearnerClient> client =
      NewGrpcLearnerClient(address_, options_);
  ASSERT_TRUE(client->GetStatus().ok());  // nothing to show yet
  v1::FindLearnerRequest request;
  request.set_actor_id("a9");
  ASSERT_TRUE(coordinator->FindLearner(request).ok());
  EXPECT_EQ(bearer->Get(), "ticket-for-a9");
  ASSERT_TRUE(client->GetStatus().ok());
  tests::TempDir dir("learner_client_");
  ASSERT_TRUE(client->FetchDataset("the-id")->Receive(dir.Path("d")).ok());
  {
    std::unique_ptr<ActCall> call = client->Act();
    v1::Hello hello;
    hello.set_actor_id("a9");
    ASSERT_TRUE(call->WriteHello(hello));
    v1::LearnerMessage reply;
    ASSERT_TRUE(call->Read(&reply));
    call->WritesDone();
    EXPECT_TRUE(call->Finish().ok());
  }
  request.set_actor_id("a10");
  ASSERT_TRUE(coordinator->FindLearner(request).ok());
  ASSERT_TRUE(client->GetStatus().ok());
  EXPECT_EQ(learner_.authorizations(),
            (std::vector<std::string>{
                "", "Bearer ticket-for-a9", "Bearer ticket-for-a9",
                "Bearer ticket-for-a9", "Bearer ticket-for-a10"}));
}

TEST_F(LearnerClientTest, TheFactoryMakesClientsForTheAddressItIsGiven) {
  LearnerClientFactory factory = GrpcLearnerClientFactory(options_);
  std::unique_ptr<LearnerClient> client = factory(address_);
  absl::StatusOr<v1::LearnerStatus> status = client->GetStatus();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->chunks_rejected(), 5);
}

// Against a TLS server (dev certificates), the learner and coordinator
// clients with credentials verifying it get answers; without credentials
// (plaintext) the same calls are kUnavailable.
TEST(LearnerClientTlsTest, ClientsReachATlsServerOnlyWithTheirCredentials) {
  tests::TempDir certs("learner_client_certs_");
  const std::string make_certs = std::string(RISTRETTO_SOURCE_DIR) +
                                 "/scripts/make_dev_certs.sh " + certs.path() +
                                 " > /dev/null";
  ASSERT_EQ(std::system(make_certs.c_str()), 0) << make_certs;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server_credentials =
      MakeServerCredentials(
          {certs.Path("server.pem"), certs.Path("server.key"), ""});
  ASSERT_TRUE(server_credentials.ok()) << server_credentials.status();
  TestLearner learner;
  TestCoordinator coordinator;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", *server_credentials, &port);
  builder.RegisterService(&learner);
  builder.RegisterService(&coordinator);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> tls =
      MakeChannelCredentials({"", "", certs.Path("ca.pem")});
  ASSERT_TRUE(tls.ok()) << tls.status();

  GrpcLearnerClientOptions options;
  options.rpc_deadline = absl::Seconds(10);
  options.credentials = *tls;
  absl::StatusOr<v1::LearnerStatus> status =
      NewGrpcLearnerClient(address, options)->GetStatus();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->chunks_rejected(), 5);
  v1::FindLearnerRequest request;
  request.set_actor_id("a9");
  absl::StatusOr<v1::FindLearnerResponse> found =
      NewGrpcActorCoordinatorClient(address, absl::Seconds(10), *tls)
          ->FindLearner(request);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->learner_address(), "learner-for-a9");

  options.credentials = nullptr;
  EXPECT_EQ(NewGrpcLearnerClient(address, options)->GetStatus().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(NewGrpcActorCoordinatorClient(address, absl::Seconds(10))
                ->FindLearner(request)
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

}  // namespace
}  // namespace ristretto::wire
