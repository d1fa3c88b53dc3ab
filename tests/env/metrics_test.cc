#include "env/metrics.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::env {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr double kFiveMinuteBarsPerYear = 105120.0;  // 365·24·12
constexpr double kHourlyBarsPerYear = 8760.0;        // 365·24

// Relative closeness for results whose inputs carry decimal rounding.
void ExpectRelNear(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected))
      << "expected " << expected;
}

// The running example: values {100, 110, 99, 108.9}.
//   r = {110/100 − 1, 99/110 − 1, 108.9/99 − 1} = {0.1, −0.1, 0.1}
//   a = log1p(0.1)  = 0.09531017980432486004
//   b = log1p(−0.1) = −0.10536051565782630123
//   mean = (2a + b)/3 = 0.02841994798360780629
//   deviations a − mean = (a − b)/3 (twice), b − mean = −2(a − b)/3, so
//   var (ddof 1) = (2 + 4)·((a − b)/3)² / 2 = 3·((a − b)/3)²,
//   std = √3·(a − b)/3 = 0.11585728004354238632
//   Sharpe per bar = mean/std = 0.24530135674622086628
//   downside = sqrt(b²/3) = |b|/√3 (over all three returns)
//   Sortino per bar = mean·√3/|b| = 0.46720342576851190645
const std::vector<double> kExample = {100.0, 110.0, 99.0, 108.9};

TEST(MetricsTest, BarReturnsAreRatiosMinusOne) {
  EXPECT_THAT(BarReturns(kExample),
              ElementsAre(DoubleNear(0.1, 1e-15), DoubleNear(-0.1, 1e-15),
                          DoubleNear(0.1, 1e-15)));
  EXPECT_THAT(BarReturns({50.0, 25.0}), ElementsAre(-0.5));
  EXPECT_THAT(BarReturns({42.0}), IsEmpty());
  EXPECT_THAT(BarReturns({}), IsEmpty());
}

TEST(MetricsTest, SharpeOfRunningExampleMatchesHandComputation) {
  // Per bar (bars_per_year = 1) and annualised hourly: 0.2453… · √8760.
  EXPECT_NEAR(SharpeRatio({0.1, -0.1, 0.1}, 1.0), 0.24530135674622086628,
              1e-12);
  ExpectRelNear(SharpeRatio(BarReturns(kExample), 1.0), 0.24530135674622086628,
                1e-12);
  ExpectRelNear(SharpeRatio(BarReturns(kExample), kHourlyBarsPerYear),
                22.958949001308000719, 1e-12);
}

TEST(MetricsTest, SharpeUsesSampleStdWithOneDegreeOfFreedom) {
  // r = {0.02, −0.01, 0.03, −0.02}:
  //   x = {0.0198026272961797, −0.0100503358535014, 0.0295588022415444,
  //        −0.0202027073175194}
  //   mean = 0.00477709659167580654, Σ(x − mean)² / 3 → std =
  //   0.02369066527929555801 (with /4 it would be 0.0205167…)
  //   Sharpe per bar = 0.20164467883688969673.
  EXPECT_NEAR(SharpeRatio({0.02, -0.01, 0.03, -0.02}, 1.0),
              0.20164467883688969673, 1e-12);
}

TEST(MetricsTest, SortinoUsesDownsideDeviationOverAllReturns) {
  // Running example: downside = |b|/√3, not |b| (only the negative ones).
  EXPECT_NEAR(SortinoRatio({0.1, -0.1, 0.1}, 1.0), 0.46720342576851190645,
              1e-12);
  ExpectRelNear(SortinoRatio(BarReturns(kExample), kHourlyBarsPerYear),
                43.727844671290862949, 1e-12);
  // r = {0.02, −0.01, 0.03, −0.02}: downside = sqrt((x₁² + x₃²)/4) =
  // 0.01128227186480553669; Sortino = 0.00477709659167580654 / that
  // = 0.42341619213925452221.
  EXPECT_NEAR(SortinoRatio({0.02, -0.01, 0.03, -0.02}, 1.0),
              0.42341619213925452221, 1e-12);
}

