// Honest results: the baselines of a test segment (equal-weight
// buy and hold, cash, a random policy), the statistics of a study (standard
// errors, the Deflated Sharpe Ratio of the best trial, the Probability of
// Backtest Overfitting) and the one-line verdict. Pure functions over plain
// inputs; the coordinator computes them at the end of a study and the CLI
// on demand (coordinator/store/study_result.h). No torch, no database.
#ifndef RISTRETTO_COORDINATOR_CORE_VERDICT_H_
#define RISTRETTO_COORDINATOR_CORE_VERDICT_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/core/statistics.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "learner/run_options.h"

namespace ristretto::coordinator {

// Random-policy seeds evaluated on a segment by default.
inline constexpr int kRandomPolicySeeds = 20;
// The significance level of the deflated Sharpe ratio's test.
inline constexpr double kEdgeSignificance = 0.05;

// The baselines of one test segment, on exactly the rows a policy evaluated
// with learner::EvaluateActions on `domains` plays. Cash needs no field:
// it keeps its value (Sharpe 0, return 0, drawdown 0).
struct SegmentBaselines {
  // Equal-weight buy and hold (bought at the first row with the buy fee):
  // sharpe, sortino, calmar, max_drawdown, total_return (each as
  // EvaluateActions aggregates them: Sharpe and Sortino over every bar,
  // return and Calmar weighted by each domain's steps, worst drawdown) and
  // log_returns (domains concatenated).
  learner::EvaluationResult buy_and_hold;
  double buy_and_hold_sharpe_se = 0;  // annualised (Mertens)
  // Uniform random actions in [−1, 1] per asset and bar, seeds 1 … N.
  // With random_split K > 1 each of the N is an account whose capital is
  // split equally among K independent random policies (seeds s, s + N, …,
  // s + (K − 1)·N), scored as a K-refit lockbox is (env::EqualCapitalValues):
  // a split policy is compared with split random policies, which differ
  // in their spread (about 1/√K) and, with a non-zero mean, in their mean.
  int random_seeds = 0;
  int random_split = 1;
  double random_sharpe_mean = 0, random_sharpe_std = 0;  // population std
  double random_return_mean = 0, random_return_std = 0;
  // Each seed's whole result (seeds 1 … N in order, log_returns dropped):
  // the spread of the other metrics, e.g. for `ristretto backtest`.
  std::vector<learner::EvaluationResult> random_runs;
};

// `random_split`: the number of policies a random baseline's capital is
// split among (the lockbox's refits; 1 = one random policy per seed).
// Errors: those of EvaluateActions (no domain, a domain too short), and a
// random_split outside [1, 16].
absl::StatusOr<SegmentBaselines> ComputeBaselines(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    int random_seeds = kRandomPolicySeeds, int random_split = 1);

// `stats` of returns that repeat each bar `multiplicity` times on average
// (CPCV's pooled folds) as evidence: n becomes the distinct bars,
// round(n / multiplicity) (at least 2). Unchanged when multiplicity <= 1.
SharpeStats CountEachBarOnce(SharpeStats stats, double multiplicity);

// Annualised standard error of the Sharpe ratio of `log_returns`
// (SharpeStandardError of ReturnStats, × sqrt(bars_per_year)), counting
// each bar once when they repeat (CountEachBarOnce); NaN when it cannot be
// computed (fewer than 2 returns).
double AnnualisedSharpeError(const std::vector<double>& log_returns,
                             double bars_per_year, double multiplicity = 1.0);

// A policy's Sharpe tested against the three baselines on the same bars,
// one-sided (H1: the policy's Sharpe is higher). p-values are 1 when a test
// could not be made; `note` then says why. The verdict and `ristretto
// backtest` both decide "beats" with these, at kEdgeSignificance:
//   cash: Φ(−sharpe / sharpe_se) (PSR(0));
//   buy and hold: the paired SharpeDifferenceTest of the policy's and buy
//     and hold's log returns on the same bars (annualised difference and
//     its standard error);
//   random: Φ(−(sharpe − random_sharpe_mean) / sqrt(sharpe_se² +
//     random_sharpe_std²)), the policy against the spread of random
//     policies on the same bars.
struct BaselineTests {
  double p_vs_cash = 1, p_vs_buy_and_hold = 1, p_vs_random = 1;
  // Annualised; NaN when the paired test could not be made.
  double vs_bh_difference = std::numeric_limits<double>::quiet_NaN();
  double vs_bh_se = std::numeric_limits<double>::quiet_NaN();
  std::string note;
};

// `sharpe`, `sharpe_se`, `random_sharpe_mean`, `random_sharpe_std`:
// annualised. `policy_log_returns` and `bh_log_returns`: per bar, the same
// bars in the same order (empty: no paired test against buy and hold).
BaselineTests TestAgainstBaselines(
    double sharpe, double sharpe_se,
    const std::vector<double>& policy_log_returns,
    const std::vector<double>& bh_log_returns, double random_sharpe_mean,
    double random_sharpe_std, double bars_per_year);

// "p = 0.012", or "p < 0.001" ("p n/a" when not finite).
std::string PValueText(double p);

// "1.23 ± 0.45", or "1.23 ± n/a" when the standard error is undefined
// (NaN, or 0 as the store keeps an undefined one). The one format of a
// Sharpe with its error: the verdict, the CLI's tables and the backtest.
std::string FormatSharpeSe(double sharpe, double se);

// One rule baseline (rule_baselines.h) on the lockbox bars, as a study
// keeps it: computed by the coordinator when a trial's lockbox result is
// combined, on the same bars and with the same costs as the policy, its
// parameter chosen on the rows before the lockbox (never on it).
struct LockboxRuleResult {
  std::string name;             // RuleName: "equal_weight_rebalanced", ...
  std::string parameter;        // e.g. "N = 720 bars (30 days)"
  double selection_sharpe = 0;  // of the chosen parameter, pre-lockbox rows
  // On the lockbox. sharpe_se: annualised, NaN when undefined.
  double sharpe = 0, sharpe_se = 0, total_return = 0, max_drawdown = 0;
  double turnover = 0, fees = 0, exposure = 0;
  int64_t trades = 0;
  // Per lockbox bar, the bars of the policy's returns (the paired test).
  std::vector<double> log_returns;
};

// JSON array of the rules (`with_returns`: with their log returns, as the
// store keeps them; without, as the study result shows them).
std::string LockboxRulesToJson(const std::vector<LockboxRuleResult>& rules,
                               bool with_returns);
// Accepts both forms and "" (no rules). kDataLoss for anything else.
absl::StatusOr<std::vector<LockboxRuleResult>> LockboxRulesFromJson(
    const std::string& json);

// One complete trial as the statistics see it.
struct TrialEvidence {
  int64_t number = 0;
  double score = 0;  // the study objective (ranks the trials)
  // Every CV fold's validation log returns, folds concatenated in fold
  // order (the same rows for every trial of a study).
  std::vector<double> cv_log_returns;
  // The trial's final run on the lockbox, when it has finished.
  struct Lockbox {
    double sharpe = 0, sharpe_se = 0, total_return = 0, max_drawdown = 0;
    double bh_sharpe = 0, bh_return = 0;
    double random_sharpe_mean = 0, random_sharpe_std = 0;
    int64_t bars = 0;
    // The policy is capital split equally among this many refits (1: one
    // final run; lockbox.refits).
    int refits = 1;
    // Whether it beats each baseline by more than noise (filled by
    // ComputeStudyStatistics for the best trial with TestAgainstBaselines;
    // one-sided p-values, 1 when a test could not be made, `tests_note`
    // then says why).
    double p_vs_cash = 1, p_vs_buy_and_hold = 1, p_vs_random = 1;
    double vs_bh_difference = 0, vs_bh_se = 0;
    std::string tests_note;
    // The rule baselines on the same bars (empty for lockbox results
    // stored before schema version 8, or when no rule fitted the rows).
    std::vector<LockboxRuleResult> rules;
    // The strongest rule (highest lockbox Sharpe; −1: none) and the
    // one-sided paired test that the policy's Sharpe exceeds its (filled by
    // ComputeStudyStatistics for the best trial; p 1 and NaN difference
    // when the test could not be made).
    int strongest_rule = -1;
    double p_vs_strongest_rule = 1;
    double vs_rule_difference = std::numeric_limits<double>::quiet_NaN();
    double vs_rule_se = std::numeric_limits<double>::quiet_NaN();
  };
  std::optional<Lockbox> lockbox;
  // The lockbox log returns of the final run's policy and of buy and hold
  // on the same bars (empty when not known: the paired test is then not
  // made and the trial cannot show an edge).
  std::vector<double> lockbox_log_returns, lockbox_bh_log_returns;
};

// The statistics and the verdict of a study.
struct StudyStatistics {
  int64_t complete_trials = 0;
  int64_t trials_tried = 0;  // complete + pruned + failed after a report
  int64_t checkpoints_per_run = 1;
  int64_t effective_trials = 0;       // N of the DSR: tried × checkpoints
  std::optional<int64_t> best_trial;  // by score
  double best_score = 0;
  // The best trial's CV returns (all folds): annualised Sharpe and its
  // standard error, per-bar moments. cv_bars counts distinct bars: when the
  // folds test each bar several times (cv_bar_multiplicity > 1: CPCV tests
  // each C(N − 1, k − 1) times) the pooled returns are not that many
  // independent observations, so the standard error, the deflated Sharpe
  // and its variance floor use T = pooled returns / multiplicity.
  double cv_sharpe = 0, cv_sharpe_se = 0, cv_skewness = 0, cv_kurtosis = 3;
  int64_t cv_bars = 0;
  double cv_bar_multiplicity = 1;
  // Deflated Sharpe ratio of the best trial (annualised SR0 for display).
  bool has_dsr = false;
  double dsr = 0, dsr_p_value = 1, expected_max_sharpe = 0;
  double trial_sharpe_std = 0;  // annualised, across complete trials
  std::string dsr_note;         // why there is none
  // Probability of backtest overfitting over the complete trials.
  bool has_pbo = false;
  double pbo = 0;
  int pbo_blocks = 0;
  int64_t pbo_combinations = 0;
  std::string pbo_note;
  // The best trial's lockbox result.
  std::optional<TrialEvidence::Lockbox> lockbox;
  // The verdict: an edge only when the DSR is significant (p < 0.05) AND
  // the best trial's lockbox Sharpe beats cash (0), buy and hold's and the
  // random policies', each by more than noise (p < 0.05 each, see
  // TrialEvidence::Lockbox; all three must hold, so no multiplicity
  // correction is needed).
  bool edge = false;
  std::string verdict;  // one line, with the numbers that decided it
};

// `complete`: every complete trial (any order). `trials_tried`: complete,
// pruned and failed after reporting a validation (ComputeStudyResult).
// `checkpoints_per_run`: the validations each run compared to keep its best
// checkpoint, the most of any tried trial (each is one more hypothesis
// tested, so N = trials_tried × checkpoints_per_run: a conservative
// count). V, the
// variance of the trials' per-bar Sharpes, is the complete trials' sample
// variance but never below 1/(T − 1), the sampling variance of one Sharpe
// estimate over T bars under the null (few trials underestimate it).
// `validation_bar_multiplicity`: how many times the folds test each
// validation bar on average (ValidationBarMultiplicity; >= 1). When it is
// above 1 the pooled returns repeat bars, so PBO (whose blocks would put the
// same bars in and out of sample) is not computed.
StudyStatistics ComputeStudyStatistics(
    const std::vector<TrialEvidence>& complete, int64_t trials_tried,
    int64_t checkpoints_per_run, double bars_per_year,
    double validation_bar_multiplicity = 1.0);

std::string StudyStatisticsToJson(const StudyStatistics& s);
absl::StatusOr<StudyStatistics> StudyStatisticsFromJson(
    const std::string& json);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_VERDICT_H_
