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
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// ---- The feature sets ------------------------------------------------------

// Which per-asset features a dataset carries (its feature_names say which:
// FeatureSetOf). Policies are tied to their dataset's names by the contract.
enum class FeatureSet {
  // The original 14 (DefaultFeatureNames): raw OHLCV levels and the
  // classic indicators, windows up to 63 bars. Kept for parity with the
  // original system's traces and older datasets.
  kIndicators,
  // PortfolioFeatureNames: scale-free features that travel across assets
  // (no price level: BTC at 69,000 and a coin at 0.0068 look alike) and see
  // up to 720 bars (a month of hourly bars): log returns over 1, 6, 24, 168
  // and 720 bars and the distance to the 720-bar mean and high, each in
  // units of the asset's own 168-bar volatility; volatility regimes; a
  // volume z-score; and the indicators of kIndicators made scale-free.
  kPortfolio,
};

// "indicators", "portfolio".
const char* FeatureSetName(FeatureSet set);
// kInvalidArgument naming the known sets for anything else.
absl::StatusOr<FeatureSet> ParseFeatureSet(absl::string_view name);
// The set whose names are exactly `names`; kInvalidArgument otherwise.
absl::StatusOr<FeatureSet> FeatureSetOf(const std::vector<std::string>& names);

inline constexpr int kFeaturesPerAsset = 14;

// Per-asset feature names in column order (kFeaturesPerAsset of them):
// open, high, low, close, volume, macd, macd_signal, macd_hist, rsi_14,
// cci_14, dx_14, atr_regime_shift, range_breakout_volume, adx_second_diff.
const std::vector<std::string>& DefaultFeatureNames();

// Rows at the start of each domain before every feature is defined: the
// largest first-defined index in the table above, 63 (atr_regime_shift).
int64_t FeatureWarmupRows();

// ---- The portfolio set -----------------------------------------------------

inline constexpr int kPortfolioFeaturesPerAsset = 18;
inline constexpr int kVolWindow = 168;   // σ: std of 1-bar log returns
inline constexpr int kLongWindow = 720;  // the longest window (a month of 1h)
// Every feature is clipped to ±kPortfolioClip (outliers would dominate the
// learner's running normalisation).
inline constexpr double kPortfolioClip = 10.0;

// In column order, with σ_w[t] the standard deviation of the 1-bar log
// returns r[k] = ln(c[k] / c[k−1]) over k = t−w+1 … t and σ = σ_168:
//   ret_H (H = 1, 6, 24, 168, 720)  ln(c[t] / c[t−H]) / (σ·√H)
//   trend_720        ln(c[t] / SMA_720(c)[t]) / (σ·√720)
//   drawdown_720     ln(c[t] / max(h[t−719 … t])) / (σ·√720)   (<= 0)
//   vol_ratio_24_168   ln(σ_24 / σ_168)
//   vol_ratio_168_720  ln(σ_168 / σ_720)
//   volume_z_168     (ln(1 + v[t]) − mean) / std over the last 168 bars
//   macd_norm        MACD line / (c·σ)          (kIndicators' MACD)
//   macd_hist_norm   MACD histogram / (c·σ)
//   rsi_14           RSI / 50 − 1
//   cci_14           CCI / 100
//   dx_14            DX / 50 − 1
//   atr_regime_shift, range_breakout_volume   as in kIndicators
//   adx_second_diff  ADX second difference / 10
// A ratio with a zero denominator (a flat price: σ = 0) is 0. First defined
// at row 720 of a domain (ret_720, vol_ratio_168_720).
const std::vector<std::string>& PortfolioFeatureNames();

// The names of `set` and its warm-up rows per domain.
const std::vector<std::string>& FeatureNames(FeatureSet set);
int64_t FeatureWarmupRows(FeatureSet set);

// The portfolio features of one asset's series (all of length T), T × 18
// row-major; NaN where not yet defined.
std::vector<double> PortfolioFeatures(absl::Span<const double> high,
                                      absl::Span<const double> low,
                                      absl::Span<const double> close,
                                      absl::Span<const double> volume);

// Computes the features of `set` (the default: the original indicators)
// from dataset->bars separately within each domain (no indicator runs
// across a domain boundary), then drops the first W = FeatureWarmupRows(set)
// rows of every domain from timestamps, bars, features and domains; a
// domain with <= W rows is removed. Sets feature_names (FeatureNames(set))
// and features (T × n·k, features[t·F + i·k + j], k names per asset) and
// adds the number of removed rows to warmup_rows_dropped. Existing features
// are replaced. Every remaining feature value is finite.
// Errors (dataset unchanged): kInvalidArgument if there are no assets, the
// shapes of timestamps/bars/domains disagree, domains do not cover [0, T) in
// order, a bar is not finite, or no domain has more than W rows (the
// message says how many are needed).
absl::Status ComputeFeatures(Dataset* dataset,
                             FeatureSet set = FeatureSet::kIndicators);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_FEATURES_H_
