#include "learner/torch/checkpoint.h"

#include <stdlib.h>
#include <sys/mount.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/contract.h"
#include "learner/torch/ppo.h"
#include "learner/trajectory.h"
#include "tests/learner/torch/learner_test_util.h"

namespace ristretto::learner {
namespace {

using testing::kActions;
using testing::kObs;
using testing::SmallNetwork;
using testing::SmallPpo;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// 2 assets × 1 feature, lookback 1: obs_size = 1 + 2 + 2·1·1 = 5, 2 actions.
PolicyContract MakeContract(const NetworkOptions& net = SmallNetwork()) {
  env::EnvOptions env;
  env.lookback = 1;
  return PolicyContract::Make(env, net, {"BTC", "ETH"}, {"rsi"}, "sha-test");
}

// Chunks with per-column offsets, so the observation statistics that a
// checkpoint must restore are non-trivial.
TrajectoryChunk MakeChunk(int64_t version, int steps, int copies,
                          uint64_t seed) {
  return testing::MakeChunk(version, steps, copies, seed, kObs, 0.5f);
}

std::unique_ptr<PpoLearner> MakeLearner(
    uint64_t seed, const NetworkOptions& net = SmallNetwork()) {
  absl::StatusOr<std::unique_ptr<PpoLearner>> learner =
      PpoLearner::Create(kObs, kActions, net, SmallPpo(), 0, seed);
  EXPECT_TRUE(learner.ok()) << learner.status();
  return learner.ok() ? std::move(*learner) : nullptr;
}

// A learner trained for two updates: non-trivial weights, observation
// statistics and Adam moments.
std::unique_ptr<PpoLearner> TrainedLearner(uint64_t seed) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(seed);
  if (!learner) return nullptr;
  for (int v = 0; v < 2; ++v) {
    absl::StatusOr<UpdateStats> s =
        learner->Update({MakeChunk(v, 4, 3, 100 + v)});
    EXPECT_TRUE(s.ok()) << s.status();
  }
  return learner;
}

CheckpointState StateOf(const PpoLearner& learner) {
  CheckpointState state;
  state.env_steps = learner.samples_consumed();
  state.policy_version = learner.version();
  state.samples_consumed = learner.samples_consumed();
  state.updates = learner.version();
  state.last_score = 0.1 + 1.0 / 3.0;  // needs all 17 digits to round-trip
  return state;
}

void ExpectSameModel(ActorCritic& a, ActorCritic& b) {
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) {
    EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
  }
  const auto ba = a->named_buffers();
  const auto bb = b->named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (const auto& item : ba) {
    EXPECT_TRUE(torch::equal(item.value(), bb[item.key()])) << item.key();
  }
}

// Adam's per-parameter state (step, first and second moments), in parameter
// order.
void ExpectSameAdamState(PpoLearner& a, PpoLearner& b) {
  const std::vector<torch::Tensor> pa = a.model()->parameters();
  const std::vector<torch::Tensor> pb = b.model()->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto ia = a.optimizer().state().find(
        c10::guts::to_string(pa[i].unsafeGetTensorImpl()));
    const auto ib = b.optimizer().state().find(
        c10::guts::to_string(pb[i].unsafeGetTensorImpl()));
    ASSERT_NE(ia, a.optimizer().state().end()) << "parameter " << i;
    ASSERT_NE(ib, b.optimizer().state().end()) << "parameter " << i;
    const auto& sa =
        static_cast<const torch::optim::AdamParamState&>(*ia->second);
    const auto& sb =
        static_cast<const torch::optim::AdamParamState&>(*ib->second);
    EXPECT_EQ(sa.step(), sb.step()) << "parameter " << i;
    EXPECT_TRUE(torch::equal(sa.exp_avg(), sb.exp_avg())) << "parameter " << i;
    EXPECT_TRUE(torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq()))
        << "parameter " << i;
  }
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "ristretto-checkpoint-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    run_dir_ = RunDirectory(root_, "study", "trial", 0);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Names directly under run_dir_.
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(run_dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string root_;
  std::string run_dir_;
};