TEST(MetricsTest, SortinoIsZeroWithoutDownside) {
  EXPECT_EQ(SortinoRatio({0.01, 0.02, 0.0}, kHourlyBarsPerYear), 0.0);
  // An all-negative series: mean/downside with x = log1p(−0.1) twice is
  // b / |b| = −1, times √bpy.
  EXPECT_NEAR(SortinoRatio({-0.1, -0.1}, kHourlyBarsPerYear),
              -std::sqrt(kHourlyBarsPerYear), 1e-12);
}

TEST(MetricsTest, FiveMinuteSharpeIsSqrtTwelveTimesHourlySharpe) {
  // Same per-bar returns; 105120 / 8760 = 12, so the ratio is √12.
  const std::vector<double> r = {0.02, -0.01, 0.03, -0.02};
  const double five_minute = SharpeRatio(r, kFiveMinuteBarsPerYear);
  const double hourly = SharpeRatio(r, kHourlyBarsPerYear);
  ExpectRelNear(five_minute, 65.377670515396837582, 1e-12);
  ExpectRelNear(hourly, 18.872907835527511786, 1e-12);
  ExpectRelNear(five_minute / hourly, std::sqrt(12.0), 1e-14);
  ExpectRelNear(SortinoRatio(r, kFiveMinuteBarsPerYear) /
                    SortinoRatio(r, kHourlyBarsPerYear),
                std::sqrt(12.0), 1e-14);
}

TEST(MetricsTest, MaxDrawdownOfRunningExample) {
  // Peak 110, trough 99: 1 − 99/110 = 0.1; then 1 − 108.9/110 = 0.01.
  EXPECT_NEAR(MaxDrawdown(kExample), 0.1, 1e-15);
}

TEST(MetricsTest, MaxDrawdownTakesTheLargerOfTwoDrawdownsWhenItComesLater) {
  // First: 100 → 90 is 0.1; new peak 120 → 84 is 1 − 84/120 = 0.3.
  EXPECT_NEAR(MaxDrawdown({100.0, 90.0, 120.0, 84.0, 130.0}), 0.3, 1e-15);
  // Larger first: 100 → 50 is 0.5; 200 → 180 is 0.1.
  EXPECT_DOUBLE_EQ(MaxDrawdown({100.0, 50.0, 200.0, 180.0}), 0.5);
}

TEST(MetricsTest, MaxDrawdownStaysWithinZeroAndOne) {
  EXPECT_EQ(MaxDrawdown({1.0, 2.0, 3.0}), 0.0);  // never below its peak
  EXPECT_EQ(MaxDrawdown({100.0, 0.0}), 1.0);     // total loss
  EXPECT_EQ(MaxDrawdown({100.0, -5.0}), 1.0);    // clamped
}

TEST(MetricsTest, AnnualisedReturnCompoundsOverBarsPerYear) {
  // Running example: v_end/v_0 = 1.089 over T − 1 = 3 bars.
  //   bpy = 3 → 1.089¹ − 1 = 0.089;  bpy = 6 → 1.089² − 1 = 0.185921.
  EXPECT_NEAR(AnnualisedReturn(kExample, 3.0), 0.089, 1e-14);
  EXPECT_NEAR(AnnualisedReturn(kExample, 6.0), 0.185921, 1e-14);
  // Halving: 100 → 50 over 2 bars with bpy 1 → 0.5^(1/2) − 1.
  EXPECT_NEAR(AnnualisedReturn({100.0, 75.0, 50.0}, 1.0), std::sqrt(0.5) - 1.0,
              1e-15);
  EXPECT_EQ(AnnualisedReturn({100.0, 0.0}, 1.0), -1.0);  // total loss
}

