#include "learner/contract.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// 3 assets × 2 features per asset, lookback 4:
//   F = 3·2 = 6, obs_size = 1 + 3 + 6·4 = 28.
PolicyContract MakeContract() {
  env::EnvOptions env;
  env.lookback = 4;
  return PolicyContract::Make(env, NetworkOptions(), {"BTC", "ETH", "SOL"},
                              {"rsi", "macd"}, "sha256-of-dataset");
}

// Every field differs from its default, with doubles that need all 17
// significant digits to round-trip.
PolicyContract MakeNonDefaultContract() {
  env::EnvOptions env;
  env.lookback = 7;
  env.initial_capital = 1234.5;
  env.buy_fee = 0.001;
  env.sell_fee = 0.0015;
  env.slippage_bps = 7.25;
  env.max_volume_share = 0.1;
  env.buy_safety = 0.975;
  env.norm_cash = 1.0 / 3.0;
  env.norm_stocks = 1.0 / 7.0;
  env.norm_tech = 1.0 / 8192;
  env.norm_reward = 0.1;
  env.norm_action = 50.0;
  env.time_decay_floor = 0.25;
  env.min_cash_reserve = 0.05;
  env.concentration_penalty = 0.3;
  env.trailing_stop_pct = 0.12;
  env.cooldown_trim_bars = 96;
  env.trim_fraction = 0.1;
  env.gamma = 0.995;
  env.action_clip = 2.0;
  env.reward_mode = env::RewardMode::kLogReturn;
  env.reward_scale = 100.0;
  env.terminal_reward = env::TerminalReward::kDiscountedSum;
  NetworkOptions net;
  net.policy_hidden = {64, 32, 16};
  net.value_hidden = {};
  net.activation = Activation::kRelu;
  net.log_std_init = -1.2345678901234567;
  net.log_prob = LogProbMode::kUncorrected;
  net.normalize_observations = false;
  net.obs_clip = 5.5;
  return PolicyContract::Make(env, net, {"ADA", "BNB"}, {"close", "vol", "rsi"},
                              "0123abcd");
}

// Edits the JSON of `c` with `edit` and returns the edited text.
template <typename Edit>
std::string EditedJson(const PolicyContract& c, Edit edit) {
  nlohmann::json j = nlohmann::json::parse(c.ToJson());
  edit(j);
  return j.dump(2);
}

TEST(ContractTest,
     MakeComputesTheObservationLayoutFromAssetsFeaturesAndLookback) {
  const PolicyContract c = MakeContract();
  EXPECT_EQ(c.contract_version, kContractVersion);
  EXPECT_EQ(c.obs_size, 28);
  EXPECT_EQ(c.action_size, 3);
  EXPECT_EQ(c.lookback, 4);
  EXPECT_THAT(c.asset_symbols, ElementsAre("BTC", "ETH", "SOL"));
  EXPECT_THAT(c.feature_names, ElementsAre("rsi", "macd"));
  EXPECT_EQ(c.dataset_id, "sha256-of-dataset");
  EXPECT_EQ(c.env.lookback, 4);
}

