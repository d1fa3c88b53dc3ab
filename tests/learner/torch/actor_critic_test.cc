#include "learner/torch/actor_critic.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "learner/ppo_options.h"

namespace ristretto::learner {
namespace {

constexpr double kHalfLog2Pi = 0.91893853320467274178;  // 0.5·log(2π)

torch::Tensor F64(const std::vector<double>& v) {
  return torch::tensor(v, torch::kFloat64);
}

NetworkOptions SmallNetwork() {
  NetworkOptions net;
  net.policy_hidden = {16, 16};
  net.value_hidden = {16, 16};
  return net;
}

double MaxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64))
      .abs()
      .max()
      .item<double>();
}

// Composite Simpson's rule over [lo, hi] for a density given as log values
// at n + 1 evenly spaced points (n even).
double Simpson(const torch::Tensor& log_density, double lo, double hi) {
  const int64_t n = log_density.size(0) - 1;
  const torch::Tensor f = torch::exp(log_density);
  torch::Tensor w = torch::ones({n + 1}, torch::kFloat64);
  w.slice(0, 1, n, 2).fill_(4.0);
  w.slice(0, 2, n, 2).fill_(2.0);
  return ((hi - lo) / n / 3.0) * (f * w).sum().item<double>();
}

// 1-D case of the density tests: u ~ N(0.3, exp(−0.7)²), a = tanh(u).
constexpr double kMean = 0.3;
constexpr double kLogStd = -0.7;

// log p at a ∈ (−1, 1) on a grid, u = atanh(a). The endpoints are avoided by
// 1e-12: there u ≈ ±14 is 29σ from the mean and the density is 0 in double.
torch::Tensor LogDensityOnAGrid(LogProbMode mode, int64_t n, double lo,
                                double hi) {
  const torch::Tensor a = torch::linspace(lo, hi, n + 1, torch::kFloat64);
  const torch::Tensor u = torch::atanh(a).unsqueeze(1);
  return SquashedGaussianLogProb(u, F64({kMean}), F64({kLogStd}), mode);
}

TEST(SquashedGaussianLogProbTest, TanhCorrectedDensityIntegratesToOneOverA) {
  constexpr double kLo = -1.0 + 1e-12, kHi = 1.0 - 1e-12;
  constexpr int64_t kIntervals = 400000;
  const torch::Tensor logp =
      LogDensityOnAGrid(LogProbMode::kTanhCorrected, kIntervals, kLo, kHi);
  ASSERT_TRUE(torch::isfinite(logp).all().item<bool>());
  EXPECT_NEAR(Simpson(logp, kLo, kHi), 1.0, 1e-6);
}

TEST(SquashedGaussianLogProbTest, TanhCorrectedDensityIsTheChangeOfVariables) {
  // p_A(a) = N(u; μ, σ) / (1 − a²) with u = atanh(a), checked pointwise.
  const double sigma = std::exp(kLogStd);
  for (double a : {-0.99, -0.5, 0.0, 0.2, 0.7, 0.999}) {
    const double u = std::atanh(a);
    const double z = (u - kMean) / sigma;
    const double expected =
        -0.5 * z * z - kLogStd - kHalfLog2Pi - std::log(1.0 - a * a);
    const double got =
        SquashedGaussianLogProb(F64({u}).unsqueeze(0), F64({kMean}),
                                F64({kLogStd}), LogProbMode::kTanhCorrected)
            .item<double>();
    EXPECT_NEAR(got, expected, 1e-12) << "a = " << a;
  }
}

