// Helpers of the process-level TLS tests: a development CA with server and
// client certificates (MakeDevCerts, tests/common/make_dev_certs.h), and the
// channel credentials a test's own gRPC calls use with them.
#ifndef RISTRETTO_TESTS_INTEGRATION_DEV_CERTS_H_
#define RISTRETTO_TESTS_INTEGRATION_DEV_CERTS_H_

#include <memory>
#include <string>

#include "common/grpc_security.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/common/make_dev_certs.h"

namespace ristretto::testing {

using ::ristretto::tests::MakeDevCerts;

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
