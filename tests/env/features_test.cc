#include "env/features.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "env/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::env {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Tight tolerance scaled by the expected magnitude ("1e-12 relative").
void ExpectClose(double expected, double actual, const std::string& what) {
  EXPECT_NEAR(expected, actual, 1e-12 * std::max(1.0, std::abs(expected)))
      << what;
}

// Expects `actual` to be NaN where `expected` is NaN and close elsewhere.
void ExpectSeries(const std::vector<double>& expected,
                  const std::vector<double>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    if (std::isnan(expected[t])) {
      EXPECT_TRUE(std::isnan(actual[t])) << "t=" << t << " got " << actual[t];
    } else {
      ExpectClose(expected[t], actual[t], "t=" + std::to_string(t));
    }
  }
}

size_t FirstDefined(const std::vector<double>& x) {
  size_t t = 0;
  while (t < x.size() && std::isnan(x[t])) ++t;
  return t;
}

// The six bars used by the DX, ADX and ATR hand computations (period 2).
//   t   h    l    c     up  down  +DM -DM  TR
//   0   10   8    9     -   -     -   -    -
//   1   12   9    11    2   -1    2   0    max(3,|12-9|,|9-9|)   = 3
//   2   11   7    8     -1  2     0   2    max(4,|11-11|,|7-11|) = 4
//   3   13   9    12    2   -2    2   0    max(4,|13-8|,|9-8|)   = 5
//   4   14   10   10    1   -1    1   0    max(4,|14-12|,|10-12|)= 4
//   5   12   9    9.5   -2  1     0   1    max(3,|12-10|,|9-10|) = 3
const std::vector<double> kH = {10, 12, 11, 13, 14, 12};
const std::vector<double> kL = {8, 9, 7, 9, 10, 9};
const std::vector<double> kC = {9, 11, 8, 12, 10, 9.5};

// A deterministic, wiggly market of `n` bars (no two flat windows).
struct Bars {
  std::vector<double> o, h, l, c, v;
};
Bars Wiggly(int n, double base, double phase) {
  Bars b;
  for (int t = 0; t < n; ++t) {
    const double c = base + 5.0 * std::sin(0.37 * t + phase) +
                     2.0 * std::cos(0.11 * t * t + phase) + 0.05 * t;
    const double o = c - 0.7 * std::sin(0.53 * t + phase);
    b.o.push_back(o);
    b.c.push_back(c);
    b.h.push_back(std::max(o, c) + 0.5 + 0.4 * std::sin(0.29 * t));
    b.l.push_back(std::min(o, c) - 0.5 - 0.3 * std::cos(0.41 * t));
    b.v.push_back(100.0 + 50.0 * std::sin(0.17 * t + phase) + t % 7);
  }
  return b;
}

// ---- Building blocks --------------------------------------------------------

TEST(FeaturesTest, EmaIsSeededWithTheFirstValue) {
  // span 3 -> alpha = 2/4 = 0.5. e0 = 1; e1 = .5·2 + .5·1 = 1.5;
  // e2 = .5·3 + .5·1.5 = 2.25.
  ExpectSeries({1.0, 1.5, 2.25}, Ema(std::vector<double>{1, 2, 3}, 3));
}

TEST(FeaturesTest, EmaSkipsLeadingNaNs) {
  // Seeded at the first finite value (4); alpha = 0.5: .5·6 + .5·4 = 5.
  ExpectSeries({kNaN, 4.0, 5.0}, Ema(std::vector<double>{kNaN, 4, 6}, 3));
}

TEST(FeaturesTest, SmaAveragesTheLastWindowValues) {
  // window 2: (1+2)/2 = 1.5, (2+3)/2 = 2.5, (3+5)/2 = 4.
  ExpectSeries({kNaN, 1.5, 2.5, 4.0}, Sma(std::vector<double>{1, 2, 3, 5}, 2));
  // A NaN inside the window leaves the mean undefined.
  ExpectSeries({kNaN, kNaN, kNaN, 4.0},
               Sma(std::vector<double>{1, kNaN, 3, 5}, 2));
}

TEST(FeaturesTest, WilderSmoothStartsWithTheSimpleMeanOfFirstPeriodValues) {
  // period 3, first finite at 1: y3 = (1+2+3)/3 = 2;
  // y4 = (2·2 + 4)/3 = 8/3; y5 = (8/3·2 + 5)/3 = (16/3 + 15/3)/3 = 31/9.
  ExpectSeries({kNaN, kNaN, kNaN, 2.0, 8.0 / 3.0, 31.0 / 9.0},
               WilderSmooth(std::vector<double>{kNaN, 1, 2, 3, 4, 5}, 3));
}

