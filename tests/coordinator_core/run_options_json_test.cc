// The reader of the JSON layout runs.config_json held before v1::RunConfig
// (learner/run_options_json.h): documents written by the old writer read
// back field for field, and bad documents refused by path.
#include "learner/run_options_json.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

// Every field set to a non-default value.
TrainerOptions Unusual() {
  TrainerOptions o;
  // The old writer's runs traded coin quantities with no minimum notional.
  o.env.action_model = env::ActionModel::kShares;
  o.env.min_notional = 0.0;
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

// What the old TrainerOptionsToJson wrote for Unusual() and for
// TrainerOptions{} (captured from it before RunConfig replaced it).
constexpr char kUnusualJson[] =
    R"~({"budget_env_steps":1099511627776,"dataset_id":"abc","env":{"act)~"
    R"~(ion_clip":5.0,"buy_fee":0.001,"buy_safety":0.98,"concentration_p)~"
    R"~(enalty":0.3,"cooldown_trim_bars":24,"gamma":0.97,"initial_capita)~"
    R"~(l":1234.5,"lookback":3,"max_volume_share":0.05,"min_cash_reserve)~"
    R"~(":0.05,"norm_action":123.0,"norm_cash":0.000244140625,"norm_rewa)~"
    R"~(rd":0.7,"norm_stocks":0.1,"norm_tech":0.3333333333333333,"reward)~"
    R"~(_mode":"log_return","reward_scale":42.0,"sell_fee":0.0015,"slipp)~"
    R"~(age_bps":12.5,"terminal_reward":"discounted_sum","time_decay_flo)~"
    R"~(or":0.2,"trailing_stop_pct":0.1,"trim_fraction":0.1},"episode_st)~"
    R"~(eps":99,"eval_every_env_steps":77,"feature_names":["close","rsi_)~"
    R"~(14"],"final_evaluation":false,"lockbox_begin":-1,"lockbox_guard")~"
    R"~(:-1,"network":{"activation":"relu","log_prob":"uncorrected","log)~"
    R"~(_std_init":-1.25,"normalize_observations":false,"obs_clip":3.0,")~"
    R"~(policy_hidden":[64,32],"value_hidden":[]},"num_envs":3,"objectiv)~"
    R"~(e":"sharpe","ppo":{"adam_eps":1e-08,"allow_tf32":false,"autocast)~"
    R"~(":"bf16","bootstrap_truncation":false,"clip_ratio":0.1,"cpu_thre)~"
    R"~(ads":4,"device":"cuda:1","entropy_coef":1e-300,"epochs":3,"gae_l)~"
    R"~(ambda":1.0,"gamma":0.9,"learning_rate":0.30000000000000004,"lr_s)~"
    R"~(chedule":"linear","max_grad_norm":0.0,"max_policy_lag":9,"miniba)~"
    R"~(tch_size":100,"normalize_advantages":false,"sample_with_replacem)~"
    R"~(ent":true,"value_clip":0.2,"value_coef":1.0,"value_loss":"smooth)~"
    R"~(_l1"},"resume":false,"rollout_steps":7,"run_dir":"/tmp/run \"quo)~"
    R"~(ted\"","seed":18446744073709551615,"train_domains":[[0,10],[20,3)~"
    R"~(4359738368]],"validation_domains":[[5,6]]})~";
constexpr char kDefaultJson[] =
    R"~({"budget_env_steps":100000,"dataset_id":"","env":{"action_clip":)~"
    R"~(1000.0,"buy_fee":0.0025,"buy_safety":0.99,"concentration_penalty)~"
    R"~(":0.0,"cooldown_trim_bars":48,"gamma":0.99,"initial_capital":500)~"
    R"~(.0,"lookback":1,"max_volume_share":0.0,"min_cash_reserve":0.0,"n)~"
    R"~(orm_action":1.0,"norm_cash":0.00048828125,"norm_reward":0.001953)~"
    R"~(125,"norm_stocks":0.00390625,"norm_tech":6.103515625e-05,"reward)~"
    R"~(_mode":"shaped","reward_scale":1.0,"sell_fee":0.0025,"slippage_b)~"
    R"~(ps":5.0,"terminal_reward":"step","time_decay_floor":0.0,"trailin)~"
    R"~(g_stop_pct":0.0,"trim_fraction":0.05},"episode_steps":1024,"eval)~"
    R"~(_every_env_steps":0,"feature_names":[],"final_evaluation":false,)~"
    R"~("lockbox_begin":-1,"lockbox_guard":-1,"network":{"activation":"t)~"
    R"~(anh","log_prob":"tanh_corrected","log_std_init":-0.5,"normalize_)~"
    R"~(observations":true,"obs_clip":10.0,"policy_hidden":[512,512],"va)~"
    R"~(lue_hidden":[512,512]},"num_envs":8,"objective":"sharpe","ppo":{)~"
    R"~("adam_eps":1e-05,"allow_tf32":true,"autocast":"off","bootstrap_t)~"
    R"~(runcation":true,"clip_ratio":0.2,"cpu_threads":1,"device":"cpu",)~"
    R"~("entropy_coef":0.0,"epochs":10,"gae_lambda":0.95,"gamma":0.99,"l)~"
    R"~(earning_rate":0.0003,"lr_schedule":"constant","max_grad_norm":0.)~"
    R"~(5,"max_policy_lag":4,"minibatch_size":2048,"normalize_advantages)~"
    R"~(":true,"sample_with_replacement":false,"value_clip":0.0,"value_c)~"
    R"~(oef":0.5,"value_loss":"mse"},"resume":true,"rollout_steps":128,")~"
    R"~(run_dir":"","seed":1,"train_domains":[],"validation_domains":[]})~";

