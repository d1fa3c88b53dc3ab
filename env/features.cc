#include "env/features.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ristretto::env {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Span = absl::Span<const double>;

std::vector<double> NaNs(size_t n) { return std::vector<double>(n, kNaN); }

// Index of the first finite value of x, or x.size() if there is none.
size_t FirstFinite(Span x) {
  size_t s = 0;
  while (s < x.size() && !std::isfinite(x[s])) ++s;
  return s;
}

}  // namespace

std::vector<double> Ema(Span x, int span) {
  std::vector<double> out = NaNs(x.size());
  const size_t s = FirstFinite(x);
  if (s == x.size()) return out;
  const double alpha = 2.0 / (span + 1.0);
  out[s] = x[s];
  for (size_t t = s + 1; t < x.size(); ++t) {
    out[t] = alpha * x[t] + (1.0 - alpha) * out[t - 1];
  }
  return out;
}

std::vector<double> Sma(Span x, int window) {
  std::vector<double> out = NaNs(x.size());
  const size_t w = static_cast<size_t>(window);
  // Windows are at most a few dozen bars, so a direct sum per row is cheap
  // and, unlike a running sum, does not drift over 50k+ rows.
  size_t finite_run = 0;  // consecutive finite values ending at t
  for (size_t t = 0; t < x.size(); ++t) {
    finite_run = std::isfinite(x[t]) ? finite_run + 1 : 0;
    if (finite_run < w) continue;
    double sum = 0.0;
    for (size_t k = t + 1 - w; k <= t; ++k) sum += x[k];
    out[t] = sum / window;
  }
  return out;
}

std::vector<double> WilderSmooth(Span x, int period) {
  std::vector<double> out = NaNs(x.size());
  const size_t p = static_cast<size_t>(period);
  const size_t s = FirstFinite(x);
  if (x.size() < p || s > x.size() - p) return out;
  double sum = 0.0;
  for (size_t k = s; k < s + p; ++k) sum += x[k];
  out[s + p - 1] = sum / period;
  for (size_t t = s + p; t < x.size(); ++t) {
    out[t] = (out[t - 1] * (period - 1) + x[t]) / period;
  }
  return out;
}

std::vector<double> SecondDifference(Span x) {
  std::vector<double> out = NaNs(x.size());
  for (size_t t = 2; t < x.size(); ++t) {
    out[t] = x[t] - 2.0 * x[t - 1] + x[t - 2];
  }
  return out;
}

std::vector<double> TrueRange(Span high, Span low, Span close) {
  std::vector<double> out = NaNs(close.size());
  for (size_t t = 1; t < close.size(); ++t) {
    const double prev = close[t - 1];
    out[t] = std::max(
        {high[t] - low[t], std::abs(high[t] - prev), std::abs(low[t] - prev)});
  }
  return out;
}

Macd ComputeMacd(Span close, int fast, int slow, int signal) {
  const std::vector<double> ema_fast = Ema(close, fast);
  const std::vector<double> ema_slow = Ema(close, slow);
  Macd m;
  m.line.resize(close.size());
  for (size_t t = 0; t < close.size(); ++t) {
    m.line[t] = ema_fast[t] - ema_slow[t];
  }
  m.signal = Ema(m.line, signal);
  m.hist.resize(close.size());
  for (size_t t = 0; t < close.size(); ++t) {
    m.hist[t] = m.line[t] - m.signal[t];
  }
  return m;
}

std::vector<double> Rsi(Span close, int period) {
  const size_t n = close.size();
  std::vector<double> gain = NaNs(n);
  std::vector<double> loss = NaNs(n);
  for (size_t t = 1; t < n; ++t) {
    const double d = close[t] - close[t - 1];
    gain[t] = d > 0.0 ? d : 0.0;
    loss[t] = d < 0.0 ? -d : 0.0;
  }
  const std::vector<double> g = WilderSmooth(gain, period);
  const std::vector<double> l = WilderSmooth(loss, period);
  std::vector<double> out = NaNs(n);
  for (size_t t = 0; t < n; ++t) {
    if (std::isnan(g[t])) continue;
    // Zero averages stay exactly zero under Wilder smoothing, so the flat
    // cases are exact comparisons.
    if (l[t] == 0.0) {
      out[t] = g[t] == 0.0 ? 50.0 : 100.0;
    } else {
      out[t] = 100.0 - 100.0 / (1.0 + g[t] / l[t]);
    }
  }
  return out;
}

