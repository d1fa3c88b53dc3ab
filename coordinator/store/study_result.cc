#include "coordinator/store/study_result.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/core/study_config.h"
#include "env/dataset.h"

namespace ristretto::coordinator {

absl::StatusOr<StudyRow> FindStudy(Store& store, const std::string& name) {
  absl::StatusOr<StudyRow> study = store.GetStudy(name);
  if (absl::IsNotFound(study.status())) {
    return absl::NotFoundError(
        absl::StrCat("no study named '", name, "' (ristretto study ls)"));
  }
  return study;
}

std::optional<TrialRow> BestTrial(const std::vector<TrialRow>& trials) {
  std::optional<TrialRow> best;
  for (const TrialRow& t : trials) {
    if (t.state != TrialState::kComplete || !t.score.has_value()) continue;
    if (!best.has_value() || *t.score > *best->score ||
        (*t.score == *best->score && t.number < best->number)) {
      best = t;
    }
  }
  return best;
}

absl::StatusOr<double> StudyBarsPerYear(Store& store, const StudyRow& study) {
  ASSIGN_OR_RETURN(const StudyConfig config,
                   ParseStudyConfig(study.config_text));
  int64_t interval = config.dataset.interval_seconds;
  if (!config.dataset.synthetic) {
    ASSIGN_OR_RETURN(const DatasetRow dataset,
                     store.GetDataset(config.dataset.id));
    interval = dataset.interval_seconds;
  }
  return env::BarsPerYear(interval);
}

absl::StatusOr<int64_t> StudyCvRows(Store& store, const StudyRow& study) {
  ASSIGN_OR_RETURN(const StudyConfig config,
                   ParseStudyConfig(study.config_text));
  int64_t num_rows = config.dataset.rows;
  if (!config.dataset.synthetic) {
    ASSIGN_OR_RETURN(const DatasetRow dataset,
                     store.GetDataset(config.dataset.id));
    num_rows = dataset.rows;
  }
  ASSIGN_OR_RETURN(const LockboxLayout layout,
                   MakeLockboxLayout(config.lockbox, config.cv, num_rows));
  return layout.guard;
}

absl::StatusOr<StudyStatistics> ComputeStudyResult(Store& store,
                                                   const StudyRow& study) {
  ASSIGN_OR_RETURN(const StudyConfig config,
                   ParseStudyConfig(study.config_text));
  ASSIGN_OR_RETURN(const double bars_per_year, StudyBarsPerYear(store, study));
  // How often the folds test each CV bar (CPCV: several times), so that
  // the pooled validation returns count as the bars they are.
  ASSIGN_OR_RETURN(const int64_t cv_rows, StudyCvRows(store, study));
  ASSIGN_OR_RETURN(const double multiplicity,
                   ValidationBarMultiplicity(config.cv, cv_rows));
  ASSIGN_OR_RETURN(const std::vector<TrialRow> trials,
                   store.ListTrials(study.id));
  ASSIGN_OR_RETURN(const auto folds, store.ListStudyFoldMetrics(study.id));
  ASSIGN_OR_RETURN(const std::vector<LockboxRow> lockbox,
                   store.ListLockbox(study.id));
  std::map<int64_t, const LockboxRow*> lockbox_of;
  for (const LockboxRow& l : lockbox) lockbox_of[l.trial_id] = &l;
  // A failed trial whose runs reported a validation (an intermediate value,
  // or a fold run that finished) was seen by the search: it counts as a try.
  ASSIGN_OR_RETURN(const std::vector<IntermediateRow> reports,
                   store.ListIntermediates(study.id));
  std::set<int64_t> reported;
  for (const IntermediateRow& r : reports) reported.insert(r.trial_id);
  auto reported_before_failing =
      [&](const TrialRow& t) -> absl::StatusOr<bool> {
    if (reported.count(t.id) != 0) return true;
    ASSIGN_OR_RETURN(const std::vector<RunRow> runs, store.ListRuns(t.id));
    return std::any_of(runs.begin(), runs.end(), [](const RunRow& r) {
      return r.state == RunState::kDone;
    });
  };
  std::vector<TrialEvidence> complete;
  int64_t tried = 0;
  // Each run compared one validation per eval interval (and the last); with
  // a `budget` in the space the trials differ: the most any tried trial had
  // (a conservative N).
  // (A trial whose stored parameters no longer apply counts the study's.)
  ASSIGN_OR_RETURN(const int64_t study_checkpoints,
                   CheckpointsPerRun(config, Params{}));
  int64_t checkpoints = 1;
  for (const TrialRow& t : trials) {
    const bool complete_trial =
        t.state == TrialState::kComplete && t.score.has_value();
    bool seen = complete_trial || t.state == TrialState::kPruned;
    if (t.state == TrialState::kFailed) {
      ASSIGN_OR_RETURN(seen, reported_before_failing(t));
    }
    if (!seen) continue;
    ++tried;
    Params params;
    for (const ParamRow& p : t.params) params[p.name] = p.value;
    const absl::StatusOr<int64_t> trial_checkpoints =
        CheckpointsPerRun(config, params);
    checkpoints =
        std::max(checkpoints, trial_checkpoints.ok() ? *trial_checkpoints
                                                     : study_checkpoints);
    if (!complete_trial) continue;
    TrialEvidence e;
    e.number = t.number;
    e.score = *t.score;
    auto f = folds.find(t.id);
    if (f != folds.end()) {
      for (const FoldMetrics& m : f->second) {
        e.cv_log_returns.insert(e.cv_log_returns.end(), m.log_returns.begin(),
                                m.log_returns.end());
      }
    }
    auto l = lockbox_of.find(t.id);
    if (l != lockbox_of.end()) {
      const LockboxRow& r = *l->second;
      TrialEvidence::Lockbox x;
      x.sharpe = r.policy.sharpe;
      // (0 is how an undefined error is stored: no test is made with it)
      x.sharpe_se = r.sharpe_se > 0 ? r.sharpe_se : std::nan("");
      x.total_return = r.policy.total_return;
      x.max_drawdown = r.policy.max_drawdown;
      x.bh_sharpe = r.bh_sharpe;
      x.bh_return = r.bh_return;
      x.random_sharpe_mean = r.random_sharpe_mean;
      x.random_sharpe_std = r.random_sharpe_std;
      x.bars = r.bars;
      x.refits = r.refits;
      ASSIGN_OR_RETURN(x.rules, LockboxRulesFromJson(r.rules_json));
      e.lockbox = x;
      e.lockbox_log_returns = r.policy.log_returns;
      e.lockbox_bh_log_returns = r.bh_log_returns;
    }
    complete.push_back(std::move(e));
  }
  return ComputeStudyStatistics(complete, tried, checkpoints, bars_per_year,
                                multiplicity);
}

absl::StatusOr<StudyStatistics> LoadOrComputeStudyResult(
    Store& store, const StudyRow& study) {
  if (study.state == StudyState::kDone) {
    ASSIGN_OR_RETURN(const std::optional<std::string> stored,
                     store.GetStudyResult(study.id));
    if (stored.has_value()) return StudyStatisticsFromJson(*stored);
  }
  return ComputeStudyResult(store, study);
}

}  // namespace ristretto::coordinator