// Field by field, by hand (there is no writer to compare texts with).
void ExpectSame(const TrainerOptions& a, const TrainerOptions& b) {
  const env::EnvOptions &ea = a.env, &eb = b.env;
  EXPECT_EQ(ea.lookback, eb.lookback);
  EXPECT_EQ(ea.initial_capital, eb.initial_capital);
  EXPECT_EQ(ea.buy_fee, eb.buy_fee);
  EXPECT_EQ(ea.sell_fee, eb.sell_fee);
  EXPECT_EQ(ea.slippage_bps, eb.slippage_bps);
  EXPECT_EQ(ea.max_volume_share, eb.max_volume_share);
  EXPECT_EQ(ea.buy_safety, eb.buy_safety);
  EXPECT_EQ(ea.norm_cash, eb.norm_cash);
  EXPECT_EQ(ea.norm_stocks, eb.norm_stocks);
  EXPECT_EQ(ea.norm_tech, eb.norm_tech);
  EXPECT_EQ(ea.norm_reward, eb.norm_reward);
  EXPECT_EQ(ea.norm_action, eb.norm_action);
  EXPECT_EQ(ea.time_decay_floor, eb.time_decay_floor);
  EXPECT_EQ(ea.min_cash_reserve, eb.min_cash_reserve);
  EXPECT_EQ(ea.concentration_penalty, eb.concentration_penalty);
  EXPECT_EQ(ea.trailing_stop_pct, eb.trailing_stop_pct);
  EXPECT_EQ(ea.cooldown_trim_bars, eb.cooldown_trim_bars);
  EXPECT_EQ(ea.trim_fraction, eb.trim_fraction);
  EXPECT_EQ(ea.gamma, eb.gamma);
  EXPECT_EQ(ea.action_clip, eb.action_clip);
  EXPECT_EQ(ea.reward_mode, eb.reward_mode);
  EXPECT_EQ(ea.reward_scale, eb.reward_scale);
  EXPECT_EQ(ea.terminal_reward, eb.terminal_reward);
  EXPECT_EQ(ea.action_model, eb.action_model);
  EXPECT_EQ(ea.min_notional, eb.min_notional);
  const NetworkOptions &na = a.network, &nb = b.network;
  EXPECT_EQ(na.policy_hidden, nb.policy_hidden);
  EXPECT_EQ(na.value_hidden, nb.value_hidden);
  EXPECT_EQ(na.activation, nb.activation);
  EXPECT_EQ(na.log_std_init, nb.log_std_init);
  EXPECT_EQ(na.log_prob, nb.log_prob);
  EXPECT_EQ(na.normalize_observations, nb.normalize_observations);
  EXPECT_EQ(na.obs_clip, nb.obs_clip);
  const PpoOptions &pa = a.ppo, &pb = b.ppo;
  EXPECT_EQ(pa.learning_rate, pb.learning_rate);
  EXPECT_EQ(pa.lr_schedule, pb.lr_schedule);
  EXPECT_EQ(pa.gamma, pb.gamma);
  EXPECT_EQ(pa.gae_lambda, pb.gae_lambda);
  EXPECT_EQ(pa.bootstrap_truncation, pb.bootstrap_truncation);
  EXPECT_EQ(pa.clip_ratio, pb.clip_ratio);
  EXPECT_EQ(pa.value_loss, pb.value_loss);
  EXPECT_EQ(pa.value_clip, pb.value_clip);
  EXPECT_EQ(pa.value_coef, pb.value_coef);
  EXPECT_EQ(pa.entropy_coef, pb.entropy_coef);
  EXPECT_EQ(pa.normalize_advantages, pb.normalize_advantages);
  EXPECT_EQ(pa.epochs, pb.epochs);
  EXPECT_EQ(pa.minibatch_size, pb.minibatch_size);
  EXPECT_EQ(pa.sample_with_replacement, pb.sample_with_replacement);
  EXPECT_EQ(pa.max_grad_norm, pb.max_grad_norm);
  EXPECT_EQ(pa.adam_eps, pb.adam_eps);
  EXPECT_EQ(pa.max_policy_lag, pb.max_policy_lag);
  EXPECT_EQ(pa.device, pb.device);
  EXPECT_EQ(pa.allow_tf32, pb.allow_tf32);
  EXPECT_EQ(pa.autocast, pb.autocast);
  EXPECT_EQ(pa.cpu_threads, pb.cpu_threads);
  EXPECT_EQ(a.num_envs, b.num_envs);
  EXPECT_EQ(a.rollout_steps, b.rollout_steps);
  EXPECT_EQ(a.episode_steps, b.episode_steps);
  EXPECT_EQ(a.budget_env_steps, b.budget_env_steps);
  EXPECT_EQ(a.seed, b.seed);
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
}

