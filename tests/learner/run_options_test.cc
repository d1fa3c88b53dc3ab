// TrainerOptions and the run-options schema: every default comes from the
// schema (env::EnvOptions included), SetRunOption/GetRunOption cover every
// option, the components accept the schema's whole range, and run flags
// map onto the same options.
#include "learner/run_options.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/options_schema.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

absl::Status ValidateAll(const TrainerOptions& o) {
  absl::Status s = o.env.Validate();
  if (!s.ok()) return s;
  s = o.network.Validate();
  if (!s.ok()) return s;
  return o.ppo.Validate();
}

TEST(RunOptionsTest, EveryDefaultIsTheSchemas) {
  const TrainerOptions o;
  for (const OptionSpec& spec : kOptionSchema) {
    const std::string name(spec.name);
    absl::StatusOr<std::string> got = GetRunOption(name, o);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(*got, OptionDefaultText(spec)) << name;
  }
  EXPECT_TRUE(ValidateAll(o).ok());
}

TEST(RunOptionsTest, SetThenGetReturnsTheSameTextForEveryOption) {
  for (const OptionSpec& spec : kOptionSchema) {
    const std::string name(spec.name);
    // A value other than the default where there is one.
    std::string value;
    if (spec.type == OptionType::kBool || spec.type == OptionType::kChoice) {
      value = std::string(OptionChoices(spec).back());
    } else {
      const double lo = spec.low_open ? spec.low + 1 : spec.low;
      value =
          spec.type == OptionType::kInt
              ? std::to_string(static_cast<int64_t>(lo))
              : FormatOptionNumber(spec.low_open ? spec.low + 0.5 : spec.low);
      if (spec.high < lo) value = OptionDefaultText(spec);
    }
    TrainerOptions o;
    ASSERT_TRUE(SetRunOption(name, value, &o).ok()) << name << " = " << value;
    absl::StatusOr<std::string> got = GetRunOption(name, o);
    ASSERT_TRUE(got.ok()) << name;
    EXPECT_EQ(*got, value) << name;
  }
}

// The learner and the env never refuse a value the schema (and so a study)
// accepts: each finite closed bound of every numeric option validates.
TEST(RunOptionsTest, ComponentsAcceptTheSchemasWholeRange) {
  for (const OptionSpec& spec : kOptionSchema) {
    if (spec.type != OptionType::kFloat && spec.type != OptionType::kInt) {
      continue;
    }
    for (const auto& [bound, open] : {std::pair{spec.low, spec.low_open},
                                      std::pair{spec.high, spec.high_open}}) {
      if (open || bound == kUnbounded) continue;
      TrainerOptions o;
      const std::string text = FormatOptionNumber(bound);
      ASSERT_TRUE(SetRunOption(std::string(spec.name), text, &o).ok())
          << spec.name << " = " << text;
      // norm_*_exp = -64 or 64 and the widths are fine; a 16-layer net
      // of 65536 units is not built here, only validated.
      EXPECT_TRUE(ValidateAll(o).ok())
          << spec.name << " = " << text << ": " << ValidateAll(o);
    }
  }
}

TEST(RunOptionsTest, SetRunOptionRefusesBadTextAndRangesNamingTheOption) {
  TrainerOptions o;
  EXPECT_EQ(SetRunOption("epochs", "1001", &o).message(),
            "epochs = 1001 is outside [1, 1000]");
  EXPECT_EQ(SetRunOption("epochs", "2.5", &o).message(),
            "epochs = '2.5' is not a whole number");
  EXPECT_EQ(SetRunOption("learning_rate", "abc", &o).message(),
            "learning_rate = 'abc' is not a finite number");
  EXPECT_EQ(SetRunOption("activation", "gelu", &o).message(),
            "activation = 'gelu' is not one of tanh, relu");
  EXPECT_EQ(SetRunOption("activation", "re\x1b[2Jlu", &o).message(),
            "activation = 're\\x1b[2Jlu' is not one of tanh, relu");
  EXPECT_EQ(SetRunOption("dropout", "0.5", &o).message(),
            "unknown run option 'dropout'");
  EXPECT_EQ(o.ppo.epochs, TrainerOptions().ppo.epochs);  // unchanged
}

TEST(RunOptionsTest, FlagsSetTheSchemaOptions) {
  TrainerOptions o;
  ASSERT_TRUE(ApplyRunFlags({{"lr", "0.001"},
                             {"epochs", "3"},
                             {"reward", "log_return"},
                             {"policy-hidden", "32,16"},
                             {"budget", "5000"}},
                            &o)
                  .ok());
  EXPECT_EQ(o.ppo.learning_rate, 0.001);
  EXPECT_EQ(o.ppo.epochs, 3);
  EXPECT_EQ(o.env.reward_mode, env::RewardMode::kLogReturn);
  EXPECT_EQ(o.network.policy_hidden, (std::vector<int>{32, 16}));
  EXPECT_EQ(o.network.value_hidden, (std::vector<int>{32, 16}));
  EXPECT_EQ(o.budget_env_steps, 5000);
  ASSERT_TRUE(
      ApplyRunFlags({{"policy-hidden", "8"}, {"value-hidden", "4,4"}}, &o)
          .ok());
  EXPECT_EQ(o.network.policy_hidden, (std::vector<int>{8}));
  EXPECT_EQ(o.network.value_hidden, (std::vector<int>{4, 4}));

  const TrainerOptions before = o;
  EXPECT_EQ(ApplyRunFlags({{"epochs", "0"}}, &o).message(),
            "--epochs: epochs = 0 is outside [1, 1000]");
  EXPECT_EQ(ApplyRunFlags({{"budget", "x9"}}, &o).message(),
            "--budget expects an integer, got 'x9'");
  EXPECT_EQ(ApplyRunFlags({{"lr", "\x1b[2J"}}, &o).message(),
            "--lr expects a finite number, got '\\x1b[2J'");
  EXPECT_EQ(ApplyRunFlags({{"reward", "x"}}, &o).message(),
            "--reward: reward_mode = 'x' is not one of shaped, log_return, "
            "differential_sharpe");
  EXPECT_EQ(ApplyRunFlags({{"no-such", "1"}}, &o).message(),
            "--no-such is not a run option flag");
  EXPECT_EQ(ApplyRunFlags({{"policy-hidden", "8,x"}}, &o).message(),
            "--policy-hidden: bad layer width 'x' in '8,x'");
  EXPECT_EQ(o.ppo.epochs, before.ppo.epochs);
  EXPECT_EQ(o.network.policy_hidden, before.network.policy_hidden);
}

TEST(RunOptionsTest, RunFlagNamesAreTheSchemasFlagsPlusTheLayerLists) {
  const std::vector<std::string> names = RunFlagNames();
  size_t with_flag = 0;
  for (const OptionSpec& s : kOptionSchema) with_flag += s.flag.empty() ? 0 : 1;
  EXPECT_EQ(names.size(), with_flag + 2);
  EXPECT_EQ(names.front(), "lr");
  EXPECT_EQ(names.back(), "value-hidden");
}

}  // namespace
}  // namespace ristretto::learner
