// A trial's refits combined (capital split equally among them, never
// rebalanced): the coordinator combines their lockbox log returns
// (coordinator::CombineRefits), the backtest their traces
// (learner::CombineEqualCapital). Both must give the same account, and
// it must be the one the refits' own accounts imply.
#include "coordinator/store/refits.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "env/dataset.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/evaluation.h"

namespace ristretto::coordinator {
namespace {

constexpr int kAssets = 3;
constexpr int kRefits = 3;

class RefitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env::SyntheticMarketOptions synth;
    synth.num_assets = kAssets;
    synth.num_rows = 700;
    synth.seed = 5;
    auto dataset = env::GenerateSyntheticDataset(synth);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    auto market = env::MarketData::FromDataset(*dataset);
    ASSERT_TRUE(market.ok()) << market.status();
    market_ = *market;
    env_.lookback = 2;
    env_.slippage_bps = 5;
    const int64_t T = market_->num_rows;
    // Two lockbox domains (a gap in the data between them).
    domains_ = {env::Domain{T / 3, T / 3 + 120}, env::Domain{T / 2, T}};
    for (const env::Domain& d : domains_) {
      domain_steps_.push_back(d.size() - 2 * env_.lookback);
    }
    bpy_ = env::BarsPerYear(market_->interval_seconds);
    for (int k = 0; k < kRefits; ++k) {
      auto rng = std::make_shared<Rng>(100 + k);
      learner::EvaluationTrace trace;
      absl::StatusOr<learner::EvaluationResult> r = learner::EvaluateActions(
          market_, env_, domains_,
          [rng](const float*, int copies, float* actions) {
            for (int i = 0; i < copies * kAssets; ++i) {
              actions[i] = static_cast<float>(rng->Uniform() * 2.0 - 1.0);
            }
          },
          &trace);
      ASSERT_TRUE(r.ok()) << r.status();
      results_.push_back(*r);
      traces_.push_back(std::move(trace));
    }
  }

  std::vector<RefitRow> Rows() const {
    std::vector<RefitRow> rows;
    for (int k = 0; k < kRefits; ++k) {
      RefitRow row;
      row.refit = k;
      row.run_id = 10 + k;
      row.policy.sharpe = results_[k].sharpe;
      row.policy.log_returns = results_[k].log_returns;
      row.policy.trades = results_[k].trades;
      row.policy.fees = results_[k].fees;
      row.policy.turnover = results_[k].turnover;
      row.policy.exposure = results_[k].exposure;
      row.policy.env_steps = 1000 * (k + 1);
      rows.push_back(row);
    }
    return rows;
  }

  std::shared_ptr<const env::MarketData> market_;
  env::EnvOptions env_;
  std::vector<env::Domain> domains_;
  std::vector<int64_t> domain_steps_;
  double bpy_ = 0;
  std::vector<learner::EvaluationResult> results_;
  std::vector<learner::EvaluationTrace> traces_;
};

TEST_F(RefitsTest, TheSplitAccountIsTheMeanOfTheRefitsAccounts) {
  learner::EvaluationResult combined;
  learner::EvaluationTrace trace;
  ASSERT_TRUE(
      learner::CombineEqualCapital(results_, traces_, bpy_, &combined, &trace)
          .ok());
  ASSERT_EQ(trace.bars(), traces_[0].bars());
  double mean_return = 0, mean_fees = 0;
  int64_t trades = 0;
  for (int k = 0; k < kRefits; ++k) {
    mean_return += results_[k].total_return / kRefits;
    mean_fees += results_[k].fees / kRefits;
    trades += results_[k].trades;
  }
  for (size_t b = 0; b < trace.bars(); ++b) {
    double value = 0;
    for (const learner::EvaluationTrace& t : traces_) value += t.value[b];
    EXPECT_NEAR(trace.value[b], value / kRefits, 1e-9 * value);
  }
  // Never rebalanced: each domain's return is the refits' mean return, and
  // so is the step-weighted mean over domains.
  EXPECT_NEAR(combined.total_return, mean_return, 1e-12);
  EXPECT_NEAR(combined.fees, mean_fees, 1e-9);
  EXPECT_EQ(combined.trades, trades);
  EXPECT_EQ(combined.benchmark_sharpe, results_[0].benchmark_sharpe);
  EXPECT_EQ(combined.log_returns.size(), results_[0].log_returns.size());
  // Not any one refit's.
  for (int k = 0; k < kRefits; ++k) {
    EXPECT_NE(combined.sharpe, results_[k].sharpe);
  }
  // One policy: its own result and trace, untouched.
  learner::EvaluationResult one;
  learner::EvaluationTrace one_trace;
  ASSERT_TRUE(learner::CombineEqualCapital({results_[1]}, {traces_[1]}, bpy_,
                                           &one, &one_trace)
                  .ok());
  EXPECT_EQ(one.sharpe, results_[1].sharpe);
  EXPECT_EQ(one_trace.value, traces_[1].value);
}

TEST_F(RefitsTest, TheCoordinatorAndTheBacktestCombineAlike) {
  learner::EvaluationResult backtest;
  learner::EvaluationTrace trace;
  ASSERT_TRUE(
      learner::CombineEqualCapital(results_, traces_, bpy_, &backtest, &trace)
          .ok());
  absl::StatusOr<FoldMetrics> lockbox =
      CombineRefits(Rows(), domain_steps_, bpy_);
  ASSERT_TRUE(lockbox.ok()) << lockbox.status();
  EXPECT_NEAR(lockbox->sharpe, backtest.sharpe, 1e-9);
  EXPECT_NEAR(lockbox->sortino, backtest.sortino, 1e-9);
  EXPECT_NEAR(lockbox->total_return, backtest.total_return, 1e-12);
  EXPECT_NEAR(lockbox->calmar, backtest.calmar,
              1e-9 * std::abs(backtest.calmar) + 1e-12);
  EXPECT_NEAR(lockbox->max_drawdown, backtest.max_drawdown, 1e-12);
  EXPECT_NEAR(lockbox->fees, backtest.fees, 1e-9);
  EXPECT_EQ(lockbox->trades, backtest.trades);
  EXPECT_EQ(lockbox->env_steps, 2000);  // the refits' mean
  EXPECT_EQ(lockbox->fold, kLockboxFold);
  ASSERT_EQ(lockbox->log_returns.size(), backtest.log_returns.size());
  for (size_t i = 0; i < backtest.log_returns.size(); ++i) {
    EXPECT_NEAR(lockbox->log_returns[i], backtest.log_returns[i], 1e-12) << i;
  }
}

TEST_F(RefitsTest, MismatchedInputIsRefusedNamingIt) {
  std::vector<RefitRow> rows = Rows();
  rows[2].policy.log_returns.pop_back();
  absl::StatusOr<FoldMetrics> bad = CombineRefits(rows, domain_steps_, bpy_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("refit 2 (run 12)"));
  EXPECT_EQ(CombineRefits({}, domain_steps_, bpy_).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Traces of other bars cannot be combined.
  std::vector<learner::EvaluationTrace> traces = traces_;
  traces[1].row[3] += 1;
  learner::EvaluationResult r;
  learner::EvaluationTrace t;
  EXPECT_EQ(learner::CombineEqualCapital(results_, traces, bpy_, &r, &t).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ristretto::coordinator
