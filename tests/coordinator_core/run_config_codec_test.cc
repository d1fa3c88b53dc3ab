// v1::RunConfig, the typed coordinator -> learner transport of a run, and
// its JSON form in runs.config_json: exact round trips, every value checked
// against the options schema on decode, the older JSON layout still read.
#include "learner/run_config_codec.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/options_schema.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/run_options.h"

namespace ristretto::learner {
namespace {

using ::testing::HasSubstr;

void Set(const char* name, const std::string& value, TrainerOptions* o) {
  const absl::Status s = SetRunOption(name, value, o);
  ASSERT_TRUE(s.ok()) << name << ": " << s;
}

// Every field away from its default; schema fields set through their
// options, as a study or the flags set them.
TrainerOptions Unusual() {
  TrainerOptions o;
  Set("learning_rate", FormatOptionNumber(0.1 + 0.2), &o);  // 17 digits
  Set("lr_schedule", "linear", &o);
  Set("batch_size", "100", &o);
  Set("rollout_steps", "7", &o);
  Set("num_envs", "3", &o);
  Set("gamma", "0.9", &o);
  Set("gae_lambda", "1", &o);
  Set("bootstrap_truncation", "false", &o);
  Set("clip_ratio", "0.1", &o);
  Set("value_loss", "smooth_l1", &o);
  Set("value_clip", "0.2", &o);
  Set("value_coef", "1", &o);
  Set("entropy_coef", "1e-300", &o);
  Set("normalize_advantages", "false", &o);
  Set("epochs", "3", &o);
  Set("sample_with_replacement", "true", &o);
  Set("max_grad_norm", "0", &o);
  Set("adam_eps", "1e-08", &o);
  Set("max_policy_lag", "9", &o);
  Set("cpu_threads", "4", &o);
  Set("activation", "relu", &o);
  Set("log_std_init", "-1.25", &o);
  Set("log_prob", "uncorrected", &o);
  Set("normalize_observations", "false", &o);
  Set("obs_clip", "3", &o);
  Set("lookback", "3", &o);
  Set("initial_capital", "1234.5", &o);
  Set("buy_fee", "0.001", &o);
  Set("sell_fee", "0.0015", &o);
  Set("slippage_bps", "12.5", &o);
  Set("max_volume_share", "0.05", &o);
  Set("buy_safety", "0.98", &o);
  Set("norm_cash_exp", "12", &o);
  Set("norm_stocks_exp", "3.3", &o);  // not a power of two
  Set("norm_tech_exp", "-2.5", &o);
  Set("norm_reward_exp", "0.515", &o);
  Set("norm_action", "123", &o);
  Set("time_decay_floor", "0.2", &o);
  Set("min_cash_reserve", "0.05", &o);
  Set("concentration_penalty", "0.3", &o);
  Set("trailing_stop_pct", "0.1", &o);
  Set("cooldown_trim_bars", "24", &o);
  Set("trim_fraction", "0.1", &o);
  Set("reward_mode", "log_return", &o);
  Set("reward_scale", "42", &o);
  Set("terminal_reward", "discounted_sum", &o);
  Set("budget", "1099511627776", &o);
  Set("episode_steps", "99", &o);
  // Not through options.
  o.network.policy_hidden = {64, 32};
  o.network.value_hidden = {};  // a linear value head
  o.seed = std::numeric_limits<uint64_t>::max();
  o.train_domains = {{0, 10}, {20, int64_t{1} << 35}};
  o.validation_domains = {{5, 6}};
  o.eval_every_env_steps = 77;
  o.run_dir = "/tmp/run \"quoted\"";
  o.resume = false;
  o.dataset_id = "abc";
  o.feature_names = {"close", "rsi_14"};
  o.objective = "sortino";
  o.lockbox_begin = 900;
  o.lockbox_guard = 880;
  o.final_evaluation = true;
  o.env.action_clip = 5;
  o.ppo.device = "cuda:1";
  o.ppo.allow_tf32 = false;
  o.ppo.autocast = AutocastMode::kBf16;
  return o;
}

// Field for field, independently of the codec: every schema option through
// GetRunOption (an option added to the schema is compared too), the fields
// options derive (exact bits), and every part outside the schema.
void ExpectSame(const TrainerOptions& a, const TrainerOptions& b) {
  for (const OptionSpec& spec : kOptionSchema) {
    const std::string name(spec.name);
    EXPECT_EQ(*GetRunOption(name, a), *GetRunOption(name, b)) << name;
  }
  EXPECT_EQ(a.ppo.learning_rate, b.ppo.learning_rate);
  EXPECT_EQ(a.env.gamma, b.env.gamma);
  EXPECT_EQ(a.env.norm_cash, b.env.norm_cash);
  EXPECT_EQ(a.env.norm_stocks, b.env.norm_stocks);
  EXPECT_EQ(a.env.norm_tech, b.env.norm_tech);
  EXPECT_EQ(a.env.norm_reward, b.env.norm_reward);
  EXPECT_EQ(a.network.policy_hidden, b.network.policy_hidden);
  EXPECT_EQ(a.network.value_hidden, b.network.value_hidden);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.budget_env_steps, b.budget_env_steps);
  EXPECT_EQ(a.train_domains, b.train_domains);
  EXPECT_EQ(a.validation_domains, b.validation_domains);
  EXPECT_EQ(a.eval_every_env_steps, b.eval_every_env_steps);
  EXPECT_EQ(a.run_dir, b.run_dir);
  EXPECT_EQ(a.resume, b.resume);
  EXPECT_EQ(a.dataset_id, b.dataset_id);
  EXPECT_EQ(a.feature_names, b.feature_names);
  EXPECT_EQ(a.objective, b.objective);
  EXPECT_EQ(a.lockbox_begin, b.lockbox_begin);
  EXPECT_EQ(a.lockbox_guard, b.lockbox_guard);
  EXPECT_EQ(a.final_evaluation, b.final_evaluation);
  EXPECT_EQ(a.env.action_clip, b.env.action_clip);
  EXPECT_EQ(a.ppo.device, b.ppo.device);
  EXPECT_EQ(a.ppo.allow_tf32, b.ppo.allow_tf32);
  EXPECT_EQ(a.ppo.autocast, b.ppo.autocast);
}

TEST(RunConfigCodecTest, RoundTripOfEveryFieldIsExact) {
  for (const TrainerOptions& o : {TrainerOptions(), Unusual()}) {
    absl::StatusOr<TrainerOptions> back =
        TrainerOptionsFromRunConfig(TrainerOptionsToRunConfig(o));
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSame(o, *back);
  }
  // The test is not vacuous: Unusual() differs from the defaults in both
  // schema options and typed fields.
  EXPECT_NE(Unusual().ppo.epochs, TrainerOptions().ppo.epochs);
  EXPECT_NE(Unusual().seed, TrainerOptions().seed);
}

TEST(RunConfigCodecTest, StoredJsonRoundTripsAndIsReadable) {
  for (const TrainerOptions& o : {TrainerOptions(), Unusual()}) {
    absl::StatusOr<std::string> json = TrainerOptionsToConfigJson(o);
    ASSERT_TRUE(json.ok()) << json.status();
    absl::StatusOr<TrainerOptions> back = TrainerOptionsFromConfigJson(*json);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << *json;
    ExpectSame(o, *back);
  }
  const std::string json = *TrainerOptionsToConfigJson(Unusual());
  // Schema names and the .proto's field names, not camelCase.
  EXPECT_THAT(json, HasSubstr(R"({"name":"epochs","integer":"3"})"));
  EXPECT_THAT(json,
              HasSubstr(R"({"name":"reward_mode","choice":"log_return"})"));
  EXPECT_THAT(json, HasSubstr(R"("hidden_layers":{"policy":[64,32]})"));
  EXPECT_THAT(json, HasSubstr(R"("seed":"18446744073709551615")"));
}

TEST(RunConfigCodecTest, RandomValuesSurviveBitForBit) {
  Rng rng(5);
  for (int i = 0; i < 500; ++i) {
    TrainerOptions o;
    // Full 53-bit mantissas over many magnitudes, and exponents of the
    // norm_* options anywhere in their range.
    Set("learning_rate",
        FormatOptionNumber((1 - rng.Uniform()) *
                           std::pow(10.0, -12.0 * rng.Uniform())),
        &o);
    Set("norm_tech_exp", FormatOptionNumber(-64 + 128 * rng.Uniform()), &o);
    o.seed = rng.Next();
    absl::StatusOr<TrainerOptions> back =
        TrainerOptionsFromRunConfig(TrainerOptionsToRunConfig(o));
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->ppo.learning_rate, o.ppo.learning_rate);
    ASSERT_EQ(back->env.norm_tech, o.env.norm_tech);
    ASSERT_EQ(back->seed, o.seed);
  }
}

