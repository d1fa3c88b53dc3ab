#include "coordinator/core/rule_baselines.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "coordinator/core/verdict.h"
#include "env/dataset.h"
#include "env/features.h"
#include "env/geometry.h"

namespace ristretto::coordinator {
namespace {

// The largest parameter accepted: MACD's spans 26m must fit an int, and no
// market has more rows than this anyway.
constexpr int64_t kMaxParam = 50'000'000;

// The cash weight below which the weights-to-logits map stops (a fully
// invested portfolio keeps 1e-9 in cash).
constexpr double kMinCashWeight = 1e-9;

absl::Status CheckParam(Rule rule, int64_t param) {
  switch (rule) {
    case Rule::kEqualWeightRebalanced:
      return absl::OkStatus();
    case Rule::kMomentum:
      if (param >= 2 && param <= kMaxParam) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          "momentum: N = ", param, " bars is not in [2, ", kMaxParam, "]"));
    case Rule::kMacd:
      if (param >= 1 && param <= kMaxParam / 26) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat("macd: bar multiplier ",
                                                     param, " is not in [1, ",
                                                     kMaxParam / 26, "]"));
  }
  return absl::InvalidArgumentError("unknown rule");
}

// The index of the market domain holding rows [begin, end), or −1.
int MarketDomainOf(const env::MarketData& market, int64_t begin, int64_t end) {
  for (size_t k = 0; k < market.domains.size(); ++k) {
    const env::Domain& d = market.domains[k];
    if (begin >= d.begin && end <= d.end && begin < end) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

// Momentum weights of rows [begin, end) into out[(t − begin)·n + i] from
// the closes at rows [begin, t] only. The window sum runs forward and is
// recomputed exactly every N rows (no drift over long markets); the same
// rows give the same operations, so a shorter `end` gives the same values.
void MomentumSlice(const env::MarketData& market, int64_t N, int64_t begin,
                   int64_t end, double* out) {
  const int n = market.num_assets;
  const double w = 1.0 / n;
  auto close = [&](int64_t row, int i) {
    return market.price[static_cast<size_t>(row) * n + i];
  };
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t k = 0; k < end - begin; ++k) {
      const double c = close(begin + k, i);
      sum += c;
      if (k >= N) sum -= close(begin + k - N, i);
      if (k + 1 >= N && (k + 1) % N == 0) {
        sum = 0;
        for (int64_t j = k + 1 - N; j <= k; ++j) sum += close(begin + j, i);
      }
      const bool hold = k + 1 >= N && c > sum / static_cast<double>(N);
      out[static_cast<size_t>(k) * n + i] = hold ? w : 0.0;
    }
  }
}

// MACD weights of rows [begin, end) (as MomentumSlice): EMAs run forward
// from the first close, so row t's values depend on rows [begin, t] only.
void MacdSlice(const env::MarketData& market, int64_t m, int64_t begin,
               int64_t end, double* out) {
  const int n = market.num_assets;
  const double w = 1.0 / n;
  std::vector<double> close(static_cast<size_t>(end - begin));
  for (int i = 0; i < n; ++i) {
    for (int64_t k = 0; k < end - begin; ++k) {
      close[static_cast<size_t>(k)] =
          market.price[static_cast<size_t>(begin + k) * n + i];
    }
    const env::Macd macd =
        env::ComputeMacd(close, static_cast<int>(env::kMacdFast * m),
                         static_cast<int>(env::kMacdSlow * m),
                         static_cast<int>(env::kMacdSignal * m));
    for (size_t k = 0; k < close.size(); ++k) {
      out[k * n + i] = macd.line[k] > macd.signal[k] ? w : 0.0;
    }
  }
}

// The weights of rows [begin, end) of one market domain (begin its first
// row) into out[(t − begin)·n + i], from closes at rows [begin, end) only.
void SliceWeights(Rule rule, int64_t param, const env::MarketData& market,
                  int64_t begin, int64_t end, double* out) {
  const int n = market.num_assets;
  switch (rule) {
    case Rule::kEqualWeightRebalanced:
      std::fill(out, out + static_cast<size_t>(end - begin) * n, 1.0 / n);
      return;
    case Rule::kMomentum:
      MomentumSlice(market, param, begin, end, out);
      return;
    case Rule::kMacd:
      MacdSlice(market, param, begin, end, out);
      return;
  }
}