std::vector<double> Cci(Span high, Span low, Span close, int period) {
  const size_t n = close.size();
  const size_t p = static_cast<size_t>(period);
  std::vector<double> tp(n);
  for (size_t t = 0; t < n; ++t) tp[t] = (high[t] + low[t] + close[t]) / 3.0;
  std::vector<double> out = NaNs(n);
  for (size_t t = p - 1; t < n; ++t) {
    const size_t begin = t + 1 - p;
    double sum = 0.0;
    double lo = tp[begin];
    double hi = tp[begin];
    for (size_t k = begin; k <= t; ++k) {
      sum += tp[k];
      lo = std::min(lo, tp[k]);
      hi = std::max(hi, tp[k]);
    }
    // A flat window has zero deviation; testing it exactly avoids dividing
    // by the rounding residue of mean(TP) - TP (e.g. mean of 3 × 0.1).
    if (lo == hi) {
      out[t] = 0.0;
      continue;
    }
    const double mean = sum / period;
    double dev = 0.0;
    for (size_t k = begin; k <= t; ++k) dev += std::abs(tp[k] - mean);
    const double mad = dev / period;
    out[t] = mad == 0.0 ? 0.0 : (tp[t] - mean) / (0.015 * mad);
  }
  return out;
}

DirectionalIndex ComputeDirectionalIndex(Span high, Span low, Span close,
                                         int period) {
  const size_t n = close.size();
  std::vector<double> plus_dm = NaNs(n);
  std::vector<double> minus_dm = NaNs(n);
  for (size_t t = 1; t < n; ++t) {
    const double up = high[t] - high[t - 1];
    const double down = low[t - 1] - low[t];
    plus_dm[t] = (up > down && up > 0.0) ? up : 0.0;
    minus_dm[t] = (down > up && down > 0.0) ? down : 0.0;
  }
  const std::vector<double> sp = WilderSmooth(plus_dm, period);
  const std::vector<double> sm = WilderSmooth(minus_dm, period);
  const std::vector<double> str =
      WilderSmooth(TrueRange(high, low, close), period);
  DirectionalIndex d{NaNs(n), NaNs(n), NaNs(n)};
  for (size_t t = 0; t < n; ++t) {
    if (std::isnan(str[t])) continue;
    const double pdi = str[t] == 0.0 ? 0.0 : 100.0 * sp[t] / str[t];
    const double mdi = str[t] == 0.0 ? 0.0 : 100.0 * sm[t] / str[t];
    d.plus_di[t] = pdi;
    d.minus_di[t] = mdi;
    const double sum = pdi + mdi;
    d.dx[t] = sum == 0.0 ? 0.0 : 100.0 * std::abs(pdi - mdi) / sum;
  }
  return d;
}

std::vector<double> Dx(Span high, Span low, Span close, int period) {
  return ComputeDirectionalIndex(high, low, close, period).dx;
}

std::vector<double> Adx(Span high, Span low, Span close, int period) {
  return WilderSmooth(Dx(high, low, close, period), period);
}

std::vector<double> AdxSecondDiff(Span high, Span low, Span close, int period) {
  return SecondDifference(Adx(high, low, close, period));
}

std::vector<double> Atr(Span high, Span low, Span close, int period) {
  return WilderSmooth(TrueRange(high, low, close), period);
}

std::vector<double> AtrRegimeShift(Span high, Span low, Span close,
                                   int atr_period, int mean_window) {
  const std::vector<double> atr = Atr(high, low, close, atr_period);
  const std::vector<double> mean = Sma(atr, mean_window);
  std::vector<double> out = NaNs(close.size());
  for (size_t t = 0; t < close.size(); ++t) {
    if (std::isnan(mean[t])) continue;
    out[t] = mean[t] == 0.0 ? 0.0 : atr[t] / mean[t] - 1.0;
  }
  return out;
}

std::vector<double> RangeBreakoutVolume(Span high, Span low, Span close,
                                        Span volume, int lookback) {
  const size_t n = close.size();
  const size_t w = static_cast<size_t>(lookback);
  std::vector<double> out = NaNs(n);
  for (size_t t = w; t < n; ++t) {
    double hi = high[t - w];
    double lo = low[t - w];
    double vol_sum = 0.0;
    for (size_t k = t - w; k < t; ++k) {
      hi = std::max(hi, high[k]);
      lo = std::min(lo, low[k]);
      vol_sum += volume[k];
    }
    double breakout = 0.0;
    if (hi != lo) {
      if (close[t] > hi) {
        breakout = (close[t] - hi) / (hi - lo);
      } else if (close[t] < lo) {
        breakout = (close[t] - lo) / (hi - lo);
      }
    }
    const double vol_mean = vol_sum / lookback;
    const double relvol = vol_mean == 0.0 ? 1.0 : volume[t] / vol_mean;
    out[t] = breakout * relvol;
  }
  return out;
}

