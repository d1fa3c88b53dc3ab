// End-to-end tests of the `ristretto` binary: real process, real files.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/run_command.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using Result = ristretto::test_util::CommandResult;
using ristretto::test_util::RunCommand;

Result RunCli(const std::string& args) {
  const std::string command =
      absl::StrCat(RISTRETTO_BINARY, " ", args, " 2>&1");
  return RunCommand(command);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ristretto_cli_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteFile(const std::string& path, const std::string& content) {
    std::ofstream out(path);
    out << content;
  }

  // Two assets, `rows` 5-minute bars starting at 2024-01-01T00:00:00Z.
  void WriteCsvDir(const std::string& csv_dir, int rows) {
    fs::create_directories(csv_dir);
    for (const char* symbol : {"BTC", "ETH"}) {
      std::string text = "timestamp,open,high,low,close,volume\n";
      for (int t = 0; t < rows; ++t) {
        const double base = symbol[0] == 'B' ? 40000.0 : 2000.0;
        const double close = base * (1.0 + 0.01 * std::sin(t * 0.1));
        absl::StrAppend(&text, 1704067200 + 300 * t, ",", close, ",",
                        close * 1.001, ",", close * 0.999, ",", close, ",",
                        10 + t % 7, "\n");
      }
      WriteFile(absl::StrCat(csv_dir, "/", symbol, ".csv"), text);
    }
  }

  std::string dir_;
};

TEST_F(CliTest, EnvReplayPassesABundledGoldenCaseWithExitZero) {
  const std::string case_dir =
      std::string(RISTRETTO_GOLDEN_BUNDLED_DIR) + "/s01_L1_uniform_na100";
  const Result r = RunCli(absl::StrCat("env replay ", case_dir, " --copies 3"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("398 steps x 3 copies"));
  EXPECT_THAT(r.output, HasSubstr("total_asset"));
  EXPECT_THAT(r.output, HasSubstr("\nPASS\n"));
}

TEST_F(CliTest, EnvReplayFailsWithExitOneWhenATraceDisagrees) {
  const std::string src =
      std::string(RISTRETTO_GOLDEN_BUNDLED_DIR) + "/s01_L1_uniform_na100";
  const std::string case_dir = dir_ + "/case";
  fs::copy(src, case_dir);
  // Change the reward of step 5 in expected.csv (second field of line 7).
  std::ifstream in(case_dir + "/expected.csv");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  in.close();
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  std::vector<std::string> fields = absl::StrSplit(lines[6], ',');
  fields[1] = "0.5";
  lines[6] = absl::StrJoin(fields, ",");
  WriteFile(case_dir + "/expected.csv", absl::StrJoin(lines, "\n"));
  const Result r = RunCli(absl::StrCat("env replay ", case_dir));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("step 5"));
  EXPECT_THAT(r.output, HasSubstr("\nFAIL\n"));
}

TEST_F(CliTest, EnvReplayOfAMissingDirectoryIsAnError) {
  const Result r = RunCli("env replay /nonexistent/case");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot open /nonexistent/case/params.json"));
}

