// EvaluateActions' optional trace (learner/evaluation.h): its values
// reproduce the result's log returns exactly, cash plus holdings at the
// close add up to the value, its buy and hold is the benchmark series, and
// asking for a trace changes nothing else.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "env/metrics.h"
#include "env/synthetic.h"
#include "gtest/gtest.h"
#include "learner/evaluation.h"

namespace ristretto::learner {
namespace {

constexpr int kAssets = 3;

class EvaluationTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env::SyntheticMarketOptions synth;
    synth.num_assets = kAssets;
    synth.num_rows = 700;
    synth.seed = 11;
    auto dataset = env::GenerateSyntheticDataset(synth);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    auto market = env::MarketData::FromDataset(*dataset);
    ASSERT_TRUE(market.ok()) << market.status();
    market_ = *market;
    env_.lookback = 2;
    env_.slippage_bps = 7;
    const int64_t T = market_->num_rows;
    // Two domains of different lengths, so copies finish at different
    // steps (the first is parked while the second plays on).
    domains_ = {env::Domain{T / 3, T / 3 + 90}, env::Domain{T / 2, T}};
  }

  // Uniform random actions in [−1, 1] from a fixed seed: trades in both
  // directions, partial positions.
  static ActionFunction RandomPolicy(uint64_t seed) {
    auto rng = std::make_shared<Rng>(seed);
    return [rng](const float*, int copies, float* actions) {
      for (int i = 0; i < copies * kAssets; ++i) {
        actions[i] = static_cast<float>(rng->Uniform() * 2.0 - 1.0);
      }
    };
  }

  std::shared_ptr<const env::MarketData> market_;
  env::EnvOptions env_;
  std::vector<env::Domain> domains_;
};

TEST_F(EvaluationTraceTest, ValuesReproduceTheLogReturnsExactly) {
  EvaluationTrace trace;
  absl::StatusOr<EvaluationResult> r =
      EvaluateActions(market_, env_, domains_, RandomPolicy(3), &trace);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GT(r->trades, 0);
  const size_t domains = domains_.size();
  // One bar per step plus each domain's first bar; S − 2L + 1 per domain.
  EXPECT_EQ(trace.bars(), static_cast<size_t>(r->steps) + domains);
  EXPECT_EQ(trace.bars(), static_cast<size_t>(domains_[0].size() - 4 + 1 +
                                              domains_[1].size() - 4 + 1));
  ASSERT_EQ(trace.row.size(), trace.bars());
  ASSERT_EQ(trace.domain.size(), trace.bars());
  ASSERT_EQ(trace.cash.size(), trace.bars());
  ASSERT_EQ(trace.buy_and_hold.size(), trace.bars());
  ASSERT_EQ(trace.holdings.size(), trace.bars() * kAssets);
  EXPECT_EQ(trace.num_assets, kAssets);

  std::vector<double> log_returns;
  for (size_t k = 0; k < trace.bars(); ++k) {
    if (k == 0 || trace.domain[k] != trace.domain[k - 1]) {
      // A domain starts at the initial capital, all cash, on its reset row.
      EXPECT_EQ(trace.value[k], env_.initial_capital);
      EXPECT_EQ(trace.cash[k], env_.initial_capital);
      EXPECT_EQ(trace.row[k],
                domains_[trace.domain[k]].begin + env_.lookback - 1);
      continue;
    }
    EXPECT_EQ(trace.row[k], trace.row[k - 1] + 1);
    log_returns.push_back(std::log(std::max(trace.value[k], 1e-12) /
                                   std::max(trace.value[k - 1], 1e-12)));
  }
  ASSERT_EQ(log_returns.size(), r->log_returns.size());
  for (size_t t = 0; t < log_returns.size(); ++t) {
    ASSERT_EQ(log_returns[t], r->log_returns[t]) << "return " << t;
  }
  EXPECT_EQ(trace.domain.front(), 0);
  EXPECT_EQ(trace.domain.back(), 1);
  EXPECT_EQ(trace.row.back(), domains_[1].end - env_.lookback - 1);
}

TEST_F(EvaluationTraceTest, CashPlusHoldingsAtTheCloseAddUpToTheValue) {
  EvaluationTrace trace;
  absl::StatusOr<EvaluationResult> r =
      EvaluateActions(market_, env_, domains_, RandomPolicy(5), &trace);
  ASSERT_TRUE(r.ok()) << r.status();
  double invested_bars = 0;
  for (size_t k = 0; k < trace.bars(); ++k) {
    const double* p = market_->price.data() + trace.row[k] * kAssets;
    double stocks = 0;
    for (int i = 0; i < kAssets; ++i) {
      const float h = trace.holdings[k * kAssets + i];
      EXPECT_GE(h, 0.0f);
      stocks += static_cast<double>(h) * p[i];
    }
    EXPECT_GE(trace.cash[k], 0.0);
    EXPECT_NEAR(trace.cash[k] + stocks, trace.value[k], 1e-12 * trace.value[k])
        << "bar " << k;
    if (stocks > 0) ++invested_bars;
  }
  EXPECT_GT(invested_bars, 0);
  // The exposure is the mean over the steps of the invested share.
  double exposure = 0;
  for (size_t k = 0; k < trace.bars(); ++k) {
    if (k == 0 || trace.domain[k] != trace.domain[k - 1]) continue;
    exposure += 1 - trace.cash[k] / trace.value[k];
  }
  EXPECT_NEAR(exposure / static_cast<double>(r->steps), r->exposure, 1e-12);
}

