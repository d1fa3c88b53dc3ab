// TorchScriptPolicy (learner/torch/policy_runner.h): an exported policy.pt
// run as an ActionFunction gives the model's deterministic actions
// tanh(mean), batch by batch; files of the wrong shape or kind are refused
// at load; forward passes are counted and timed; played through
// EvaluateActions it matches the in-memory model's evaluation exactly.
#include "learner/torch/policy_runner.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/contract.h"
#include "learner/evaluation.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/trainer.h"
#include "tests/learner/torch/learner_test_util.h"

namespace ristretto::learner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::kActions;
using testing::kObs;
using testing::SmallNetwork;

class PolicyRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ristretto-policy-runner-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A model with non-trivial observation statistics and outputs, exported
  // to `dir`.
  static ActorCritic ExportedModel(int obs, int actions,
                                   const std::string& dir) {
    torch::manual_seed(3);
    ActorCritic model(obs, actions, SmallNetwork());
    model->UpdateObservationStats(torch::randn({64, obs}) * 2.0 + 1.0);
    {
      torch::NoGradGuard no_grad;
      model->policy_layers().back()->weight.mul_(50.0);
    }
    env::EnvOptions env;
    env.lookback = 1;
    std::vector<std::string> symbols;
    symbols.reserve(static_cast<size_t>(actions));
    for (int i = 0; i < actions; ++i)
      symbols.push_back("S" + std::to_string(i));
    const int features = (obs - 1 - actions) / actions;
    const PolicyContract contract = PolicyContract::Make(
        env, SmallNetwork(), symbols,
        std::vector<std::string>(static_cast<size_t>(features), "f"), "id");
    EXPECT_EQ(contract.obs_size, obs);
    EXPECT_TRUE(ExportPolicy(model, contract, dir).ok());
    return model;
  }

  fs::path root_;
};

TEST_F(PolicyRunnerTest, ActionsAreTheModelsDeterministicPolicy) {
  const std::string dir = (root_ / "policy").string();
  ActorCritic model = ExportedModel(kObs, kActions, dir);
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> policy =
      TorchScriptPolicy::Load(dir + "/policy.pt", kObs, kActions);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->forward_calls(), 0);  // the load check is not counted
  ActionFunction decide = (*policy)->AsActionFunction();
  for (int copies : {1, 7, 3}) {
    const torch::Tensor obs = torch::randn({copies, kObs}) * 3.0;
    std::vector<float> actions(static_cast<size_t>(copies) * kActions, 9.0f);
    decide(obs.data_ptr<float>(), copies, actions.data());
    torch::NoGradGuard no_grad;
    const torch::Tensor want = torch::tanh(model->PolicyMean(obs));
    double max_diff = 0, max_abs = 0;
    for (int b = 0; b < copies; ++b) {
      for (int a = 0; a < kActions; ++a) {
        const double w = want[b][a].item<double>();
        max_diff = std::max(max_diff, std::fabs(actions[b * kActions + a] - w));
        max_abs = std::max(max_abs, std::fabs(w));
      }
    }
    EXPECT_LT(max_diff, 1e-6) << copies << " copies";
    EXPECT_GT(max_abs, 0.05);  // not a trivial policy
  }
  EXPECT_TRUE((*policy)->status().ok());
  EXPECT_EQ((*policy)->forward_calls(), 3);
  EXPECT_GT((*policy)->forward_seconds(), 0.0);
}

TEST_F(PolicyRunnerTest, AnotherShapeIsRefusedAtLoadNamingBoth) {
  const std::string dir = (root_ / "policy").string();
  ExportedModel(kObs, kActions, dir);
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> more_obs =
      TorchScriptPolicy::Load(dir + "/policy.pt", kObs + 2, kActions);
  EXPECT_EQ(more_obs.status().code(), absl::StatusCode::kDataLoss);
  // One line naming the op's shapes, not the script's traceback.
  EXPECT_THAT(more_obs.status().message(),
              HasSubstr("forward pass failed: RuntimeError: The size of "
                        "tensor a (7) must match the size of tensor b (5)"));
  EXPECT_THAT(std::string(more_obs.status().message()),
              ::testing::Not(HasSubstr("\n")));
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> more_actions =
      TorchScriptPolicy::Load(dir + "/policy.pt", kObs, kActions + 1);
  EXPECT_EQ(more_actions.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(more_actions.status().message(),
              HasSubstr("maps [1, 5] to [1, 2] Float, expected [1, 3]"));
}

TEST_F(PolicyRunnerTest, MissingAndForeignFilesAreRefused) {
  EXPECT_EQ(TorchScriptPolicy::Load((root_ / "none.pt").string(), 5, 2)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  const fs::path junk = root_ / "junk.pt";
  std::ofstream(junk) << "not a TorchScript archive";
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> loaded =
      TorchScriptPolicy::Load(junk.string(), 5, 2);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr("not a TorchScript module"));
  EXPECT_EQ(TorchScriptPolicy::Load(junk.string(), 0, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(PolicyRunnerTest, PlaysLikeTheInMemoryModelThroughEvaluateActions) {
  env::SyntheticMarketOptions synth;
  synth.num_assets = 2;
  synth.num_rows = 400;
  synth.seed = 2;
  auto dataset = env::GenerateSyntheticDataset(synth);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  auto market = env::MarketData::FromDataset(*dataset);
  ASSERT_TRUE(market.ok()) << market.status();
  env::EnvOptions env;
  env.lookback = 1;
  const int obs = 1 + 2 + static_cast<int>((*market)->num_features);
  const std::string dir = (root_ / "market-policy").string();
  ActorCritic model = ExportedModel(obs, 2, dir);
  absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> policy =
      TorchScriptPolicy::Load(dir + "/policy.pt", obs, 2);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<env::Domain> domains = {{10, 200}, {220, 330}};
  absl::StatusOr<EvaluationResult> in_memory =
      EvaluatePolicy(model, *market, env, domains);
  absl::StatusOr<EvaluationResult> exported =
      EvaluateActions(*market, env, domains, (*policy)->AsActionFunction());
  ASSERT_TRUE(in_memory.ok()) << in_memory.status();
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_TRUE((*policy)->status().ok());
  EXPECT_GT(exported->trades, 0);
  EXPECT_EQ(exported->trades, in_memory->trades);
  EXPECT_NEAR(exported->sharpe, in_memory->sharpe, 1e-6);
  EXPECT_NEAR(exported->total_return, in_memory->total_return, 1e-6);
  // Both copies share a forward pass per step until the shorter finishes.
  EXPECT_EQ((*policy)->forward_calls(), 200 - 10 - 2);
}

}  // namespace
}  // namespace ristretto::learner
