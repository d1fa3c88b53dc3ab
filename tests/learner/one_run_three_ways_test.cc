// One description of a run, three ways in, the same options:
//   * `ristretto train`: its run-option flags through RunOptionsFromFlags,
//     the device from --device;
//   * the stand-alone `ristretto-learner`: the same flags through
//     StandaloneRunsFromFlags (learner_main.cc's path), run 0;
//   * a coordinated learner: the study's run built by the coordinator
//     (BuildRunOptions), sent in the lease as a RunConfig
//     (TrainerOptionsToRunConfig) and decoded by the learner's
//     CoordinatorAgent (TrainerOptionsFromRunConfig), which sets the device
//     and the CPU threads.
// Every schema option is compared through GetRunOption (an option added to
// the schema is compared without touching this test), plus the hidden
// layers, the device and the samples per update (the stand-alone learner's
// --samples-per-update default against a study run's num_envs x
// rollout_steps).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/options_schema.h"
#include "coordinator/core/study_config.h"
#include "gtest/gtest.h"
#include "learner/run_config_codec.h"
#include "learner/run_options.h"
#include "learner/standalone_run.h"

namespace ristretto::learner {
namespace {

using Flags = std::map<std::string, std::string>;

constexpr int64_t kRows = 4000;

StandaloneData Data() {
  StandaloneData d;
  d.num_rows = kRows;
  d.dataset_id = std::string(64, 'b');
  d.feature_names = {"close"};
  return d;
}

// `ristretto train`.
TrainerOptions ViaTrain(const Flags& flags) {
  absl::StatusOr<TrainerOptions> o = RunOptionsFromFlags(flags);
  EXPECT_TRUE(o.ok()) << o.status();
  if (!o.ok()) return {};
  o->ppo.device = "cpu";
  return *o;
}

// The stand-alone learner: the options of its run 0 and its samples per
// update.
std::pair<TrainerOptions, int64_t> ViaStandalone(const Flags& flags) {
  StandaloneFlags f;
  f.run_flags = flags;
  f.device = "cpu";
  absl::StatusOr<StandaloneRuns> runs = StandaloneRunsFromFlags(f, Data());
  EXPECT_TRUE(runs.ok()) << runs.status();
  if (!runs.ok()) return {};
  return {StandaloneRunOptions(*runs, 0), runs->samples_per_update};
}

coordinator::StudyConfig HoldoutStudy(
    std::map<std::string, std::string> fixed) {
  coordinator::StudyConfig s;
  s.name = "three-ways";
  s.dataset.synthetic = true;
  s.cv.scheme = "holdout";
  s.cv.validation_fraction = 0.25;
  s.budget_env_steps = TrainerOptions().budget_env_steps;
  s.lockbox.bars = 200;
  s.fixed = std::move(fixed);
  return s;
}

// The coordinated learner: what the CoordinatorAgent decodes from the lease
// (cpu_threads: the learner process's --threads, 1 by default).
TrainerOptions ViaLease(const coordinator::StudyConfig& study,
                        int cpu_threads = 1) {
  coordinator::DatasetInfo d;
  d.id = std::string(64, 'b');
  d.num_rows = kRows;
  d.domains = {env::Domain{0, kRows}};
  d.feature_names = {"close"};
  absl::StatusOr<std::vector<TrainerOptions>> runs =
      coordinator::BuildRunOptions(study, {}, d);
  EXPECT_TRUE(runs.ok()) << runs.status();
  if (!runs.ok() || runs->empty()) return {};
  const v1::RunConfig lease = TrainerOptionsToRunConfig(runs->front());
  absl::StatusOr<TrainerOptions> o = TrainerOptionsFromRunConfig(lease);
  EXPECT_TRUE(o.ok()) << o.status();
  if (!o.ok()) return {};
  o->ppo.device = "cpu";
  o->ppo.cpu_threads = cpu_threads;
  return *o;
}

// Every schema option but the seed (a study derives one per run; flags
// give it directly), the exact hidden layers and the device.
void ExpectSameRun(const TrainerOptions& a, const TrainerOptions& b,
                   const std::string& ways) {
  for (const OptionSpec& spec : kOptionSchema) {
    if (spec.name == "seed") continue;
    const std::string name(spec.name);
    absl::StatusOr<std::string> va = GetRunOption(name, a);
    absl::StatusOr<std::string> vb = GetRunOption(name, b);
    ASSERT_TRUE(va.ok() && vb.ok()) << name;
    EXPECT_EQ(*va, *vb) << name << " (" << ways << ")";
  }
  EXPECT_EQ(a.network.policy_hidden, b.network.policy_hidden) << ways;
  EXPECT_EQ(a.network.value_hidden, b.network.value_hidden) << ways;
  EXPECT_EQ(a.ppo.device, b.ppo.device) << ways;
}

void ExpectSameThreeWays(const Flags& flags,
                         const coordinator::StudyConfig& study) {
  const TrainerOptions train = ViaTrain(flags);
  const auto [standalone, samples_per_update] = ViaStandalone(flags);
  const TrainerOptions leased = ViaLease(study);
  ExpectSameRun(train, standalone, "train vs stand-alone");
  ExpectSameRun(train, leased, "train vs lease");
  ExpectSameRun(standalone, leased, "stand-alone vs lease");
  EXPECT_EQ(train.seed, standalone.seed);
  // CoordinatorAgent: samples per update = num_envs x rollout_steps.
  EXPECT_EQ(samples_per_update,
            int64_t{leased.num_envs} * leased.rollout_steps);
}

TEST(OneRunThreeWaysTest, TheDefaultsAreTheSameThreeWays) {
  ExpectSameThreeWays({}, HoldoutStudy({}));
  const auto [standalone, samples_per_update] = ViaStandalone({});
  // The stand-alone learner's own defaults used to differ (64,64 nets,
  // 4 epochs, minibatch 1024): now the schema's.
  EXPECT_EQ(standalone.network.policy_hidden, (std::vector<int>{512, 512}));
  EXPECT_EQ(standalone.ppo.epochs, 10);
  EXPECT_EQ(standalone.ppo.minibatch_size, 2048);
  EXPECT_EQ(samples_per_update, 8 * 128);
}

TEST(OneRunThreeWaysTest, TheSameSmallRunThreeWays) {
  // A float, an int and a choice, the layers, the lookback, the budget and
  // the samples per update (envs x rollout).
  ExpectSameThreeWays({{"lr", "0.001"},
                       {"epochs", "3"},
                       {"reward", "log_return"},
                       {"policy-hidden", "32,32"},
                       {"lookback", "2"},
                       {"budget", "5000"},
                       {"envs", "2"},
                       {"rollout", "16"},
                       {"minibatch", "64"},
                       {"gamma", "0.9"}},
                      HoldoutStudy({{"learning_rate", "0.001"},
                                    {"epochs", "3"},
                                    {"reward_mode", "log_return"},
                                    {"width", "32"},
                                    {"lookback", "2"},
                                    {"budget", "5000"},
                                    {"num_envs", "2"},
                                    {"rollout_steps", "16"},
                                    {"batch_size", "64"},
                                    {"gamma", "0.9"}}));
  const auto [standalone, samples_per_update] =
      ViaStandalone({{"policy-hidden", "32,32"},
                     {"envs", "2"},
                     {"rollout", "16"},
                     {"gamma", "0.9"}});
  EXPECT_EQ(standalone.network.value_hidden, (std::vector<int>{32, 32}));
  EXPECT_EQ(samples_per_update, 32);
  EXPECT_EQ(standalone.env.gamma, 0.9);  // one discount: the env's too
}

TEST(OneRunThreeWaysTest, ADifferenceIsSeen) {
  // The comparison is not vacuous: one option changed one way shows.
  const TrainerOptions a = ViaStandalone({{"epochs", "3"}}).first;
  const TrainerOptions b = ViaLease(HoldoutStudy({{"epochs", "4"}}));
  EXPECT_NE(*GetRunOption("epochs", a), *GetRunOption("epochs", b));
}

TEST(StandaloneRunTest, RunKIsSeededSeedPlusKAndSharesEverythingElse) {
  StandaloneFlags f;
  f.run_flags = {{"seed", "40"}, {"policy-hidden", "16"}};
  absl::StatusOr<StandaloneRuns> runs = StandaloneRunsFromFlags(f, Data());
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(StandaloneRunOptions(*runs, 0).seed, 40u);
  EXPECT_EQ(StandaloneRunOptions(*runs, 2).seed, 42u);
  EXPECT_EQ(StandaloneRunOptions(*runs, 2).network.policy_hidden,
            (std::vector<int>{16}));
}

TEST(StandaloneRunTest, TheLastShareOfTheRowsValidates) {
  StandaloneFlags f;
  f.validation_share = 0.25;
  f.eval_every = 500;
  f.samples_per_update = 4096;
  f.device = "cuda:1";
  absl::StatusOr<StandaloneRuns> runs = StandaloneRunsFromFlags(f, Data());
  ASSERT_TRUE(runs.ok()) << runs.status();
  const TrainerOptions& o = runs->trainer;
  ASSERT_EQ(o.train_domains.size(), 1u);
  ASSERT_EQ(o.validation_domains.size(), 1u);
  EXPECT_EQ(o.train_domains[0].begin, 0);
  EXPECT_EQ(o.train_domains[0].end, 3000);
  EXPECT_EQ(o.validation_domains[0].begin, 3000);
  EXPECT_EQ(o.validation_domains[0].end, kRows);
  EXPECT_EQ(o.eval_every_env_steps, 500);
  EXPECT_EQ(o.ppo.device, "cuda:1");
  EXPECT_EQ(o.dataset_id, Data().dataset_id);
  EXPECT_EQ(o.feature_names, Data().feature_names);
  EXPECT_EQ(runs->samples_per_update, 4096);  // given: not envs x rollout
}

TEST(StandaloneRunTest, BadFlagsAreRefusedNamingTheFlag) {
  auto error = [](const StandaloneFlags& f) {
    absl::StatusOr<StandaloneRuns> runs = StandaloneRunsFromFlags(f, Data());
    EXPECT_FALSE(runs.ok());
    EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(runs.status().message());
  };
  StandaloneFlags f;
  f.run_flags = {{"budget", "x9"}};
  EXPECT_NE(error(f).find("--budget expects an integer, got 'x9'"),
            std::string::npos);
  f.run_flags = {{"epochs", "0"}};
  EXPECT_NE(error(f).find("--epochs"), std::string::npos);
  f.run_flags = {};
  f.samples_per_update = 0;
  EXPECT_NE(error(f).find("--samples-per-update"), std::string::npos);
  f.samples_per_update.reset();
  for (double share : {0.0, 1.0, -0.5}) {
    f.validation_share = share;
    EXPECT_NE(error(f).find("--validation-share"), std::string::npos);
  }
  f.validation_share = 0.5;
  f.eval_every = -1;
  EXPECT_NE(error(f).find("--eval-every"), std::string::npos);
}

TEST(StandaloneRunTest, TheFlagsAreCheckedWithoutAMarket) {
  StandaloneFlags f;
  EXPECT_TRUE(CheckStandaloneFlags(f).ok());
  f.validation_share = 1.5;
  EXPECT_EQ(CheckStandaloneFlags(f).code(), absl::StatusCode::kInvalidArgument);
  f.validation_share = 0.5;
  f.run_flags = {{"lr", "2"}};
  EXPECT_NE(CheckStandaloneFlags(f).message().find("--lr"),
            absl::string_view::npos);
  // A share that leaves no row on one side needs the market to be seen.
  f.run_flags = {};
  f.validation_share = 1e-9;
  EXPECT_TRUE(CheckStandaloneFlags(f).ok());
  const absl::Status no_rows = StandaloneRunsFromFlags(f, Data()).status();
  EXPECT_EQ(no_rows.code(), absl::StatusCode::kInvalidArgument) << no_rows;
}

TEST(RunFlagsHelpTest, ListsEveryRunFlagWithTheSchemasDefault) {
  const std::string help = RunFlagsHelp();
  for (const std::string& flag : RunFlagNames()) {
    EXPECT_NE(help.find("  --" + flag + " (default: "), std::string::npos)
        << flag;
  }
  EXPECT_NE(help.find("--epochs (default: 10, in [1, 1000]"), std::string::npos)
      << help;
  EXPECT_NE(help.find("--policy-hidden (default: 512,512)"), std::string::npos)
      << help;
  EXPECT_NE(help.find("--reward (default: log_return, one of "),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("--action-model (default: weights, one of "),
            std::string::npos)
      << help;
}

}  // namespace
}  // namespace ristretto::learner
