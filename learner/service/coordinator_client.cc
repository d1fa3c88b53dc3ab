#include "learner/service/coordinator_client.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "wire/dataset_cache.h"
#include "wire/grpc_status.h"

namespace ristretto::learner {
namespace {

class GrpcCoordinatorClient final : public CoordinatorClient {
 public:
  GrpcCoordinatorClient(const std::string& address, absl::Duration rpc_deadline,
                        std::shared_ptr<grpc::ChannelCredentials> credentials)
      : rpc_deadline_(rpc_deadline) {
    grpc::ChannelArguments args;
    // Reconnect quickly after a coordinator restart (gRPC's default backoff
    // grows to two minutes, longer than a lease lives).
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    if (credentials == nullptr) {
      credentials = grpc::InsecureChannelCredentials();
    }
    stub_ = v1::Coordinator::NewStub(
        grpc::CreateCustomChannel(address, credentials, args));
  }

  void SetSessionToken(const std::string& secret) override {
    absl::MutexLock lock(&mu_);
    session_token_ = secret;
  }

  absl::StatusOr<v1::RegisterLearnerResponse> RegisterLearner(
      const v1::RegisterLearnerRequest& request) override {
    // The registration token travels in the request, not as a session.
    return Unary(&v1::Coordinator::Stub::RegisterLearner, request,
                 /*with_session=*/false);
  }
  absl::StatusOr<v1::LeaseRunResponse> LeaseRun(
      const v1::LeaseRunRequest& request) override {
    return Unary(&v1::Coordinator::Stub::LeaseRun, request);
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) override {
    return Unary(&v1::Coordinator::Stub::Heartbeat, request);
  }
  absl::StatusOr<v1::ReportEvaluationResponse> ReportEvaluation(
      const v1::ReportEvaluationRequest& request) override {
    return Unary(&v1::Coordinator::Stub::ReportEvaluation, request);
  }
  absl::Status CompleteRun(const v1::CompleteRunRequest& request) override {
    return Unary(&v1::Coordinator::Stub::CompleteRun, request).status();
  }
  absl::Status FailRun(const v1::FailRunRequest& request) override {
    return Unary(&v1::Coordinator::Stub::FailRun, request).status();
  }
  absl::Status Release(const v1::ReleaseRequest& request) override {
    return Unary(&v1::Coordinator::Stub::Release, request).status();
  }

  absl::Status FetchDataset(const std::string& dataset_id,
                            const std::string& path) override {
    v1::FetchDatasetRequest request;
    request.set_dataset_id(dataset_id);
    grpc::ClientContext ctx;
    AddSession(&ctx);
    // A dataset is many pieces: the unary deadline is far too short.
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(120));
    auto reader = stub_->FetchDataset(&ctx, request);
    return wire::ReceiveDatasetFile(reader.get(), &ctx, dataset_id, path);
  }

 private:
  // Adds "authorization: Bearer <session secret>" when there is one.
  void AddSession(grpc::ClientContext* ctx) {
    absl::MutexLock lock(&mu_);
    if (!session_token_.empty()) {
      ctx->AddMetadata(auth::kMetadataKey, auth::BearerValue(session_token_));
    }
  }

  // Calls `method` with a fresh context bounded by the RPC deadline,
  // presenting the session secret unless `with_session` is false.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(
      grpc::Status (v1::Coordinator::Stub::*method)(grpc::ClientContext*,
                                                    const Request&, Response*),
      const Request& request, bool with_session = true) {
    grpc::ClientContext ctx;
    if (with_session) AddSession(&ctx);
    ctx.set_deadline(std::chrono::system_clock::now() +
                     absl::ToChronoMilliseconds(rpc_deadline_));
    Response response;
    const absl::Status s =
        wire::FromGrpcStatus((stub_.get()->*method)(&ctx, request, &response));
    if (!s.ok()) return s;
    return response;
  }

  const absl::Duration rpc_deadline_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  absl::Mutex mu_;
  std::string session_token_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    const std::string& address, absl::Duration rpc_deadline,
    std::shared_ptr<grpc::ChannelCredentials> credentials) {
  return std::make_unique<GrpcCoordinatorClient>(address, rpc_deadline,
                                                 std::move(credentials));
}

}  // namespace ristretto::learner
