// Performance metrics of a portfolio value series: per-bar returns, Sharpe,
// Sortino, maximum drawdown, annualised return, Calmar, and the equal-weight
// buy-and-hold benchmark. One definition of each, used by training,
// validation, backtest and the trial objective.
// Pure functions; thread-safe.
//
// Notation: v_0 … v_{T−1} are the portfolio values of T consecutive bars
// (any currency unit, > 0 in normal use); r_t = v_t / v_{t−1} − 1 are the
// T − 1 simple per-bar returns; x_t = log1p(r_t) = ln(v_t / v_{t−1}) are the
// log returns; bpy is the number of bars per year (e.g. 105120 for 5-minute
// bars and 8760 for hourly bars over a 365-day crypto year; see
// BarsPerYear() in env/dataset.h). Non-finite inputs propagate as IEEE
// arithmetic dictates; no function reports an error.
#ifndef RISTRETTO_ENV_METRICS_H_
#define RISTRETTO_ENV_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace ristretto::env {

// Returns the simple per-bar returns r_t = v_t / v_{t−1} − 1 for
// t = 1 … T−1 (length T − 1; empty when T < 2). A zero v_{t−1} yields ±inf
// or NaN.
std::vector<double> BarReturns(absl::Span<const double> values);

// Annualised Sharpe ratio of per-bar simple returns (risk-free rate 0):
//   x_i = log1p(r_i),  mean = Σ x_i / n,
//   std = sqrt(Σ (x_i − mean)² / (n − 1))        (sample std, ddof = 1),
//   Sharpe = mean / std · sqrt(bars_per_year).
// Returns 0 when n < 2 or std == 0. Identical returns give std exactly 0,
// and a std <= 1e-12·|mean| (the rounding noise of an exactly geometric
// series such as 100, 110, 121, 133.1) also counts as 0. A return <= −1
// gives x = −inf and a NaN result.
double SharpeRatio(absl::Span<const double> returns, double bars_per_year);

// Annualised Sortino ratio (target 0) of per-bar simple returns:
//   x_i = log1p(r_i),  mean = Σ x_i / n,
//   downside = sqrt(Σ min(0, x_i)² / n)     (over ALL n returns, not only
//                                             the negative ones),
//   Sortino = mean / downside · sqrt(bars_per_year).
// Returns 0 when n < 2 (as SharpeRatio) or when no return is negative
// (downside == 0).
double SortinoRatio(absl::Span<const double> returns, double bars_per_year);

// Maximum drawdown as a positive fraction in [0, 1]:
//   MDD = max_t (1 − v_t / max_{s<=t} v_s).
// 0 for an empty, single-value or non-decreasing series. Bars whose running
// peak is <= 0 contribute 0; a negative value counts as a total loss (1).
double MaxDrawdown(absl::Span<const double> values);

// Compound annual growth rate of the series:
//   (v_{T−1} / v_0)^(bars_per_year / (T − 1)) − 1.
// Returns 0 when T < 2 or v_0 <= 0, and −1 when v_{T−1} <= 0 (total loss).
// Short series extrapolate enormously and may overflow to +inf.
double AnnualisedReturn(absl::Span<const double> values, double bars_per_year);

// Calmar ratio: AnnualisedReturn(values, bpy) / MaxDrawdown(values); 0 when
// the maximum drawdown is 0.
double CalmarRatio(absl::Span<const double> values, double bars_per_year);

// Value series of the equal-weight buy-and-hold benchmark over rows
// [begin, end) of a T × num_assets row-major price matrix (prices[t·n + i]
// is the price of asset i at row t; T = prices.size() / n). At row `begin`
// C0 = initial_capital is split equally and bought once, at the close plus
// the slippage s = slippage_bps / 10^4 and with the proportional fee:
//   holdings_i = (C0 / n) / (p[begin][i] · (1 + s) · (1 + buy_fee)), 0 if
//                p[begin][i] is 0,
//   value_t = Σ_i holdings_i · p[t][i]   (summed left to right, i = 0 … n−1),
// for t = begin … end − 1 (length end − begin). The same definition as the
// env's benchmark E (env.md: eqw[i]); an asset with price 0 at `begin` holds
// nothing, so its share of C0 is simply not invested.
// It pays the same execution costs as the env's trades, so pass the
// EnvOptions' buy_fee and slippage_bps (the default 0 is for callers that
// model no slippage, such as the golden parity settings). The volume cap
// does not apply (one buy at the first bar).
// Returns an empty vector when num_assets < 1, prices.size() is not a
// multiple of num_assets, or [begin, end) is not within [0, T].
std::vector<double> EqualWeightBuyAndHold(absl::Span<const double> prices,
                                          int num_assets, int64_t begin,
                                          int64_t end, double initial_capital,
                                          double buy_fee,
                                          double slippage_bps = 0.0);

