// Development certificates for the TLS tests: scripts/make_dev_certs.sh
// (openssl) run into a directory. Header-only (gtest only), for unit and
// process-level tests alike.
#ifndef RISTRETTO_TESTS_COMMON_MAKE_DEV_CERTS_H_
#define RISTRETTO_TESTS_COMMON_MAKE_DEV_CERTS_H_

#include <cstdlib>
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"

namespace ristretto::tests {

// Runs scripts/make_dev_certs.sh into `dir` (created): ca.pem, ca.key,
// server.pem/.key (SAN localhost, 127.0.0.1), client.pem/.key, and
// NAME.pem/.key for each NAME of `more_clients` (--client NAME: client
// certificates of their own, one per actor host), then `more_args` as
// they are (e.g. {"--actor", "x"}: actor-x.pem naming actor id x). False
// (with a test failure) if the script fails.
inline bool MakeDevCerts(const std::string& dir,
                         std::initializer_list<const char*> more_clients = {},
                         std::initializer_list<const char*> more_args = {}) {
  std::string command = std::string(RISTRETTO_SOURCE_DIR) +
                        "/scripts/make_dev_certs.sh '" + dir + "'";
  for (const char* name : more_clients) {
    command += std::string(" --client '") + name + "'";
  }
  for (const char* arg : more_args) command += std::string(" '") + arg + "'";
  command += " > /dev/null";
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command;
  return status == 0;
}

}  // namespace ristretto::tests

#endif  // RISTRETTO_TESTS_COMMON_MAKE_DEV_CERTS_H_
