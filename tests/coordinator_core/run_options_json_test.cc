#include "learner/run_options_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

// Every field set to a non-default value.
TrainerOptions Unusual() {
  TrainerOptions o;
  o.env.lookback = 3;
  o.env.initial_capital = 1234.5;
  o.env.buy_fee = 0.001;
  o.env.sell_fee = 0.0015;
  o.env.slippage_bps = 12.5;
  o.env.max_volume_share = 0.05;
  o.env.buy_safety = 0.98;
  o.env.norm_cash = 1.0 / 4096;
  o.env.norm_stocks = 0.1;
  o.env.norm_tech = 1.0 / 3;
  o.env.norm_reward = 0.7;
  o.env.norm_action = 123;
  o.env.time_decay_floor = 0.2;
  o.env.min_cash_reserve = 0.05;
  o.env.concentration_penalty = 0.3;
  o.env.trailing_stop_pct = 0.1;
  o.env.cooldown_trim_bars = 24;
  o.env.trim_fraction = 0.1;
  o.env.gamma = 0.97;
  o.env.action_clip = 5;
  o.env.reward_mode = env::RewardMode::kLogReturn;
  o.env.reward_scale = 42;
  o.env.terminal_reward = env::TerminalReward::kDiscountedSum;
  o.network.policy_hidden = {64, 32};
  o.network.value_hidden = {};
  o.network.activation = Activation::kRelu;
  o.network.log_std_init = -1.25;
  o.network.log_prob = LogProbMode::kUncorrected;
  o.network.normalize_observations = false;
  o.network.obs_clip = 3;
  o.ppo.learning_rate = 0.1 + 0.2;  // not a short decimal
  o.ppo.lr_schedule = LrSchedule::kLinear;
  o.ppo.gamma = 0.9;
  o.ppo.gae_lambda = 1;
  o.ppo.bootstrap_truncation = false;
  o.ppo.clip_ratio = 0.1;
  o.ppo.value_loss = ValueLoss::kSmoothL1;
  o.ppo.value_clip = 0.2;
  o.ppo.value_coef = 1;
  o.ppo.entropy_coef = 1e-300;
  o.ppo.normalize_advantages = false;
  o.ppo.epochs = 3;
  o.ppo.minibatch_size = 100;
  o.ppo.sample_with_replacement = true;
  o.ppo.max_grad_norm = 0;
  o.ppo.adam_eps = 1e-8;
  o.ppo.max_policy_lag = 9;
  o.ppo.device = "cuda:1";
  o.ppo.allow_tf32 = false;
  o.ppo.autocast = AutocastMode::kBf16;
  o.ppo.cpu_threads = 4;
  o.num_envs = 3;
  o.rollout_steps = 7;
  o.episode_steps = 99;
  o.budget_env_steps = 1LL << 40;
  o.seed = std::numeric_limits<uint64_t>::max();
  o.train_domains = {{0, 10}, {20, 1LL << 35}};
  o.validation_domains = {{5, 6}};
  o.eval_every_env_steps = 77;
  o.run_dir = "/tmp/run \"quoted\"";
  o.resume = false;
  o.dataset_id = "abc";
  o.feature_names = {"close", "rsi_14"};
  return o;
}

// Field-by-field equality via the JSON text itself plus spot checks of the
// fields most likely to go wrong.
void ExpectSame(const TrainerOptions& a, const TrainerOptions& b) {
  EXPECT_EQ(TrainerOptionsToJson(a), TrainerOptionsToJson(b));
  EXPECT_EQ(a.ppo.learning_rate, b.ppo.learning_rate);
  EXPECT_EQ(a.env.norm_tech, b.env.norm_tech);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.budget_env_steps, b.budget_env_steps);
  EXPECT_EQ(a.train_domains, b.train_domains);
  EXPECT_EQ(a.network.value_hidden, b.network.value_hidden);
  EXPECT_EQ(a.env.reward_mode, b.env.reward_mode);
  EXPECT_EQ(a.ppo.autocast, b.ppo.autocast);
  EXPECT_EQ(a.run_dir, b.run_dir);
}

TEST(RunOptionsJsonTest, RoundTripOfEveryFieldIsExact) {
  for (const TrainerOptions& o : {TrainerOptions(), Unusual()}) {
    absl::StatusOr<TrainerOptions> back =
        TrainerOptionsFromJson(TrainerOptionsToJson(o));
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSame(o, *back);
  }
}