TEST(RunDirectoryTest, JoinsRootStudyTrialAndFold) {
  EXPECT_EQ(RunDirectory("root", "s", "t", 3), "root/s/t/fold-3");
  EXPECT_EQ(RunDirectory("/data/ckpt", "study-1", "trial-07", 0),
            "/data/ckpt/study-1/trial-07/fold-0");
}

TEST_F(CheckpointTest, LoadRestoresWeightsStatsOptimizerAndCounters) {
  std::unique_ptr<PpoLearner> saved = TrainedLearner(1);
  ASSERT_TRUE(saved);
  ASSERT_EQ(saved->version(), 2);
  ASSERT_EQ(saved->samples_consumed(), 24);
  const CheckpointState state = StateOf(*saved);
  absl::StatusOr<std::string> dir =
      SaveCheckpoint(run_dir_, MakeContract(), *saved, state);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, run_dir_ + "/step-000000000024");

  std::unique_ptr<PpoLearner> loaded = MakeLearner(2);  // other weights
  ASSERT_TRUE(loaded);
  ASSERT_FALSE(
      torch::equal(saved->model()->named_parameters()["policy0.weight"],
                   loaded->model()->named_parameters()["policy0.weight"]));
  absl::StatusOr<CheckpointState> restored =
      LoadCheckpoint(*dir, MakeContract(), loaded.get());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->env_steps, 24);
  EXPECT_EQ(restored->policy_version, 2);
  EXPECT_EQ(restored->samples_consumed, 24);
  EXPECT_EQ(restored->updates, 2);
  EXPECT_EQ(restored->last_score, state.last_score);
  EXPECT_EQ(loaded->version(), 2);
  EXPECT_EQ(loaded->samples_consumed(), 24);
  ExpectSameModel(saved->model(), loaded->model());
  EXPECT_EQ(loaded->model()->obs_count(), 24.0);
  ExpectSameAdamState(*saved, *loaded);

  // The next update is bit-identical. One sample (T = B = 1) makes the
  // minibatch order irrelevant: the learners' shuffling generators were
  // seeded differently and are not part of a checkpoint.
  const TrajectoryChunk next = MakeChunk(2, 1, 1, 300);
  absl::StatusOr<UpdateStats> a = saved->Update({next});
  absl::StatusOr<UpdateStats> b = loaded->Update({next});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->policy_loss, b->policy_loss);
  EXPECT_EQ(a->value_loss, b->value_loss);
  EXPECT_EQ(a->grad_norm, b->grad_norm);
  EXPECT_EQ(a->policy_version, 3);
  EXPECT_EQ(b->policy_version, 3);
  ExpectSameModel(saved->model(), loaded->model());
  ExpectSameAdamState(*saved, *loaded);
}

TEST_F(CheckpointTest, CheckpointFilesAreAllPresent) {
  std::unique_ptr<PpoLearner> learner = TrainedLearner(1);
  ASSERT_TRUE(learner);
  absl::StatusOr<std::string> dir =
      SaveCheckpoint(run_dir_, MakeContract(), *learner, StateOf(*learner));
  ASSERT_TRUE(dir.ok()) << dir.status();
  for (const char* file :
       {"model.pt", "optimizer.pt", "contract.json", "state.json"}) {
    EXPECT_TRUE(fs::is_regular_file(fs::path(*dir) / file)) << file;
  }
  absl::StatusOr<PolicyContract> contract = ReadCheckpointContract(*dir);
  ASSERT_TRUE(contract.ok()) << contract.status();
  EXPECT_EQ(contract->ToJson(), MakeContract().ToJson());
}

TEST_F(CheckpointTest, LatestPointsAtTheNewestAndKeepPrunesOlderOnes) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(1);
  ASSERT_TRUE(learner);
  CheckpointState state;
  for (int64_t steps : {12, 24, 36}) {
    state.env_steps = steps;
    absl::StatusOr<std::string> dir =
        SaveCheckpoint(run_dir_, MakeContract(), *learner, state, /*keep=*/2);
    ASSERT_TRUE(dir.ok()) << dir.status();
    absl::StatusOr<std::string> latest = LatestCheckpoint(run_dir_);
    ASSERT_TRUE(latest.ok()) << latest.status();
    EXPECT_EQ(*latest, *dir);
  }
  EXPECT_EQ(ReadText(fs::path(run_dir_) / "LATEST"), "step-000000000036\n");
  // No temporary directory or file is left behind.
  EXPECT_THAT(Entries(), ::testing::ElementsAre("LATEST", "step-000000000024",
                                                "step-000000000036"));
}

