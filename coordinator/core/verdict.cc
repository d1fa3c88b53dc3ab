#include "coordinator/core/verdict.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "coordinator/core/statistics.h"
#include "env/dataset.h"
#include "env/geometry.h"
#include "env/metrics.h"
#include "learner/evaluation.h"
#include "nlohmann/json.hpp"

namespace ristretto::coordinator {
namespace {

using Json = nlohmann::json;

double Nan() { return std::numeric_limits<double>::quiet_NaN(); }

// A double as JSON: the number, or null when it is not finite (JSON has no
// NaN); ReadNumber reads it back.
Json FiniteOrNull(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

// When `obj` has `key`: *out = its number, NaN for null (FiniteOrNull's).
void ReadNumber(const Json& obj, const char* key, double* out) {
  if (obj.contains(key)) {
    *out = obj[key].is_number() ? obj[key].get<double>() : Nan();
  }
}

}  // namespace

SharpeStats CountEachBarOnce(SharpeStats stats, double multiplicity) {
  if (std::isfinite(multiplicity) && multiplicity > 1.0 && stats.n >= 2) {
    stats.n = std::max<int64_t>(
        2, std::llround(static_cast<double>(stats.n) / multiplicity));
  }
  return stats;
}

double AnnualisedSharpeError(const std::vector<double>& log_returns,
                             double bars_per_year, double multiplicity) {
  const absl::StatusOr<double> se = SharpeStandardError(
      CountEachBarOnce(ReturnStats(log_returns), multiplicity));
  if (!se.ok()) return Nan();
  return *se * std::sqrt(bars_per_year);
}

absl::StatusOr<SegmentBaselines> ComputeBaselines(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    int random_seeds, int random_split) {
  if (random_split < 1 || random_split > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "baselines: random_split ", random_split, " is not in [1, 16]"));
  }
  SegmentBaselines out;
  const double bpy = env::BarsPerYear(market->interval_seconds);
  const int n = market->num_assets;
  // Buy and hold on the rows the env plays: from the reset row
  // begin + L − 1 to the done row begin + size − L − 1 (env.md).
  const int64_t lookback = env_options.lookback;
  learner::EvaluationResult& bh = out.buy_and_hold;
  // As EvaluateActions aggregates: Sharpe and Sortino over every bar,
  // return and Calmar weighted by each domain's steps.
  std::vector<double> bars;
  int64_t all_steps = 0;
  for (const env::Domain& d : domains) {
    all_steps += std::max<int64_t>(env::StepsInRows(d.size(), lookback), 0);
  }
  for (const env::Domain& d : domains) {
    const int64_t first = d.begin + lookback - 1;
    const int64_t end = d.begin + d.size() - lookback;
    if (end - first < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "baselines: domain [", d.begin, ", ", d.end, ") is too short"));
    }
    const std::vector<double> values = env::BuyAndHoldAccount(
        market->price, n, first, end, env_options.initial_capital,
        env_options.buy_fee, env_options.slippage_bps);
    const env::PerformanceSummary s = env::Summarize(values, bpy);
    const double weight = static_cast<double>(values.size() - 1) /
                          static_cast<double>(std::max<int64_t>(all_steps, 1));
    const std::vector<double> r = env::BarReturns(values);
    bars.insert(bars.end(), r.begin(), r.end());
    bh.calmar += s.calmar * weight;
    bh.total_return += s.total_return * weight;
    bh.max_drawdown = std::max(bh.max_drawdown, s.max_drawdown);
    for (size_t t = 1; t < values.size(); ++t) {
      bh.log_returns.push_back(std::log(values[t] / values[t - 1]));
    }
    bh.steps += static_cast<int64_t>(values.size()) - 1;
  }
  bh.sharpe = env::SharpeRatio(bars, bpy);
  bh.sortino = env::SortinoRatio(bars, bpy);
  bh.benchmark_sharpe = bh.sharpe;
  bh.benchmark_return = bh.total_return;
  bh.exposure = 1;
  out.buy_and_hold_sharpe_se = AnnualisedSharpeError(bh.log_returns, bpy);
  // The random policy (with a split: K of them, capital split equally).
  auto play_random = [&](int64_t seed) {
    Rng rng(static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ULL + 17);
    learner::ActionFunction decide = [&rng, n](const float* /*obs*/,
                                               int copies_now, float* actions) {
      for (int i = 0; i < copies_now * n; ++i) {
        actions[i] = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
      }
    };
    return learner::EvaluateActions(market, env_options, domains, decide);
  };
  std::vector<int64_t> domain_steps;
  domain_steps.reserve(domains.size());
  for (const env::Domain& d : domains) {
    domain_steps.push_back(env::StepsInRows(d.size(), lookback));
  }
  std::vector<double> sharpes, returns;
  for (int seed = 1; seed <= random_seeds; ++seed) {
    learner::EvaluationResult r;
    if (random_split == 1) {
      ASSIGN_OR_RETURN(r, play_random(seed));
    } else {
      std::vector<learner::EvaluationResult> members;
      members.reserve(static_cast<size_t>(random_split));
      for (int k = 0; k < random_split; ++k) {
        ASSIGN_OR_RETURN(
            learner::EvaluationResult m,
            play_random(seed + static_cast<int64_t>(k) * random_seeds));
        members.push_back(std::move(m));
      }
      std::vector<learner::ShareResult> shares;
      shares.reserve(members.size());
      for (const learner::EvaluationResult& m : members) {
        learner::ShareResult share;
        share.log_returns = m.log_returns;
        share.turnover = m.turnover;
        share.fees = m.fees;
        share.exposure = m.exposure;
        share.trades = m.trades;
        shares.push_back(share);
      }
      // The same combination as the lockbox's refits (CombineRefits).
      ASSIGN_OR_RETURN(learner::SplitResult split,
                       learner::CombineShares(shares, domain_steps, bpy));
      r.sharpe = split.summary.sharpe;
      r.sortino = split.summary.sortino;
      r.total_return = split.summary.total_return;
      r.calmar = split.summary.calmar;
      r.max_drawdown = split.summary.max_drawdown;
      r.steps = split.summary.steps;
      r.turnover = split.turnover;
      r.fees = split.fees;
      r.exposure = split.exposure;
      r.trades = split.trades;
      r.benchmark_sharpe = members[0].benchmark_sharpe;
      r.benchmark_return = members[0].benchmark_return;
      r.score = r.sharpe - r.benchmark_sharpe;
    }
    sharpes.push_back(r.sharpe);
    returns.push_back(r.total_return);
    r.log_returns = {};
    out.random_runs.push_back(std::move(r));
  }
  auto mean_std = [](const std::vector<double>& v, double* mean, double* sd) {
    *mean = 0;
    *sd = 0;
    if (v.empty()) return;
    for (double x : v) *mean += x / static_cast<double>(v.size());
    for (double x : v) *sd += (x - *mean) * (x - *mean);
    *sd = std::sqrt(*sd / static_cast<double>(v.size()));
  };
  out.random_seeds = random_seeds;
  out.random_split = random_split;
  mean_std(sharpes, &out.random_sharpe_mean, &out.random_sharpe_std);
  mean_std(returns, &out.random_return_mean, &out.random_return_std);
  return out;
}

