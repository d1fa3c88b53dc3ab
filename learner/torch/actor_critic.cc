#include "learner/torch/actor_critic.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

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

PolicySampler::PolicySampler(ActorCritic model, int64_t batch)
    : model_(std::move(model)), batch_(batch) {
  // Buffers made under inference mode are inference tensors: cheaper, and
  // only ever used under inference mode (Sample).
  c10::InferenceMode inference;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const NetworkOptions& net = model_->options();
  auto to_vector = [](const torch::Tensor& t) {
    const torch::Tensor c = t.to(torch::kCPU, torch::kFloat32).contiguous();
    return std::vector<float>(c.data_ptr<float>(),
                              c.data_ptr<float>() + c.numel());
  };
  if (net.normalize_observations) {
    // As Normalize: the statistics in float64, then cast.
    obs_mean_ = to_vector(model_->obs_mean());
    obs_inv_std_ = to_vector(torch::rsqrt(model_->obs_var() + 1e-8));
    normalized_ = torch::empty({batch, model_->obs_size()}, f32);
  }
  log_std_ = to_vector(model_->log_std());
  std_ = to_vector(torch::exp(model_->log_std()));
  inv_std_ = to_vector(torch::exp(-model_->log_std()));
  for (const torch::nn::Linear& layer : model_->policy_layers()) {
    hidden_.push_back(torch::empty({batch, layer->weight.size(0)}, f32));
  }
}

void PolicySampler::Sample(const float* obs, const float* noise,
                           bool deterministic, float* u, float* action,
                           float* log_prob) {
  c10::InferenceMode inference;
  const int64_t d = model_->obs_size();
  const int64_t a = model_->action_size();
  const NetworkOptions& net = model_->options();
  torch::Tensor x =
      torch::from_blob(const_cast<float*>(obs), {batch_, d},
                       torch::TensorOptions().dtype(torch::kFloat32));
  // Normalize, elementwise in float as LibTorch does it:
  // clamp((obs − mean) · inv_std, ±clip).
  if (normalized_.defined()) {
    float* out = normalized_.data_ptr<float>();
    const float clip = static_cast<float>(net.obs_clip);
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t j = 0; j < d; ++j) {
        const float v = (obs[b * d + j] - obs_mean_[j]) * obs_inv_std_[j];
        out[b * d + j] = std::min(std::max(v, -clip), clip);
      }
    }
    x = normalized_;
  }
  // The policy MLP, the only LibTorch ops: Linear is addmm(bias, x, Wᵀ)
  // for 2-D input, written into this sampler's buffers.
  const std::vector<torch::nn::Linear>& layers = model_->policy_layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    at::addmm_out(hidden_[i], layers[i]->bias, x, layers[i]->weight.t());
    if (i + 1 < layers.size()) {
      if (net.activation == Activation::kTanh) {
        hidden_[i].tanh_();
      } else {
        hidden_[i].relu_();
      }
    }
    x = hidden_[i];
  }
  const float* mean = hidden_.back().data_ptr<float>();

  // The rest is batch × actions numbers (8 × 7 by default): a loop costs
  // less than dispatching the dozen LibTorch ops SampleActions uses.
  // u = mean + exp(log_std) · noise, action = tanh(u),
  // log π = Σ(−½ z² − log_std − ½ log 2π), z = (u − mean) · exp(−log_std),
  // minus Σ 2 (log 2 − u − softplus(−2u)) when tanh-corrected.
  const bool corrected = net.log_prob == LogProbMode::kTanhCorrected;
  for (int64_t b = 0; b < batch_; ++b) {
    float sum = 0.0f;
    float log_det = 0.0f;
    for (int64_t j = 0; j < a; ++j) {
      const int64_t k = b * a + j;
      const float uk = deterministic ? mean[k] : mean[k] + std_[j] * noise[k];
      u[k] = uk;
      action[k] = std::tanh(uk);
      const float z = (uk - mean[k]) * inv_std_[j];
      sum += -0.5f * z * z - log_std_[j] - static_cast<float>(kHalfLog2Pi);
      if (corrected) {
        // softplus(x) = log(1 + e^x), linear past x > 20 (LibTorch's
        // threshold).
        const float m2u = -2.0f * uk;
        const float softplus = m2u > 20.0f ? m2u : std::log1p(std::exp(m2u));
        log_det += 2.0f * (static_cast<float>(kLog2) - uk - softplus);
      }
    }
    log_prob[b] = corrected ? sum - log_det : sum;
  }
}

}  // namespace ristretto::learner