TEST(FeaturesTest, WilderSmoothIsAllNaNWhenTooShort) {
  ExpectSeries({kNaN, kNaN}, WilderSmooth(std::vector<double>{1, 2}, 3));
}

TEST(FeaturesTest, SecondDifferenceOfSquaresIsTwo) {
  // 9 - 2·4 + 1 = 2; 16 - 2·9 + 4 = 2.
  ExpectSeries({kNaN, kNaN, 2.0, 2.0},
               SecondDifference(std::vector<double>{1, 4, 9, 16}));
}

TEST(FeaturesTest, TrueRangeUsesThePreviousClose) {
  // See the table above kH.
  ExpectSeries({kNaN, 3, 4, 5, 4, 3}, TrueRange(kH, kL, kC));
}

TEST(FeaturesTest, MacdMatchesHandComputedEmas) {
  // close 10, 12, 11, 14; fast span 3 (alpha .5), slow span 7 (alpha .25),
  // signal span 3 (alpha .5).
  // fast: 10; .5·12+.5·10 = 11; .5·11+.5·11 = 11; .5·14+.5·11 = 12.5
  // slow: 10; .25·12+.75·10 = 10.5; .25·11+.75·10.5 = 10.625;
  //       .25·14 + .75·10.625 = 3.5 + 7.96875 = 11.46875
  // line: 0, 0.5, 0.375, 1.03125
  // signal: 0; .5·.5 = .25; .5·.375+.5·.25 = .3125;
  //         .5·1.03125 + .5·.3125 = .671875
  // hist: 0, .25, .0625, .359375
  const Macd m = ComputeMacd(std::vector<double>{10, 12, 11, 14}, 3, 7, 3);
  ExpectSeries({0, 0.5, 0.375, 1.03125}, m.line);
  ExpectSeries({0, 0.25, 0.3125, 0.671875}, m.signal);
  ExpectSeries({0, 0.25, 0.0625, 0.359375}, m.hist);
}

TEST(FeaturesTest, DefaultMacdOfConstantPricesIsZeroFromTheFirstBar) {
  const Macd m = ComputeMacd(std::vector<double>(40, 123.0));
  for (size_t t = 0; t < 40; ++t) {
    EXPECT_EQ(0.0, m.line[t]);
    EXPECT_EQ(0.0, m.signal[t]);
    EXPECT_EQ(0.0, m.hist[t]);
  }
}

TEST(FeaturesTest, RsiMatchesHandComputedWilderAverages) {
  // close 10, 11, 10, 12, 13, 11; period 3.
  // diffs +1, -1, +2, +1, -2 -> gains 1,0,2,1,0; losses 0,1,0,0,2.
  // t=3: G = (1+0+2)/3 = 1, L = (0+1+0)/3 = 1/3, RS = 3, RSI = 100-100/4 = 75
  // t=4: G = (1·2+1)/3 = 1, L = (1/3·2+0)/3 = 2/9, RS = 4.5,
  //      RSI = 100 - 100/5.5 = 900/11
  // t=5: G = (1·2+0)/3 = 2/3, L = (2/9·2+2)/3 = 22/27, RS = 18/22 = 9/11,
  //      RSI = 100 - 100/(20/11) = 100 - 55 = 45
  ExpectSeries({kNaN, kNaN, kNaN, 75.0, 900.0 / 11.0, 45.0},
               Rsi(std::vector<double>{10, 11, 10, 12, 13, 11}, 3));
}

TEST(FeaturesTest, RsiIsHundredWhenPricesOnlyRise) {
  std::vector<double> close(30);
  for (int t = 0; t < 30; ++t) close[t] = 100.0 + t;
  const std::vector<double> rsi = Rsi(close);  // default period 14
  EXPECT_EQ(14u, FirstDefined(rsi));
  for (size_t t = 14; t < close.size(); ++t) EXPECT_EQ(100.0, rsi[t]);
}

TEST(FeaturesTest, RsiIsFiftyWhenPricesAreFlat) {
  ExpectSeries({kNaN, kNaN, 50.0, 50.0},
               Rsi(std::vector<double>{5, 5, 5, 5}, 2));
}

TEST(FeaturesTest, RsiIsZeroWhenPricesOnlyFall) {
  // G = 0, L > 0: RS = 0, RSI = 100 - 100/1 = 0.
  ExpectSeries({kNaN, kNaN, 0.0}, Rsi(std::vector<double>{9, 8, 7}, 2));
}