TEST(MetricsTest, AnnualisedReturnFiveMinuteVersusHourly) {
  // {100, 100.001, 100.002}: ratio 1.00002 over 2 bars.
  //   5m: 1.00002^(105120/2) − 1 = 1.8610522825982269303
  //   1h: 1.00002^(8760/2) − 1   = 0.0915504579409183932
  // and log(1 + AR) scales exactly with bars per year: ratio 12.
  const std::vector<double> v = {100.0, 100.001, 100.002};
  const double five_minute = AnnualisedReturn(v, kFiveMinuteBarsPerYear);
  const double hourly = AnnualisedReturn(v, kHourlyBarsPerYear);
  ExpectRelNear(five_minute, 1.8610522825982269303, 1e-9);
  ExpectRelNear(hourly, 0.0915504579409183932, 1e-9);
  ExpectRelNear(std::log1p(five_minute) / std::log1p(hourly), 12.0, 1e-12);
}

TEST(MetricsTest, CalmarIsAnnualisedReturnOverMaxDrawdown) {
  // Running example with bpy = 6: 0.185921 / 0.1 = 1.85921.
  EXPECT_NEAR(CalmarRatio(kExample, 6.0), 1.85921, 1e-13);
  // No drawdown → 0, even with a positive return.
  EXPECT_EQ(CalmarRatio({100.0, 101.0, 102.0}, 6.0), 0.0);
}

TEST(MetricsTest, SummarizeCollectsEveryMetric) {
  const PerformanceSummary s = Summarize(kExample, kHourlyBarsPerYear);
  EXPECT_EQ(s.bars, 4);
  EXPECT_NEAR(s.total_return, 0.089, 1e-14);
  ExpectRelNear(s.sharpe, 22.958949001308000719, 1e-12);
  ExpectRelNear(s.sortino, 43.727844671290862949, 1e-12);
  EXPECT_NEAR(s.max_drawdown, 0.1, 1e-15);
  // 1.089^(8760/3) − 1 overflows no double but is astronomically large;
  // compare with the definition instead.
  EXPECT_EQ(s.annualised_return, AnnualisedReturn(kExample, 8760.0));
  EXPECT_EQ(s.calmar, s.annualised_return / s.max_drawdown);
}

TEST(MetricsTest, DegenerateSeriesGiveZeros) {
  // Constant: every return is exactly 0 → std 0, no downside, no drawdown.
  const PerformanceSummary constant = Summarize({5.0, 5.0, 5.0, 5.0}, 8760.0);
  EXPECT_EQ(constant.bars, 4);
  EXPECT_EQ(constant.total_return, 0.0);
  EXPECT_EQ(constant.sharpe, 0.0);
  EXPECT_EQ(constant.sortino, 0.0);
  EXPECT_EQ(constant.max_drawdown, 0.0);
  EXPECT_EQ(constant.annualised_return, 0.0);
  EXPECT_EQ(constant.calmar, 0.0);

  // Single value: no returns at all.
  const PerformanceSummary single = Summarize({5.0}, 8760.0);
  EXPECT_EQ(single.bars, 1);
  EXPECT_EQ(single.total_return, 0.0);
  EXPECT_EQ(single.sharpe, 0.0);
  EXPECT_EQ(single.sortino, 0.0);
  EXPECT_EQ(single.max_drawdown, 0.0);
  EXPECT_EQ(single.annualised_return, 0.0);
  EXPECT_EQ(single.calmar, 0.0);

  const PerformanceSummary empty = Summarize({}, 8760.0);
  EXPECT_EQ(empty.bars, 0);
  EXPECT_EQ(empty.sharpe, 0.0);
  EXPECT_EQ(empty.max_drawdown, 0.0);
}