TEST_F(CliTest, EnvBenchPrintsStepsPerSecondAsItsLastLine) {
  const Result r = RunCli(
      "env bench --assets 7 --features 98 --lookback 2 --copies 16 "
      "--seconds 0.2 --rows 3000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lines =
      absl::StrSplit(r.output, '\n', absl::SkipEmpty());
  ASSERT_FALSE(lines.empty());
  ASSERT_THAT(lines.back(), StartsWith("env_steps_per_second="));
  const double rate = std::stod(lines.back().substr(21));
  EXPECT_GT(rate, 1000.0);
  EXPECT_THAT(r.output, HasSubstr("obs_size=204"));  // 1 + 7 + 98·2
}

TEST_F(CliTest, DatasetImportThenInfoReportTheSameDataset) {
  WriteCsvDir(dir_ + "/csv", 300);
  const std::string out = dir_ + "/data.rds";
  const Result imp = RunCli(absl::StrCat("dataset import --csv-dir ", dir_,
                                         "/csv --interval 5m --out ", out));
  ASSERT_EQ(imp.exit_code, 0) << imp.output;
  const Result info = RunCli(absl::StrCat("dataset info ", out));
  ASSERT_EQ(info.exit_code, 0) << info.output;
  // 300 bars minus the 63-row feature warm-up.
  EXPECT_THAT(info.output, HasSubstr("rows            237"));
  EXPECT_THAT(info.output, HasSubstr("interval        5m"));
  EXPECT_THAT(info.output, HasSubstr("BTC"));
  EXPECT_THAT(info.output, HasSubstr("ETH"));
  EXPECT_THAT(info.output, HasSubstr("warm-up dropped 63 rows"));
  EXPECT_THAT(info.output, HasSubstr("2024-01-01T05:15:00Z .. "));
  // The id printed at import equals the one read back.
  const size_t pos = imp.output.find("dataset id      ");
  ASSERT_NE(pos, std::string::npos);
  EXPECT_THAT(info.output, HasSubstr(imp.output.substr(pos, 16 + 64)));
}

TEST_F(CliTest, DatasetImportNamesFileAndLineOfAMalformedRow) {
  WriteCsvDir(dir_ + "/csv", 100);
  std::ofstream(dir_ + "/csv/ETH.csv", std::ios::app)
      << "1704097200,1,nan,1,1,1\n";
  const Result r =
      RunCli(absl::StrCat("dataset import --csv-dir ", dir_,
                          "/csv --interval 5m --out ", dir_, "/x.rds"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ETH.csv:102:"));
  EXPECT_FALSE(fs::exists(dir_ + "/x.rds"));
}

TEST_F(CliTest, DatasetSynthIsDeterministicBySeed) {
  const Result a = RunCli(
      absl::StrCat("dataset synth --out ", dir_, "/a.rds --rows 500 --seed 5"));
  const Result b = RunCli(
      absl::StrCat("dataset synth --out ", dir_, "/b.rds --rows 500 --seed 5"));
  const Result c = RunCli(
      absl::StrCat("dataset synth --out ", dir_, "/c.rds --rows 500 --seed 6"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto id = [](const std::string& out) {
    const size_t pos = out.find("dataset id      ");
    return pos == std::string::npos ? std::string() : out.substr(pos + 16, 64);
  };
  EXPECT_EQ(id(a.output).size(), 64u);
  EXPECT_EQ(id(a.output), id(b.output));
  EXPECT_NE(id(a.output), id(c.output));
}

TEST_F(CliTest, UnknownOptionsAndCommandsAreRejected) {
  Result r = RunCli("env bench --copiez 4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown option --copiez"));
  r = RunCli("fly");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown command group 'fly'"));
  r = RunCli("env fly");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown env command 'fly'"));
  r = RunCli("dataset import --interval 5m");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("missing required --csv-dir"));
}

// Each subcommand accepts only its own flags, although every flag of the
// tool is registered in the one process.
TEST_F(CliTest, ASubcommandRefusesAnotherSubcommandsFlag) {
  struct Case {
    const char* args;
    const char* flag;
  };
  for (const Case& c : {Case{"env bench --out x", "--out"},
                        Case{"env demo --copies 3", "--copies"},
                        Case{"env replay CASE --seconds 1", "--seconds"},
                        Case{"dataset synth --out x --csv-dir y", "--csv-dir"},
                        Case{"dataset info FILE --db x", "--db"},
                        Case{"study ls --wait", "--wait"},
                        Case{"study start NAME --name x", "--name"},
                        Case{"backtest POLICY --dataset d --lr 1", "--lr"},
                        Case{"train --features 3", "--features"},
                        Case{"up --name x", "--name"}}) {
    const Result r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat("unknown option ", c.flag)))
        << c.args;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
        << c.args << ": " << r.output;
  }
}

// The flag names listed under "flags:" in `ristretto ARGS` output.
std::set<std::string> ListedFlags(const std::string& help) {
  std::set<std::string> names;
  bool in_flags = false;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (line == "flags:") {
      in_flags = true;
    } else if (line.empty()) {
      in_flags = false;
    } else if (in_flags && absl::StartsWith(line, "  --")) {
      names.emplace(line.substr(4, line.find(' ', 4) - 4));
    }
  }
  return names;
}