TEST(FeaturesTest, CciMatchesHandComputedMeanDeviation) {
  // TP = (h+l+c)/3: (3+1+2)/3 = 2, (5+2+5)/3 = 4, (6+3+6)/3 = 5,
  // (9+6+9)/3 = 8. Period 3.
  // t=2: mean(2,4,5) = 11/3; |dev| = 5/3, 1/3, 4/3 -> MAD = 10/9;
  //      CCI = (5 - 11/3)/(0.015·10/9) = (4/3)/(1/60) = 80
  // t=3: mean(4,5,8) = 17/3; |dev| = 5/3, 2/3, 7/3 -> MAD = 14/9;
  //      CCI = (8 - 17/3)/(0.015·14/9) = (7/3)/(7/300) = 100
  ExpectSeries(
      {kNaN, kNaN, 80.0, 100.0},
      Cci(std::vector<double>{3, 5, 6, 9}, std::vector<double>{1, 2, 3, 6},
          std::vector<double>{2, 5, 6, 9}, 3));
}

TEST(FeaturesTest, CciIsZeroOverAFlatWindow) {
  // TP = 0.1 exactly, but mean(0.1, 0.1, 0.1) rounds to 0.10000000000000002.
  const std::vector<double> p(5, 0.1);
  ExpectSeries({kNaN, kNaN, 0.0, 0.0, 0.0}, Cci(p, p, p, 3));
}

TEST(FeaturesTest, DefaultCciIsFirstDefinedAtIndexThirteen) {
  const Bars b = Wiggly(40, 50.0, 0.0);
  const std::vector<double> cci = Cci(b.h, b.l, b.c);
  EXPECT_EQ(13u, FirstDefined(cci));
  // Property: CCI(14) equals the period-14 definition computed directly.
  double tp[14];
  double mean = 0.0;
  for (int k = 0; k < 14; ++k) {
    tp[k] = (b.h[k] + b.l[k] + b.c[k]) / 3.0;
    mean += tp[k] / 14.0;
  }
  double mad = 0.0;
  for (int k = 0; k < 14; ++k) mad += std::abs(tp[k] - mean) / 14.0;
  EXPECT_NEAR((tp[13] - mean) / (0.015 * mad), cci[13], 1e-9);
}

TEST(FeaturesTest, DirectionalIndexMatchesHandComputedWilderSums) {
  // Period 2, DM and TR from the table above kH.
  // t=2: S(+DM) = (2+0)/2 = 1, S(-DM) = (0+2)/2 = 1, S(TR) = (3+4)/2 = 3.5;
  //      +DI = -DI = 100/3.5 -> DX = 0
  // t=3: S(+DM) = (1+2)/2 = 1.5, S(-DM) = (1+0)/2 = .5,
  //      S(TR) = (3.5+5)/2 = 4.25; +DI = 150/4.25, -DI = 50/4.25,
  //      DX = 100·100/200 = 50
  // t=4: S(+DM) = (1.5+1)/2 = 1.25, S(-DM) = .25, S(TR) = 4.125;
  //      DX = 100·1/1.5 = 200/3
  // t=5: S(+DM) = (1.25+0)/2 = .625, S(-DM) = (.25+1)/2 = .625 -> DX = 0
  const DirectionalIndex d = ComputeDirectionalIndex(kH, kL, kC, 2);
  ExpectSeries({kNaN, kNaN, 100 / 3.5, 150 / 4.25, 125 / 4.125, 62.5 / 3.5625},
               d.plus_di);
  ExpectSeries({kNaN, kNaN, 100 / 3.5, 50 / 4.25, 25 / 4.125, 62.5 / 3.5625},
               d.minus_di);
  ExpectSeries({kNaN, kNaN, 0.0, 50.0, 200.0 / 3.0, 0.0}, d.dx);
  ExpectSeries(d.dx, Dx(kH, kL, kC, 2));
}

TEST(FeaturesTest, EqualUpAndDownMovesCountAsNeitherDirection) {
  // Outside bar: up = 12-10 = 2, down = 8-6 = 2 -> +DM = -DM = 0 -> DX = 0.
  const DirectionalIndex d = ComputeDirectionalIndex(
      std::vector<double>{10, 12}, std::vector<double>{8, 6},
      std::vector<double>{9, 9}, 1);
  EXPECT_EQ(0.0, d.plus_di[1]);
  EXPECT_EQ(0.0, d.minus_di[1]);
  EXPECT_EQ(0.0, d.dx[1]);
}

TEST(FeaturesTest, DxIsZeroWhenPricesAreFlat) {
  const std::vector<double> p(20, 7.0);
  const std::vector<double> dx = Dx(p, p, p);  // default period 14
  EXPECT_EQ(14u, FirstDefined(dx));
  for (size_t t = 14; t < p.size(); ++t) EXPECT_EQ(0.0, dx[t]);
}

