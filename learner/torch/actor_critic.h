// ActorCritic: separate policy and value MLPs, a learned state-independent
// log standard deviation, a tanh-squashed diagonal Gaussian policy and
// running observation normalisation. Includes <torch/torch.h>: include it
// only from learner .cc files, never from headers other components use.
// Not thread-safe; one thread drives a module at a time.
#ifndef RISTRETTO_LEARNER_TORCH_ACTOR_CRITIC_H_
#define RISTRETTO_LEARNER_TORCH_ACTOR_CRITIC_H_

#include <torch/torch.h>

#include <vector>

#include "learner/ppo_options.h"

namespace ristretto::learner {

// Log-density of a = tanh(u) for u ~ N(mean, exp(log_std)), summed over the
// last dimension. kTanhCorrected subtracts Σ log(1 − tanh(u)²), computed
// stably as 2·(log 2 − u − softplus(−2u)); kUncorrected is the Gaussian
// density of u alone (the original's formula).
torch::Tensor SquashedGaussianLogProb(const torch::Tensor& u,
                                      const torch::Tensor& mean,
                                      const torch::Tensor& log_std,
                                      LogProbMode mode);

// Entropy of the Gaussian before squashing, summed over actions (the usual
// PPO entropy bonus: the squashed entropy has no closed form).
torch::Tensor GaussianEntropy(const torch::Tensor& log_std, int64_t batch);

class ActorCriticImpl : public torch::nn::Module {
 public:
  ActorCriticImpl(int obs_size, int action_size, const NetworkOptions& options);

  int obs_size() const { return obs_size_; }
  int action_size() const { return action_size_; }
  const NetworkOptions& options() const { return options_; }

  // Folds a batch of raw observations [N, D] into the running mean and
  // variance (Chan et al. parallel update, in float64). No-op when
  // normalisation is off.
  void UpdateObservationStats(const torch::Tensor& obs);
  // (obs − mean) / sqrt(var + 1e-8), clipped to ±obs_clip; identity when
  // normalisation is off.
  torch::Tensor Normalize(const torch::Tensor& obs) const;

  // Heads on raw observations [N, D].
  torch::Tensor PolicyMean(const torch::Tensor& obs);  // [N, A]
  torch::Tensor Value(const torch::Tensor& obs);       // [N]
  torch::Tensor log_std() const { return log_std_; }   // [A]

  struct Evaluation {
    torch::Tensor log_prob;  // [N]
    torch::Tensor entropy;   // [N]
    torch::Tensor value;     // [N]
  };
  // Log-probability of the pre-squash actions `u` [N, A], entropy and value.
  Evaluation Evaluate(const torch::Tensor& obs, const torch::Tensor& u);

  // Policy and value trunk layers (for export).
  const std::vector<torch::nn::Linear>& policy_layers() const {
    return policy_layers_;
  }
  const std::vector<torch::nn::Linear>& value_layers() const {
    return value_layers_;
  }
  torch::Tensor obs_mean() const { return obs_mean_; }
  torch::Tensor obs_var() const { return obs_var_; }
  double obs_count() const { return obs_count_.item<double>(); }

 private:
  torch::Tensor RunMlp(std::vector<torch::nn::Linear>& layers, torch::Tensor x);

  int obs_size_;
  int action_size_;
  NetworkOptions options_;
  std::vector<torch::nn::Linear> policy_layers_;
  std::vector<torch::nn::Linear> value_layers_;
  torch::Tensor log_std_;
  torch::Tensor obs_mean_, obs_var_, obs_count_;  // float64 buffers
};
TORCH_MODULE(ActorCritic);

// Samples actions for a batch of raw observations without gradients:
// u = mean + exp(log_std)·noise, action = tanh(u), with `noise` [N, A]
// supplied by the caller (a seeded generator, so runs are reproducible on
// any LibTorch version). `deterministic` ignores the noise (action =
// tanh(mean)). Returns u, action and log π(action) as contiguous float CPU
// tensors.
struct PolicySample {
  torch::Tensor u;
  torch::Tensor action;
  torch::Tensor log_prob;
};
PolicySample SampleActions(ActorCritic& model, const torch::Tensor& obs,
                           const torch::Tensor& noise, bool deterministic);

// SampleActions for one CPU model and one batch size, as the actor calls it
// every env step: under inference mode (no autograd bookkeeping) and with
// no tensor allocated per call. The only LibTorch ops are the policy MLP's
// (addmm and activation, into buffers made once here); normalisation and
// the sampling maths on batch × actions numbers run as plain loops, which
// costs less than dispatching a dozen small ops. Observations and noise
// are read from, and u, the action and log π written to, the caller's
// memory without a copy. Same formulas as SampleActions: u and log π agree
// to float rounding (tanh, exp and log1p may differ in the last bits).
// The normalisation statistics and exp(±log_std) are read once, at
// construction: build a new sampler when the model's weights or statistics
// change (the actor does, with each new policy version). The model must
// outlive the sampler (it holds a reference). CPU models only. Not
// thread-safe.
class PolicySampler {
 public:
  PolicySampler(ActorCritic model, int64_t batch);

  int64_t batch() const { return batch_; }

  // obs [batch × obs_size], noise [batch × action_size] (ignored when
  // `deterministic`: u = mean); writes u and action [batch × action_size]
  // and log_prob [batch].
  void Sample(const float* obs, const float* noise, bool deterministic,
              float* u, float* action, float* log_prob);

 private:
  ActorCritic model_;
  int64_t batch_;
  std::vector<float> obs_mean_, obs_inv_std_;   // [D]; empty if off
  std::vector<float> log_std_, std_, inv_std_;  // log_std, exp(±log_std)
  torch::Tensor normalized_;                    // [B, D]; undefined if off
  std::vector<torch::Tensor> hidden_;           // one [B, width] per layer
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_ACTOR_CRITIC_H_
