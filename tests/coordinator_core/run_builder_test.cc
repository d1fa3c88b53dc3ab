// BuildRunOptions and MakeFolds (study_config.h).
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/file_util.h"
#include "coordinator/core/study_config.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/run_config_codec.h"

namespace ristretto::coordinator {
namespace {

using env::Domain;
using ::testing::ElementsAre;

StudyConfig WalkForwardStudy() {
  StudyConfig s;
  s.name = "unit";
  s.dataset.synthetic = true;
  s.cv.scheme = "walk_forward";
  s.cv.train_bars = 1600;
  s.cv.test_bars = 600;
  s.cv.step_bars = 600;
  s.budget_env_steps = 20000;
  s.eval_every_env_steps = 5000;
  s.sampler.seed = 11;
  s.fixed = {{"width", "64"}, {"layers", "2"}, {"learning_rate", "0.001"}};
  s.lockbox.bars = 200;  // rows [2800, 3000) of GappedData
  return s;
}

// 3000 rows with a gap after row 2000 (two contiguous domains).
DatasetInfo GappedData() {
  DatasetInfo d;
  d.id = std::string(64, 'a');
  d.num_rows = 3000;
  d.domains = {Domain{0, 2000}, Domain{2000, 3000}};
  d.feature_names = {"open", "close"};
  return d;
}

TEST(RunBuilderTest, OneRunPerFoldWithDomainsSplitAtDatasetGaps) {
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(WalkForwardStudy(), {{"gamma", "0.95"}}, GappedData());
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  const learner::TrainerOptions& f0 = (*runs)[0];
  const learner::TrainerOptions& f1 = (*runs)[1];
  EXPECT_THAT(f0.train_domains, ElementsAre(Domain{0, 1600}));
  EXPECT_THAT(f0.validation_domains,
              ElementsAre(Domain{1600, 2000}, Domain{2000, 2200}));
  EXPECT_THAT(f1.train_domains,
              ElementsAre(Domain{600, 2000}, Domain{2000, 2200}));
  EXPECT_THAT(f1.validation_domains, ElementsAre(Domain{2200, 2800}));
  for (const learner::TrainerOptions& o : *runs) {
    EXPECT_EQ(o.budget_env_steps, 20000);
    EXPECT_EQ(o.eval_every_env_steps, 5000);
    EXPECT_EQ(o.dataset_id, std::string(64, 'a'));
    EXPECT_THAT(o.feature_names, ElementsAre("open", "close"));
    EXPECT_THAT(o.network.policy_hidden, ElementsAre(64, 64));
    EXPECT_THAT(o.network.value_hidden, ElementsAre(64, 64));
    EXPECT_EQ(o.ppo.learning_rate, 0.001);
    EXPECT_EQ(o.ppo.gamma, 0.95);
    EXPECT_TRUE(o.run_dir.empty());
  }
}

TEST(RunBuilderTest, TrialParametersOverrideFixedOnesAndBudget) {
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs = BuildRunOptions(
      WalkForwardStudy(), {{"learning_rate", "0.0002"}, {"budget", "50000"}},
      GappedData());
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ((*runs)[0].ppo.learning_rate, 0.0002);
  EXPECT_EQ((*runs)[0].budget_env_steps, 50000);
}

TEST(RunBuilderTest, SeedsDependOnSamplerSeedParamsAndFold) {
  const StudyConfig study = WalkForwardStudy();
  const DatasetInfo data = GappedData();
  auto seeds = [&](const StudyConfig& s, const Params& p) {
    std::vector<uint64_t> out;
    const absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
        BuildRunOptions(s, p, data);
    EXPECT_TRUE(runs.ok()) << runs.status();
    for (const learner::TrainerOptions& o : *runs) out.push_back(o.seed);
    return out;
  };
  const std::vector<uint64_t> a = seeds(study, {{"gamma", "0.95"}});
  EXPECT_NE(a[0], a[1]);                            // per fold
  EXPECT_EQ(a, seeds(study, {{"gamma", "0.95"}}));  // reproducible
  EXPECT_NE(a, seeds(study, {{"gamma", "0.96"}}));  // per params
  StudyConfig other = study;
  other.sampler.seed = 12;
  EXPECT_NE(a, seeds(other, {{"gamma", "0.95"}}));  // per study seed
}

TEST(RunBuilderTest, ShortValidationPiecesAreDropped) {
  StudyConfig study = WalkForwardStudy();
  study.fixed["lookback"] = "3";
  study.fixed["episode_steps"] = "512";
  DatasetInfo data = GappedData();
  data.domains = {Domain{0, 1605}, Domain{1605, 3000}};  // a 5-row piece
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(study, {}, data);
  ASSERT_TRUE(runs.ok()) << runs.status();
  // [1600, 1605) has fewer than 2·3 + 1 rows.
  EXPECT_THAT((*runs)[0].validation_domains, ElementsAre(Domain{1605, 2200}));
}

TEST(RunBuilderTest, BadParameterIsNamed) {
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(WalkForwardStudy(), {{"clip_ratio", "2"}}, GappedData());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.status().message(),
            "trial: parameter clip_ratio = 2 is outside (0, 1)");
  runs =
      BuildRunOptions(WalkForwardStudy(), {{"dropout", "0.5"}}, GappedData());
  EXPECT_EQ(runs.status().message(), "trial: unknown parameter 'dropout'");
}

TEST(RunBuilderTest, EpisodesLongerThanEveryTrainingBlockAreRefused) {
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs = BuildRunOptions(
      WalkForwardStudy(), {{"episode_steps", "1599"}}, GappedData());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.status().message(),
            "fold 0: episode_steps = 1599 needs 1601 rows (episode_steps + "
            "2·lookback) but the longest training block has 1600");
}

