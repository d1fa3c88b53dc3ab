#include "coordinator/core/param_registry.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

using learner::TrainerOptions;
using ::testing::ElementsAre;

TrainerOptions Applied(const std::string& name, const std::string& value) {
  TrainerOptions o;
  const absl::Status s = ApplyParam(name, value, &o);
  EXPECT_TRUE(s.ok()) << name << " = " << value << ": " << s;
  return o;
}

TEST(ParamRegistryTest, PpoParametersSetTheirFields) {
  EXPECT_EQ(Applied("learning_rate", "0.0003").ppo.learning_rate, 0.0003);
  EXPECT_EQ(Applied("batch_size", "4096").ppo.minibatch_size, 4096);
  EXPECT_EQ(Applied("rollout_steps", "512").rollout_steps, 512);
  EXPECT_EQ(Applied("num_envs", "16").num_envs, 16);
  EXPECT_EQ(Applied("gae_lambda", "0.9").ppo.gae_lambda, 0.9);
  EXPECT_EQ(Applied("clip_ratio", "0.15").ppo.clip_ratio, 0.15);
  EXPECT_EQ(Applied("entropy_coef", "0.001").ppo.entropy_coef, 0.001);
  EXPECT_EQ(Applied("value_coef", "0.25").ppo.value_coef, 0.25);
  EXPECT_EQ(Applied("epochs", "7").ppo.epochs, 7);
  EXPECT_EQ(Applied("max_grad_norm", "1.5").ppo.max_grad_norm, 1.5);
  EXPECT_EQ(Applied("max_policy_lag", "2").ppo.max_policy_lag, 2);
  EXPECT_EQ(Applied("lr_schedule", "linear").ppo.lr_schedule,
            learner::LrSchedule::kLinear);
  EXPECT_FALSE(
      Applied("normalize_advantages", "false").ppo.normalize_advantages);
}

TEST(ParamRegistryTest, GammaSetsTheLearnersAndTheEnvsDiscount) {
  const TrainerOptions o = Applied("gamma", "0.9");
  EXPECT_EQ(o.ppo.gamma, 0.9);
  EXPECT_EQ(o.env.gamma, 0.9);
}

TEST(ParamRegistryTest, WidthSetsEveryHiddenLayerOfBothNets) {
  TrainerOptions o;
  o.network.policy_hidden = {512, 256, 128};
  o.network.value_hidden = {64};
  ASSERT_TRUE(ApplyParam("width", "768", &o).ok());
  EXPECT_THAT(o.network.policy_hidden, ElementsAre(768, 768, 768));
  EXPECT_THAT(o.network.value_hidden, ElementsAre(768));
}

TEST(ParamRegistryTest, LayersAndWidthCommute) {
  TrainerOptions a, b;
  ASSERT_TRUE(ApplyParam("layers", "3", &a).ok());
  ASSERT_TRUE(ApplyParam("width", "64", &a).ok());
  ASSERT_TRUE(ApplyParam("width", "64", &b).ok());
  ASSERT_TRUE(ApplyParam("layers", "3", &b).ok());
  EXPECT_THAT(a.network.policy_hidden, ElementsAre(64, 64, 64));
  EXPECT_THAT(b.network.policy_hidden, ElementsAre(64, 64, 64));
  EXPECT_THAT(a.network.value_hidden, ElementsAre(64, 64, 64));
  EXPECT_THAT(b.network.value_hidden, ElementsAre(64, 64, 64));
  ASSERT_TRUE(ApplyParam("layers", "1", &b).ok());
  EXPECT_THAT(b.network.policy_hidden, ElementsAre(64));
}

TEST(ParamRegistryTest, NormalisationExponentsSetPowersOfTwo) {
  EXPECT_EQ(Applied("norm_cash_exp", "11").env.norm_cash, 1.0 / 2048);
  EXPECT_EQ(Applied("norm_stocks_exp", "8").env.norm_stocks, 1.0 / 256);
  EXPECT_EQ(Applied("norm_tech_exp", "14").env.norm_tech, 1.0 / 16384);
  EXPECT_EQ(Applied("norm_reward_exp", "9").env.norm_reward, 1.0 / 512);
  EXPECT_DOUBLE_EQ(Applied("norm_cash_exp", "10.5").env.norm_cash,
                   std::pow(2.0, -10.5));
}

TEST(ParamRegistryTest, EnvParametersSetTheirFields) {
  EXPECT_EQ(Applied("lookback", "3").env.lookback, 3);
  EXPECT_EQ(Applied("norm_action", "120").env.norm_action, 120);
  EXPECT_EQ(Applied("time_decay_floor", "0.25").env.time_decay_floor, 0.25);
  EXPECT_EQ(Applied("min_cash_reserve", "0.1").env.min_cash_reserve, 0.1);
  EXPECT_EQ(Applied("concentration_penalty", "0.3").env.concentration_penalty,
            0.3);
  EXPECT_EQ(Applied("buy_fee", "0.001").env.buy_fee, 0.001);
  EXPECT_EQ(Applied("sell_fee", "0.002").env.sell_fee, 0.002);
  EXPECT_EQ(Applied("slippage_bps", "0").env.slippage_bps, 0.0);
  EXPECT_EQ(Applied("slippage_bps", "12.5").env.slippage_bps, 12.5);
  EXPECT_EQ(Applied("max_volume_share", "0.05").env.max_volume_share, 0.05);
  EXPECT_EQ(Applied("reward_mode", "log_return").env.reward_mode,
            env::RewardMode::kLogReturn);
  EXPECT_EQ(Applied("reward_scale", "50").env.reward_scale, 50);
  EXPECT_EQ(Applied("terminal_reward", "discounted_sum").env.terminal_reward,
            env::TerminalReward::kDiscountedSum);
}

