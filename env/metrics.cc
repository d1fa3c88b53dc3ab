#include "env/metrics.h"

#include <algorithm>
#include <cmath>

namespace ristretto::env {
namespace {

// A std at or below this fraction of |mean| is rounding noise: treated as 0.
constexpr double kStdRoundingTolerance = 1e-12;

// Log returns x_i = log1p(r_i).
std::vector<double> LogReturns(absl::Span<const double> returns) {
  std::vector<double> x(returns.size());
  for (size_t i = 0; i < returns.size(); ++i) x[i] = std::log1p(returns[i]);
  return x;
}

// Mean computed about the first element: identical inputs give exactly that
// element back (a plain Σ/n does not, e.g. three log1p(0.05)), so the
// deviations and hence the std of a constant series are exactly 0 as
// documented.
double ShiftedMean(const std::vector<double>& x) {
  const double shift = x.front();
  double sum = 0.0;
  for (double v : x) sum += v - shift;
  return shift + sum / static_cast<double>(x.size());
}

}  // namespace

std::vector<double> BarReturns(absl::Span<const double> values) {
  std::vector<double> returns;
  if (values.size() < 2) return returns;
  returns.resize(values.size() - 1);
  for (size_t t = 1; t < values.size(); ++t) {
    returns[t - 1] = values[t] / values[t - 1] - 1.0;
  }
  return returns;
}

double SharpeRatio(absl::Span<const double> returns, double bars_per_year) {
  if (returns.size() < 2) return 0.0;
  const std::vector<double> x = LogReturns(returns);
  const double mean = ShiftedMean(x);
  double ss = 0.0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double std = std::sqrt(ss / static_cast<double>(x.size() - 1));
  // Exactly-geometric series (v_t = v_0·g^t) have returns that differ only by
  // rounding; their std is noise ~1e-16·|mean| and would give an absurd ratio.
  if (std <= kStdRoundingTolerance * std::fabs(mean)) return 0.0;
  return mean / std * std::sqrt(bars_per_year);
}

double SortinoRatio(absl::Span<const double> returns, double bars_per_year) {
  if (returns.size() < 2) return 0.0;
  const std::vector<double> x = LogReturns(returns);
  const double mean = ShiftedMean(x);
  double ss = 0.0;
  for (double v : x) {
    const double down = std::min(0.0, v);
    ss += down * down;
  }
  const double downside = std::sqrt(ss / static_cast<double>(x.size()));
  if (downside == 0.0) return 0.0;
  return mean / downside * std::sqrt(bars_per_year);
}

double MaxDrawdown(absl::Span<const double> values) {
  double max_dd = 0.0;
  if (values.empty()) return max_dd;
  double peak = values[0];
  for (double v : values) {
    peak = std::max(peak, v);
    if (peak <= 0.0) continue;
    max_dd = std::max(max_dd, 1.0 - v / peak);
  }
  return std::min(max_dd, 1.0);
}

double AnnualisedReturn(absl::Span<const double> values, double bars_per_year) {
  if (values.size() < 2 || values.front() <= 0.0) return 0.0;
  if (values.back() <= 0.0) return -1.0;
  const double periods = static_cast<double>(values.size() - 1);
  return std::pow(values.back() / values.front(), bars_per_year / periods) -
         1.0;
}

double CalmarRatio(absl::Span<const double> values, double bars_per_year) {
  const double dd = MaxDrawdown(values);
  if (dd == 0.0) return 0.0;
  return AnnualisedReturn(values, bars_per_year) / dd;
}

std::vector<double> EqualWeightBuyAndHold(absl::Span<const double> prices,
                                          int num_assets, int64_t begin,
                                          int64_t end, double initial_capital,
                                          double buy_fee, double slippage_bps) {
  std::vector<double> values;
  if (num_assets < 1) return values;
  const size_t n = static_cast<size_t>(num_assets);
  if (prices.size() % n != 0) return values;
  const int64_t num_rows = static_cast<int64_t>(prices.size() / n);
  if (begin < 0 || begin > end || end > num_rows) return values;
  if (begin == end) return values;

  const double per_asset = initial_capital / static_cast<double>(num_assets);
  // The env's buy fill factor (bit-identical to it; 1 exactly when s = 0).
  const double fill = 1.0 + slippage_bps / 1e4;
  std::vector<double> holdings(n, 0.0);
  const double* first = prices.data() + static_cast<size_t>(begin) * n;
  for (size_t i = 0; i < n; ++i) {
    if (first[i] != 0.0) {
      holdings[i] = per_asset / (first[i] * fill * (1.0 + buy_fee));
    }
  }
  values.resize(static_cast<size_t>(end - begin));
  for (int64_t t = begin; t < end; ++t) {
    const double* row = prices.data() + static_cast<size_t>(t) * n;
    double value = 0.0;
    for (size_t i = 0; i < n; ++i) value += holdings[i] * row[i];
    values[static_cast<size_t>(t - begin)] = value;
  }
  return values;
}

std::vector<double> BuyAndHoldAccount(absl::Span<const double> prices,
                                      int num_assets, int64_t begin,
                                      int64_t end, double initial_capital,
                                      double buy_fee, double slippage_bps) {
  std::vector<double> values = EqualWeightBuyAndHold(
      prices, num_assets, begin, end, initial_capital, buy_fee, slippage_bps);
  if (!values.empty()) values.front() = initial_capital;
  return values;
}

PerformanceSummary Summarize(absl::Span<const double> values,
                             double bars_per_year) {
  PerformanceSummary s;
  s.bars = static_cast<int64_t>(values.size());
  if (values.size() >= 2 && values.front() > 0.0) {
    s.total_return = values.back() / values.front() - 1.0;
  }
  const std::vector<double> returns = BarReturns(values);
  s.sharpe = SharpeRatio(returns, bars_per_year);
  s.sortino = SortinoRatio(returns, bars_per_year);
  s.max_drawdown = MaxDrawdown(values);
  s.annualised_return = AnnualisedReturn(values, bars_per_year);
  s.calmar = CalmarRatio(values, bars_per_year);
  return s;
}

DomainsSummary SummarizeDomains(const std::vector<std::vector<double>>& values,
                                double bars_per_year) {
  constexpr double kTinyValue = 1e-12;
  DomainsSummary s;
  for (const std::vector<double>& v : values) {
    if (v.size() >= 2) s.steps += static_cast<int64_t>(v.size()) - 1;
  }
  const double all_steps = static_cast<double>(std::max<int64_t>(s.steps, 1));
  s.log_returns.reserve(static_cast<size_t>(s.steps));
  std::vector<double> pooled;
  pooled.reserve(static_cast<size_t>(s.steps));
  for (const std::vector<double>& v : values) {
    if (v.size() < 2) continue;
    const double weight = static_cast<double>(v.size() - 1) / all_steps;
    for (size_t t = 1; t < v.size(); ++t) {
      s.log_returns.push_back(std::log(std::max(v[t], kTinyValue) /
                                       std::max(v[t - 1], kTinyValue)));
    }
    // Summarize's return, drawdown and Calmar without its per-domain
    // returns, Sharpe and Sortino (the pooled ones below are the result's).
    for (size_t t = 1; t < v.size(); ++t)
      pooled.push_back(v[t] / v[t - 1] - 1.0);
    const double drawdown = MaxDrawdown(v);
    if (v.front() > 0.0)
      s.total_return += (v.back() / v.front() - 1.0) * weight;
    if (drawdown != 0.0) {
      s.calmar += AnnualisedReturn(v, bars_per_year) / drawdown * weight;
    }
    s.max_drawdown = std::max(s.max_drawdown, drawdown);
  }
  s.sharpe = SharpeRatio(pooled, bars_per_year);
  s.sortino = SortinoRatio(pooled, bars_per_year);
  return s;
}

std::vector<std::vector<double>> EqualCapitalValues(
    const std::vector<absl::Span<const double>>& log_returns,
    absl::Span<const int64_t> domain_steps) {
  int64_t total = 0;
  for (const int64_t n : domain_steps) {
    if (n < 0) return {};
    total += n;
  }
  if (log_returns.empty()) return {};
  for (const absl::Span<const double> x : log_returns) {
    if (static_cast<int64_t>(x.size()) != total) return {};
  }
  const double share = 1.0 / static_cast<double>(log_returns.size());
  std::vector<std::vector<double>> out;
  out.reserve(domain_steps.size());
  std::vector<double> cumulative(log_returns.size());
  size_t at = 0;
  for (const int64_t n : domain_steps) {
    std::vector<double> v(static_cast<size_t>(n) + 1, 0.0);
    v[0] = 1.0;
    std::fill(cumulative.begin(), cumulative.end(), 0.0);
    for (int64_t t = 1; t <= n; ++t, ++at) {
      double sum = 0;
      for (size_t k = 0; k < log_returns.size(); ++k) {
        cumulative[k] += log_returns[k][at];
        sum += std::exp(cumulative[k]);
      }
      v[static_cast<size_t>(t)] = sum * share;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ristretto::env