BaselineTests TestAgainstBaselines(
    double sharpe, double sharpe_se,
    const std::vector<double>& policy_log_returns,
    const std::vector<double>& bh_log_returns, double random_sharpe_mean,
    double random_sharpe_std, double bars_per_year) {
  BaselineTests t;
  const double annual = std::sqrt(bars_per_year);
  std::vector<std::string> notes;
  const bool has_se =
      sharpe_se > 0 && std::isfinite(sharpe_se) && std::isfinite(sharpe);
  if (has_se) {
    t.p_vs_cash = NormalCdf(-sharpe / sharpe_se);
  } else {
    notes.push_back(
        "no standard error for the policy's Sharpe (so no test against cash "
        "or the random policies)");
  }
  const double spread =
      std::sqrt(sharpe_se * sharpe_se + random_sharpe_std * random_sharpe_std);
  if (has_se && std::isfinite(spread) && std::isfinite(random_sharpe_mean)) {
    t.p_vs_random = NormalCdf(-(sharpe - random_sharpe_mean) / spread);
  } else if (has_se) {
    notes.push_back("the random policies' Sharpe ratios are not known");
  }  // (without the policy's error neither test is made: said above)
  if (policy_log_returns.empty() || bh_log_returns.empty()) {
    notes.push_back(
        "no paired test against buy and hold (its returns on these bars were "
        "not recorded)");
  } else {
    absl::StatusOr<SharpeDifference> d =
        SharpeDifferenceTest(policy_log_returns, bh_log_returns);
    if (d.ok()) {
      t.p_vs_buy_and_hold = d->p_value;
      t.vs_bh_difference = d->difference * annual;
      t.vs_bh_se = d->standard_error * annual;
    } else {
      notes.push_back(absl::StrCat("no paired test against buy and hold: ",
                                   d.status().message()));
    }
  }
  t.note = absl::StrJoin(notes, "; ");
  return t;
}