const std::vector<std::string>& DefaultFeatureNames() {
  static const auto* const kNames =
      new std::vector<std::string>{"open",
                                   "high",
                                   "low",
                                   "close",
                                   "volume",
                                   "macd",
                                   "macd_signal",
                                   "macd_hist",
                                   "rsi_14",
                                   "cci_14",
                                   "dx_14",
                                   "atr_regime_shift",
                                   "range_breakout_volume",
                                   "adx_second_diff"};
  return *kNames;
}

int64_t FeatureWarmupRows() {
  // First defined index of each indicator (see features.h); MACD and the raw
  // bars are defined from row 0.
  return std::max({
      int64_t{kRsiPeriod},                      // rsi_14
      int64_t{kCciPeriod - 1},                  // cci_14
      int64_t{kDxPeriod},                       // dx_14
      int64_t{kDxPeriod + kAtrMeanWindow - 1},  // atr_regime_shift
      int64_t{kBreakoutLookback},               // range_breakout_volume
      int64_t{2 * kDxPeriod + 1},               // adx_second_diff
  });
}

const char* FeatureSetName(FeatureSet set) {
  return set == FeatureSet::kPortfolio ? "portfolio" : "indicators";
}

absl::StatusOr<FeatureSet> ParseFeatureSet(absl::string_view name) {
  if (name == "indicators") return FeatureSet::kIndicators;
  if (name == "portfolio") return FeatureSet::kPortfolio;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown feature set '", name.substr(0, 40),
                   "' (known: indicators, portfolio)"));
}

absl::StatusOr<FeatureSet> FeatureSetOf(const std::vector<std::string>& names) {
  for (FeatureSet set : {FeatureSet::kIndicators, FeatureSet::kPortfolio}) {
    if (names == FeatureNames(set)) return set;
  }
  return absl::InvalidArgumentError(
      "the feature names are neither the indicators nor the portfolio set");
}

const std::vector<std::string>& PortfolioFeatureNames() {
  static const auto* const kNames =
      new std::vector<std::string>{"ret_1",
                                   "ret_6",
                                   "ret_24",
                                   "ret_168",
                                   "ret_720",
                                   "trend_720",
                                   "drawdown_720",
                                   "vol_ratio_24_168",
                                   "vol_ratio_168_720",
                                   "volume_z_168",
                                   "macd_norm",
                                   "macd_hist_norm",
                                   "rsi_14",
                                   "cci_14",
                                   "dx_14",
                                   "atr_regime_shift",
                                   "range_breakout_volume",
                                   "adx_second_diff"};
  return *kNames;
}

const std::vector<std::string>& FeatureNames(FeatureSet set) {
  return set == FeatureSet::kPortfolio ? PortfolioFeatureNames()
                                       : DefaultFeatureNames();
}

int64_t FeatureWarmupRows(FeatureSet set) {
  // ret_720 needs c[t − 720]; σ_720 the returns r[t − 719 … t], each from
  // the close before it. The indicators' warm-up (63) is shorter.
  if (set == FeatureSet::kPortfolio) return kLongWindow;
  return FeatureWarmupRows();
}

namespace {

// Mean and population standard deviation of x[t−w+1 … t] for every t
// whose window starts at or after `first` (the series' first defined
// index); NaN before. Direct per row (windows of at most 720 bars over tens
// of thousands of rows: no running sum to drift).
struct RollingMoments {
  std::vector<double> mean, std;
};
RollingMoments RollingMeanStd(const std::vector<double>& x, size_t w,
                              size_t first) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  RollingMoments m{std::vector<double>(x.size(), nan),
                   std::vector<double>(x.size(), nan)};
  for (size_t t = first + w - 1; t < x.size(); ++t) {
    double mean = 0;
    for (size_t k = t + 1 - w; k <= t; ++k) mean += x[k];
    mean /= static_cast<double>(w);
    double var = 0;
    for (size_t k = t + 1 - w; k <= t; ++k)
      var += (x[k] - mean) * (x[k] - mean);
    m.mean[t] = mean;
    m.std[t] = std::sqrt(var / static_cast<double>(w));
  }
  return m;
}

double Clip(double v) {
  if (std::isnan(v)) return v;
  return std::clamp(v, -kPortfolioClip, kPortfolioClip);
}

// a / b, 0 when b is 0 (a flat price); NaN propagates.
double SafeRatio(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return b == 0.0 ? 0.0 : a / b;
}

// ln(a / b) for a, b > 0; 0 when either is 0.
double SafeLogRatio(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return a > 0 && b > 0 ? std::log(a / b) : 0.0;
}

}  // namespace