TEST_F(CheckpointTest, AnUnwritableRunDirectoryIsAnErrorNotACrash) {
  // A run directory that cannot be created (its parent is a file) stands
  // for any failing write: the save returns an error for the run, it never
  // throws on the training thread.
  std::unique_ptr<PpoLearner> learner = MakeLearner(1);
  ASSERT_TRUE(learner);
  fs::create_directories(run_dir_);
  const fs::path file = fs::path(run_dir_) / "a-file";
  std::ofstream(file) << "x";
  const std::string blocked = (file / "run").string();
  const absl::StatusOr<std::string> dir =
      SaveCheckpoint(blocked, MakeContract(), *learner, CheckpointState{});
  EXPECT_FALSE(dir.ok());
  EXPECT_THAT(std::string(dir.status().message()),
              ::testing::HasSubstr("a-file"));
  EXPECT_EQ(LatestCheckpoint(blocked).status().code(),
            absl::StatusCode::kNotFound);
}

// A real full file system: a 2 MiB tmpfs (mounting needs root, as in CI).
// LibTorch's own file writer threw from its destructor here (std::terminate,
// every run of the learner lost); now the save is a run error naming the
// errno, the previous checkpoint stays whole and loadable, and a save after
// space comes back works.
TEST_F(CheckpointTest, AFullDiskIsARunErrorAndTheLastCheckpointSurvives) {
  const fs::path mnt = fs::path(root_) / "tmpfs";
  fs::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=2m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs (needs root): "
                 << std::strerror(errno);
  }
  struct Unmount {
    fs::path dir;
    ~Unmount() { umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string run_dir = RunDirectory(mnt.string(), "s", "t", 0);
  std::unique_ptr<PpoLearner> learner = TrainedLearner(5);
  ASSERT_TRUE(learner);
  CheckpointState state = StateOf(*learner);
  state.env_steps = 100;
  const absl::StatusOr<std::string> first =
      SaveCheckpoint(run_dir, MakeContract(), *learner, state);
  ASSERT_TRUE(first.ok()) << first.status();

  // Fill the rest of the file system.
  const fs::path filler = mnt / "filler";
  {
    std::ofstream out(filler, std::ios::binary);
    const std::string block(64 * 1024, 'x');
    while (out.write(block.data(), block.size())) {
    }
  }
  state.env_steps = 200;
  const absl::StatusOr<std::string> second =
      SaveCheckpoint(run_dir, MakeContract(), *learner, state);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("No space left on device"));
  const absl::StatusOr<std::string> latest_or = LatestCheckpoint(run_dir);
  ASSERT_TRUE(latest_or.ok()) << latest_or.status();
  const std::string& latest = *latest_or;
  EXPECT_EQ(latest, *first);
  std::unique_ptr<PpoLearner> restored = MakeLearner(9);
  ASSERT_TRUE(restored);
  const absl::StatusOr<CheckpointState> loaded =
      LoadCheckpoint(latest, MakeContract(), restored.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->env_steps, 100);
  // No temporary directory is left behind to fill the disk further.
  for (const auto& e : fs::directory_iterator(run_dir)) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
  }
  const absl::Status exported =
      ExportPolicy(learner->model(), MakeContract(), (mnt / "export").string());
  EXPECT_EQ(exported.code(), absl::StatusCode::kResourceExhausted) << exported;

  // Space again: the next save works.
  fs::remove(filler);
  const absl::StatusOr<std::string> third =
      SaveCheckpoint(run_dir, MakeContract(), *learner, state);
  ASSERT_TRUE(third.ok()) << third.status();
  const absl::StatusOr<std::string> now = LatestCheckpoint(run_dir);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(*now, *third);
}

