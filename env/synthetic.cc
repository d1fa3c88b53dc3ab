#include "env/synthetic.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "env/features.h"

namespace ristretto::env {
namespace {

struct AssetProfile {
  const char* symbol;
  double start_price;    // quote currency
  double min_order_qty;  // coins, 1.1 safety factor included
  double vol_scale;      // relative volatility
  double base_volume;    // coins per bar
};

// Symbols sorted ascending, as importers order columns.
constexpr AssetProfile kProfiles[] = {
    {"ADAUSD", 0.45, 1.1, 1.3, 2.0e6},
    {"AVAXUSD", 22.0, 0.011, 1.5, 9.0e4},
    {"BNBUSD", 310.0, 0.0011, 1.0, 6.0e3},
    {"BTCUSD", 42000.0, 0.000011, 0.8, 40.0},
    {"DOGEUSD", 0.08, 11.0, 1.6, 1.5e7},
    {"ETHUSD", 2300.0, 0.00011, 0.9, 700.0},
    {"LINKUSD", 14.0, 0.011, 1.4, 1.2e5},
    {"LTCUSD", 70.0, 0.0011, 1.1, 2.5e4},
    {"SOLUSD", 95.0, 0.0011, 1.5, 3.0e4},
    {"XRPUSD", 0.55, 1.1, 1.2, 3.0e6},
};
constexpr int kNumProfiles = sizeof(kProfiles) / sizeof(kProfiles[0]);

enum class Regime { kTrend, kMeanRevert, kCrash };

struct Profile {
  std::string symbol;
  double start_price, min_order_qty, vol_scale, base_volume;
};

Profile ProfileFor(int i) {
  if (i < kNumProfiles) {
    const AssetProfile& p = kProfiles[i];
    return Profile{p.symbol, p.start_price, p.min_order_qty, p.vol_scale,
                   p.base_volume};
  }
  // Extra assets: prices spread over decades, deterministically.
  const double price = std::pow(10.0, (i % 5) - 1.0) * 3.0;
  return Profile{absl::StrCat("SYN", i, "USD"), price, 0.55 / price, 1.2,
                 1.0e5 / price};
}

// Where the dataset came from: the seed and size, and each structure
// option that differs from its default.
std::string DescribeSource(const SyntheticMarketOptions& o) {
  std::string source =
      absl::StrCat("synthetic seed=", o.seed, " assets=", o.num_assets,
                   " rows=", o.num_rows);
  if (o.signal_bars != 1.0)
    absl::StrAppend(&source, " signal_bars=", o.signal_bars);
  if (o.trend_strength != 1.0)
    absl::StrAppend(&source, " trend_strength=", o.trend_strength);
  if (o.mean_regime_bars != SyntheticMarketOptions{}.mean_regime_bars)
    absl::StrAppend(&source, " regime_bars=", o.mean_regime_bars);
  if (o.garch_alpha != 0 || o.garch_beta != 0) {
    absl::StrAppend(&source, " garch=", o.garch_alpha, "/", o.garch_beta);
  }
  if (o.tail_dof != 0) absl::StrAppend(&source, " tail_dof=", o.tail_dof);
  return source;
}

}  // namespace

std::optional<SyntheticOptionProblem> FindSyntheticOptionProblem(
    const SyntheticMarketOptions& o) {
  // Closed or half-open ranges; NaN fails every comparison.
  auto outside = [](const char* key, double v, const char* range) {
    return SyntheticOptionProblem{key, absl::StrCat(v, " is outside ", range)};
  };
  if (o.num_assets < 1 || o.num_assets > 64) {
    return outside("assets", o.num_assets, "[1, 64]");
  }
  if (o.num_rows < 2) {
    return SyntheticOptionProblem{"rows",
                                  absl::StrCat(o.num_rows, " must be >= 2")};
  }
  if (o.interval_seconds <= 0) {
    return SyntheticOptionProblem{
        "interval", absl::StrCat(o.interval_seconds, " s must be > 0")};
  }
  if (!(o.volatility > 0 && o.volatility < 0.5)) {
    return outside("volatility", o.volatility, "(0, 0.5)");
  }
  if (!(o.correlation >= 0 && o.correlation < 1)) {
    return outside("correlation", o.correlation, "[0, 1)");
  }
  if (!(o.mean_regime_bars >= 1 && o.mean_regime_bars <= 1e9)) {
    return outside("regime_bars", o.mean_regime_bars, "[1, 1e9]");
  }
  if (!(o.crash_probability >= 0 && o.crash_probability <= 1)) {
    return outside("crash_probability", o.crash_probability, "[0, 1]");
  }
  if (!(o.predictability >= 0 && o.predictability <= 1)) {
    return outside("predictability", o.predictability, "[0, 1]");
  }
  if (!(o.signal_bars >= 1 && o.signal_bars <= 1e9)) {
    return outside("signal_bars", o.signal_bars, "[1, 1e9]");
  }
  if (!(o.trend_strength >= 0 && o.trend_strength <= 100)) {
    return outside("trend_strength", o.trend_strength, "[0, 100]");
  }
  if (!(o.garch_alpha >= 0 && o.garch_alpha < 1)) {
    return outside("garch_alpha", o.garch_alpha, "[0, 1)");
  }
  if (!(o.garch_beta >= 0 && o.garch_alpha + o.garch_beta < 1)) {
    return SyntheticOptionProblem{
        "garch_beta",
        absl::StrCat(o.garch_beta,
                     " must be >= 0 with garch_alpha + garch_beta < 1 "
                     "(garch_alpha is ",
                     o.garch_alpha, ")")};
  }
  if (o.tail_dof != 0 && (o.tail_dof < 3 || o.tail_dof > 100)) {
    return SyntheticOptionProblem{
        "tail_dof", absl::StrCat(o.tail_dof,
                                 " is neither 0 (normal shocks) nor in "
                                 "[3, 100]")};
  }
  return std::nullopt;
}

absl::StatusOr<Dataset> GenerateSyntheticBars(
    const SyntheticMarketOptions& options) {
  const SyntheticMarketOptions& o = options;
  if (std::optional<SyntheticOptionProblem> bad =
          FindSyntheticOptionProblem(o)) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic option ", bad->key, ": ", bad->problem));
  }
  const int n = o.num_assets;
  const int64_t T = o.num_rows;
  Rng rng(o.seed);

