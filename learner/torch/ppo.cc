#include "learner/torch/ppo.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/blas_thread_tuner.h"
#include "learner/gae.h"

namespace ristretto::learner {
namespace {

// Everything an update changes, copied before it so that a diverged update
// can be undone: parameters, buffers (the observation statistics), Adam's
// per-parameter state and the shuffling generator. The optimiser's state map
// is keyed by a string in LibTorch 1.x and by a pointer in 2.x: its key type
// is taken from the map.
using AdamStateMap = std::remove_reference_t<
    decltype(std::declval<torch::optim::Adam&>().state())>;
struct UpdateSnapshot {
  std::vector<torch::Tensor> parameters;
  std::vector<torch::Tensor> buffers;
  std::vector<std::pair<AdamStateMap::key_type,
                        std::unique_ptr<torch::optim::AdamParamState>>>
      adam;
};

std::unique_ptr<torch::optim::AdamParamState> CopyAdamState(
    const torch::optim::AdamParamState& state) {
  auto copy = std::make_unique<torch::optim::AdamParamState>();
  copy->step(state.step());
  if (state.exp_avg().defined()) copy->exp_avg(state.exp_avg().clone());
  if (state.exp_avg_sq().defined()) {
    copy->exp_avg_sq(state.exp_avg_sq().clone());
  }
  if (state.max_exp_avg_sq().defined()) {
    copy->max_exp_avg_sq(state.max_exp_avg_sq().clone());
  }
  return copy;
}

UpdateSnapshot TakeSnapshot(torch::nn::Module& model,
                            torch::optim::Adam& optimizer) {
  torch::NoGradGuard no_grad;
  UpdateSnapshot snapshot;
  for (const torch::Tensor& p : model.parameters()) {
    snapshot.parameters.push_back(p.detach().clone());
  }
  for (const torch::Tensor& b : model.buffers()) {
    snapshot.buffers.push_back(b.detach().clone());
  }
  for (const auto& [key, state] : optimizer.state()) {
    snapshot.adam.emplace_back(
        key, CopyAdamState(
                 static_cast<const torch::optim::AdamParamState&>(*state)));
  }
  return snapshot;
}

void RestoreSnapshot(UpdateSnapshot snapshot, torch::nn::Module& model,
                     torch::optim::Adam& optimizer) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parameters = model.parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    parameters[i].copy_(snapshot.parameters[i]);
  }
  std::vector<torch::Tensor> buffers = model.buffers();
  for (size_t i = 0; i < buffers.size(); ++i) {
    buffers[i].copy_(snapshot.buffers[i]);
  }
  optimizer.zero_grad();
  optimizer.state().clear();
  for (auto& [key, state] : snapshot.adam) {
    optimizer.state()[key] = std::move(state);
  }
}

// True when every parameter and floating-point buffer of `model` is finite.
// One device-to-host synchronisation for the whole model, not one per tensor.
bool ModelFinite(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> finite;
  for (const torch::Tensor& p : model.parameters()) {
    finite.push_back(torch::isfinite(p).all());
  }
  for (const torch::Tensor& b : model.buffers()) {
    if (b.is_floating_point()) finite.push_back(torch::isfinite(b).all());
  }
  return finite.empty() || torch::stack(finite).all().item<bool>();
}

bool StatsFinite(const UpdateStats& stats) {
  return std::isfinite(stats.policy_loss) && std::isfinite(stats.value_loss) &&
         std::isfinite(stats.entropy) && std::isfinite(stats.approx_kl) &&
         std::isfinite(stats.grad_norm);
}

// Mixed precision for the forward passes on GPU. LibTorch 2.4 moved the
// autocast switches to per-device functions; both spellings are covered.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, AutocastMode mode)
      : active_(device.is_cuda() && mode != AutocastMode::kOff) {
    if (!active_) return;
    const at::ScalarType dtype =
        mode == AutocastMode::kBf16 ? at::kBFloat16 : at::kHalf;
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastGuard() {
    if (!active_) return;
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_;
};

torch::Tensor FromVector(const std::vector<float>& v,
                         const std::vector<int64_t>& shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32)
      .clone();
}

double Item(const torch::Tensor& t) { return t.item<double>(); }

}  // namespace