TEST(RunConfigCodecTest, EverySchemaOptionTravelsByNameWithItsType) {
  const v1::RunConfig c = TrainerOptionsToRunConfig(TrainerOptions());
  int carried = 0;
  for (const OptionSpec& spec : kOptionSchema) {
    const bool typed_field =
        spec.name == "width" || spec.name == "layers" || spec.name == "seed";
    const v1::RunOptionValue* found = nullptr;
    for (const v1::RunOptionValue& v : c.options()) {
      if (v.name() == spec.name) found = &v;
    }
    if (typed_field) {
      EXPECT_EQ(found, nullptr) << spec.name;
      continue;
    }
    ASSERT_NE(found, nullptr) << spec.name;
    ++carried;
    switch (spec.type) {
      case OptionType::kFloat:
        EXPECT_TRUE(found->has_number()) << spec.name;
        EXPECT_EQ(found->number(), spec.default_value) << spec.name;
        break;
      case OptionType::kInt:
        EXPECT_TRUE(found->has_integer()) << spec.name;
        EXPECT_EQ(found->integer(), spec.default_value) << spec.name;
        break;
      case OptionType::kBool:
        EXPECT_TRUE(found->has_flag()) << spec.name;
        EXPECT_EQ(found->flag(), spec.default_value != 0) << spec.name;
        break;
      case OptionType::kChoice:
        EXPECT_EQ(found->choice(), OptionDefaultText(spec)) << spec.name;
        break;
    }
  }
  EXPECT_EQ(c.options_size(), carried);
}