absl::Status CheckMarket(const env::MarketData& market) {
  if (market.price.empty() || market.num_rows < 1) {
    return absl::InvalidArgumentError(
        "rule baselines: the market has no prices");
  }
  return Annotate(market.Validate(), "rule baselines: invalid market");
}

std::string Hours(int64_t bars, int64_t interval_seconds) {
  return absl::StrFormat("%g", static_cast<double>(bars) *
                                   static_cast<double>(interval_seconds) /
                                   3600.0);
}

}  // namespace

const char* RuleName(Rule rule) {
  switch (rule) {
    case Rule::kEqualWeightRebalanced:
      return "equal_weight_rebalanced";
    case Rule::kMomentum:
      return "momentum";
    case Rule::kMacd:
      return "macd";
  }
  return "unknown";
}

int64_t MomentumBars(int days, int64_t interval_seconds) {
  const double bars = static_cast<double>(days) * 86400.0 /
                      static_cast<double>(interval_seconds);
  return std::max<int64_t>(2, std::llround(bars));
}

int64_t MacdBarMultiplier(int s, int64_t interval_seconds) {
  const double m =
      static_cast<double>(s) * 3600.0 / static_cast<double>(interval_seconds);
  return std::max<int64_t>(1, std::llround(m));
}

absl::Status RuleWeights(Rule rule, int64_t param,
                         const env::MarketData& market, int64_t row,
                         std::vector<double>* weights) {
  RETURN_IF_ERROR(CheckMarket(market));
  RETURN_IF_ERROR(CheckParam(rule, param));
  if (row < 0 || row >= market.num_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("row ", row, " is outside the market's rows [0, ",
                     market.num_rows, ")"));
  }
  const int k = MarketDomainOf(market, row, row + 1);
  if (k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("row ", row, " is in no market domain"));
  }
  const int64_t begin = market.domains[static_cast<size_t>(k)].begin;
  const size_t n = static_cast<size_t>(market.num_assets);
  // Only the closes up to `row` are handed to the indicator.
  std::vector<double> rows(static_cast<size_t>(row + 1 - begin) * n);
  SliceWeights(rule, param, market, begin, row + 1, rows.data());
  weights->assign(rows.end() - static_cast<std::ptrdiff_t>(n), rows.end());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> RuleWeightTable(
    Rule rule, int64_t param, const env::MarketData& market,
    const std::vector<env::Domain>& domains) {
  RETURN_IF_ERROR(CheckMarket(market));
  RETURN_IF_ERROR(CheckParam(rule, param));
  // Per market domain, the last row any domain in it needs (+ 1).
  std::vector<int64_t> needed_end(market.domains.size(), -1);
  for (const env::Domain& d : domains) {
    const int k = MarketDomainOf(market, d.begin, d.end);
    if (k < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("rows [", d.begin, ", ", d.end,
                       ") are not inside one contiguous market domain"));
    }
    needed_end[static_cast<size_t>(k)] =
        std::max(needed_end[static_cast<size_t>(k)], d.end);
  }
  const size_t n = static_cast<size_t>(market.num_assets);
  std::vector<double> table(static_cast<size_t>(market.num_rows) * n, 0.0);
  for (size_t k = 0; k < market.domains.size(); ++k) {
    if (needed_end[k] < 0) continue;
    const int64_t begin = market.domains[k].begin;
    SliceWeights(rule, param, market, begin, needed_end[k],
                 table.data() + static_cast<size_t>(begin) * n);
  }
  return table;
}

