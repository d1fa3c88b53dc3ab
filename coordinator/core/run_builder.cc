// MakeFolds and BuildRunOptions (declared in study_config.h): from a study
// and one trial's parameters to the TrainerOptions of its runs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "coordinator/core/study_config.h"
#include "env/geometry.h"

namespace ristretto::coordinator {

absl::StatusOr<std::vector<env::Fold>> MakeFolds(const CvSpec& cv,
                                                 int64_t num_rows) {
  std::vector<env::Fold> folds;
  if (cv.scheme == "holdout") {
    if (!(cv.validation_fraction > 0 && cv.validation_fraction < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("holdout validation_fraction = ", cv.validation_fraction,
                       " is outside (0, 1)"));
    }
    const int64_t test = std::max<int64_t>(
        1,
        std::llround(cv.validation_fraction * static_cast<double>(num_rows)));
    const int64_t train_end = num_rows - test - cv.embargo_bars;
    if (train_end < 1 || cv.embargo_bars < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "holdout of ", test, " validation rows and an embargo of ",
          cv.embargo_bars, " rows leaves no training rows out of ", num_rows));
    }
    env::Fold f;
    f.train = {env::Domain{0, train_end}};
    f.test = {env::Domain{num_rows - test, num_rows}};
    folds.push_back(std::move(f));
  } else if (cv.scheme == "walk_forward") {
    ASSIGN_OR_RETURN(
        folds,
        env::WalkForward(num_rows, cv.train_bars, cv.test_bars,
                         cv.step_bars > 0 ? cv.step_bars : cv.test_bars));
  } else if (cv.scheme == "cpcv") {
    ASSIGN_OR_RETURN(
        folds, env::CombinatorialPurgedCv(num_rows, cv.groups, cv.test_groups,
                                          cv.embargo_bars));
  } else if (cv.scheme == "kfold") {
    ASSIGN_OR_RETURN(folds, env::KFold(num_rows, cv.folds, cv.embargo_bars));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown cv scheme '", cv.scheme, "'"));
  }
  if (cv.max_folds > 0 && static_cast<int>(folds.size()) > cv.max_folds) {
    folds.resize(static_cast<size_t>(cv.max_folds));
  }
  return folds;
}

namespace {

// Σ sizes of `tested` / rows covered at least once (1 when none).
double RepeatOf(std::vector<env::Domain> tested) {
  int64_t total = 0;
  for (const env::Domain& d : tested) total += d.size();
  std::sort(tested.begin(), tested.end(),
            [](const env::Domain& a, const env::Domain& b) {
              return a.begin < b.begin;
            });
  int64_t distinct = 0;
  int64_t covered_to = std::numeric_limits<int64_t>::min();
  for (const env::Domain& d : tested) {
    const int64_t from = std::max(d.begin, covered_to);
    if (d.end > from) distinct += d.end - from;
    covered_to = std::max(covered_to, d.end);
  }
  if (distinct <= 0) return 1.0;
  return static_cast<double>(total) / static_cast<double>(distinct);
}

}  // namespace

absl::StatusOr<double> ValidationBarMultiplicity(const CvSpec& cv,
                                                 int64_t num_rows) {
  ASSIGN_OR_RETURN(const std::vector<env::Fold> folds, MakeFolds(cv, num_rows));
  std::vector<env::Domain> tested;
  for (const env::Fold& f : folds) {
    tested.insert(tested.end(), f.test.begin(), f.test.end());
  }
  return RepeatOf(std::move(tested));
}

absl::StatusOr<double> FoldsBarMultiplicity(const CvSpec& cv, int64_t num_rows,
                                            const std::vector<int>& folds) {
  ASSIGN_OR_RETURN(const std::vector<env::Fold> all, MakeFolds(cv, num_rows));
  std::vector<env::Domain> tested;
  for (const int f : folds) {
    if (f < 0 || static_cast<size_t>(f) >= all.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("fold ", f, " is not one of the ", all.size(),
                       " folds of the study"));
    }
    const env::Fold& fold = all[static_cast<size_t>(f)];
    tested.insert(tested.end(), fold.test.begin(), fold.test.end());
  }
  return RepeatOf(std::move(tested));
}

