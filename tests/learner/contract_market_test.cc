// A policy's contract against a dataset's layout (CheckContractForMarket,
// `ristretto backtest`) and the contract's bar interval (interval_seconds:
// JSON round trip, absent in older contracts, compared only when both
// sides record one).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/contract.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kSymbols = {"ADAUSD", "BNBUSD", "ETHUSD"};
const std::vector<std::string> kFeatures = {"close", "volume", "rsi_14"};

// 3 assets × 3 features, lookback 2: obs_size = 1 + 3 + 9·2 = 22.
PolicyContract Contract(int64_t interval_seconds = 300) {
  env::EnvOptions env;
  env.lookback = 2;
  PolicyContract c =
      PolicyContract::Make(env, NetworkOptions(), kSymbols, kFeatures, "id");
  c.interval_seconds = interval_seconds;
  return c;
}

absl::Status Check(const PolicyContract& c,
                   const std::vector<std::string>& symbols,
                   const std::vector<std::string>& features,
                   int64_t interval_seconds, std::string* warning = nullptr) {
  return CheckContractForMarket(c, symbols, features, interval_seconds,
                                warning);
}

TEST(ContractMarketTest, TheTrainingLayoutPassesWithoutWarning) {
  std::string warning = "stale";
  EXPECT_TRUE(Check(Contract(), kSymbols, kFeatures, 300, &warning).ok());
  EXPECT_EQ(warning, "");
  EXPECT_EQ(Contract().obs_size, 22);
}

TEST(ContractMarketTest, AnotherAssetIsNamedWithBothSymbols) {
  const absl::Status s =
      Check(Contract(), {"ADAUSD", "BNBUSD", "SOLUSD"}, kFeatures, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: asset_symbols[2] is \"ETHUSD\" in the "
            "policy's contract but \"SOLUSD\" in the dataset");
}

TEST(ContractMarketTest, AssetOrderMatters) {
  const absl::Status s =
      Check(Contract(), {"BNBUSD", "ADAUSD", "ETHUSD"}, kFeatures, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("asset_symbols[0] is \"ADAUSD\""));
  EXPECT_THAT(s.message(), HasSubstr("but \"BNBUSD\" in the dataset"));
}

TEST(ContractMarketTest, FewerAssetsShowTheWholeLists) {
  const absl::Status s =
      Check(Contract(), {"ADAUSD", "BNBUSD"}, kFeatures, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: asset_symbols is "
            "[\"ADAUSD\",\"BNBUSD\",\"ETHUSD\"] in the policy's contract but "
            "[\"ADAUSD\",\"BNBUSD\"] in the dataset");
}

TEST(ContractMarketTest, AnotherFeatureIsNamed) {
  const absl::Status s =
      Check(Contract(), kSymbols, {"close", "volume", "macd"}, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("feature_names[2] is \"rsi_14\""));
  EXPECT_THAT(s.message(), HasSubstr("\"macd\" in the dataset"));
  const absl::Status more =
      Check(Contract(), kSymbols, {"close", "volume", "rsi_14", "macd"}, 300);
  EXPECT_THAT(more.message(), HasSubstr("contract mismatch: feature_names is"));
}

TEST(ContractMarketTest, AnObservationSizeThatDisagreesWithTheLookback) {
  PolicyContract c = Contract();
  c.obs_size = 31;  // as if trained with lookback 3
  const absl::Status s = Check(c, kSymbols, kFeatures, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("obs_size is 31 in the policy's "
                                     "contract but the dataset gives 22"));
  EXPECT_THAT(s.message(), HasSubstr("lookback 2"));
}

TEST(ContractMarketTest, AContractWhoseLookbacksDisagreeIsRefused) {
  PolicyContract c = Contract();
  c.env.lookback = 3;
  const absl::Status s = Check(c, kSymbols, kFeatures, 300);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("lookback is 2 but env.lookback is 3"));
}

TEST(ContractMarketTest, AnotherIntervalIsAnError) {
  const absl::Status s = Check(Contract(300), kSymbols, kFeatures, 3600);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "contract mismatch: interval_seconds is 300 in the policy's "
            "contract but 3600 in the dataset");
}

TEST(ContractMarketTest, AnUnrecordedIntervalIsAWarning) {
  std::string warning;
  EXPECT_TRUE(Check(Contract(0), kSymbols, kFeatures, 3600, &warning).ok());
  EXPECT_THAT(warning, HasSubstr("does not record its bar interval"));
  EXPECT_THAT(warning, HasSubstr("3600 s"));
  EXPECT_TRUE(Check(Contract(0), kSymbols, kFeatures, 3600, nullptr).ok());
}

TEST(ContractIntervalTest, RoundTripsThroughJson) {
  absl::StatusOr<PolicyContract> back =
      PolicyContract::FromJson(Contract(86400).ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->interval_seconds, 86400);
  EXPECT_THAT(Contract(86400).ToJson(),
              HasSubstr("\"interval_seconds\": 86400"));
}

TEST(ContractIntervalTest, AContractWithoutTheFieldReadsAsNotRecorded) {
  nlohmann::json j = nlohmann::json::parse(Contract(300).ToJson());
  ASSERT_EQ(j.erase("interval_seconds"), 1u);
  absl::StatusOr<PolicyContract> back = PolicyContract::FromJson(j.dump());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->interval_seconds, 0);
}

TEST(ContractIntervalTest, NegativeOrNonIntegerIntervalsAreRefused) {
  nlohmann::json j = nlohmann::json::parse(Contract(300).ToJson());
  j["interval_seconds"] = -5;
  absl::StatusOr<PolicyContract> neg = PolicyContract::FromJson(j.dump());
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(neg.status().message(), HasSubstr("interval_seconds -5"));
  j["interval_seconds"] = "5m";
  absl::StatusOr<PolicyContract> text = PolicyContract::FromJson(j.dump());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("field interval_seconds"));
}

TEST(ContractIntervalTest, CheckContractComparesOnlyRecordedIntervals) {
  const absl::Status differ =
      CheckContract(Contract(300), Contract(3600), /*check_dataset=*/true);
  EXPECT_EQ(differ.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(differ.message(),
              HasSubstr("interval_seconds is 3600 in the checkpoint but 300"));
  // A checkpoint written before the interval was recorded still loads.
  EXPECT_TRUE(CheckContract(Contract(300), Contract(0), true).ok());
  EXPECT_TRUE(CheckContract(Contract(0), Contract(300), true).ok());
  EXPECT_TRUE(CheckContract(Contract(300), Contract(300), true).ok());
}

}  // namespace
}  // namespace ristretto::learner
