// CoordinatorClient: the calls the learner's CoordinatorAgent makes on the
// coordinator (proto/coordinator.proto, service Coordinator), behind a small
// interface so the agent can be driven in-process by a fake in unit tests.
//
// Every call returns the coordinator's answer or its error as an
// absl::Status (the gRPC implementation maps codes with wire/grpc_status.h:
// kUnavailable / kDeadlineExceeded when the coordinator cannot be reached in
// time, kNotFound when it does not know the member, the coordinator's own
// codes otherwise).
//
// Thread-safety: the agent calls from its one thread; implementations need
// only support one caller at a time (the gRPC one is thread-safe anyway).
#ifndef RISTRETTO_LEARNER_SERVICE_COORDINATOR_CLIENT_H_
#define RISTRETTO_LEARNER_SERVICE_COORDINATOR_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "proto/coordinator.pb.h"

namespace ristretto::learner {

class CoordinatorClient {
 public:
  virtual ~CoordinatorClient() = default;

  // The learner's session secret (RegisterLearnerResponse.session_token):
  // every call but RegisterLearner presents it as "authorization: Bearer
  // <secret>" metadata; none while empty (a coordinator without a token).
  // RegisterLearner carries the registration token in its request instead.
  virtual void SetSessionToken(const std::string& secret) = 0;

  virtual absl::StatusOr<v1::RegisterLearnerResponse> RegisterLearner(
      const v1::RegisterLearnerRequest& request) = 0;
  virtual absl::StatusOr<v1::LeaseRunResponse> LeaseRun(
      const v1::LeaseRunRequest& request) = 0;
  virtual absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) = 0;
  virtual absl::StatusOr<v1::ReportEvaluationResponse> ReportEvaluation(
      const v1::ReportEvaluationRequest& request) = 0;
  virtual absl::Status CompleteRun(const v1::CompleteRunRequest& request) = 0;
  virtual absl::Status FailRun(const v1::FailRunRequest& request) = 0;
  virtual absl::Status Release(const v1::ReleaseRequest& request) = 0;
  // Streams the dataset `dataset_id` into the file `path` (created or
  // truncated). Errors: the coordinator's (kNotFound for an unknown id) or
  // the file's; the caller verifies the content hash.
  virtual absl::Status FetchDataset(const std::string& dataset_id,
                                    const std::string& path) = 0;
};

// The production client: a gRPC channel to `address` (HOST:PORT; reconnect
// backoff 100 ms .. 2 s) secured by `credentials`: TLS verifying the
// coordinator, with a client certificate under mutual TLS
// (MakeChannelCredentials in common/grpc_security.h); null: plaintext.
// Under TLS the coordinator's certificate must name the host of `address`.
// Unary calls time out after `rpc_deadline`, FetchDataset after 120 s.
// Never fails to construct: an unreachable coordinator (or a failed
// handshake) shows up as kUnavailable on each call.
std::unique_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    const std::string& address, absl::Duration rpc_deadline,
    std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_COORDINATOR_CLIENT_H_