TEST_F(CheckpointTest, KeepOneLeavesOnlyTheNewest) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(1);
  ASSERT_TRUE(learner);
  CheckpointState state;
  for (int64_t steps : {5, 1000000}) {
    state.env_steps = steps;
    ASSERT_TRUE(
        SaveCheckpoint(run_dir_, MakeContract(), *learner, state, 1).ok());
  }
  EXPECT_THAT(Entries(), ::testing::ElementsAre("LATEST", "step-000001000000"));
}

TEST_F(CheckpointTest, MissingCheckpointIsNotFound) {
  EXPECT_EQ(LatestCheckpoint(run_dir_).status().code(),
            absl::StatusCode::kNotFound);
  fs::create_directories(run_dir_);
  EXPECT_EQ(LatestCheckpoint(run_dir_).status().code(),
            absl::StatusCode::kNotFound);
  std::unique_ptr<PpoLearner> learner = MakeLearner(1);
  ASSERT_TRUE(learner);
  EXPECT_EQ(LoadCheckpoint(run_dir_ + "/step-000000000001", MakeContract(),
                           learner.get())
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CheckpointTest, LatestNamingAMissingDirectoryIsDataLoss) {
  fs::create_directories(run_dir_);
  std::ofstream(fs::path(run_dir_) / "LATEST") << "step-000000000099\n";
  EXPECT_EQ(LatestCheckpoint(run_dir_).status().code(),
            absl::StatusCode::kDataLoss);
}

// Saves a trained learner and tries to load it where `expected` is required.
class ContractMismatchTest : public CheckpointTest {
 protected:
  void ExpectRefused(const PolicyContract& expected,
                     const std::string& message) {
    std::unique_ptr<PpoLearner> saved = TrainedLearner(1);
    ASSERT_TRUE(saved);
    absl::StatusOr<std::string> dir =
        SaveCheckpoint(run_dir_, MakeContract(), *saved, StateOf(*saved));
    ASSERT_TRUE(dir.ok()) << dir.status();
    std::unique_ptr<PpoLearner> target = MakeLearner(2);
    ASSERT_TRUE(target);
    const torch::Tensor before =
        target->model()->named_parameters()["policy0.weight"].clone();
    const absl::StatusOr<CheckpointState> s =
        LoadCheckpoint(*dir, expected, target.get());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message));
    // Nothing was loaded.
    EXPECT_TRUE(torch::equal(
        target->model()->named_parameters()["policy0.weight"], before));
    EXPECT_EQ(target->version(), 0);
  }
};

TEST_F(ContractMismatchTest, DifferentObsSizeIsRefusedNamingTheField) {
  PolicyContract expected = MakeContract();
  expected.obs_size = 6;
  ExpectRefused(
      expected,
      "contract mismatch: obs_size is 5 in the checkpoint but 6 here");
}

TEST_F(ContractMismatchTest, DifferentAssetOrderIsRefusedNamingTheField) {
  PolicyContract expected = MakeContract();
  expected.asset_symbols = {"ETH", "BTC"};
  ExpectRefused(expected,
                "contract mismatch: asset_symbols[0] is \"BTC\" in the "
                "checkpoint but \"ETH\" here");
}

TEST_F(ContractMismatchTest, DifferentHiddenSizesAreRefusedNamingTheField) {
  NetworkOptions net = SmallNetwork();
  net.policy_hidden = {32, 32};
  ExpectRefused(MakeContract(net),
                "contract mismatch: network.policy_hidden is [16,16] in the "
                "checkpoint but [32,32] here");
}

TEST_F(ContractMismatchTest, DifferentDatasetIsRefusedUnlessNotChecked) {
  PolicyContract expected = MakeContract();
  expected.dataset_id = "other";
  ExpectRefused(expected, "dataset_id");
  std::unique_ptr<PpoLearner> target = MakeLearner(3);
  ASSERT_TRUE(target);
  absl::StatusOr<std::string> dir = LatestCheckpoint(run_dir_);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_TRUE(LoadCheckpoint(*dir, expected, target.get(),
                             /*check_dataset=*/false)
                  .ok());
}