std::vector<double> PortfolioFeatures(Span high, Span low, Span close,
                                      Span volume) {
  const size_t n = close.size();
  constexpr size_t k = kPortfolioFeaturesPerAsset;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> out(n * k, nan);
  if (n == 0) return out;
  std::vector<double> r(n, nan);
  for (size_t t = 1; t < n; ++t) r[t] = SafeLogRatio(close[t], close[t - 1]);
  // σ_w: r[0] is undefined, so the windows start at r[1].
  const std::vector<double> vol24 = RollingMeanStd(r, 24, 1).std;
  const std::vector<double> vol168 = RollingMeanStd(r, kVolWindow, 1).std;
  const std::vector<double> vol720 = RollingMeanStd(r, kLongWindow, 1).std;
  const std::vector<double> sma720 = Sma(close, kLongWindow);
  std::vector<double> log_volume(n);
  for (size_t t = 0; t < n; ++t) {
    log_volume[t] = std::log1p(std::max(volume[t], 0.0));
  }
  const RollingMoments volume_moments =
      RollingMeanStd(log_volume, kVolWindow, 0);
  const Macd macd = ComputeMacd(close);
  const std::vector<double> rsi = Rsi(close);
  const std::vector<double> cci = Cci(high, low, close);
  const std::vector<double> dx = Dx(high, low, close);
  const std::vector<double> atr_shift = AtrRegimeShift(high, low, close);
  const std::vector<double> breakout =
      RangeBreakoutVolume(high, low, close, volume);
  const std::vector<double> adx2 = AdxSecondDiff(high, low, close);
  constexpr int kHorizons[] = {1, 6, 24, 168, kLongWindow};
  const size_t lw = static_cast<size_t>(kLongWindow);
  for (size_t t = 0; t < n; ++t) {
    double* row = &out[t * k];
    const double sigma = vol168[t];
    for (int j = 0; j < 5; ++j) {
      const size_t h = static_cast<size_t>(kHorizons[j]);
      if (t < h || std::isnan(sigma)) continue;
      row[j] = Clip(SafeRatio(SafeLogRatio(close[t], close[t - h]),
                              sigma * std::sqrt(static_cast<double>(h))));
    }
    const double long_scale = sigma * std::sqrt(static_cast<double>(lw));
    row[5] = Clip(SafeRatio(SafeLogRatio(close[t], sma720[t]), long_scale));
    if (t + 1 >= lw) {
      double high_max = high[t + 1 - lw];
      for (size_t q = t + 2 - lw; q <= t; ++q) {
        high_max = std::max(high_max, high[q]);
      }
      row[6] = Clip(SafeRatio(SafeLogRatio(close[t], high_max), long_scale));
    }
    row[7] = Clip(SafeLogRatio(vol24[t], sigma));
    row[8] = Clip(SafeLogRatio(sigma, vol720[t]));
    if (t + 1 >= static_cast<size_t>(kVolWindow)) {
      const double mean = volume_moments.mean[t];
      // A constant volume leaves only rounding in the variance: 0, not a
      // z-score of rounding noise.
      double sd = volume_moments.std[t];
      if (sd <= 1e-12 * std::max(1.0, std::abs(mean))) sd = 0;
      row[9] = Clip(SafeRatio(log_volume[t] - mean, sd));
    }
    row[10] = Clip(SafeRatio(macd.line[t], close[t] * sigma));
    row[11] = Clip(SafeRatio(macd.hist[t], close[t] * sigma));
    row[12] = Clip(rsi[t] / 50.0 - 1.0);
    row[13] = Clip(cci[t] / 100.0);
    row[14] = Clip(dx[t] / 50.0 - 1.0);
    row[15] = Clip(atr_shift[t]);
    row[16] = Clip(breakout[t]);
    row[17] = Clip(adx2[t] / 10.0);
  }
  return out;
}

