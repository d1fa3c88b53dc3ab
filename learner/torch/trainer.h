// Single-process trainer: runs one run (one trial on one CV fold) end to
// end — vector env → batched policy → PPO update → periodic deterministic
// evaluation on the validation slice → checkpoints. The distributed learner
// (issue 4) reuses PpoLearner and EvaluatePolicy; this is the reference.
// Not thread-safe; Train() runs on the caller's thread.
#ifndef RISTRETTO_LEARNER_TORCH_TRAINER_H_
#define RISTRETTO_LEARNER_TORCH_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "learner/contract.h"
#include "learner/ppo_options.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/ppo.h"

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

struct TrainResult {
  int64_t env_steps = 0;
  int64_t updates = 0;
  int64_t policy_version = 0;
  UpdateStats last_update;
  std::vector<EvaluationResult> evaluations;
  double rollout_seconds = 0, update_seconds = 0, eval_seconds = 0,
         total_seconds = 0;
  std::string last_checkpoint;
  PolicyContract contract;
  // The trained learner (final weights), e.g. for ExportPolicy.
  std::shared_ptr<PpoLearner> learner;
};

// Called after every update and evaluation; return false to stop early.
using TrainProgress =
    std::function<bool(const TrainResult& so_far, const UpdateStats& update)>;

// Plays `decide(obs [B×D], B, actions out [B×A])` on every domain from its
// first row with the env options, and scores it against equal-weight buy
// and hold. Errors: kInvalidArgument if a domain is too short.
using ActionFunction =
    std::function<void(const float* obs, int copies, float* actions)>;
absl::StatusOr<EvaluationResult> EvaluateActions(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    const ActionFunction& decide);

// EvaluateActions with the deterministic policy tanh(mean(obs)).
absl::StatusOr<EvaluationResult> EvaluatePolicy(
    ActorCritic& model, const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& domains);

// Trains one run. Errors: kInvalidArgument for bad options or domains;
// kFailedPrecondition if a checkpoint in run_dir has another contract;
// kInternal for LibTorch or I/O failures.
absl::StatusOr<TrainResult> Train(std::shared_ptr<const env::MarketData> market,
                                  const TrainerOptions& options,
                                  const TrainProgress& progress = nullptr);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_TRAINER_H_
