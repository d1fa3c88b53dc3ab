// Every ristretto binary, and every subcommand of the `ristretto` tool,
// answers --help with its usage on stdout and exit status 0, and still
// refuses an unknown option with exit status 2 (`ristretto-learner --help`
// once answered "option --help needs a value"). Runs the built binaries as
// real processes.
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout only
};

// Runs `binary args` with stderr discarded unless `merge_stderr`.
Result RunBinary(const std::string& binary, const std::string& args,
                 bool merge_stderr = false) {
  const std::string command =
      absl::StrCat("timeout 60 ", binary, " ", args,
                   merge_stderr ? " 2>&1" : " 2>/dev/null", " </dev/null");
  const ristretto::test_util::CommandResult r =
      ristretto::test_util::RunCommand(command);
  return Result{r.exit_code, r.output};
}

struct Binary {
  const char* name;
  const char* path;
  const char* bad_value_args;  // a known flag with a malformed value
  const char* bad_value_flag;  // that flag, as the message must name it
};

// Names the binary in test listings (instead of its bytes).
void PrintTo(const Binary& b, std::ostream* os) { *os << b.name; }

class HelpTest : public ::testing::TestWithParam<Binary> {};

TEST_P(HelpTest, HelpPrintsUsageOnStdoutAndExitsZero) {
  const Binary& b = GetParam();
  const Result r = RunBinary(b.path, "--help");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, StartsWith(absl::StrCat("usage: ", b.name)));
  EXPECT_THAT(r.out, Not(HasSubstr("needs a value")));
}

TEST_P(HelpTest, UnknownOptionIsStillRefusedWithExitTwo) {
  const Binary& b = GetParam();
  const Result r =
      RunBinary(b.path, "--no-such-option 1", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--no-such-option")) << r.out;
}

// A malformed value of a known flag: one line naming the flag and the value,
// exit status 2, nothing on stdout.
TEST_P(HelpTest, BadValueIsRefusedNamingTheFlag) {
  const Binary& b = GetParam();
  const Result err = RunBinary(b.path, b.bad_value_args, /*merge_stderr=*/true);
  EXPECT_EQ(err.exit_code, 2) << err.out;
  EXPECT_THAT(err.out, HasSubstr(b.bad_value_flag)) << err.out;
  EXPECT_THAT(err.out, HasSubstr("'x9'")) << err.out;
  EXPECT_EQ(std::count(err.out.begin(), err.out.end(), '\n'), 1) << err.out;
  EXPECT_EQ(RunBinary(b.path, b.bad_value_args).out, "");
}

// An argument with an escape sequence (it could repaint the terminal) is
// echoed escaped, never raw.
TEST_P(HelpTest, ControlCharactersInArgumentsAreEchoedEscaped) {
  const Binary& b = GetParam();
  const Result r = RunBinary(b.path, "\"$(printf -- '--bad\\033[2Jname')\" 1",
                             /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--bad\\x1b[2Jname")) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("\x1b"))) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    EveryBinary, HelpTest,
    ::testing::Values(
        Binary{"ristretto-learner", RISTRETTO_LEARNER_BINARY, "--budget x9",
               "--budget"},
        Binary{"ristretto-actor", RISTRETTO_ACTOR_BINARY,
               "--learner 127.0.0.1:1 --envs=x9", "--envs"},
        Binary{"ristretto-coordinator", RISTRETTO_COORDINATOR_BINARY,
               "--tick-ms x9", "--tick-ms"},
        Binary{"ristretto", RISTRETTO_BINARY, "train --budget x9", "--budget"},
        // A subcommand of the tool, with its own flags (tests/cli/cli_test.cc
        // covers every subcommand).
        Binary{"ristretto env bench", RISTRETTO_BINARY " env bench",
               "--copies x9", "--copies"}),
    [](const ::testing::TestParamInfo<Binary>& info) {
      std::string name;
      for (const char* c = info.param.name; *c != '\0'; ++c) {
        if (std::isalnum(static_cast<unsigned char>(*c)) != 0) name += *c;
      }
      return name;
    });

}  // namespace