TEST(FeaturesTest, DxIsHundredInAPureUptrend) {
  // Every bar: up = 1 > 0 > down = -1, so -DM = 0 and DX = 100.
  std::vector<double> h, l, c;
  for (int t = 0; t < 20; ++t) {
    h.push_back(11.0 + t);
    l.push_back(9.0 + t);
    c.push_back(10.0 + t);
  }
  const std::vector<double> dx = Dx(h, l, c);
  EXPECT_EQ(14u, FirstDefined(dx));
  for (size_t t = 14; t < dx.size(); ++t) EXPECT_DOUBLE_EQ(100.0, dx[t]);
}

TEST(FeaturesTest, AdxAndItsSecondDifferenceMatchHandComputation) {
  // DX (period 2) = NaN, NaN, 0, 50, 200/3, 0.
  // ADX t=3: mean(0, 50) = 25; t=4: (25 + 200/3)/2 = 275/6;
  //     t=5: (275/6 + 0)/2 = 275/12.
  // Second difference t=5: 275/12 - 2·275/6 + 25 = (275-1100+300)/12 = -43.75
  ExpectSeries({kNaN, kNaN, kNaN, 25.0, 275.0 / 6.0, 275.0 / 12.0},
               Adx(kH, kL, kC, 2));
  ExpectSeries({kNaN, kNaN, kNaN, kNaN, kNaN, -43.75},
               AdxSecondDiff(kH, kL, kC, 2));
}

TEST(FeaturesTest, DefaultAdxSecondDiffIsZeroInAPureUptrend) {
  // DX = 100 from t=14, so ADX = 100 from t=27 and its second difference is
  // 0 from t=29.
  std::vector<double> h, l, c;
  for (int t = 0; t < 40; ++t) {
    h.push_back(11.0 + t);
    l.push_back(9.0 + t);
    c.push_back(10.0 + t);
  }
  const std::vector<double> adx = Adx(h, l, c);
  EXPECT_EQ(27u, FirstDefined(adx));
  EXPECT_NEAR(100.0, adx[27], 1e-12);
  const std::vector<double> d2 = AdxSecondDiff(h, l, c);
  EXPECT_EQ(29u, FirstDefined(d2));
  for (size_t t = 29; t < d2.size(); ++t) EXPECT_NEAR(0.0, d2[t], 1e-11);
}

TEST(FeaturesTest, AtrIsWilderSmoothedTrueRange) {
  // TR = -, 3, 4, 5, 4, 3; period 2: (3+4)/2 = 3.5; (3.5+5)/2 = 4.25;
  // (4.25+4)/2 = 4.125; (4.125+3)/2 = 3.5625.
  ExpectSeries({kNaN, kNaN, 3.5, 4.25, 4.125, 3.5625}, Atr(kH, kL, kC, 2));
}

TEST(FeaturesTest, AtrRegimeShiftComparesAtrWithItsRecentMean) {
  // ATR (period 2) = -, -, 3.5, 4.25, 4.125, 3.5625; mean window 3.
  // t=4: mean = (3.5+4.25+4.125)/3 = 11.875/3;
  //      4.125·3/11.875 - 1 = 0.5/11.875 = 4/95
  // t=5: mean = (4.25+4.125+3.5625)/3 = 11.9375/3;
  //      3.5625·3/11.9375 - 1 = -1.25/11.9375 = -20/191
  ExpectSeries({kNaN, kNaN, kNaN, kNaN, 4.0 / 95.0, -20.0 / 191.0},
               AtrRegimeShift(kH, kL, kC, 2, 3));
}

TEST(FeaturesTest, DefaultAtrRegimeShiftIsZeroForConstantRangeBars) {
  // Every bar spans [c-1, c+1] around a close rising by 0.5: TR = 2 always,
  // so ATR = 2 and the shift is 0, first defined at 14 + 50 - 1 = 63.
  std::vector<double> h, l, c;
  for (int t = 0; t < 80; ++t) {
    c.push_back(100.0 + 0.5 * t);
    h.push_back(c.back() + 1.0);
    l.push_back(c.back() - 1.0);
  }
  const std::vector<double> shift = AtrRegimeShift(h, l, c);
  EXPECT_EQ(63u, FirstDefined(shift));
  for (size_t t = 63; t < shift.size(); ++t) {
    EXPECT_NEAR(0.0, shift[t], 1e-12);
  }
}

TEST(FeaturesTest, AtrRegimeShiftIsZeroWhenPricesAreFlat) {
  const std::vector<double> p(10, 3.0);
  const std::vector<double> shift = AtrRegimeShift(p, p, p, 2, 3);
  EXPECT_EQ(4u, FirstDefined(shift));
  for (size_t t = 4; t < p.size(); ++t) EXPECT_EQ(0.0, shift[t]);
}

