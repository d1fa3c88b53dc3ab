#include "coordinator/core/statistics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ristretto::coordinator {
namespace {

// A std at or below this fraction of |mean| is rounding noise: treated as 0
// (the same rule as env::SharpeRatio).
constexpr double kStdRoundingTolerance = 1e-12;

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2Pi = 2.50662827463100050242;
constexpr double kE = 2.71828182845904523536;

// Largest S: C(64, 32) ≈ 1.83e18 still fits in uint64_t.
constexpr int kMaxBlocks = 64;
constexpr int kAutoBlocks = 16;
constexpr int64_t kMaxCombinationsLimit = 10'000'000;

// Acklam's rational approximation of Φ⁻¹(p) for p in (0, 1/2].
double AcklamLowerHalf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  if (p < kLow) {
    const double q = std::sqrt(-2.0 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q +
            c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) *
         q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

// Count, mean and Σ (x − mean)² of a set of values, mergeable (Chan et al.).
struct Moments {
  int64_t n = 0;
  double mean = 0;
  double m2 = 0;

  void Add(double x) {
    ++n;
    const double delta = x - mean;
    mean += delta / static_cast<double>(n);
    m2 += delta * (x - mean);
  }

  void Merge(const Moments& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    const double na = static_cast<double>(n);
    const double nb = static_cast<double>(o.n);
    const double total = na + nb;
    const double delta = o.mean - mean;
    mean += delta * nb / total;
    m2 += o.m2 + delta * delta * na * nb / total;
    n += o.n;
  }

  // Per-bar Sharpe mean / std (ddof 1); 0 when degenerate.
  double Sharpe() const {
    if (n < 2) return 0.0;
    const double std = std::sqrt(m2 / static_cast<double>(n - 1));
    if (std <= kStdRoundingTolerance * std::fabs(mean)) return 0.0;
    return mean / std;
  }
};

// binom[n][k] = C(n, k) for 0 <= k <= n <= kMaxBlocks.
std::vector<std::vector<uint64_t>> BinomialTable() {
  std::vector<std::vector<uint64_t>> binom(kMaxBlocks + 1);
  for (int n = 0; n <= kMaxBlocks; ++n) {
    binom[n].assign(n + 1, 1);
    for (int k = 1; k < n; ++k)
      binom[n][k] = binom[n - 1][k - 1] + binom[n - 1][k];
  }
  return binom;
}

// Sets chosen[0 … m−1] to the combination of m elements of {0 … s−1} with
// 0-based lexicographic rank `rank` (< C(s, m)).
void UnrankCombination(uint64_t rank, int s, int m,
                       const std::vector<std::vector<uint64_t>>& binom,
                       std::vector<int>& chosen) {
  int x = 0;
  for (int pos = 0; pos < m; ++pos) {
    while (true) {
      const int rest = s - x - 1;
      const int need = m - pos - 1;
      const uint64_t count = binom[rest][need];
      if (rank < count) break;
      rank -= count;
      ++x;
    }
    chosen[pos] = x;
    ++x;
  }
}

double Median(std::vector<double> values) {
  const size_t n = values.size();
  std::sort(values.begin(), values.end());
  if (n % 2 == 1) return values[n / 2];
  return 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

double NormalCdf(double x) { return 0.5 * std::erfc(-x / kSqrt2); }

double InverseNormalCdf(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.0) return -std::numeric_limits<double>::infinity();
  if (p == 1.0) return std::numeric_limits<double>::infinity();
  // 1 − p is exact for p in [1/2, 1] (Sterbenz), so the upper tail is as
  // accurate as the lower one.
  if (p > 0.5) return -InverseNormalCdf(1.0 - p);
  double x = AcklamLowerHalf(p);
  // One Halley step on f(x) = Φ(x) − p: x ← x − u / (1 + x·u/2) with
  // u = f(x) / φ(x). For x <= 0, Φ(x) = erfc(−x/√2)/2 keeps full relative
  // precision in the tail. Skipped if φ(x) underflows (p < ~1e-300).
  const double density = std::exp(-0.5 * x * x) / kSqrt2Pi;
  if (density > 0.0) {
    const double u = (NormalCdf(x) - p) / density;
    x -= u / (1.0 + 0.5 * x * u);
  }
  return x;
}

SharpeStats ReturnStats(absl::Span<const double> log_returns) {
  SharpeStats stats;
  const int64_t n = static_cast<int64_t>(log_returns.size());
  stats.n = n;
  if (n == 0) return stats;
  const double count = static_cast<double>(n);
  // Mean about the first element: a constant series gives exactly that
  // element back, so its deviations (and std) are exactly 0.
  const double shift = log_returns[0];
  double sum = 0.0;
  for (double x : log_returns) sum += x - shift;
  stats.mean = shift + sum / count;
  double s2 = 0.0;
  for (double x : log_returns) s2 += (x - stats.mean) * (x - stats.mean);
  stats.std = n >= 2 ? std::sqrt(s2 / (count - 1.0)) : 0.0;
  if (n < 2 || stats.std <= kStdRoundingTolerance * std::fabs(stats.mean)) {
    return stats;  // degenerate: sharpe 0, skewness 0, kurtosis 3
  }
  stats.sharpe = stats.mean / stats.std;
  // Standardised deviations z = (x − mean) / sqrt(m2): skewness = mean(z³),
  // kurtosis = mean(z⁴) (no under/overflow from raising m2 to a power).
  const double pop_sd = std::sqrt(s2 / count);
  double s3 = 0.0;
  double s4 = 0.0;
  for (double x : log_returns) {
    const double z = (x - stats.mean) / pop_sd;
    const double z2 = z * z;
    s3 += z2 * z;
    s4 += z2 * z2;
  }
  stats.skewness = s3 / count;
  stats.kurtosis = s4 / count;
  return stats;
}

double AnnualiseSharpe(double per_bar, double bars_per_year) {
  return per_bar * std::sqrt(bars_per_year);
}

absl::StatusOr<SharpeDifference> SharpeDifferenceTest(
    absl::Span<const double> a, absl::Span<const double> b) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sharpe difference: the series have ", a.size(), " and ",
                     b.size(), " values (they must be the same bars)"));
  }
  const size_t n = a.size();
  if (n < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Sharpe difference: ", n, " pairs (at least 8 are needed)"));
  }
  for (size_t t = 0; t < n; ++t) {
    if (!std::isfinite(a[t]) || !std::isfinite(b[t])) {
      return absl::InvalidArgumentError(
          absl::StrCat("Sharpe difference: a non-finite value at ", t));
    }
  }
  const SharpeStats sa = ReturnStats(a);
  const SharpeStats sb = ReturnStats(b);
  const double tn = static_cast<double>(n);
  double ma = 0, mb = 0, qa = 0, qb = 0;
  for (size_t t = 0; t < n; ++t) {
    ma += a[t];
    mb += b[t];
  }
  ma /= tn;
  mb /= tn;
  for (size_t t = 0; t < n; ++t) {
    qa += a[t] * a[t];
    qb += b[t] * b[t];
  }
  qa /= tn;
  qb /= tn;
  const double va = qa - ma * ma;  // population variances
  const double vb = qb - mb * mb;
  if (!(sa.std > 1e-12 * std::abs(sa.mean)) || !(va > 0) ||
      !(sb.std > 1e-12 * std::abs(sb.mean)) || !(vb > 0)) {
    return absl::InvalidArgumentError(
        "Sharpe difference: a series has no variance (its Sharpe ratio has "
        "no sampling distribution)");
  }
  // ∇f at u = (mean_a, mean_b, E[a²], E[b²]).
  const double grad[4] = {qa / std::pow(va, 1.5), -qb / std::pow(vb, 1.5),
                          -0.5 * ma / std::pow(va, 1.5),
                          0.5 * mb / std::pow(vb, 1.5)};
  std::vector<std::array<double, 4>> y(n);
  for (size_t t = 0; t < n; ++t) {
    y[t] = {a[t] - ma, b[t] - mb, a[t] * a[t] - qa, b[t] * b[t] - qb};
  }
  // g_t = ∇fᵀ y_t: the long-run variance of the scalar series g is
  // ∇fᵀ Ψ ∇f (Bartlett weights keep it non-negative).
  std::vector<double> g(n);
  for (size_t t = 0; t < n; ++t) {
    g[t] = grad[0] * y[t][0] + grad[1] * y[t][1] + grad[2] * y[t][2] +
           grad[3] * y[t][3];
  }
  const int lags =
      static_cast<int>(std::floor(4.0 * std::pow(tn / 100.0, 2.0 / 9.0)));
  const int max_lag = std::min<int>(lags, static_cast<int>(n) - 1);
  double psi = 0;
  for (size_t t = 0; t < n; ++t) psi += g[t] * g[t];
  psi /= tn;
  for (int j = 1; j <= max_lag; ++j) {
    double gamma = 0;
    for (size_t t = static_cast<size_t>(j); t < n; ++t) {
      gamma += g[t] * g[t - static_cast<size_t>(j)];
    }
    gamma /= tn;
    psi += 2.0 * (1.0 - static_cast<double>(j) / (max_lag + 1.0)) * gamma;
  }
  SharpeDifference d;
  d.n = static_cast<int64_t>(n);
  d.sharpe_a = sa.sharpe;
  d.sharpe_b = sb.sharpe;
  d.difference = sa.sharpe - sb.sharpe;
  d.lags = max_lag;
  double cov = 0;
  for (size_t t = 0; t < n; ++t) cov += y[t][0] * y[t][1];
  d.correlation = (cov / tn) / std::sqrt(va * vb);
  d.standard_error = psi > 0 ? std::sqrt(psi / tn) : 0.0;
  if (!(d.standard_error > 0) || !std::isfinite(d.standard_error)) {
    return absl::InvalidArgumentError(
        "Sharpe difference: the standard error is 0 (the two series move "
        "together exactly)");
  }
  d.z = d.difference / d.standard_error;
  d.p_value = NormalCdf(-d.z);
  return d;
}

