// Google Benchmark of VectorEnv::Step with random actions: n = 7 assets,
// F = 98 features, lookback 1 and 5, B in {1, 64, 1024}, one thread;
// weights 0 = the original's env (shares action model, forced trim, shaped
// reward: the defaults before issue 34), 1 = today's defaults (target
// weights, band, log-return reward).
// Items processed = env steps (copies × iterations), so the report's
// items_per_second is env steps per second.
#include <cstring>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/rng.h"
#include "common/runtime_policy.h"
#include "env/geometry.h"
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
  if (state.range(2) == 0) {
    options.env.action_model = ActionModel::kShares;
    options.env.position_observation = PositionObservation::kHoldings;
    options.env.cooldown_trim_bars = 48;
    options.env.reward_mode = RewardMode::kShaped;
    options.env.min_notional = 0.0;
  }
  // weights:2 is target weights observing coin holdings (before the
  // weights observation): the A/B baseline of the observation's cost.
  if (state.range(2) == 2) {
    options.env.position_observation = PositionObservation::kHoldings;
  }
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

// Baseline 1 (floor): only the observation copy of a step — the same rows
// at the same random starts, copied into the same buffer — with no trading
// logic. VectorEnvStep / this = cost of the env logic on top of the bytes.
void BM_ObservationCopyOnly(benchmark::State& state) {
  const int lookback = static_cast<int>(state.range(0));
  const int copies = static_cast<int>(state.range(1));
  constexpr int64_t kFeatures = 98, kRows = 20000, kEpisode = 1000;
  const size_t window = static_cast<size_t>(kFeatures * lookback);
  const size_t obs_size = 1 + 7 + window;
  std::vector<float> rows(static_cast<size_t>(kRows * kFeatures), 1.0f);
  std::vector<float> obs(static_cast<size_t>(copies) * obs_size);
  std::vector<int64_t> row(copies);
  Rng rng(3);
  for (int64_t& r : row) {
    r = lookback +
        rng.UniformInt(kRows - env::RowsForSteps(kEpisode, lookback));
  }
  for (auto _ : state) {
    for (int b = 0; b < copies; ++b) {
      const int64_t r = ++row[b];
      std::memcpy(obs.data() + b * obs_size + 8,
                  rows.data() + (kRows - 1 - r) * kFeatures,
                  window * sizeof(float));
      if (r >= kRows - lookback - 1) row[b] = lookback;
    }
    benchmark::DoNotOptimize(obs.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * copies);
}

// Baseline 2 (scalar): the same B copies as B independent one-copy envs
// stepped one after the other, the way a scalar env (one object per
// portfolio) is driven.
void BM_ScalarEnvsStep(benchmark::State& state) {
  const int lookback = static_cast<int>(state.range(0));
  const int copies = static_cast<int>(state.range(1));
  constexpr int kAssets = 7;
  auto market = GenerateBenchmarkMarket(kAssets, 98, 20000, 1);
  if (!market.ok()) {
    state.SkipWithError("market");
    return;
  }
  std::vector<std::unique_ptr<VectorEnv>> envs;
  for (int b = 0; b < copies; ++b) {
    VectorEnvOptions options;
    options.env.lookback = lookback;
    options.num_copies = 1;
    options.episode_steps = 1000;
    options.seed = static_cast<uint64_t>(b);
    auto env = VectorEnv::Create(*market, options);
    if (!env.ok()) {
      state.SkipWithError("env");
      return;
    }
    envs.push_back(std::move(*env));
  }
  const int D = envs[0]->observation_size();
  std::vector<float> obs(static_cast<size_t>(copies) * D);
  std::vector<float> reward(copies);
  std::vector<uint8_t> done(copies);
  constexpr int kBatches = 4;
  const size_t batch = static_cast<size_t>(copies) * kAssets;
  std::vector<float> actions(kBatches * batch);
  Rng rng(7);
  for (float& a : actions) a = static_cast<float>(2.0 * rng.Uniform() - 1.0);
  for (int b = 0; b < copies; ++b) envs[b]->Reset(obs.data() + b * D);
  int k = 0;
  for (auto _ : state) {
    for (int b = 0; b < copies; ++b) {
      StepOutput out{obs.data() + b * D, reward.data() + b, done.data() + b,
                     nullptr};
      absl::Status s =
          envs[b]->Step(actions.data() + k * batch + b * kAssets, out);
      if (!s.ok()) {
        state.SkipWithError("step");
        return;
      }
    }
    k = (k + 1) % kBatches;
    benchmark::DoNotOptimize(obs.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * copies);
}

BENCHMARK(BM_ObservationCopyOnly)
    ->ArgNames({"lookback", "copies"})
    ->ArgsProduct({{1, 5}, {1024}})
    ->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_ScalarEnvsStep)
    ->ArgNames({"lookback", "copies"})
    ->ArgsProduct({{1, 5}, {1024}})
    ->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_VectorEnvStep)
    ->ArgNames({"lookback", "copies", "weights"})
    ->ArgsProduct({{1, 5}, {1, 64, 1024}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ristretto::env

// BENCHMARK_MAIN, after the bench role's runtime policy
// (common/runtime_policy.h), as every ristretto binary applies its own.
int main(int argc, char** argv) {
  ristretto::ApplyRuntimePolicy(
      ristretto::RuntimePolicyFor(ristretto::ProcessRole::kBench));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
