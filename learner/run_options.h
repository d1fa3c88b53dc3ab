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
};

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
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_OPTIONS_H_