TEST(FeaturesTest, RangeBreakoutVolumeUsesOnlyThePreviousBars) {
  //   t   h   l   c   v
  //   0   10  8   9   100
  //   1   11  9   10  200
  //   2   12  7   11  300
  //   3   15  11  14  400  prev hi 12, lo 7: (14-12)/5 = .4;
  //                          relvol 400/mean(100,200,300) = 2 -> .8
  //   4   9   4   5   150  prev hi 15, lo 7: (5-7)/8 = -.25;
  //                          relvol 150/mean(200,300,400) = .5 -> -.125
  //   5   11  9   10  0    prev hi 15, lo 4: inside -> 0
  //   6   20  18  20  55   prev hi 15, lo 4: (20-15)/11 = 5/11;
  //                          relvol 55/mean(400,150,0) = .3 -> 3/22
  // Note t=3 breaks out of the previous bars though its own high is 15.
  ExpectSeries({kNaN, kNaN, kNaN, 0.8, -0.125, 0.0, 3.0 / 22.0},
               RangeBreakoutVolume(
                   std::vector<double>{10, 11, 12, 15, 9, 11, 20},
                   std::vector<double>{8, 9, 7, 11, 4, 9, 18},
                   std::vector<double>{9, 10, 11, 14, 5, 10, 20},
                   std::vector<double>{100, 200, 300, 400, 150, 0, 55}, 3));
}

TEST(FeaturesTest, RangeBreakoutTakesRelativeVolumeAsOneWhenPastVolumeIsZero) {
  // t=2: previous bars 0-1: hi 11, lo 9, volumes 0, 0. Close 12:
  //      (12-11)/(11-9) = .5, relvol = 1 (mean volume 0) -> .5
  // t=3: previous bars 1-2: hi 13, lo 10, volumes 0, 0. Close 8:
  //      (8-10)/(13-10) = -2/3, relvol = 1 (its own volume 5 is ignored)
  ExpectSeries({kNaN, kNaN, 0.5, -2.0 / 3.0},
               RangeBreakoutVolume(std::vector<double>{10, 11, 13, 9},
                                   std::vector<double>{9, 10, 11, 7},
                                   std::vector<double>{10, 10, 12, 8},
                                   std::vector<double>{0, 0, 0, 5}, 2));
}

TEST(FeaturesTest, RangeBreakoutIsZeroWhenThePreviousRangeIsFlat) {
  // hi == lo == 5 over the previous 2 bars: breakout is 0 whatever the close.
  ExpectSeries({kNaN, kNaN, 0.0},
               RangeBreakoutVolume(std::vector<double>{5, 5, 9},
                                   std::vector<double>{5, 5, 8},
                                   std::vector<double>{5, 5, 9},
                                   std::vector<double>{1, 1, 1}, 2));
}

TEST(FeaturesTest, DefaultRangeBreakoutLooksBackTwentyBars) {
  // Flat bars at 10 (range [9, 11]) then a close of 13 at t=20:
  // (13-11)/(11-9) = 1, relvol = 30/10 = 3 -> 3.
  std::vector<double> h(21, 11.0), l(21, 9.0), c(21, 10.0), v(21, 10.0);
  h[20] = 13.0;
  c[20] = 13.0;
  v[20] = 30.0;
  const std::vector<double> rbv = RangeBreakoutVolume(h, l, c, v);
  EXPECT_EQ(20u, FirstDefined(rbv));
  EXPECT_DOUBLE_EQ(3.0, rbv[20]);
}

// ---- The feature set --------------------------------------------------------

TEST(FeaturesTest, DefaultFeatureNamesAreTheFourteenColumnsInOrder) {
  EXPECT_THAT(
      DefaultFeatureNames(),
      ::testing::ElementsAre("open", "high", "low", "close", "volume", "macd",
                             "macd_signal", "macd_hist", "rsi_14", "cci_14",
                             "dx_14", "atr_regime_shift",
                             "range_breakout_volume", "adx_second_diff"));
  EXPECT_EQ(static_cast<size_t>(kFeaturesPerAsset),
            DefaultFeatureNames().size());
}

TEST(FeaturesTest, WarmupIsSixtyThreeRowsSetByTheAtrRegimeShift) {
  // ATR(14) first at 14, its 50-bar mean first at 14 + 49 = 63; every other
  // feature is defined earlier (ADX second diff at 29).
  EXPECT_EQ(63, FeatureWarmupRows());
}

