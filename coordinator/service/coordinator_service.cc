#include "coordinator/service/coordinator_service.h"

#include <fstream>
#include <string>

#include "common/log.h"
#include "wire/grpc_status.h"

namespace ristretto::coordinator {
namespace {

// The reply for a scheduler result (wire::ToGrpcStatus), logging failures
// other than the expected "no such member/run" and "not in that state".
grpc::Status ToGrpc(const absl::Status& s) {
  if (!s.ok() && s.code() != absl::StatusCode::kNotFound &&
      s.code() != absl::StatusCode::kFailedPrecondition) {
    RLOG(ERROR) << "call failed: " << s.ToString();
  }
  return wire::ToGrpcStatus(s);
}

template <typename Response>
grpc::Status Reply(absl::StatusOr<Response> result, Response* out) {
  if (!result.ok()) return ToGrpc(result.status());
  *out = std::move(*result);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status CoordinatorService::RegisterLearner(
    grpc::ServerContext* /*context*/, const v1::RegisterLearnerRequest* request,
    v1::RegisterLearnerResponse* response) {
  return Reply(scheduler_->RegisterLearner(*request), response);
}

grpc::Status CoordinatorService::LeaseRun(grpc::ServerContext* /*context*/,
                                          const v1::LeaseRunRequest* request,
                                          v1::LeaseRunResponse* response) {
  return Reply(scheduler_->LeaseRun(*request), response);
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* /*context*/,
                                           const v1::HeartbeatRequest* request,
                                           v1::HeartbeatResponse* response) {
  return Reply(scheduler_->Heartbeat(*request), response);
}

grpc::Status CoordinatorService::ReportEvaluation(
    grpc::ServerContext* /*context*/,
    const v1::ReportEvaluationRequest* request,
    v1::ReportEvaluationResponse* response) {
  return Reply(scheduler_->ReportEvaluation(*request), response);
}

grpc::Status CoordinatorService::CompleteRun(
    grpc::ServerContext* /*context*/, const v1::CompleteRunRequest* request,
    v1::CompleteRunResponse* /*response*/) {
  return ToGrpc(scheduler_->CompleteRun(*request));
}

grpc::Status CoordinatorService::FailRun(grpc::ServerContext* /*context*/,
                                         const v1::FailRunRequest* request,
                                         v1::FailRunResponse* /*response*/) {
  return ToGrpc(scheduler_->FailRun(*request));
}

grpc::Status CoordinatorService::Release(grpc::ServerContext* /*context*/,
                                         const v1::ReleaseRequest* request,
                                         v1::ReleaseResponse* /*response*/) {
  return ToGrpc(scheduler_->Release(*request));
}

grpc::Status CoordinatorService::FindLearner(
    grpc::ServerContext* /*context*/, const v1::FindLearnerRequest* request,
    v1::FindLearnerResponse* response) {
  return Reply(scheduler_->FindLearner(*request), response);
}

grpc::Status CoordinatorService::FetchDataset(
    grpc::ServerContext* context, const v1::FetchDatasetRequest* request,
    grpc::ServerWriter<v1::DatasetPiece>* writer) {
  absl::StatusOr<std::string> path =
      scheduler_->DatasetPath(request->dataset_id());
  if (!path.ok()) return ToGrpc(path.status());
  std::ifstream in(*path, std::ios::binary | std::ios::ate);
  if (!in) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "cannot open the dataset file " + *path);
  }
  const int64_t total = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  constexpr int64_t kPiece = 1 << 20;
  int64_t offset = 0;
  do {
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    const int64_t n = std::min(kPiece, total - offset);
    v1::DatasetPiece piece;
    std::string data(static_cast<size_t>(n), '\0');
    in.read(data.data(), n);
    piece.set_data(std::move(data));
    piece.set_offset(offset);
    piece.set_total_size(total);
    offset += n;
    piece.set_last(offset >= total);
    if (!writer->Write(piece)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
    }
  } while (offset < total);
  return grpc::Status::OK;
}

}  // namespace ristretto::coordinator
