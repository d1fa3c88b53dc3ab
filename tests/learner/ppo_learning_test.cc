// PPO learns: a contextual bandit through PpoLearner::Update, and the full
// single-process trainer on a synthetic market with a planted signal.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/rng.h"
#include "env/market_data.h"
#include "env/synthetic.h"
#include "gtest/gtest.h"
#include "learner/torch/ppo.h"
#include "learner/torch/trainer.h"
#include "learner/trajectory.h"

namespace ristretto::learner {
namespace {

// Bandit: obs x ~ U(-1, 1)^2, one-step episodes, reward −(a − 0.8·x0)².
// The best deterministic action is tanh(mean) = 0.8·x0.
TEST(PpoLearningTest, ContextualBanditConvergesToTheBestAction) {
  NetworkOptions net;
  net.policy_hidden = {32, 32};
  net.value_hidden = {32, 32};
  PpoOptions ppo;
  ppo.learning_rate = 3e-3;
  ppo.epochs = 8;
  ppo.minibatch_size = 256;
  ppo.gamma = 0.0;
  auto learner = PpoLearner::Create(2, 1, net, ppo, 0, 7);
  ASSERT_TRUE(learner.ok()) << learner.status();
  Rng rng(1);
  constexpr int kT = 1, kB = 512;
  double last_error = 0;
  for (int iter = 0; iter < 60; ++iter) {
    TrajectoryChunk c;
    c.steps = kT;
    c.copies = kB;
    c.obs_size = 2;
    c.action_size = 1;
    c.policy_version = (*learner)->version();
    for (int i = 0; i < (kT + 1) * kB * 2; ++i) {
      c.obs.push_back(static_cast<float>(2 * rng.Uniform() - 1));
    }
    torch::Tensor obs = torch::from_blob(c.obs.data(), {kB, 2}).clone();
    torch::Tensor noise = torch::randn({kB, 1});
    PolicySample s = SampleActions((*learner)->model(), obs, noise, false);
    double err = 0;
    for (int b = 0; b < kB; ++b) {
      const float target = 0.8f * c.obs[b * 2];
      const float a = s.action.data_ptr<float>()[b];
      c.actions.push_back(s.u.data_ptr<float>()[b]);
      c.log_probs.push_back(s.log_prob.data_ptr<float>()[b]);
      c.rewards.push_back(-(a - target) * (a - target));
      c.dones.push_back(1);
      c.final_obs.push_back(0);
      c.final_obs.push_back(0);
      const float det = std::tanh(
          (*learner)->model()->PolicyMean(obs.narrow(0, b, 1)).item<float>());
      err += (det - target) * (det - target);
    }
    last_error = err / kB;
    ASSERT_TRUE(c.Validate().ok()) << c.Validate();
    auto stats = (*learner)->Update({c});
    ASSERT_TRUE(stats.ok()) << stats.status();
  }
  // Measured: mse 0.20 at the start, 0.0013 after 30 updates, 0.0009 at 50.
  EXPECT_LT(last_error, 0.01);
}

// The single-process trainer on a synthetic market whose volume reveals the
// sign of the return two bars ahead (predictability 1: drift ±σ). After
// 300k env steps (~4.5 s here) the deterministic policy must beat equal-weight
// buy and hold and a uniformly random policy on the held-out half.
//
// Measured with exactly this test on seeds 1..6 (validation Sharpe,
// annualised for 30-minute bars: policy / buy and hold / random policy):
//   16.59 / 1.03 / 1.00,   1.84 / −0.89 / −2.52,   2.27 / −0.06 / −1.22,
//   −2.12 / −2.86 / −3.30,  3.29 / −0.84 / −1.62,   0.90 / −1.47 / −2.32
// → margin over buy and hold 15.6, 2.7, 2.3, 0.74, 4.1, 2.4 (median 2.5),
// over random 15.6, 4.4, 3.5, 1.2, 4.9, 3.2. An oracle that trades the
// planted signal reaches Sharpe 24. Training is reproducible on CPU, so a
// seed gives the same numbers on every run; the thresholds (0.5 Sharpe
// over each) sit below the worst of the six seeds, and the test runs the
// first two.
struct LearningCase {
  uint64_t seed;
};

class TrainerLearningTest : public ::testing::TestWithParam<LearningCase> {};

TEST_P(TrainerLearningTest, PolicyBeatsBuyAndHoldAndRandomOnHeldOutData) {
  env::SyntheticMarketOptions synth;
  synth.num_assets = 1;
  synth.num_rows = 4000;
  synth.seed = GetParam().seed;
  synth.predictability = 1.0;
  absl::StatusOr<env::Dataset> dataset = env::GenerateSyntheticDataset(synth);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  auto market = env::MarketData::FromDataset(*dataset);
  ASSERT_TRUE(market.ok()) << market.status();
  const int64_t T = (*market)->num_rows;
  const int64_t split = T / 2;

  TrainerOptions o;
  o.env.lookback = 1;
  o.env.norm_action = 5;  // one unit of action trades 20 % of C0
  o.env.buy_fee = 0.001;
  o.env.sell_fee = 0.001;
  o.env.reward_mode = env::RewardMode::kLogReturn;
  o.network.policy_hidden = {64, 64};
  o.network.value_hidden = {64, 64};
  o.ppo.learning_rate = 1e-3;
  o.ppo.epochs = 4;
  o.ppo.minibatch_size = 1024;
  o.ppo.gamma = 0.9;
  o.ppo.gae_lambda = 0.9;
  o.num_envs = 32;
  o.rollout_steps = 128;
  o.budget_env_steps = 300000;
  o.seed = GetParam().seed;
  o.train_domains = {env::Domain{0, split}};
  o.validation_domains = {env::Domain{split, T}};
  o.dataset_id = dataset->ComputeId();
  o.feature_names = dataset->feature_names;
  absl::StatusOr<TrainResult> result = Train(*market, o);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->evaluations.size(), 1u);
  const EvaluationResult& trained = result->evaluations.back();

  Rng rng(GetParam().seed + 100);
  absl::StatusOr<EvaluationResult> random = EvaluateActions(
      *market, o.env, o.validation_domains,
      [&](const float*, int copies, float* actions) {
        for (int i = 0; i < copies; ++i) {
          actions[i] = static_cast<float>(2 * rng.Uniform() - 1);
        }
      });
  ASSERT_TRUE(random.ok()) << random.status();
  std::printf("seed %llu: policy sharpe %.3f, buy&hold %.3f, random %.3f\n",
              static_cast<unsigned long long>(GetParam().seed), trained.sharpe,
              trained.benchmark_sharpe, random->sharpe);
  EXPECT_GT(trained.sharpe, trained.benchmark_sharpe + 0.5);
  EXPECT_GT(trained.sharpe, random->sharpe + 0.5);
  EXPECT_GE(result->env_steps, o.budget_env_steps);
}

INSTANTIATE_TEST_SUITE_P(Seeds, TrainerLearningTest,
                         ::testing::Values(LearningCase{1}, LearningCase{2}),
                         [](const auto& test_info) {
                           return "seed" + std::to_string(test_info.param.seed);
                         });

}  // namespace
}  // namespace ristretto::learner