std::string PValueText(double p) {
  if (!std::isfinite(p)) return "p n/a";
  return p < 0.001 ? std::string("p < 0.001") : absl::StrFormat("p = %.3f", p);
}

std::string FormatSharpeSe(double sharpe, double se) {
  if (!(se > 0) || !std::isfinite(se)) {
    return absl::StrFormat("%.2f ± n/a", sharpe);
  }
  return absl::StrFormat("%.2f ± %.2f", sharpe, se);
}

namespace {

// Fills the baseline tests of `l` (see TrialEvidence::Lockbox) from the
// best trial's lockbox returns.
void TestLockboxAgainstBaselines(const TrialEvidence& trial,
                                 double bars_per_year,
                                 TrialEvidence::Lockbox* l) {
  const BaselineTests t =
      TestAgainstBaselines(l->sharpe, l->sharpe_se, trial.lockbox_log_returns,
                           trial.lockbox_bh_log_returns, l->random_sharpe_mean,
                           l->random_sharpe_std, bars_per_year);
  l->p_vs_cash = t.p_vs_cash;
  l->p_vs_buy_and_hold = t.p_vs_buy_and_hold;
  l->p_vs_random = t.p_vs_random;
  l->vs_bh_difference = t.vs_bh_difference;
  l->vs_bh_se = t.vs_bh_se;
  l->tests_note = t.note;
  // The strongest rule (highest finite lockbox Sharpe; the first of
  // equals) and the same paired test as against buy and hold.
  l->strongest_rule = -1;
  for (size_t k = 0; k < l->rules.size(); ++k) {
    const double sr = l->rules[k].sharpe;
    if (!std::isfinite(sr)) continue;
    if (l->strongest_rule < 0 || sr > l->rules[l->strongest_rule].sharpe) {
      l->strongest_rule = static_cast<int>(k);
    }
  }
  if (l->strongest_rule < 0) return;
  const LockboxRuleResult& rule = l->rules[l->strongest_rule];
  if (rule.log_returns.size() != trial.lockbox_log_returns.size() ||
      rule.log_returns.empty()) {
    return;  // p stays 1: not tested
  }
  const BaselineTests r =
      TestAgainstBaselines(l->sharpe, l->sharpe_se, trial.lockbox_log_returns,
                           rule.log_returns, 0, 0, bars_per_year);
  l->p_vs_strongest_rule = r.p_vs_buy_and_hold;
  l->vs_rule_difference = r.vs_bh_difference;
  l->vs_rule_se = r.vs_bh_se;
}

// "; the strongest rule, NAME (PARAM), 1.23 ± 0.45: the policy beats it
// beyond noise (difference d ± se, paired, p = …)" or "… does not beat it
// …", or "" without rules.
std::string StrongestRuleText(const TrialEvidence::Lockbox& l) {
  if (l.strongest_rule < 0) return "";
  const LockboxRuleResult& r = l.rules[l.strongest_rule];
  const bool tested = std::isfinite(l.vs_rule_difference);
  const bool beats = tested && l.p_vs_strongest_rule < kEdgeSignificance;
  return absl::StrCat(
      "; the strongest rule a quant tries first, ", r.name, " (", r.parameter,
      "), lockbox Sharpe ", FormatSharpeSe(r.sharpe, r.sharpe_se),
      ": the policy ", beats ? "beats" : "does not beat", " it beyond noise",
      tested ? absl::StrFormat(" (difference %.2f ± %.2f, paired, %s)",
                               l.vs_rule_difference, l.vs_rule_se,
                               PValueText(l.p_vs_strongest_rule))
             : std::string(" (not tested: the returns do not pair)"));
}

}  // namespace