TEST(SquashedGaussianLogProbTest, UncorrectedIsExactlyTheGaussianDensityOfU) {
  const double sigma = std::exp(kLogStd);
  const std::vector<double> us = {-3.0, -1.0, -0.2, 0.0, 0.3, 0.9, 2.5, 30.0};
  const torch::Tensor got =
      SquashedGaussianLogProb(F64(us).unsqueeze(1), F64({kMean}),
                              F64({kLogStd}), LogProbMode::kUncorrected);
  ASSERT_EQ(got.sizes(), torch::IntArrayRef({8}));
  for (size_t i = 0; i < us.size(); ++i) {
    const double z = (us[i] - kMean) / sigma;
    const double expected = -0.5 * z * z - std::log(sigma) - kHalfLog2Pi;
    EXPECT_NEAR(got[i].item<double>(), expected, 1e-12) << "u = " << us[i];
  }
}

TEST(SquashedGaussianLogProbTest,
     UncorrectedDensityDoesNotIntegrateToOneOverA) {
  // ∫ N(atanh a) da = E_u[1 − tanh²(u)] < 1: the density of u is not one
  // of a. Compute that expectation on a u grid (±12σ) for the exact value.
  constexpr double kLo = -1.0 + 1e-12, kHi = 1.0 - 1e-12;
  const double over_a = Simpson(
      LogDensityOnAGrid(LogProbMode::kUncorrected, 400000, kLo, kHi), kLo, kHi);
  const double sigma = std::exp(kLogStd);
  const double u_lo = kMean - 12 * sigma, u_hi = kMean + 12 * sigma;
  const torch::Tensor u = torch::linspace(u_lo, u_hi, 200001, torch::kFloat64);
  const torch::Tensor z = (u - kMean) / sigma;
  const torch::Tensor log_integrand = -0.5 * z * z - std::log(sigma) -
                                      kHalfLog2Pi +
                                      torch::log(1.0 - torch::tanh(u).pow(2));
  const double expectation = Simpson(log_integrand, u_lo, u_hi);
  EXPECT_NEAR(over_a, expectation, 1e-6);
  EXPECT_LT(over_a, 0.9);
}

TEST(SquashedGaussianLogProbTest, TwoDimensionalLogProbIsTheSumOverDimensions) {
  const torch::Tensor mean = F64({0.3, -1.1});
  const torch::Tensor log_std = F64({-0.7, 0.4});
  const torch::Tensor u =
      torch::tensor({{0.1, -0.5}, {2.0, 1.5}, {-3.0, 0.0}}, torch::kFloat64);
  for (LogProbMode mode :
       {LogProbMode::kTanhCorrected, LogProbMode::kUncorrected}) {
    const torch::Tensor joint = SquashedGaussianLogProb(u, mean, log_std, mode);
    const torch::Tensor sum =
        SquashedGaussianLogProb(u.slice(1, 0, 1), mean.slice(0, 0, 1),
                                log_std.slice(0, 0, 1), mode) +
        SquashedGaussianLogProb(u.slice(1, 1, 2), mean.slice(0, 1, 2),
                                log_std.slice(0, 1, 2), mode);
    ASSERT_EQ(joint.sizes(), torch::IntArrayRef({3}));
    EXPECT_LT(MaxAbsDiff(joint, sum), 1e-12) << LogProbModeName(mode);
  }
}

// corrected = uncorrected − log(1 − tanh²u), so their difference exposes
// the stable correction 2·(log 2 − u − softplus(−2u)).
torch::Tensor Correction(const torch::Tensor& u) {
  const torch::Tensor mean = torch::zeros({1}, u.options());
  const torch::Tensor log_std = torch::zeros({1}, u.options());
  return SquashedGaussianLogProb(u, mean, log_std, LogProbMode::kUncorrected) -
         SquashedGaussianLogProb(u, mean, log_std, LogProbMode::kTanhCorrected);
}

TEST(SquashedGaussianLogProbTest,
     StableCorrectionEqualsLogOneMinusTanhSquared) {
  const std::vector<double> us = {-4.0, -1.3, -0.2, 0.0, 0.5, 2.0, 4.0};
  const torch::Tensor got = Correction(F64(us).unsqueeze(1));
  for (size_t i = 0; i < us.size(); ++i) {
    const double t = std::tanh(us[i]);
    EXPECT_NEAR(got[i].item<double>(), std::log(1.0 - t * t), 1e-6)
        << "u = " << us[i];
  }
}

