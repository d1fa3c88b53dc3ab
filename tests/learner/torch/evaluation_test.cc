// EvaluateActions (learner/evaluation.h, no torch): log returns, turnover
// and exposure on hand-checkable policies; the JSON form of an evaluation;
// the best-score rule.
#include "learner/evaluation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "env/dataset.h"
#include "env/metrics.h"
#include "env/synthetic.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

constexpr int kAssets = 3;

class EvaluationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env::SyntheticMarketOptions synth;
    synth.num_assets = kAssets;
    synth.num_rows = 700;
    synth.seed = 4;
    auto dataset = env::GenerateSyntheticDataset(synth);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    auto market = env::MarketData::FromDataset(*dataset);
    ASSERT_TRUE(market.ok());
    market_ = *market;
    env_.lookback = 2;
    const int64_t T = market_->num_rows;
    first_ = env::Domain{T / 2, T / 2 + 120};
    second_ = env::Domain{T / 2 + 150, T};
  }

  std::shared_ptr<const env::MarketData> market_;
  env::EnvOptions env_;
  env::Domain first_, second_;
};

// A deterministic function of each copy's own observation (D values, F
// features per bar): buy asset i while its first feature rises, sell while
// it falls.
ActionFunction ObservationPolicy(int D, int F) {
  return [D, F](const float* obs, int copies, float* actions) {
    for (int b = 0; b < copies; ++b) {
      const float* now = obs + static_cast<size_t>(b) * D + 1 + kAssets;
      const float* before = now + F;
      for (int i = 0; i < kAssets; ++i) {
        actions[b * kAssets + i] = now[i] > before[i] ? 1.0f : -1.0f;
      }
    }
  };
}