TEST(MetricsTest, SharpeIsZeroForFewerThanTwoReturnsOrIdenticalReturns) {
  EXPECT_EQ(SharpeRatio({}, 8760.0), 0.0);
  EXPECT_EQ(SharpeRatio({0.05}, 8760.0), 0.0);
  EXPECT_EQ(SortinoRatio({-0.05}, 8760.0), 0.0);
  // Three identical 0.05s: x = log1p(0.05) and a plain Σx/3 is off by one
  // ulp; the mean about the first element is exactly x, so the std is 0.
  EXPECT_EQ(SharpeRatio({0.05, 0.05, 0.05}, 8760.0), 0.0);
  // A geometric series: returns equal up to rounding only.
  EXPECT_EQ(
      SharpeRatio(BarReturns({100.0, 110.0, 121.0, 133.1, 146.41}), 8760.0),
      0.0);
}

// Prices, 3 rows × 3 assets (row-major), asset 1 priced 0 at row 0:
//   row 0: 10  0  4
//   row 1: 12  5  5
//   row 2:  8  6  2
// C0 = 300, fee 0.25 → each asset gets 100:
//   h0 = 100 / (10·1.25) = 8,  h1 = 0 (zero price),  h2 = 100 / (4·1.25) = 20
//   v0 = 8·10 + 0·0 + 20·4 = 160 (the 100 for asset 1 is never invested)
//   v1 = 8·12 + 0·5 + 20·5 = 196
//   v2 = 8·8  + 0·6 + 20·2 = 104
const std::vector<double> kPrices = {10, 0, 4, 12, 5, 5, 8, 6, 2};

TEST(MetricsTest, EqualWeightBuyAndHoldSkipsZeroPricedAsset) {
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 0, 3, 300.0, 0.25),
              ElementsAre(160.0, 196.0, 104.0));
}

TEST(MetricsTest, EqualWeightBuyAndHoldBuysAtTheFirstRowOfTheSlice) {
  // Rows [1,3): h0 = 100/(12·1.25) = 20/3, h1 = 100/(5·1.25) = 16,
  // h2 = 100/(5·1.25) = 16.
  //   v1 = 20/3·12 + 16·5 + 16·5 = 80 + 80 + 80 = 240
  //   v2 = 20/3·8  + 16·6 + 16·2 = 160/3 + 96 + 32 = 181.333…
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 1, 3, 300.0, 0.25),
              ElementsAre(DoubleNear(240.0, 1e-12),
                          DoubleNear(160.0 / 3.0 + 128.0, 1e-12)));
  // Default fee 0.0025, single row: value is C0 / 1.0025.
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 2, 3, 500.0, 0.0025),
              ElementsAre(DoubleNear(500.0 / 1.0025, 1e-12)));
}

TEST(MetricsTest, EqualWeightBuyAndHoldBuysAtTheSlippedPrice) {
  // 625 bps: s = 1/16, every coin costs p·(17/16)·1.25, so every holding
  // and every value is the zero-slippage one divided by 1.0625.
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 0, 3, 300.0, 0.25, 625.0),
              ElementsAre(DoubleNear(160.0 / 1.0625, 1e-12),
                          DoubleNear(196.0 / 1.0625, 1e-12),
                          DoubleNear(104.0 / 1.0625, 1e-12)));
  // The default 5 bps on one row: C0 / (1.0005 · 1.0025).
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 2, 3, 500.0, 0.0025, 5.0),
              ElementsAre(DoubleNear(500.0 / (1.0005 * 1.0025), 1e-12)));
  // 0 bps is the fee-only series, bit for bit.
  EXPECT_EQ(EqualWeightBuyAndHold(kPrices, 3, 1, 3, 300.0, 0.25, 0.0),
            EqualWeightBuyAndHold(kPrices, 3, 1, 3, 300.0, 0.25));
}

// The account starts in cash: C0, then the coins bought at the first row,
// so its first return pays the fee and the slippage.
TEST(MetricsTest, BuyAndHoldAccountStartsWithTheCapitalBeforeThePurchase) {
  EXPECT_THAT(BuyAndHoldAccount(kPrices, 3, 1, 3, 300.0, 0.25),
              ElementsAre(300.0, DoubleNear(160.0 / 3.0 + 128.0, 1e-12)));
  EXPECT_THAT(BuyAndHoldAccount(kPrices, 3, 0, 3, 300.0, 0.25, 625.0),
              ElementsAre(300.0, DoubleNear(196.0 / 1.0625, 1e-12),
                          DoubleNear(104.0 / 1.0625, 1e-12)));
  EXPECT_THAT(BuyAndHoldAccount(kPrices, 3, 0, 4, 300.0, 0.0), IsEmpty());
}