TEST(SquashedGaussianLogProbTest, StableCorrectionStaysFiniteAtThirty) {
  for (double u : {-30.0, 30.0}) {
    // The naive form underflows: tanh(±30) is ±1 in double.
    const double t = std::tanh(u);
    EXPECT_EQ(std::log(1.0 - t * t), -std::numeric_limits<double>::infinity());
    // log(1 − tanh²u) = 2·(log 2 − |u| − log1p(e^{−2|u|})).
    const double expected =
        2.0 * (std::log(2.0) - std::abs(u) - std::log1p(std::exp(-60.0)));
    const double got64 = Correction(F64({u}).unsqueeze(1)).item<double>();
    EXPECT_NEAR(got64, expected, 1e-9) << "u = " << u;
    const torch::Tensor u32 =
        torch::full({1, 1}, u, torch::TensorOptions().dtype(torch::kFloat32));
    const double got32 = Correction(u32).item<double>();
    EXPECT_TRUE(std::isfinite(got32)) << "u = " << u;
    EXPECT_NEAR(got32, expected, 1e-4) << "u = " << u;
  }
}

TEST(GaussianEntropyTest, EqualsTheSumOfLogSigmaPlusHalfPlusHalfLogTwoPi) {
  const torch::Tensor log_std = F64({-0.5, 0.2, -1.7});
  const torch::Tensor entropy = GaussianEntropy(log_std, 4);
  ASSERT_EQ(entropy.sizes(), torch::IntArrayRef({4}));
  const double expected = (-0.5 + 0.5 + kHalfLog2Pi) +
                          (0.2 + 0.5 + kHalfLog2Pi) +
                          (-1.7 + 0.5 + kHalfLog2Pi);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(entropy[i].item<double>(), expected, 1e-12);
  }
}

TEST(ActorCriticTest, ObservationStatsEqualThoseOfTheConcatenatedBatches) {
  torch::manual_seed(5);
  ActorCritic model(5, 2, SmallNetwork());
  const torch::Tensor x1 = torch::randn({7, 5}) * 3.0 + 1.5;
  const torch::Tensor x2 = torch::randn({4, 5}) * 0.5 - 2.0;
  model->UpdateObservationStats(x1);
  model->UpdateObservationStats(x2);
  const torch::Tensor all = torch::cat({x1, x2}).to(torch::kFloat64);
  EXPECT_EQ(model->obs_count(), 11.0);
  EXPECT_EQ(model->obs_mean().scalar_type(), torch::kFloat64);
  EXPECT_LT(MaxAbsDiff(model->obs_mean(), all.mean(0)), 1e-12);
  EXPECT_LT(MaxAbsDiff(model->obs_var(), all.var(0, /*unbiased=*/false)),
            1e-12);
}

TEST(ActorCriticTest, NormalizeStandardisesAndClipsAtObsClip) {
  NetworkOptions net = SmallNetwork();
  net.obs_clip = 2.5;
  torch::manual_seed(5);
  ActorCritic model(5, 2, net);
  model->UpdateObservationStats(torch::randn({50, 5}) * 2.0 + 0.7);
  const torch::Tensor mean = model->obs_mean();
  const torch::Tensor sd = torch::sqrt(model->obs_var());
  const torch::Tensor obs = torch::stack({mean + 10.0 * sd, mean - 10.0 * sd,
                                          mean + 0.5 * sd, mean - 1.25 * sd})
                                .to(torch::kFloat32);
  const torch::Tensor x = model->Normalize(obs);
  ASSERT_EQ(x.sizes(), torch::IntArrayRef({4, 5}));
  EXPECT_TRUE(torch::all(x[0] == 2.5f).item<bool>()) << x[0];
  EXPECT_TRUE(torch::all(x[1] == -2.5f).item<bool>()) << x[1];
  EXPECT_LT(MaxAbsDiff(x[2], torch::full({5}, 0.5)), 1e-5);
  EXPECT_LT(MaxAbsDiff(x[3], torch::full({5}, -1.25)), 1e-5);
}