StudyStatistics ComputeStudyStatistics(
    const std::vector<TrialEvidence>& complete, int64_t trials_tried,
    int64_t checkpoints_per_run, double bars_per_year,
    double validation_bar_multiplicity) {
  StudyStatistics s;
  const double multiplicity = std::isfinite(validation_bar_multiplicity)
                                  ? std::max(validation_bar_multiplicity, 1.0)
                                  : 1.0;
  s.cv_bar_multiplicity = multiplicity;
  s.complete_trials = static_cast<int64_t>(complete.size());
  s.trials_tried = std::max<int64_t>(trials_tried, s.complete_trials);
  s.checkpoints_per_run = std::max<int64_t>(checkpoints_per_run, 1);
  s.effective_trials = s.trials_tried * s.checkpoints_per_run;
  const double annual = std::sqrt(bars_per_year);
  if (complete.empty()) {
    s.dsr_note = "no complete trial";
    s.pbo_note = "no complete trial";
    s.verdict = "no edge: no trial completed, nothing to judge";
    return s;
  }
  const TrialEvidence* best = &complete.front();
  for (const TrialEvidence& t : complete) {
    if (t.score > best->score ||
        (t.score == best->score && t.number < best->number)) {
      best = &t;
    }
  }
  s.best_trial = best->number;
  s.best_score = best->score;
  s.lockbox = best->lockbox;
  // The pooled returns repeat each bar `multiplicity` times on average:
  // as evidence they are worth the distinct bars only.
  const SharpeStats stats =
      CountEachBarOnce(ReturnStats(best->cv_log_returns), multiplicity);
  s.cv_sharpe = stats.sharpe * annual;
  s.cv_bars = stats.n;
  s.cv_skewness = stats.skewness;
  s.cv_kurtosis = stats.kurtosis;
  {
    const absl::StatusOr<double> se = SharpeStandardError(stats);
    s.cv_sharpe_se = se.ok() ? *se * annual : Nan();
  }

  // Deflated Sharpe ratio.
  std::vector<double> trial_sharpes;
  trial_sharpes.reserve(complete.size());
  for (const TrialEvidence& t : complete) {
    trial_sharpes.push_back(ReturnStats(t.cv_log_returns).sharpe);
  }
  double variance = 0;
  bool have_variance = false;
  if (trial_sharpes.size() >= 2) {
    absl::StatusOr<double> v = TrialSharpeVariance(trial_sharpes);
    if (v.ok()) {
      variance = *v;
      have_variance = true;
    }
  } else if (s.effective_trials == 1) {
    have_variance = true;  // no selection at all: SR0 = 0
  }
  // Under the null every trial's Sharpe estimate still varies by its own
  // sampling error, Var(ŝ) ≈ 1/(T − 1) per bar (Lo 2002): with few complete
  // trials the sample variance can fall far below it and make a lucky best
  // look significant, so V is never taken below that floor.
  if (have_variance && stats.n >= 2 && s.effective_trials > 1) {
    variance = std::max(variance, 1.0 / static_cast<double>(stats.n - 1));
  }
  if (!have_variance) {
    s.dsr_note = absl::StrCat(
        "fewer than 2 complete trials: the spread of the ", s.trials_tried,
        " trials' Sharpe ratios is unknown, so the selection cannot be "
        "deflated");
  } else {
    absl::StatusOr<DeflatedSharpeResult> dsr =
        DeflatedSharpeRatio(stats, s.effective_trials, variance);
    if (dsr.ok()) {
      s.has_dsr = true;
      s.dsr = dsr->dsr;
      s.dsr_p_value = dsr->p_value;
      s.expected_max_sharpe = dsr->expected_max_sharpe * annual;
      s.trial_sharpe_std = std::sqrt(variance) * annual;
    } else {
      s.dsr_note = std::string(dsr.status().message());
    }
  }

  // PBO over the complete trials' CV returns.
  if (complete.size() < 2) {
    s.pbo_note = "needs at least 2 complete trials";
  } else if (multiplicity > 1.0 + 1e-9) {
    s.pbo_note = absl::StrFormat(
        "not computed: the CV folds test each bar %.2g times, so the blocks "
        "of the pooled returns would put the same bars in and out of sample",
        multiplicity);
  } else {
    const size_t rows = complete.front().cv_log_returns.size();
    bool same = true;
    for (const TrialEvidence& t : complete) {
      same = same && t.cv_log_returns.size() == rows;
    }
    if (!same) {
      s.pbo_note =
          "the trials were validated on different rows (a searched lookback)";
    } else {
      std::vector<std::vector<double>> matrix(rows);
      for (size_t r = 0; r < rows; ++r) {
        for (const TrialEvidence& t : complete) {
          matrix[r].push_back(t.cv_log_returns[r]);
        }
      }
      absl::StatusOr<PboResult> pbo = ProbabilityOfBacktestOverfitting(matrix);
      if (pbo.ok()) {
        s.has_pbo = true;
        s.pbo = pbo->pbo;
        s.pbo_blocks = pbo->num_blocks;
        s.pbo_combinations = pbo->num_combinations;
      } else {
        s.pbo_note = std::string(pbo.status().message());
      }
    }
  }

  // The verdict.
  const bool significant = s.has_dsr && s.dsr_p_value < kEdgeSignificance;
  std::string dsr_text =
      s.has_dsr ? absl::StrFormat(
                      "deflated Sharpe p = %.3g (best CV Sharpe %.2f "
                      "± %.2f vs %.2f expected from the best of %d "
                      "worthless trials)",
                      s.dsr_p_value, s.cv_sharpe, s.cv_sharpe_se,
                      s.expected_max_sharpe, s.effective_trials)
                : absl::StrCat("no deflated Sharpe (", s.dsr_note, ")");
  std::string lockbox_text;
  bool beats = false;
  if (!s.lockbox.has_value()) {
    lockbox_text = "the best trial has no lockbox result";
  } else {
    TrialEvidence::Lockbox& l = *s.lockbox;
    TestLockboxAgainstBaselines(*best, bars_per_year, &l);
    const bool vs_cash = l.p_vs_cash < kEdgeSignificance;
    const bool vs_bh = l.p_vs_buy_and_hold < kEdgeSignificance;
    const bool vs_random = l.p_vs_random < kEdgeSignificance;
    beats = vs_cash && vs_bh && vs_random;
    std::string bh_text =
        l.vs_bh_se > 0
            ? absl::StrFormat(
                  "buy & hold %.2f (difference %.2f ± %.2f, "
                  "paired, %s)",
                  l.bh_sharpe, l.vs_bh_difference, l.vs_bh_se,
                  PValueText(l.p_vs_buy_and_hold))
            : absl::StrFormat("buy & hold %.2f (not tested)", l.bh_sharpe);
    lockbox_text = absl::StrFormat(
        "lockbox Sharpe %s%s vs cash 0 (%s), %s, random%s %.2f ± %.2f "
        "(%s)",
        FormatSharpeSe(l.sharpe, l.sharpe_se),
        l.refits > 1
            ? absl::StrFormat(" (capital split among %d refits)", l.refits)
            : std::string(),
        PValueText(l.p_vs_cash), bh_text,
        // the random baseline is split like the policy
        l.refits > 1 ? absl::StrFormat(" (each split among %d)", l.refits)
                     : std::string(),
        l.random_sharpe_mean, l.random_sharpe_std, PValueText(l.p_vs_random));
    const std::string rule_text = StrongestRuleText(l);
    if (!beats) {
      std::vector<std::string> missed;
      if (!vs_cash) missed.push_back("cash");
      if (!vs_bh) missed.push_back("buy & hold");
      if (!vs_random) missed.push_back("random");
      absl::StrAppend(&lockbox_text, " (does not beat ",
                      absl::StrJoin(missed, ", "), " at p < 0.05",
                      l.tests_note.empty() ? "" : "; ", l.tests_note, ")");
    }
    absl::StrAppend(&lockbox_text, rule_text);
  }
  s.edge = significant && beats;
  if (s.edge) {
    s.verdict = absl::StrCat("EDGE: trial ", best->number, ": ", dsr_text, "; ",
                             lockbox_text);
  } else {
    std::string why;
    if (!significant) why = dsr_text;
    if (!beats) {
      if (!why.empty()) absl::StrAppend(&why, "; ");
      absl::StrAppend(&why, lockbox_text);
    } else {
      absl::StrAppend(&why, "; ", lockbox_text);
    }
    s.verdict = absl::StrCat("NO EDGE distinguishable from luck: ", why);
  }
  return s;
}

