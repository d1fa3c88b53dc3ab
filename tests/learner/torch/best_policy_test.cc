// A run keeps its best policy (by the study objective), not only its last:
// Train and RunHost save <run_dir>/best/ at every better evaluation, re-read
// it on resume, export it; runs that break the lockbox are refused before
// training.
#include <torch/script.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/file_util.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/evaluation.h"
#include "learner/objective.h"
#include "learner/service/run_host.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/trainer.h"
#include "learner_test_util.h"

namespace ristretto::learner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class BestPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env::SyntheticMarketOptions synth;
    synth.num_assets = 2;
    synth.num_rows = 700;
    synth.seed = 4;
    auto dataset = env::GenerateSyntheticDataset(synth);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    dataset_ = *dataset;
    auto market = env::MarketData::FromDataset(dataset_);
    ASSERT_TRUE(market.ok());
    market_ = *market;
    char tmpl[] = "/tmp/ristretto_best_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainerOptions SmallOptions() const {
    TrainerOptions o;
    o.env.lookback = 2;
    o.network.policy_hidden = {16};
    o.network.value_hidden = {16};
    o.ppo.epochs = 2;
    o.ppo.minibatch_size = 64;
    o.ppo.learning_rate = 3e-3;
    o.num_envs = 4;
    o.rollout_steps = 32;  // 128 env steps per update
    o.episode_steps = 100;
    o.budget_env_steps = 1024;
    o.eval_every_env_steps = 128;
    o.seed = 3;
    const int64_t T = market_->num_rows;
    o.train_domains = {env::Domain{0, T / 2}};
    o.validation_domains = {env::Domain{T / 2, T}};
    o.dataset_id = dataset_.ComputeId();
    o.feature_names = dataset_.feature_names;
    return o;
  }

  int ObsSize(const TrainerOptions& o) const {
    return static_cast<int>(1 + market_->num_assets +
                            market_->num_features * o.env.lookback);
  }

  // The first evaluation with the highest score.
  static EvaluationResult BestOf(const std::vector<EvaluationResult>& all) {
    EvaluationResult best = all.front();
    for (const EvaluationResult& e : all) {
      if (e.score > best.score) best = e;
    }
    return best;
  }

  static EvaluationResult ReadEvaluation(const std::string& path) {
    absl::StatusOr<std::string> text = ReadFileToString(path);
    EXPECT_TRUE(text.ok()) << text.status();
    absl::StatusOr<EvaluationResult> e =
        EvaluationFromJson(text.ok() ? *text : "");
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *e : EvaluationResult{};
  }

  // Runs a TorchScript policy on fixed observations.
  static torch::Tensor Act(const std::string& policy_pt, int obs_size) {
    torch::jit::Module m = torch::jit::load(policy_pt);
    torch::manual_seed(5);
    const torch::Tensor obs = torch::randn({16, obs_size});
    return m.forward({obs}).toTensor();
  }

  env::Dataset dataset_;
  std::shared_ptr<const env::MarketData> market_;
  std::string dir_;
};