TEST(ContractTest, JsonRoundTripPreservesEveryField) {
  const PolicyContract in = MakeNonDefaultContract();
  ASSERT_EQ(in.obs_size, 1 + 2 + 2 * 3 * 7);
  const absl::StatusOr<PolicyContract> parsed =
      PolicyContract::FromJson(in.ToJson());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const PolicyContract& out = *parsed;
  EXPECT_EQ(out.contract_version, in.contract_version);
  EXPECT_EQ(out.obs_size, in.obs_size);
  EXPECT_EQ(out.action_size, in.action_size);
  EXPECT_EQ(out.lookback, in.lookback);
  EXPECT_EQ(out.asset_symbols, in.asset_symbols);
  EXPECT_EQ(out.feature_names, in.feature_names);
  EXPECT_EQ(out.dataset_id, in.dataset_id);

  EXPECT_EQ(out.env.lookback, in.env.lookback);
  EXPECT_EQ(out.env.initial_capital, in.env.initial_capital);
  EXPECT_EQ(out.env.buy_fee, in.env.buy_fee);
  EXPECT_EQ(out.env.sell_fee, in.env.sell_fee);
  EXPECT_EQ(out.env.slippage_bps, in.env.slippage_bps);
  EXPECT_EQ(out.env.max_volume_share, in.env.max_volume_share);
  EXPECT_EQ(out.env.buy_safety, in.env.buy_safety);
  EXPECT_EQ(out.env.norm_cash, in.env.norm_cash);
  EXPECT_EQ(out.env.norm_stocks, in.env.norm_stocks);
  EXPECT_EQ(out.env.norm_tech, in.env.norm_tech);
  EXPECT_EQ(out.env.norm_reward, in.env.norm_reward);
  EXPECT_EQ(out.env.norm_action, in.env.norm_action);
  EXPECT_EQ(out.env.time_decay_floor, in.env.time_decay_floor);
  EXPECT_EQ(out.env.min_cash_reserve, in.env.min_cash_reserve);
  EXPECT_EQ(out.env.concentration_penalty, in.env.concentration_penalty);
  EXPECT_EQ(out.env.trailing_stop_pct, in.env.trailing_stop_pct);
  EXPECT_EQ(out.env.cooldown_trim_bars, in.env.cooldown_trim_bars);
  EXPECT_EQ(out.env.trim_fraction, in.env.trim_fraction);
  EXPECT_EQ(out.env.gamma, in.env.gamma);
  EXPECT_EQ(out.env.action_clip, in.env.action_clip);
  EXPECT_EQ(out.env.reward_mode, in.env.reward_mode);
  EXPECT_EQ(out.env.reward_scale, in.env.reward_scale);
  EXPECT_EQ(out.env.terminal_reward, in.env.terminal_reward);

  EXPECT_EQ(out.network.policy_hidden, in.network.policy_hidden);
  EXPECT_EQ(out.network.value_hidden, in.network.value_hidden);
  EXPECT_EQ(out.network.activation, in.network.activation);
  EXPECT_EQ(out.network.log_std_init, in.network.log_std_init);
  EXPECT_EQ(out.network.log_prob, in.network.log_prob);
  EXPECT_EQ(out.network.normalize_observations,
            in.network.normalize_observations);
  EXPECT_EQ(out.network.obs_clip, in.network.obs_clip);

  EXPECT_TRUE(CheckContract(in, out, /*check_dataset=*/true).ok());
  EXPECT_EQ(out.ToJson(), in.ToJson());
}

TEST(ContractTest, JsonIsIndentedByTwoSpacesWithEnumsAsNames) {
  const std::string json = MakeNonDefaultContract().ToJson();
  EXPECT_THAT(json, StartsWith("{\n  \"contract_version\": 1,\n"
                               "  \"obs_size\": 45,\n"));
  EXPECT_THAT(json, HasSubstr("\n    \"reward_mode\": \"log_return\",\n"));
  EXPECT_THAT(json,
              HasSubstr("\n    \"terminal_reward\": \"discounted_sum\"\n"));
  EXPECT_THAT(json, HasSubstr("\n    \"activation\": \"relu\",\n"));
  EXPECT_THAT(json, HasSubstr("\n    \"log_prob\": \"uncorrected\",\n"));
  EXPECT_THAT(json, HasSubstr("\n    \"norm_tech\": 0.0001220703125,\n"));
  EXPECT_THAT(json, HasSubstr("\n    \"value_hidden\": [],\n"));
}

TEST(ContractTest, DefaultEnumsAreWrittenByName) {
  const std::string json = MakeContract().ToJson();
  EXPECT_THAT(json, HasSubstr("\"reward_mode\": \"log_return\""));
  EXPECT_THAT(json, HasSubstr("\"action_model\": \"weights\""));
  EXPECT_THAT(json, HasSubstr("\"terminal_reward\": \"step\""));
  EXPECT_THAT(json, HasSubstr("\"activation\": \"tanh\""));
  EXPECT_THAT(json, HasSubstr("\"log_prob\": \"tanh_corrected\""));
}

TEST(ContractTest, IdenticalContractsMatch) {
  EXPECT_TRUE(CheckContract(MakeContract(), MakeContract(), true).ok());
}

TEST(ContractTest, DifferentObservationSizeIsRefusedNamingBothSizes) {
  PolicyContract expected = MakeContract();
  expected.obs_size = 204;
  PolicyContract found = MakeContract();
  found.obs_size = 106;
  const absl::Status s = CheckContract(expected, found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: obs_size is 106 in the checkpoint but 204 "
            "here");
}

