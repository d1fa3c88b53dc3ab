// Single-process trainer: runs one run (one trial on one CV fold) end to
// end — vector env → batched policy → PPO update → periodic deterministic
// evaluation on the validation slice → checkpoints. The distributed learner
// (learner/service/) reuses PpoLearner and EvaluatePolicy; this is the
// reference. Not thread-safe; Train() runs on the caller's thread.
#ifndef RISTRETTO_LEARNER_TORCH_TRAINER_H_
#define RISTRETTO_LEARNER_TORCH_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "learner/contract.h"
#include "learner/evaluation.h"
#include "learner/ppo_options.h"
#include "learner/run_options.h"
#include "learner/torch/update_stats.h"

namespace ristretto::learner {

class ActorCritic;  // learner/torch/actor_critic.h
class PpoLearner;   // learner/torch/ppo.h

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
  // The evaluation with the best score (options.objective) so far; on a
  // resumed run possibly one of an earlier process, re-read from
  // <run_dir>/best/evaluation.json. nullopt before any evaluation.
  std::optional<EvaluationResult> best_evaluation;
  // <run_dir>/best (SaveBestPolicy) once a best policy was saved there;
  // empty without a run_dir.
  std::string best_policy_dir;
  // Without a run_dir: the best policy's weights (torch::save of the
  // model), for ExportBestPolicy.
  std::string best_model_state;
};

// Called after every update and evaluation; return false to stop early.
using TrainProgress =
    std::function<bool(const TrainResult& so_far, const UpdateStats& update)>;

// ActionFunction and EvaluateActions (torch-free) live in
// learner/evaluation.h, included above.

// EvaluateActions with the deterministic policy tanh(mean(obs)).
absl::StatusOr<EvaluationResult> EvaluatePolicy(
    ActorCritic& model, const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& domains);

// Trains one run. Every evaluation is scored by options.objective
// (ObjectiveValue); one scoring strictly better than the best so far (the
// first always) becomes the run's best policy, saved to <run_dir>/best/
// (SaveBestPolicy) when there is a run_dir. A resumed run re-reads its
// best from there; a run with resume off deletes it.
// Errors: kInvalidArgument for bad options or domains, an unknown
// objective, or domains that break the lockbox (CheckLockbox), before any
// training; kFailedPrecondition if a checkpoint in run_dir has another
// contract; kInternal for LibTorch or I/O failures.
absl::StatusOr<TrainResult> Train(std::shared_ptr<const env::MarketData> market,
                                  const TrainerOptions& options,
                                  const TrainProgress& progress = nullptr);

// Writes the run's best policy (policy.pt, contract.json and, when it came
// from <run_dir>/best, evaluation.json) to `out_dir`: a copy of
// result.best_policy_dir, or the best weights kept in memory, or — when no
// evaluation happened — the final weights. Returns the evaluation the
// exported policy had (nullopt for the final weights).
absl::StatusOr<std::optional<EvaluationResult>> ExportBestPolicy(
    const TrainResult& result, const std::string& out_dir);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_TRAINER_H_