absl::StatusOr<LockboxLayout> MakeLockboxLayout(const LockboxSpec& lockbox,
                                                const CvSpec& cv,
                                                int64_t num_rows) {
  constexpr int64_t kMinCvRows = 100;
  LockboxLayout layout;
  layout.end = num_rows;
  const int64_t rows =
      lockbox.bars > 0
          ? lockbox.bars
          : std::llround(lockbox.share * static_cast<double>(num_rows));
  if (rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat("lockbox: a share of ",
                                                   lockbox.share, " of ",
                                                   num_rows, " rows is empty"));
  }
  const int64_t embargo =
      lockbox.embargo_bars >= 0 ? lockbox.embargo_bars : cv.embargo_bars;
  layout.begin = num_rows - rows;
  layout.guard = layout.begin - embargo;
  if (layout.guard < kMinCvRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lockbox: ", rows, " rows and an embargo of ", embargo, " rows leave ",
        std::max<int64_t>(layout.guard, 0), " of ", num_rows,
        " rows for the CV folds (need at least ", kMinCvRows, ")"));
  }
  return layout;
}

namespace {

// The study's budget and interval, then `fixed`, then `params` on `o`.
absl::Status ApplyStudyParams(const StudyConfig& study, const Params& params,
                              learner::TrainerOptions* o) {
  o->budget_env_steps = study.budget_env_steps;
  o->eval_every_env_steps = study.eval_every_env_steps;
  for (const auto& [name, value] : study.fixed) {
    RETURN_IF_ERROR(Annotate(ApplyParam(name, value, o), "fixed"));
  }
  for (const auto& [name, value] : params) {
    RETURN_IF_ERROR(Annotate(ApplyParam(name, value, o), "trial"));
  }
  return absl::OkStatus();
}

// Defaults, then the study's budget and interval, the dataset, `fixed`,
// then `params`; validated.
absl::StatusOr<learner::TrainerOptions> BaseOptions(const StudyConfig& study,
                                                    const Params& params,
                                                    const DatasetInfo& data) {
  learner::TrainerOptions base;
  base.dataset_id = data.id;
  base.feature_names = data.feature_names;
  RETURN_IF_ERROR(ApplyStudyParams(study, params, &base));
  RETURN_IF_ERROR(base.env.Validate());
  RETURN_IF_ERROR(base.network.Validate());
  RETURN_IF_ERROR(base.ppo.Validate());
  if (base.budget_env_steps < 1 || base.eval_every_env_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "budget_env_steps = ", base.budget_env_steps,
        " must be >= 1 and eval_every_env_steps = ", base.eval_every_env_steps,
        " >= 0"));
  }
  base.objective = study.objective;
  ASSIGN_OR_RETURN(const LockboxLayout layout,
                   MakeLockboxLayout(study.lockbox, study.cv, data.num_rows));
  base.lockbox_begin = layout.begin;
  base.lockbox_guard = layout.guard;
  return base;
}

// The longest training block must hold one episode.
absl::Status CheckEpisodeFits(const learner::TrainerOptions& o,
                              const std::string& what) {
  const int64_t episode_rows = o.episode_steps + 2 * o.env.lookback;
  int64_t longest = 0;
  for (const env::Domain& d : o.train_domains) {
    longest = std::max(longest, d.size());
  }
  if (longest < episode_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": episode_steps = ", o.episode_steps, " needs ", episode_rows,
        " rows (episode_steps + 2·lookback) but the longest "
        "training block has ",
        longest));
  }
  return absl::OkStatus();
}

uint64_t RunSeed(const StudyConfig& study, const Params& params,
                 uint64_t salt) {
  uint64_t state =
      study.sampler.seed ^ (HashParams(params) * 0x9e3779b97f4a7c15ULL);
  state ^= 0xd1b54a32d192ed03ULL * salt;
  return SplitMix64(state);
}

}  // namespace

