#include "wire/grpc_status.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ristretto.grpc.pb.h"

namespace ristretto::wire {
namespace {

// Every google.rpc.Code with its number, as both libraries name it.
struct CodePair {
  int number;
  absl::StatusCode absl_code;
  grpc::StatusCode grpc_code;
};

const std::vector<CodePair>& AllCodes() {
  static const auto* const kCodes = new std::vector<CodePair>{
      {0, absl::StatusCode::kOk, grpc::StatusCode::OK},
      {1, absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {2, absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {3, absl::StatusCode::kInvalidArgument,
       grpc::StatusCode::INVALID_ARGUMENT},
      {4, absl::StatusCode::kDeadlineExceeded,
       grpc::StatusCode::DEADLINE_EXCEEDED},
      {5, absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {6, absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {7, absl::StatusCode::kPermissionDenied,
       grpc::StatusCode::PERMISSION_DENIED},
      {8, absl::StatusCode::kResourceExhausted,
       grpc::StatusCode::RESOURCE_EXHAUSTED},
      {9, absl::StatusCode::kFailedPrecondition,
       grpc::StatusCode::FAILED_PRECONDITION},
      {10, absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {11, absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {12, absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {13, absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {14, absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {15, absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {16, absl::StatusCode::kUnauthenticated,
       grpc::StatusCode::UNAUTHENTICATED},
  };
  return *kCodes;
}

// A message that a lossy conversion would alter: non-ASCII, a newline,
// quotes and a colon (what EscapeForMessage-style errors contain).
std::string MessageFor(int number) {
  return "run 'r\xC3\xA9' at step " + std::to_string(number) +
         ":\n\"field\" is bad";
}

TEST(GrpcStatusTest, EveryCodeMapsToTheCodeOfTheSameNameAndNumber) {
  ASSERT_EQ(AllCodes().size(), 17u);
  for (const CodePair& c : AllCodes()) {
    SCOPED_TRACE(c.number);
    EXPECT_EQ(static_cast<int>(c.absl_code), c.number);
    EXPECT_EQ(static_cast<int>(c.grpc_code), c.number);
    EXPECT_EQ(ToGrpcCode(c.absl_code), c.grpc_code);
    EXPECT_EQ(FromGrpcCode(c.grpc_code), c.absl_code);
  }
}

TEST(GrpcStatusTest, AbslToGrpcKeepsCodeAndMessage) {
  for (const CodePair& c : AllCodes()) {
    if (c.number == 0) continue;
    SCOPED_TRACE(c.number);
    const absl::Status in(c.absl_code, MessageFor(c.number));
    const grpc::Status out = ToGrpcStatus(in);
    EXPECT_EQ(out.error_code(), c.grpc_code);
    EXPECT_EQ(out.error_message(), MessageFor(c.number));
    EXPECT_TRUE(out.error_details().empty());
  }
}

TEST(GrpcStatusTest, GrpcToAbslKeepsCodeAndMessage) {
  for (const CodePair& c : AllCodes()) {
    if (c.number == 0) continue;
    SCOPED_TRACE(c.number);
    const grpc::Status in(c.grpc_code, MessageFor(c.number));
    const absl::Status out = FromGrpcStatus(in);
    EXPECT_EQ(out.code(), c.absl_code);
    EXPECT_EQ(out.message(), MessageFor(c.number));
  }
}

TEST(GrpcStatusTest, RoundTripsBothWaysForEveryCode) {
  for (const CodePair& c : AllCodes()) {
    SCOPED_TRACE(c.number);
    const absl::Status a(c.absl_code, MessageFor(c.number));
    EXPECT_EQ(FromGrpcStatus(ToGrpcStatus(a)), a);
    const grpc::Status g(c.grpc_code,
                         c.number == 0 ? "" : MessageFor(c.number));
    const grpc::Status back = ToGrpcStatus(FromGrpcStatus(g));
    EXPECT_EQ(back.error_code(), g.error_code());
    EXPECT_EQ(back.error_message(), g.error_message());
  }
}

TEST(GrpcStatusTest, OkIsOkBothWays) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  // absl keeps no message on OK; gRPC's OK carries none either.
  EXPECT_EQ(ToGrpcStatus(absl::OkStatus()).error_message(), "");
}

TEST(GrpcStatusTest, ValuesOutsideGoogleRpcCodeBecomeUnknown) {
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(17)),
            grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(-3)),
            grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(FromGrpcCode(grpc::StatusCode::DO_NOT_USE),
            absl::StatusCode::kUnknown);
  EXPECT_EQ(FromGrpcCode(static_cast<grpc::StatusCode>(99)),
            absl::StatusCode::kUnknown);
  // The message survives the fallback.
  const absl::Status odd(static_cast<absl::StatusCode>(42), "odd code");
  const grpc::Status g = ToGrpcStatus(odd);
  EXPECT_EQ(g.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(g.error_message(), "odd code");
}

// A Learner server whose GetStatus fails with the status it is given,
// converted with ToGrpcStatus, as the services do.
class FailingLearner final : public v1::Learner::Service {
 public:
  void Set(absl::Status status) {
    absl::MutexLock lock(&mu_);
    next_ = std::move(status);
  }
  grpc::Status GetStatus(grpc::ServerContext* /*context*/,
                         const v1::StatusRequest* /*request*/,
                         v1::LearnerStatus* /*response*/) override {
    absl::MutexLock lock(&mu_);
    return ToGrpcStatus(next_);
  }

 private:
  absl::Mutex mu_;
  absl::Status next_ ABSL_GUARDED_BY(mu_);
};

// Through a real gRPC server and channel (in-process transport, so the
// status is serialised into trailers and parsed back as on TCP): what the
// client reads with FromGrpcStatus is what the server returned.
TEST(GrpcStatusTest, EveryErrorCodeCrossesARealCallUnchanged) {
  FailingLearner service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<v1::Learner::Stub> stub =
      v1::Learner::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  for (const CodePair& c : AllCodes()) {
    if (c.number == 0) continue;
    SCOPED_TRACE(c.number);
    const absl::Status sent(c.absl_code, MessageFor(c.number));
    service.Set(sent);
    grpc::ClientContext ctx;
    v1::LearnerStatus response;
    const grpc::Status received =
        stub->GetStatus(&ctx, v1::StatusRequest(), &response);
    EXPECT_EQ(received.error_code(), c.grpc_code);
    EXPECT_EQ(FromGrpcStatus(received), sent);
  }
  service.Set(absl::OkStatus());
  grpc::ClientContext ctx;
  v1::LearnerStatus response;
  EXPECT_TRUE(
      FromGrpcStatus(stub->GetStatus(&ctx, v1::StatusRequest(), &response))
          .ok());
  server->Shutdown();
}

}  // namespace
}  // namespace ristretto::wire
