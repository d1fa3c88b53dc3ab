// The rule baselines a quant tries first, beside buy and hold and random
// policies (verdict.h): equal weight rebalanced, time-series momentum and
// MACD, each a portfolio of target weights computed from closes at rows
// <= t only and played through the env's target-weights action model
// (docs/env_actions.md) with learner::EvaluateActions, so their results are
// scored exactly as a policy's. Each rule's one parameter is chosen by the
// highest Sharpe on selection rows (never the test rows) and the chosen
// rule is then played on the test rows. Pure functions over plain inputs;
// no torch, no database. Thread-compatible.
#ifndef RISTRETTO_COORDINATOR_CORE_RULE_BASELINES_H_
#define RISTRETTO_COORDINATOR_CORE_RULE_BASELINES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/core/verdict.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "learner/evaluation.h"
#include "learner/run_options.h"

namespace ristretto::coordinator {

// The rules. Each gives asset i either 1/n of the portfolio or nothing
// (that 1/n is then cash); n = the market's assets.
enum class Rule {
  // 1/n in every asset at every row (no parameter); the env's
  // rebalance_band decides when drift is traded back.
  kEqualWeightRebalanced,
  // Time-series momentum: asset i holds 1/n while close[t] > the mean of
  // its last N closes (rows t − N + 1 … t), else cash. Parameter: N bars
  // (>= 2). No position until N closes of the row's market domain exist.
  kMomentum,
  // MACD: asset i holds 1/n while EMA_{12m}(close) − EMA_{26m}(close) >
  // EMA_{9m} of that line (env::ComputeMacd with fast 12m, slow 26m,
  // signal 9m; EMAs seeded with the market domain's first close, so the
  // signal exists from its first row). Parameter: m >= 1, the bars of one
  // "hour" of the hourly-bar defaults (MacdBarMultiplier).
  kMacd,
};

// "equal_weight_rebalanced", "momentum", "macd".
const char* RuleName(Rule rule);

// Momentum's horizons, in days (N = MomentumBars(days, interval)), and
// MACD's scales s (m = MacdBarMultiplier(s, interval)), in the order tried.
inline constexpr int kMomentumDays[] = {7, 30, 90};
inline constexpr int kMacdScales[] = {1, 4, 24};

// N = round(days · 86400 / interval_seconds), at least 2.
int64_t MomentumBars(int days, int64_t interval_seconds);
// m = round(s · 3600 / interval_seconds), at least 1: s = 1 is MACD's
// 12/26/9 hours whatever the bar (12/26/9 bars on hourly bars, 144/312/108
// bars on 5-minute bars); bars longer than an hour make several s the same
// m (daily bars: every s is m = 1, the 12/26/9-day MACD).
int64_t MacdBarMultiplier(int s, int64_t interval_seconds);

// The target weights (n of them, each 0 or 1/n, for equal weight 1/n)
// that `rule` with `param` (Rule's parameter, in bars) chooses at market
// row `row`, computed from the closes at rows [d.begin, row] of the market
// domain d that holds `row` and nothing else: the env executes the action
// chosen at row t at row t + 1's close, so no later close may matter.
// Recomputes the indicator from d.begin (O(row − d.begin)): for tests and
// spot checks; RuleWeightTable gives every row at once.
// Errors: kInvalidArgument for a row outside the market, a parameter out
// of range, or an invalid market.
absl::Status RuleWeights(Rule rule, int64_t param,
                         const env::MarketData& market, int64_t row,
                         std::vector<double>* weights);

// The weights of every row of the market domains that hold `domains`,
// from each market domain's first row up to the last end of the domains
// in it (closes after that are never read): T × n, row per market row,
// row t equal to RuleWeights(rule, param, market, t) (the indicators run
// forward in time, so one pass gives every row's value from its past
// only); rows outside those spans are 0. Errors: those of RuleWeights,
// and a domain that is not inside one market domain.
absl::StatusOr<std::vector<double>> RuleWeightTable(
    Rule rule, int64_t param, const env::MarketData& market,
    const std::vector<env::Domain>& domains);

// The target-weights actions (EnvOptions::action_model kWeights) of
// weights w (n, each >= 0, Σ <= 1; cash w_c = 1 − Σ w): a_i =
// ln(w_i / max(w_c, 1e-9)) / weight_logit_scale clipped to ±action_clip,
// and −action_clip for w_i = 0 (exp(−k · clip) is 0), so the env's
// softmax gives back w to within 1e-9.
void WeightsToActions(const double* weights, int n,
                      const env::EnvOptions& env_options, float* actions);

// Plays `rule` with `param` on every domain with learner::EvaluateActions
// (same env, same scoring against equal-weight buy and hold). The action
// function is told no row, so the rule follows the env's clock: at its
// k-th call copy b is at row domains[b].begin + lookback − 1 + k (env.md);
// the run's trace confirms every row afterwards (kInternal if not).
// `trace`, when not null, receives EvaluateActions' trace.
// Errors: kInvalidArgument if env_options.action_model is not kWeights,
// those of RuleWeightTable and EvaluateActions.
absl::StatusOr<learner::EvaluationResult> EvaluateRule(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    Rule rule, int64_t param, learner::EvaluationTrace* trace = nullptr);

// One parameter value a rule may take.
struct RuleCandidate {
  int64_t param = 0;        // Rule's parameter, bars
  std::string description;  // e.g. "N = 720 bars (30 days)"
};

// The candidates of `rule` on bars of `interval_seconds` (momentum: one N
// per kMomentumDays; MACD: one m per kMacdScales, repeats dropped; equal
// weight: one, param 0) whose warm-up (momentum N bars, MACD the slow span
// 26m bars) is at most half of `history_rows`, the rows of selection
// history (SelectionHistoryRows), so that the signal is defined on at
// least half of it. Errors: kInvalidArgument for interval_seconds <= 0, or
// when no candidate fits (naming the shortest horizon and the rows).
absl::StatusOr<std::vector<RuleCandidate>> RuleCandidates(
    Rule rule, int64_t interval_seconds, int64_t history_rows);

// The rows of history the selection offers: the most, over the selection
// domains, of the rows from the start of the market domain holding a
// domain to the domain's end (earlier rows of the same market domain are
// legitimate history). 0 when there is no domain or one is not inside a
// market domain.
int64_t SelectionHistoryRows(const env::MarketData& market,
                             const std::vector<env::Domain>& domains);

// One rule's baseline: the parameter chosen on the selection rows and the
// chosen rule's result on the test rows.
struct RuleBaseline {
  Rule rule = Rule::kEqualWeightRebalanced;
  std::string name;       // RuleName(rule)
  int64_t param = 0;      // the chosen parameter, bars (RuleCandidate)
  std::string parameter;  // its description, e.g. "N = 720 bars (30 days)"
  // Annualised Sharpe of the chosen parameter on the selection rows (the
  // highest of the candidates').
  double selection_sharpe = 0;
  // The chosen rule played on the test rows (EvaluateRule), and its
  // Sharpe's annualised standard error (AnnualisedSharpeError of
  // test.log_returns with bars_per_year; NaN with fewer than 2 bars).
  learner::EvaluationResult test;
  double test_sharpe_se = 0;
};

// Chooses each rule's parameter by the highest Sharpe on
// `selection_domains` (the pre-lockbox rows; ties and NaN as
// learner::IsBetterScore: the first candidate wins a tie) and plays the
// chosen one on `test_domains`. Returns equal_weight_rebalanced, momentum,
// macd, in that order. `interval_seconds` must be the market's (it scales
// the horizons; EvaluateActions annualises with the market's interval);
// `bars_per_year` annualises the standard errors (env::BarsPerYear of the
// interval, as ComputeBaselines). The selection never reads a close after
// the selection domains' last row.
// Errors: kInvalidArgument, naming the problem, for a market without
// prices (or otherwise invalid), no selection rows, no test rows, a test
// domain overlapping a selection domain, interval_seconds <= 0 or not the
// market's, bars_per_year not > 0, an action model other than kWeights, a
// rule with no candidate that fits the selection (RuleCandidates), and
// those of EvaluateActions (a domain too short).
absl::StatusOr<std::vector<RuleBaseline>> ComputeRuleBaselines(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& selection_domains,
    const std::vector<env::Domain>& test_domains, int64_t interval_seconds,
    double bars_per_year);

// The baseline with the highest test Sharpe (NaN never; the first of
// equals), or null when there is none.
const RuleBaseline* StrongestRule(const std::vector<RuleBaseline>& rules);

// The parts of the market's domains before row `first_row`: where a rule
// may be chosen when the tested bars start at `first_row`. A part is kept
// when it holds at least 2·lookback + 2 rows (one env episode).
std::vector<env::Domain> DomainsBefore(const env::MarketData& market,
                                       int64_t first_row, int lookback);

// The rules as a study keeps them for its lockbox (`test_domains`): each
// parameter chosen on DomainsBefore(the first test row), the rules played
// with `env_options`' costs as target weights (whatever action model the
// study's policy uses), bars per year env::BarsPerYear of the market's
// interval. Errors: those of ComputeRuleBaselines.
absl::StatusOr<std::vector<LockboxRuleResult>> ComputeLockboxRules(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& test_domains);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_RULE_BASELINES_H_