TEST(ContractTest, LongerLookbackIsRefusedAtObservationSizeFirst) {
  // lookback 2 → obs_size = 1 + 3 + 6·2 = 16 against 28.
  env::EnvOptions env;
  env.lookback = 2;
  const PolicyContract found =
      PolicyContract::Make(env, NetworkOptions(), {"BTC", "ETH", "SOL"},
                           {"rsi", "macd"}, "sha256-of-dataset");
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: obs_size is 16 in the checkpoint but 28 here");
}

TEST(ContractTest, DifferentLookbackWithSameSizeIsRefusedNamingLookback) {
  PolicyContract found = MakeContract();
  found.lookback = 3;
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: lookback is 3 in the checkpoint but 4 here");
}

TEST(ContractTest, DifferentActionSizeIsRefused) {
  PolicyContract found = MakeContract();
  found.action_size = 2;
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: action_size is 2 in the checkpoint but 3 "
            "here");
}

TEST(ContractTest, SwappedAssetSymbolsAreRefusedNamingTheFirstDifferingIndex) {
  env::EnvOptions env;
  env.lookback = 4;
  const PolicyContract found =
      PolicyContract::Make(env, NetworkOptions(), {"BTC", "SOL", "ETH"},
                           {"rsi", "macd"}, "sha256-of-dataset");
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: asset_symbols[1] is \"SOL\" in the checkpoint "
            "but \"ETH\" here");
}

TEST(ContractTest, AssetListsOfDifferentLengthAreShownWhole) {
  PolicyContract found = MakeContract();
  found.asset_symbols.pop_back();
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: asset_symbols is [\"BTC\",\"ETH\"] in the "
            "checkpoint but [\"BTC\",\"ETH\",\"SOL\"] here");
}

TEST(ContractTest, DifferentFeatureNamesAreRefusedNamingTheIndex) {
  PolicyContract found = MakeContract();
  found.feature_names[0] = "rsi_14";
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: feature_names[0] is \"rsi_14\" in the "
            "checkpoint but \"rsi\" here");
}

TEST(ContractTest, DifferentDatasetIsRefusedOnlyWhenCheckingTheDataset) {
  PolicyContract found = MakeContract();
  found.dataset_id = "other-dataset";
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: dataset_id is \"other-dataset\" in the "
            "checkpoint but \"sha256-of-dataset\" here");
  EXPECT_TRUE(CheckContract(MakeContract(), found, false).ok());
}

TEST(ContractTest, ChangedEnvOptionIsRefusedNamingTheOption) {
  PolicyContract found = MakeContract();
  found.env.norm_tech = 1.0 / 8192;  // default 2^-14
  const absl::Status s = CheckContract(MakeContract(), found, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: env.norm_tech is 0.0001220703125 in the "
            "checkpoint but 6.103515625e-05 here");
}

TEST(ContractTest, ChangedEnvEnumIsRefusedByName) {
  PolicyContract found = MakeContract();
  found.env.reward_mode = env::RewardMode::kShaped;
  const absl::Status s = CheckContract(MakeContract(), found, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: env.reward_mode is \"shaped\" in the "
            "checkpoint but \"log_return\" here");
  // The action model likewise: a checkpoint of the original's model does
  // not resume under target weights.
  PolicyContract shares = MakeContract();
  shares.env.action_model = env::ActionModel::kShares;
  const absl::Status t = CheckContract(MakeContract(), shares, false);
  EXPECT_EQ(t.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.message(),
            "contract mismatch: env.action_model is \"shares\" in the "
            "checkpoint but \"weights\" here");
}

TEST(ContractTest, DoublesDifferingInTheLastBitAreRefusedWithDistinctValues) {
  PolicyContract found = MakeContract();
  found.env.buy_fee = 0.0025000000000000005;  // next double after 0.0025
  const absl::Status s = CheckContract(MakeContract(), found, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: env.buy_fee is 0.0025000000000000005 in the "
            "checkpoint but 0.0025 here");
}

TEST(ContractTest, DifferentHiddenSizesAreRefusedNamingTheNetworkField) {
  PolicyContract found = MakeContract();
  found.network.policy_hidden = {256, 256};
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: network.policy_hidden is [256,256] in the "
            "checkpoint but [512,512] here");
}

TEST(ContractTest, DifferentLogProbModeIsRefused) {
  PolicyContract found = MakeContract();
  found.network.log_prob = LogProbMode::kUncorrected;
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: network.log_prob is \"uncorrected\" in the "
            "checkpoint but \"tanh_corrected\" here");
}

