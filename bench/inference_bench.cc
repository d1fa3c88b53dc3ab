// Actor inference: one policy call on a batch of `num_envs` observations
// (the run-options default, 8 rows) through the default network (2×512,
// tanh), as ristretto-actor makes it every env step, against bare LibTorch
// doing the same on the same weights. Variants, timed in alternating order
// within each round so that load on a shared machine hits them alike:
//
//   ristretto         learner::PolicySampler::Sample (the actor's path)
//   ristretto_before  SampleActions under NoGradGuard + three memcpy (the
//                     actor's path before PolicySampler)
//   bare_forward      torch::nn::Sequential forward of the policy MLP alone
//                     under InferenceMode (the net, nothing else)
//   bare_sample       the same maths as ristretto (normalise, MLP,
//                     u = mean + std·noise, tanh, squashed log π) written
//                     plainly against LibTorch under InferenceMode
//
// Prints each variant's median µs per call, the ratios bare/ristretto
// (≥ 1 means ristretto is at least as fast) as the ratio of medians and the
// median of per-round ratios, and LibTorch CPU-allocator allocations per
// call (a count: independent of load). Runs under the actor's runtime
// policy (one intra-op and one OpenBLAS thread).
//
//   inference_bench [--rounds 11] [--calls 1000] [--batch 8]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/options_schema.h"
#include "common/runtime_policy.h"
#include "learner/ppo_options.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/counting_allocator.h"
#include "learner/torch/torch_runtime.h"