TEST_F(EvaluationTraceTest, BuyAndHoldIsTheBenchmarkSeries) {
  EvaluationTrace trace;
  absl::StatusOr<EvaluationResult> r =
      EvaluateActions(market_, env_, domains_, RandomPolicy(7), &trace);
  ASSERT_TRUE(r.ok()) << r.status();
  double bench_return = 0;
  size_t begin = 0;
  for (size_t k = 1; k <= trace.bars(); ++k) {
    if (k < trace.bars() && trace.domain[k] == trace.domain[k - 1]) continue;
    // An account that starts in cash, like the policy's: the capital at the
    // domain's first bar, then the coins bought there (fees and slippage
    // paid in the first bar's return).
    const std::vector<double> expected = env::BuyAndHoldAccount(
        market_->price, kAssets, trace.row[begin], trace.row[k - 1] + 1,
        env_.initial_capital, env_.buy_fee, env_.slippage_bps);
    ASSERT_EQ(expected.size(), k - begin);
    ASSERT_EQ(expected.front(), env_.initial_capital);
    ASSERT_EQ(trace.value[begin], env_.initial_capital);
    for (size_t j = 0; j < expected.size(); ++j) {
      ASSERT_EQ(trace.buy_and_hold[begin + j], expected[j]);
    }
    // Domains weigh by their steps.
    bench_return += (expected.back() / expected.front() - 1) *
                    static_cast<double>(expected.size() - 1) /
                    static_cast<double>(r->steps);
    begin = k;
  }
  EXPECT_NEAR(bench_return, r->benchmark_return, 1e-12);
}

TEST_F(EvaluationTraceTest, TracingChangesNothingAndReplacesAnOldTrace) {
  absl::StatusOr<EvaluationResult> plain =
      EvaluateActions(market_, env_, domains_, RandomPolicy(9));
  EvaluationTrace trace;
  trace.value.assign(5, -1.0);  // left over from an earlier use
  absl::StatusOr<EvaluationResult> traced =
      EvaluateActions(market_, env_, domains_, RandomPolicy(9), &trace);
  ASSERT_TRUE(plain.ok() && traced.ok());
  EXPECT_EQ(plain->log_returns, traced->log_returns);
  EXPECT_EQ(plain->sharpe, traced->sharpe);
  EXPECT_EQ(plain->trades, traced->trades);
  EXPECT_EQ(plain->fees, traced->fees);
  EXPECT_EQ(plain->turnover, traced->turnover);
  EXPECT_EQ(trace.bars(), static_cast<size_t>(traced->steps) + 2);
  for (double v : trace.value) EXPECT_GT(v, 0.0);
}

// With a decision every k bars (env option decision_bars) the policy is
// asked once per k bars, and the evaluation still records every bar: the
// same rows as one-bar steps, values that reproduce the log returns, the
// holdings constant between decisions, and the Sharpe over every bar.
TEST_F(EvaluationTraceTest, ADecisionIntervalStillRecordsEveryBar) {
  env::EnvOptions daily = env_;
  daily.decision_bars = 7;
  int64_t decisions = 0;
  ActionFunction random = RandomPolicy(13);
  ActionFunction counted = [&](const float* obs, int copies, float* actions) {
    ++decisions;
    random(obs, copies, actions);
  };
  EvaluationTrace trace, every_bar;
  absl::StatusOr<EvaluationResult> r =
      EvaluateActions(market_, daily, domains_, counted, &trace);
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<EvaluationResult> one =
      EvaluateActions(market_, env_, domains_, RandomPolicy(13), &every_bar);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(trace.row, every_bar.row);
  ASSERT_EQ(trace.domain, every_bar.domain);
  EXPECT_EQ(trace.bars(), static_cast<size_t>(r->steps) + domains_.size());
  // The longer domain sets the number of calls: ⌈bars / 7⌉.
  const int64_t longest = domains_[1].size() - 2 * env_.lookback;
  EXPECT_EQ(decisions, (longest + 6) / 7);
  ASSERT_GT(r->trades, 0);
  std::vector<double> log_returns;
  int moves = 0;
  for (size_t k = 0; k < trace.bars(); ++k) {
    if (k == 0 || trace.domain[k] != trace.domain[k - 1]) continue;
    log_returns.push_back(std::log(std::max(trace.value[k], 1e-12) /
                                   std::max(trace.value[k - 1], 1e-12)));
    // Bar j of a domain (j ≥ 1) is the first of a step when j ≡ 1 mod 7;
    // only there may the holdings change.
    size_t first = k;
    while (first > 0 && trace.domain[first - 1] == trace.domain[k]) --first;
    const size_t j = k - first;
    bool moved = false;
    for (int i = 0; i < kAssets; ++i) {
      moved |= trace.holdings[k * kAssets + i] !=
               trace.holdings[(k - 1) * kAssets + i];
    }
    if (moved) {
      ++moves;
      EXPECT_EQ(j % 7, 1u) << "bar " << k;
    }
    EXPECT_EQ(trace.cash[k] != trace.cash[k - 1], moved) << "bar " << k;
  }
  EXPECT_GT(moves, 5);
  ASSERT_EQ(log_returns.size(), r->log_returns.size());
  for (size_t t = 0; t < log_returns.size(); ++t) {
    ASSERT_EQ(log_returns[t], r->log_returns[t]) << "return " << t;
  }
  // Random targets redrawn every 7 bars trade far less than every bar.
  EXPECT_LT(r->turnover, 0.5 * one->turnover);
}

}  // namespace
}  // namespace ristretto::learner