TEST(ContractTest, FirstDifferingFieldInContractOrderIsReported) {
  PolicyContract found = MakeContract();
  found.network.obs_clip = 3.0;
  found.env.gamma = 0.9;
  found.dataset_id = "x";
  found.asset_symbols[2] = "DOGE";
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.message(),
            "contract mismatch: asset_symbols[2] is \"DOGE\" in the "
            "checkpoint but \"SOL\" here");
  found.asset_symbols[2] = "SOL";
  EXPECT_EQ(CheckContract(MakeContract(), found, true).message(),
            "contract mismatch: dataset_id is \"x\" in the checkpoint but "
            "\"sha256-of-dataset\" here");
  EXPECT_EQ(CheckContract(MakeContract(), found, false).message(),
            "contract mismatch: env.gamma is 0.9 in the checkpoint but 0.99 "
            "here");
}

TEST(ContractTest, NewerContractVersionIsRefusedAsFailedPrecondition) {
  const std::string json = EditedJson(
      MakeContract(), [](nlohmann::json& j) { j["contract_version"] = 2; });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(),
            "contract_version 2 is newer than this build supports (1)");
}

TEST(ContractTest, NewerContractVersionIsRefusedEvenWithUnknownLayout) {
  const absl::StatusOr<PolicyContract> c =
      PolicyContract::FromJson(R"({"contract_version": 9, "shape": [1]})");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ContractTest, OlderVersionFoundIsRefusedByCheckContract) {
  PolicyContract found = MakeContract();
  found.contract_version = 0;
  const absl::Status s = CheckContract(MakeContract(), found, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: contract_version is 0 in the checkpoint but 1 "
            "here");
}

TEST(ContractTest, MalformedJsonIsInvalidArgument) {
  for (const char* text : {"", "{", "{\"obs_size\": }", "not json", "[1, 2"}) {
    const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(text);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(c.status().message()),
                StartsWith("contract JSON is malformed: "))
        << text;
  }
}

TEST(ContractTest, NonObjectJsonIsInvalidArgument) {
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson("[1, 2]");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "contract JSON: the top level must be an object");
}

TEST(ContractTest, MissingTopLevelFieldIsInvalidArgumentNamingIt) {
  const std::string json = EditedJson(
      MakeContract(), [](nlohmann::json& j) { j.erase("asset_symbols"); });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "contract JSON: missing field asset_symbols");
}

TEST(ContractTest, MissingVersionIsInvalidArgument) {
  const std::string json = EditedJson(
      MakeContract(), [](nlohmann::json& j) { j.erase("contract_version"); });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "contract JSON: missing field contract_version");
}

TEST(ContractTest, MissingEnvOptionIsInvalidArgumentNamingIt) {
  const std::string json = EditedJson(
      MakeContract(), [](nlohmann::json& j) { j["env"].erase("norm_tech"); });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "contract JSON: missing field env.norm_tech");
}