TEST_F(EvaluationTest, AllCashPolicyHasNoTurnoverNoExposureAndFlatReturns) {
  // Target weights (the default model): the lowest logit (the action clip)
  // gives every asset a weight of exp(-5000) = 0.
  absl::StatusOr<EvaluationResult> r = EvaluateActions(
      market_, env_, {first_, second_},
      [](const float*, int copies, float* actions) {
        std::fill(actions, actions + copies * kAssets, -1000.0f);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, first_.size() - 4 + second_.size() - 4);
  EXPECT_EQ(r->turnover, 0.0);
  EXPECT_EQ(r->exposure, 0.0);
  ASSERT_EQ(static_cast<int64_t>(r->log_returns.size()), r->steps);
  for (double x : r->log_returns) EXPECT_EQ(x, 0.0);
  // The fallback score without an objective.
  EXPECT_DOUBLE_EQ(r->score, r->sharpe - r->benchmark_sharpe);
}

TEST_F(EvaluationTest, BuyOncePolicyIsExposedAndItsTurnoverMatchesTheFees) {
  // Buy on the first bar, then hold (forced trims sell 5 % every 48 bars).
  // Buy and sell fees are equal, so traded value = fees / fee exactly.
  int calls = 0;
  absl::StatusOr<EvaluationResult> r = EvaluateActions(
      market_, env_, {first_}, [&](const float*, int copies, float* actions) {
        const float a = calls++ == 0 ? 1.0f : 0.0f;
        std::fill(actions, actions + copies * kAssets, a);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GT(r->trades, 0);
  EXPECT_GT(r->exposure, 0.0);
  EXPECT_LE(r->exposure, 1.0);
  EXPECT_GT(r->turnover, 0.0);
  ASSERT_EQ(env_.buy_fee, env_.sell_fee);
  // Turnover is valued at the close, fees on the filled notional: buys at
  // close·(1 + s), sells at close·(1 − s), so fees / fee lies between
  // turnover·(1 − s) and turnover·(1 + s) (the default s = 5 bps) …
  const double s = env_.slippage_bps / 1e4;
  ASSERT_GT(s, 0.0);
  const double filled = r->fees / env_.buy_fee / env_.initial_capital;
  EXPECT_GT(filled, r->turnover * (1 - s));
  EXPECT_LT(filled, r->turnover * (1 + s));
  // … and equals it without slippage (fills at the close).
  env::EnvOptions no_slippage = env_;
  no_slippage.slippage_bps = 0.0;
  calls = 0;
  absl::StatusOr<EvaluationResult> at_close =
      EvaluateActions(market_, no_slippage, {first_},
                      [&](const float*, int copies, float* actions) {
                        const float a = calls++ == 0 ? 1.0f : 0.0f;
                        std::fill(actions, actions + copies * kAssets, a);
                      });
  ASSERT_TRUE(at_close.ok()) << at_close.status();
  EXPECT_NEAR(at_close->turnover,
              at_close->fees / env_.buy_fee / env_.initial_capital,
              1e-6 * at_close->turnover);
  // The log returns add up to the slice's total return.
  ASSERT_EQ(static_cast<int64_t>(r->log_returns.size()), r->steps);
  const double sum =
      std::accumulate(r->log_returns.begin(), r->log_returns.end(), 0.0);
  EXPECT_NEAR(std::exp(sum) - 1.0, r->total_return, 1e-9);
}

TEST_F(EvaluationTest, DomainsAreConcatenatedInOrderAndAveraged) {
  env_.norm_action = 5;  // orders above the assets' minimum sizes
  const int F = static_cast<int>(market_->num_features);
  const ActionFunction policy =
      ObservationPolicy(1 + kAssets + F * env_.lookback, F);
  absl::StatusOr<EvaluationResult> a =
      EvaluateActions(market_, env_, {first_}, policy);
  absl::StatusOr<EvaluationResult> b =
      EvaluateActions(market_, env_, {second_}, policy);
  absl::StatusOr<EvaluationResult> both =
      EvaluateActions(market_, env_, {first_, second_}, policy);
  ASSERT_TRUE(a.ok() && b.ok() && both.ok());
  ASSERT_GT(a->turnover, 0.0);
  ASSERT_GT(b->exposure, 0.0);
  std::vector<double> expected = a->log_returns;
  expected.insert(expected.end(), b->log_returns.begin(), b->log_returns.end());
  EXPECT_EQ(both->log_returns, expected);
  // Turnover and return are means over domains weighted by their steps;
  // Sharpe is over every bar of both.
  const double wa =
      static_cast<double>(a->steps) / static_cast<double>(a->steps + b->steps);
  EXPECT_NEAR(both->turnover, wa * a->turnover + (1 - wa) * b->turnover, 1e-12);
  EXPECT_NEAR(both->total_return,
              wa * a->total_return + (1 - wa) * b->total_return, 1e-12);
  std::vector<double> simple;
  simple.reserve(expected.size());
  for (double x : expected) simple.push_back(std::expm1(x));
  EXPECT_NEAR(
      both->sharpe,
      env::SharpeRatio(simple, env::BarsPerYear(market_->interval_seconds)),
      1e-9 * std::max(1.0, std::abs(both->sharpe)));
  // Exposure is the mean over all bars, not over domains.
  EXPECT_NEAR(both->exposure,
              (a->exposure * static_cast<double>(a->steps) +
               b->exposure * static_cast<double>(b->steps)) /
                  static_cast<double>(a->steps + b->steps),
              1e-12);
  EXPECT_DOUBLE_EQ(both->fees, a->fees + b->fees);
}

TEST(EvaluationJsonTest, RoundTripsEveryFieldAndNonFiniteNumbers) {
  EvaluationResult e;
  e.sharpe = 1.0 / 3.0;
  e.sortino = 2.5;
  e.max_drawdown = 0.125;
  e.calmar = std::numeric_limits<double>::quiet_NaN();
  e.total_return = -0.01;
  e.benchmark_sharpe = 0.7;
  e.benchmark_return = 0.02;
  e.score = 0.1 + 1.0 / 3.0;
  e.steps = 3;
  e.trades = 7;
  e.fees = 1.25;
  e.at_env_steps = 4096;
  e.turnover = 3.5;
  e.exposure = 0.4;
  e.log_returns = {0.001, -0.002, 1e-17};
  absl::StatusOr<EvaluationResult> back =
      EvaluationFromJson(EvaluationToJson(e, "sharpe"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->sharpe, e.sharpe);
  EXPECT_EQ(back->sortino, e.sortino);
  EXPECT_EQ(back->max_drawdown, e.max_drawdown);
  EXPECT_TRUE(std::isnan(back->calmar));
  EXPECT_EQ(back->total_return, e.total_return);
  EXPECT_EQ(back->benchmark_sharpe, e.benchmark_sharpe);
  EXPECT_EQ(back->benchmark_return, e.benchmark_return);
  EXPECT_EQ(back->score, e.score);
  EXPECT_EQ(back->steps, e.steps);
  EXPECT_EQ(back->trades, e.trades);
  EXPECT_EQ(back->fees, e.fees);
  EXPECT_EQ(back->at_env_steps, e.at_env_steps);
  EXPECT_EQ(back->turnover, e.turnover);
  EXPECT_EQ(back->exposure, e.exposure);
  EXPECT_EQ(back->log_returns, e.log_returns);
  EXPECT_EQ(EvaluationFromJson("[1, 2]").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(EvaluationFromJson("{\"steps\": \"many\"}").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(CombineSharesTest, ScoresTheMeanAccountAndAveragesItsCosts) {
  // Two shares over two domains (2 steps, then 1).
  const std::vector<double> a = {std::log(1.1), std::log(0.9), std::log(1.2)};
  const std::vector<double> b = {0.0, 0.0, std::log(0.5)};
  ShareResult sa, sb;
  sa.log_returns = a;
  sa.turnover = 2.0;
  sa.fees = 1.0;
  sa.exposure = 0.5;
  sa.trades = 3;
  sa.env_steps = 3;
  sb.log_returns = b;
  sb.turnover = 4.0;
  sb.fees = 3.0;
  sb.exposure = 1.0;
  sb.trades = 5;
  sb.env_steps = 4;
  const std::vector<int64_t> steps = {2, 1};
  absl::StatusOr<SplitResult> split = CombineShares({sa, sb}, steps, 8760);
  ASSERT_TRUE(split.ok()) << split.status();
  // Domain 1: values 1, (1.1 + 1) / 2, (0.99 + 1) / 2; domain 2: 1,
  // (1.2 + 0.5) / 2. Each share restarts from C0 at a domain's start.
  ASSERT_EQ(split->summary.log_returns.size(), 3u);
  EXPECT_NEAR(split->summary.log_returns[0], std::log(1.05), 1e-12);
  EXPECT_NEAR(split->summary.log_returns[1], std::log(0.995 / 1.05), 1e-12);
  EXPECT_NEAR(split->summary.log_returns[2], std::log(0.85), 1e-12);
  EXPECT_EQ(split->summary.steps, 3);
  EXPECT_DOUBLE_EQ(split->turnover, 3.0);
  EXPECT_DOUBLE_EQ(split->fees, 2.0);
  EXPECT_DOUBLE_EQ(split->exposure, 0.75);
  EXPECT_EQ(split->trades, 8);
  EXPECT_EQ(split->env_steps, 4);  // 3.5, rounded
}

TEST(CombineSharesTest, RefusesNoShareAndAShareOfTheWrongLength) {
  const std::vector<int64_t> steps = {2, 1};
  EXPECT_EQ(CombineShares({}, steps, 8760).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<double> three = {0.0, 0.0, 0.0};
  const std::vector<double> two = {0.0, 0.0};
  ShareResult ok, short_one;
  ok.log_returns = three;
  short_one.log_returns = two;
  const absl::Status s =
      CombineShares({ok, ok, short_one}, steps, 8760).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("share 2 has 2 bars, expected 3"),
            absl::string_view::npos)
      << s;
  const std::vector<int64_t> negative = {4, -1};
  EXPECT_EQ(CombineShares({ok}, negative, 8760).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BestScoreTest, FirstAlwaysThenOnlyStrictlyBetter) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(IsBetterScore(-5.0, false, 0.0));
  EXPECT_TRUE(IsBetterScore(nan, false, 0.0));
  EXPECT_TRUE(IsBetterScore(1.5, true, 1.0));
  EXPECT_FALSE(IsBetterScore(1.0, true, 1.0));
  EXPECT_FALSE(IsBetterScore(0.5, true, 1.0));
  EXPECT_FALSE(IsBetterScore(nan, true, 1.0));
  EXPECT_TRUE(IsBetterScore(-1.0, true, nan));
}

}  // namespace
}  // namespace ristretto::learner