// The account of an equal-weight buy-and-hold investor over rows
// [begin, end), as a policy's account is scored: it starts in cash, C0 =
// initial_capital at row `begin`, buys there, and from row begin + 1 on is
// worth EqualWeightBuyAndHold's value_t. So the first bar's return pays the
// purchase's fee and slippage, as a policy's first trade does (scoring
// EqualWeightBuyAndHold's series itself, which starts after the purchase,
// would leave every metric of it untouched by those costs: they only scale
// the whole series). Same length and errors as EqualWeightBuyAndHold.
std::vector<double> BuyAndHoldAccount(absl::Span<const double> prices,
                                      int num_assets, int64_t begin,
                                      int64_t end, double initial_capital,
                                      double buy_fee,
                                      double slippage_bps = 0.0);

// All metrics of one value series.
struct PerformanceSummary {
  double total_return = 0.0;  // v_{T−1} / v_0 − 1 (0 if T < 2 or v_0 <= 0)
  double sharpe = 0.0;        // SharpeRatio(BarReturns(values), bpy)
  double sortino = 0.0;       // SortinoRatio(BarReturns(values), bpy)
  double max_drawdown = 0.0;  // MaxDrawdown(values), fraction in [0, 1]
  double calmar = 0.0;        // CalmarRatio(values, bpy)
  double annualised_return = 0.0;  // AnnualisedReturn(values, bpy)
  int64_t bars = 0;                // T, the number of values
};

// Computes every field of PerformanceSummary for `values` (see each field).
PerformanceSummary Summarize(absl::Span<const double> values,
                             double bars_per_year);

// A policy played on several domains (separate episodes, each starting from
// its own capital), scored as EvaluateActions and the lockbox score it:
// Sharpe and Sortino over the simple returns of every step of every domain
// pooled; total return and Calmar the means over domains weighted by their
// steps (a short piece weighs as little as it says); maximum drawdown the
// worst domain's. log_returns are ln(v_t / v_{t−1}) of every step, domains
// in order, with values floored at 1e-12 (as the env's log-return reward).
// A domain of fewer than 2 values adds no step.
struct DomainsSummary {
  double sharpe = 0.0;
  double sortino = 0.0;
  double total_return = 0.0;
  double calmar = 0.0;
  double max_drawdown = 0.0;
  int64_t steps = 0;
  std::vector<double> log_returns;
};
DomainsSummary SummarizeDomains(const std::vector<std::vector<double>>& values,
                                double bars_per_year);

// Capital split equally among K strategies at every domain's first bar,
// each share then compounding its own strategy's returns (never
// rebalanced: no trade between the shares). Domain d's value series, from
// V_0 = 1:
//   V_t = (1/K) Σ_k exp(x_k,1 + … + x_k,t),
// where x_k are strategy k's per-step log returns, every domain's in the
// order of `domain_steps` (each domain's number of steps): the mean of K
// accounts that each trade the same bars with their own strategy. (It is
// the account of one capital C split K ways only where a strategy's
// returns do not depend on its capital; ristretto's env observes the
// account's cash and has absolute order minimums, so for policies it is
// K accounts of the capital they were scored with.) Returns one
// series of 1 + steps values per domain; empty when there is no strategy
// or a strategy's length is not Σ domain_steps.
std::vector<std::vector<double>> EqualCapitalValues(
    const std::vector<absl::Span<const double>>& log_returns,
    absl::Span<const int64_t> domain_steps);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_METRICS_H_
