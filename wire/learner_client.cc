#include "wire/learner_client.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/ristretto.grpc.pb.h"
#include "wire/chunk_wire.h"
#include "wire/dataset_cache.h"
#include "wire/grpc_status.h"

namespace ristretto::wire {
namespace {

std::chrono::system_clock::time_point DeadlineIn(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

// `credentials`, or plaintext when null.
std::shared_ptr<grpc::ChannelCredentials> OrPlaintext(
    std::shared_ptr<grpc::ChannelCredentials> credentials) {
  return credentials != nullptr ? std::move(credentials)
                                : grpc::InsecureChannelCredentials();
}

// Adds "authorization: Bearer <value>" to `ctx` when `bearer` holds one.
void AddBearer(const std::shared_ptr<const LearnerCredential>& bearer,
               grpc::ClientContext* ctx) {
  if (bearer == nullptr) return;
  const std::string value = bearer->Get();
  if (!value.empty()) {
    ctx->AddMetadata(auth::kMetadataKey, auth::BearerValue(value));
  }
}

// Learner.Act through ActStub: the actor's messages as byte buffers, chunk
// payloads aliasing the chunk (chunk_wire.h).
class GrpcActCall final : public ActCall {
 public:
  GrpcActCall(const std::shared_ptr<grpc::Channel>& channel,
              const std::shared_ptr<const LearnerCredential>& bearer) {
    AddBearer(bearer, &ctx_);
    ActStub act(channel);
    stream_ = act.Act(&ctx_);
  }
  ~GrpcActCall() override {
    // A call dropped without Finish(): cancel it so gRPC releases it.
    if (!finished_) {
      ctx_.TryCancel();
      stream_->Finish();
    }
  }

  bool WriteHello(const v1::Hello& hello) override {
    v1::ActorMessage message;
    *message.mutable_hello() = hello;
    return stream_->Write(SerializeToByteBuffer(message));
  }
  bool WriteChunk(std::shared_ptr<const learner::TrajectoryChunk> chunk,
                  int64_t sequence) override {
    return stream_->Write(EncodeChunkMessage(std::move(chunk), sequence));
  }
  bool WritesDone() override { return stream_->WritesDone(); }
  bool Read(v1::LearnerMessage* message) override {
    return stream_->Read(message);
  }
  void Cancel() override { ctx_.TryCancel(); }
  absl::Status Finish() override {
    finished_ = true;
    return FromGrpcStatus(stream_->Finish());
  }

 private:
  grpc::ClientContext ctx_;  // outlives stream_
  std::unique_ptr<ActStream> stream_;
  bool finished_ = false;  // Finish()'s thread only
};

class GrpcDatasetFetch final : public DatasetFetch {
 public:
  GrpcDatasetFetch(v1::Learner::Stub* stub, std::string dataset_id,
                   absl::Duration deadline,
                   const std::shared_ptr<const LearnerCredential>& bearer)
      : stub_(stub), dataset_id_(std::move(dataset_id)) {
    ctx_.set_deadline(DeadlineIn(deadline));
    AddBearer(bearer, &ctx_);
  }

  absl::Status Receive(const std::string& path) override {
    v1::FetchDatasetRequest request;
    request.set_dataset_id(dataset_id_);
    std::unique_ptr<grpc::ClientReader<v1::DatasetPiece>> reader =
        stub_->FetchDataset(&ctx_, request);
    return ReceiveDatasetFile(reader.get(), &ctx_, dataset_id_, path);
  }
  // Before the call starts, gRPC remembers the cancel and applies it then.
  void Cancel() override { ctx_.TryCancel(); }

 private:
  v1::Learner::Stub* stub_;  // the client's; outlives this fetch
  std::string dataset_id_;
  grpc::ClientContext ctx_;
};

class GrpcLearnerClient final : public LearnerClient {
 public:
  GrpcLearnerClient(const std::string& address,
                    const GrpcLearnerClientOptions& options)
      : options_(options) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options.max_message_bytes);
    args.SetMaxSendMessageSize(options.max_message_bytes);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(
        address, OrPlaintext(options.credentials), args);
    stub_ = v1::Learner::NewStub(channel_);
  }

  std::unique_ptr<ActCall> Act() override {
    return std::make_unique<GrpcActCall>(channel_, options_.bearer);
  }
  std::unique_ptr<DatasetFetch> FetchDataset(
      const std::string& dataset_id) override {
    return std::make_unique<GrpcDatasetFetch>(
        stub_.get(), dataset_id, options_.rpc_deadline, options_.bearer);
  }
  absl::StatusOr<v1::LearnerStatus> GetStatus() override {
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineIn(options_.rpc_deadline));
    AddBearer(options_.bearer, &ctx);
    v1::LearnerStatus response;
    const absl::Status s =
        FromGrpcStatus(stub_->GetStatus(&ctx, v1::StatusRequest(), &response));
    if (!s.ok()) return s;
    return response;
  }

 private:
  const GrpcLearnerClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Learner::Stub> stub_;
};

class GrpcActorCoordinatorClient final : public ActorCoordinatorClient {
 public:
  GrpcActorCoordinatorClient(
      std::string address, absl::Duration rpc_deadline,
      std::shared_ptr<grpc::ChannelCredentials> credentials, std::string token,
      std::shared_ptr<LearnerCredential> tickets)
      : address_(std::move(address)),
        rpc_deadline_(rpc_deadline),
        credentials_(OrPlaintext(std::move(credentials))),
        token_(std::move(token)),
        tickets_(std::move(tickets)) {}

  absl::StatusOr<v1::FindLearnerResponse> FindLearner(
      const v1::FindLearnerRequest& request) override {
    auto stub =
        v1::Coordinator::NewStub(grpc::CreateChannel(address_, credentials_));
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineIn(rpc_deadline_));
    if (!token_.empty()) {
      ctx.AddMetadata(auth::kMetadataKey, auth::BearerValue(token_));
    }
    v1::FindLearnerResponse response;
    const absl::Status s =
        FromGrpcStatus(stub->FindLearner(&ctx, request, &response));
    if (!s.ok()) return s;
    // The ticket for the learner named (empty from a coordinator without a
    // token: then the learners authenticate nobody either).
    if (tickets_ != nullptr && !response.learner_address().empty()) {
      tickets_->Set(response.actor_ticket());
    }
    return response;
  }

 private:
  const std::string address_;
  const absl::Duration rpc_deadline_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const std::string token_;  // cluster token; empty: none
  const std::shared_ptr<LearnerCredential> tickets_;  // may be null
};

}  // namespace

std::unique_ptr<LearnerClient> NewGrpcLearnerClient(
    const std::string& address, const GrpcLearnerClientOptions& options) {
  return std::make_unique<GrpcLearnerClient>(address, options);
}

LearnerClientFactory GrpcLearnerClientFactory(
    const GrpcLearnerClientOptions& options) {
  return [options](const std::string& address) {
    return NewGrpcLearnerClient(address, options);
  };
}

std::unique_ptr<ActorCoordinatorClient> NewGrpcActorCoordinatorClient(
    const std::string& address, absl::Duration rpc_deadline,
    std::shared_ptr<grpc::ChannelCredentials> credentials,
    const std::string& token, std::shared_ptr<LearnerCredential> tickets) {
  return std::make_unique<GrpcActorCoordinatorClient>(
      address, rpc_deadline, std::move(credentials), token, std::move(tickets));
}

}  // namespace ristretto::wire
