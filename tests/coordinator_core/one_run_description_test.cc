// One description of a run: the same small run built the ways a run starts
// gets identical options.
//   * `ristretto train` and the stand-alone learner: process flags through
//     learner::RunOptionsFromFlags (train_command.cc calls it);
//   * a study's run on a coordinated learner: BuildRunOptions on the
//     coordinator, stored as runs.config_json (TrainerOptionsToConfigJson),
//     read back and sent as a typed v1::RunConfig (the coordinator ->
//     learner transport), TrainerOptionsFromRunConfig on the learner.
// Every schema option is compared through learner::GetRunOption, so an
// option added to the schema is compared without touching this test.
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

namespace ristretto::coordinator {
namespace {

StudyConfig HoldoutStudy(std::map<std::string, std::string> fixed) {
  StudyConfig s;
  s.name = "one-run";
  s.dataset.synthetic = true;
  s.cv.scheme = "holdout";
  s.cv.validation_fraction = 0.25;
  s.budget_env_steps = learner::TrainerOptions().budget_env_steps;
  s.lockbox.bars = 200;
  s.fixed = std::move(fixed);
  return s;
}

DatasetInfo Data() {
  DatasetInfo d;
  d.id = std::string(64, 'b');
  d.num_rows = 4000;
  d.domains = {env::Domain{0, 4000}};
  d.feature_names = {"close"};
  return d;
}

// The coordinated learner's options: built by the coordinator, stored,
// read back from the store and leased as a RunConfig, read by the learner.
learner::TrainerOptions Coordinated(const StudyConfig& study) {
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(study, {}, Data());
  EXPECT_TRUE(runs.ok()) << runs.status();
  if (!runs.ok() || runs->empty()) return {};
  absl::StatusOr<std::string> stored =
      learner::TrainerOptionsToConfigJson(runs->front());
  EXPECT_TRUE(stored.ok()) << stored.status();
  if (!stored.ok()) return {};
  absl::StatusOr<learner::TrainerOptions> leased =
      learner::TrainerOptionsFromConfigJson(*stored);
  EXPECT_TRUE(leased.ok()) << leased.status();
  if (!leased.ok()) return {};
  absl::StatusOr<learner::TrainerOptions> received =
      learner::TrainerOptionsFromRunConfig(
          learner::TrainerOptionsToRunConfig(*leased));
  EXPECT_TRUE(received.ok()) << received.status();
  return received.ok() ? *received : learner::TrainerOptions{};
}

learner::TrainerOptions FromFlags(
    const std::map<std::string, std::string>& flags) {
  absl::StatusOr<learner::TrainerOptions> o =
      learner::RunOptionsFromFlags(flags);
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *o : learner::TrainerOptions{};
}

// Every schema option but the seed (a study derives one per run; flags
// give it directly), and the exact hidden layers.
void ExpectSameRun(const learner::TrainerOptions& a,
                   const learner::TrainerOptions& b) {
  for (const OptionSpec& spec : kOptionSchema) {
    if (spec.name == "seed") continue;
    const std::string name(spec.name);
    absl::StatusOr<std::string> va = learner::GetRunOption(name, a);
    absl::StatusOr<std::string> vb = learner::GetRunOption(name, b);
    ASSERT_TRUE(va.ok() && vb.ok()) << name;
    EXPECT_EQ(*va, *vb) << name;
  }
  EXPECT_EQ(a.network.policy_hidden, b.network.policy_hidden);
  EXPECT_EQ(a.network.value_hidden, b.network.value_hidden);
  EXPECT_EQ(a.ppo.device, b.ppo.device);
}

TEST(OneRunDescriptionTest, DefaultsAreTheSameEveryWay) {
  const learner::TrainerOptions flags = FromFlags({});
  const learner::TrainerOptions coordinated = Coordinated(HoldoutStudy({}));
  ExpectSameRun(flags, coordinated);
  // The values the three entry points used to disagree on, now the schema's.
  EXPECT_EQ(flags.ppo.epochs, 10);
  EXPECT_EQ(flags.env.lookback, 1);
  EXPECT_EQ(flags.network.policy_hidden, (std::vector<int>{512, 512}));
  EXPECT_EQ(coordinated.ppo.epochs, 10);
  EXPECT_EQ(coordinated.env.lookback, 1);
  EXPECT_EQ(coordinated.network.policy_hidden, (std::vector<int>{512, 512}));
}

TEST(OneRunDescriptionTest, TheSameSmallRunFromFlagsAndFromAStudy) {
  // A float (learning_rate), an int (epochs) and a choice (reward_mode),
  // plus the layers, the lookback and the budget.
  const learner::TrainerOptions flags = FromFlags({{"lr", "0.001"},
                                                   {"epochs", "3"},
                                                   {"reward", "log_return"},
                                                   {"policy-hidden", "32,32"},
                                                   {"lookback", "2"},
                                                   {"budget", "5000"}});
  const learner::TrainerOptions coordinated =
      Coordinated(HoldoutStudy({{"learning_rate", "0.001"},
                                {"epochs", "3"},
                                {"reward_mode", "log_return"},
                                {"width", "32"},
                                {"lookback", "2"},
                                {"budget", "5000"}}));
  ExpectSameRun(flags, coordinated);
  EXPECT_EQ(coordinated.ppo.learning_rate, 0.001);
  EXPECT_EQ(coordinated.ppo.epochs, 3);
  EXPECT_EQ(coordinated.env.reward_mode, env::RewardMode::kLogReturn);
  EXPECT_EQ(coordinated.network.value_hidden, (std::vector<int>{32, 32}));
  EXPECT_EQ(coordinated.budget_env_steps, 5000);
}

TEST(OneRunDescriptionTest, ADifferenceIsSeen) {
  // The comparison is not vacuous: one changed option shows.
  learner::TrainerOptions a = FromFlags({{"epochs", "3"}});
  learner::TrainerOptions b = FromFlags({{"epochs", "4"}});
  EXPECT_NE(*learner::GetRunOption("epochs", a),
            *learner::GetRunOption("epochs", b));
}

}  // namespace
}  // namespace ristretto::coordinator
