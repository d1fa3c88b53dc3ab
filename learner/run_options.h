// TrainerOptions: everything that defines one run (one trial on one CV
// fold) — env, network and PPO options, budget, seed, domains, evaluation
// and checkpoint settings — and EvaluationResult, the validation outcome.
// Plain structs without LibTorch so the coordinator, the CLI and the wire
// code can build and inspect runs cheaply.
#ifndef RISTRETTO_LEARNER_RUN_OPTIONS_H_
#define RISTRETTO_LEARNER_RUN_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "learner/ppo_options.h"

namespace ristretto::learner {

struct TrainerOptions {
  env::EnvOptions env;
  NetworkOptions network;
  PpoOptions ppo;
  int num_envs = 8;              // env copies stepping together (B)
  int rollout_steps = 128;       // steps per copy per update (T); B·T samples
  int64_t episode_steps = 1024;  // training episode length (random starts)
  int64_t budget_env_steps = 100000;  // total env steps (all copies)
  uint64_t seed = 1;
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

// kInvalidArgument if the domains break the lockbox rule above (names the
// domain and the rows). OK when lockbox_begin < 0.
absl::Status CheckLockbox(const TrainerOptions& options);

// Deterministic-policy result on validation domains (one copy per domain).
struct EvaluationResult {
  double sharpe = 0;  // mean over domains, annualised by interval
  double sortino = 0;
  double max_drawdown = 0;  // worst over domains, fraction
  double calmar = 0;
  double total_return = 0;      // mean over domains
  double benchmark_sharpe = 0;  // equal-weight buy and hold, same slices
  double benchmark_return = 0;
  double score = 0;  // sharpe − benchmark_sharpe
  int64_t steps = 0;
  int64_t trades = 0;
  double fees = 0;
  int64_t at_env_steps = 0;  // training progress when evaluated
  double turnover = 0;  // Σ|traded value| / initial capital, mean over domains
  double exposure = 0;  // mean over bars of 1 − cash / value (share invested)
  // Per-bar log returns ln(v_t / v_{t−1}) of the policy, every domain's in
  // domain order (the standard error, deflated Sharpe and PBO need them).
  std::vector<double> log_returns;
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_OPTIONS_H_
