// Secrets never in argv, checked on the built binaries as real processes:
// every binary that takes a token refuses `--token VALUE` (and
// `--token=VALUE`), and every binary that takes a DSN refuses one with a
// password, before anything starts (exit 2), saying what to use instead and
// never echoing the secret. `ristretto --db` with a password is covered by
// tests/cli/study_cli_test.cc; common/secret_file_test.cc covers the rules
// themselves.
#include <cctype>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "s3cretTokenValue0123456789";

struct TokenBinary {
  const char* name;
  const char* path;
  const char* other_args;  // what the binary needs to get as far as secrets
};

void PrintTo(const TokenBinary& b, std::ostream* os) { *os << b.name; }

// Runs `path args` (stdout and stderr together, no stdin) under a timeout.
ristretto::test_util::CommandResult RunBinary(const std::string& path,
                                              const std::string& args) {
  return ristretto::test_util::RunCommand(
      absl::StrCat("env -u RISTRETTO_TOKEN -u RISTRETTO_DB timeout 60 ", path,
                   " ", args, " 2>&1 </dev/null"));
}

class TokenInArgvTest : public ::testing::TestWithParam<TokenBinary> {};

TEST_P(TokenInArgvTest, TokenValueOnTheCommandLineIsRefused) {
  const TokenBinary& b = GetParam();
  for (const std::string& form :
       {absl::StrCat("--token ", kSecret), absl::StrCat("--token=", kSecret)}) {
    const auto r = RunBinary(b.path, absl::StrCat(b.other_args, " ", form));
    EXPECT_EQ(r.exit_code, 2) << form << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--token-file")) << r.output;
    EXPECT_THAT(r.output, HasSubstr("RISTRETTO_TOKEN")) << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr(kSecret))) << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryBinaryWithAToken, TokenInArgvTest,
    ::testing::Values(
        TokenBinary{"ristretto-coordinator", RISTRETTO_COORDINATOR_BINARY,
                    "--db 'host=/nonexistent-dir dbname=x' --port 0"},
        TokenBinary{"ristretto-learner", RISTRETTO_LEARNER_BINARY,
                    "--coordinator 127.0.0.1:1 --port 0"},
        TokenBinary{"ristretto-actor", RISTRETTO_ACTOR_BINARY,
                    "--learner 127.0.0.1:1"}),
    [](const ::testing::TestParamInfo<TokenBinary>& info) {
      std::string name;
      for (const char* c = info.param.name; *c != '\0'; ++c) {
        if (std::isalnum(static_cast<unsigned char>(*c)) != 0) name += *c;
      }
      return name;
    });

// The coordinator is the process binary that takes a DSN (--db); learners
// and actors have none.
TEST(DsnInArgvTest, CoordinatorRefusesADsnWithAPassword) {
  for (const char* dsn :
       {"'host=/nonexistent-dir dbname=x user=u password=hunter2secret'",
        "'postgresql://u:hunter2secret@127.0.0.1:1/x'"}) {
    const auto r = RunBinary(RISTRETTO_COORDINATOR_BINARY,
                             absl::StrCat("--db ", dsn, " --port 0"));
    EXPECT_EQ(r.exit_code, 2) << dsn << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("--db carries a database password"))
        << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("hunter2secret"))) << r.output;
  }
}

}  // namespace
