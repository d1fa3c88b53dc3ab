// SegmentBaselines::random_runs (coordinator/core/verdict.h): every random
// seed's whole result, in seed order, agreeing with the summary the
// baselines report (what `ristretto backtest` prints for the random row).
#include <cmath>
#include <memory>
#include <vector>

#include "coordinator/core/verdict.h"
#include "env/synthetic.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

TEST(BaselinesRandomRunsTest, OneFullResultPerSeedMatchingTheSummary) {
  env::SyntheticMarketOptions so;
  so.num_assets = 3;
  so.num_rows = 500;
  so.seed = 6;
  absl::StatusOr<env::Dataset> data = env::GenerateSyntheticDataset(so);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      env::MarketData::FromDataset(*data);
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

}  // namespace
}  // namespace ristretto::coordinator