  std::vector<Profile> profiles;
  profiles.reserve(n);
  for (int i = 0; i < n; ++i) profiles.push_back(ProfileFor(i));
  std::sort(
      profiles.begin(), profiles.end(),
      [](const Profile& a, const Profile& b) { return a.symbol < b.symbol; });

  Dataset d;
  d.interval_seconds = o.interval_seconds;
  d.source = DescribeSource(o);
  for (const Profile& p : profiles) {
    d.assets.push_back(AssetMeta{p.symbol, p.min_order_qty});
  }
  d.timestamps.resize(T);
  // Round down to the grid (C++ % truncates toward zero for negatives).
  int64_t offset = o.start_time % o.interval_seconds;
  if (offset < 0) offset += o.interval_seconds;
  const int64_t t0 = o.start_time - offset;
  for (int64_t t = 0; t < T; ++t) d.timestamps[t] = t0 + t * o.interval_seconds;
  d.bars.resize(static_cast<size_t>(T) * n * kNumBarFields);
  d.domains = {Domain{0, T}};

  std::vector<double> log_price(n), anchor(n), trend_drift(n);
  for (int i = 0; i < n; ++i) {
    log_price[i] = std::log(profiles[i].start_price);
    anchor[i] = log_price[i];
  }
  Regime regime = Regime::kTrend;
  const double sigma = o.volatility;
  auto new_trend = [&]() {
    const double direction = rng.Uniform() < 0.5 ? -1.0 : 1.0;
    for (int i = 0; i < n; ++i) {
      trend_drift[i] =
          direction * sigma * (0.02 + 0.06 * rng.Uniform()) * o.trend_strength;
    }
  };
  new_trend();
  const double rho = o.correlation;
  const double p = o.predictability;
  // Planted signal signs (±1) for bars t+1 and t+2. Bar t's volume reveals
  // the sign of bar t+2's return: an env decision taken on bar t's
  // observation executes at bar t+1's close, so t+2 is the return it earns.
  // Each bar the newest sign is redrawn with chance 1 / signal_bars, from one
  // uniform u: redraw if u < q, then down if u < q/2 (q = 1: a fair coin
  // every bar, the same draws as before the option existed).
  const double redraw = 1.0 / o.signal_bars;
  std::vector<double> sign_next(n), sign_after(n);
  for (int i = 0; i < n; ++i) {
    sign_next[i] = rng.Uniform() < 0.5 ? -1.0 : 1.0;
    sign_after[i] = rng.Uniform() < 0.5 ? -1.0 : 1.0;
  }

  // A unit-variance shock: normal, or Student-t with tail_dof degrees of
  // freedom scaled by √((ν − 2)/ν) (Z / √(V/ν) with V a sum of ν squared
  // normals). With tail_dof 0 it is one normal draw, as before.
  const int dof = o.tail_dof;
  auto unit_shock = [&]() {
    const double z = rng.Normal();
    if (dof == 0) return z;
    double v = 0;
    for (int k = 0; k < dof; ++k) {
      const double g = rng.Normal();
      v += g * g;
    }
    return z * std::sqrt((dof - 2.0) / std::max(v, 1e-300));
  };
  const double alpha = o.garch_alpha, beta = o.garch_beta;
  std::vector<double> garch_h(n, 1.0);