TEST(MetricsTest, EqualWeightBuyAndHoldRejectsBadShapesWithAnEmptySeries) {
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 0, 0, 3, 300.0, 0.0), IsEmpty());
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 2, 0, 3, 300.0, 0.0),
              IsEmpty());  // 9 prices are not rows of 2
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 0, 4, 300.0, 0.0), IsEmpty());
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 2, 1, 300.0, 0.0), IsEmpty());
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, -1, 2, 300.0, 0.0), IsEmpty());
  EXPECT_THAT(EqualWeightBuyAndHold(kPrices, 3, 1, 1, 300.0, 0.0), IsEmpty());
}

// Capital split equally, never rebalanced: each share compounds its own
// returns, and every domain starts again from 1.
TEST(MetricsTest, EqualCapitalValuesAverageTheSharesPerDomain) {
  const std::vector<double> a = {std::log(2.0), 0.0, std::log(1.5)};
  const std::vector<double> b = {0.0, std::log(0.5), std::log(0.5)};
  const std::vector<int64_t> steps = {2, 1};
  const std::vector<std::vector<double>> v = EqualCapitalValues(
      {absl::MakeConstSpan(a), absl::MakeConstSpan(b)}, steps);
  ASSERT_EQ(v.size(), 2U);
  EXPECT_THAT(
      v[0], ElementsAre(1.0, DoubleNear(1.5, 1e-12), DoubleNear(1.25, 1e-12)));
  EXPECT_THAT(v[1], ElementsAre(1.0, DoubleNear(1.0, 1e-12)));
  // One strategy: its own value series.
  EXPECT_THAT(EqualCapitalValues({absl::MakeConstSpan(a)}, {3})[0],
              ElementsAre(1.0, DoubleNear(2.0, 1e-12), DoubleNear(2.0, 1e-12),
                          DoubleNear(3.0, 1e-12)));
  // Lengths that disagree, or nothing to split.
  EXPECT_TRUE(EqualCapitalValues({absl::MakeConstSpan(a)}, {2}).empty());
  EXPECT_TRUE(EqualCapitalValues({}, {3}).empty());
}

TEST(MetricsTest, SummarizeDomainsPoolsSharpeAndWeighsReturnsBySteps) {
  const std::vector<double> one = {100, 110, 99, 120};
  const std::vector<double> two = {50, 40};
  const DomainsSummary single = SummarizeDomains({one}, 365);
  const PerformanceSummary s = Summarize(one, 365);
  EXPECT_DOUBLE_EQ(single.sharpe, s.sharpe);
  EXPECT_DOUBLE_EQ(single.total_return, s.total_return);
  EXPECT_DOUBLE_EQ(single.calmar, s.calmar);
  EXPECT_DOUBLE_EQ(single.max_drawdown, s.max_drawdown);
  EXPECT_EQ(single.steps, 3);
  const DomainsSummary both = SummarizeDomains({one, two}, 365);
  EXPECT_EQ(both.steps, 4);
  EXPECT_NEAR(both.total_return, 0.75 * 0.2 + 0.25 * -0.2, 1e-12);
  EXPECT_DOUBLE_EQ(both.max_drawdown, 0.2);  // the second domain's
  std::vector<double> pooled = BarReturns(one);
  pooled.push_back(-0.2);
  EXPECT_NEAR(both.sharpe, SharpeRatio(pooled, 365), 1e-12);
  ASSERT_EQ(both.log_returns.size(), 4U);
  EXPECT_NEAR(both.log_returns[3], std::log(0.8), 1e-15);
}

}  // namespace
}  // namespace ristretto::env