void ConfigureTorchRuntime(const PpoOptions& options) {
  if (options.cpu_threads > 0) torch::set_num_threads(options.cpu_threads);
  at::globalContext().setAllowTF32CuBLAS(options.allow_tf32);
  at::globalContext().setAllowTF32CuDNN(options.allow_tf32);
}

PpoLosses ComputePpoLosses(
    const torch::Tensor& log_prob, const torch::Tensor& old_log_prob,
    const torch::Tensor& advantages, const torch::Tensor& value,
    const torch::Tensor& old_value, const torch::Tensor& returns,
    const torch::Tensor& entropy, const PpoOptions& options) {
  PpoLosses l;
  // The log-ratio is clamped before exp: log-probabilities streamed by an
  // actor are bounded but not trusted, and exp of a bounded difference can
  // still overflow (exp(89) is inf in float). |log ρ| <= 20 keeps ρ finite;
  // the clipped surrogate's gradient is zero out there anyway.
  l.ratio = torch::exp(
      torch::clamp(log_prob - old_log_prob, -kMaxLogRatio, kMaxLogRatio));
  const double eps = options.clip_ratio;
  const torch::Tensor surrogate = l.ratio * advantages;
  const torch::Tensor clipped =
      torch::clamp(l.ratio, 1.0 - eps, 1.0 + eps) * advantages;
  l.policy = -torch::min(surrogate, clipped).mean();
  auto elementwise = [&](const torch::Tensor& v) {
    if (options.value_loss == ValueLoss::kSmoothL1) {
      return torch::smooth_l1_loss(v, returns, at::Reduction::None);
    }
    return (v - returns).pow(2);
  };
  torch::Tensor value_loss = elementwise(value);
  if (options.value_clip > 0) {
    const torch::Tensor v_clipped =
        old_value + torch::clamp(value - old_value, -options.value_clip,
                                 options.value_clip);
    value_loss = torch::max(value_loss, elementwise(v_clipped));
  }
  l.value = value_loss.mean();
  l.entropy = entropy.mean();
  return l;
}

absl::StatusOr<std::unique_ptr<PpoLearner>> PpoLearner::Create(
    int obs_size, int action_size, const NetworkOptions& network,
    const PpoOptions& ppo, int64_t budget_samples, uint64_t seed) {
  if (absl::Status s = network.Validate(); !s.ok()) return s;
  if (absl::Status s = ppo.Validate(); !s.ok()) return s;
  if (obs_size < 1 || action_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("obs_size and action_size must be >= 1, got ", obs_size,
                     " and ", action_size));
  }
  try {
    torch::Device device(ppo.device);
    if (device.is_cuda() && !torch::cuda::is_available()) {
      return absl::UnavailableError(absl::StrCat(
          "device '", ppo.device, "' requested but CUDA is not available"));
    }
    if (device.is_cuda() && device.has_index() &&
        device.index() >= static_cast<int>(torch::cuda::device_count())) {
      return absl::UnavailableError(
          absl::StrCat("device '", ppo.device, "' does not exist (",
                       torch::cuda::device_count(), " CUDA devices)"));
    }
    ConfigureTorchRuntime(ppo);
    // OpenBLAS's count outside gradient steps (1) is set when the process's
    // tuner is first made; make it before this learner's first inference,
    // or the first run of a process would roll out with another count than
    // the next (OpenBLAS's sums depend on it: the seed would not reproduce
    // a run).
    if (device.is_cpu()) BlasThreadTuner::Process();
    return std::unique_ptr<PpoLearner>(new PpoLearner(
        obs_size, action_size, network, ppo, budget_samples, seed, device));
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("creating the PPO learner: ", e.what_without_backtrace()));
  }
}

PpoLearner::PpoLearner(int obs_size, int action_size,
                       const NetworkOptions& network, const PpoOptions& ppo,
                       int64_t budget_samples, uint64_t seed,
                       torch::Device device)
    : network_(network),
      ppo_(ppo),
      budget_samples_(budget_samples),
      device_(device),
      model_(nullptr),
      rng_(seed ^ 0x9e3779b97f4a7c15ULL) {
  // Parameter initialisation draws from LibTorch's generator: seed it so the
  // same seed gives the same initial weights.
  torch::manual_seed(seed);
  model_ = ActorCritic(obs_size, action_size, network);
  model_->to(device_);
  optimizer_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(),
      torch::optim::AdamOptions(ppo.learning_rate).eps(ppo.adam_eps));
}