std::string LockboxRulesToJson(const std::vector<LockboxRuleResult>& rules,
                               bool with_returns) {
  const auto& num = FiniteOrNull;
  Json out = Json::array();
  for (const LockboxRuleResult& r : rules) {
    Json j{{"name", r.name},
           {"parameter", r.parameter},
           {"selection_sharpe", num(r.selection_sharpe)},
           {"sharpe", num(r.sharpe)},
           {"sharpe_se", num(r.sharpe_se)},
           {"total_return", num(r.total_return)},
           {"max_drawdown", num(r.max_drawdown)},
           {"turnover", num(r.turnover)},
           {"fees", num(r.fees)},
           {"exposure", num(r.exposure)},
           {"trades", r.trades}};
    if (with_returns) {
      Json returns = Json::array();
      for (double v : r.log_returns) returns.push_back(num(v));
      j["log_returns"] = std::move(returns);
    }
    out.push_back(std::move(j));
  }
  return out.dump();
}

absl::StatusOr<std::vector<LockboxRuleResult>> LockboxRulesFromJson(
    const std::string& json) {
  std::vector<LockboxRuleResult> rules;
  if (json.empty()) return rules;
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) {
    return absl::DataLossError("lockbox rules are not a JSON array");
  }
  try {
    for (const Json& r : j) {
      LockboxRuleResult x;
      auto num = [&r](const char* key, double* out) {
        ReadNumber(r, key, out);
      };
      x.name = r.at("name").get<std::string>();
      x.parameter = r.value("parameter", std::string());
      num("selection_sharpe", &x.selection_sharpe);
      num("sharpe", &x.sharpe);
      num("sharpe_se", &x.sharpe_se);
      num("total_return", &x.total_return);
      num("max_drawdown", &x.max_drawdown);
      num("turnover", &x.turnover);
      num("fees", &x.fees);
      num("exposure", &x.exposure);
      x.trades = r.value("trades", int64_t{0});
      if (r.contains("log_returns")) {
        for (const Json& v : r.at("log_returns")) {
          x.log_returns.push_back(v.is_number() ? v.get<double>() : Nan());
        }
      }
      rules.push_back(std::move(x));
    }
  } catch (const Json::exception& e) {
    return absl::DataLossError(absl::StrCat("lockbox rules: ", e.what()));
  }
  return rules;
}