TEST_F(CliTest, SubcommandHelpListsExactlyItsFlagsOnStdout) {
  struct Case {
    const char* command;
    std::set<std::string> flags;
  };
  const std::vector<Case> cases = {
      {"env replay", {"copies"}},
      {"env bench",
       {"assets", "copies", "features", "lookback", "rows", "seconds", "seed"}},
      {"env demo", {"lookback", "rows", "seed"}},
      {"dataset import",
       {"csv-dir", "data-dir", "db", "feature-set", "interval", "max-ffill",
        "min-domain-rows", "min-qty", "on-long-gap", "out"}},
      {"dataset synth",
       {"assets", "data-dir", "db", "interval", "out", "predictability", "rows",
        "seed", "signal-bars"}},
      {"dataset info", {}},
      {"dataset ls", {"db"}},
      {"study create", {"db", "name"}},
      {"study start", {"db", "wait"}},
      {"study stop", {"db"}},
      {"study export", {"db", "out"}},
      {"backtest",
       {"dataset", "forward-timeout-s", "from", "max-volume-share", "out",
        "random-seeds", "slippage-bps", "threads", "to"}},
      {"train",
       {"dataset", "device", "eval-every", "export", "fold", "out",
        "predictability", "quiet", "reproducible", "study", "synthetic-assets",
        "synthetic-rows", "synthetic-seed", "trial", "validation-share"}},
      {"up",
       {"actors", "bin-dir", "csv-dir", "data-dir", "dataset", "envs", "export",
        "feature-set", "insecure", "interval", "max-ffill", "min-domain-rows",
        "min-qty", "on-long-gap", "slots", "study"}},
  };
  std::string train_help;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    // `help COMMAND` is `COMMAND --help` (asked both ways, alternately).
    const std::string args = i % 2 == 0 ? absl::StrCat(c.command, " --help")
                                        : absl::StrCat("help ", c.command);
    const Result r =
        RunCommand(absl::StrCat(RISTRETTO_BINARY, " ", args, " 2>/dev/null"));
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
    EXPECT_THAT(r.output,
                StartsWith(absl::StrCat("usage: ristretto ", c.command)))
        << args;
    EXPECT_EQ(ListedFlags(r.output), c.flags) << args << ": " << r.output;
    if (std::string(c.command) == "train") train_help = r.output;
  }
  // train also lists the run-option flags of the schema it passes through.
  EXPECT_THAT(train_help, HasSubstr("\nrun options"));
  EXPECT_THAT(train_help, HasSubstr("\n  --lr (default: "));
  EXPECT_THAT(train_help, HasSubstr("\n  --policy-hidden "));
}

TEST_F(CliTest, HelpOfTheToolAndOfEachGroupIsUsageOnStdoutWithExitZero) {
  for (const char* args :
       {"--help", "help", "env --help", "dataset help", "help study"}) {
    const Result r =
        RunCommand(absl::StrCat(RISTRETTO_BINARY, " ", args, " 2>/dev/null"));
    EXPECT_EQ(r.exit_code, 0) << args;
    EXPECT_THAT(r.output, StartsWith("usage: ristretto ")) << args;
  }
  // A group without its command is bad usage: the usage on stderr (and
  // nothing on stdout), exit 2.
  for (const char* args : {"", "env", "study"}) {
    const Result r = RunCommand(
        absl::StrCat(RISTRETTO_BINARY, " ", args, " 2>&1 >/dev/null"));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.output, StartsWith("usage: ristretto")) << args;
  }
}

TEST_F(CliTest, BadCommandLinesAreOneLineNamingTheFlagWithExitTwo) {
  struct Case {
    std::string args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"env bench --copies", "option --copies needs a value"},
      {"env bench --copies=x9", "--copies expects an integer, got 'x9'"},
      {"env bench --seconds inf", "--seconds expects a finite number"},
      {"env demo --seed 1 extra", "unexpected argument 'extra'"},
      {"study start --wait=maybe NAME", "--wait expects true or false"},
      // The offending text is echoed escaped, never raw.
      {"env bench --copies \"$(printf 'x\033[2J')\"",
       "--copies expects an integer, got 'x\\x1b[2J'"},
      {"env bench \"$(printf -- '--co\033pies')\" 1",
       "unknown option --co\\x1bpies"},
  };
  for (const Case& c : cases) {
    const Result r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(r.output, HasSubstr("--help)")) << c.args;
    EXPECT_THAT(r.output, Not(HasSubstr("\x1b"))) << c.args;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
        << c.args << ": " << r.output;
  }
}