absl::StatusOr<double> SharpeStandardError(const SharpeStats& stats) {
  if (stats.n < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the Sharpe ratio's standard error needs at least 2 observations, got ",
        stats.n));
  }
  if (!std::isfinite(stats.sharpe) || !std::isfinite(stats.skewness) ||
      !std::isfinite(stats.kurtosis)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "non-finite Sharpe statistics: sharpe ", stats.sharpe, ", skewness ",
        stats.skewness, ", kurtosis ", stats.kurtosis));
  }
  const double s = stats.sharpe;
  const double skew_term = stats.skewness * s;
  const double kurt_term = (stats.kurtosis - 1.0) / 4.0 * s * s;
  double bracket = 1.0 - skew_term + kurt_term;
  // Population moments make the bracket >= 0; allow rounding below 0.
  const double scale = 1.0 + std::fabs(skew_term) + std::fabs(kurt_term);
  if (bracket < -1e-12 * scale) {
    return absl::InvalidArgumentError(absl::StrCat(
        "impossible moments: 1 - skewness*sharpe + (kurtosis-1)/4*sharpe^2 = ",
        bracket, " < 0 (sharpe ", s, ", skewness ", stats.skewness,
        ", kurtosis ", stats.kurtosis,
        "; population moments have kurtosis >= 1 + skewness^2)"));
  }
  bracket = std::max(bracket, 0.0);
  return std::sqrt(bracket / static_cast<double>(stats.n - 1));
}