TEST(RunOptionsJsonTest, RandomDoublesSurviveBitForBit) {
  Rng rng(5);
  for (int i = 0; i < 2000; ++i) {
    TrainerOptions o;
    // Values spread over many magnitudes, full 53-bit mantissas.
    o.ppo.learning_rate =
        rng.Uniform() * std::pow(10.0, -12.0 + 24 * rng.Uniform());
    o.env.norm_cash = rng.Uniform();
    absl::StatusOr<TrainerOptions> back =
        TrainerOptionsFromJson(TrainerOptionsToJson(o));
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->ppo.learning_rate, o.ppo.learning_rate);
    ASSERT_EQ(back->env.norm_cash, o.env.norm_cash);
  }
}

TEST(RunOptionsJsonTest, LeftOutFieldsKeepDefaults) {
  absl::StatusOr<TrainerOptions> o =
      TrainerOptionsFromJson(R"({"ppo": {"epochs": 4}, "seed": 9})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ppo.epochs, 4);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_EQ(o->ppo.learning_rate, PpoOptions().learning_rate);
  EXPECT_EQ(o->network.policy_hidden, NetworkOptions().policy_hidden);
  EXPECT_EQ(o->env.slippage_bps, 5.0);
  EXPECT_EQ(o->env.max_volume_share, 0.0);
}

TEST(RunOptionsJsonTest, ExecutionCostsTravelBothWays) {
  TrainerOptions o;
  o.env.slippage_bps = 0.0;  // golden-parity settings must survive as 0
  o.env.max_volume_share = 0.25;
  const std::string json = TrainerOptionsToJson(o);
  EXPECT_NE(json.find("\"slippage_bps\":0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_volume_share\":0.25"), std::string::npos);
  absl::StatusOr<TrainerOptions> back = TrainerOptionsFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->env.slippage_bps, 0.0);
  EXPECT_EQ(back->env.max_volume_share, 0.25);
  absl::StatusOr<TrainerOptions> read = TrainerOptionsFromJson(
      R"({"env": {"slippage_bps": 7.5, "max_volume_share": 0.01}})");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->env.slippage_bps, 7.5);
  EXPECT_EQ(read->env.max_volume_share, 0.01);
}

void ExpectRefused(const std::string& json, const std::string& message) {
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromJson(json);
  ASSERT_FALSE(o.ok()) << json;
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(o.status().message()), message);
}

TEST(RunOptionsJsonTest, BadFieldsAreNamedByPath) {
  ExpectRefused("{", "run options are not valid JSON");
  ExpectRefused("[]", "field '(top level)' must be an object");
  ExpectRefused(R"({"ppo": {"epoch": 4}})", "unknown field 'ppo.epoch'");
  ExpectRefused(R"({"bogus": 1})", "unknown field 'bogus'");
  ExpectRefused(R"({"ppo": {"epochs": 4.5}})",
                "field 'ppo.epochs' must be an integer");
  ExpectRefused(R"({"ppo": {"epochs": 3000000000}})",
                "field 'ppo.epochs' = 3000000000 is outside [-2147483648, "
                "2147483647]");
  ExpectRefused(R"({"seed": -1})",
                "field 'seed' = -1 is outside [0, 18446744073709551615]");
  ExpectRefused(R"({"env": {"gamma": null}})",
                "field 'env.gamma' must be a number");
  ExpectRefused(R"({"env": {"reward_mode": "sharpe"}})",
                "field 'env.reward_mode': unknown reward mode 'sharpe' "
                "(expected shaped or log_return)");
  ExpectRefused(R"({"network": {"policy_hidden": [64, "x"]}})",
                "field 'network.policy_hidden[1]' must be an integer");
  ExpectRefused(R"({"train_domains": [[0, 10, 20]]})",
                "field 'train_domains[0]' must be a pair [begin, end]");
  ExpectRefused(R"({"resume": 1})", "field 'resume' must be true or false");
}

TEST(RunOptionsJsonTest, NonFiniteDoublesAreWrittenAsNullAndRefused) {
  TrainerOptions o;
  o.ppo.learning_rate = std::numeric_limits<double>::quiet_NaN();
  const std::string json = TrainerOptionsToJson(o);
  EXPECT_NE(json.find("\"learning_rate\":null"), std::string::npos);
  EXPECT_EQ(TrainerOptionsFromJson(json).status().message(),
            "field 'ppo.learning_rate' must be a number");
}

}  // namespace
}  // namespace ristretto::learner
