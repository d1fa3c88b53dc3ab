// Per-asset technical features computed from a Dataset's OHLCV bars, and the
// per-series indicators they are built from. Every function is pure and
// thread-safe; ComputeFeatures mutates only the Dataset it is given.
//
// Conventions of the series functions: inputs are series of length T (a
// std::vector<double> or pointer + length both convert to absl::Span), the
// result has length T, and an entry is NaN where the indicator is not yet
// defined. "First defined index" is the first non-NaN index for an input with
// no NaN. Periods are in bars and must be >= 1. With the default periods:
//
//   feature                 first defined index
//   open..volume            0
//   macd, signal, hist      0        (EMAs seeded with the first value)
//   rsi_14                  14       (= period)
//   cci_14                  13       (= period - 1)
//   dx_14                   14       (= period)
//   atr_regime_shift        63       (ATR from 14, then 50-bar mean: 14 + 49)
//   range_breakout_volume   20       (= lookback)
//   adx_second_diff         29       (ADX from 2·14 - 1 = 27, then + 2)
#ifndef RISTRETTO_ENV_FEATURES_H_
#define RISTRETTO_ENV_FEATURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "env/dataset.h"

namespace ristretto::env {

// Default periods of the feature set.
inline constexpr int kMacdFast = 12;
inline constexpr int kMacdSlow = 26;
inline constexpr int kMacdSignal = 9;
inline constexpr int kRsiPeriod = 14;
inline constexpr int kCciPeriod = 14;
inline constexpr int kDxPeriod = 14;  // also the ATR and ADX period
inline constexpr int kAtrMeanWindow = 50;
inline constexpr int kBreakoutLookback = 20;

// ---- Building blocks -------------------------------------------------------

// Exponential moving average, alpha = 2 / (span + 1), seeded with the first
// finite value s: e[s] = x[s], e[t] = alpha·x[t] + (1 - alpha)·e[t-1]
// (pandas ewm(span, adjust=False)). Leading NaNs stay NaN.
std::vector<double> Ema(absl::Span<const double> x, int span);

// Simple moving average over the last `window` values (x[t-window+1..t]);
// NaN unless all of them are finite.
std::vector<double> Sma(absl::Span<const double> x, int window);

// Wilder's smoothing. With s the first finite index of x, the first output is
// the simple mean y[s+p-1] = mean(x[s..s+p-1]); then
// y[t] = (y[t-1]·(p - 1) + x[t]) / p.
std::vector<double> WilderSmooth(absl::Span<const double> x, int period);

// Second difference y[t] = x[t] - 2·x[t-1] + x[t-2] (NaN at t < 2).
std::vector<double> SecondDifference(absl::Span<const double> x);

// True range TR[t] = max(h[t] - l[t], |h[t] - c[t-1]|, |l[t] - c[t-1]|) for
// t >= 1; TR[0] is NaN (no previous close).
std::vector<double> TrueRange(absl::Span<const double> high,
                              absl::Span<const double> low,
                              absl::Span<const double> close);

// MACD(fast, slow, signal): line = EMA_fast(close) - EMA_slow(close),
// signal = EMA_signal(line), hist = line - signal. Defined from index 0.
struct Macd {
  std::vector<double> line;
  std::vector<double> signal;
  std::vector<double> hist;
};
Macd ComputeMacd(absl::Span<const double> close, int fast = kMacdFast,
                 int slow = kMacdSlow, int signal = kMacdSignal);

// Wilder RSI: d[t] = c[t] - c[t-1] (t >= 1), gain = max(d, 0),
// loss = max(-d, 0), G = WilderSmooth(gain), L = WilderSmooth(loss) (so the
// first average is the mean of d[1..p]); RSI = 100 - 100 / (1 + G / L),
// 100 if L == 0 < G, 50 if G == L == 0. First defined at index p.
std::vector<double> Rsi(absl::Span<const double> close,
                        int period = kRsiPeriod);

// Commodity channel index: TP = (h + l + c) / 3, m = SMA_p(TP),
// MAD = mean(|TP[k] - m|) over the same p bars,
// CCI = (TP - m) / (0.015·MAD), 0 if MAD == 0. First defined at p - 1.
std::vector<double> Cci(absl::Span<const double> high,
                        absl::Span<const double> low,
                        absl::Span<const double> close,
                        int period = kCciPeriod);

// Wilder's directional movement, for t >= 1: up = h[t] - h[t-1],
// down = l[t-1] - l[t]; +DM = up if up > down and up > 0, else 0;
// -DM = down if down > up and down > 0, else 0. With S = WilderSmooth over p
// of +DM, -DM and TrueRange (first at index p):
// +DI = 100·S(+DM) / S(TR), -DI = 100·S(-DM) / S(TR) (both 0 if S(TR) == 0),
// DX = 100·|+DI - -DI| / (+DI + -DI), 0 if the sum is 0. First defined at p.
struct DirectionalIndex {
  std::vector<double> plus_di;
  std::vector<double> minus_di;
  std::vector<double> dx;
};
DirectionalIndex ComputeDirectionalIndex(absl::Span<const double> high,
                                         absl::Span<const double> low,
                                         absl::Span<const double> close,
                                         int period = kDxPeriod);
// The DX series of ComputeDirectionalIndex.
std::vector<double> Dx(absl::Span<const double> high,
                       absl::Span<const double> low,
                       absl::Span<const double> close, int period = kDxPeriod);

// ADX = WilderSmooth(DX, p): seeded by the mean of the first p DX values
// (DX[p..2p-1]), so first defined at 2p - 1.
std::vector<double> Adx(absl::Span<const double> high,
                        absl::Span<const double> low,
                        absl::Span<const double> close, int period = kDxPeriod);

// ADX second difference: SecondDifference(Adx(p)); first defined at 2p + 1.
std::vector<double> AdxSecondDiff(absl::Span<const double> high,
                                  absl::Span<const double> low,
                                  absl::Span<const double> close,
                                  int period = kDxPeriod);

// Average true range ATR = WilderSmooth(TrueRange, p) (mean of TR[1..p]
// first); first defined at p.
std::vector<double> Atr(absl::Span<const double> high,
                        absl::Span<const double> low,
                        absl::Span<const double> close, int period = kDxPeriod);

// ATR regime shift: ATR[t] / SMA_w(ATR)[t] - 1, 0 if that mean is 0 (flat
// prices). First defined at p + w - 1.
std::vector<double> AtrRegimeShift(absl::Span<const double> high,
                                   absl::Span<const double> low,
                                   absl::Span<const double> close,
                                   int atr_period = kDxPeriod,
                                   int mean_window = kAtrMeanWindow);

// Range breakout × relative volume over the PREVIOUS n bars (not t itself):
// hi = max(h[t-n..t-1]), lo = min(l[t-n..t-1]);
// breakout = (c[t] - hi) / (hi - lo) if c[t] > hi,
//            (c[t] - lo) / (hi - lo) if c[t] < lo, else 0 (0 if hi == lo);
// relvol = v[t] / mean(v[t-n..t-1]), 1 if that mean is 0;
// result = breakout·relvol. First defined at index n.
std::vector<double> RangeBreakoutVolume(absl::Span<const double> high,
                                        absl::Span<const double> low,
                                        absl::Span<const double> close,
                                        absl::Span<const double> volume,
                                        int lookback = kBreakoutLookback);

// ---- The feature set -------------------------------------------------------

inline constexpr int kFeaturesPerAsset = 14;

// Per-asset feature names in column order (kFeaturesPerAsset of them):
// open, high, low, close, volume, macd, macd_signal, macd_hist, rsi_14,
// cci_14, dx_14, atr_regime_shift, range_breakout_volume, adx_second_diff.
const std::vector<std::string>& DefaultFeatureNames();

// Rows at the start of each domain before every feature is defined: the
// largest first-defined index in the table above, 63 (atr_regime_shift).
int64_t FeatureWarmupRows();

// Computes the default features from dataset->bars separately within each
// domain (no indicator runs across a domain boundary), then drops the first
// FeatureWarmupRows() rows of every domain from timestamps, bars, features
// and domains; a domain with <= FeatureWarmupRows() rows is removed. Sets
// feature_names and features (T × n·14, features[t·F + i·14 + j]) and adds
// the number of removed rows to warmup_rows_dropped. Existing features are
// replaced. Every remaining feature value is finite.
// Errors (dataset unchanged): kInvalidArgument if there are no assets, the
// shapes of timestamps/bars/domains disagree, domains do not cover [0, T) in
// order, a bar is not finite, or no domain has more than FeatureWarmupRows()
// rows (the message says how many are needed).
absl::Status ComputeFeatures(Dataset* dataset);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_FEATURES_H_