TEST(RunOptionsJsonTest, OldDocumentsReadBackFieldForField) {
  absl::StatusOr<TrainerOptions> unusual =
      TrainerOptionsFromLegacyJson(kUnusualJson);
  ASSERT_TRUE(unusual.ok()) << unusual.status();
  ExpectSame(*unusual, Unusual());
  absl::StatusOr<TrainerOptions> defaults =
      TrainerOptionsFromLegacyJson(kDefaultJson);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  // The old writer's defaults were the original's env: coin quantities, the
  // forced trim after 48 bars, the shaped reward, no minimum notional.
  TrainerOptions old_defaults;
  old_defaults.env.action_model = env::ActionModel::kShares;
  old_defaults.env.cooldown_trim_bars = 48;
  old_defaults.env.reward_mode = env::RewardMode::kShaped;
  old_defaults.env.min_notional = 0.0;
  ExpectSame(*defaults, old_defaults);
  // Not vacuous: the two documents differ.
  EXPECT_NE(unusual->ppo.learning_rate, defaults->ppo.learning_rate);
}

TEST(RunOptionsJsonTest, LeftOutFieldsKeepDefaults) {
  absl::StatusOr<TrainerOptions> o =
      TrainerOptionsFromLegacyJson(R"({"ppo": {"epochs": 4}, "seed": 9})");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ppo.epochs, 4);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_EQ(o->ppo.learning_rate, PpoOptions().learning_rate);
  EXPECT_EQ(o->network.policy_hidden, NetworkOptions().policy_hidden);
  EXPECT_EQ(o->env.slippage_bps, 5.0);
  EXPECT_EQ(o->env.max_volume_share, 0.0);
}

TEST(RunOptionsJsonTest, ExecutionCostsAreRead) {
  absl::StatusOr<TrainerOptions> read = TrainerOptionsFromLegacyJson(
      R"({"env": {"slippage_bps": 7.5, "max_volume_share": 0.01}})");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->env.slippage_bps, 7.5);
  EXPECT_EQ(read->env.max_volume_share, 0.01);
}

void ExpectRefused(const std::string& json, const std::string& message) {
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromLegacyJson(json);
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
                "(expected shaped, log_return or differential_sharpe)");
  ExpectRefused(R"({"network": {"policy_hidden": [64, "x"]}})",
                "field 'network.policy_hidden[1]' must be an integer");
  ExpectRefused(R"({"train_domains": [[0, 10, 20]]})",
                "field 'train_domains[0]' must be a pair [begin, end]");
  ExpectRefused(R"({"resume": 1})", "field 'resume' must be true or false");
}

TEST(RunOptionsJsonTest, NullForANonFiniteDoubleIsRefused) {
  // The old writer wrote null for a non-finite double.
  EXPECT_EQ(TrainerOptionsFromLegacyJson(R"({"ppo": {"learning_rate": null}})")
                .status()
                .message(),
            "field 'ppo.learning_rate' must be a number");
}

}  // namespace
}  // namespace ristretto::learner
