// TrainerOptions: everything that defines one run (one trial on one CV
// fold) — env, network and PPO options, budget, seed, domains, evaluation
// and checkpoint settings — and EvaluationResult, the validation outcome.
// Plain structs without LibTorch so the coordinator, the CLI and the wire
// code can build and inspect runs cheaply. The defaults of every option in
// the run-options schema (common/options_schema.h) come from the schema;
// SetRunOption / GetRunOption read and write them by schema name, and
// ApplyRunFlags turns process flags into options, so `ristretto train`, the
// stand-alone learner and a study's runs share one description of a run.
#ifndef RISTRETTO_LEARNER_RUN_OPTIONS_H_
#define RISTRETTO_LEARNER_RUN_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/options_schema.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "learner/ppo_options.h"

namespace ristretto::learner {

struct TrainerOptions {
  env::EnvOptions env;
  NetworkOptions network;
  PpoOptions ppo;
  // Env copies stepping together (B); single-process trainer only.
  int num_envs = static_cast<int>(OptionDefault("num_envs"));
  // Steps per copy per update (T); B·T samples.
  int rollout_steps = static_cast<int>(OptionDefault("rollout_steps"));
  // Training episode length (random starts).
  int64_t episode_steps = static_cast<int64_t>(OptionDefault("episode_steps"));
  // Total env steps (all copies); the schema's `budget`.
  int64_t budget_env_steps = static_cast<int64_t>(OptionDefault("budget"));
  uint64_t seed = static_cast<uint64_t>(OptionDefault("seed"));
  std::vector<env::Domain> train_domains;       // empty = all market rows
  std::vector<env::Domain> validation_domains;  // empty = no evaluation
  int64_t eval_every_env_steps = 0;             // 0 = evaluate only at the end
  // Checkpoints go to run_dir (empty = none) at every evaluation and at the
  // end; an existing checkpoint there is resumed when `resume`.
  std::string run_dir;
  bool resume = true;
  std::string dataset_id;                  // recorded in the contract
  std::vector<std::string> feature_names;  // per asset, for the contract
  // The study objective (learner/objective.h): scores every evaluation and
  // chooses the run's best checkpoint.
  std::string objective = "sharpe";
  // The study's lockbox (docs/study_format.md, "lockbox"): rows >=
  // lockbox_guard (its first row minus the embargo) belong to the final test
  // segment. A CV run (final_evaluation false) may neither train nor
  // validate on any of them; the final run of a trial trains before the
  // guard and evaluates on [lockbox_begin, end) only, once, at the end.
  // -1: the study has no lockbox (single-process `ristretto train`).
  int64_t lockbox_begin = -1;
  int64_t lockbox_guard = -1;
  bool final_evaluation = false;
};

// Sets the schema option `name` in `o` from `value`, the option's text
// (study-file spelling: "0.0003", "2048", "true", "relu"). Mappings that are
// not one field:
//   batch_size      -> ppo.minibatch_size
//   gamma           -> ppo.gamma and env.gamma (one discount everywhere)
//   width           -> every hidden layer of the policy and the value net
//   layers          -> the number of hidden layers of both nets (new layers
//                      take the current last width, the default width if
//                      there was none), so `width` and `layers` commute
//   norm_*_exp = k  -> env.norm_* = 2^-k
//   budget          -> budget_env_steps, cpu_threads -> ppo.cpu_threads
// Errors (kInvalidArgument; `o` unchanged), the message starting with the
// option's name: an unknown name ("unknown run option 'X'"), text that is
// not the option's type ("NAME = 'v' is not a whole number", "... is not a
// finite number", "... is not one of a, b"), or a value outside the
// schema's range ("NAME = v is outside [lo, hi]").
absl::Status SetRunOption(absl::string_view name, absl::string_view value,
                          TrainerOptions* o);

// The canonical text of option `name` in `o` (the inverse of SetRunOption;
// `width` reads the first policy layer, 0 if none). Numbers as
// FormatOptionNumber / whole numbers. kInvalidArgument for an unknown name.
absl::StatusOr<std::string> GetRunOption(absl::string_view name,
                                         const TrainerOptions& o);

// Applies process flags to `o`: `flags` maps a flag name without "--"
// ("lr", "epochs") to its text. Every flag is the OptionSpec::flag of a
// schema option, set with SetRunOption, plus two list flags:
// "policy-hidden" and "value-hidden" ("512,512"; value-hidden defaults to
// policy-hidden when only that is given). Options without a flag keep their
// value in `o`. Errors (kInvalidArgument, `o` unchanged): "--FLAG expects
// an integer, got 'V'" / "... a finite number ..." for malformed numbers
// (V escaped, as common/flags.h does), otherwise "--FLAG: " +
// SetRunOption's message; a bad width list; a flag that no schema option
// declares.
absl::Status ApplyRunFlags(const std::map<std::string, std::string>& flags,
                           TrainerOptions* o);

// The flag names ApplyRunFlags accepts, in schema order (list flags last).
std::vector<std::string> RunFlagNames();

// The --help text of the flags ApplyRunFlags accepts, in RunFlagNames()
// order, in common/flags.h's FlagsHelp layout: per flag
//   "  --lr (default: 0.0003, in (0, 1])\n      Adam step size
//   [learning_rate]\n"
// with the schema's default, range or choices, unit and doc (the list flags'
// defaults are TrainerOptions{}'s).
std::string RunFlagsHelp();

// The options of a run started from process flags (`ristretto train`, the
// stand-alone `ristretto-learner`): TrainerOptions{} — the schema defaults,
// the same a study's runs start from — then ApplyRunFlags(flags), then the
// env, network and PPO Validate(). Data, domains, run directory, device and
// evaluation interval are the caller's. Errors: as ApplyRunFlags and
// Validate().
absl::StatusOr<TrainerOptions> RunOptionsFromFlags(
    const std::map<std::string, std::string>& flags);

// kInvalidArgument if the domains break the lockbox rule above (names the
// domain and the rows). OK when lockbox_begin < 0.
absl::Status CheckLockbox(const TrainerOptions& options);

// Deterministic-policy result on validation domains (one copy per domain).
struct EvaluationResult {
  // Sharpe and Sortino over every bar of every domain (per-bar returns
  // pooled), annualised by interval; return, Calmar and turnover are means
  // over domains weighted by their steps.
  double sharpe = 0;
  double sortino = 0;
  double max_drawdown = 0;  // worst over domains, fraction
  double calmar = 0;
  double total_return = 0;
  double benchmark_sharpe = 0;  // equal-weight buy and hold, same slices
  double benchmark_return = 0;
  double score = 0;  // sharpe − benchmark_sharpe
  int64_t steps = 0;
  int64_t trades = 0;
  double fees = 0;
  int64_t at_env_steps = 0;  // training progress when evaluated
  double turnover = 0;       // Σ|traded value| / initial capital per domain
  double exposure = 0;  // mean over bars of 1 − cash / value (share invested)
  // Per-bar log returns ln(v_t / v_{t−1}) of the policy, every domain's in
  // domain order (the standard error, deflated Sharpe and PBO need them).
  std::vector<double> log_returns;
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_OPTIONS_H_