absl::StatusOr<double> ProbabilisticSharpeRatio(const SharpeStats& stats,
                                                double benchmark_sharpe) {
  absl::StatusOr<double> se = SharpeStandardError(stats);
  if (!se.ok()) return se.status();
  if (!std::isfinite(benchmark_sharpe)) {
    return absl::InvalidArgumentError(
        absl::StrCat("non-finite benchmark Sharpe ", benchmark_sharpe));
  }
  if (*se == 0.0) {
    return absl::InvalidArgumentError(
        "the Sharpe ratio's standard error is 0 (a two-point distribution "
        "with sharpe = 2/skewness); the PSR is undefined");
  }
  return NormalCdf((stats.sharpe - benchmark_sharpe) / *se);
}

absl::StatusOr<double> ExpectedMaxSharpe(int64_t num_trials,
                                         double trial_sharpe_variance) {
  if (num_trials < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of trials must be >= 1, got ", num_trials));
  }
  if (!std::isfinite(trial_sharpe_variance) || trial_sharpe_variance < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the variance of the trials' Sharpe ratios must be "
                     "finite and >= 0, got ",
                     trial_sharpe_variance));
  }
  if (num_trials == 1 || trial_sharpe_variance == 0.0) return 0.0;
  const double n = static_cast<double>(num_trials);
  // Φ⁻¹(1 − q) = −Φ⁻¹(q): no rounding of 1 − 1/N to 1 for huge N.
  const double max_z = (1.0 - kEulerMascheroni) * -InverseNormalCdf(1.0 / n) +
                       kEulerMascheroni * -InverseNormalCdf(1.0 / (n * kE));
  return std::sqrt(trial_sharpe_variance) * max_z;
}

