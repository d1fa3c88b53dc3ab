// The study report (`ristretto study report`, and `ristretto up` beside the
// exported policy): one self-contained HTML page — inline CSS and SVG
// charts (report/svg_chart.h), no script, no external resource — that shows
// what a study searched, what mattered, how its best trial did on the CV
// folds and on the lockbox it never saw, against equal-weight buy & hold and
// cash, and the study's statistics and verdict.
//
// StudyReportData is plain data: report/study_report_store.h fills it from
// the coordinator's store; tests fill it by hand. RenderStudyReportHtml is a
// pure function (thread-safe) and never fails: a missing part (no lockbox
// result yet, no intermediate values, one complete trial) is said in words
// where its chart would be.
//
// Parameter importance: the bias-corrected correlation ratio (see
// ParameterImportance); README.md in this directory says why and its limits.
#ifndef RISTRETTO_REPORT_STUDY_REPORT_H_
#define RISTRETTO_REPORT_STUDY_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/core/verdict.h"

namespace ristretto::report {

// One searched parameter of the study's space.
struct ReportParam {
  std::string name;
  bool categorical = false;
  bool integer = false;
  double low = 0, high = 0;          // numeric range
  bool log = false;                  // sampled in log space: log-x charts
  std::vector<std::string> choices;  // categorical values
  std::string condition;  // e.g. "when reward_mode in {shaped}"; "" = always
};

// One trial as the store holds it.
struct ReportTrial {
  int64_t number = 0;
  std::string state;  // "complete" | "pruned" | "failed" | "running"
  // Parameter values as canonical text; inactive conditional ones absent.
  std::vector<std::pair<std::string, std::string>> params;
  std::optional<double> score;  // complete trials: the study objective
  // Validation scores reported while training: (env steps, value), the
  // mean over the folds that reported at that step, in step order.
  std::vector<std::pair<int64_t, double>> intermediate;
  // The value the median pruner judges the trial by at its latest step
  // (coordinator::JudgedValue: the mean over its folds of each fold's
  // latest report, not one fold's), and that step; nullopt without a
  // report. The history chart draws pruned trials at it.
  std::optional<double> judged_value;
  int64_t judged_step = 0;
  std::string fail_reason;
  // The trial's lockbox Sharpe (annualised) ± SE when its final run ended.
  std::optional<double> lockbox_sharpe, lockbox_sharpe_se;
  // CV Sharpe (annualised) ± SE over every fold's validation bars
  // concatenated, as the statistics compute it for the best trial.
  std::optional<double> cv_sharpe, cv_sharpe_se;
  // The value of parameter `name`, or nullptr when it is absent.
  const std::string* Param(const std::string& name) const;
};

// One CV fold of the best trial. Sharpe ratios annualised; a standard error
// that could not be computed is NaN (shown as "n/a").
struct ReportFold {
  int fold = 0;
  int64_t bars = 0;  // validation bars (the policy's log returns)
  double sharpe = 0, sharpe_se = 0;
  double bh_sharpe = 0, bh_sharpe_se = 0;  // equal-weight buy & hold
  double total_return = 0, bh_return = 0;  // fractions (0.1 = 10 %)
  double max_drawdown = 0;                 // fraction
  double score = 0;                        // the objective's fold value
};

// The best trial's final run on the lockbox, and buy & hold on the same
// bars. Per-bar log returns; the equity curves start at 1.
struct ReportLockbox {
  int64_t bars = 0;
  std::vector<double> policy_log_returns;
  std::vector<double> bh_log_returns;  // empty when it could not be rebuilt
  // Unix seconds of the bar each return ends on (same length as
  // policy_log_returns), or empty: the x axis is then the bar index.
  std::vector<int64_t> timestamps;
  double sharpe = 0, sharpe_se = 0, sortino = 0, total_return = 0,
         max_drawdown = 0, turnover = 0, fees = 0, exposure = 0;
  int64_t trades = 0;
  double bh_sharpe = 0, bh_sharpe_se = 0, bh_return = 0, bh_max_drawdown = 0;
  int random_seeds = 0;
  double random_sharpe_mean = 0, random_sharpe_std = 0;
  double random_return_mean = 0, random_return_std = 0;
  // The policy is capital split equally among this many refits (1: one
  // final run), and each refit's own lockbox result, by refit (empty for
  // one): how much the split hangs on any one PPO run.
  int refits = 1;
  struct Refit {
    int refit = 0;
    double sharpe = 0, sharpe_se = 0, total_return = 0, max_drawdown = 0;
    int64_t trades = 0;
    std::vector<double> log_returns;  // same bars as policy_log_returns
  };
  std::vector<Refit> refit_results;
};

struct StudyReportData {
  std::string study_name;
  std::string state;      // the study's state
  std::string objective;  // e.g. "sharpe"
  std::string dataset;    // one line describing the data
  std::string cv;         // one line describing the CV scheme
  std::vector<ReportParam> params;
  std::vector<ReportTrial> trials;    // in trial-number order
  std::optional<int64_t> best_trial;  // number; as `ristretto study best`
  std::vector<ReportFold> best_folds;
  std::optional<ReportLockbox> lockbox;  // of the best trial
  coordinator::StudyStatistics statistics;
  std::string generated_at;  // "2026-11-25 12:00 UTC"; shown in the header
  // Notes shown in the report (e.g. why buy & hold's lockbox curve is
  // missing): one sentence each.
  std::vector<std::string> notes;
};

// Importance of one parameter for the score.
struct ParamImportance {
  std::string name;
  int64_t trials = 0;      // complete trials where the parameter was active
  int bins = 0;            // groups the trials were split into
  double eta_squared = 0;  // raw correlation ratio η² in [0, 1]
  // E[η²] when the score does not depend on the parameter at all: with k
  // groups of n trials it is (k − 1) / (n − 1).
  double noise_level = 0;
  // Bias-corrected: ε² = 1 − (1 − η²)(n − 1)/(n − k), clamped to [0, 1]:
  // about 0 for a parameter the score ignores. NaN when it cannot be
  // computed (fewer than 4 trials, or the parameter took one value).
  double importance = 0;
};

// Parameter importance as the bias-corrected correlation ratio over the
// complete trials with a finite score: each numeric parameter's values are
// split into k equal-count bins by rank (log-scale parameters are binned
// the same way: ranks do not care), k = clamp(floor(sqrt(n)), 2, 10);
// categorical parameters group by value. η² = between-group / total sum of
// squares of the score; ε² removes the part that k groups explain of pure
// noise. Marginal: one parameter at a time (interactions are not seen).
// Sorted by importance, highest first (NaN last). Pure; thread-safe.
std::vector<ParamImportance> ParameterImportance(
    const std::vector<ReportParam>& params,
    const std::vector<ReportTrial>& trials);

// The whole page. Names, values and reasons are escaped (a study named
// "<script>" shows as text).
std::string RenderStudyReportHtml(const StudyReportData& data);

}  // namespace ristretto::report

#endif  // RISTRETTO_REPORT_STUDY_REPORT_H_