std::string StudyStatisticsToJson(const StudyStatistics& s) {
  const auto& num = FiniteOrNull;
  Json j{
      {"complete_trials", s.complete_trials},
      {"trials_tried", s.trials_tried},
      {"checkpoints_per_run", s.checkpoints_per_run},
      {"effective_trials", s.effective_trials},
      {"best_score", num(s.best_score)},
      {"cv_sharpe", num(s.cv_sharpe)},
      {"cv_sharpe_se", num(s.cv_sharpe_se)},
      {"cv_skewness", num(s.cv_skewness)},
      {"cv_kurtosis", num(s.cv_kurtosis)},
      {"cv_bars", s.cv_bars},
      {"cv_bar_multiplicity", num(s.cv_bar_multiplicity)},
      {"has_dsr", s.has_dsr},
      {"dsr", num(s.dsr)},
      {"dsr_p_value", num(s.dsr_p_value)},
      {"expected_max_sharpe", num(s.expected_max_sharpe)},
      {"trial_sharpe_std", num(s.trial_sharpe_std)},
      {"dsr_note", s.dsr_note},
      {"has_pbo", s.has_pbo},
      {"pbo", num(s.pbo)},
      {"pbo_blocks", s.pbo_blocks},
      {"pbo_combinations", s.pbo_combinations},
      {"pbo_note", s.pbo_note},
      {"edge", s.edge},
      {"verdict", s.verdict},
  };
  if (s.best_trial.has_value()) j["best_trial"] = *s.best_trial;
  if (s.lockbox.has_value()) {
    const TrialEvidence::Lockbox& l = *s.lockbox;
    j["lockbox"] = Json{{"sharpe", num(l.sharpe)},
                        {"sharpe_se", num(l.sharpe_se)},
                        {"total_return", num(l.total_return)},
                        {"max_drawdown", num(l.max_drawdown)},
                        {"bh_sharpe", num(l.bh_sharpe)},
                        {"bh_return", num(l.bh_return)},
                        {"random_sharpe_mean", num(l.random_sharpe_mean)},
                        {"random_sharpe_std", num(l.random_sharpe_std)},
                        {"p_vs_cash", num(l.p_vs_cash)},
                        {"p_vs_buy_and_hold", num(l.p_vs_buy_and_hold)},
                        {"p_vs_random", num(l.p_vs_random)},
                        {"vs_bh_difference", num(l.vs_bh_difference)},
                        {"vs_bh_se", num(l.vs_bh_se)},
                        {"tests_note", l.tests_note},
                        {"bars", l.bars},
                        {"refits", l.refits},
                        {"strongest_rule", l.strongest_rule},
                        {"p_vs_strongest_rule", num(l.p_vs_strongest_rule)},
                        {"vs_rule_difference", num(l.vs_rule_difference)},
                        {"vs_rule_se", num(l.vs_rule_se)}};
    j["lockbox"]["rules"] =
        Json::parse(LockboxRulesToJson(l.rules, /*with_returns=*/false));
  }
  return j.dump();
}