// A flag given twice: the last one wins (Abseil's rule); so does the
// --name=value form, and a bool flag's --noname clears it.
TEST_F(CliTest, ARepeatedFlagTakesItsLastValue) {
  auto id = [](const std::string& out) {
    const size_t pos = out.find("dataset id      ");
    return pos == std::string::npos ? std::string() : out.substr(pos + 16, 64);
  };
  const Result twice = RunCli(absl::StrCat(
      "dataset synth --out ", dir_, "/a.rds --rows 400 --seed 5 --seed=6"));
  const Result once = RunCli(
      absl::StrCat("dataset synth --out ", dir_, "/b.rds --rows 400 --seed 6"));
  const Result other = RunCli(
      absl::StrCat("dataset synth --out ", dir_, "/c.rds --rows 400 --seed 5"));
  ASSERT_EQ(twice.exit_code, 0) << twice.output;
  ASSERT_EQ(id(twice.output).size(), 64u) << twice.output;
  EXPECT_EQ(id(twice.output), id(once.output));
  EXPECT_NE(id(twice.output), id(other.output));
}

// `up` reads the CSV import flags only with --csv-dir; each is refused by
// name without it (before anything starts), also at its default value.
TEST_F(CliTest, UpRefusesImportFlagsWithoutCsvDir) {
  for (const char* flag : {"--interval 5m", "--max-ffill 3",
                           "--min-domain-rows=2", "--on-long-gap fail"}) {
    const Result r = RunCli(absl::StrCat("up --data-dir ", dir_, "/up ", flag));
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.output;
    const std::string name(flag, std::string(flag).find_first_of(" ="));
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat(name,
                                                 " is an import option: it "
                                                 "needs --csv-dir")))
        << r.output;
    EXPECT_FALSE(fs::exists(dir_ + "/up")) << flag;
  }
}

// An import flag given with an empty value is given all the same: refused
// by name without --csv-dir, not silently taken for "not given".
TEST_F(CliTest, UpRefusesAnEmptyImportFlagWithoutCsvDir) {
  for (const char* flag : {"--interval=", "--on-long-gap=", "--min-qty="}) {
    const Result r = RunCli(absl::StrCat("up --data-dir ", dir_, "/up ", flag));
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.output;
    const std::string name(flag, std::string(flag).find('='));
    EXPECT_EQ(r.output, absl::StrCat("ristretto up: ", name,
                                     " is an import option: it needs "
                                     "--csv-dir\n"))
        << flag;
    EXPECT_FALSE(fs::exists(dir_ + "/up")) << flag;
  }
}

// A string flag a command cannot do without, missing or empty: one line
// "missing required --NAME", exit 2, for every command that has one.
TEST_F(CliTest, MissingRequiredFlagIsNamedWithExitTwo) {
  struct Case {
    std::string args;
    const char* flag;
  };
  const std::vector<Case> cases = {
      {"dataset synth --rows 400", "--out"},
      {"dataset import --csv-dir x --interval= --out y", "--interval"},
      {"backtest POLICY", "--dataset"},
      {"backtest POLICY --dataset=", "--dataset"},
      {"study export NAME --db dbname=none", "--out"},
      {"study report NAME --db dbname=none --out=", "--out"},
  };
  for (const Case& c : cases) {
    const Result r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat("missing required ", c.flag)))
        << c.args;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
        << c.args << ": " << r.output;
  }
}

// `ristretto help help` (and `help --help`) is the help command's own usage
// on stdout, exit 0.
TEST_F(CliTest, HelpOfTheHelpCommandIsItsUsage) {
  for (const char* args : {"help help", "help --help", "help -h"}) {
    const Result r =
        RunCommand(absl::StrCat(RISTRETTO_BINARY, " ", args, " 2>/dev/null"));
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
    EXPECT_THAT(r.output, StartsWith("usage: ristretto help [GROUP [COMMAND]]"))
        << args;
    EXPECT_THAT(r.output, HasSubstr("--help")) << args;
  }
}

TEST_F(CliTest, EnvDemoPrintsEveryPolicyAndTheBenchmark) {
  const Result r = RunCli("env demo --seed 3 --rows 1500");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name :
       {"all cash", "random", "momentum", "equal-weight buy&hold"}) {
    EXPECT_THAT(r.output, HasSubstr(name));
  }
  // The all-cash policy never trades, so it ends with its 500 of capital.
  EXPECT_THAT(r.output, HasSubstr("all cash                   500.00"));
}

}  // namespace
}  // namespace ristretto