double PpoLearner::CurrentLearningRate() const {
  if (ppo_.lr_schedule == LrSchedule::kConstant || budget_samples_ <= 0) {
    return ppo_.learning_rate;
  }
  const double progress = static_cast<double>(samples_consumed_) /
                          static_cast<double>(budget_samples_);
  return ppo_.learning_rate * std::max(0.0, 1.0 - progress);
}

absl::StatusOr<PpoBatch> PpoLearner::PrepareBatch(
    const std::vector<const TrajectoryChunk*>& chunks) {
  const int D = model_->obs_size();
  const int A = model_->action_size();
  std::vector<torch::Tensor> obs_parts, u_parts, logp_parts, adv_parts,
      ret_parts, value_parts;
  // Check every chunk before changing anything: a rejected batch must leave
  // the model (including its observation statistics) untouched.
  for (const TrajectoryChunk* c : chunks) {
    if (c->obs_size != D || c->action_size != A) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk from actor '", c->actor_id, "' has obs_size ",
                       c->obs_size, " and action_size ", c->action_size,
                       "; the run expects ", D, " and ", A));
    }
  }
  // Fold every chunk's observations into the running statistics first, so
  // values, advantages and training all see the same normalisation.
  for (const TrajectoryChunk* c : chunks) {
    model_->UpdateObservationStats(
        FromVector(c->obs, {int64_t{c->steps + 1} * c->copies, D})
            .narrow(0, 0, c->num_samples()));
  }
  torch::NoGradGuard no_grad;
  for (const TrajectoryChunk* c : chunks) {
    // A stop need not wait for the values of a large batch (Update restores
    // the statistics folded in above).
    if (Cancelled()) return absl::CancelledError("stopping");
    const int64_t T = c->steps;
    const int64_t B = c->copies;
    const torch::Tensor obs = FromVector(c->obs, {(T + 1) * B, D}).to(device_);
    torch::Tensor values;
    torch::Tensor final_values;
    {
      AutocastGuard autocast(device_, ppo_.autocast);
      values = model_->Value(obs).to(torch::kCPU, torch::kFloat32).contiguous();
      if (!c->final_obs.empty()) {
        final_values =
            model_
                ->Value(FromVector(c->final_obs,
                                   {static_cast<int64_t>(c->num_dones()), D})
                            .to(device_))
                .to(torch::kCPU, torch::kFloat32)
                .contiguous();
      }
    }
    const float* v = values.data_ptr<float>();
    const GaeResult gae =
        ComputeGae(static_cast<int>(T), static_cast<int>(B), c->rewards,
                   absl::MakeConstSpan(v, T * B),
                   absl::MakeConstSpan(v + T * B, B), c->dones,
                   final_values.defined()
                       ? absl::MakeConstSpan(final_values.data_ptr<float>(),
                                             final_values.numel())
                       : absl::Span<const float>(),
                   ppo_.gamma, ppo_.gae_lambda, ppo_.bootstrap_truncation);
    obs_parts.push_back(obs.narrow(0, 0, T * B));
    u_parts.push_back(FromVector(c->actions, {T * B, A}));
    logp_parts.push_back(FromVector(c->log_probs, {T * B}));
    adv_parts.push_back(FromVector(gae.advantages, {T * B}));
    ret_parts.push_back(FromVector(gae.returns, {T * B}));
    value_parts.push_back(values.narrow(0, 0, T * B));
  }
  PpoBatch batch;
  batch.obs = torch::cat(obs_parts).to(device_);
  batch.u = torch::cat(u_parts).to(device_);
  batch.old_log_prob = torch::cat(logp_parts).to(device_);
  batch.advantages = torch::cat(adv_parts).to(device_);
  batch.returns = torch::cat(ret_parts).to(device_);
  batch.old_values = torch::cat(value_parts).to(device_);
  return batch;
}

UpdateStats PpoLearner::TrainOnBatch(const PpoBatch& batch) {
  UpdateStats stats;
  RunEpochs(batch, &stats);
  return stats;
}