TEST(ActorCriticTest, WithoutNormalizationNormalizeIsIdentityAndStatsStayPut) {
  NetworkOptions net = SmallNetwork();
  net.normalize_observations = false;
  torch::manual_seed(5);
  ActorCritic model(5, 2, net);
  const torch::Tensor obs = torch::randn({9, 5}) * 40.0 + 3.0;
  model->UpdateObservationStats(obs);
  EXPECT_EQ(model->obs_count(), 0.0);
  EXPECT_TRUE(
      torch::equal(model->obs_mean(), torch::zeros({5}, torch::kFloat64)));
  EXPECT_TRUE(
      torch::equal(model->obs_var(), torch::ones({5}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(model->Normalize(obs), obs));
}

TEST(ActorCriticTest, LayerCountsAndSizesFollowTheHiddenWidths) {
  NetworkOptions net;
  net.policy_hidden = {16, 8};
  net.value_hidden = {4};
  net.log_std_init = -1.25;
  ActorCritic model(5, 2, net);
  EXPECT_EQ(model->obs_size(), 5);
  EXPECT_EQ(model->action_size(), 2);
  const auto& policy = model->policy_layers();
  ASSERT_EQ(policy.size(), 3u);
  EXPECT_EQ(policy[0]->weight.sizes(), torch::IntArrayRef({16, 5}));
  EXPECT_EQ(policy[1]->weight.sizes(), torch::IntArrayRef({8, 16}));
  EXPECT_EQ(policy[2]->weight.sizes(), torch::IntArrayRef({2, 8}));
  EXPECT_EQ(policy[2]->bias.sizes(), torch::IntArrayRef({2}));
  const auto& value = model->value_layers();
  ASSERT_EQ(value.size(), 2u);
  EXPECT_EQ(value[0]->weight.sizes(), torch::IntArrayRef({4, 5}));
  EXPECT_EQ(value[1]->weight.sizes(), torch::IntArrayRef({1, 4}));
  // 3 + 2 linear layers (weight and bias each) and log_std.
  EXPECT_EQ(model->parameters().size(), 11u);
  EXPECT_EQ(model->buffers().size(), 3u);  // obs_mean, obs_var, obs_count
  EXPECT_TRUE(torch::equal(model->log_std(), torch::full({2}, -1.25f)));
  // Biases start at zero.
  for (const auto& layer : policy) {
    EXPECT_TRUE(torch::equal(layer->bias, torch::zeros_like(layer->bias)));
  }

  const torch::Tensor obs = torch::randn({6, 5});
  EXPECT_EQ(model->PolicyMean(obs).sizes(), torch::IntArrayRef({6, 2}));
  EXPECT_EQ(model->Value(obs).sizes(), torch::IntArrayRef({6}));
}

TEST(ActorCriticTest, EmptyHiddenListsGiveASingleLinearLayer) {
  NetworkOptions net;
  net.policy_hidden = {};
  net.value_hidden = {};
  ActorCritic model(5, 3, net);
  ASSERT_EQ(model->policy_layers().size(), 1u);
  EXPECT_EQ(model->policy_layers()[0]->weight.sizes(),
            torch::IntArrayRef({3, 5}));
  ASSERT_EQ(model->value_layers().size(), 1u);
  EXPECT_EQ(model->value_layers()[0]->weight.sizes(),
            torch::IntArrayRef({1, 5}));
}

// The MLP by hand on normalised observations.
torch::Tensor ManualMlp(const std::vector<torch::nn::Linear>& layers,
                        torch::Tensor x, Activation activation) {
  for (size_t i = 0; i < layers.size(); ++i) {
    x = torch::matmul(x, layers[i]->weight.t()) + layers[i]->bias;
    if (i + 1 < layers.size()) {
      x = activation == Activation::kTanh ? torch::tanh(x) : torch::relu(x);
    }
  }
  return x;
}

TEST(ActorCriticTest, ReluAndTanhNetworksComputeTheirOwnActivations) {
  NetworkOptions tanh_net = SmallNetwork();
  NetworkOptions relu_net = SmallNetwork();
  relu_net.activation = Activation::kRelu;
  torch::manual_seed(11);
  ActorCritic tanh_model(5, 2, tanh_net);
  torch::manual_seed(11);
  ActorCritic relu_model(5, 2, relu_net);
  // Same seed, same initial weights: only the activation differs.
  const auto tp = tanh_model->named_parameters();
  const auto rp = relu_model->named_parameters();
  for (const auto& item : tp) {
    ASSERT_TRUE(torch::equal(item.value(), rp[item.key()])) << item.key();
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor obs = torch::randn({32, 5}) * 2.0;
  const torch::Tensor x = obs / std::sqrt(1.0 + 1e-8);  // default stats
  for (ActorCritic* m : {&tanh_model, &relu_model}) {
    const Activation act = (*m)->options().activation;
    EXPECT_LT(MaxAbsDiff((*m)->PolicyMean(obs),
                         ManualMlp((*m)->policy_layers(), x, act)),
              1e-6)
        << ActivationName(act);
    EXPECT_LT(MaxAbsDiff((*m)->Value(obs),
                         ManualMlp((*m)->value_layers(), x, act).squeeze(-1)),
              1e-5)
        << ActivationName(act);
  }
  EXPECT_GT(MaxAbsDiff(tanh_model->Value(obs), relu_model->Value(obs)), 1e-2);
  EXPECT_GT(
      MaxAbsDiff(tanh_model->PolicyMean(obs), relu_model->PolicyMean(obs)),
      1e-4);
}

TEST(ActorCriticTest, InitialPolicyMeanIsSmallThanksToTheLastLayerGain) {
  torch::manual_seed(2);
  ActorCritic model(5, 2, SmallNetwork());
  torch::NoGradGuard no_grad;
  const torch::Tensor mean = model->PolicyMean(torch::randn({256, 5}) * 3.0);
  EXPECT_LT(mean.abs().max().item<double>(), 0.1);
  // The last policy layer is orthogonal with gain 0.01: its rows have norm
  // 0.01 (2 rows of width 16).
  const torch::Tensor w = model->policy_layers().back()->weight;
  EXPECT_LT(MaxAbsDiff(w.norm(2, {1}), torch::full({2}, 0.01)), 1e-6);
}

// The actor reuses a model for each new weight version (it skips the
// construction's orthogonal init): loading must overwrite every parameter
// and buffer (the observation statistics included), leaving nothing of the
// weights the model held before.
TEST(ActorCriticTest, LoadingIntoAUsedModelEqualsLoadingIntoANewOne) {
  torch::manual_seed(3);
  ActorCritic source(5, 2, SmallNetwork());
  source->UpdateObservationStats(torch::randn({64, 5}) * 2.0 + 1.0);
  std::ostringstream saved;
  torch::save(source, saved);

  ActorCritic used(5, 2, SmallNetwork());
  used->UpdateObservationStats(torch::randn({32, 5}) * 5.0 - 3.0);
  ActorCritic fresh(5, 2, SmallNetwork());
  for (ActorCritic* m : {&used, &fresh}) {
    std::istringstream in(saved.str());
    torch::load(*m, in);
  }
  const auto want = source->named_parameters();
  for (ActorCritic* m : {&used, &fresh}) {
    const auto got = (*m)->named_parameters();
    ASSERT_EQ(got.size(), want.size());
    for (const auto& p : want) {
      EXPECT_TRUE(torch::equal(got[p.key()], p.value())) << p.key();
    }
    const auto buffers = (*m)->named_buffers();
    for (const auto& b : source->named_buffers()) {
      EXPECT_TRUE(torch::equal(buffers[b.key()], b.value())) << b.key();
    }
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor obs = torch::randn({8, 5}) * 3.0;
  EXPECT_TRUE(torch::equal(used->PolicyMean(obs), source->PolicyMean(obs)));
  EXPECT_TRUE(torch::equal(used->Value(obs), fresh->Value(obs)));
  EXPECT_EQ(used->obs_count(), 64.0);
}

TEST(SampleActionsTest, DeterministicReturnsTheMeanAndItsTanh) {
  torch::manual_seed(3);
  ActorCritic model(5, 2, SmallNetwork());
  const torch::Tensor obs = torch::randn({6, 5});
  const torch::Tensor noise = torch::randn({6, 2});
  const PolicySample s = SampleActions(model, obs, noise, true);
  const torch::Tensor mean = model->PolicyMean(obs).detach();
  ASSERT_EQ(s.u.sizes(), torch::IntArrayRef({6, 2}));
  ASSERT_EQ(s.action.sizes(), torch::IntArrayRef({6, 2}));
  ASSERT_EQ(s.log_prob.sizes(), torch::IntArrayRef({6}));
  EXPECT_TRUE(s.u.is_contiguous() && s.action.is_contiguous() &&
              s.log_prob.is_contiguous());
  EXPECT_TRUE(torch::equal(s.u, mean));
  EXPECT_TRUE(torch::equal(s.action, torch::tanh(mean)));
  EXPECT_TRUE(torch::equal(
      s.log_prob, SquashedGaussianLogProb(mean, mean, model->log_std().detach(),
                                          LogProbMode::kTanhCorrected)));
}

TEST(SampleActionsTest, StochasticWithZeroNoiseEqualsDeterministic) {
  torch::manual_seed(3);
  ActorCritic model(5, 2, SmallNetwork());
  const torch::Tensor obs = torch::randn({6, 5});
  const PolicySample det =
      SampleActions(model, obs, torch::randn({6, 2}), true);
  const PolicySample zero =
      SampleActions(model, obs, torch::zeros({6, 2}), false);
  EXPECT_TRUE(torch::equal(zero.u, det.u));
  EXPECT_TRUE(torch::equal(zero.action, det.action));
  EXPECT_TRUE(torch::equal(zero.log_prob, det.log_prob));
}

TEST(SampleActionsTest, StochasticLogProbMatchesSquashedGaussianLogProb) {
  for (LogProbMode mode :
       {LogProbMode::kTanhCorrected, LogProbMode::kUncorrected}) {
    NetworkOptions net = SmallNetwork();
    net.log_prob = mode;
    net.log_std_init = -0.3;
    torch::manual_seed(4);
    ActorCritic model(5, 2, net);
    const torch::Tensor obs = torch::randn({8, 5});
    const torch::Tensor noise = torch::randn({8, 2});
    const PolicySample s = SampleActions(model, obs, noise, false);
    const torch::Tensor mean = model->PolicyMean(obs).detach();
    const torch::Tensor log_std = model->log_std().detach();
    EXPECT_LT(MaxAbsDiff(s.u, mean + std::exp(-0.3) * noise), 1e-6);
    EXPECT_TRUE(torch::equal(s.action, torch::tanh(s.u)));
    EXPECT_LT(MaxAbsDiff(s.log_prob,
                         SquashedGaussianLogProb(s.u, mean, log_std, mode)),
              1e-6)
        << LogProbModeName(mode);
    // Evaluate() gives the learner the same log-probability.
    EXPECT_LT(
        MaxAbsDiff(model->Evaluate(obs, s.u).log_prob.detach(), s.log_prob),
        1e-6)
        << LogProbModeName(mode);
  }
}

}  // namespace
}  // namespace ristretto::learner