void WeightsToActions(const double* weights, int n,
                      const env::EnvOptions& env_options, float* actions) {
  double invested = 0;
  for (int i = 0; i < n; ++i) invested += weights[i];
  const double cash = std::max(1.0 - invested, kMinCashWeight);
  const double clip = env_options.action_clip;
  const double k = env_options.weight_logit_scale;
  for (int i = 0; i < n; ++i) {
    const double a = weights[i] > 0 ? std::log(weights[i] / cash) / k : -clip;
    actions[i] = static_cast<float>(std::min(std::max(a, -clip), clip));
  }
}

absl::StatusOr<learner::EvaluationResult> EvaluateRule(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    Rule rule, int64_t param, learner::EvaluationTrace* trace) {
  if (env_options.action_model != env::ActionModel::kWeights) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rule baselines need action_model weights (target weights), not ",
        env::ActionModelName(env_options.action_model)));
  }
  if (market == nullptr) {
    return absl::InvalidArgumentError(
        "rule baselines: the market has no prices");
  }
  ASSIGN_OR_RETURN(const std::vector<double> table,
                   RuleWeightTable(rule, param, *market, domains));
  const int n = market->num_assets;
  const int64_t L = env_options.lookback;
  const float parked = static_cast<float>(-env_options.action_clip);
  // EvaluateActions steps every copy at once: at the call-th call copy b is
  // at row domains[b].begin + L − 1 + call until its domain is done, then
  // parked (its actions are not played for the result).
  int64_t call = 0;
  const learner::ActionFunction decide = [&](const float* /*obs*/, int copies,
                                             float* actions) {
    for (int b = 0; b < copies; ++b) {
      const env::Domain& d = domains[static_cast<size_t>(b)];
      float* a = actions + static_cast<size_t>(b) * n;
      if (call < env::StepsInRows(d.size(), L)) {
        const int64_t row = d.begin + L - 1 + call;
        WeightsToActions(table.data() + static_cast<size_t>(row) * n, n,
                         env_options, a);
      } else {
        std::fill(a, a + n, parked);
      }
    }
    ++call;
  };
  learner::EvaluationTrace local;
  learner::EvaluationTrace* played = trace != nullptr ? trace : &local;
  // A rule's signal is deliberate: it is traded to its target at once
  // (outside the band), whatever partial rate the policy's env uses to
  // filter a flickering target, and read on every bar, whatever decision
  // interval the policy's env gives the policy.
  env::EnvOptions rule_env = env_options;
  rule_env.rebalance_rate = 1.0;
  rule_env.decision_bars = 1;
  ASSIGN_OR_RETURN(
      learner::EvaluationResult result,
      learner::EvaluateActions(market, rule_env, domains, decide, played));
  // The rows the rule assumed are the rows the env played.
  for (size_t j = 0, first = 0; j < played->bars(); ++j) {
    if (j > 0 && played->domain[j] != played->domain[j - 1]) first = j;
    const env::Domain& d = domains[static_cast<size_t>(played->domain[j])];
    const int64_t expected = d.begin + L - 1 + static_cast<int64_t>(j - first);
    if (played->row[j] != expected) {
      return absl::InternalError(
          absl::StrCat(RuleName(rule), ": the env played row ", played->row[j],
                       " where the rule assumed row ", expected));
    }
  }
  return result;
}

int64_t SelectionHistoryRows(const env::MarketData& market,
                             const std::vector<env::Domain>& domains) {
  int64_t rows = 0;
  for (const env::Domain& d : domains) {
    const int k = MarketDomainOf(market, d.begin, d.end);
    if (k < 0) return 0;
    rows = std::max(rows, d.end - market.domains[static_cast<size_t>(k)].begin);
  }
  return rows;
}