absl::Status ComputeFeatures(Dataset* dataset, FeatureSet set) {
  Dataset& d = *dataset;
  const int n = d.num_assets();
  const int64_t rows = d.num_rows();
  if (n <= 0) {
    return absl::InvalidArgumentError("ComputeFeatures: dataset has no assets");
  }
  const size_t row_width = static_cast<size_t>(n) * kNumBarFields;
  if (d.bars.size() != static_cast<size_t>(rows) * row_width) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ComputeFeatures: bars has ", d.bars.size(), " values, expected ", rows,
        " rows × ", n, " assets × ", kNumBarFields, " = ",
        static_cast<size_t>(rows) * row_width));
  }
  int64_t expected_begin = 0;
  for (const Domain& dom : d.domains) {
    if (dom.begin != expected_begin || dom.end <= dom.begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ComputeFeatures: domains must be non-empty, ascending and "
          "contiguous from row 0; found [",
          dom.begin, ", ", dom.end, ") where row ", expected_begin,
          " was expected to start one"));
    }
    expected_begin = dom.end;
  }
  if (expected_begin != rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("ComputeFeatures: domains cover [0, ", expected_begin,
                     ") but the dataset has ", rows, " rows"));
  }
  for (size_t k = 0; k < d.bars.size(); ++k) {
    if (!std::isfinite(d.bars[k])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ComputeFeatures: bar value at row ", k / row_width, ", asset ",
          (k % row_width) / kNumBarFields, " is not finite"));
    }
  }

  const int64_t warmup = FeatureWarmupRows(set);
  const int per_asset = static_cast<int>(FeatureNames(set).size());
  int64_t kept_rows = 0;
  int64_t longest = 0;
  for (const Domain& dom : d.domains) {
    longest = std::max(longest, dom.size());
    if (dom.size() > warmup) kept_rows += dom.size() - warmup;
  }
  if (kept_rows == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ComputeFeatures: no rows remain after dropping the ", warmup,
        " warm-up rows of each domain; a domain needs at least ", warmup + 1,
        " rows, the longest has ", longest));
  }

  const size_t f = static_cast<size_t>(n) * per_asset;
  std::vector<int64_t> timestamps;
  std::vector<double> bars;
  std::vector<double> features(static_cast<size_t>(kept_rows) * f);
  std::vector<Domain> domains;
  timestamps.reserve(kept_rows);
  bars.reserve(static_cast<size_t>(kept_rows) * row_width);

  int64_t out_row = 0;
  for (const Domain& dom : d.domains) {
    const int64_t len = dom.size();
    if (len <= warmup) continue;
    const int64_t keep = len - warmup;
    const int64_t first = dom.begin + warmup;
    timestamps.insert(timestamps.end(), d.timestamps.begin() + first,
                      d.timestamps.begin() + dom.end);
    bars.insert(bars.end(), d.bars.begin() + first * row_width,
                d.bars.begin() + dom.end * row_width);
    domains.push_back({out_row, out_row + keep});

    std::vector<double> o(len), h(len), l(len), c(len), v(len);
    for (int i = 0; i < n; ++i) {
      for (int64_t t = 0; t < len; ++t) {
        const double* bar = &d.bars[((dom.begin + t) * n + i) * kNumBarFields];
        o[t] = bar[kOpen];
        h[t] = bar[kHigh];
        l[t] = bar[kLow];
        c[t] = bar[kClose];
        v[t] = bar[kVolume];
      }
      if (set == FeatureSet::kPortfolio) {
        const std::vector<double> table = PortfolioFeatures(h, l, c, v);
        for (int64_t t = 0; t < keep; ++t) {
          std::copy_n(&table[(warmup + t) * per_asset], per_asset,
                      &features[(out_row + t) * f + i * per_asset]);
        }
        continue;
      }
      const Macd macd = ComputeMacd(c);
      const std::vector<double> columns[kFeaturesPerAsset] = {
          o,
          h,
          l,
          c,
          v,
          macd.line,
          macd.signal,
          macd.hist,
          Rsi(c),
          Cci(h, l, c),
          Dx(h, l, c),
          AtrRegimeShift(h, l, c),
          RangeBreakoutVolume(h, l, c, v),
          AdxSecondDiff(h, l, c),
      };
      for (int64_t t = 0; t < keep; ++t) {
        double* row = &features[(out_row + t) * f + i * kFeaturesPerAsset];
        for (int j = 0; j < kFeaturesPerAsset; ++j) {
          row[j] = columns[j][warmup + t];
        }
      }
    }
    out_row += keep;
  }

  for (size_t q = 0; set == FeatureSet::kPortfolio && q < features.size();
       ++q) {
    if (!std::isfinite(features[q])) {  // a defect of the features above
      return absl::InternalError(absl::StrCat(
          "ComputeFeatures: feature ", FeatureNames(set)[q % f % per_asset],
          " of asset ", (q % f) / per_asset, " at kept row ", q / f,
          " is not finite"));
    }
  }
  d.timestamps = std::move(timestamps);
  d.bars = std::move(bars);
  d.features = std::move(features);
  d.domains = std::move(domains);
  d.feature_names = FeatureNames(set);
  d.warmup_rows_dropped += rows - kept_rows;
  return absl::OkStatus();
}

}  // namespace ristretto::env
