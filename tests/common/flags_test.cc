// ParseFlags over real ABSL_FLAGs defined here: dashed names, every value
// form, and a one-line error naming the flag for an unknown flag or a bad
// value.
#include "common/flags.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int64_t, test_count, 3, "a count");
ABSL_FLAG(double, test_rate, 0.5, "a rate");
ABSL_FLAG(bool, test_switch, false, "a switch");
ABSL_FLAG(std::string, test_name, "", "a name");
ABSL_FLAG(std::optional<std::string>, test_secret, std::nullopt, "refused");

namespace ristretto {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

class FlagsTest : public ::testing::Test {
 protected:
  // Every test starts from the defaults and leaves them behind.
  absl::FlagSaver saver_;

  absl::StatusOr<ParsedCommandLine> Parse(
      std::vector<std::string> args, const FlagFilter& accepted = AnyFlag,
      const std::set<std::string>& pass_through = {}) {
    args.insert(args.begin(), "binary");
    std::vector<char*> argv;
    argv.reserve(args.size());
    for (std::string& a : args) argv.push_back(a.data());
    return ParseFlags(static_cast<int>(argv.size()), argv.data(), 1, accepted,
                      pass_through);
  }
};

TEST_F(FlagsTest, SetsFlagsInEveryFormWithDashedNames) {
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"--test-count", "7", "--test-rate=0.25", "--test-switch",
             "--test_name=x", "a", "--", "--test-count"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_rate), 0.25);
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "x");
  EXPECT_FALSE(parsed->help);
  EXPECT_THAT(parsed->positional, ElementsAre("a", "--test-count"));
}

TEST_F(FlagsTest, BoolFlagNeverTakesTheNextArgumentAndCanBeCleared) {
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--test-switch", "false"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_THAT(parsed->positional, ElementsAre("false"));
  ASSERT_TRUE(Parse({"--no-test-switch"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
  ASSERT_TRUE(Parse({"--test-switch=true", "--notest-switch"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
}

TEST_F(FlagsTest, UnknownFlagIsRefusedByName) {
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--test-cuont", "7"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --test-cuont");
  // --no works on bool flags only.
  parsed = Parse({"--notest-count"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --notest-count");
}

TEST_F(FlagsTest, BadValueIsRefusedNamingFlagAndValue) {
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--test-count", "7x"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "--test-count expects an integer, got '7x'");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 3);

  parsed = Parse({"--test-rate=inf"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "--test-rate expects a finite number, got 'inf'");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_rate), 0.5);

  parsed = Parse({"--test-switch=maybe"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("--test-switch expects true or false, got 'maybe'"));
}

TEST_F(FlagsTest, MissingValueIsRefused) {
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--test-name"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "option --test-name needs a value");
}

TEST_F(FlagsTest, ControlCharactersAreEchoedEscaped) {
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"--test-count=\x1b[2J", "--x"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("got '\\x1b[2J'"));
  EXPECT_THAT(std::string(parsed.status().message()), Not(HasSubstr("\x1b")));
  parsed = Parse({"--bad\x1bname"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --bad\\x1bname");
}

TEST_F(FlagsTest, OptionalFlagRecordsThatItWasGiven) {
  ASSERT_TRUE(Parse({}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_secret).has_value());
  ASSERT_TRUE(Parse({"--test-secret", "s3"}).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_secret), "s3");
}

// `given` names every flag the command line set, an empty value and a
// cleared bool included, and no other: an empty --name= is told apart from
// a flag not given although the value is the default either way.
TEST_F(FlagsTest, GivenNamesTheFlagsSetEvenToAnEmptyValue) {
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"--test-name=", "--no-test-switch", "--test-count", "4", "x"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "");
  EXPECT_THAT(parsed->given,
              ElementsAre("test_count", "test_name", "test_switch"));
  parsed = Parse({"x"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->given.empty());
  // Pass-through flags are not registered flags: not in `given`.
  parsed = Parse({"--lr", "1e-3"}, AnyFlag, {"lr"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->given.empty());
}

TEST_F(FlagsTest, HelpIsReportedAndParsingGoesOn) {
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"--help", "--test-count=9"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->help);
  EXPECT_FALSE(parsed->help_full);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 9);
  // A bad flag beside --help is still reported.
  parsed = Parse({"--help", "--nope"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --nope");
  parsed = Parse({"--helpfull"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->help_full);
}

TEST_F(FlagsTest, PassThroughFlagsAreCollectedUnparsed) {
  const std::set<std::string> table = {"lr", "policy-hidden", "test-count"};
  absl::StatusOr<ParsedCommandLine> parsed = Parse(
      {"--lr", "1e-3", "--policy-hidden=8,8", "--test-count", "5", "--lr=2e-3"},
      AnyFlag, table);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->passed_through,
              ElementsAre(Pair("lr", "2e-3"), Pair("policy-hidden", "8,8")));
  // The registered flag of the same name wins.
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 5);
  parsed = Parse({"--policy-hidden"}, AnyFlag, table);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "option --policy-hidden needs a value");
  parsed = Parse({"--epochs=3"}, AnyFlag, table);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --epochs");
}

TEST_F(FlagsTest, FilterRestrictsWhatMayBeSet) {
  const FlagFilter here = FlagsDefinedIn({"tests/common/flags_test.cc"});
  EXPECT_TRUE(Parse({"--test-count=4"}, here).ok());
  const FlagFilter elsewhere = FlagsDefinedIn({"cli/train_command.cc"});
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"--test-count=4"}, elsewhere);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --test-count");
  // A suffix must start at a '/': "common/flags_test.cc" is in the path,
  // "s_test.cc" is not a file name.
  EXPECT_TRUE(
      Parse({"--test-count=4"}, FlagsDefinedIn({"common/flags_test.cc"})).ok());
  parsed = Parse({"--test-count=4"}, FlagsDefinedIn({"s_test.cc"}));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown option --test-count");
}

TEST_F(FlagsTest, HelpListsTheShownFlagsWithDefaults) {
  const std::string help =
      FlagsHelp("usage: binary\n", FlagsDefinedIn({"common/flags_test.cc"}));
  EXPECT_THAT(help, ::testing::StartsWith("usage: binary\n"));
  EXPECT_THAT(help, HasSubstr("  --test-count (default: 3)\n      a count\n"));
  EXPECT_THAT(help, HasSubstr("  --test-name (default: unset)\n"));
  EXPECT_LT(help.find("--test-count"), help.find("--test-rate"));
  const std::string none =
      FlagsHelp("usage: binary\n", FlagsDefinedIn({"no/such_file.cc"}));
  EXPECT_EQ(none, "usage: binary\n");
}

}  // namespace
}  // namespace ristretto