absl::StatusOr<double> TrialSharpeVariance(
    absl::Span<const double> trial_sharpes) {
  if (trial_sharpes.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the variance of the trials' Sharpe ratios needs at "
                     "least 2 trials, got ",
                     trial_sharpes.size()));
  }
  for (size_t i = 0; i < trial_sharpes.size(); ++i) {
    if (!std::isfinite(trial_sharpes[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trial ", i, " has a non-finite Sharpe ratio ", trial_sharpes[i]));
    }
  }
  const double count = static_cast<double>(trial_sharpes.size());
  const double shift = trial_sharpes[0];
  double sum = 0.0;
  for (double s : trial_sharpes) sum += s - shift;
  const double mean = shift + sum / count;
  double ss = 0.0;
  for (double s : trial_sharpes) ss += (s - mean) * (s - mean);
  return ss / (count - 1.0);
}

absl::StatusOr<DeflatedSharpeResult> DeflatedSharpeRatio(
    const SharpeStats& selected, int64_t num_trials,
    double trial_sharpe_variance) {
  absl::StatusOr<double> sr0 =
      ExpectedMaxSharpe(num_trials, trial_sharpe_variance);
  if (!sr0.ok()) return sr0.status();
  absl::StatusOr<double> se = SharpeStandardError(selected);
  if (!se.ok()) return se.status();
  if (*se == 0.0) {
    return absl::InvalidArgumentError(
        "the Sharpe ratio's standard error is 0 (a two-point distribution "
        "with sharpe = 2/skewness); the DSR is undefined");
  }
  DeflatedSharpeResult result;
  result.sharpe = selected.sharpe;
  result.num_obs = selected.n;
  result.skewness = selected.skewness;
  result.kurtosis = selected.kurtosis;
  result.num_trials = num_trials;
  result.trial_sharpe_variance = trial_sharpe_variance;
  result.expected_max_sharpe = *sr0;
  result.standard_error = *se;
  result.z = (selected.sharpe - *sr0) / *se;
  result.dsr = NormalCdf(result.z);
  result.p_value = NormalCdf(-result.z);
  return result;
}

absl::StatusOr<PboResult> ProbabilityOfBacktestOverfitting(
    absl::Span<const std::vector<double>> returns, const PboOptions& options) {
  const int64_t rows = static_cast<int64_t>(returns.size());
  if (rows == 0) return absl::InvalidArgumentError("PBO: no rows");
  const size_t width = returns[0].size();
  if (width < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("PBO needs at least 2 trials (columns), got ", width));
  }
  if (width > static_cast<size_t>(std::numeric_limits<int>::max() / 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PBO: too many trials (", width, ")"));
  }
  const int trials = static_cast<int>(width);
  for (int64_t t = 0; t < rows; ++t) {
    const std::vector<double>& row = returns[t];
    if (row.size() != width) {
      return absl::InvalidArgumentError(
          absl::StrCat("PBO: ragged matrix: row ", t, " has ", row.size(),
                       " entries, row 0 has ", width));
    }
    for (int n = 0; n < trials; ++n) {
      if (!std::isfinite(row[n])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "PBO: non-finite return ", row[n], " at row ", t, ", trial ", n));
      }
    }
  }
  int blocks = options.num_blocks;
  if (blocks == 0) {
    const int64_t half = std::min<int64_t>(kAutoBlocks, rows / 2);
    blocks = static_cast<int>(half - half % 2);
    if (blocks < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PBO needs at least 4 rows (2 blocks of 2 rows), got ", rows));
    }
  } else if (blocks < 2 || blocks > kMaxBlocks || blocks % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PBO: the number of blocks must be even and in [2, ",
                     kMaxBlocks, "], got ", blocks));
  } else if (2 * static_cast<int64_t>(blocks) > rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("PBO: ", blocks, " blocks need at least ", 2 * blocks,
                     " rows (2 per block), got ", rows));
  }
  if (options.max_combinations < 1 ||
      options.max_combinations > kMaxCombinationsLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PBO: max_combinations must be in [1, ", kMaxCombinationsLimit,
        "], got ", options.max_combinations));
  }

  // Per block and trial: count, mean and Σ (x − mean)².
  std::vector<Moments> block_moments(static_cast<size_t>(blocks) * trials);
  for (int b = 0; b < blocks; ++b) {
    const int64_t begin = b * rows / blocks;
    const int64_t end = (b + 1) * rows / blocks;
    for (int64_t t = begin; t < end; ++t) {
      for (int n = 0; n < trials; ++n) {
        block_moments[static_cast<size_t>(b) * trials + n].Add(returns[t][n]);
      }
    }
  }

  const std::vector<std::vector<uint64_t>> binom = BinomialTable();
  const int half = blocks / 2;
  const uint64_t total = binom[blocks][half];
  const uint64_t count = std::min<uint64_t>(
      total, static_cast<uint64_t>(options.max_combinations));
  // rank_i = floor(i · total / count) without overflow: i·q + floor(i·r /
  // count), total = q·count + r, i·r < count² <= 1e14.
  const uint64_t q = total / count;
  const uint64_t r = total % count;

  PboResult result;
  result.num_blocks = blocks;
  result.total_combinations = static_cast<int64_t>(total);
  result.num_combinations = static_cast<int64_t>(count);
  result.logits.reserve(count);
  result.selected.reserve(count);
  result.is_sharpe.reserve(count);
  result.oos_sharpe.reserve(count);

  std::vector<int> chosen(half);
  std::vector<char> in_sample(blocks);
  std::vector<double> is_perf(trials);
  std::vector<double> oos_perf(trials);
  int64_t overfit = 0;
  int64_t losses = 0;
  for (uint64_t i = 0; i < count; ++i) {
    UnrankCombination(i * q + i * r / count, blocks, half, binom, chosen);
    std::fill(in_sample.begin(), in_sample.end(), 0);
    for (int b : chosen) in_sample[b] = 1;
    for (int n = 0; n < trials; ++n) {
      Moments is_m;
      Moments oos_m;
      for (int b = 0; b < blocks; ++b) {
        const Moments& m = block_moments[static_cast<size_t>(b) * trials + n];
        if (in_sample[b]) {
          is_m.Merge(m);
        } else {
          oos_m.Merge(m);
        }
      }
      is_perf[n] = is_m.Sharpe();
      oos_perf[n] = oos_m.Sharpe();
    }
    int best = 0;
    for (int n = 1; n < trials; ++n) {
      if (is_perf[n] > is_perf[best]) best = n;
    }
    // Twice the average rank: 2·(1 + #below) + #ties (excluding best).
    int64_t below = 0;
    int64_t ties = 0;
    for (int n = 0; n < trials; ++n) {
      if (n == best) continue;
      if (oos_perf[n] < oos_perf[best]) ++below;
      if (oos_perf[n] == oos_perf[best]) ++ties;
    }
    const int64_t rank2 = 2 * (1 + below) + ties;
    const int64_t complement2 = 2 * (static_cast<int64_t>(trials) + 1) - rank2;
    // λ = ln(ω̄/(1 − ω̄)) with ω̄ = rank/(N+1); λ <= 0 ⇔ 2·rank <= N + 1.
    const double logit = std::log(static_cast<double>(rank2)) -
                         std::log(static_cast<double>(complement2));
    if (rank2 <= static_cast<int64_t>(trials) + 1) ++overfit;
    if (oos_perf[best] < 0.0) ++losses;
    result.logits.push_back(logit);
    result.selected.push_back(best);
    result.is_sharpe.push_back(is_perf[best]);
    result.oos_sharpe.push_back(oos_perf[best]);
  }

  const double combos = static_cast<double>(count);
  result.pbo = static_cast<double>(overfit) / combos;
  result.prob_oos_loss = static_cast<double>(losses) / combos;
  result.median_logit = Median(result.logits);

  double mean_x = 0.0;
  double mean_y = 0.0;
  for (uint64_t i = 0; i < count; ++i) {
    mean_x += result.is_sharpe[i];
    mean_y += result.oos_sharpe[i];
  }
  mean_x /= combos;
  mean_y /= combos;
  double sxx = 0.0;
  double sxy = 0.0;
  double sum_sq = 0.0;
  for (uint64_t i = 0; i < count; ++i) {
    const double dx = result.is_sharpe[i] - mean_x;
    sxx += dx * dx;
    sxy += dx * (result.oos_sharpe[i] - mean_y);
    sum_sq += result.is_sharpe[i] * result.is_sharpe[i];
  }
  if (sxx > 1e-20 * sum_sq) {
    result.degradation_slope = sxy / sxx;
    result.degradation_intercept = mean_y - result.degradation_slope * mean_x;
  } else {
    result.degradation_slope = 0.0;
    result.degradation_intercept = mean_y;
  }
  return result;
}

}  // namespace ristretto::coordinator