TEST(RunConfigCodecTest, PartsLeftOutKeepTheirDefaults) {
  v1::RunConfig c;
  v1::RunOptionValue* epochs = c.add_options();
  epochs->set_name("epochs");
  epochs->set_integer(4);
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromRunConfig(c);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ppo.epochs, 4);
  const TrainerOptions defaults;
  EXPECT_EQ(o->ppo.learning_rate, defaults.ppo.learning_rate);
  EXPECT_EQ(o->network.policy_hidden, defaults.network.policy_hidden);
  EXPECT_EQ(o->seed, defaults.seed);
  EXPECT_EQ(o->resume, defaults.resume);
  EXPECT_EQ(o->objective, defaults.objective);
  EXPECT_EQ(o->lockbox_begin, -1);
  EXPECT_EQ(o->env.action_clip, defaults.env.action_clip);
  EXPECT_EQ(o->ppo.allow_tf32, defaults.ppo.allow_tf32);
  // `gamma` is one discount: both copies.
  v1::RunOptionValue* gamma = c.add_options();
  gamma->set_name("gamma");
  gamma->set_number(0.5);
  o = TrainerOptionsFromRunConfig(c);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ppo.gamma, 0.5);
  EXPECT_EQ(o->env.gamma, 0.5);
}

// The default run's config with option `name` replaced by `value`.
v1::RunConfig With(const std::string& name, v1::RunOptionValue value) {
  v1::RunConfig c = TrainerOptionsToRunConfig(TrainerOptions());
  value.set_name(name);
  for (v1::RunOptionValue& v : *c.mutable_options()) {
    if (v.name() == name) {
      v = value;
      return c;
    }
  }
  *c.add_options() = value;
  return c;
}