absl::StatusOr<std::vector<RuleCandidate>> RuleCandidates(
    Rule rule, int64_t interval_seconds, int64_t history_rows) {
  if (interval_seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rule baselines: the bar interval is ", interval_seconds,
                     " s; it must be positive"));
  }
  std::vector<RuleCandidate> out;
  if (rule == Rule::kEqualWeightRebalanced) {
    out.push_back({0, "none (1/n each)"});
    return out;
  }
  std::string shortest;  // the first candidate, for the error
  if (rule == Rule::kMomentum) {
    for (int days : kMomentumDays) {
      const int64_t N = MomentumBars(days, interval_seconds);
      const std::string text =
          absl::StrCat("N = ", N, " bars (", days, " days)");
      if (shortest.empty()) shortest = absl::StrCat("momentum ", text);
      if (2 * N <= history_rows) out.push_back({N, text});
    }
  } else {
    for (int s : kMacdScales) {
      const int64_t m = MacdBarMultiplier(s, interval_seconds);
      const int64_t fast = env::kMacdFast * m, slow = env::kMacdSlow * m,
                    signal = env::kMacdSignal * m;
      const std::string text =
          absl::StrCat("EMA ", fast, "/", slow, "/", signal,
                       " bars = ", Hours(fast, interval_seconds), "/",
                       Hours(slow, interval_seconds), "/",
                       Hours(signal, interval_seconds), " hours (s = ", s, ")");
      if (shortest.empty()) shortest = absl::StrCat("macd ", text);
      const bool repeat = !out.empty() && out.back().param == m;
      if (!repeat && 2 * slow <= history_rows) out.push_back({m, text});
    }
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rule baselines: the shortest horizon, ", shortest,
        ", needs twice its warm-up in selection history, but the selection "
        "has ",
        history_rows, " rows"));
  }
  return out;
}

namespace {

absl::Status CheckBaselineInputs(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& selection,
    const std::vector<env::Domain>& test, int64_t interval_seconds,
    double bars_per_year) {
  if (market == nullptr) {
    return absl::InvalidArgumentError(
        "rule baselines: the market has no prices");
  }
  RETURN_IF_ERROR(CheckMarket(*market));
  if (interval_seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rule baselines: the bar interval is ", interval_seconds,
                     " s; it must be positive"));
  }
  if (market->interval_seconds != interval_seconds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rule baselines: interval_seconds is ", interval_seconds,
        " but the market's bars are ", market->interval_seconds, " s"));
  }
  if (!(bars_per_year > 0) || !std::isfinite(bars_per_year)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rule baselines: bars_per_year is ", bars_per_year,
                     "; it must be positive"));
  }
  int64_t selection_rows = 0;
  for (const env::Domain& d : selection) {
    selection_rows += std::max<int64_t>(d.size(), 0);
  }
  if (selection_rows == 0) {
    return absl::InvalidArgumentError(
        "rule baselines: no selection rows to choose the parameters on");
  }
  if (test.empty()) {
    return absl::InvalidArgumentError("rule baselines: no test rows");
  }
  for (const std::vector<env::Domain>* domains : {&selection, &test}) {
    for (const env::Domain& d : *domains) {
      if (MarketDomainOf(*market, d.begin, d.end) < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rule baselines: ", domains == &test ? "test" : "selection",
            " rows [", d.begin, ", ", d.end,
            ") are not inside one contiguous market domain"));
      }
    }
  }
  for (const env::Domain& t : test) {
    for (const env::Domain& s : selection) {
      if (std::max(t.begin, s.begin) < std::min(t.end, s.end)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rule baselines: test rows [", t.begin, ", ", t.end,
            ") overlap selection rows [", s.begin, ", ", s.end, ")"));
      }
    }
  }
  if (env_options.action_model != env::ActionModel::kWeights) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rule baselines need action_model weights (target weights), not ",
        env::ActionModelName(env_options.action_model)));
  }
  return absl::OkStatus();
}