absl::StatusOr<StudyStatistics> StudyStatisticsFromJson(
    const std::string& json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::DataLossError("study result is not a JSON object");
  }
  auto num = [&j](const char* key, double* out) { ReadNumber(j, key, out); };
  StudyStatistics s;
  try {
    s.complete_trials = j.value("complete_trials", int64_t{0});
    s.trials_tried = j.value("trials_tried", int64_t{0});
    s.checkpoints_per_run = j.value("checkpoints_per_run", int64_t{1});
    s.effective_trials = j.value("effective_trials", int64_t{0});
    if (j.contains("best_trial")) s.best_trial = j["best_trial"].get<int64_t>();
    num("best_score", &s.best_score);
    num("cv_sharpe", &s.cv_sharpe);
    num("cv_sharpe_se", &s.cv_sharpe_se);
    num("cv_skewness", &s.cv_skewness);
    num("cv_kurtosis", &s.cv_kurtosis);
    s.cv_bars = j.value("cv_bars", int64_t{0});
    num("cv_bar_multiplicity", &s.cv_bar_multiplicity);
    s.has_dsr = j.value("has_dsr", false);
    num("dsr", &s.dsr);
    num("dsr_p_value", &s.dsr_p_value);
    num("expected_max_sharpe", &s.expected_max_sharpe);
    num("trial_sharpe_std", &s.trial_sharpe_std);
    s.dsr_note = j.value("dsr_note", std::string());
    s.has_pbo = j.value("has_pbo", false);
    num("pbo", &s.pbo);
    s.pbo_blocks = j.value("pbo_blocks", 0);
    s.pbo_combinations = j.value("pbo_combinations", int64_t{0});
    s.pbo_note = j.value("pbo_note", std::string());
    s.edge = j.value("edge", false);
    s.verdict = j.value("verdict", std::string());
    if (j.contains("lockbox")) {
      const Json& l = j["lockbox"];
      TrialEvidence::Lockbox x;
      auto lnum = [&l](const char* key, double* out) {
        ReadNumber(l, key, out);
      };
      lnum("sharpe", &x.sharpe);
      lnum("sharpe_se", &x.sharpe_se);
      // (results stored before 2026-11-29 kept an undefined error as 0)
      if (!(x.sharpe_se > 0)) x.sharpe_se = Nan();
      lnum("total_return", &x.total_return);
      lnum("max_drawdown", &x.max_drawdown);
      lnum("bh_sharpe", &x.bh_sharpe);
      lnum("bh_return", &x.bh_return);
      lnum("random_sharpe_mean", &x.random_sharpe_mean);
      lnum("random_sharpe_std", &x.random_sharpe_std);
      lnum("p_vs_cash", &x.p_vs_cash);
      lnum("p_vs_buy_and_hold", &x.p_vs_buy_and_hold);
      lnum("p_vs_random", &x.p_vs_random);
      lnum("vs_bh_difference", &x.vs_bh_difference);
      lnum("vs_bh_se", &x.vs_bh_se);
      x.tests_note = l.value("tests_note", std::string());
      x.bars = l.value("bars", int64_t{0});
      x.refits = l.value("refits", 1);
      x.strongest_rule = l.value("strongest_rule", -1);
      lnum("p_vs_strongest_rule", &x.p_vs_strongest_rule);
      lnum("vs_rule_difference", &x.vs_rule_difference);
      lnum("vs_rule_se", &x.vs_rule_se);
      if (l.contains("rules")) {
        ASSIGN_OR_RETURN(x.rules, LockboxRulesFromJson(l["rules"].dump()));
      }
      if (x.strongest_rule >= static_cast<int>(x.rules.size())) {
        return absl::DataLossError(
            "study result: lockbox.strongest_rule is not one of its rules");
      }
      s.lockbox = x;
    }
  } catch (const Json::exception& e) {
    return absl::DataLossError(absl::StrCat("study result: ", e.what()));
  }
  return s;
}

}  // namespace ristretto::coordinator
