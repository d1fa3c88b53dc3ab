// PPO update throughput (samples/s through forward + backward + Adam step)
// of ristretto's PpoLearner against a bare LibTorch loop doing the same
// maths, in the same run: MLP 2×512 and 2×1024 (separate policy and value
// nets), minibatch 2048, CPU. ristretto's overhead target: under 10 %.
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/runtime_policy.h"
#include "learner/torch/ppo.h"
#include "learner/torch/torch_runtime.h"

namespace ristretto::learner {
namespace {

constexpr int kObs = 204;  // 7 assets, 98 features, lookback 2
constexpr int kAct = 7;
constexpr int64_t kBatch = 2048;

PpoBatch MakeBatch(torch::Device device) {
  torch::manual_seed(3);
  PpoBatch b;
  b.obs = torch::randn({kBatch, kObs}).to(device);
  b.u = torch::randn({kBatch, kAct}).to(device);
  b.old_log_prob = (-torch::rand({kBatch}) * 5).to(device);
  b.advantages = torch::randn({kBatch}).to(device);
  b.returns = torch::randn({kBatch}).to(device);
  b.old_values = torch::randn({kBatch}).to(device);
  return b;
}

void BM_RistrettoPpoUpdate(benchmark::State& state) {
  const int width = static_cast<int>(state.range(0));
  NetworkOptions net;
  net.policy_hidden = {width, width};
  net.value_hidden = {width, width};
  PpoOptions ppo;
  ppo.epochs = 1;
  ppo.minibatch_size = kBatch;
  ppo.cpu_threads = 0;  // leave LibTorch/OpenBLAS threading as configured
  auto learner = PpoLearner::Create(kObs, kAct, net, ppo, 0, 1);
  if (!learner.ok()) {
    state.SkipWithError("create");
    return;
  }
  (*learner)->model()->UpdateObservationStats(torch::randn({4096, kObs}));
  const PpoBatch batch = MakeBatch((*learner)->device());
  for (auto _ : state) {
    UpdateStats s = (*learner)->TrainOnBatch(batch);
    benchmark::DoNotOptimize(s.policy_loss);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// The same computation written directly against LibTorch: normalise,
// two MLPs, squashed-Gaussian log-prob, clipped surrogate + value MSE −
// entropy, backward, clip_grad_norm, Adam.
void BM_BareLibTorchPpoUpdate(benchmark::State& state) {
  const int width = static_cast<int>(state.range(0));
  torch::manual_seed(1);
  auto mlp = [&](int out) {
    return torch::nn::Sequential(
        torch::nn::Linear(kObs, width), torch::nn::Tanh(),
        torch::nn::Linear(width, width), torch::nn::Tanh(),
        torch::nn::Linear(width, out));
  };
  torch::nn::Sequential policy = mlp(kAct), value = mlp(1);
  torch::Tensor log_std = torch::full({kAct}, -0.5).requires_grad_(true);
  std::vector<torch::Tensor> params = policy->parameters();
  for (const auto& p : value->parameters()) params.push_back(p);
  params.push_back(log_std);
  torch::optim::Adam adam(params, torch::optim::AdamOptions(3e-4).eps(1e-5));
  const torch::Tensor mean_obs = torch::zeros({kObs});
  const torch::Tensor inv_std = torch::ones({kObs});
  const PpoBatch b = MakeBatch(torch::kCPU);
  for (auto _ : state) {
    torch::Tensor adv =
        (b.advantages - b.advantages.mean()) / (b.advantages.std() + 1e-8);
    const torch::Tensor x =
        torch::clamp((b.obs - mean_obs) * inv_std, -10.0, 10.0);
    const torch::Tensor mu = policy->forward(x);
    const torch::Tensor z = (b.u - mu) * torch::exp(-log_std);
    const torch::Tensor log_prob =
        (-0.5 * z * z - log_std - 0.9189385332046727).sum(-1) -
        (2.0 * (0.6931471805599453 - b.u -
                torch::nn::functional::softplus(-2.0 * b.u)))
            .sum(-1);
    const torch::Tensor ratio = torch::exp(log_prob - b.old_log_prob);
    const torch::Tensor policy_loss =
        -torch::min(ratio * adv, torch::clamp(ratio, 0.8, 1.2) * adv).mean();
    const torch::Tensor v = value->forward(x).squeeze(-1);
    const torch::Tensor value_loss = (v - b.returns).pow(2).mean();
    const torch::Tensor entropy = (log_std + 1.4189385332046727).sum();
    const torch::Tensor loss = policy_loss + 0.5 * value_loss - 0.0 * entropy;
    adam.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, 0.5);
    adam.step();
    benchmark::DoNotOptimize(loss.item<float>());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

BENCHMARK(BM_BareLibTorchPpoUpdate)
    ->ArgName("width")
    ->Arg(512)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();
BENCHMARK(BM_RistrettoPpoUpdate)
    ->ArgName("width")
    ->Arg(512)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();

}  // namespace
}  // namespace ristretto::learner

// BENCHMARK_MAIN, after the bench role's runtime policy
// (common/runtime_policy.h), as every ristretto binary applies its own.
int main(int argc, char** argv) {
  ristretto::learner::ApplyProcessRuntimePolicy(ristretto::ProcessRole::kBench);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