absl::StatusOr<std::vector<learner::TrainerOptions>> BuildRunOptions(
    const StudyConfig& study, const Params& params, const DatasetInfo& data) {
  ASSIGN_OR_RETURN(const learner::TrainerOptions base,
                   BaseOptions(study, params, data));
  ASSIGN_OR_RETURN(std::vector<env::Fold> folds,
                   MakeFolds(study.cv, base.lockbox_guard));
  const int64_t lookback = base.env.lookback;
  std::vector<learner::TrainerOptions> runs;
  for (size_t f = 0; f < folds.size(); ++f) {
    learner::TrainerOptions o = base;
    o.train_domains =
        env::IntersectDomains(folds[f].train, data.domains, 1, nullptr);
    o.validation_domains = env::IntersectDomains(
        folds[f].test, data.domains, env::MinRowsForOneStep(lookback), nullptr);
    RETURN_IF_ERROR(CheckEpisodeFits(o, absl::StrCat("fold ", f)));
    if (o.validation_domains.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("fold ", f, " has no validation block of at least ",
                       env::MinRowsForOneStep(lookback),
                       " rows (2·lookback + 1) inside the dataset's "
                       "domains"));
    }
    o.seed = RunSeed(study, params, static_cast<uint64_t>(f) + 1);
    RETURN_IF_ERROR(learner::CheckLockbox(o));
    runs.push_back(std::move(o));
  }
  return runs;
}

absl::StatusOr<int64_t> CheckpointsPerRun(const StudyConfig& study,
                                          const Params& params) {
  learner::TrainerOptions o;
  RETURN_IF_ERROR(ApplyStudyParams(study, params, &o));
  if (o.eval_every_env_steps <= 0 || o.budget_env_steps <= 0) return 1;
  return std::max<int64_t>(1,
                           (o.budget_env_steps + o.eval_every_env_steps - 1) /
                               o.eval_every_env_steps);
}

absl::StatusOr<learner::TrainerOptions> BuildFinalRunOptions(
    const StudyConfig& study, const Params& params, const DatasetInfo& data,
    int64_t train_env_steps, int refit) {
  if (train_env_steps < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the final run needs >= 1 env steps (got ", train_env_steps, ")"));
  }
  if (refit < 0 || refit >= study.lockbox.refits) {
    return absl::InvalidArgumentError(
        absl::StrCat("refit ", refit, " is outside [0, ", study.lockbox.refits,
                     ") (lockbox.refits)"));
  }
  ASSIGN_OR_RETURN(learner::TrainerOptions o, BaseOptions(study, params, data));
  const int64_t lookback = o.env.lookback;
  o.train_domains = env::IntersectDomains({env::Domain{0, o.lockbox_guard}},
                                          data.domains, 1, nullptr);
  o.validation_domains = env::IntersectDomains(
      {env::Domain{o.lockbox_begin, data.num_rows}}, data.domains,
      env::MinRowsForOneStep(lookback), nullptr);
  if (o.validation_domains.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lockbox: no block of at least ", env::MinRowsForOneStep(lookback),
        " rows (2·lookback + 1) in rows [", o.lockbox_begin, ", ",
        data.num_rows, ") inside the dataset's domains"));
  }
  RETURN_IF_ERROR(CheckEpisodeFits(o, "final run"));
  o.budget_env_steps = train_env_steps;
  o.eval_every_env_steps = 0;
  o.final_evaluation = true;
  // Salt 0 for the first refit (as before refits existed); the folds use
  // 1, 2, … and the other refits 2^32 + r, far from any fold's.
  o.seed = RunSeed(
      study, params,
      refit == 0 ? 0 : (uint64_t{1} << 32) + static_cast<uint64_t>(refit));
  RETURN_IF_ERROR(learner::CheckLockbox(o));
  return o;
}

}  // namespace ristretto::coordinator
