#include "coordinator/core/study_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

using ::testing::ElementsAre;

// A complete, valid study; the tests below break one thing at a time.
constexpr char kStudy[] = R"(
name: unit
dataset:
  synthetic: {rows: 3000, assets: 2, seed: 7, predictability: 0.5}
cv: {scheme: walk_forward, train_bars: 1600, test_bars: 600, step_bars: 600}
budget_env_steps: 20000
eval_every_env_steps: 5000
sampler: {type: tpe, seed: 3, startup_trials: 3, multivariate: true}
pruner: {type: median, warmup_steps: 10000, min_trials: 2}
concurrency: 2
max_trials: 6
fixed:
  width: 64
  layers: 2
space:
)";

// kStudy with `space_lines` (YAML lines indented by two spaces) under
// `space:`, its last key.
std::string WithSpace(const std::string& space_lines) {
  return kStudy + space_lines;
}

std::string Replace(std::string s, const std::string& from,
                    const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// Expects the study to be refused with exactly `message`.
void ExpectRefused(const std::string& yaml, const std::string& message) {
  const absl::StatusOr<StudyConfig> s = ParseStudyConfig(yaml);
  ASSERT_FALSE(s.ok()) << "accepted:\n" << yaml;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.status().message()), message);
}

TEST(StudyConfigTest, ParsesEverySectionOfAValidStudy) {
  absl::StatusOr<StudyConfig> s = ParseStudyConfig(
      WithSpace("  learning_rate: {type: float, low: 1.0e-6, high: 1.0e-3, "
                "log: true}\n"
                "  batch_size: {type: categorical, choices: [2048, 4096, "
                "8192]}\n"
                "  reward_mode: {choices: [shaped, log_return]}\n"
                "  reward_scale: {type: float, low: 1, high: 100, log: true,"
                " when: {reward_mode: log_return}}\n"
                "  epochs: {type: int, low: 3, high: 15}\n"
                "  clip_ratio: {type: float, low: 0.1, high: 0.3, step: 0.05}"
                "\n"));
  ASSERT_TRUE(s.ok()) << s.status();
  const StudyConfig& c = *s;
  EXPECT_EQ(c.name, "unit");
  EXPECT_TRUE(c.dataset.synthetic);
  EXPECT_EQ(c.dataset.rows, 3000);
  EXPECT_EQ(c.dataset.assets, 2);
  EXPECT_EQ(c.dataset.seed, 7u);
  EXPECT_EQ(c.dataset.predictability, 0.5);
  EXPECT_EQ(c.dataset.interval_seconds, 1800);
  EXPECT_EQ(c.cv.scheme, "walk_forward");
  EXPECT_EQ(c.cv.train_bars, 1600);
  EXPECT_EQ(c.cv.test_bars, 600);
  EXPECT_EQ(c.cv.step_bars, 600);
  EXPECT_EQ(c.budget_env_steps, 20000);
  EXPECT_EQ(c.eval_every_env_steps, 5000);
  EXPECT_EQ(c.objective, "sharpe");  // the default
  EXPECT_EQ(c.lockbox.share, 0.15);  // on by default
  EXPECT_EQ(c.sampler.type, "tpe");
  EXPECT_EQ(c.sampler.seed, 3u);
  EXPECT_EQ(c.sampler.startup_trials, 3);
  EXPECT_TRUE(c.sampler.multivariate);
  EXPECT_EQ(c.pruner.type, "median");
  EXPECT_EQ(c.pruner.warmup_steps, 10000);
  EXPECT_EQ(c.pruner.min_trials, 2);
  EXPECT_EQ(c.concurrency, 2);
  EXPECT_EQ(c.max_trials, 6);
  EXPECT_EQ(c.max_attempts, 3);
  EXPECT_EQ(c.fixed, (Params{{"layers", "2"}, {"width", "64"}}));
  ASSERT_EQ(c.space.size(), 6u);
  const ParamSpec& lr = c.space[0];
  EXPECT_EQ(lr.name, "learning_rate");
  EXPECT_EQ(lr.kind, ParamKind::kFloat);
  EXPECT_EQ(lr.low, 1e-6);
  EXPECT_EQ(lr.high, 1e-3);
  EXPECT_TRUE(lr.log);
  const ParamSpec& bs = c.space[1];
  EXPECT_EQ(bs.kind, ParamKind::kCategorical);
  EXPECT_THAT(bs.choices, ElementsAre("2048", "4096", "8192"));
  const ParamSpec& mode = c.space[2];
  EXPECT_EQ(mode.kind, ParamKind::kCategorical);  // inferred from choices
  const ParamSpec& scale = c.space[3];
  EXPECT_EQ(scale.parent, "reward_mode");
  EXPECT_THAT(scale.parent_values, ElementsAre("log_return"));
  EXPECT_EQ(c.space[4].kind, ParamKind::kInt);
  ASSERT_TRUE(c.space[5].step.has_value());
  EXPECT_EQ(*c.space[5].step, 0.05);
}

