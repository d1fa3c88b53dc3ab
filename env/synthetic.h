// Built-in synthetic market: correlated assets with regime switches (trend,
// mean reversion, crash), realistic price scales and minimum order sizes,
// deterministic by seed. The data of the demo and of most tests.
// Thread-compatible (pure functions).
#ifndef RISTRETTO_ENV_SYNTHETIC_H_
#define RISTRETTO_ENV_SYNTHETIC_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "env/dataset.h"
#include "env/features.h"
#include "env/market_data.h"

namespace ristretto::env {

struct SyntheticMarketOptions {
  // Number of assets, 1..64. The first ten have real-looking symbols and
  // price scales (ADAUSD … XRPUSD); more are named SYN10USD, SYN11USD, ….
  int num_assets = 7;
  // Bars generated, before the feature warm-up is dropped.
  int64_t num_rows = 10000;
  // Bar interval in seconds (1800 = 30 minutes, like the original's set).
  int64_t interval_seconds = 1800;
  // Timestamp of the first bar, epoch seconds (rounded down to the grid).
  int64_t start_time = 1640995200;  // 2022-01-01T00:00:00Z
  uint64_t seed = 1;
  // Per-bar volatility of log returns in a calm regime (0.01 = 1 %).
  double volatility = 0.008;
  // Correlation of every pair of assets' shocks through one market factor.
  double correlation = 0.6;
  // Mean length of a trend or mean-reversion regime, in bars.
  double mean_regime_bars = 400;
  // Chance that a regime switch goes to a crash (short, volatile, falling).
  double crash_probability = 0.08;
  // 0 = none. With p > 0 each bar's volume tells the sign of the return two
  // bars later (volume ×(1 + p) before an up bar, ×(1 − p/2) before a down
  // bar), and that return's drift follows the sign with strength p·σ. Two
  // bars, because the env executes a decision taken on bar t's observation
  // at bar t+1's close, so bar t+2's return is what it can earn: an
  // exploitable, known signal for learning tests.
  double predictability = 0.0;
  // Persistence of the planted signal, >= 1. The hidden up/down sign that
  // bar t's volume reveals for bar t+2 is redrawn (a fair coin) with chance
  // 1 / signal_bars each bar and kept otherwise, so a run of equal signs
  // lasts 2·signal_bars bars on average. 1 = a fresh sign every bar (the
  // default; the signal flips every ~2 bars, too fast to trade after fees);
  // ~10 makes it exploitable. The random draws are the same for every value,
  // so with predictability 0 the bars do not depend on it.
  double signal_bars = 1.0;

  // ---- Realistic structure (every default leaves the bars as before) ----
  // Strength of the trend regimes' drift: a trend gives every asset a drift
  // of direction·σ·(0.02 … 0.08)·trend_strength per bar (one direction for
  // all assets). >= 0; 1 = as before.
  double trend_strength = 1.0;
  // Volatility clustering, GARCH(1,1) on each asset's unit shock z: the
  // variance multiplier h (unconditional mean 1, starting at 1) follows
  // h[t] = (1 − α − β) + α·z[t−1]²·h[t−1] + β·h[t−1], and bar t's shock is
  // σ_i·√h[t]·z[t]. α, β >= 0, α + β < 1; 0, 0 = constant volatility.
  double garch_alpha = 0.0;
  double garch_beta = 0.0;
  // Fat tails: the market and the idiosyncratic shocks are Student-t with
  // tail_dof degrees of freedom, scaled to unit variance (excess kurtosis
  // 6/(ν − 4) for ν > 4). 0 = normal shocks; else an integer in [3, 100].
  int tail_dof = 0;
  // The features computed by GenerateSyntheticDataset.
  FeatureSet feature_set = FeatureSet::kIndicators;
};

// The first out-of-range option of `options`, if any: `key` is its name as
// a study spells it under dataset.synthetic (assets, rows, interval,
// volatility, correlation, regime_bars, crash_probability, predictability,
// signal_bars, trend_strength, garch_alpha, garch_beta, tail_dof) and
// `problem` says why, starting with the value. The one range check of
// both the generator and the study parser.
struct SyntheticOptionProblem {
  std::string key;
  std::string problem;
};
std::optional<SyntheticOptionProblem> FindSyntheticOptionProblem(
    const SyntheticMarketOptions& options);

// Generates raw OHLCV bars (one domain, features not computed).
// Errors: kInvalidArgument for out-of-range options, naming the option.
absl::StatusOr<Dataset> GenerateSyntheticBars(
    const SyntheticMarketOptions& options);

// GenerateSyntheticBars followed by ComputeFeatures of options.feature_set:
// a ready dataset.
absl::StatusOr<Dataset> GenerateSyntheticDataset(
    const SyntheticMarketOptions& options);

// A market for benchmarks with any feature count: synthetic prices and
// normal features with standard deviation 100 (T × F; like raw indicator
// values before norm_tech), one domain. Not for learning.
absl::StatusOr<std::shared_ptr<const MarketData>> GenerateBenchmarkMarket(
    int num_assets, int64_t num_features, int64_t num_rows, uint64_t seed);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_SYNTHETIC_H_
