// CoordinatorService: the coordinator's gRPC surface (sync API; every call
// is a short database transaction). Thin: proto → Scheduler → proto, with
// absl status codes mapped to gRPC codes (kUnavailable when PostgreSQL is
// away, so clients retry).
// Thread-safe (the Scheduler serialises state changes).
#ifndef RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_SERVICE_H_
#define RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_SERVICE_H_

#include "coordinator/service/scheduler.h"
#include "proto/coordinator.grpc.pb.h"

namespace ristretto::coordinator {

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  explicit CoordinatorService(Scheduler* scheduler) : scheduler_(scheduler) {}

  grpc::Status RegisterLearner(grpc::ServerContext* context,
                               const v1::RegisterLearnerRequest* request,
                               v1::RegisterLearnerResponse* response) override;
  grpc::Status LeaseRun(grpc::ServerContext* context,
                        const v1::LeaseRunRequest* request,
                        v1::LeaseRunResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status ReportEvaluation(
      grpc::ServerContext* context, const v1::ReportEvaluationRequest* request,
      v1::ReportEvaluationResponse* response) override;
  grpc::Status CompleteRun(grpc::ServerContext* context,
                           const v1::CompleteRunRequest* request,
                           v1::CompleteRunResponse* response) override;
  grpc::Status FailRun(grpc::ServerContext* context,
                       const v1::FailRunRequest* request,
                       v1::FailRunResponse* response) override;
  grpc::Status Release(grpc::ServerContext* context,
                       const v1::ReleaseRequest* request,
                       v1::ReleaseResponse* response) override;
  grpc::Status FindLearner(grpc::ServerContext* context,
                           const v1::FindLearnerRequest* request,
                           v1::FindLearnerResponse* response) override;
  grpc::Status FetchDataset(
      grpc::ServerContext* context, const v1::FetchDatasetRequest* request,
      grpc::ServerWriter<v1::DatasetPiece>* writer) override;

 private:
  Scheduler* const scheduler_;
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_SERVICE_H_