// Builds a 2-asset dataset whose domains have the given sizes; asset i of
// domain k is Wiggly(size, 50 + 30·i + 10·k, phase + k + 0.5·i). Timestamps
// skip an hour between domains.
Dataset MakeDataset(const std::vector<int>& domain_sizes, double phase = 0.0) {
  Dataset d;
  d.assets = {{"AAA", 0.001}, {"BBB", 0.01}};
  d.interval_seconds = 300;
  int64_t ts = 1'600'000'000;
  int64_t row = 0;
  for (size_t k = 0; k < domain_sizes.size(); ++k) {
    const int n = domain_sizes[k];
    const Bars a = Wiggly(n, 50.0 + 10.0 * k, phase + k);
    const Bars b = Wiggly(n, 80.0 + 10.0 * k, phase + k + 0.5);
    for (int t = 0; t < n; ++t) {
      d.timestamps.push_back(ts);
      ts += 300;
      for (const Bars* x : {&a, &b}) {
        d.bars.insert(d.bars.end(),
                      {x->o[t], x->h[t], x->l[t], x->c[t], x->v[t]});
      }
    }
    ts += 3600;  // gap
    d.domains.push_back({row, row + n});
    row += n;
  }
  return d;
}

// The 14 feature columns of one asset's standalone series, row by row.
std::vector<std::vector<double>> StandaloneColumns(const Bars& b) {
  const Macd m = ComputeMacd(b.c);
  return {b.o,
          b.h,
          b.l,
          b.c,
          b.v,
          m.line,
          m.signal,
          m.hist,
          Rsi(b.c),
          Cci(b.h, b.l, b.c),
          Dx(b.h, b.l, b.c),
          AtrRegimeShift(b.h, b.l, b.c),
          RangeBreakoutVolume(b.h, b.l, b.c, b.v),
          AdxSecondDiff(b.h, b.l, b.c)};
}

TEST(FeaturesTest, ComputeFeaturesDropsWarmupPerDomainAndRemovesShortOnes) {
  // Domains of 100, 40 (<= 63: removed) and 70 rows -> 37 + 0 + 7 = 44 rows.
  Dataset d = MakeDataset({100, 40, 70});
  d.warmup_rows_dropped = 5;
  const Dataset before = d;
  ASSERT_TRUE(ComputeFeatures(&d).ok());

  EXPECT_EQ(44, d.num_rows());
  EXPECT_THAT(d.domains, ::testing::ElementsAre(Domain{0, 37}, Domain{37, 44}));
  EXPECT_EQ(5 + 63 + 40 + 63, d.warmup_rows_dropped);
  EXPECT_EQ(DefaultFeatureNames(), d.feature_names);
  ASSERT_EQ(44u * 2 * 14, d.features.size());
  ASSERT_EQ(44u * 2 * 5, d.bars.size());
  // Rows kept: 63..99 of domain 0 and 140+63..209 of domain 2.
  for (int64_t t = 0; t < 44; ++t) {
    const int64_t src = t < 37 ? 63 + t : 140 + 63 + (t - 37);
    EXPECT_EQ(before.timestamps[src], d.timestamps[t]);
    for (int k = 0; k < 10; ++k) {
      EXPECT_EQ(before.bars[src * 10 + k], d.bars[t * 10 + k]);
    }
  }
  for (double x : d.features) EXPECT_TRUE(std::isfinite(x));
}

TEST(FeaturesTest, ComputeFeaturesMatchesTheSeriesFunctionsPerDomain) {
  Dataset d = MakeDataset({100, 70});
  ASSERT_TRUE(ComputeFeatures(&d).ok());
  ASSERT_EQ(37 + 7, d.num_rows());
  const int64_t f = d.num_features();
  ASSERT_EQ(28, f);
  const int sizes[2] = {100, 70};
  int64_t out_row = 0;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 2; ++i) {
      // Same construction as MakeDataset: indicators restarted at the domain.
      const Bars b = Wiggly(sizes[k], 50.0 + 30.0 * i + 10.0 * k, k + 0.5 * i);
      const auto cols = StandaloneColumns(b);
      for (int64_t t = 0; t < sizes[k] - 63; ++t) {
        for (int j = 0; j < kFeaturesPerAsset; ++j) {
          EXPECT_EQ(cols[j][63 + t], d.features[(out_row + t) * f + i * 14 + j])
              << "domain " << k << " asset " << i << " row " << t << " feature "
              << DefaultFeatureNames()[j];
        }
      }
    }
    out_row += sizes[k] - 63;
  }
  // Spot-check a raw column against the dataset's own bars.
  EXPECT_EQ(d.close(40, 1), d.features[40 * f + 14 + 3]);
}

// ---- the portfolio set -----------------------------------------------------