TEST(RunBuilderTest, FoldsThatDoNotFitTheDatasetAreRefused) {
  DatasetInfo data = GappedData();
  data.num_rows = 2500;
  data.domains = {Domain{0, 2500}};
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(WalkForwardStudy(), {}, data);
  ASSERT_TRUE(runs.ok());
  // Only the first fold fits in the 2300 rows before the lockbox.
  EXPECT_EQ(runs->size(), 1u);
  data.domains = {Domain{0, 1000}, Domain{1000, 2500}};
  runs = BuildRunOptions(WalkForwardStudy(), {}, data);
  EXPECT_EQ(runs.status().message(),
            "fold 0: episode_steps = 1024 needs 1026 rows (episode_steps + "
            "2·lookback) but the longest training block has 1000");
}

TEST(LockboxTest, CvRunsNeverReachTheLockboxAndTheLearnerRuleRefusesIt) {
  StudyConfig study = WalkForwardStudy();
  study.lockbox.bars = 0;
  study.lockbox.share = 0.1;  // 300 rows: [2700, 3000)
  study.lockbox.embargo_bars = 50;
  study.cv.step_bars = 400;
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(study, {}, GappedData());
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);  // [0,2200) and [400,2600) fit before 2650
  for (const learner::TrainerOptions& o : *runs) {
    EXPECT_EQ(o.lockbox_begin, 2700);
    EXPECT_EQ(o.lockbox_guard, 2650);
    EXPECT_FALSE(o.final_evaluation);
    for (const Domain& d : o.train_domains) EXPECT_LE(d.end, 2650);
    for (const Domain& d : o.validation_domains) EXPECT_LE(d.end, 2650);
    EXPECT_TRUE(learner::CheckLockbox(o).ok());
  }
  // The rule every learner applies before training: a CV run that reads a
  // lockbox row (or the embargo before it) is refused.
  learner::TrainerOptions leaky = (*runs)[1];
  leaky.validation_domains.push_back(Domain{2640, 2660});
  absl::Status refused = learner::CheckLockbox(leaky);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("reaches the lockbox"));
  leaky = (*runs)[0];
  leaky.train_domains = {Domain{0, 2700}};
  refused = learner::CheckLockbox(leaky);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("train domain 0 [0, 2700) reaches the "
                                   "lockbox"));
  leaky = (*runs)[0];
  leaky.train_domains.clear();  // "all rows" would include the lockbox
  refused = learner::CheckLockbox(leaky);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("must name its train domains"));
}