namespace ristretto::bench {
namespace {

constexpr int kObs = 204;  // 7 assets, 98 features, lookback 2
constexpr int kAct = 7;
constexpr double kLog2 = 0.69314718055994530942;
constexpr double kHalfLog2Pi = 0.91893853320467274178;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int IntArg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

struct Variant {
  Variant(std::string n, std::function<void()> c)
      : name(std::move(n)), call(std::move(c)) {}
  std::string name;
  std::function<void()> call;
  std::vector<double> us_per_call;
  double allocations_per_call = 0;
};

int Main(int argc, char** argv) {
  const AppliedRuntimePolicy applied =
      learner::ApplyProcessRuntimePolicy(ProcessRole::kActor);
  // Installs the allocation counter over the policy's allocator.
  learner::CpuAllocationCount();

  const int rounds = std::max(1, IntArg(argc, argv, "--rounds", 11));
  const int calls = std::max(1, IntArg(argc, argv, "--calls", 1000));
  const int batch =
      std::max(1, IntArg(argc, argv, "--batch",
                         static_cast<int>(OptionDefault("num_envs"))));
  const learner::NetworkOptions net;  // the schema's defaults
  torch::manual_seed(5);
  learner::ActorCritic model(kObs, kAct, net);
  model->UpdateObservationStats(torch::randn({4096, kObs}) * 3 + 1);

  // The same policy MLP as a plain Sequential with the model's weights.
  torch::nn::Sequential bare;
  {
    torch::NoGradGuard no_grad;
    const auto& layers = model->policy_layers();
    for (size_t i = 0; i < layers.size(); ++i) {
      torch::nn::Linear l(torch::nn::LinearOptions(layers[i]->weight.size(1),
                                                   layers[i]->weight.size(0)));
      l->weight.copy_(layers[i]->weight);
      l->bias.copy_(layers[i]->bias);
      bare->push_back(l);
      if (i + 1 < layers.size()) {
        if (net.activation == learner::Activation::kTanh) {
          bare->push_back(torch::nn::Tanh());
        } else {
          bare->push_back(torch::nn::ReLU());
        }
      }
    }
  }
  const torch::Tensor mean_f = model->obs_mean().to(torch::kFloat32);
  const torch::Tensor inv_std_f =
      torch::rsqrt(model->obs_var() + 1e-8).to(torch::kFloat32);
  const torch::Tensor log_std = model->log_std().detach().clone();

  // The actor's buffers: observations and noise in, u/action/log π out.
  std::vector<float> obs(static_cast<size_t>(batch) * kObs);
  std::vector<float> noise(static_cast<size_t>(batch) * kAct);
  {
    const torch::Tensor o = torch::randn({batch, kObs}) * 3 + 1;
    const torch::Tensor z = torch::randn({batch, kAct});
    std::memcpy(obs.data(), o.data_ptr<float>(), sizeof(float) * obs.size());
    std::memcpy(noise.data(), z.data_ptr<float>(),
                sizeof(float) * noise.size());
  }
  std::vector<float> u(noise.size()), action(noise.size()), log_prob(batch);
  std::vector<float> u2(u), action2(action), log_prob2(log_prob);
  float sink = 0;

  learner::PolicySampler sampler(model, batch);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  std::vector<Variant> variants;
  variants.emplace_back("ristretto", [&] {
    sampler.Sample(obs.data(), noise.data(), false, u.data(), action.data(),
                   log_prob.data());
  });
  variants.emplace_back("ristretto_before", [&] {
    torch::NoGradGuard no_grad;
    const torch::Tensor x = torch::from_blob(obs.data(), {batch, kObs});
    const torch::Tensor z = torch::from_blob(noise.data(), {batch, kAct});
    const learner::PolicySample s = learner::SampleActions(model, x, z, false);
    std::memcpy(u2.data(), s.u.data_ptr<float>(), sizeof(float) * u2.size());
    std::memcpy(log_prob2.data(), s.log_prob.data_ptr<float>(),
                sizeof(float) * log_prob2.size());
    std::memcpy(action2.data(), s.action.data_ptr<float>(),
                sizeof(float) * action2.size());
  });
  const torch::Tensor bare_input = torch::from_blob(obs.data(), {batch, kObs});
  variants.emplace_back("bare_forward", [&] {
    c10::InferenceMode inference;
    const torch::Tensor out = bare->forward(bare_input);
    sink += out.data_ptr<float>()[0];
  });
  variants.emplace_back("bare_sample", [&] {
    c10::InferenceMode inference;
    const torch::Tensor x = torch::clamp(
        (torch::from_blob(obs.data(), {batch, kObs}, f32) - mean_f) * inv_std_f,
        -net.obs_clip, net.obs_clip);
    const torch::Tensor mean = bare->forward(x);
    const torch::Tensor uu =
        mean + torch::exp(log_std) *
                   torch::from_blob(noise.data(), {batch, kAct}, f32);
    const torch::Tensor a = torch::tanh(uu);
    const torch::Tensor z = (uu - mean) * torch::exp(-log_std);
    const torch::Tensor lp =
        (-0.5 * z * z - log_std - kHalfLog2Pi).sum(-1) -
        (2.0 * (kLog2 - uu - torch::nn::functional::softplus(-2.0 * uu)))
            .sum(-1);
    sink += a.data_ptr<float>()[0] + lp.data_ptr<float>()[0];
  });

  // Warm up, then check that ristretto and the old path agree.
  for (int i = 0; i < 50; ++i) {
    for (Variant& v : variants) v.call();
  }
  double max_diff = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double{u[i]} - u2[i]));
    max_diff = std::max(max_diff, std::fabs(double{action[i]} - action2[i]));
  }
  for (size_t i = 0; i < log_prob.size(); ++i) {
    max_diff =
        std::max(max_diff, std::fabs(double{log_prob[i]} - log_prob2[i]) /
                               std::max(1.0, std::fabs(double{log_prob2[i]})));
  }
  // Allocations per call, counted once (a count does not depend on load).
  for (Variant& v : variants) {
    const int64_t before = learner::CpuAllocationCount();
    for (int i = 0; i < 100; ++i) v.call();
    v.allocations_per_call =
        static_cast<double>(learner::CpuAllocationCount() - before) / 100.0;
  }

  std::vector<double> r_fwd, r_smp, r_bef;
  for (int round = 0; round < rounds; ++round) {
    // Alternate the order every round (forwards, then backwards).
    std::vector<size_t> order(variants.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = round % 2 == 0 ? i : order.size() - 1 - i;
    }
    for (size_t i : order) {
      Variant& v = variants[i];
      const auto start = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) v.call();
      const double us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - start)
                            .count() /
                        calls;
      v.us_per_call.push_back(us);
    }
    const double rist = variants[0].us_per_call.back();
    r_bef.push_back(variants[1].us_per_call.back() / rist);
    r_fwd.push_back(variants[2].us_per_call.back() / rist);
    r_smp.push_back(variants[3].us_per_call.back() / rist);
  }

  std::printf(
      "inference_bench: batch %d, obs %d, actions %d, policy %dx%d "
      "%s, %d rounds x %d calls, %s\n",
      batch, kObs, kAct, static_cast<int>(net.policy_hidden.size()),
      net.policy_hidden.empty() ? 0 : net.policy_hidden[0],
      net.activation == learner::Activation::kTanh ? "tanh" : "relu", rounds,
      calls,
      DescribeRuntimePolicy(RuntimePolicyFor(ProcessRole::kActor), applied)
          .c_str());
  std::printf("%-18s %12s %12s %14s\n", "variant", "median_us", "min_us",
              "allocs/call");
  for (const Variant& v : variants) {
    std::printf("%-18s %12.2f %12.2f %14.1f\n", v.name.c_str(),
                Median(v.us_per_call),
                *std::min_element(v.us_per_call.begin(), v.us_per_call.end()),
                v.allocations_per_call);
  }
  const double rist = Median(variants[0].us_per_call);
  std::printf(
      "ratio bare_forward/ristretto: %.3f (median of per-round "
      "ratios %.3f)\n",
      Median(variants[2].us_per_call) / rist, Median(r_fwd));
  std::printf(
      "ratio bare_sample/ristretto: %.3f (median of per-round "
      "ratios %.3f)\n",
      Median(variants[3].us_per_call) / rist, Median(r_smp));
  std::printf(
      "speed-up ristretto_before/ristretto: %.3f (median of "
      "per-round ratios %.3f)\n",
      Median(variants[1].us_per_call) / rist, Median(r_bef));
  std::printf("max |ristretto - ristretto_before| (log pi relative): %.3g\n",
              max_diff);
  if (sink == 12345.0f) std::printf(" \n");  // keeps the bare results used
  return max_diff < 1e-4 ? 0 : 1;
}

}  // namespace
}  // namespace ristretto::bench

int main(int argc, char** argv) {
  // LibTorch reports errors (a bad shape, no memory) as c10::Error: say so
  // and fail instead of terminating.
  try {
    return ristretto::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inference_bench: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "inference_bench: unknown exception\n");
  }
  return 1;
}
