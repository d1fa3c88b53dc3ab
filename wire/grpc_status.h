// The one mapping between absl::Status (what ristretto's code returns) and
// grpc::Status (what crosses the network), used by every gRPC server and
// client in the tree: the coordinator service, the learner service, the
// learner's coordinator agent and the actor.
//
// Both enums carry the google.rpc.Code numbering (OK = 0 ... UNAUTHENTICATED
// = 16), so every code maps to the code of the same name and number; the
// message is carried unchanged in both directions. Error details (gRPC's
// binary details, absl's payloads) are not carried: nothing in ristretto
// sets them. Pure functions; thread-safe.
#ifndef RISTRETTO_WIRE_GRPC_STATUS_H_
#define RISTRETTO_WIRE_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace ristretto::wire {

// The gRPC code of the same name. A value outside google.rpc.Code (an
// absl::StatusCode cast from an arbitrary int) maps to UNKNOWN, which is
// also what gRPC itself sends for such a code.
grpc::StatusCode ToGrpcCode(absl::StatusCode code);

// The absl code of the same name. A value outside google.rpc.Code
// (grpc::StatusCode::DO_NOT_USE, or an int cast into the enum) maps to
// kUnknown.
absl::StatusCode FromGrpcCode(grpc::StatusCode code);

// `status` as a grpc::Status: ToGrpcCode(code) and the same message
// (grpc::Status::OK for an OK status).
grpc::Status ToGrpcStatus(const absl::Status& status);

// `status` as an absl::Status: FromGrpcCode(error_code) and the same
// error_message (absl::OkStatus() for OK; absl drops the message of an OK
// status). error_details are dropped.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace ristretto::wire

#endif  // RISTRETTO_WIRE_GRPC_STATUS_H_