TEST(PortfolioFeaturesTest, NamesWarmupAndParsing) {
  EXPECT_EQ(PortfolioFeatureNames().size(),
            static_cast<size_t>(kPortfolioFeaturesPerAsset));
  EXPECT_EQ(FeatureWarmupRows(FeatureSet::kPortfolio), 720);
  EXPECT_EQ(FeatureWarmupRows(FeatureSet::kIndicators), 63);
  EXPECT_EQ(FeatureNames(FeatureSet::kIndicators), DefaultFeatureNames());
  ASSERT_TRUE(ParseFeatureSet("portfolio").ok());
  EXPECT_EQ(*ParseFeatureSet("portfolio"), FeatureSet::kPortfolio);
  EXPECT_EQ(*ParseFeatureSet("indicators"), FeatureSet::kIndicators);
  EXPECT_EQ(ParseFeatureSet("momentum").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*FeatureSetOf(PortfolioFeatureNames()), FeatureSet::kPortfolio);
  const absl::StatusOr<FeatureSet> unknown = FeatureSetOf({"close"});
  EXPECT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("neither the indicators nor the portfolio set"));
  // No raw level: no name of the set is a bar field.
  for (const std::string& name : PortfolioFeatureNames()) {
    for (const char* raw : {"open", "high", "low", "close", "volume"}) {
      EXPECT_NE(name, raw);
    }
  }
}

// Alternating 1-bar log returns ±a: σ over an even window is exactly a, so
// ret_1 is ±1, even horizons sum to 0, and every volatility ratio is 0.
TEST(PortfolioFeaturesTest, HandComputedValuesOnAlternatingReturns) {
  const int n = 800;
  const double a = 0.01;
  std::vector<double> c(n), h(n), l(n), v(n, 100.0);
  double price = 100.0;
  for (int t = 0; t < n; ++t) {
    if (t > 0) price *= std::exp(t % 2 == 1 ? a : -a);
    c[t] = price;
    h[t] = price * 1.001;
    l[t] = price * 0.999;
  }
  const std::vector<double> f = PortfolioFeatures(h, l, c, v);
  const int k = kPortfolioFeaturesPerAsset;
  ASSERT_EQ(f.size(), static_cast<size_t>(n * k));
  for (int t : {720, 721, 799}) {
    const double* row = &f[t * k];
    EXPECT_NEAR(row[0], t % 2 == 1 ? 1.0 : -1.0, 1e-9) << t;  // ret_1
    EXPECT_NEAR(row[1], 0.0, 1e-9) << t;                      // ret_6
    EXPECT_NEAR(row[2], 0.0, 1e-9) << t;                      // ret_24
    EXPECT_NEAR(row[3], 0.0, 1e-9) << t;                      // ret_168
    EXPECT_NEAR(row[4], 0.0, 1e-9) << t;                      // ret_720
    EXPECT_NEAR(row[7], 0.0, 1e-9) << t;  // vol_ratio_24_168
    EXPECT_NEAR(row[8], 0.0, 1e-9) << t;  // vol_ratio_168_720
    EXPECT_NEAR(row[9], 0.0, 1e-9) << t;  // constant volume: z 0
    EXPECT_LE(row[6], 0.0) << t;          // never above the 720-bar high
  }
  // Not defined before 720 bars of history (ret_720, σ_720).
  EXPECT_TRUE(std::isnan(f[719 * k + 4]));
  EXPECT_TRUE(std::isnan(f[719 * k + 8]));
  EXPECT_FALSE(std::isnan(f[719 * k + 0]));
}

// The point of the set: an asset's price level does not matter. The same
// series at 1e-5 of the price (a coin at 0.0007 beside BTC at 69,000) gives
// the same features.
TEST(PortfolioFeaturesTest, FeaturesDoNotDependOnThePriceLevel) {
  const Bars b = Wiggly(1000, 60.0, 0.3);
  Bars tiny = b;
  for (auto* series : {&tiny.o, &tiny.h, &tiny.l, &tiny.c}) {
    for (double& x : *series) x *= 1e-5;
  }
  const std::vector<double> big = PortfolioFeatures(b.h, b.l, b.c, b.v);
  const std::vector<double> small =
      PortfolioFeatures(tiny.h, tiny.l, tiny.c, tiny.v);
  ASSERT_EQ(big.size(), small.size());
  const int k = kPortfolioFeaturesPerAsset;
  for (size_t q = 720 * k; q < big.size(); ++q) {
    EXPECT_NEAR(big[q], small[q], 1e-6 * std::max(1.0, std::abs(big[q])))
        << PortfolioFeatureNames()[q % k] << " row " << q / k;
  }
}

