// Helpers of the TLS tests (common/grpc_security.h, common/dev_certs.h): a
// real gRPC server on 127.0.0.1 that answers Learner.GetStatus under given
// TLS files, and one call to it; MakeDevCerts (make_dev_certs.h) for the
// certificates. Header-only; link ristretto_grpc_security and
// ristretto_proto.
#ifndef RISTRETTO_TESTS_COMMON_TLS_TEST_SERVER_H_
#define RISTRETTO_TESTS_COMMON_TLS_TEST_SERVER_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/grpc_security.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/common/make_dev_certs.h"

namespace ristretto::tests {

// A gRPC server on 127.0.0.1 whose Learner service answers GetStatus with
// OK (an empty status) and nothing else; shut down when the object goes.
class StatusOnlyServer {
 public:
  StatusOnlyServer() = default;
  ~StatusOnlyServer() {
    if (server_ != nullptr) server_->Shutdown();
  }
  StatusOnlyServer(const StatusOnlyServer&) = delete;
  StatusOnlyServer& operator=(const StatusOnlyServer&) = delete;

  // Starts serving on a free port with server credentials from `files`
  // (MakeServerCredentials); returns the port (0, with a test failure, if
  // the credentials or the server cannot be made). Call once.
  int Start(const TlsFiles& files) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
        MakeServerCredentials(files);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    if (!credentials.ok()) return 0;
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", *credentials, &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_GT(port, 0);
    return port;
  }

 private:
  class Service final : public v1::Learner::Service {
   public:
    grpc::Status GetStatus(grpc::ServerContext* /*context*/,
                           const v1::StatusRequest* /*request*/,
                           v1::LearnerStatus* /*reply*/) override {
      return grpc::Status::OK;
    }
  };

  Service service_;
  std::unique_ptr<grpc::Server> server_;
};

// One Learner.GetStatus call to HOST:port with client credentials from
// `files` (MakeChannelCredentials; 20 s deadline). Credentials that cannot
// be made come back as INVALID_ARGUMENT with the reason.
inline grpc::Status CallGetStatus(const std::string& host, int port,
                                  const TlsFiles& files) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(files);
  if (!credentials.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        std::string(credentials.status().message()));
  }
  auto stub = v1::Learner::NewStub(
      grpc::CreateChannel(host + ":" + std::to_string(port), *credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  v1::StatusRequest request;
  v1::LearnerStatus reply;
  return stub->GetStatus(&context, request, &reply);
}

}  // namespace ristretto::tests

#endif  // RISTRETTO_TESTS_COMMON_TLS_TEST_SERVER_H_
