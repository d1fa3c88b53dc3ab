// TLS and mutual TLS on a real gRPC server on 127.0.0.1, with certificates
// made by scripts/make_dev_certs.sh (openssl), and the loopback-only rule.
#include "common/grpc_security.h"

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/common/make_dev_certs.h"
#include "tests/common/temp_dir.h"
#include "tests/common/tls_test_server.h"

namespace ristretto {
namespace {

using ::testing::HasSubstr;

class GrpcSecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new tests::TempDir("certs");
    ASSERT_TRUE(tests::MakeDevCerts(certs_->path()));
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  static std::string File(const std::string& name) {
    return certs_->path() + "/" + name;
  }

  // Starts the test's server with `files`; returns its port.
  int Serve(const TlsFiles& files) { return server_.Start(files); }

  // One GetStatus call to 127.0.0.1:port with client `files`.
  static grpc::Status Call(int port, const TlsFiles& files) {
    return tests::CallGetStatus("127.0.0.1", port, files);
  }

  static tests::TempDir* certs_;
  tests::StatusOnlyServer server_;
};

tests::TempDir* GrpcSecurityTest::certs_ = nullptr;

TEST_F(GrpcSecurityTest, TlsServerAcceptsVerifyingClientsAndRefusesPlaintext) {
  const int port = Serve({File("server.pem"), File("server.key"), ""});
  EXPECT_TRUE(Call(port, {"", "", File("ca.pem")}).ok());
  const grpc::Status plaintext = Call(port, {});
  EXPECT_EQ(plaintext.error_code(), grpc::StatusCode::UNAVAILABLE)
      << plaintext.error_message();
}

TEST_F(GrpcSecurityTest, ClientRefusesAServerItsCaDidNotSign) {
  tests::TempDir other("other-ca");
  ASSERT_TRUE(tests::MakeDevCerts(other.path()));
  const int port = Serve({File("server.pem"), File("server.key"), ""});
  const grpc::Status status = Call(port, {"", "", other.path() + "/ca.pem"});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(GrpcSecurityTest, MutualTlsRequiresAClientCertificate) {
  const int port =
      Serve({File("server.pem"), File("server.key"), File("ca.pem")});
  EXPECT_TRUE(
      Call(port, {File("client.pem"), File("client.key"), File("ca.pem")})
          .ok());
  const grpc::Status no_certificate = Call(port, {"", "", File("ca.pem")});
  EXPECT_EQ(no_certificate.error_code(), grpc::StatusCode::UNAVAILABLE)
      << no_certificate.error_message();
  const grpc::Status plaintext = Call(port, {});
  EXPECT_EQ(plaintext.error_code(), grpc::StatusCode::UNAVAILABLE)
      << plaintext.error_message();
}

TEST_F(GrpcSecurityTest, BadFilesAreClearErrors) {
  auto no_key = MakeServerCredentials({File("server.pem"), "", ""});
  EXPECT_EQ(no_key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_key.status().message()),
              HasSubstr("--tls-cert needs --tls-key"));
  auto missing =
      MakeServerCredentials({File("nope.pem"), File("server.key"), ""});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope.pem"));

  const std::string not_pem = certs_->path() + "/not.pem";
  std::ofstream(not_pem) << "hello";
  auto bad = MakeServerCredentials({not_pem, File("server.key"), ""});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("not a PEM file"));

  const std::string open_key = certs_->path() + "/open.key";
  std::ofstream(open_key) << "-----BEGIN PRIVATE KEY-----\n";
  chmod(open_key.c_str(), 0644);
  auto readable = MakeServerCredentials({File("server.pem"), open_key, ""});
  EXPECT_EQ(readable.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(readable.status().message()),
              HasSubstr("readable by group or others"));

  auto client_without_ca =
      MakeChannelCredentials({File("client.pem"), File("client.key"), ""});
  EXPECT_EQ(client_without_ca.status().code(),
            absl::StatusCode::kInvalidArgument);
  auto dir = MakeChannelCredentials({"", "", certs_->path()});
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(dir.status().message()),
              HasSubstr("not a regular file"));
}

TEST(ExposureTest, UnprotectedServersStayOnLoopback) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.8.0.1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("[::1]"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("127.0.0.1.example.com"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_EQ(HostOfAddress("127.0.0.1:50051"), "127.0.0.1");
  EXPECT_EQ(HostOfAddress("[::1]:50051"), "::1");
  EXPECT_EQ(HostOfAddress("0.0.0.0"), "0.0.0.0");

  const auto refused = CheckExposure("0.0.0.0:50051", false, false, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("--allow-insecure-network"));
  const auto loopback = CheckExposure("127.0.0.1:0", false, false, false);
  ASSERT_TRUE(loopback.ok());
  EXPECT_THAT(*loopback, HasSubstr("loopback only"));
  const auto allowed = CheckExposure("0.0.0.0:1", false, false, true);
  ASSERT_TRUE(allowed.ok());
  EXPECT_THAT(*allowed, HasSubstr("clear"));
  // TLS alone authenticates nobody.
  const auto tls_only = CheckExposure("0.0.0.0:1", true, false, false);
  EXPECT_FALSE(tls_only.ok());
  EXPECT_EQ(tls_only.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(tls_only.status().message()),
              HasSubstr("--allow-insecure-network"));
  const auto token_in_clear = CheckExposure("0.0.0.0:1", false, true, false);
  ASSERT_TRUE(token_in_clear.ok());
  EXPECT_THAT(*token_in_clear, HasSubstr("in clear"));
  EXPECT_EQ(*CheckExposure("0.0.0.0:1", true, true, false),
            "TLS on, every call authenticated");
}

}  // namespace
}  // namespace ristretto
