// The LibTorch half of the runtime policy and the actor's PolicySampler.
// Its own binary: LibTorch's thread counts and its CPU allocator are
// process-wide.
#include "learner/torch/torch_runtime.h"

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "common/runtime_policy.h"
#include "gtest/gtest.h"
#include "learner/ppo_options.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/counting_allocator.h"

namespace ristretto::learner {
namespace {

TEST(TorchRuntimeTest, ActorPolicySetsOneThreadEverywhere) {
  const AppliedRuntimePolicy applied =
      ApplyProcessRuntimePolicy(ProcessRole::kActor);
  EXPECT_TRUE(applied.allocator_set);
  EXPECT_EQ(torch::get_num_threads(), 1);
  EXPECT_EQ(torch::get_num_interop_threads(), 1);
  EXPECT_EQ(applied.torch_intra_op_threads, 1);
  EXPECT_EQ(applied.torch_inter_op_threads, 1);
  // LibTorch links OpenBLAS here (Debian's libtorch); elsewhere there may
  // be none, which the policy reports as -1.
  if (OpenBlasThreads() >= 0) {
    EXPECT_EQ(OpenBlasThreads(), 1);
    EXPECT_EQ(applied.blas_threads, 1);
  }
  // Applying again (inter-op threads already fixed) changes nothing.
  const AppliedRuntimePolicy again =
      ApplyTorchRuntimePolicy(RuntimePolicyFor(ProcessRole::kActor));
  EXPECT_EQ(again.torch_inter_op_threads, 1);
  EXPECT_EQ(again.torch_intra_op_threads, 1);
}

struct SamplerCase {
  Activation activation;
  LogProbMode log_prob;
  bool normalize;
  bool deterministic;
};

class PolicySamplerTest : public ::testing::TestWithParam<SamplerCase> {};

// The sampler computes what SampleActions computes, to float rounding,
// for every network variant; its results land in the caller's buffers.
TEST_P(PolicySamplerTest, MatchesSampleActions) {
  const SamplerCase c = GetParam();
  constexpr int kObs = 12, kAct = 3, kBatch = 5;
  NetworkOptions net;
  net.policy_hidden = {32, 16};
  net.value_hidden = {8};
  net.activation = c.activation;
  net.log_prob = c.log_prob;
  net.normalize_observations = c.normalize;
  net.log_std_init = -0.3;
  torch::manual_seed(11);
  ActorCritic model(kObs, kAct, net);
  model->UpdateObservationStats(torch::randn({64, kObs}) * 2 + 0.5);
  {
    // Non-trivial last layer so actions are not all near zero.
    torch::NoGradGuard no_grad;
    model->policy_layers().back()->weight.normal_(0, 0.5);
  }
  const torch::Tensor obs = torch::randn({kBatch, kObs}) * 3;
  const torch::Tensor noise = torch::randn({kBatch, kAct});
  const PolicySample want = SampleActions(model, obs, noise, c.deterministic);

  PolicySampler sampler(model, kBatch);
  EXPECT_EQ(sampler.batch(), kBatch);
  std::vector<float> u(kBatch * kAct, -9), action(kBatch * kAct, -9),
      log_prob(kBatch, -9);
  sampler.Sample(obs.data_ptr<float>(), noise.data_ptr<float>(),
                 c.deterministic, u.data(), action.data(), log_prob.data());
  for (int i = 0; i < kBatch * kAct; ++i) {
    EXPECT_NEAR(u[i], want.u.data_ptr<float>()[i], 1e-5) << i;
    EXPECT_NEAR(action[i], want.action.data_ptr<float>()[i], 1e-5) << i;
  }
  for (int i = 0; i < kBatch; ++i) {
    EXPECT_NEAR(log_prob[i], want.log_prob.data_ptr<float>()[i],
                1e-4 * std::max(1.0f, std::fabs(log_prob[i])))
        << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, PolicySamplerTest,
    ::testing::Values(SamplerCase{Activation::kTanh,
                                  LogProbMode::kTanhCorrected, true, false},
                      SamplerCase{Activation::kRelu,
                                  LogProbMode::kTanhCorrected, true, false},
                      SamplerCase{Activation::kTanh, LogProbMode::kUncorrected,
                                  false, false},
                      SamplerCase{Activation::kTanh,
                                  LogProbMode::kTanhCorrected, true, true}));

// After construction a Sample allocates no tensor storage (the actor calls
// it every env step); SampleActions allocates dozens.
TEST(PolicySamplerAllocationTest, SampleAllocatesNoTensor) {
  CpuAllocationCount();  // installs the counter
  constexpr int kObs = 20, kAct = 4, kBatch = 8;
  ActorCritic model(kObs, kAct, NetworkOptions());
  PolicySampler sampler(model, kBatch);
  std::vector<float> obs(kBatch * kObs, 0.25f), noise(kBatch * kAct, 0.5f);
  std::vector<float> u(kBatch * kAct), action(kBatch * kAct), log_prob(kBatch);
  sampler.Sample(obs.data(), noise.data(), false, u.data(), action.data(),
                 log_prob.data());
  const int64_t before = CpuAllocationCount();
  for (int i = 0; i < 10; ++i) {
    sampler.Sample(obs.data(), noise.data(), false, u.data(), action.data(),
                   log_prob.data());
  }
  EXPECT_EQ(CpuAllocationCount(), before);
  // The counter does see tensor allocations.
  const torch::Tensor x = torch::from_blob(obs.data(), {kBatch, kObs});
  const torch::Tensor z = torch::from_blob(noise.data(), {kBatch, kAct});
  const PolicySample s = SampleActions(model, x, z, false);
  EXPECT_GT(CpuAllocationCount(), before + 5);
  EXPECT_NEAR(s.action.data_ptr<float>()[0], action[0], 1e-5);
}

}  // namespace
}  // namespace ristretto::learner
