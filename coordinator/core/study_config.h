// StudyConfig: a study as written in a study file (YAML; the format is
// docs/study_format.md), its parser, and how one trial's parameters become
// the TrainerOptions of its runs (one per CV fold).
// Plain data and pure functions; thread-safe.
//
// Every searched or fixed parameter must be a name of the parameter
// registry (param_registry.h) whose option is read in the study's
// configuration; anything else rejects the study, with one message naming
// the culprit.
#ifndef RISTRETTO_COORDINATOR_CORE_STUDY_CONFIG_H_
#define RISTRETTO_COORDINATOR_CORE_STUDY_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/core/param_registry.h"
#include "coordinator/core/pruner.h"
#include "coordinator/core/sampler.h"
#include "coordinator/core/search_space.h"
#include "env/cv_split.h"
#include "env/dataset.h"
#include "env/synthetic.h"
#include "learner/objective.h"
#include "learner/run_options.h"

namespace ristretto::coordinator {

// Where the market comes from: an imported dataset by id, or the built-in
// synthetic market (generated identically wherever it is needed).
struct DatasetSpec {
  std::string id;  // 64 hex digits (env::Dataset::ComputeId)
  // or
  bool synthetic = false;
  int64_t rows = 4000;  // bars generated, before the feature warm-up
  int assets = 3;
  uint64_t seed = 1;
  double predictability = 0;        // see env::SyntheticMarketOptions
  double signal_bars = 1;           // persistence of the planted signal
  int64_t interval_seconds = 1800;  // bar interval ("30m" in the file)
  // Structure (env::SyntheticMarketOptions; every default leaves the
  // market as before): trend_strength, regime_bars (mean_regime_bars),
  // crash_probability, correlation, garch_alpha/beta, tail_dof.
  double trend_strength = 1;
  double regime_bars = 400;
  double crash_probability = 0.08;
  double correlation = 0.6;
  double garch_alpha = 0, garch_beta = 0;
  int tail_dof = 0;
  env::FeatureSet feature_set = env::FeatureSet::kIndicators;
};

// The generator options of a synthetic DatasetSpec.
env::SyntheticMarketOptions SyntheticOptions(const DatasetSpec& spec);

// Cross-validation scheme over the dataset's rows (env/cv_split.h).
struct CvSpec {
  std::string scheme = "holdout";  // "holdout" | "walk_forward" | "cpcv" |
                                   // "kfold"
  // holdout: the last validation_fraction of the rows validate, the rest
  // (minus embargo_bars before the validation block) train. In (0, 1).
  double validation_fraction = 0.2;
  // walk_forward: bars per training block, per test block, and between fold
  // starts (0 = test_bars). train_bars, test_bars > 0.
  int64_t train_bars = 0, test_bars = 0, step_bars = 0;
  // cpcv: N groups, k test groups per fold (1 <= k < N), C(N, k) folds.
  int groups = 6, test_groups = 2;
  // kfold: k folds (>= 2).
  int folds = 5;
  // holdout, cpcv, kfold: rows purged before and embargoed after every test
  // block, >= 0. Default: 0 for holdout (it trains only before its test
  // block); for cpcv and kfold, which train after test blocks too,
  // DefaultEmbargoBars() (a synthetic market: its feature set's warm-up).
  int64_t embargo_bars = 0;
  // Keep only the first max_folds folds (0 = all), >= 0.
  int max_folds = 0;
};

// The default cv.embargo_bars of cpcv and kfold studies: the rows after a
// test block whose features are computed from bars inside it by a
// fixed window, env::FeatureWarmupRows() (63: each feature's first defined
// row). An observation stacks `lookback` feature rows of its own domain
// only, so the lookback adds none. Recursively smoothed features (Wilder's
// RSI/DX/ATR, MACD's EMAs, ADX, the 50-bar mean of ATR) keep a decaying
// trace of earlier bars beyond that: Wilder-14 weighs bars 63 back at
// (13/14)^63 ≈ 0.9 %, the 26-bar EMA at (25/27)^63 ≈ 0.8 %, the twice
// smoothed ones more; a larger embargo_bars shrinks it.
int64_t DefaultEmbargoBars();

// Returns the folds of `cv` over rows [0, num_rows) (before intersecting
// with the dataset's domains). Errors: kInvalidArgument from the splitters
// (e.g. the blocks do not fit in num_rows), or an unknown scheme.
absl::StatusOr<std::vector<env::Fold>> MakeFolds(const CvSpec& cv,
                                                 int64_t num_rows);

// How many times, on average, the folds of `cv` over `num_rows` rows test
// each validation row: Σ test rows over the folds / rows tested at least
// once. 1 for holdout, k-fold and walk-forward with step_bars >= test_bars;
// C(N − 1, k − 1) for CPCV (every group is tested that often); with
// max_folds the average over the folds kept. Errors: those of MakeFolds.
absl::StatusOr<double> ValidationBarMultiplicity(const CvSpec& cv,
                                                 int64_t num_rows);

// The same over the folds numbered `folds` only (indices into MakeFolds;
// a trial that reported some folds: pruned, running or failed). A fold
// listed twice counts twice. Errors: those of MakeFolds; a fold number
// outside [0, number of folds).
absl::StatusOr<double> FoldsBarMultiplicity(const CvSpec& cv, int64_t num_rows,
                                            const std::vector<int>& folds);

// The lockbox: the study's final test segment, the last rows of the
// dataset, that no training, validation, pruning or sampling ever reads.
// Only each complete trial's final run is evaluated on it, once.
struct LockboxSpec {
  double share = 0.15;        // of the dataset's rows, in (0, 0.5]
  int64_t bars = 0;           // or exactly this many rows (> 0; wins)
  int64_t embargo_bars = -1;  // rows left out before it; -1: cv.embargo_bars
  // Final runs per complete trial: refits of its parameters on every
  // pre-lockbox row, each with its own seed, in [1, kMaxRefits]. The
  // lockbox scores capital split equally among them (docs/study_format.md,
  // "lockbox"), so the result does not hang on one PPO run.
  int refits = 1;
};
inline constexpr int kMaxRefits = 16;

// Where the lockbox falls in a dataset of num_rows rows.
struct LockboxLayout {
  int64_t begin = 0;  // first lockbox row
  int64_t end = 0;    // one past the last (= num_rows)
  int64_t guard = 0;  // begin − embargo: the CV folds use rows [0, guard)
};

// Errors (kInvalidArgument naming `lockbox`): the lockbox is empty, or it
// and its embargo leave fewer than `min_cv_rows` rows (the smallest CV region
// worth searching: 100 rows).
absl::StatusOr<LockboxLayout> MakeLockboxLayout(const LockboxSpec& lockbox,
                                                const CvSpec& cv,
                                                int64_t num_rows);

struct StudyConfig {
  std::string name;  // [A-Za-z0-9_.-]+, unique among studies
  DatasetSpec dataset;
  CvSpec cv;
  int64_t budget_env_steps = 0;      // per run (trial × fold), > 0
  int64_t eval_every_env_steps = 0;  // validation interval, 0 = at the end
  std::string objective = learner::kDefaultObjective;
  LockboxSpec lockbox;
  SamplerSpec sampler;
  PrunerSpec pruner;
  int concurrency = 1;   // trials running at once, >= 1
  int max_trials = 10;   // trials sampled in all, >= 1
  int max_attempts = 3;  // leases per run before its trial fails, >= 1
  Params fixed;          // constants applied to every run, canonical text
  std::vector<ParamSpec> space;
};

// Parses and checks a study file. Errors (kInvalidArgument, one message per
// problem, naming it): YAML syntax (with line and column); unknown or
// duplicate key; missing name, dataset or budget; unknown parameter name;
// a parameter whose option is not read in this configuration ("… is unused
// because reward_mode is shaped"); a parameter both fixed and searched; a
// kind that does not fit the option's type; empty or inverted range; log
// range with low <= 0; bad step; empty or duplicate choices; a bound or
// choice the option refuses; conditional on an unknown or non-categorical
// parent; bad CV spec; unknown objective; bad sampler or pruner type or
// setting; a pruner without eval_every_env_steps; concurrency, max_trials or
// max_attempts < 1 or above kMaxStudyConcurrency / kMaxStudyTrials /
// kMaxStudyAttempts; budget_env_steps or eval_every_env_steps above
// kMaxStudyEnvSteps. Values and keys quoted in messages are escaped and
// capped (EscapeForMessage).
// Also refuses (first, before any YAML is parsed) text CheckStudyText
// refuses, and a file of more than one YAML document ("---").
absl::StatusOr<StudyConfig> ParseStudyConfig(const std::string& yaml_text);

// Limits of a study file (docs/study_format.md#limits). The text is stored
// in PostgreSQL and parsed on every scheduling pass, so it is kept small.
inline constexpr size_t kMaxStudyFileBytes = size_t{1} << 20;  // 1 MiB
// Caps on study values far beyond any sane study (a typo or an overflow,
// e.g. `concurrency: 1e9` or `budget_env_steps: 9223372036854775807`).
inline constexpr int64_t kMaxStudyEnvSteps = 1'000'000'000'000;  // 10^12
inline constexpr int kMaxStudyConcurrency = 1024;
inline constexpr int kMaxStudyTrials = 1'000'000;
inline constexpr int kMaxStudyAttempts = 100;

// Checks raw study text before parsing: at most kMaxStudyFileBytes, valid
// UTF-8 (the error names the byte offset and line of the first bad byte),
// no NUL byte. Errors: kInvalidArgument.
absl::Status CheckStudyText(absl::string_view text);

// Reads a study file for `study create` / `up`: refuses a path that is not a
// regular file (a FIFO is never opened), one larger than kMaxStudyFileBytes
// (naming its size, without reading it) and text CheckStudyText refuses.
// Errors: kInvalidArgument, starting with the (escaped) path.
absl::StatusOr<std::string> ReadStudyFile(const std::string& path);

// The study text that runs on a dataset given on the command line
// (`ristretto up --csv-dir DIR` / `--dataset FILE`), whose id is
// `dataset_id`:
//  * no `dataset` key, or `dataset: given`: the text with that dataset set
//    (`dataset: {id: ID}`, edited in place so comments are kept);
//  * `dataset: {id: ID}` naming that same dataset: the text unchanged;
//  * any other dataset section is left for ParseStudyConfig to judge.
// The result is what gets stored, so the same file and data bind to the same
// text every time (`up` resumes). ParseStudyConfig itself refuses
// `dataset: given` (no dataset was given to it).
// Errors (kInvalidArgument): YAML syntax; not a map; a study naming a
// different dataset id or the synthetic market (naming both).
absl::StatusOr<std::string> BindStudyDataset(const std::string& yaml_text,
                                             const std::string& dataset_id);

// What BuildRunOptions needs to know about the study's dataset.
// The one rule for a study's name, on every path that takes one (a study
// file, `study create --name`, `up --study`): 1-128 bytes of letters,
// digits, '-', '_' and '.', not starting with '.' (the name becomes a
// directory: checkpoint_root/<name>/...). kInvalidArgument naming it.
inline constexpr size_t kMaxStudyNameBytes = 128;
absl::Status CheckStudyName(const std::string& name);

struct DatasetInfo {
  std::string id;
  int64_t num_rows = 0;
  std::vector<env::Domain> domains;        // contiguous row blocks
  std::vector<std::string> feature_names;  // per asset
};

// Returns the TrainerOptions of each CV fold of one trial, in fold order:
// defaults, then the study's budget_env_steps, eval_every_env_steps, the
// dataset id and feature names, then `fixed`, then `params` (ApplyParam).
// Fold f trains on the fold's training blocks and validates on its test
// blocks, each intersected with data.domains (validation pieces shorter than
// 2·lookback + 1 rows are dropped). The seed mixes the sampler seed,
// HashParams(params) and f. run_dir is left empty for the caller.
// Errors (kInvalidArgument): a parameter ApplyParam refuses (named); bad
// folds for num_rows; a fold with no validation rows or whose longest
// training block is shorter than episode_steps + 2·lookback; options that
// fail Validate().
// The CV folds cover rows [0, guard) of the lockbox layout only; every run
// carries the lockbox rows and the study objective (learner::CheckLockbox
// refuses a CV run that reaches the lockbox).
absl::StatusOr<std::vector<learner::TrainerOptions>> BuildRunOptions(
    const StudyConfig& study, const Params& params, const DatasetInfo& data);

// The final run of a complete trial: the trial's options (as fold runs get
// them) trained on every row before the lockbox guard for `train_env_steps`
// and evaluated once, at the end, on the lockbox (final_evaluation = true).
// Errors (kInvalidArgument): as BuildRunOptions, a lockbox shorter than
// 2·lookback + 1 rows, a pre-lockbox region without a block long enough for
// an episode, train_env_steps < 1, a refit outside [0, lockbox.refits).
// Refit r of lockbox.refits differs from the others in its seed only.
absl::StatusOr<learner::TrainerOptions> BuildFinalRunOptions(
    const StudyConfig& study, const Params& params, const DatasetInfo& data,
    int64_t train_env_steps, int refit = 0);

// How many validations each run of the trial compares and could pick its
// score from: ceil(budget / eval interval) with the trial's own budget and
// interval (the study's, then `fixed`, then `params`; a `budget` in the
// space changes it per trial), 1 without an interval. The deflated Sharpe
// counts that many tries per trial.
// Errors (kInvalidArgument): a parameter ApplyParam refuses (named).
absl::StatusOr<int64_t> CheckpointsPerRun(const StudyConfig& study,
                                          const Params& params);

// Refuses, before anything trains, a study that cannot run on `data` (the
// scheduler would otherwise meet the error only when it samples a trial):
// builds every fold run (BuildRunOptions) and the final run
// (BuildFinalRunOptions) at two corners of the search space: every active
// numeric parameter at its low bound, and at its high bound (categorical
// parameters at their first, then last choice). Episode length and lookback
// are what usually does not fit a dataset with short domains, and both grow
// monotonically towards one corner.
// Errors (kInvalidArgument): the first error of those builds, followed by
// the corner's parameters when the space is not empty.
absl::Status CheckStudyFitsDataset(const StudyConfig& study,
                                   const DatasetInfo& data);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_STUDY_CONFIG_H_