TEST(PortfolioFeaturesTest, ComputeFeaturesDropsAMonthPerDomainAllFinite) {
  // Domains of 900, 500 (<= 720: removed) and 800 rows -> 180 + 80 rows.
  Dataset d = MakeDataset({900, 500, 800});
  const Dataset before = d;
  ASSERT_TRUE(ComputeFeatures(&d, FeatureSet::kPortfolio).ok());
  EXPECT_EQ(d.num_rows(), 260);
  EXPECT_THAT(d.domains,
              ::testing::ElementsAre(Domain{0, 180}, Domain{180, 260}));
  EXPECT_EQ(d.feature_names, PortfolioFeatureNames());
  EXPECT_EQ(d.warmup_rows_dropped, 720 + 500 + 720);
  ASSERT_EQ(d.features.size(), 260u * 2 * 18);
  for (double x : d.features) {
    EXPECT_TRUE(std::isfinite(x));
    EXPECT_LE(std::abs(x), kPortfolioClip);
  }
  // Row 0 is the domain's row 720; asset 1's features are its own series'.
  const Bars b = Wiggly(900, 80.0, 0.5);
  const std::vector<double> own = PortfolioFeatures(b.h, b.l, b.c, b.v);
  for (int j = 0; j < 18; ++j) {
    EXPECT_EQ(d.features[0 * 36 + 18 + j], own[720 * 18 + j])
        << PortfolioFeatureNames()[j];
  }
  EXPECT_EQ(d.timestamps[0], before.timestamps[720]);
  // Too short everywhere: refused, naming the rows needed, dataset kept.
  Dataset short_one = MakeDataset({700});
  const absl::Status s = ComputeFeatures(&short_one, FeatureSet::kPortfolio);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("at least 721 rows"));
  EXPECT_EQ(short_one.num_rows(), 700);
}

TEST(FeaturesTest, ComputedFeaturesOfOneDomainIgnoreTheOtherDomain) {
  // Same second domain, different first domain (other phase): the second
  // domain's features must be bit-identical, and equal to those of a
  // dataset holding that domain alone.
  Dataset a = MakeDataset({100, 70});
  Dataset b = MakeDataset({100, 70}, 1.3);
  Dataset alone = MakeDataset({70});
  // Give b and `alone` exactly a's second-domain bars.
  std::copy(a.bars.begin() + 100 * 10, a.bars.end(), b.bars.begin() + 100 * 10);
  alone.bars.assign(a.bars.begin() + 100 * 10, a.bars.end());
  ASSERT_TRUE(ComputeFeatures(&a).ok());
  ASSERT_TRUE(ComputeFeatures(&b).ok());
  ASSERT_TRUE(ComputeFeatures(&alone).ok());
  ASSERT_EQ(7, alone.num_rows());
  const size_t f = 28;
  ASSERT_NE(a.features[0], b.features[0]);  // first domains really differ
  for (size_t k = 0; k < 7 * f; ++k) {
    EXPECT_EQ(a.features[37 * f + k], b.features[37 * f + k]) << k;
    EXPECT_EQ(a.features[37 * f + k], alone.features[k]) << k;
  }
}

TEST(FeaturesTest, ComputeFeaturesRejectsDomainsWithoutRowsAfterWarmup) {
  Dataset d = MakeDataset({63, 50});
  const Dataset before = d;
  const absl::Status s = ComputeFeatures(&d);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, s.code());
  EXPECT_THAT(s.message(), HasSubstr("at least 64 rows"));
  EXPECT_THAT(s.message(), HasSubstr("the longest has 63"));
  EXPECT_EQ(before.bars, d.bars);
  EXPECT_EQ(before.domains, d.domains);
  EXPECT_EQ(0, d.warmup_rows_dropped);
}

TEST(FeaturesTest, ComputeFeaturesKeepsOneRowFromASixtyFourRowDomain) {
  Dataset d = MakeDataset({64});
  ASSERT_TRUE(ComputeFeatures(&d).ok());
  EXPECT_EQ(1, d.num_rows());
  EXPECT_THAT(d.domains, ::testing::ElementsAre(Domain{0, 1}));
  EXPECT_EQ(63, d.warmup_rows_dropped);
}

TEST(FeaturesTest, ComputeFeaturesRejectsInconsistentShapes) {
  Dataset short_bars = MakeDataset({80});
  short_bars.bars.pop_back();
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            ComputeFeatures(&short_bars).code());

  Dataset gap_in_domains = MakeDataset({80, 80});
  gap_in_domains.domains[1].begin = 81;
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            ComputeFeatures(&gap_in_domains).code());

  Dataset short_domains = MakeDataset({80});
  short_domains.domains[0].end = 79;
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            ComputeFeatures(&short_domains).code());

  Dataset no_assets;
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            ComputeFeatures(&no_assets).code());

  Dataset nan_bar = MakeDataset({80});
  nan_bar.bars[17] = kNaN;
  const absl::Status s = ComputeFeatures(&nan_bar);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, s.code());
  EXPECT_THAT(s.message(), HasSubstr("row 1, asset 1"));
}

}  // namespace
}  // namespace ristretto::env