TEST(ContractTest, ContractWithoutExecutionCostsReadsThemAsZero) {
  // Contracts written before slippage and the volume cap existed lack both
  // keys; those policies trained without either, so they read as 0 (not as
  // today's defaults, 5 bps and 0).
  PolicyContract in = MakeNonDefaultContract();
  const std::string json = EditedJson(in, [](nlohmann::json& j) {
    j["env"].erase("slippage_bps");
    j["env"].erase("max_volume_share");
  });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->env.slippage_bps, 0.0);
  EXPECT_EQ(c->env.max_volume_share, 0.0);
  EXPECT_EQ(c->env.sell_fee, in.env.sell_fee);
  // A run with today's default slippage is therefore a different env.
  const absl::Status s = CheckContract(
      MakeContract(),
      *PolicyContract::FromJson(EditedJson(
          MakeContract(),
          [](nlohmann::json& j) { j["env"].erase("slippage_bps"); })),
      /*check_dataset=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("env.slippage_bps is 0"));
}

// Contracts written before the weights observation, the partial
// rebalance rate and the decision interval existed observed cash and coin
// holdings, traded to the target at once and decided on every bar.
TEST(ContractTest, ContractWithoutPositionObservationReadsTheOriginals) {
  const std::string json = EditedJson(MakeContract(), [](nlohmann::json& j) {
    j["env"].erase("position_observation");
    j["env"].erase("rebalance_rate");
    j["env"].erase("decision_bars");
  });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->env.position_observation, env::PositionObservation::kHoldings);
  EXPECT_EQ(c->env.rebalance_rate, 1.0);
  EXPECT_EQ(c->env.decision_bars, 1);  // every bar, as before it existed
  const nlohmann::json now = nlohmann::json::parse(MakeContract().ToJson());
  EXPECT_EQ(now.at("env").at("position_observation"), "weights");
  EXPECT_EQ(now.at("env").at("rebalance_rate").get<double>(), 1.0);
  // A policy that observed holdings is a different env from today's.
  const absl::Status s = CheckContract(MakeContract(), *c,
                                       /*check_dataset=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("env.position_observation"));
  const absl::StatusOr<PolicyContract> bad = PolicyContract::FromJson(
      EditedJson(MakeContract(), [](nlohmann::json& j) {
        j["env"]["position_observation"] = "coins";
      }));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("env.position_observation: unknown position "
                        "observation 'coins'"));
}

TEST(ContractTest, ExecutionCostsAreWrittenToTheEnvSection) {
  const nlohmann::json j = nlohmann::json::parse(MakeContract().ToJson());
  EXPECT_EQ(j.at("env").at("slippage_bps").get<double>(), 5.0);
  EXPECT_EQ(j.at("env").at("max_volume_share").get<double>(), 0.0);
}

TEST(ContractTest, MissingNetworkSectionIsInvalidArgument) {
  const std::string json =
      EditedJson(MakeContract(), [](nlohmann::json& j) { j.erase("network"); });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "contract JSON: missing field network");
}

TEST(ContractTest, WrongFieldTypesAreInvalidArgumentNamingTheField) {
  struct Case {
    void (*edit)(nlohmann::json&);
    std::string message;
  };
  const Case cases[] = {
      {[](nlohmann::json& j) { j["obs_size"] = "28"; },
       "contract JSON: field obs_size must be a 32-bit integer, got \"28\""},
      {[](nlohmann::json& j) { j["obs_size"] = 28.5; },
       "contract JSON: field obs_size must be a 32-bit integer, got 28.5"},
      {[](nlohmann::json& j) { j["lookback"] = 4294967296; },
       "contract JSON: field lookback must be a 32-bit integer, got "
       "4294967296"},
      {[](nlohmann::json& j) { j["asset_symbols"][1] = 7; },
       "contract JSON: field asset_symbols[1] must be a string, got 7"},
      {[](nlohmann::json& j) { j["feature_names"] = "rsi"; },
       "contract JSON: field feature_names must be an array, got \"rsi\""},
      {[](nlohmann::json& j) { j["env"]["buy_fee"] = nullptr; },
       "contract JSON: field env.buy_fee must be a number, got null"},
      {[](nlohmann::json& j) { j["env"] = 1; },
       "contract JSON: field env must be an object, got 1"},
      {[](nlohmann::json& j) { j["network"]["normalize_observations"] = 1; },
       "contract JSON: field network.normalize_observations must be true or "
       "false, got 1"},
      {[](nlohmann::json& j) { j["network"]["value_hidden"][0] = -1.5; },
       "contract JSON: field network.value_hidden[0] must be a 32-bit "
       "integer, got -1.5"},
      {[](nlohmann::json& j) { j["env"]["reward_mode"] = "fancy"; },
       "contract JSON: field env.reward_mode: unknown reward mode 'fancy' "
       "(expected shaped, log_return or differential_sharpe)"},
      {[](nlohmann::json& j) { j["env"]["action_model"] = "kelly"; },
       "contract JSON: field env.action_model: unknown action model 'kelly' "
       "(expected weights or shares)"},
      {[](nlohmann::json& j) { j["network"]["activation"] = "gelu"; },
       "contract JSON: field network.activation: unknown activation 'gelu' "
       "(expected tanh or relu)"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<PolicyContract> parsed =
        PolicyContract::FromJson(EditedJson(MakeContract(), c.edit));
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.message;
    EXPECT_EQ(parsed.status().message(), c.message);
  }
}

TEST(ContractTest, UnknownExtraFieldsAreIgnored) {
  const std::string json = EditedJson(
      MakeContract(), [](nlohmann::json& j) { j["comment"] = "trial 17"; });
  const absl::StatusOr<PolicyContract> c = PolicyContract::FromJson(json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(CheckContract(MakeContract(), *c, true).ok());
}

}  // namespace
}  // namespace ristretto::learner