  for (int64_t t = 0; t < T; ++t) {
    // Regime switching (a Markov chain; crashes are short).
    const double leave =
        regime == Regime::kCrash ? 1.0 / 24.0 : 1.0 / o.mean_regime_bars;
    if (t > 0 && rng.Uniform() < leave) {
      const double u = rng.Uniform();
      if (regime != Regime::kCrash && u < o.crash_probability) {
        regime = Regime::kCrash;
      } else if (u < 0.5 + o.crash_probability / 2) {
        regime = Regime::kTrend;
        new_trend();
      } else {
        regime = Regime::kMeanRevert;
        anchor = log_price;
      }
    }
    const double vol_mult = regime == Regime::kCrash        ? 2.5
                            : regime == Regime::kMeanRevert ? 0.8
                                                            : 1.0;
    const double market_shock = unit_shock();
    for (int i = 0; i < n; ++i) {
      const double s =
          sigma * profiles[i].vol_scale * vol_mult * std::sqrt(garch_h[i]);
      const double shock =
          std::sqrt(rho) * market_shock + std::sqrt(1.0 - rho) * unit_shock();
      if (alpha != 0 || beta != 0) {
        garch_h[i] =
            (1.0 - alpha - beta) + (alpha * shock * shock + beta) * garch_h[i];
      }
      double drift = 0.0;
      switch (regime) {
        case Regime::kTrend:
          drift = trend_drift[i];
          break;
        case Regime::kMeanRevert:
          drift = -0.02 * (log_price[i] - anchor[i]);
          break;
        case Regime::kCrash:
          drift = -0.6 * s;
          break;
      }
      const double this_sign = sign_next[i];
      sign_next[i] = sign_after[i];
      const double u = rng.Uniform();
      if (u < redraw) sign_after[i] = u < 0.5 * redraw ? -1.0 : 1.0;
      const double ret = drift + s * shock + p * s * this_sign;
      const double open = std::exp(log_price[i]);
      log_price[i] += ret;
      const double close = std::exp(log_price[i]);
      const double wick_up = std::fabs(rng.Normal()) * s * 0.5;
      const double wick_down = std::fabs(rng.Normal()) * s * 0.5;
      const double high = std::max(open, close) * std::exp(wick_up);
      const double low = std::min(open, close) * std::exp(-wick_down);
      double volume = profiles[i].base_volume *
                      std::exp(0.35 * rng.Normal() + 8.0 * std::fabs(ret));
      if (p > 0) volume *= sign_after[i] > 0 ? 1.0 + p : 1.0 - p / 2;
      double* bar = &d.bars[(static_cast<size_t>(t) * n + i) * kNumBarFields];
      bar[kOpen] = open;
      bar[kHigh] = high;
      bar[kLow] = low;
      bar[kClose] = close;
      bar[kVolume] = volume;
    }
  }
  return d;
}

absl::StatusOr<Dataset> GenerateSyntheticDataset(
    const SyntheticMarketOptions& options) {
  absl::StatusOr<Dataset> bars = GenerateSyntheticBars(options);
  if (!bars.ok()) return bars.status();
  if (absl::Status s = ComputeFeatures(&*bars, options.feature_set); !s.ok()) {
    return s;
  }
  return bars;
}

absl::StatusOr<std::shared_ptr<const MarketData>> GenerateBenchmarkMarket(
    int num_assets, int64_t num_features, int64_t num_rows, uint64_t seed) {
  SyntheticMarketOptions o;
  o.num_assets = num_assets;
  o.num_rows = num_rows;
  o.seed = seed;
  absl::StatusOr<Dataset> bars = GenerateSyntheticBars(o);
  if (!bars.ok()) return bars.status();
  if (num_features < 0) {
    return absl::InvalidArgumentError("num_features must be >= 0");
  }
  auto market = std::make_shared<MarketData>();
  market->num_rows = num_rows;
  market->num_assets = num_assets;
  market->num_features = num_features;
  market->price = bars->ClosePrices();
  market->assets = bars->assets;
  market->domains = bars->domains;
  market->interval_seconds = bars->interval_seconds;
  market->tech.resize(static_cast<size_t>(num_rows * num_features));
  Rng rng(seed ^ 0xfeedULL);
  for (double& v : market->tech) v = rng.Normal() * 100.0;
  return std::shared_ptr<const MarketData>(std::move(market));
}

}  // namespace ristretto::env
