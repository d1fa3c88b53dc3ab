// Google Benchmark of VectorEnv::Step with random actions: n = 7 assets,
// F = 98 features, lookback 1 and 5, B in {1, 64, 1024}, one thread.
// Items processed = env steps (copies × iterations), so the report's
// items_per_second is env steps per second.
#include <vector>

#include "benchmark/benchmark.h"
#include "common/rng.h"
#include "env/synthetic.h"
#include "env/vector_env.h"

namespace ristretto::env {
namespace {

void BM_VectorEnvStep(benchmark::State& state) {
  const int lookback = static_cast<int>(state.range(0));
  const int copies = static_cast<int>(state.range(1));
  constexpr int kAssets = 7;
  constexpr int64_t kFeatures = 98;
  constexpr int64_t kRows = 20000;
  auto market = GenerateBenchmarkMarket(kAssets, kFeatures, kRows, 1);
  if (!market.ok()) {
    state.SkipWithError(std::string(market.status().message()).c_str());
    return;
  }
  VectorEnvOptions options;
  options.env.lookback = lookback;
  options.num_copies = copies;
  options.episode_steps = 1000;
  auto vec = VectorEnv::Create(*market, options);
  if (!vec.ok()) {
    state.SkipWithError(std::string(vec.status().message()).c_str());
    return;
  }
  VectorEnv& env = **vec;
  std::vector<float> obs(static_cast<size_t>(copies) * env.observation_size());
  std::vector<float> reward(copies);
  std::vector<uint8_t> done(copies);
  constexpr int kBatches = 4;
  const size_t batch = static_cast<size_t>(copies) * kAssets;
  std::vector<float> actions(kBatches * batch);
  Rng rng(7);
  for (float& a : actions) a = static_cast<float>(2.0 * rng.Uniform() - 1.0);
  env.Reset(obs.data());
  StepOutput out{obs.data(), reward.data(), done.data(), nullptr};
  int k = 0;
  for (auto _ : state) {
    absl::Status s = env.Step(actions.data() + k * batch, out);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    k = (k + 1) % kBatches;
    benchmark::DoNotOptimize(obs.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * copies);
  state.counters["obs_bytes_per_step"] =
      static_cast<double>(env.observation_size() * sizeof(float));
}

BENCHMARK(BM_VectorEnvStep)
    ->ArgNames({"lookback", "copies"})
    ->ArgsProduct({{1, 5}, {1, 64, 1024}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ristretto::env

BENCHMARK_MAIN();