bool PpoLearner::RunEpochs(const PpoBatch& batch, UpdateStats* out) {
  UpdateStats& stats = *out;
  const int64_t n = batch.obs.size(0);
  const int64_t mb = std::min<int64_t>(ppo_.minibatch_size, n);
  stats.learning_rate = CurrentLearningRate();
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options())
        .lr(stats.learning_rate);
  }
  torch::Tensor advantages = batch.advantages;
  if (ppo_.normalize_advantages && n > 1) {
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8);
  }
  const double max_norm = ppo_.max_grad_norm > 0
                              ? ppo_.max_grad_norm
                              : std::numeric_limits<double>::infinity();
  permutation_.resize(n);
  // Sums kept on the device; read once at the end (one sync per update).
  torch::Tensor policy_sum = torch::zeros({}, batch.obs.options());
  torch::Tensor value_sum = policy_sum.clone(),
                entropy_sum = policy_sum.clone();
  torch::Tensor kl_sum = policy_sum.clone(), clip_sum = policy_sum.clone();
  torch::Tensor grad_sum = policy_sum.clone();
  int64_t steps = 0, last_epoch_steps = 0;
  BlasThreadTuner& blas = BlasThreadTuner::Process();
  const bool tune_blas = device_.is_cpu() && blas.active();
  // Back to one thread after the steps (also when a stop ends them early).
  absl::Cleanup blas_idle = [&blas, tune_blas] {
    if (tune_blas) blas.EndSteps();
  };
  for (int epoch = 0; epoch < ppo_.epochs; ++epoch) {
    if (ppo_.sample_with_replacement) {
      for (int64_t& p : permutation_) {
        p = static_cast<int64_t>(rng_.UniformInt(static_cast<uint64_t>(n)));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) permutation_[i] = i;
      for (int64_t i = n - 1; i > 0; --i) {
        const int64_t j =
            static_cast<int64_t>(rng_.UniformInt(static_cast<uint64_t>(i + 1)));
        std::swap(permutation_[i], permutation_[j]);
      }
    }
    const torch::Tensor order =
        torch::from_blob(permutation_.data(), {n}, torch::kInt64).to(device_);
    const bool last_epoch = epoch + 1 == ppo_.epochs;
    for (int64_t start = 0; start < n; start += mb) {
      // A stop waits for one minibatch at most; Update rolls back.
      if (Cancelled()) return false;
      const int64_t rows = std::min(mb, n - start);
      // On the CPU, OpenBLAS's thread count for this step is measured
      // (common/blas_thread_tuner.h: two threads win on a quiet machine and
      // lose 2-5x on a loaded one) unless the run must be reproducible: the
      // count changes OpenBLAS's sums in the last bits.
      const int blas_threads = !tune_blas                ? 0
                               : ppo_.fixed_blas_threads ? blas.BeginFixedStep()
                                                         : blas.BeginStep();
      const absl::Time step_start = absl::Now();
      const torch::Tensor idx = order.narrow(0, start, rows);
      const torch::Tensor obs = batch.obs.index_select(0, idx);
      const torch::Tensor u = batch.u.index_select(0, idx);
      ActorCriticImpl::Evaluation e;
      {
        AutocastGuard autocast(device_, ppo_.autocast);
        e = model_->Evaluate(obs, u);
      }
      const PpoLosses losses = ComputePpoLosses(
          e.log_prob.to(torch::kFloat32),
          batch.old_log_prob.index_select(0, idx),
          advantages.index_select(0, idx), e.value.to(torch::kFloat32),
          batch.old_values.index_select(0, idx),
          batch.returns.index_select(0, idx), e.entropy, ppo_);
      const torch::Tensor loss = losses.policy +
                                 ppo_.value_coef * losses.value -
                                 ppo_.entropy_coef * losses.entropy;
      optimizer_->zero_grad();
      loss.backward();
      const torch::Tensor grad_norm =
          torch::nn::utils::clip_grad_norm_(model_->parameters(), max_norm) *
          torch::ones({}, batch.obs.options());
      optimizer_->step();
      {
        torch::NoGradGuard no_grad;
        policy_sum += losses.policy.detach();
        value_sum += losses.value.detach();
        entropy_sum += losses.entropy.detach();
        grad_sum += grad_norm;
        if (last_epoch) {
          const torch::Tensor ratio = losses.ratio.detach();
          kl_sum += ((ratio - 1.0) - torch::log(ratio)).mean();
          clip_sum += ((ratio - 1.0).abs() > ppo_.clip_ratio)
                          .to(torch::kFloat32)
                          .mean();
          ++last_epoch_steps;
        }
      }
      if (tune_blas && !ppo_.fixed_blas_threads) {
        blas.EndStep(blas_threads, absl::Now() - step_start, rows);
      }
      ++steps;
    }
  }
  stats.gradient_steps = steps;
  stats.policy_loss = Item(policy_sum) / steps;
  stats.value_loss = Item(value_sum) / steps;
  stats.entropy = Item(entropy_sum) / steps;
  stats.grad_norm = Item(grad_sum) / steps;
  stats.approx_kl = Item(kl_sum) / std::max<int64_t>(last_epoch_steps, 1);
  stats.clip_fraction = Item(clip_sum) / std::max<int64_t>(last_epoch_steps, 1);
  {
    torch::NoGradGuard no_grad;
    const double var_returns = Item(batch.returns.var());
    stats.explained_variance =
        var_returns > 0
            ? 1.0 - Item((batch.returns - batch.old_values).var()) / var_returns
            : 0.0;
  }
  stats.samples_trained = n;
  return true;
}

