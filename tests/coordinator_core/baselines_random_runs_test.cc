// SegmentBaselines::random_runs (coordinator/core/verdict.h): every random
// seed's whole result, in seed order, agreeing with the summary the
// baselines report (what `ristretto backtest` prints for the random row).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "common/rng.h"
#include "coordinator/core/verdict.h"
#include "env/dataset.h"
#include "env/metrics.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/evaluation.h"

namespace ristretto::coordinator {
namespace {

using ::testing::HasSubstr;

// 500 synthetic rows of 3 assets (seed 6); the tests play rows [50, 250)
// and [260, 430) with lookback 2.
absl::StatusOr<std::shared_ptr<const env::MarketData>> ThreeAssetMarket() {
  env::SyntheticMarketOptions so;
  so.num_assets = 3;
  so.num_rows = 500;
  so.seed = 6;
  absl::StatusOr<env::Dataset> data = env::GenerateSyntheticDataset(so);
  if (!data.ok()) return data.status();
  return env::MarketData::FromDataset(*data);
}

TEST(BaselinesRandomRunsTest, OneFullResultPerSeedMatchingTheSummary) {
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      ThreeAssetMarket();
  ASSERT_TRUE(market.ok()) << market.status();
  env::EnvOptions o;
  o.lookback = 2;
  const std::vector<env::Domain> domains = {{50, 250}, {260, 430}};
  constexpr int kSeeds = 4;
  absl::StatusOr<SegmentBaselines> b =
      ComputeBaselines(*market, o, domains, kSeeds);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->random_runs.size(), static_cast<size_t>(kSeeds));
  double sharpe_mean = 0, return_mean = 0;
  for (const learner::EvaluationResult& r : b->random_runs) {
    sharpe_mean += r.sharpe / kSeeds;
    return_mean += r.total_return / kSeeds;
    // Every metric of a random policy's run, not only its Sharpe.
    EXPECT_GT(r.trades, 0);
    EXPECT_GT(r.fees, 0);
    EXPECT_GT(r.turnover, 0);
    EXPECT_GT(r.exposure, 0);
    EXPECT_GT(r.max_drawdown, 0);
    EXPECT_EQ(r.steps, (200 - 4) + (170 - 4));
    EXPECT_TRUE(r.log_returns.empty());  // dropped: not needed, not kept
  }
  EXPECT_NEAR(sharpe_mean, b->random_sharpe_mean, 1e-12);
  EXPECT_NEAR(return_mean, b->random_return_mean, 1e-12);
  // Different seeds play differently.
  EXPECT_NE(b->random_runs[0].trades, b->random_runs[1].trades);
  double var = 0;
  for (const learner::EvaluationResult& r : b->random_runs) {
    var += (r.sharpe - sharpe_mean) * (r.sharpe - sharpe_mean) / kSeeds;
  }
  EXPECT_NEAR(std::sqrt(var), b->random_sharpe_std, 1e-12);
}

// With random_split K each random baseline is capital split among K random
// policies, scored exactly as a K-refit lockbox: member k of seed s is
// the single policy of seed s + k·N, and the account is their equal-capital
// mean (env::EqualCapitalValues + SummarizeDomains).
TEST(BaselinesRandomRunsTest,
     ASplitRandomBaselineIsKRandomPoliciesSharingCapital) {
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      ThreeAssetMarket();
  ASSERT_TRUE(market.ok()) << market.status();
  env::EnvOptions o;
  o.lookback = 2;
  const std::vector<env::Domain> domains = {{50, 250}, {260, 430}};
  constexpr int kSeeds = 12;
  constexpr int kSplit = 3;
  absl::StatusOr<SegmentBaselines> single =
      ComputeBaselines(*market, o, domains, kSeeds * kSplit);
  ASSERT_TRUE(single.ok()) << single.status();
  absl::StatusOr<SegmentBaselines> split =
      ComputeBaselines(*market, o, domains, kSeeds, kSplit);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->random_split, kSplit);
  EXPECT_EQ(single->random_split, 1);
  ASSERT_EQ(split->random_runs.size(), static_cast<size_t>(kSeeds));

  // Seed 1's split account rebuilt from single policies 1, 13 and 25.
  const SegmentBaselines& members = *single;
  // (random_runs drop log_returns: replay the three members' returns.)
  std::vector<std::vector<double>> member_returns;
  for (int k = 0; k < kSplit; ++k) {
    Rng rng(static_cast<uint64_t>(1 + k * kSeeds) * 0x9e3779b97f4a7c15ULL + 17);
    absl::StatusOr<learner::EvaluationResult> m = learner::EvaluateActions(
        *market, o, domains, [&rng](const float*, int copies, float* a) {
          for (int i = 0; i < copies * 3; ++i) {
            a[i] = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
          }
        });
    ASSERT_TRUE(m.ok()) << m.status();
    // The same single policy as the unsplit baseline's seed 1 + k·N.
    EXPECT_DOUBLE_EQ(m->sharpe, members.random_runs[k * kSeeds].sharpe);
    member_returns.push_back(m->log_returns);
  }
  std::vector<absl::Span<const double>> spans(member_returns.begin(),
                                              member_returns.end());
  const env::DomainsSummary want =
      env::SummarizeDomains(env::EqualCapitalValues(spans, {200 - 4, 170 - 4}),
                            env::BarsPerYear((*market)->interval_seconds));
  const learner::EvaluationResult& got = split->random_runs[0];
  EXPECT_NEAR(got.sharpe, want.sharpe, 1e-9);
  EXPECT_NEAR(got.total_return, want.total_return, 1e-12);
  EXPECT_NEAR(got.max_drawdown, want.max_drawdown, 1e-12);
  EXPECT_EQ(got.steps, (200 - 4) + (170 - 4));
  // Trades are all the members' together; turnover and fees their mean.
  EXPECT_EQ(got.trades, members.random_runs[0].trades +
                            members.random_runs[kSeeds].trades +
                            members.random_runs[2 * kSeeds].trades);
  EXPECT_NEAR(got.fees,
              (members.random_runs[0].fees + members.random_runs[kSeeds].fees +
               members.random_runs[2 * kSeeds].fees) /
                  3,
              1e-9);
  // The summary is that of the split accounts, not of single policies.
  double mean = 0;
  for (const learner::EvaluationResult& r : split->random_runs) {
    mean += r.sharpe / kSeeds;
  }
  EXPECT_NEAR(split->random_sharpe_mean, mean, 1e-12);
  EXPECT_NE(split->random_sharpe_mean, single->random_sharpe_mean);
  EXPECT_GT(split->random_sharpe_std, 0);

  const absl::StatusOr<SegmentBaselines> none =
      ComputeBaselines(*market, o, domains, kSeeds, 0);
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("random_split 0 is not in [1, 16]"));
  const absl::StatusOr<SegmentBaselines> too_many =
      ComputeBaselines(*market, o, domains, kSeeds, 17);
  EXPECT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("random_split 17 is not in [1, 16]"));
}

}  // namespace
}  // namespace ristretto::coordinator