TEST_F(CheckpointTest, CorruptedModelFileIsDataLoss) {
  std::unique_ptr<PpoLearner> learner = TrainedLearner(1);
  ASSERT_TRUE(learner);
  absl::StatusOr<std::string> dir =
      SaveCheckpoint(run_dir_, MakeContract(), *learner, StateOf(*learner));
  ASSERT_TRUE(dir.ok()) << dir.status();
  {
    std::ofstream out(fs::path(*dir) / "model.pt",
                      std::ios::binary | std::ios::trunc);
    out << "this is not a zip archive of tensors";
  }
  std::unique_ptr<PpoLearner> target = MakeLearner(2);
  ASSERT_TRUE(target);
  EXPECT_EQ(LoadCheckpoint(*dir, MakeContract(), target.get()).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(CheckpointTest, CorruptedStateFileIsDataLoss) {
  std::unique_ptr<PpoLearner> learner = MakeLearner(1);
  ASSERT_TRUE(learner);
  absl::StatusOr<std::string> dir =
      SaveCheckpoint(run_dir_, MakeContract(), *learner, StateOf(*learner));
  ASSERT_TRUE(dir.ok()) << dir.status();
  std::ofstream(fs::path(*dir) / "state.json", std::ios::trunc)
      << "{\"env_steps\": 1}";
  EXPECT_EQ(LoadCheckpoint(*dir, MakeContract(), learner.get()).status().code(),
            absl::StatusCode::kDataLoss);
}

// Export on a model with non-trivial observation statistics (some
// observations land beyond ±obs_clip).
void ExpectExportMatchesPolicyMean(const NetworkOptions& net,
                                   const std::string& out_dir) {
  torch::manual_seed(8);
  ActorCritic model(kObs, kActions, net);
  torch::Tensor scale = torch::tensor({1.0f, 2.0f, 0.5f, 3.0f, 10.0f});
  torch::Tensor shift = torch::tensor({0.0f, -1.0f, 4.0f, 2.0f, 100.0f});
  model->UpdateObservationStats(torch::randn({64, kObs}) * scale + shift);
  // Perturb the last policy layer so the output is not tiny.
  {
    torch::NoGradGuard no_grad;
    model->policy_layers().back()->weight.mul_(100.0);
    model->policy_layers().back()->bias.fill_(0.1);
  }
  const PolicyContract contract = MakeContract(net);
  ASSERT_TRUE(ExportPolicy(model, contract, out_dir).ok());

  torch::jit::Module policy = torch::jit::load(out_dir + "/policy.pt");
  const torch::Tensor obs = torch::randn({32, kObs}) * scale * 4.0 + shift;
  const torch::Tensor got = policy.forward({obs}).toTensor();
  torch::NoGradGuard no_grad;
  const torch::Tensor want = torch::tanh(model->PolicyMean(obs));
  ASSERT_EQ(got.sizes(), torch::IntArrayRef({32, kActions}));
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-6);
  EXPECT_GT(want.abs().max().item<double>(), 0.05);  // a non-trivial policy

  absl::StatusOr<PolicyContract> read =
      PolicyContract::FromJson(ReadText(fs::path(out_dir) / "contract.json"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(CheckContract(contract, *read, /*check_dataset=*/true).ok());
  EXPECT_EQ(read->ToJson(), contract.ToJson());
  EXPECT_EQ(read->asset_symbols, contract.asset_symbols);
  EXPECT_EQ(read->network.policy_hidden, net.policy_hidden);
}

TEST_F(CheckpointTest, ExportedPolicyIsTanhOfTheNormalisedPolicyMean) {
  NetworkOptions net = SmallNetwork();
  net.obs_clip = 3.0;  // the ×4 test observations exceed it
  ExpectExportMatchesPolicyMean(net, root_ + "/export");
}

TEST_F(CheckpointTest, ExportedReluPolicyWithoutNormalisationMatchesToo) {
  NetworkOptions net;
  net.policy_hidden = {16, 8, 4};
  net.value_hidden = {16};
  net.activation = Activation::kRelu;
  net.normalize_observations = false;
  ExpectExportMatchesPolicyMean(net, root_ + "/export-relu");
}

}  // namespace
}  // namespace ristretto::learner
