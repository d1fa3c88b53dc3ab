// Checkpoints and policy export. A run's checkpoints live under
// <root>/<study>/<trial>/fold-<k>/step-<env steps>/ and are written
// atomically (a temporary directory renamed into place, then the LATEST
// pointer file replaced by rename), so a crash never leaves a half-written
// checkpoint that looks valid. Loading checks the PolicyContract first.
// Thread-compatible; a learner writes its own run's checkpoints.
// Torch-free: the model types are forward-declared (callers that pass a
// learner or a model include learner/torch/ppo.h themselves).
#ifndef RISTRETTO_LEARNER_TORCH_CHECKPOINT_H_
#define RISTRETTO_LEARNER_TORCH_CHECKPOINT_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "learner/contract.h"
#include "learner/evaluation.h"
#include "learner/run_options.h"

namespace ristretto::learner {

class ActorCritic;  // learner/torch/actor_critic.h
class PpoLearner;   // learner/torch/ppo.h

// Progress stored with the weights.
struct CheckpointState {
  int64_t env_steps = 0;  // env steps consumed by training
  int64_t policy_version = 0;
  int64_t samples_consumed = 0;  // for the learning-rate schedule
  int64_t updates = 0;
  double last_score = 0.0;  // last validation score
  // Generator states: the learner's minibatch shuffle and the trainer's
  // action noise, so a resumed run continues the same random sequences.
  std::array<uint64_t, 4> shuffle_rng = {0, 0, 0, 0};
  std::array<uint64_t, 4> noise_rng = {0, 0, 0, 0};
  bool has_rng_state = false;
};

// "<root>/<study>/<trial>/fold-<fold>".
std::string RunDirectory(const std::string& root, const std::string& study_id,
                         const std::string& trial_id, int fold);

// Writes a checkpoint of `learner` under `run_dir` and points LATEST at it;
// keeps the newest `keep` checkpoints (>= 1). Returns the checkpoint's
// directory. Errors: kInternal on I/O or serialisation failure (nothing
// visible is changed then).
absl::StatusOr<std::string> SaveCheckpoint(const std::string& run_dir,
                                           const PolicyContract& contract,
                                           PpoLearner& learner,
                                           const CheckpointState& state,
                                           int keep = 2);

// The checkpoint directory LATEST points to. kNotFound if none.
absl::StatusOr<std::string> LatestCheckpoint(const std::string& run_dir);

// Reads only a checkpoint's contract (to build a matching learner).
absl::StatusOr<PolicyContract> ReadCheckpointContract(
    const std::string& checkpoint_dir);

// Restores weights, optimiser state and counters into `learner` after
// checking the stored contract against `expected` (kFailedPrecondition
// naming the differing field). kNotFound / kDataLoss for missing or
// unreadable files.
absl::StatusOr<CheckpointState> LoadCheckpoint(
    const std::string& checkpoint_dir, const PolicyContract& expected,
    PpoLearner* learner, bool check_dataset = true);

// Exports the deterministic policy — obs [N, D] float32 → tanh(mean) [N, A]
// with the observation normalisation folded in — as TorchScript
// (<out_dir>/policy.pt, loadable by torch::jit::load and torch.jit.load)
// and the contract as <out_dir>/contract.json.
absl::Status ExportPolicy(ActorCritic& model, const PolicyContract& contract,
                          const std::string& out_dir);

// A run's best policy: <run_dir>/best/ holds what ExportPolicy writes
// (policy.pt, contract.json) and evaluation.json (EvaluationToJson of the
// evaluation that chose it: every EvaluationResult field, at_env_steps and
// log_returns included, plus the objective). The checkpoints beside it are
// unaffected (resuming still starts from LATEST).
std::string BestPolicyDirectory(const std::string& run_dir);

// Replaces <run_dir>/best/ with `model`'s deterministic policy and `eval`:
// written to a temporary directory first and swapped in by rename (an
// atomic exchange where the file system supports it), so best/ is always a
// complete policy — the old one or the new one — even after a crash.
// Errors: kInternal on I/O or serialisation failure (best/ unchanged).
absl::Status SaveBestPolicy(const std::string& run_dir, ActorCritic& model,
                            const PolicyContract& contract,
                            const EvaluationResult& eval,
                            const std::string& objective);

// The evaluation stored with <run_dir>/best/ (first finishing or undoing a
// replacement a crash interrupted). kNotFound if there is none; kDataLoss
// if evaluation.json is unreadable.
absl::StatusOr<EvaluationResult> ReadBestEvaluation(const std::string& run_dir);

// Deletes <run_dir>/best/ (a run that starts over). OK if there is none.
absl::Status RemoveBestPolicy(const std::string& run_dir);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_CHECKPOINT_H_