TEST(ParamRegistryTest, NetworkAndRunParametersSetTheirFields) {
  EXPECT_EQ(Applied("activation", "relu").network.activation,
            learner::Activation::kRelu);
  EXPECT_EQ(Applied("log_std_init", "-1").network.log_std_init, -1);
  EXPECT_EQ(Applied("budget", "3000000").budget_env_steps, 3000000);
  EXPECT_EQ(Applied("episode_steps", "512").episode_steps, 512);
}

TEST(ParamRegistryTest, UnknownNameIsRefusedWithAHint) {
  TrainerOptions o;
  absl::Status s = ApplyParam("learnig_rate", "0.1", &o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown parameter 'learnig_rate' (did you mean 'learning_rate'?)");
  s = ApplyParam("dropout", "0.1", &o);
  EXPECT_EQ(s.message(), "unknown parameter 'dropout'");
}

TEST(ParamRegistryTest, BadValuesAreRefusedNamingTheParameter) {
  TrainerOptions o;
  const TrainerOptions before = o;
  absl::Status s = ApplyParam("clip_ratio", "1", &o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "parameter clip_ratio = 1 is outside (0, 1)");
  s = ApplyParam("batch_size", "2048.5", &o);
  EXPECT_EQ(s.message(),
            "parameter batch_size = '2048.5' is not a whole number");
  s = ApplyParam("gamma", "abc", &o);
  EXPECT_EQ(s.message(), "parameter gamma = 'abc' is not a finite number");
  s = ApplyParam("activation", "gelu", &o);
  EXPECT_EQ(s.message(),
            "parameter activation = 'gelu' is not one of tanh, relu");
  s = ApplyParam("entropy_coef", "-0.1", &o);
  EXPECT_EQ(s.message(), "parameter entropy_coef = -0.1 is outside [0, inf]");
  s = ApplyParam("slippage_bps", "1000", &o);
  EXPECT_EQ(s.message(), "parameter slippage_bps = 1000 is outside [0, 1000)");
  s = ApplyParam("slippage_bps", "-1", &o);
  EXPECT_EQ(s.message(), "parameter slippage_bps = -1 is outside [0, 1000)");
  s = ApplyParam("max_volume_share", "1.5", &o);
  EXPECT_EQ(s.message(), "parameter max_volume_share = 1.5 is outside [0, 1]");
  // Nothing changed.
  EXPECT_EQ(o.ppo.clip_ratio, before.ppo.clip_ratio);
  EXPECT_EQ(o.ppo.minibatch_size, before.ppo.minibatch_size);
  EXPECT_EQ(o.env.slippage_bps, before.env.slippage_bps);
  EXPECT_EQ(o.env.max_volume_share, before.env.max_volume_share);
}

TEST(ParamRegistryTest, EveryParameterReadsBackWhatWasApplied) {
  // GetParam of the defaults, applied to fresh options, changes nothing.
  const TrainerOptions defaults;
  for (const ParamInfo& info : AllParams()) {
    absl::StatusOr<std::string> v = GetParam(info.name, defaults);
    ASSERT_TRUE(v.ok()) << info.name;
    TrainerOptions o;
    ASSERT_TRUE(ApplyParam(info.name, *v, &o).ok()) << info.name << " " << *v;
    absl::StatusOr<std::string> again = GetParam(info.name, o);
    EXPECT_EQ(*again, *v) << info.name;
  }
  EXPECT_EQ(*GetParam("norm_cash_exp", defaults), "11");
  EXPECT_EQ(*GetParam("batch_size", defaults), "2048");
  EXPECT_EQ(*GetParam("reward_mode", defaults), "log_return");
  EXPECT_EQ(*GetParam("action_model", defaults), "weights");
  EXPECT_EQ(*GetParam("cooldown_trim_bars", defaults), "0");
}

TEST(ParamRegistryTest, RegistryHoldsTheRequiredNames) {
  for (const char* name : {"learning_rate",
                           "batch_size",
                           "rollout_steps",
                           "num_envs",
                           "gamma",
                           "gae_lambda",
                           "clip_ratio",
                           "entropy_coef",
                           "value_coef",
                           "epochs",
                           "max_grad_norm",
                           "width",
                           "layers",
                           "activation",
                           "lookback",
                           "norm_cash_exp",
                           "norm_stocks_exp",
                           "norm_tech_exp",
                           "norm_reward_exp",
                           "norm_action",
                           "time_decay_floor",
                           "min_cash_reserve",
                           "concentration_penalty",
                           "buy_fee",
                           "sell_fee",
                           "slippage_bps",
                           "max_volume_share",
                           "reward_mode",
                           "reward_scale",
                           "budget",
                           "episode_steps",
                           "max_policy_lag"}) {
    EXPECT_NE(FindParam(name), nullptr) << name;
  }
  // Gates name registered categorical parameters.
  for (const ParamInfo& info : AllParams()) {
    if (info.read_when.empty()) continue;
    const ParamInfo* gate = FindParam(info.read_when);
    ASSERT_NE(gate, nullptr) << info.name;
    EXPECT_TRUE(gate->type == OptionType::kEnum ||
                gate->type == OptionType::kBool)
        << info.name;
  }
}

}  // namespace
}  // namespace ristretto::coordinator