absl::StatusOr<UpdateStats> PpoLearner::Update(
    const std::vector<TrajectoryChunk>& chunks, bool rehearse) {
  std::vector<const TrajectoryChunk*> fresh;
  int64_t dropped_samples = 0, dropped_chunks = 0;
  for (const TrajectoryChunk& c : chunks) {
    if (c.policy_version > version_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk from actor '", c.actor_id, "' claims policy version ",
          c.policy_version, " but the learner is at ", version_));
    }
    if (version_ - c.policy_version > ppo_.max_policy_lag) {
      dropped_samples += c.num_samples();
      ++dropped_chunks;
    } else {
      fresh.push_back(&c);
    }
  }
  UpdateStats stats;
  if (fresh.empty()) {
    stats.samples_dropped = dropped_samples;
    stats.chunks_dropped = dropped_chunks;
    stats.policy_version = version_;
    return absl::FailedPreconditionError(absl::StrCat(
        "all ", dropped_chunks, " chunks were older than max_policy_lag = ",
        ppo_.max_policy_lag, " versions"));
  }
  auto cancelled = [this] {
    return absl::CancelledError(absl::StrCat(
        "PPO update cancelled (stopping); the learner stays at version ",
        version_));
  };
  if (Cancelled()) return cancelled();
  try {
    UpdateSnapshot snapshot = TakeSnapshot(*model_, *optimizer_);
    const std::array<uint64_t, 4> shuffle = rng_.state();
    absl::StatusOr<PpoBatch> batch = PrepareBatch(fresh);
    if (!batch.ok()) {
      RestoreSnapshot(std::move(snapshot), *model_, *optimizer_);
      if (absl::IsCancelled(batch.status())) return cancelled();
      return batch.status();
    }
    if (!RunEpochs(*batch, &stats)) {
      // Stopping: the checkpoint written next must hold weights and
      // optimiser state of one version, so the partial update is undone.
      RestoreSnapshot(std::move(snapshot), *model_, *optimizer_);
      rng_.set_state(shuffle);
      return cancelled();
    }
    if (!StatsFinite(stats) || !ModelFinite(*model_)) {
      // Poisoned or pathological data: undo the whole update (weights,
      // observation statistics, optimiser moments, shuffling) so the run
      // goes on from the last good version.
      RestoreSnapshot(std::move(snapshot), *model_, *optimizer_);
      rng_.set_state(shuffle);
      std::set<std::string> actors;
      for (const TrajectoryChunk* c : fresh) actors.insert(c->actor_id);
      return absl::AbortedError(absl::StrCat(
          "PPO update diverged (non-finite loss or weights: policy loss ",
          stats.policy_loss, ", value loss ", stats.value_loss,
          ") and was rolled back to version ", version_,
          "; its chunks came from actor(s) ", absl::StrJoin(actors, ", ")));
    }
    if (rehearse) {
      // It would train: say so and leave everything as it was.
      RestoreSnapshot(std::move(snapshot), *model_, *optimizer_);
      rng_.set_state(shuffle);
      stats.samples_dropped = dropped_samples;
      stats.chunks_dropped = dropped_chunks;
      stats.policy_version = version_;
      return stats;
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("PPO update failed: ", e.what_without_backtrace()));
  }
  samples_consumed_ += stats.samples_trained;
  stats.samples_dropped = dropped_samples;
  stats.chunks_dropped = dropped_chunks;
  stats.policy_version = ++version_;
  return stats;
}

}  // namespace ristretto::learner
