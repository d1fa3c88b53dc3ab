// PpoLearner: owns one run's ActorCritic and Adam optimiser and turns
// trajectory chunks into PPO updates. Each successful Update() publishes a
// new policy version. Stale chunks (older than max_policy_lag versions) are
// dropped and counted, so the same code is correct for asynchronous actors.
// Not thread-safe; owned by the run's training thread.
// Includes <torch/torch.h>: include it only from .cc files that run torch
// code; headers name PpoLearner by forward declaration.
#ifndef RISTRETTO_LEARNER_TORCH_PPO_H_
#define RISTRETTO_LEARNER_TORCH_PPO_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/rng.h"
#include "learner/ppo_options.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/update_stats.h"
#include "learner/trajectory.h"

namespace ristretto::learner {

// One minibatch-ready batch of experience (all tensors on the device).
struct PpoBatch {
  torch::Tensor obs;           // [N, D]
  torch::Tensor u;             // [N, A] pre-squash actions
  torch::Tensor old_log_prob;  // [N] behaviour log-probabilities
  torch::Tensor advantages;    // [N]
  torch::Tensor returns;       // [N]
  torch::Tensor old_values;    // [N]
};

// The clipped PPO losses for one minibatch (exposed for tests).
struct PpoLosses {
  torch::Tensor policy;   // −mean(min(ρA, clip(ρ, 1±ε)A))
  torch::Tensor value;    // mean loss (optionally clipped)
  torch::Tensor entropy;  // mean entropy
  torch::Tensor ratio;    // ρ = exp(log π − log μ)
};
// Bound on |log π − log μ| before the ratio's exp (see ComputePpoLosses).
inline constexpr double kMaxLogRatio = 20.0;

PpoLosses ComputePpoLosses(
    const torch::Tensor& log_prob, const torch::Tensor& old_log_prob,
    const torch::Tensor& advantages, const torch::Tensor& value,
    const torch::Tensor& old_value, const torch::Tensor& returns,
    const torch::Tensor& entropy, const PpoOptions& options);

class PpoLearner {
 public:
  // `budget_samples` is the run's env-step budget (for the linear learning
  // rate schedule). Errors: kInvalidArgument for invalid options; kUnavailable
  // if the device does not exist here.
  static absl::StatusOr<std::unique_ptr<PpoLearner>> Create(
      int obs_size, int action_size, const NetworkOptions& network,
      const PpoOptions& ppo, int64_t budget_samples, uint64_t seed);

  // Trains on `chunks` (validated by the caller): drops stale ones, updates
  // the observation statistics, computes values and GAE, runs the minibatch
  // epochs, and increments the version. Errors: kInvalidArgument if a chunk
  // does not match the run's shapes or claims a future version (nothing is
  // changed); kFailedPrecondition if every chunk was stale (the message
  // gives the count; nothing is changed); kAborted if the update diverged
  // (a non-finite loss or weight afterwards): it is rolled back — weights,
  // observation statistics, Adam state and shuffling as before, version
  // unchanged — and the message names the actors whose chunks it used;
  // kCancelled if the cancel flag (set_cancel_flag) was raised: checked
  // before the update and at every minibatch boundary, so a stop waits for
  // one minibatch, not the whole update; the update is rolled back exactly
  // like a diverged one (the learner is as before the call).
  // kInternal for LibTorch errors. With `rehearse`, an update that trains
  // is rolled back like a diverged one (weights, statistics, optimiser,
  // shuffling, version as before) and its stats returned: whether data
  // would train, asked without keeping the answer's update.
  absl::StatusOr<UpdateStats> Update(const std::vector<TrajectoryChunk>& chunks,
                                     bool rehearse = false);

  // Runs the epochs on a prepared batch (used by Update and benchmarks).
  UpdateStats TrainOnBatch(const PpoBatch& batch);

  // `cancel` (empty: never cancelled) is asked before each update and at
  // every minibatch boundary of Update; once it answers true, the update in
  // progress is abandoned and rolled back. It must be cheap and
  // thread-safe (e.g. reading an atomic another thread raises to stop).
  void set_cancel_check(std::function<bool()> cancel) {
    cancel_ = std::move(cancel);
  }

  // Builds the batch for `chunks` (after the staleness filter).
  absl::StatusOr<PpoBatch> PrepareBatch(
      const std::vector<const TrajectoryChunk*>& chunks);

  ActorCritic& model() { return model_; }
  torch::optim::Adam& optimizer() { return *optimizer_; }
  const torch::Device& device() const { return device_; }
  int64_t version() const { return version_; }
  int64_t samples_consumed() const { return samples_consumed_; }
  // Restores counters from a checkpoint.
  void set_counters(int64_t version, int64_t samples_consumed) {
    version_ = version;
    samples_consumed_ = samples_consumed;
  }
  const PpoOptions& options() const { return ppo_; }
  // Minibatch-shuffling generator state (saved in checkpoints so a resumed
  // run shuffles exactly like an uninterrupted one).
  std::array<uint64_t, 4> shuffle_state() const { return rng_.state(); }
  void set_shuffle_state(const std::array<uint64_t, 4>& s) {
    rng_.set_state(s);
  }

 private:
  PpoLearner(int obs_size, int action_size, const NetworkOptions& network,
             const PpoOptions& ppo, int64_t budget_samples, uint64_t seed,
             torch::Device device);
  double CurrentLearningRate() const;
  bool Cancelled() const { return cancel_ && cancel_(); }
  // TrainOnBatch's epochs; returns false (stats incomplete) when cancelled
  // at a minibatch boundary.
  bool RunEpochs(const PpoBatch& batch, UpdateStats* stats);

  NetworkOptions network_;
  PpoOptions ppo_;
  int64_t budget_samples_;
  torch::Device device_;
  ActorCritic model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  Rng rng_;
  std::vector<int64_t> permutation_;
  int64_t version_ = 0;
  int64_t samples_consumed_ = 0;
  std::function<bool()> cancel_;
};

// Applies a ProcessOptions-level setting once per process: intra-op threads
// and TF32 (GPU). Safe to call more than once.
void ConfigureTorchRuntime(const PpoOptions& options);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_PPO_H_