v1::RunOptionValue Number(double v) {
  v1::RunOptionValue o;
  o.set_number(v);
  return o;
}
v1::RunOptionValue Integer(int64_t v) {
  v1::RunOptionValue o;
  o.set_integer(v);
  return o;
}
v1::RunOptionValue Flag(bool v) {
  v1::RunOptionValue o;
  o.set_flag(v);
  return o;
}
v1::RunOptionValue Choice(const std::string& v) {
  v1::RunOptionValue o;
  o.set_choice(v);
  return o;
}

void ExpectRefused(const v1::RunConfig& c, const std::string& message) {
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromRunConfig(c);
  ASSERT_FALSE(o.ok()) << c.ShortDebugString();
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(o.status().message()), message);
}

TEST(RunConfigCodecTest, ValuesOfTheWrongTypeAreRefused) {
  ExpectRefused(With("epochs", Number(4)),
                "run option 'epochs' must be an integer, got a number");
  ExpectRefused(With("learning_rate", Integer(1)),
                "run option 'learning_rate' must be a number, got an integer");
  ExpectRefused(With("normalize_advantages", Choice("true")),
                "run option 'normalize_advantages' must be a flag, got a "
                "choice");
  ExpectRefused(With("activation", Flag(true)),
                "run option 'activation' must be a choice, got a flag");
}

TEST(RunConfigCodecTest, ValuesOutsideTheSchemaAreRefused) {
  ExpectRefused(With("epochs", Integer(0)), "epochs = 0 is outside [1, 1000]");
  ExpectRefused(With("learning_rate", Number(0)),
                "learning_rate = 0 is outside (0, 1]");
  ExpectRefused(With("buy_fee", Number(1)), "buy_fee = 1 is outside [0, 1)");
  ExpectRefused(With("learning_rate", Number(std::nan(""))),
                "learning_rate = 'nan' is not a finite number");
  ExpectRefused(With("activation", Choice("gelu")),
                "activation = 'gelu' is not one of tanh, relu");
  v1::RunConfig c = TrainerOptionsToRunConfig(TrainerOptions());
  c.mutable_hidden_layers()->set_policy(1, 0);
  ExpectRefused(c,
                "RunConfig.hidden_layers.policy[1] = 0 is outside [1, 65536] "
                "(the schema's `width`)");
  c = TrainerOptionsToRunConfig(TrainerOptions());
  for (int i = 0; i < 17; ++i) c.mutable_hidden_layers()->add_value(8);
  ExpectRefused(c,
                "RunConfig.hidden_layers.value has 19 layers, more than the "
                "schema's `layers` allows (16)");
  c = TrainerOptionsToRunConfig(TrainerOptions());
  v1::RowRange* r = c.add_validation_domains();
  r->set_begin(10);
  r->set_end(5);
  ExpectRefused(c,
                "RunConfig.validation_domains[0] = [10, 5) must have 0 <= "
                "begin <= end");
  c = TrainerOptionsToRunConfig(TrainerOptions());
  c.set_action_clip(-1);
  ExpectRefused(c, "RunConfig.action_clip = -1 must be finite and > 0");
  c = TrainerOptionsToRunConfig(TrainerOptions());
  c.set_autocast("fp8");
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromRunConfig(c);
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status().message()),
              HasSubstr("RunConfig.autocast"));
}

