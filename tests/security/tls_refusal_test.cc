// Plaintext refused when TLS is on: a real ristretto-coordinator (over the
// harness's PostgreSQL) and a real ristretto-learner (its client), both
// under mutual TLS with certificates from MakeDevCertificates, as `ristretto
// up` runs them. A hostile client that speaks plaintext, TLS without a
// client certificate, or TLS with another CA's certificates never reaches
// an RPC (UNAVAILABLE: the handshake fails before any request, so not even
// a correct token crosses the wire); the same calls with the right
// certificates do reach the services, so the refusals are TLS's.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/dev_certs.h"
#include "common/grpc_security.h"
#include "common/secret_file.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/coordinator_store/pg_test_env.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"

namespace ristretto {
namespace {

using ::ristretto::testing::Process;
using namespace std::chrono_literals;

// The first "<what>HOST:PORT" in the process's log ("" after 60 s).
std::string Logged(Process& p, const std::string& what) {
  return ristretto::testing::WaitForLoggedWord(p, what, 60s);
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + 20s);
  return context;
}

std::shared_ptr<grpc::ChannelCredentials> Credentials(const TlsFiles& files) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(files);
  EXPECT_TRUE(credentials.ok()) << credentials.status();
  return credentials.ok() ? *credentials : grpc::InsecureChannelCredentials();
}

class TlsRefusalTest : public coordinator::testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    unsetenv("RISTRETTO_TOKEN");
    absl::StatusOr<std::string> dir =
        coordinator::testing::MakeTempDir("ristretto_tls_refusal_");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    absl::StatusOr<DevCertificates> certs = MakeDevCertificates(dir_ + "/tls");
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *certs;
    absl::StatusOr<DevCertificates> other =
        MakeDevCertificates(dir_ + "/other");
    ASSERT_TRUE(other.ok()) << other.status();
    other_ = *other;
    absl::StatusOr<std::string> token = GenerateToken();
    ASSERT_TRUE(token.ok()) << token.status();
    token_ = *token;
    ASSERT_TRUE(WriteSecretFile(dir_ + "/token", token_).ok());
    const std::vector<std::string> server_tls = {
        "--tls-cert",      certs_.server_cert, "--tls-key",
        certs_.server_key, "--tls-ca",         certs_.ca_cert};
    std::vector<std::string> argv = {RISTRETTO_COORDINATOR_BINARY,
                                     "--db",
                                     dsn(),
                                     "--port",
                                     "0",
                                     "--data-dir",
                                     dir_ + "/coordinator",
                                     "--token-file",
                                     dir_ + "/token"};
    argv.insert(argv.end(), server_tls.begin(), server_tls.end());
    coordinator_ = std::make_unique<Process>(argv, dir_ + "/coordinator.log");
    coordinator_address_ = Logged(*coordinator_, "listening on ");
    ASSERT_FALSE(coordinator_address_.empty()) << coordinator_->Log();
    argv = {RISTRETTO_LEARNER_BINARY,
            "--coordinator",
            coordinator_address_,
            "--port",
            "0",
            "--run-dir",
            dir_ + "/learner",
            "--token-file",
            dir_ + "/token"};
    argv.insert(argv.end(), server_tls.begin(), server_tls.end());
    argv.insert(argv.end(), {"--coordinator-tls-cert", certs_.client_cert,
                             "--coordinator-tls-key", certs_.client_key});
    learner_ = std::make_unique<Process>(argv, dir_ + "/learner.log");
    learner_address_ = Logged(*learner_, "listening on ");
    ASSERT_FALSE(learner_address_.empty()) << learner_->Log();
    // The learner itself got through the coordinator's mutual TLS.
    ASSERT_TRUE(learner_->WaitForLog("registered with", 60s))
        << learner_->Log();
  }
  void TearDown() override {
    learner_.reset();
    coordinator_.reset();
    if (!HasFailure() && !dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // RegisterLearner with the right token, over `credentials`.
  grpc::Status Register(
      const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    auto stub = v1::Coordinator::NewStub(
        grpc::CreateChannel(coordinator_address_, credentials));
    v1::RegisterLearnerRequest request;
    request.set_member_id("stranger");
    request.set_address("127.0.0.1:1");
    request.set_slots(1);
    request.set_memory_budget_mb(1024);
    request.set_device("cpu");
    request.set_token(token_);
    v1::RegisterLearnerResponse response;
    return stub->RegisterLearner(Context().get(), request, &response);
  }

  // The coordinator's and the learner's FetchDataset, and the learner's
  // GetStatus, over `credentials`: their codes.
  std::vector<grpc::StatusCode> ReadCalls(
      const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    std::vector<grpc::StatusCode> codes;
    v1::FetchDatasetRequest fetch;
    fetch.set_dataset_id(std::string(64, 'a'));
    v1::DatasetPiece piece;
    {
      auto stub = v1::Coordinator::NewStub(
          grpc::CreateChannel(coordinator_address_, credentials));
      auto context = Context();
      auto reader = stub->FetchDataset(context.get(), fetch);
      while (reader->Read(&piece)) {
      }
      codes.push_back(reader->Finish().error_code());
    }
    auto learner = v1::Learner::NewStub(
        grpc::CreateChannel(learner_address_, credentials));
    {
      auto context = Context();
      auto reader = learner->FetchDataset(context.get(), fetch);
      while (reader->Read(&piece)) {
      }
      codes.push_back(reader->Finish().error_code());
    }
    v1::LearnerStatus status;
    codes.push_back(
        learner->GetStatus(Context().get(), v1::StatusRequest(), &status)
            .error_code());
    return codes;
  }

  std::string dir_;
  DevCertificates certs_;
  DevCertificates other_;
  std::string token_;
  std::unique_ptr<Process> coordinator_;
  std::unique_ptr<Process> learner_;
  std::string coordinator_address_;
  std::string learner_address_;
};

const std::vector<grpc::StatusCode> kAllUnavailable = {
    grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNAVAILABLE,
    grpc::StatusCode::UNAVAILABLE};

TEST_F(TlsRefusalTest, PlaintextClientNeverReachesEitherServer) {
  const auto plaintext = grpc::InsecureChannelCredentials();
  EXPECT_EQ(Register(plaintext).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ReadCalls(plaintext), kAllUnavailable);
  // The same calls with the run's client certificate reach the services.
  const auto client =
      Credentials({certs_.client_cert, certs_.client_key, certs_.ca_cert});
  EXPECT_TRUE(Register(client).ok());
  for (const grpc::StatusCode code : ReadCalls(client)) {
    EXPECT_NE(code, grpc::StatusCode::UNAVAILABLE);
  }
}

TEST_F(TlsRefusalTest, TlsWithoutAClientCertificateIsRefused) {
  const auto no_certificate = Credentials({"", "", certs_.ca_cert});
  EXPECT_EQ(Register(no_certificate).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ReadCalls(no_certificate), kAllUnavailable);
}

TEST_F(TlsRefusalTest, CertificatesOfAnotherCaAreRefusedBothWays) {
  // A client certificate another CA signed, presented to servers it cannot
  // verify against; and a client that trusts only the other CA refuses the
  // servers' certificates.
  const auto stranger =
      Credentials({other_.client_cert, other_.client_key, certs_.ca_cert});
  EXPECT_EQ(Register(stranger).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ReadCalls(stranger), kAllUnavailable);
  const auto distrusting =
      Credentials({certs_.client_cert, certs_.client_key, other_.ca_cert});
  EXPECT_EQ(Register(distrusting).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ReadCalls(distrusting), kAllUnavailable);
}

}  // namespace
}  // namespace ristretto