TEST(LockboxTest, FinalRunRefitsOnEveryPreLockboxRowAndEvaluatesOnce) {
  StudyConfig study = WalkForwardStudy();
  absl::StatusOr<learner::TrainerOptions> o =
      BuildFinalRunOptions(study, {{"gamma", "0.95"}}, GappedData(), 12345);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->final_evaluation);
  EXPECT_EQ(o->eval_every_env_steps, 0);
  EXPECT_EQ(o->budget_env_steps, 12345);
  EXPECT_EQ(o->ppo.gamma, 0.95);
  EXPECT_THAT(o->train_domains,
              ElementsAre(Domain{0, 2000}, Domain{2000, 2800}));
  EXPECT_THAT(o->validation_domains, ElementsAre(Domain{2800, 3000}));
  EXPECT_TRUE(learner::CheckLockbox(*o).ok());
  // A final run may not validate before the lockbox.
  learner::TrainerOptions bad = *o;
  bad.validation_domains = {Domain{2700, 3000}};
  const absl::Status early = learner::CheckLockbox(bad);
  EXPECT_FALSE(early.ok());
  EXPECT_EQ(early.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(early.message()),
              ::testing::HasSubstr("starts before the lockbox"));
  const absl::StatusOr<learner::TrainerOptions> no_steps =
      BuildFinalRunOptions(study, {}, GappedData(), 0);
  EXPECT_FALSE(no_steps.ok());
  EXPECT_EQ(no_steps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_steps.status().message()),
              ::testing::HasSubstr("needs >= 1 env steps (got 0)"));
}

TEST(LockboxTest, RefitsDifferInTheirSeedOnly) {
  StudyConfig study = WalkForwardStudy();
  study.lockbox.refits = 3;
  const Params params = {{"gamma", "0.95"}};
  std::vector<learner::TrainerOptions> refits;
  for (int r = 0; r < 3; ++r) {
    absl::StatusOr<learner::TrainerOptions> o =
        BuildFinalRunOptions(study, params, GappedData(), 12345, r);
    ASSERT_TRUE(o.ok()) << o.status();
    refits.push_back(*o);
  }
  // The first refit keeps the seed a single final run had.
  study.lockbox.refits = 1;
  absl::StatusOr<learner::TrainerOptions> single =
      BuildFinalRunOptions(study, params, GappedData(), 12345);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(refits[0].seed, single->seed);
  absl::StatusOr<std::vector<learner::TrainerOptions>> folds =
      BuildRunOptions(study, params, GappedData());
  ASSERT_TRUE(folds.ok()) << folds.status();
  for (int r = 0; r < 3; ++r) {
    for (int q = 0; q < r; ++q) EXPECT_NE(refits[r].seed, refits[q].seed);
    for (const learner::TrainerOptions& f : *folds) {
      EXPECT_NE(refits[r].seed, f.seed);
    }
    learner::TrainerOptions same_seed = refits[r];
    same_seed.seed = refits[0].seed;
    absl::StatusOr<std::string> a =
        learner::TrainerOptionsToConfigJson(same_seed);
    absl::StatusOr<std::string> b =
        learner::TrainerOptionsToConfigJson(refits[0]);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << "refit " << r;
  }
  study.lockbox.refits = 3;
  EXPECT_FALSE(
      BuildFinalRunOptions(study, params, GappedData(), 12345, 3).ok());
  EXPECT_FALSE(
      BuildFinalRunOptions(study, params, GappedData(), 12345, -1).ok());
}

TEST(LockboxTest, TooLargeALockboxIsRefusedNamingIt) {
  StudyConfig study = WalkForwardStudy();
  study.lockbox.bars = 2950;
  absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
      BuildRunOptions(study, {}, GappedData());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(runs.status().message()),
              ::testing::StartsWith("lockbox: 2950 rows"));
  // Enough rows for the lockbox but not for the CV scheme: the folds say so.
  study.lockbox.bars = 1000;
  runs = BuildRunOptions(study, {}, GappedData());
  EXPECT_FALSE(runs.ok());
  EXPECT_EQ(runs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(runs.status().message()),
              ::testing::HasSubstr("WalkForward: no fold fits"));
}