TEST(RunConfigCodecTest, UnknownMissingAndRepeatedOptionsAreRefused) {
  ExpectRefused(With("bogus", Number(1)), "unknown run option 'bogus'");
  ExpectRefused(With("bad\nname", Number(1)),
                "unknown run option 'bad\\x0aname'");
  ExpectRefused(With("width", Integer(64)),
                "run option 'width' travels as RunConfig.hidden_layers, not "
                "in RunConfig.options");
  ExpectRefused(With("seed", Integer(3)),
                "run option 'seed' travels as RunConfig.seed, not in "
                "RunConfig.options");
  ExpectRefused(With("epochs", v1::RunOptionValue()),
                "run option 'epochs' has no value");
  v1::RunConfig c = TrainerOptionsToRunConfig(TrainerOptions());
  c.mutable_options(2)->clear_name();
  ExpectRefused(c, "run option #2 has no name");
  c = TrainerOptionsToRunConfig(TrainerOptions());
  *c.add_options() = c.options(0);
  ExpectRefused(
      c, absl::StrCat("run option '", c.options(0).name(), "' is given twice"));
}

TEST(RunConfigCodecTest, StoredJsonErrors) {
  EXPECT_EQ(TrainerOptionsFromConfigJson("{").status().message(),
            "run options are not valid JSON");
  // A RunConfig document (it has "options") with a field RunConfig lacks.
  absl::StatusOr<TrainerOptions> o =
      TrainerOptionsFromConfigJson(R"({"options": [], "bogus": 1})");
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status().message()),
              HasSubstr("run config JSON: "));
  // The schema checks apply to stored rows too.
  o = TrainerOptionsFromConfigJson(
      R"({"options": [{"name": "epochs", "integer": "0"}]})");
  EXPECT_EQ(o.status().message(), "epochs = 0 is outside [1, 1000]");
  o = TrainerOptionsFromConfigJson(
      R"({"options": [{"name": "epochs", "integer": "5"}]})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ppo.epochs, 5);
}

// A row of runs.config_json written before RunConfig existed (the old
// TrainerOptionsToJson's output for a run with most fields set), read as
// it was.
TEST(RunConfigCodecTest, OlderStoredJsonStillLoads) {
  const std::string legacy =
      R"({"budget_env_steps":5000,"dataset_id":"abc","env":{"action_clip":5.0,)"
      R"("buy_fee":0.001,"gamma":0.97,"lookback":3,"norm_tech":0.3333333333333333,)"
      R"("reward_mode":"log_return"},"feature_names":["close"],"lockbox_begin":900,)"
      R"("lockbox_guard":880,"network":{"policy_hidden":[64,32],"value_hidden":[]},)"
      R"("ppo":{"epochs":3,"gamma":0.9,"learning_rate":0.30000000000000004,)"
      R"("autocast":"bf16"},"seed":18446744073709551615,)"
      R"("train_domains":[[0,10],[20,34359738368]],"validation_domains":[[5,6]]})";
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromConfigJson(legacy);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->budget_env_steps, 5000);
  EXPECT_EQ(o->dataset_id, "abc");
  EXPECT_EQ(o->env.action_clip, 5.0);
  EXPECT_EQ(o->env.gamma, 0.97);  // the old layout kept both discounts
  EXPECT_EQ(o->ppo.gamma, 0.9);
  EXPECT_EQ(o->env.lookback, 3);
  EXPECT_EQ(o->env.norm_tech, 1.0 / 3);
  EXPECT_EQ(o->env.reward_mode, env::RewardMode::kLogReturn);
  EXPECT_EQ(o->network.policy_hidden, (std::vector<int>{64, 32}));
  EXPECT_TRUE(o->network.value_hidden.empty());
  EXPECT_EQ(o->ppo.epochs, 3);
  EXPECT_EQ(o->ppo.learning_rate, 0.1 + 0.2);
  EXPECT_EQ(o->ppo.autocast, AutocastMode::kBf16);
  EXPECT_EQ(o->seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(o->train_domains,
            (std::vector<env::Domain>{{0, 10}, {20, int64_t{1} << 35}}));
  EXPECT_EQ(o->lockbox_guard, 880);
  // Errors of the older reader come through.
  EXPECT_EQ(TrainerOptionsFromConfigJson(R"({"ppo": {"epoch": 4}})")
                .status()
                .message(),
            "unknown field 'ppo.epoch'");
}

}  // namespace
}  // namespace ristretto::learner
