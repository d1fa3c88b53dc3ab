// Helpers of the process-level TLS tests: a development CA with server and
// client certificates made by scripts/make_dev_certs.sh (openssl), and the
// channel credentials a test's own gRPC calls use with them.
#ifndef RISTRETTO_TESTS_INTEGRATION_DEV_CERTS_H_
#define RISTRETTO_TESTS_INTEGRATION_DEV_CERTS_H_

#include <cstdlib>
#include <memory>
#include <string>

#include "common/grpc_security.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace ristretto::testing {

// Runs scripts/make_dev_certs.sh into `dir` (created): ca.pem, ca.key,
// server.pem/.key (SAN localhost, 127.0.0.1), client.pem/.key. False (with
// a test failure) if the script fails.
inline bool MakeDevCerts(const std::string& dir) {
  const std::string command = std::string(RISTRETTO_SOURCE_DIR) +
                              "/scripts/make_dev_certs.sh '" + dir +
                              "' > /dev/null";
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command;
  return status == 0;
}

// Channel credentials from `files` (fails the test and returns plaintext
// ones on an error).
inline std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const TlsFiles& files) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(files);
  EXPECT_TRUE(credentials.ok()) << credentials.status();
  return credentials.ok() ? *credentials : grpc::InsecureChannelCredentials();
}

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_INTEGRATION_DEV_CERTS_H_
