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
#include "learner/run_options.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/ppo.h"

namespace ristretto::learner {

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
