// Deterministic evaluation of a policy on validation slices, without torch:
// EvaluateActions plays any action function (a trained policy through
// EvaluatePolicy in learner/torch/trainer.h, or a random or fixed policy in
// the coordinator) on every domain and scores it against equal-weight buy
// and hold. Also the JSON form of an EvaluationResult (a run's
// best/evaluation.json). Thread-compatible: pure functions.
#ifndef RISTRETTO_LEARNER_EVALUATION_H_
#define RISTRETTO_LEARNER_EVALUATION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "env/metrics.h"
#include "learner/run_options.h"

namespace ristretto::learner {

// Writes the actions (copies × num_assets, row per copy) for the
// observations (copies × observation size, row per copy).
using ActionFunction =
    std::function<void(const float* obs, int copies, float* actions)>;

// The bar-by-bar record of one EvaluateActions run, for backtests and
// charts: one entry per bar at which the policy's portfolio is valued —
// each domain's first bar (the reset, value = initial capital) and then
// one per step — domains in the order given. So a domain of S rows has
// S − 2·lookback + 1 bars, and bars = steps + domains. Within a domain,
// ln(value[k] / value[k−1]) (floored as log_returns) are exactly the
// EvaluationResult's log_returns, and value[k] = cash[k] +
// Σ_i holdings[k·n + i] · price[row[k]][i] (the env's valuation).
struct EvaluationTrace {
  int num_assets = 0;           // n
  std::vector<int> domain;      // index into the domains argument
  std::vector<int64_t> row;     // market row the bar is valued at
  std::vector<double> value;    // portfolio value, quote currency
  std::vector<double> cash;     // cash, quote currency
  std::vector<float> holdings;  // bars × n coins, row per bar
  // Equal-weight buy and hold on the same rows (env::BuyAndHoldAccount with
  // the env options' capital, buy fee and slippage: the capital at the
  // domain's first bar, bought there, so its first return pays the costs
  // like the policy's): the benchmark of the result.
  std::vector<double> buy_and_hold;

  size_t bars() const { return value.size(); }
};

// Plays `decide(obs [B×D], B, actions out [B×A])` on every domain (one env
// copy per domain) from its first row with the env options, and scores it
// against equal-weight buy and hold on the same rows. Besides the
// performance summary it fills, with v_t the policy's value after step t
// of a domain (v_0 the initial capital):
//   log_returns  ln(v_t / v_{t−1}) for every step of every domain, domains
//                concatenated in order (length = steps);
//   turnover     Σ_steps Σ_i |Δholding_i| · price_i / initial_capital per
//                domain (traded value before fees, at the step's prices,
//                net per asset within a step), mean over domains
//                weighted by their steps (as return and Calmar; Sharpe
//                and Sortino are over every bar of every domain);
//   exposure     mean over all steps of all domains of 1 − cash_t / v_t;
//   score        sharpe − benchmark_sharpe (callers that know the study
//                objective replace it with ObjectiveValue).
// `trace`, when not null, is replaced by the run's EvaluationTrace (sized
// once before the first step; the steps themselves allocate nothing).
// Errors: kInvalidArgument if there is no domain or one is too short.
absl::StatusOr<EvaluationResult> EvaluateActions(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    const ActionFunction& decide, EvaluationTrace* trace = nullptr);

// Capital split equally among K policies played on the same domains (each
// result and trace from EvaluateActions with the same market, env options
// and domains), each share trading its own policy and never rebalanced:
// the mean of K accounts of C0 each (each policy must trade the capital
// it was played with: the env observes the account's cash). Its trace's
// value, cash and holdings are the K traces' means, its rows, domains and buy
// and hold are theirs; its result is scored from that trace as
// EvaluateActions scores one policy (env::SummarizeDomains, exposure over
// every step), with the K results' mean turnover and fees, summed trades
// and the first result's benchmark and env steps. K = 1 returns its input.
// Errors: kInvalidArgument with no policy, or traces that differ in their
// rows or domains.
absl::Status CombineEqualCapital(const std::vector<EvaluationResult>& results,
                                 const std::vector<EvaluationTrace>& traces,
                                 double bars_per_year, EvaluationResult* result,
                                 EvaluationTrace* trace);

// One share of a capital split equally among K policies (a trial's
// refits, or K random policies) on the same domains: its per-step log
// returns (every domain's, in order) and what it paid.
struct ShareResult {
  absl::Span<const double> log_returns;
  double turnover = 0, fees = 0, exposure = 0;
  int64_t trades = 0;
  int64_t env_steps = 0;
};
// The K shares' mean account (env::EqualCapitalValues: each share trades
// its own account of C0 from the start of every domain, never rebalanced)
// scored as EvaluateActions scores one policy (env::SummarizeDomains);
// turnover, fees and exposure are the shares' means (each trades 1/K of
// the capital), trades their sum, env steps their mean (rounded). The one
// combination of returns that the lockbox's refits and the verdict's
// split random baseline use (CombineEqualCapital above works on traces).
struct SplitResult {
  env::DomainsSummary summary;
  double turnover = 0, fees = 0, exposure = 0;
  int64_t trades = 0;
  int64_t env_steps = 0;
};
// Errors: kInvalidArgument with no share, or a share whose log returns do
// not have Σ domain_steps bars (naming its index).
absl::StatusOr<SplitResult> CombineShares(
    absl::Span<const ShareResult> shares,
    absl::Span<const int64_t> domain_steps, double bars_per_year);

// EvaluationResult as a JSON object (every field, log_returns included;
// non-finite numbers as null), plus "objective" when not empty.
std::string EvaluationToJson(const EvaluationResult& e,
                             const std::string& objective = "");
// The inverse; missing fields keep their defaults, null reads as NaN.
// kDataLoss if the text is not a JSON object of the expected types.
absl::StatusOr<EvaluationResult> EvaluationFromJson(const std::string& json);

// Whether an evaluation scoring `score` replaces the best so far: the
// first one always does; then only a strictly greater score (a NaN score
// never replaces a best, any other score replaces a NaN best).
bool IsBetterScore(double score, bool have_best, double best_score);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_EVALUATION_H_