TEST_F(BestPolicyTest, TrainKeepsTheBestEvaluationsPolicy) {
  TrainerOptions o = SmallOptions();
  o.run_dir = RunDirectory(dir_, "study", "trial-0", 0);
  absl::StatusOr<TrainResult> r = Train(market_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->evaluations.size(), 8u);
  for (const EvaluationResult& e : r->evaluations) {
    EXPECT_EQ(e.score, ObjectiveValue(o.objective, e));  // sharpe
    EXPECT_EQ(static_cast<int64_t>(e.log_returns.size()), e.steps);
  }
  const EvaluationResult want = BestOf(r->evaluations);
  ASSERT_TRUE(r->best_evaluation.has_value());
  EXPECT_EQ(r->best_evaluation->score, want.score);
  EXPECT_EQ(r->best_evaluation->at_env_steps, want.at_env_steps);
  EXPECT_EQ(r->best_policy_dir, o.run_dir + "/best");

  const EvaluationResult stored =
      ReadEvaluation(o.run_dir + "/best/evaluation.json");
  EXPECT_EQ(stored.score, want.score);
  EXPECT_EQ(stored.sharpe, want.sharpe);
  EXPECT_EQ(stored.at_env_steps, want.at_env_steps);
  EXPECT_EQ(stored.turnover, want.turnover);
  EXPECT_EQ(stored.exposure, want.exposure);
  EXPECT_EQ(stored.log_returns, want.log_returns);
  const torch::Tensor a = Act(o.run_dir + "/best/policy.pt", ObsSize(o));
  EXPECT_EQ(a.sizes(), torch::IntArrayRef({16, 2}));
  EXPECT_TRUE(fs::exists(o.run_dir + "/best/contract.json"));
  // The last checkpoint stays for resuming; nothing temporary is left.
  EXPECT_EQ(r->last_checkpoint, o.run_dir + "/step-000000001024");
  for (const auto& entry : fs::directory_iterator(o.run_dir)) {
    EXPECT_NE(entry.path().filename().string()[0], '.') << entry.path();
  }

  // Exported: a copy of best/, with the evaluation it came from.
  absl::StatusOr<std::optional<EvaluationResult>> exported =
      ExportBestPolicy(*r, dir_ + "/export");
  ASSERT_TRUE(exported.ok()) << exported.status();
  ASSERT_TRUE(exported->has_value());
  EXPECT_EQ((*exported)->at_env_steps, want.at_env_steps);
  EXPECT_TRUE(torch::equal(Act(dir_ + "/export/policy.pt", ObsSize(o)), a));
  EXPECT_EQ(ReadEvaluation(dir_ + "/export/evaluation.json").score, want.score);

  // Without a run_dir the same (deterministic) run keeps the best weights
  // in memory and exports the same policy.
  TrainerOptions no_dir = SmallOptions();
  absl::StatusOr<TrainResult> m = Train(market_, no_dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->best_policy_dir.empty());
  ASSERT_TRUE(m->best_evaluation.has_value());
  EXPECT_EQ(m->best_evaluation->at_env_steps, want.at_env_steps);
  absl::StatusOr<std::optional<EvaluationResult>> from_memory =
      ExportBestPolicy(*m, dir_ + "/memory");
  ASSERT_TRUE(from_memory.ok()) << from_memory.status();
  EXPECT_LT((Act(dir_ + "/memory/policy.pt", ObsSize(o)) - a)
                .abs()
                .max()
                .item<double>(),
            1e-6);
}