// The shipped studies end to end, minus training: parse, generate the
// synthetic market, sample trials, build every fold's options.
TEST(RunBuilderTest, ShippedStudiesBuildValidRunsForSampledTrials) {
  for (const char* file : {"small.yaml", "default.yaml"}) {
    SCOPED_TRACE(file);
    absl::StatusOr<std::string> text = ReadFileToString(
        std::string(RISTRETTO_SOURCE_DIR) + "/deploy/studies/" + file);
    ASSERT_TRUE(text.ok());
    absl::StatusOr<StudyConfig> study = ParseStudyConfig(*text);
    ASSERT_TRUE(study.ok()) << study.status();
    ASSERT_TRUE(study->dataset.synthetic);
    absl::StatusOr<env::Dataset> dataset =
        env::GenerateSyntheticDataset(SyntheticOptions(study->dataset));
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    DatasetInfo data;
    data.id = dataset->ComputeId();
    data.num_rows = dataset->num_rows();
    data.domains = dataset->domains;
    data.feature_names = dataset->feature_names;
    absl::StatusOr<std::unique_ptr<Sampler>> sampler =
        MakeSampler(study->sampler, study->space);
    ASSERT_TRUE(sampler.ok());
    for (int64_t n = 0; n < 5; ++n) {
      absl::StatusOr<Params> params = (*sampler)->Sample(n, {});
      ASSERT_TRUE(params.ok());
      absl::StatusOr<std::vector<learner::TrainerOptions>> runs =
          BuildRunOptions(*study, *params, data);
      ASSERT_TRUE(runs.ok()) << runs.status();
      EXPECT_EQ(runs->size(), std::string(file) == "small.yaml" ? 2u : 15u);
      for (const learner::TrainerOptions& o : *runs) {
        EXPECT_TRUE(o.env.Validate().ok());
        EXPECT_FALSE(o.train_domains.empty());
        EXPECT_FALSE(o.validation_domains.empty());
      }
      if (std::string(file) == "small.yaml") {
        // The demo's lockbox policy is the refit's last weights: its
        // learning rate decays to 0 at the refit's own budget, so those
        // weights have settled (with a constant rate the refits of the
        // same trial lost the edge on 43 % of the tries, docs/study_format.md).
        absl::StatusOr<learner::TrainerOptions> refit =
            BuildFinalRunOptions(*study, *params, data, 100000);
        ASSERT_TRUE(refit.ok()) << refit.status();
        EXPECT_EQ(refit->ppo.lr_schedule, learner::LrSchedule::kLinear);
        for (const learner::TrainerOptions& o : *runs) {
          EXPECT_EQ(o.ppo.lr_schedule, learner::LrSchedule::kLinear);
        }
      }
    }
  }
}

// The deflated Sharpe's tries per trial follow the trial's own budget.
TEST(CheckpointsPerRunTest, TheTrialsBudgetAndIntervalDecide) {
  StudyConfig study = WalkForwardStudy();  // 20000 steps, every 5000
  EXPECT_EQ(*CheckpointsPerRun(study, {}), 4);
  EXPECT_EQ(*CheckpointsPerRun(study, {{"budget", "21000"}}), 5);
  study.fixed["budget"] = "40000";
  EXPECT_EQ(*CheckpointsPerRun(study, {}), 8);
  // params win over fixed, as in the runs
  EXPECT_EQ(*CheckpointsPerRun(study, {{"budget", "5000"}}), 1);
  study.eval_every_env_steps = 0;
  EXPECT_EQ(*CheckpointsPerRun(study, {{"budget", "400000"}}), 1);
  absl::StatusOr<int64_t> bad =
      CheckpointsPerRun(WalkForwardStudy(), {{"budget", "lots"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("budget"));
}

TEST(MakeFoldsTest, HoldoutValidatesTheLastFraction) {
  CvSpec cv;
  cv.scheme = "holdout";
  cv.validation_fraction = 0.25;
  cv.embargo_bars = 10;
  absl::StatusOr<std::vector<env::Fold>> folds = MakeFolds(cv, 1000);
  ASSERT_TRUE(folds.ok());
  ASSERT_EQ(folds->size(), 1u);
  EXPECT_THAT((*folds)[0].train, ElementsAre(Domain{0, 740}));
  EXPECT_THAT((*folds)[0].test, ElementsAre(Domain{750, 1000}));
}

TEST(MakeFoldsTest, CpcvKfoldAndMaxFolds) {
  CvSpec cv;
  cv.scheme = "cpcv";
  cv.groups = 6;
  cv.test_groups = 2;
  absl::StatusOr<std::vector<env::Fold>> folds = MakeFolds(cv, 600);
  ASSERT_TRUE(folds.ok());
  EXPECT_EQ(folds->size(), 15u);
  cv.max_folds = 4;
  EXPECT_EQ(MakeFolds(cv, 600)->size(), 4u);
  cv = CvSpec();
  cv.scheme = "kfold";
  cv.folds = 4;
  folds = MakeFolds(cv, 400);
  ASSERT_TRUE(folds.ok());
  ASSERT_EQ(folds->size(), 4u);
  EXPECT_THAT((*folds)[1].test, ElementsAre(Domain{100, 200}));
}

// ---- CheckStudyFitsDataset (`ristretto up` with given data).

TEST(CheckStudyFitsDatasetTest, AStudyThatFitsPasses) {
  StudyConfig study = WalkForwardStudy();
  ParamSpec lookback;
  lookback.name = "lookback";
  lookback.kind = ParamKind::kInt;
  lookback.low = 1;
  lookback.high = 8;
  study.space = {lookback};
  EXPECT_TRUE(CheckStudyFitsDataset(study, GappedData()).ok());
}

TEST(CheckStudyFitsDatasetTest, TheUpperCornerOfTheSpaceMustFitToo) {
  StudyConfig study = WalkForwardStudy();
  ParamSpec lookback;
  lookback.name = "lookback";
  lookback.kind = ParamKind::kInt;
  lookback.low = 1;
  lookback.high = 400;  // 1024 + 2·400 rows > the 1600-row training blocks
  study.space = {lookback};
  const absl::Status s = CheckStudyFitsDataset(study, GappedData());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("fold 0: episode_steps = 1024 needs 1824 "
                                   "rows"));
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("(at the upper corner of the search "
                                   "space: lookback=400)"));
}

