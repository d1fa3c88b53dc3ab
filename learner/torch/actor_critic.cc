#include "learner/torch/actor_critic.h"

#include <cmath>
#include <string>

namespace ristretto::learner {
namespace {

constexpr double kLog2 = 0.69314718055994530942;
constexpr double kHalfLog2Pi = 0.91893853320467274178;

// Orthogonal initialisation (gain √2 for hidden layers, `out_gain` for the
// last), zero biases: the standard PPO initialisation.
void InitLayers(std::vector<torch::nn::Linear>& layers, double out_gain) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < layers.size(); ++i) {
    const double gain = i + 1 == layers.size() ? out_gain : std::sqrt(2.0);
    torch::nn::init::orthogonal_(layers[i]->weight, gain);
    torch::nn::init::zeros_(layers[i]->bias);
  }
}

}  // namespace

torch::Tensor SquashedGaussianLogProb(const torch::Tensor& u,
                                      const torch::Tensor& mean,
                                      const torch::Tensor& log_std,
                                      LogProbMode mode) {
  const torch::Tensor z = (u - mean) * torch::exp(-log_std);
  torch::Tensor log_prob = (-0.5 * z * z - log_std - kHalfLog2Pi).sum(-1);
  if (mode == LogProbMode::kTanhCorrected) {
    const torch::Tensor log_det =
        2.0 * (kLog2 - u - torch::nn::functional::softplus(-2.0 * u));
    log_prob = log_prob - log_det.sum(-1);
  }
  return log_prob;
}

torch::Tensor GaussianEntropy(const torch::Tensor& log_std, int64_t batch) {
  return (log_std + 0.5 + kHalfLog2Pi).sum().expand({batch});
}

ActorCriticImpl::ActorCriticImpl(int obs_size, int action_size,
                                 const NetworkOptions& options)
    : obs_size_(obs_size), action_size_(action_size), options_(options) {
  auto build = [&](const std::vector<int>& hidden, int out, const char* name) {
    std::vector<torch::nn::Linear> layers;
    int in = obs_size;
    for (size_t i = 0; i <= hidden.size(); ++i) {
      const int width = i < hidden.size() ? hidden[i] : out;
      layers.push_back(register_module(
          std::string(name) + std::to_string(i),
          torch::nn::Linear(torch::nn::LinearOptions(in, width))));
      in = width;
    }
    return layers;
  };
  policy_layers_ = build(options.policy_hidden, action_size, "policy");
  value_layers_ = build(options.value_hidden, 1, "value");
  // Small last-layer gains: initial actions near 0, values near 0.
  InitLayers(policy_layers_, 0.01);
  InitLayers(value_layers_, 1.0);
  log_std_ = register_parameter(
      "log_std", torch::full({action_size}, options.log_std_init));
  auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  obs_mean_ = register_buffer("obs_mean", torch::zeros({obs_size}, f64));
  obs_var_ = register_buffer("obs_var", torch::ones({obs_size}, f64));
  obs_count_ = register_buffer("obs_count", torch::zeros({1}, f64));
}

void ActorCriticImpl::UpdateObservationStats(const torch::Tensor& obs) {
  if (!options_.normalize_observations || obs.size(0) == 0) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor x = obs.to(obs_mean_.device(), torch::kFloat64);
  const double n_b = static_cast<double>(x.size(0));
  const torch::Tensor mean_b = x.mean(0);
  const torch::Tensor var_b = x.var(0, /*unbiased=*/false);
  const double n_a = obs_count_.item<double>();
  const double n = n_a + n_b;
  const torch::Tensor delta = mean_b - obs_mean_;
  const torch::Tensor new_mean = obs_mean_ + delta * (n_b / n);
  const torch::Tensor m2 =
      obs_var_ * n_a + var_b * n_b + delta * delta * (n_a * n_b / n);
  obs_mean_.copy_(new_mean);
  obs_var_.copy_(m2 / n);
  obs_count_.fill_(n);
}

torch::Tensor ActorCriticImpl::Normalize(const torch::Tensor& obs) const {
  if (!options_.normalize_observations) return obs;
  const torch::Tensor mean = obs_mean_.to(obs.scalar_type());
  const torch::Tensor inv_std =
      torch::rsqrt(obs_var_ + 1e-8).to(obs.scalar_type());
  return torch::clamp((obs - mean) * inv_std, -options_.obs_clip,
                      options_.obs_clip);
}

torch::Tensor ActorCriticImpl::RunMlp(std::vector<torch::nn::Linear>& layers,
                                      torch::Tensor x) {
  for (size_t i = 0; i < layers.size(); ++i) {
    x = layers[i]->forward(x);
    if (i + 1 < layers.size()) {
      x = options_.activation == Activation::kTanh ? torch::tanh(x)
                                                   : torch::relu(x);
    }
  }
  return x;
}

torch::Tensor ActorCriticImpl::PolicyMean(const torch::Tensor& obs) {
  return RunMlp(policy_layers_, Normalize(obs));
}

torch::Tensor ActorCriticImpl::Value(const torch::Tensor& obs) {
  return RunMlp(value_layers_, Normalize(obs)).squeeze(-1);
}

ActorCriticImpl::Evaluation ActorCriticImpl::Evaluate(const torch::Tensor& obs,
                                                      const torch::Tensor& u) {
  const torch::Tensor x = Normalize(obs);
  const torch::Tensor mean = RunMlp(policy_layers_, x);
  Evaluation e;
  e.log_prob = SquashedGaussianLogProb(u, mean, log_std_, options_.log_prob);
  e.entropy = GaussianEntropy(log_std_, obs.size(0));
  e.value = RunMlp(value_layers_, x).squeeze(-1);
  return e;
}

PolicySample SampleActions(ActorCritic& model, const torch::Tensor& obs,
                           const torch::Tensor& noise, bool deterministic) {
  torch::NoGradGuard no_grad;
  const torch::Tensor mean = model->PolicyMean(obs);
  const torch::Tensor log_std = model->log_std();
  PolicySample s;
  s.u = deterministic ? mean : mean + torch::exp(log_std) * noise;
  s.action = torch::tanh(s.u);
  s.log_prob =
      SquashedGaussianLogProb(s.u, mean, log_std, model->options().log_prob);
  s.u = s.u.to(torch::kCPU).contiguous();
  s.action = s.action.to(torch::kCPU).contiguous();
  s.log_prob = s.log_prob.to(torch::kCPU).contiguous();
  return s;
}

}  // namespace ristretto::learner