TEST_F(BestPolicyTest, ObjectiveChoosesTheBestAndUnknownOnesAreRefused) {
  TrainerOptions o = SmallOptions();
  o.budget_env_steps = 512;
  o.objective = kReturnObjective;
  absl::StatusOr<TrainResult> r = Train(market_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const EvaluationResult& e : r->evaluations) {
    EXPECT_EQ(e.score, e.total_return);
  }
  EXPECT_EQ(r->best_evaluation->score, BestOf(r->evaluations).total_return);

  o.objective = "profit";
  EXPECT_EQ(Train(market_, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(BestPolicyTest, ResumedTrainRereadsTheBestSoFar) {
  TrainerOptions o = SmallOptions();
  o.run_dir = RunDirectory(dir_, "study", "trial-0", 0);
  o.budget_env_steps = 512;
  absl::StatusOr<TrainResult> first = Train(market_, o);
  ASSERT_TRUE(first.ok()) << first.status();
  o.budget_env_steps = 1024;
  absl::StatusOr<TrainResult> second = Train(market_, o);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->evaluations.size(), 4u);
  EXPECT_EQ(second->evaluations.front().at_env_steps, 640);
  std::vector<EvaluationResult> all = first->evaluations;
  all.insert(all.end(), second->evaluations.begin(), second->evaluations.end());
  const EvaluationResult want = BestOf(all);
  ASSERT_TRUE(second->best_evaluation.has_value());
  EXPECT_EQ(second->best_evaluation->score, want.score);
  EXPECT_EQ(second->best_evaluation->at_env_steps, want.at_env_steps);
  EXPECT_EQ(ReadEvaluation(o.run_dir + "/best/evaluation.json").at_env_steps,
            want.at_env_steps);

  // Starting over (resume off) forgets it.
  o.resume = false;
  o.validation_domains.clear();
  absl::StatusOr<TrainResult> fresh = Train(market_, o);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->best_evaluation.has_value());
  EXPECT_FALSE(fs::exists(o.run_dir + "/best"));
  // Without an evaluation the export falls back to the final weights.
  absl::StatusOr<std::optional<EvaluationResult>> exported =
      ExportBestPolicy(*fresh, dir_ + "/export");
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_FALSE(exported->has_value());
  EXPECT_TRUE(fs::exists(dir_ + "/export/policy.pt"));
}

TEST_F(BestPolicyTest, BestReplacementSurvivesAnInterruptedSwap) {
  const std::string run_dir = dir_ + "/run";
  torch::manual_seed(1);
  ActorCritic model(ObsSize(SmallOptions()), 2, SmallOptions().network);
  const PolicyContract contract =
      PolicyContract::Make(SmallOptions().env, SmallOptions().network,
                           {"A", "B"}, dataset_.feature_names, "d");
  EvaluationResult e;
  e.score = 1.0;
  e.at_env_steps = 100;
  ASSERT_TRUE(SaveBestPolicy(run_dir, model, contract, e, "sharpe").ok());
  e.score = 2.0;
  e.at_env_steps = 200;
  ASSERT_TRUE(SaveBestPolicy(run_dir, model, contract, e, "sharpe").ok());
  absl::StatusOr<EvaluationResult> read = ReadBestEvaluation(run_dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->at_env_steps, 200);

  // A crash after best/ was moved aside, before the new one arrived: the
  // old one comes back; a half-written temporary directory is discarded.
  fs::rename(run_dir + "/best", run_dir + "/.best.old");
  fs::create_directories(run_dir + "/.best.tmp-99");
  std::ofstream(run_dir + "/.best.tmp-99/policy.pt") << "half";
  read = ReadBestEvaluation(run_dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->at_env_steps, 200);
  EXPECT_FALSE(fs::exists(run_dir + "/.best.old"));
  EXPECT_FALSE(fs::exists(run_dir + "/.best.tmp-99"));
  // A crash after the new one arrived: the old copy is dropped.
  fs::create_directories(run_dir + "/.best.old");
  read = ReadBestEvaluation(run_dir);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->at_env_steps, 200);
  EXPECT_FALSE(fs::exists(run_dir + "/.best.old"));

  ASSERT_TRUE(RemoveBestPolicy(run_dir).ok());
  EXPECT_EQ(ReadBestEvaluation(run_dir).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(BestPolicyTest, CvRunValidatingInsideTheLockboxIsRefused) {
  TrainerOptions o = SmallOptions();
  o.run_dir = RunDirectory(dir_, "study", "trial-0", 0);
  const int64_t T = market_->num_rows;
  o.lockbox_begin = T - 100;
  o.lockbox_guard = T - 110;
  o.train_domains = {env::Domain{0, T / 2}};
  o.validation_domains = {env::Domain{T / 2, T}};  // reaches the lockbox
  absl::StatusOr<TrainResult> r = Train(market_, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("lockbox"));
  EXPECT_FALSE(fs::exists(o.run_dir));  // refused before any training

  RunSpec spec;
  spec.run_id = "cv";
  spec.trainer = o;
  absl::StatusOr<std::unique_ptr<RunHost>> host =
      RunHost::Create(spec, market_);
  EXPECT_EQ(host.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(o.run_dir));

  // Validating before the guard is fine.
  o.validation_domains = {env::Domain{T / 2, T - 110}};
  o.budget_env_steps = 128;
  EXPECT_TRUE(Train(market_, o).ok());
}

TEST_F(BestPolicyTest, FinalRunEvaluatesTheLockboxOnceAtTheEnd) {
  TrainerOptions o = SmallOptions();
  o.run_dir = RunDirectory(dir_, "study", "trial-0-final", 0);
  const int64_t T = market_->num_rows;
  o.lockbox_begin = T - 100;
  o.lockbox_guard = T - 110;
  o.final_evaluation = true;
  o.eval_every_env_steps = 0;
  o.budget_env_steps = 256;
  o.train_domains = {env::Domain{0, T - 110}};
  o.validation_domains = {env::Domain{T - 100, T}};
  absl::StatusOr<TrainResult> r = Train(market_, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->evaluations.size(), 1u);
  EXPECT_EQ(r->evaluations[0].at_env_steps, 256);
  ASSERT_TRUE(r->best_evaluation.has_value());
  EXPECT_EQ(r->best_evaluation->at_env_steps, 256);
  EXPECT_EQ(r->best_evaluation->score, r->evaluations[0].score);
  EXPECT_TRUE(fs::exists(o.run_dir + "/best/policy.pt"));

  // Evaluating it during training would be refused.
  o.eval_every_env_steps = 128;
  EXPECT_EQ(Train(market_, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(BestPolicyTest, RunHostKeepsTheBestAndRereadsItOnResume) {
  RunSpec spec;
  spec.run_id = "host";
  spec.trainer = SmallOptions();
  spec.trainer.run_dir = dir_ + "/host";
  spec.trainer.budget_env_steps = 256;
  spec.trainer.eval_every_env_steps = 64;
  spec.trainer.ppo.max_policy_lag = 8;
  spec.samples_per_update = 64;
  spec.queue_capacity = 8;
  absl::Mutex mu;
  std::vector<EvaluationResult> seen;
  spec.on_evaluation = [&](const EvaluationResult& e) {
    absl::MutexLock lock(&mu);
    seen.push_back(e);
  };
  const int D = ObsSize(spec.trainer);
  {
    absl::StatusOr<std::unique_ptr<RunHost>> host =
        RunHost::Create(spec, market_);
    ASSERT_TRUE(host.ok()) << host.status();
    for (int k = 0; k < 4; ++k) {
      absl::Status s =
          (*host)->Ingest(testing::MakeChunk(0, 16, 4, 10 + k, D), [] {});
      ASSERT_TRUE(s.ok()) << s;
    }
    ASSERT_TRUE((*host)->WaitFinished(60000));
    ASSERT_TRUE((*host)->failure().ok()) << (*host)->failure();
    absl::MutexLock lock(&mu);
    ASSERT_EQ(seen.size(), 4u);
    const EvaluationResult want = BestOf(seen);
    std::optional<EvaluationResult> best = (*host)->best_evaluation();
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(best->score, want.score);
    EXPECT_EQ(best->at_env_steps, want.at_env_steps);
    EXPECT_EQ((*host)->best_policy_dir(), spec.trainer.run_dir + "/best");
    EXPECT_EQ(
        ReadEvaluation(spec.trainer.run_dir + "/best/evaluation.json").score,
        want.score);
    EXPECT_EQ(Act(spec.trainer.run_dir + "/best/policy.pt", D).size(1), 2);
  }
  // A restarted learner re-reads the best so far from best/.
  spec.on_evaluation = nullptr;
  absl::StatusOr<std::unique_ptr<RunHost>> again =
      RunHost::Create(spec, market_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)->counters().finished);
  std::optional<EvaluationResult> best = (*again)->best_evaluation();
  ASSERT_TRUE(best.has_value());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(best->score, BestOf(seen).score);
  EXPECT_EQ(best->log_returns, BestOf(seen).log_returns);
  EXPECT_EQ((*again)->best_policy_dir(), spec.trainer.run_dir + "/best");
}

}  // namespace
}  // namespace ristretto::learner