TEST(CheckStudyFitsDatasetTest, DomainsShorterThanAnEpisodeAreRefused) {
  DatasetInfo data = GappedData();
  data.domains.clear();
  for (int64_t b = 0; b < 3000; b += 500) {
    data.domains.push_back(Domain{b, b + 500});
  }
  const absl::Status s = CheckStudyFitsDataset(WalkForwardStudy(), data);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("fold 0: episode_steps = 1024 needs 1026 "
                                   "rows (episode_steps + 2·lookback) but "
                                   "the longest training block has 500"));
}

// Some folds only (a trial that reported part of its folds): CPCV with 4
// groups and 2 test groups has folds {0,1}, {0,2}, {0,3}, {1,2}, …; folds 0
// and 1 test group 0 twice and groups 1, 2 once: 4 group-tests over 3.
TEST(RunBuilderTest, FoldsBarMultiplicityCountsTheGivenFoldsOnly) {
  CvSpec cpcv;
  cpcv.scheme = "cpcv";
  cpcv.groups = 4;
  cpcv.test_groups = 2;
  absl::StatusOr<double> m = FoldsBarMultiplicity(cpcv, 4000, {0, 1});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 4.0 / 3.0);
  m = FoldsBarMultiplicity(cpcv, 4000, {0});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 1.0);
  m = FoldsBarMultiplicity(cpcv, 4000, {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 3.0);  // all: C(3, 1)
  EXPECT_EQ(*m, *ValidationBarMultiplicity(cpcv, 4000));
  m = FoldsBarMultiplicity(cpcv, 4000, {6});
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              ::testing::HasSubstr("fold 6 is not one of the 6 folds"));
  m = FoldsBarMultiplicity(cpcv, 4000, {-1});
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              ::testing::HasSubstr("fold -1 is not one of the 6 folds"));
}

// CPCV tests each row C(N − 1, k − 1) times; the other schemes once unless
// walk-forward test blocks overlap.
TEST(RunBuilderTest, ValidationBarMultiplicityCountsRepeatedTestRows) {
  CvSpec cpcv;
  cpcv.scheme = "cpcv";
  cpcv.groups = 6;
  cpcv.test_groups = 2;
  cpcv.embargo_bars = 10;
  absl::StatusOr<double> m = ValidationBarMultiplicity(cpcv, 6000);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 5.0);  // C(5, 1)
  cpcv.test_groups = 3;
  m = ValidationBarMultiplicity(cpcv, 6000);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 10.0);  // C(5, 2)
  CvSpec kfold;
  kfold.scheme = "kfold";
  kfold.folds = 4;
  m = ValidationBarMultiplicity(kfold, 1000);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 1.0);
  CvSpec holdout;
  m = ValidationBarMultiplicity(holdout, 1000);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 1.0);
  CvSpec wf;
  wf.scheme = "walk_forward";
  wf.train_bars = 1000;
  wf.test_bars = 400;
  wf.step_bars = 400;
  m = ValidationBarMultiplicity(wf, 3000);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 1.0);
  // Test blocks [1000, 1400), [1200, 1600), …, [2600, 3000): 9 blocks of 400
  // over the 2000 rows [1000, 3000).
  wf.step_bars = 200;
  m = ValidationBarMultiplicity(wf, 3000);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(*m, 9 * 400 / 2000.0);
  wf.test_bars = 5000;
  m = ValidationBarMultiplicity(wf, 3000);
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              ::testing::HasSubstr("WalkForward: no fold fits"));
}

}  // namespace
}  // namespace ristretto::coordinator