TEST(StudyConfigTest, DefaultsApplyToOmittedSections) {
  absl::StatusOr<StudyConfig> s = ParseStudyConfig(
      "name: tiny\n"
      "dataset: {id: "
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}\n"
      "budget_env_steps: 2e6\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->dataset.synthetic);
  EXPECT_EQ(s->dataset.id,
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  EXPECT_EQ(s->budget_env_steps, 2000000);
  EXPECT_EQ(s->cv.scheme, "holdout");
  EXPECT_EQ(s->cv.validation_fraction, 0.2);
  EXPECT_EQ(s->sampler.type, "tpe");
  EXPECT_EQ(s->pruner.type, "none");
  EXPECT_EQ(s->concurrency, 1);
  EXPECT_TRUE(s->space.empty());
}

TEST(StudyConfigTest, FixedValuesAndChoicesAreStoredAsCanonicalText) {
  absl::StatusOr<StudyConfig> s = ParseStudyConfig(
      WithSpace("  learning_rate: {choices: [1.0e-3, 3e-4]}\n"
                "  normalize_advantages: {choices: [True, false]}\n"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->space[0].choices, ElementsAre("0.001", "0.0003"));
  EXPECT_THAT(s->space[1].choices, ElementsAre("true", "false"));
  s = ParseStudyConfig(Replace(
      kStudy, "  width: 64\n",
      "  width: 64\n  gamma: 9.9e-1\n  budget: 2_000_000\n  epochs: 1e1\n"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->fixed.at("gamma"), "0.99");
  EXPECT_EQ(s->fixed.at("budget"), "2000000");
  EXPECT_EQ(s->fixed.at("epochs"), "10");
}

TEST(StudyConfigTest, ShippedStudyFilesParse) {
  for (const char* file : {"default.yaml", "small.yaml", "trend.yaml"}) {
    absl::StatusOr<std::string> text = ReadFileToString(
        std::string(RISTRETTO_SOURCE_DIR) + "/deploy/studies/" + file);
    ASSERT_TRUE(text.ok()) << text.status();
    absl::StatusOr<StudyConfig> s = ParseStudyConfig(*text);
    EXPECT_TRUE(s.ok()) << file << ": " << s.status();
  }
}

TEST(StudyConfigTest, TheDocumentedExampleParses) {
  absl::StatusOr<std::string> doc = ReadFileToString(
      std::string(RISTRETTO_SOURCE_DIR) + "/docs/study_format.md");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const size_t begin = doc->find("```yaml\n") + 8;
  const size_t end = doc->find("```", begin);
  absl::StatusOr<StudyConfig> s =
      ParseStudyConfig(doc->substr(begin, end - begin));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "lr-and-width");
  EXPECT_EQ(s->pruner.type, "asha");
  EXPECT_EQ(s->space.size(), 4u);
}

TEST(StudyConfigTest, DefaultStudySearchesTheOriginalsParameters) {
  absl::StatusOr<std::string> text = ReadFileToString(
      std::string(RISTRETTO_SOURCE_DIR) + "/deploy/studies/default.yaml");
  ASSERT_TRUE(text.ok());
  absl::StatusOr<StudyConfig> s = ParseStudyConfig(*text);
  ASSERT_TRUE(s.ok()) << s.status();
  std::map<std::string, ParamSpec> space;
  for (const ParamSpec& p : s->space) space[p.name] = p;
  for (const char* name : {"learning_rate",
                           "batch_size",
                           "gamma",
                           "width",
                           "rollout_steps",
                           "budget",
                           "lookback",
                           "norm_cash_exp",
                           "norm_stocks_exp",
                           "norm_tech_exp",
                           "norm_reward_exp",
                           "norm_action",
                           "time_decay_floor",
                           "min_cash_reserve",
                           "concentration_penalty",
                           "clip_ratio",
                           "entropy_coef",
                           "gae_lambda",
                           "epochs",
                           "max_grad_norm"}) {
    EXPECT_EQ(space.count(name), 1u) << name;
  }
  EXPECT_EQ(space["learning_rate"].low, 1e-6);
  EXPECT_EQ(space["learning_rate"].high, 1e-3);
  EXPECT_TRUE(space["learning_rate"].log);
  EXPECT_THAT(space["batch_size"].choices, ElementsAre("2048", "4096", "8192"));
  EXPECT_EQ(space["gamma"].low, 0.88);
  EXPECT_EQ(space["gamma"].high, 0.99);
  EXPECT_EQ(space["width"].low, 512);
  EXPECT_EQ(space["width"].high, 1536);
  EXPECT_EQ(space["width"].step, 256);
  EXPECT_EQ(space["lookback"].low, 1);
  EXPECT_EQ(space["lookback"].high, 5);
}

// ---- one clear error per bad study

TEST(StudyConfigTest, RejectsYamlSyntaxErrorsWithTheLine) {
  ExpectRefused("name: x\ndataset: {id: [\n",
                "study file is not valid YAML: line 3, column 1: end of "
                "sequence flow not found");
}

TEST(StudyConfigTest, RejectsAnEmptyFileAndMisshapenSections) {
  ExpectRefused("", "study file: expected a map of keys");
  ExpectRefused("- a\n- b\n", "study file: expected a map of keys");
  ExpectRefused(WithSpace("  gamma: 0.95\n"),
                "space.gamma: expected {type, low, high, …} or {choices: "
                "[…]} (a constant belongs under fixed)");
  ExpectRefused(Replace(kStudy, "  width: 64\n  layers: 2\n", "  - width\n"),
                "fixed: expected a map of parameter: value");
  ExpectRefused(
      Replace(kStudy, "budget_env_steps: 20000", "budget_env_steps: lots"),
      "budget_env_steps: 'lots' is not a whole number");
}

TEST(StudyConfigTest, RejectsAnUnknownTopLevelKey) {
  ExpectRefused(Replace(kStudy, "concurrency: 2", "concurency: 2"),
                "unknown key 'concurency' at the top level (expected one of: "
                "name, dataset, cv, budget_env_steps, eval_every_env_steps, "
                "objective, lockbox, sampler, pruner, concurrency, max_trials, "
                "max_attempts, fixed, space)");
}

TEST(StudyConfigTest, RejectsADuplicateKey) {
  ExpectRefused(
      Replace(kStudy, "concurrency: 2", "concurrency: 2\nmax_trials: 3"),
      "key 'max_trials' appears twice");
}

TEST(StudyConfigTest, RejectsAnUnknownParameterNamingIt) {
  ExpectRefused(
      WithSpace("  learnin_rate: {type: float, low: 0.1, high: 0.2}\n"),
      "space: unknown parameter 'learnin_rate' (did you mean "
      "'learning_rate'?)");
  ExpectRefused(Replace(kStudy, "  layers: 2\n", "  dropout: 0.1\n"),
                "fixed: unknown parameter 'dropout'");
}

TEST(StudyConfigTest, RejectsAParameterUnusedInThisConfiguration) {
  // time_decay_floor is read only by the shaped reward; the default is
  // log_return.
  ExpectRefused(
      WithSpace("  time_decay_floor: {type: float, low: 0, high: 0.5}\n"),
      "space.time_decay_floor: time_decay_floor is unused because "
      "reward_mode is log_return (the default): only the shaped reward uses "
      "it");
  // norm_action is read only by the shares action model; the default is
  // weights.
  ExpectRefused(
      WithSpace("  norm_action: {type: float, low: 1, high: 10}\n"),
      "space.norm_action: norm_action is unused because action_model is "
      "weights (the default): only the shares action model uses it");
  // Fixed to the other mode.
  ExpectRefused(
      Replace(WithSpace("  time_decay_floor: {type: float, low: 0, high: "
                        "0.5}\n"),
              "  layers: 2\n", "  layers: 2\n  reward_mode: log_return\n"),
      "space.time_decay_floor: time_decay_floor is unused because "
      "reward_mode is log_return: only the shaped reward uses it");
  // Searched mode: the dependent parameter must be conditional on it.
  ExpectRefused(
      WithSpace("  reward_mode: {choices: [shaped, log_return]}\n"
                "  reward_scale: {type: float, low: 1, high: 10}\n"),
      "space.reward_scale: reward_scale is unused when reward_mode is not "
      "log_return, differential_sharpe (the shaped reward does not use it); "
      "make it conditional: when: {reward_mode: [log_return, "
      "differential_sharpe]}");
  ExpectRefused(
      WithSpace("  reward_mode: {choices: [shaped, log_return]}\n"
                "  reward_scale: {type: float, low: 1, high: 10,"
                " when: {reward_mode: [shaped, log_return]}}\n"),
      "space.reward_scale: reward_scale is unused when reward_mode is not "
      "log_return, differential_sharpe (the shaped reward does not use it); "
      "make it conditional: when: {reward_mode: [log_return, "
      "differential_sharpe]}");
  // A fixed value counts too.
  ExpectRefused(Replace(kStudy, "  layers: 2\n",
                        "  layers: 2\n  normalize_observations: false\n"
                        "  obs_clip: 5\n"),
                "fixed.obs_clip: obs_clip is unused because "
                "normalize_observations is false: observations are clipped "
                "only after normalisation");
}

TEST(StudyConfigTest, RejectsAParameterBothFixedAndSearched) {
  ExpectRefused(WithSpace("  width: {type: int, low: 64, high: 128}\n"),
                "space.width: width is both fixed and searched");
}

TEST(StudyConfigTest, RejectsEmptyOrInvertedRanges) {
  ExpectRefused(WithSpace("  gamma: {type: float, low: 0.99, high: 0.9}\n"),
                "space.gamma: range [0.99, 0.9] is empty or inverted (low "
                "must be < high; put a constant under fixed)");
  ExpectRefused(WithSpace("  epochs: {type: int, low: 4, high: 4}\n"),
                "space.epochs: range [4, 4] is empty or inverted (low must "
                "be < high; put a constant under fixed)");
}

TEST(StudyConfigTest, RejectsALogRangeThatIsNotPositive) {
  ExpectRefused(
      WithSpace("  entropy_coef: {type: float, low: 0, high: 0.01, log: "
                "true}\n"),
      "space.entropy_coef: log range [0, 0.01] needs low > 0");
}

TEST(StudyConfigTest, RejectsABadStep) {
  ExpectRefused(
      WithSpace("  gae_lambda: {type: float, low: 0.9, high: 1, step: "
                "0.03}\n"),
      "space.gae_lambda: bad step 0.03: range [0.9, 1] is not a whole "
      "number of steps");
  ExpectRefused(
      WithSpace("  gae_lambda: {type: float, low: 0.9, high: 1, step: 0}\n"),
      "space.gae_lambda: bad step 0: it must be > 0");
  ExpectRefused(
      WithSpace("  epochs: {type: int, low: 2, high: 10, step: 1.5}\n"),
      "space.epochs: bad step 1.5: an int step is a whole number");
  ExpectRefused(WithSpace("  epochs: {type: int, low: 2, high: 10, step: 2, "
                          "log: true}\n"),
                "space.epochs: step and log cannot be combined");
}

TEST(StudyConfigTest, RejectsEmptyOrDuplicateChoices) {
  ExpectRefused(WithSpace("  activation: {type: categorical, choices: []}\n"),
                "space.activation: empty choices (give a non-empty list)");
  ExpectRefused(WithSpace("  activation: {choices: [relu, relu]}\n"),
                "space.activation: choice 'relu' appears twice");
}

TEST(StudyConfigTest, RejectsValuesTheOptionRefuses) {
  ExpectRefused(WithSpace("  activation: {choices: [relu, sigmoid]}\n"),
                "space.activation.choices[1]: parameter activation = "
                "'sigmoid' is not one of tanh, relu");
  ExpectRefused(WithSpace("  gamma: {type: float, low: 0.9, high: 1.5}\n"),
                "space.gamma.high: parameter gamma = 1.5 is outside [0, 1]");
  ExpectRefused(Replace(kStudy, "  width: 64", "  width: 64.5"),
                "fixed.width: parameter width = '64.5' is not a whole number");
}

TEST(StudyConfigTest, RejectsAKindThatDoesNotFitTheOption) {
  ExpectRefused(WithSpace("  epochs: {type: float, low: 3, high: 15}\n"),
                "space.epochs: epochs is a whole number; declare it as int "
                "or categorical");
  ExpectRefused(
      WithSpace("  activation: {type: float, low: 0, high: 1}\n"),
      "space.activation: activation takes one of tanh, relu; declare it as "
      "categorical");
}

TEST(StudyConfigTest, RejectsAConditionalOnAnUnknownParent) {
  ExpectRefused(
      WithSpace("  reward_scale: {type: float, low: 1, high: 10, when: "
                "{reward_mod: log_return}}\n"),
      "space: parameter reward_scale: conditional on unknown parent "
      "'reward_mod' (not a searched parameter)");
  ExpectRefused(
      WithSpace("  reward_mode: {choices: [shaped, log_return]}\n"
                "  reward_scale: {type: float, low: 1, high: 10, when: "
                "{reward_mode: log}}\n"),
      "space: parameter reward_scale: conditional on reward_mode = 'log', "
      "which is not one of its choices (shaped, log_return)");
}

TEST(StudyConfigTest, RejectsBadCvSpecs) {
  ExpectRefused(Replace(kStudy,
                        "cv: {scheme: walk_forward, train_bars: 1600, "
                        "test_bars: 600, step_bars: 600}",
                        "cv: {scheme: cpcv, groups: 4, test_groups: 4}"),
                "cv.test_groups: 4 must be in [1, groups = 4)");
  ExpectRefused(Replace(kStudy, "train_bars: 1600", "train_bars: 0"),
                "cv.train_bars: 0 must be > 0 (walk_forward needs train_bars "
                "and test_bars)");
  ExpectRefused(Replace(kStudy, "test_bars: 600", "test_bars: -5"),
                "cv.test_bars: -5 must be > 0 (walk_forward needs train_bars "
                "and test_bars)");
  ExpectRefused(Replace(kStudy, "scheme: walk_forward", "scheme: rolling"),
                "cv.scheme: unknown scheme 'rolling' (expected holdout, "
                "walk_forward, cpcv or kfold)");
  ExpectRefused(Replace(kStudy, "step_bars: 600", "groups: 3"),
                "cv: unknown key 'groups' (expected one of: scheme, "
                "train_bars, test_bars, step_bars, max_folds)");
  // The synthetic market is too short for the folds.
  ExpectRefused(Replace(kStudy, "train_bars: 1600", "train_bars: 2600"),
                "cv: WalkForward: no fold fits: train_bars=2600 + "
                "test_bars=600 exceeds num_rows=2550 (the synthetic dataset "
                "has 3000 rows, 2550 before the lockbox and its embargo)");
}

// CPCV and k-fold train after test blocks too: by default they embargo
// (and purge) the rows whose features are computed from a test block's bars
// (the features' window, whatever the lookback: an observation never reads
// rows before its own domain); holdout and walk-forward train only before
// their test rows and keep 0; a value in the file wins.
TEST(StudyConfigTest, CpcvAndKfoldEmbargoTheRowsThatSeeATestBlock) {
  const std::string walk_forward =
      "cv: {scheme: walk_forward, train_bars: 1600, test_bars: 600, "
      "step_bars: 600}";
  EXPECT_EQ(DefaultEmbargoBars(), 63);
  absl::StatusOr<StudyConfig> c = ParseStudyConfig(
      Replace(kStudy, walk_forward, "cv: {scheme: cpcv, groups: 4}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cv.embargo_bars, 63);
  // The lockbox's embargo follows the CV's unless given.
  absl::StatusOr<LockboxLayout> layout =
      MakeLockboxLayout(c->lockbox, c->cv, 3000);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->guard, 3000 - 450 - 63);
  c = ParseStudyConfig(
      Replace(Replace(kStudy, walk_forward, "cv: {scheme: kfold, folds: 3}"),
              "  layers: 2\n", "  layers: 2\n  lookback: 8\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cv.embargo_bars, 63);
  // Given in the file (0 included): kept.
  c = ParseStudyConfig(Replace(
      kStudy, walk_forward, "cv: {scheme: cpcv, groups: 4, embargo_bars: 0}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cv.embargo_bars, 0);
  c = ParseStudyConfig(
      Replace(kStudy, walk_forward, "cv: {scheme: kfold, embargo_bars: 120}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cv.embargo_bars, 120);
  // Holdout and walk-forward: 0.
  c = ParseStudyConfig(Replace(kStudy, walk_forward, "cv: {scheme: holdout}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cv.embargo_bars, 0);
  c = ParseStudyConfig(kStudy);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->cv.embargo_bars, 0);
}

TEST(StudyConfigTest, RejectsBadSamplerAndPrunerSettings) {
  ExpectRefused(Replace(kStudy, "type: tpe", "type: cmaes"),
                "sampler.type: unknown sampler 'cmaes' (expected random or "
                "tpe)");
  ExpectRefused(Replace(kStudy, "type: median", "type: hyperband"),
                "pruner.type: unknown pruner 'hyperband' (expected none, "
                "median or asha)");
  ExpectRefused(
      Replace(kStudy, "type: median", "type: asha, reduction_factor: 1"),
      "pruner.reduction_factor: 1 must be > 1");
  ExpectRefused(Replace(kStudy, "eval_every_env_steps: 5000\n", ""),
                "pruner: the median pruner needs intermediate scores: set "
                "eval_every_env_steps > 0");
  ExpectRefused(Replace(kStudy, "startup_trials: 3", "startup_trials: -1"),
                "sampler.startup_trials: -1 must be >= 0");
}

TEST(StudyConfigTest, AshaFirstRungDefaultsToTheEvaluationInterval) {
  absl::StatusOr<StudyConfig> s =
      ParseStudyConfig(Replace(kStudy, "type: median", "type: asha"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->pruner.min_resource, 5000);
  EXPECT_EQ(s->pruner.reduction_factor, 3);
}

TEST(StudyConfigTest, RejectsConcurrencyBelowOne) {
  ExpectRefused(Replace(kStudy, "concurrency: 2", "concurrency: 0"),
                "concurrency: 0 must be in [1, 1024]");
}

TEST(StudyConfigTest, RejectsAbsurdCountsAndBudgetsNamingTheKey) {
  ExpectRefused(Replace(kStudy, "concurrency: 2", "concurrency: 1e9"),
                "concurrency: 1000000000 must be in [1, 1024]");
  ExpectRefused(Replace(kStudy, "concurrency: 2", "concurrency: 1025"),
                "concurrency: 1025 must be in [1, 1024]");
  ExpectRefused(Replace(kStudy, "max_trials: 6", "max_trials: 99999999999"),
                "max_trials: 99999999999 must be in [1, 1000000]");
  ExpectRefused(Replace(kStudy, "concurrency: 2", "max_attempts: 101"),
                "max_attempts: 101 must be in [1, 100]");
  ExpectRefused(Replace(kStudy, "budget_env_steps: 20000",
                        "budget_env_steps: 9223372036854775807"),
                "budget_env_steps: 9223372036854775807 must be in [1, "
                "1000000000000]");
  ExpectRefused(Replace(kStudy, "eval_every_env_steps: 5000",
                        "eval_every_env_steps: 2e12"),
                "eval_every_env_steps: 2000000000000 must be in [0, "
                "1000000000000] (0 = only at the end)");
  // At the caps: accepted.
  std::string at_caps = Replace(kStudy, "concurrency: 2", "concurrency: 1024");
  at_caps = Replace(at_caps, "max_trials: 6", "max_trials: 1_000_000");
  at_caps =
      Replace(at_caps, "budget_env_steps: 20000", "budget_env_steps: 1e12");
  const absl::StatusOr<StudyConfig> ok = ParseStudyConfig(at_caps);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->concurrency, 1024);
  EXPECT_EQ(ok->max_trials, 1000000);
  EXPECT_EQ(ok->budget_env_steps, 1000000000000);
}

TEST(StudyConfigTest, RejectsTextOverOneMebibyteWithItsSize) {
  // A comment pads the file past the limit: refused before YAML parsing.
  std::string big = kStudy;
  big += "# " + std::string(kMaxStudyFileBytes, 'p') + "\n";
  ExpectRefused(big, absl::StrCat("study file is ", big.size(),
                                  " bytes; the limit is 1048576 (1 MiB)"));
  EXPECT_TRUE(CheckStudyText(std::string(kMaxStudyFileBytes, ' ')).ok());
}

TEST(StudyConfigTest, RejectsNonUtf8WithTheByteOffset) {
  // Latin-1 'é' (0xe9) in the name, on line 2.
  std::string yaml = Replace(kStudy, "name: unit", "name: caf\xe9");
  const size_t offset = yaml.find('\xe9');
  ExpectRefused(yaml,
                absl::StrCat("study file is not UTF-8: byte offset ", offset,
                             " (line 2) is \\xe9; save the file as "
                             "UTF-8"));
  ExpectRefused(std::string("name: a\0b\n", 10),
                "study file contains a NUL byte at byte offset 7");
  // Well-formed UTF-8 is fine in comments.
  EXPECT_TRUE(ParseStudyConfig(std::string(kStudy) + "# caf\xc3\xa9\n").ok());
}

TEST(StudyConfigTest, RejectsASecondYamlDocument) {
  const std::string study = kStudy;
  // The second document's first key is on the line after the '---'.
  const int64_t line = std::count(study.begin(), study.end(), '\n') + 2;
  ExpectRefused(study + "---\nname: other\n",
                absl::StrCat("study file holds 2 YAML documents (the second "
                             "starts at line ",
                             line,
                             "); a study file is one document: remove the "
                             "extra '---'"));
  // A leading '---' starts the one document: accepted.
  EXPECT_TRUE(ParseStudyConfig(std::string("---") + kStudy).ok());
}

TEST(StudyConfigTest, LongOrBinaryNamesAndKeysAreNeverEchoedWhole) {
  const std::string huge(500000, 'n');
  const absl::StatusOr<StudyConfig> s =
      ParseStudyConfig(Replace(kStudy, "name: unit", "name: " + huge));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()),
              ::testing::StartsWith("name: study name 'nnnn"));
  EXPECT_THAT(
      std::string(s.status().message()),
      ::testing::HasSubstr("...(500000 bytes)' (500000 bytes) must be 1-128 "
                           "letters, digits, '-', '_' or '.'"));
  EXPECT_LT(s.status().message().size(), 300u);
  // Control characters in a (quoted) name are escaped.
  ExpectRefused(Replace(kStudy, "name: unit", "name: \"a\\x1b[2Jb\""),
                "name: study name 'a\\x1b[2Jb' (6 bytes) must be 1-128"
                " letters, digits, '-', '_' or '.', not starting with '.' (it "
                "names a directory)");
  // One rule on every path: a name that is a directory's parent (`up
  // --study` took it, and its checkpoints landed outside runs/).
  ExpectRefused(Replace(kStudy, "name: unit", "name: \"..\""),
                "name: study name '..' (2 bytes) must be 1-128"
                " letters, digits, '-', '_' or '.', not starting with '.' (it "
                "names a directory)");
  ExpectRefused(Replace(kStudy, "name: unit", "name: .hidden"),
                "name: study name '.hidden' (7 bytes) must be 1-128"
                " letters, digits, '-', '_' or '.', not starting with '.' (it "
                "names a directory)");
  EXPECT_EQ(CheckStudyName("..").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckStudyName("my-study_2.v1").ok());
  // A long unknown key (YAML caps plain keys at 1024 characters): capped
  // in the message, no edit-distance search.
  const absl::StatusOr<StudyConfig> k =
      ParseStudyConfig(WithSpace("  " + std::string(1000, 'n') +
                                 ": {type: float, low: 0.1, high: 0.2}\n"));
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(k.status().message().size(), 400u) << k.status().message();
  EXPECT_THAT(std::string(k.status().message()),
              ::testing::HasSubstr("unknown parameter 'nnn"));
}

TEST(StudyConfigTest, ReadStudyFileRefusesLargeAndNonRegularFiles) {
  const std::string dir = ::testing::TempDir();
  const std::string big = dir + "/study_config_test_big.yaml";
  {
    std::FILE* f = std::fopen(big.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs(kStudy, f);
    std::fclose(f);
  }
  ASSERT_EQ(truncate(big.c_str(), 50 << 20), 0);
  absl::StatusOr<std::string> text = ReadStudyFile(big);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(text.status().message()),
              ::testing::HasSubstr(
                  "study file is 52428800 bytes; the limit is 1048576"));
  std::remove(big.c_str());

  const std::string fifo = dir + "/study_config_test_fifo.yaml";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  text = ReadStudyFile(fifo);  // never opened: would block without a writer
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(text.status().message()),
              ::testing::HasSubstr("is not a regular file"));
  std::remove(fifo.c_str());

  const std::string good = dir + "/study_config_test_good.yaml";
  {
    std::FILE* f = std::fopen(good.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs(kStudy, f);
    std::fclose(f);
  }
  text = ReadStudyFile(good);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, kStudy);
  std::remove(good.c_str());
}

TEST(StudyConfigTest, RejectsAMissingDataset) {
  std::string yaml = kStudy;
  const size_t begin = yaml.find("dataset:");
  const size_t end = yaml.find("cv:");
  yaml.erase(begin, end - begin);
  ExpectRefused(yaml, "missing dataset (give dataset.id or dataset.synthetic)");
  ExpectRefused(Replace(kStudy,
                        "synthetic: {rows: 3000, assets: 2, seed: 7, "
                        "predictability: 0.5}",
                        "id: abc"),
                "dataset.id: 'abc' is not a dataset id (64 lower-case hex "
                "digits)");
}

// The synthetic market's structure keys reach the generator; left out,
// they are the generator's defaults (the market of every older study).
TEST(StudyConfigTest, SyntheticStructureKeysReachTheGenerator) {
  absl::StatusOr<StudyConfig> plain = ParseStudyConfig(kStudy);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const env::SyntheticMarketOptions defaults;
  const env::SyntheticMarketOptions p = SyntheticOptions(plain->dataset);
  EXPECT_EQ(p.trend_strength, defaults.trend_strength);
  EXPECT_EQ(p.mean_regime_bars, defaults.mean_regime_bars);
  EXPECT_EQ(p.crash_probability, defaults.crash_probability);
  EXPECT_EQ(p.correlation, defaults.correlation);
  EXPECT_EQ(p.garch_alpha, 0.0);
  EXPECT_EQ(p.garch_beta, 0.0);
  EXPECT_EQ(p.tail_dof, 0);
  EXPECT_EQ(p.feature_set, env::FeatureSet::kIndicators);

  absl::StatusOr<StudyConfig> c = ParseStudyConfig(
      Replace(kStudy, "predictability: 0.5}",
              "predictability: 0.5, trend_strength: 2, regime_bars: 500, "
              "crash_probability: 0.02, correlation: 0.3, garch_alpha: 0.08, "
              "garch_beta: 0.9, tail_dof: 4, features: portfolio}"));
  ASSERT_TRUE(c.ok()) << c.status();
  const env::SyntheticMarketOptions o = SyntheticOptions(c->dataset);
  EXPECT_EQ(o.trend_strength, 2);
  EXPECT_EQ(o.mean_regime_bars, 500);
  EXPECT_EQ(o.crash_probability, 0.02);
  EXPECT_EQ(o.correlation, 0.3);
  EXPECT_EQ(o.garch_alpha, 0.08);
  EXPECT_EQ(o.garch_beta, 0.9);
  EXPECT_EQ(o.tail_dof, 4);
  EXPECT_EQ(o.feature_set, env::FeatureSet::kPortfolio);
}

TEST(StudyConfigTest, RejectsSyntheticStructureOutOfRangeNamingTheKey) {
  const struct {
    const char* keys;
    const char* message;
  } cases[] = {
      {"trend_strength: -1",
       "dataset.synthetic.trend_strength: -1 is outside "
       "[0, 100]"},
      {"regime_bars: 0.5",
       "dataset.synthetic.regime_bars: 0.5 is outside [1, 1e9]"},
      {"crash_probability: 1.5",
       "dataset.synthetic.crash_probability: 1.5 is outside [0, 1]"},
      {"correlation: 1", "dataset.synthetic.correlation: 1 is outside [0, 1)"},
      {"garch_alpha: -0.1",
       "dataset.synthetic.garch_alpha: -0.1 is outside [0, 1)"},
      {"garch_alpha: 0.2, garch_beta: 0.8",
       "dataset.synthetic.garch_beta: 0.8 must be >= 0 with garch_alpha + "
       "garch_beta < 1 (garch_alpha is 0.2)"},
      {"tail_dof: 2",
       "dataset.synthetic.tail_dof: 2 is neither 0 (normal shocks) nor in "
       "[3, 100]"},
      {"features: prices",
       "dataset.synthetic.features: unknown feature set 'prices'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.keys);
    absl::StatusOr<StudyConfig> s = ParseStudyConfig(
        Replace(kStudy, "predictability: 0.5}",
                std::string("predictability: 0.5, ") + c.keys + "}"));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()),
                ::testing::StartsWith(c.message));
  }
}

TEST(StudyConfigTest, RejectsAnUnknownObjective) {
  ExpectRefused(Replace(kStudy, "max_trials: 6", "objective: sortinoo"),
                "objective: unknown objective 'sortinoo' (expected one of: "
                "sharpe, sortino, excess_sharpe, calmar, return)");
}

TEST(StudyConfigTest, AcceptsEveryObjective) {
  for (const char* o :
       {"sharpe", "sortino", "excess_sharpe", "calmar", "return"}) {
    absl::StatusOr<StudyConfig> c = ParseStudyConfig(
        Replace(kStudy, "max_trials: 6", std::string("objective: ") + o));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->objective, o);
  }
}

TEST(StudyConfigTest, ParsesTheLockbox) {
  absl::StatusOr<StudyConfig> c = ParseStudyConfig(Replace(
      kStudy, "max_trials: 6", "lockbox: {bars: 150, embargo_bars: 10}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->lockbox.bars, 150);
  EXPECT_EQ(c->lockbox.embargo_bars, 10);
  EXPECT_EQ(c->lockbox.refits, 1);  // one final run unless asked
  c = ParseStudyConfig(
      Replace(kStudy, "max_trials: 6", "lockbox: {share: 0.2, refits: 3}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->lockbox.refits, 3);
}

TEST(StudyConfigTest, RejectsABadLockbox) {
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {share: 0.9}"),
                "lockbox.share: 0.9 is outside (0, 0.5] (the lockbox cannot "
                "be turned off: every study keeps one)");
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {share: 0}"),
                "lockbox.share: 0 is outside (0, 0.5] (the lockbox cannot be "
                "turned off: every study keeps one)");
  ExpectRefused(
      Replace(kStudy, "max_trials: 6", "lockbox: {share: 0.1, bars: 100}"),
      "lockbox: give either share or bars, not both");
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {bars: -3}"),
                "lockbox.bars: -3 must be > 0");
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {size: 3}"),
                "lockbox: unknown key 'size' (expected one of: share, bars, "
                "embargo_bars, refits)");
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {refits: 0}"),
                "lockbox.refits: 0 is outside [1, 16]");
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {refits: 17}"),
                "lockbox.refits: 17 is outside [1, 16]");
  // The lockbox leaves too few bars for any CV scheme.
  ExpectRefused(Replace(kStudy, "max_trials: 6", "lockbox: {bars: 2950}"),
                "lockbox: 2950 rows and an embargo of 0 rows leave 50 of "
                "3000 rows for the CV folds (need at least 100) (the "
                "synthetic dataset has 3000 rows)");
  // ... or for this one: walk-forward needs 1600 + 600 rows.
  absl::StatusOr<StudyConfig> c = ParseStudyConfig(
      Replace(kStudy, "max_trials: 6", "lockbox: {bars: 1000}"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), ::testing::StartsWith("cv: "));
  EXPECT_THAT(std::string(c.status().message()),
              ::testing::HasSubstr("2000 before the lockbox"));
}

// ---- BindStudyDataset (`ristretto up --csv-dir/--dataset`).

constexpr char kGivenId[] =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(BindStudyDatasetTest, GivenOrMissingDatasetBecomesTheGivenId) {
  const std::string synthetic =
      "dataset:\n  synthetic: {rows: 3000, assets: 2, seed: 7, "
      "predictability: 0.5}\n";
  for (const std::string& dataset :
       {std::string("dataset: given\n"),
        std::string("dataset: given   # the data of up\n"), std::string("")}) {
    SCOPED_TRACE(dataset);
    const std::string study = Replace(kStudy, synthetic, dataset);
    absl::StatusOr<std::string> bound = BindStudyDataset(study, kGivenId);
    ASSERT_TRUE(bound.ok()) << bound.status();
    absl::StatusOr<StudyConfig> config = ParseStudyConfig(*bound);
    ASSERT_TRUE(config.ok()) << config.status() << "\n" << *bound;
    EXPECT_EQ(config->dataset.id, kGivenId);
    EXPECT_FALSE(config->dataset.synthetic);
    // Everything else is kept, comments included; binding again is a no-op
    // (what `up` stores and compares when it resumes).
    EXPECT_THAT(*bound, ::testing::HasSubstr("name: unit\n"));
    if (!dataset.empty() && dataset.find('#') != std::string::npos) {
      EXPECT_THAT(*bound, ::testing::HasSubstr("# the data of up"));
    }
    EXPECT_EQ(*BindStudyDataset(*bound, kGivenId), *bound);
  }
}

TEST(BindStudyDatasetTest, TheSameIdIsKeptAndAnotherIsRefused) {
  const std::string synthetic =
      "dataset:\n  synthetic: {rows: 3000, assets: 2, seed: 7, "
      "predictability: 0.5}\n";
  const std::string same = Replace(
      kStudy, synthetic, absl::StrCat("dataset: {id: ", kGivenId, "}\n"));
  EXPECT_EQ(*BindStudyDataset(same, kGivenId), same);
  const std::string other_id(64, 'e');
  const std::string other = Replace(
      kStudy, synthetic, absl::StrCat("dataset: {id: ", other_id, "}\n"));
  absl::StatusOr<std::string> refused = BindStudyDataset(other, kGivenId);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(refused.status().message()),
            absl::StrCat("dataset.id: the study names dataset ", other_id,
                         " but was given dataset ", kGivenId,
                         " (another file or import options); write `dataset: "
                         "given` (or leave the dataset out) to use the given "
                         "one"));
  refused = BindStudyDataset(kStudy, kGivenId);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("dataset.synthetic: the study asks for the "
                                   "synthetic market but was given dataset"));
}

TEST(BindStudyDatasetTest, FlowStyleStudiesAreReEmitted) {
  const std::string flow =
      absl::StrCat("{name: flow, dataset: given, budget_env_steps: 1000}\n");
  absl::StatusOr<std::string> bound = BindStudyDataset(flow, kGivenId);
  ASSERT_TRUE(bound.ok()) << bound.status();
  absl::StatusOr<StudyConfig> config = ParseStudyConfig(*bound);
  ASSERT_TRUE(config.ok()) << config.status() << "\n" << *bound;
  EXPECT_EQ(config->dataset.id, kGivenId);
  EXPECT_EQ(config->name, "flow");
}

TEST(BindStudyDatasetTest, ParsingGivenWithoutADatasetIsAClearError) {
  const std::string synthetic =
      "dataset:\n  synthetic: {rows: 3000, assets: 2, seed: 7, "
      "predictability: 0.5}\n";
  ExpectRefused(Replace(kStudy, synthetic, "dataset: given\n"),
                "dataset: 'given' names the dataset given to `ristretto up "
                "--csv-dir DIR` or `--dataset FILE`; this command was given "
                "none (give dataset.id or dataset.synthetic)");
}

}  // namespace
}  // namespace ristretto::coordinator