// Chooses `rule`'s parameter on the selection rows, plays it on the test.
absl::StatusOr<RuleBaseline> OneRuleBaseline(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& selection,
    const std::vector<env::Domain>& test, Rule rule, int64_t interval_seconds,
    double bars_per_year) {
  ASSIGN_OR_RETURN(const std::vector<RuleCandidate> candidates,
                   RuleCandidates(rule, interval_seconds,
                                  SelectionHistoryRows(*market, selection)));
  RuleBaseline out;
  out.rule = rule;
  out.name = RuleName(rule);
  bool have_best = false;
  for (const RuleCandidate& c : candidates) {
    absl::StatusOr<learner::EvaluationResult> r =
        EvaluateRule(market, env_options, selection, rule, c.param);
    if (!r.ok()) {
      return Annotate(r.status(), absl::StrCat(out.name, " ", c.description,
                                               " on the selection rows"));
    }
    if (learner::IsBetterScore(r->sharpe, have_best, out.selection_sharpe)) {
      have_best = true;
      out.param = c.param;
      out.parameter = c.description;
      out.selection_sharpe = r->sharpe;
    }
  }
  absl::StatusOr<learner::EvaluationResult> played =
      EvaluateRule(market, env_options, test, rule, out.param);
  if (!played.ok()) {
    return Annotate(played.status(), absl::StrCat(out.name, " ", out.parameter,
                                                  " on the test rows"));
  }
  out.test = *std::move(played);
  out.test_sharpe_se =
      AnnualisedSharpeError(out.test.log_returns, bars_per_year);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<RuleBaseline>> ComputeRuleBaselines(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& selection_domains,
    const std::vector<env::Domain>& test_domains, int64_t interval_seconds,
    double bars_per_year) {
  RETURN_IF_ERROR(CheckBaselineInputs(market, env_options, selection_domains,
                                      test_domains, interval_seconds,
                                      bars_per_year));
  std::vector<RuleBaseline> out;
  for (Rule rule :
       {Rule::kEqualWeightRebalanced, Rule::kMomentum, Rule::kMacd}) {
    ASSIGN_OR_RETURN(
        RuleBaseline b,
        OneRuleBaseline(market, env_options, selection_domains, test_domains,
                        rule, interval_seconds, bars_per_year));
    out.push_back(std::move(b));
  }
  return out;
}

const RuleBaseline* StrongestRule(const std::vector<RuleBaseline>& rules) {
  const RuleBaseline* best = nullptr;
  for (const RuleBaseline& r : rules) {
    if (std::isnan(r.test.sharpe)) continue;
    if (best == nullptr || r.test.sharpe > best->test.sharpe) best = &r;
  }
  return best;
}

std::vector<env::Domain> DomainsBefore(const env::MarketData& market,
                                       int64_t first_row, int lookback) {
  std::vector<env::Domain> out;
  for (const env::Domain& d : market.domains) {
    const env::Domain cut{d.begin, std::min(d.end, first_row)};
    if (cut.end - cut.begin >= env::RowsForSteps(2, lookback)) {
      out.push_back(cut);
    }
  }
  return out;
}

absl::StatusOr<std::vector<LockboxRuleResult>> ComputeLockboxRules(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& test_domains) {
  if (market == nullptr || test_domains.empty()) {
    return absl::InvalidArgumentError("rule baselines need a market and bars");
  }
  int64_t first_row = test_domains.front().begin;
  for (const env::Domain& d : test_domains) {
    first_row = std::min(first_row, d.begin);
  }
  env::EnvOptions rule_env = env_options;
  rule_env.action_model = env::ActionModel::kWeights;
  const double bars_per_year = env::BarsPerYear(market->interval_seconds);
  ASSIGN_OR_RETURN(const std::vector<RuleBaseline> rules,
                   ComputeRuleBaselines(
                       market, rule_env,
                       DomainsBefore(*market, first_row, env_options.lookback),
                       test_domains, market->interval_seconds, bars_per_year));
  std::vector<LockboxRuleResult> out;
  out.reserve(rules.size());
  for (const RuleBaseline& r : rules) {
    LockboxRuleResult x;
    x.name = r.name;
    x.parameter = r.parameter;
    x.selection_sharpe = r.selection_sharpe;
    x.sharpe = r.test.sharpe;
    x.sharpe_se = r.test_sharpe_se;
    x.total_return = r.test.total_return;
    x.max_drawdown = r.test.max_drawdown;
    x.turnover = r.test.turnover;
    x.fees = r.test.fees;
    x.exposure = r.test.exposure;
    x.trades = r.test.trades;
    x.log_returns = r.test.log_returns;
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace ristretto::coordinator
