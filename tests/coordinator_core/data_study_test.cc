#include "coordinator/core/data_study.h"

#include <string>

#include "absl/status/status.h"
#include "coordinator/core/study_config.h"
#include "env/features.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

using ::testing::HasSubstr;

const std::string kId(64, 'a');  // a dataset id: 64 hex digits

// The study written for `rows` × `assets` parses, and fits a dataset of
// that many rows in one domain (as `up` checks before it starts).
StudyConfig ParsedFits(const DataStudySizing& s) {
  absl::StatusOr<std::string> bound =
      BindStudyDataset(DataStudyYaml(s, "data-test"), kId);
  EXPECT_TRUE(bound.ok()) << bound.status();
  absl::StatusOr<StudyConfig> config = ParseStudyConfig(*bound);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return StudyConfig{};
  DatasetInfo info;
  info.id = kId;
  info.num_rows = s.rows;
  info.domains = {{0, s.rows}};
  info.feature_names = env::DefaultFeatureNames();
  const absl::Status fits = CheckStudyFitsDataset(*config, info);
  EXPECT_TRUE(fits.ok()) << fits;
  return *config;
}

TEST(DataStudyTest, AShortFileGetsTwoFoldsAndTheSmallestBudget) {
  absl::StatusOr<DataStudySizing> s = SizeStudyForData(3000, 2, 1800);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->lockbox_rows, 450);
  EXPECT_EQ(s->guard_rows, 2550);
  EXPECT_EQ(s->folds, 2);
  EXPECT_EQ(s->train_bars, 1275);
  EXPECT_EQ(s->test_bars, 637);
  EXPECT_EQ(s->budget_env_steps, 50000);  // 10 passes would be 12,750
  EXPECT_EQ(s->width, 64);
  const StudyConfig c = ParsedFits(*s);
  EXPECT_EQ(c.budget_env_steps, 50000);
  EXPECT_EQ(c.lockbox.refits, 3);
}

TEST(DataStudyTest, YearsOfHourlyBarsGetMoreFoldsTrainingAndWidth) {
  // About the size of 2.8 years of hourly bars of 5 pairs.
  absl::StatusOr<DataStudySizing> s = SizeStudyForData(24500, 5, 3600);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->guard_rows, 24500 - 3675);
  EXPECT_EQ(s->folds, 4);
  EXPECT_EQ(s->train_bars, 10412);
  EXPECT_EQ(s->test_bars, 2603);
  EXPECT_EQ(s->budget_env_steps, 110000);  // 10 × 10,412 rounded up
  EXPECT_NEAR(s->passes, 10.56, 0.01);
  EXPECT_EQ(s->width, 128);
  const StudyConfig c = ParsedFits(*s);
  EXPECT_EQ(c.budget_env_steps, 110000);
  EXPECT_EQ(c.eval_every_env_steps, 55000);
  // The reward's turnover penalty (docs/env_actions.md: without it the
  // policy churned its capital away on real hourly data).
  EXPECT_THAT(DataStudyYaml(*s, "x"),
              HasSubstr("\n  turnover_penalty: 0.01\n"));
  // The learning-rate range (docs/env_actions.md: faster learners churned).
  const ParamSpec* lr = nullptr;
  for (const ParamSpec& p : c.space) {
    if (p.name == "learning_rate") lr = &p;
  }
  ASSERT_NE(lr, nullptr);
  EXPECT_DOUBLE_EQ(lr->low, 1.0e-4);
  EXPECT_DOUBLE_EQ(lr->high, 1.0e-3);
  EXPECT_TRUE(lr->log);
  EXPECT_THAT(DataStudySizingText(*s),
              HasSubstr("24,500 rows x 5 assets -> lockbox the last 3,675 "
                        "rows (3 refits); 4 walk-forward folds over the "
                        "20,825 rows before it (train 10,412, test 2,603 "
                        "each); 110,000 env steps per run (10.6 passes"));
  // One decision every three days on hourly bars.
  EXPECT_EQ(s->decision_bars, 72);
  EXPECT_EQ(c.fixed.at("decision_bars"), "72");
  EXPECT_THAT(DataStudySizingText(*s), HasSubstr("one decision every 72 bars"));
}

// The decision interval is three days in bars, at most 72 bars, and every
// bar on bars of three days or more or when the interval is unknown.
TEST(DataStudyTest, OneDecisionEveryThreeDaysAtMost72Bars) {
  const struct {
    int64_t interval;
    int decision_bars;
  } cases[] = {{60, 72},    {300, 72},  {1800, 72}, {3600, 72},  {14400, 18},
               {21600, 12}, {43200, 6}, {86400, 3}, {604800, 1}, {0, 1}};
  for (const auto& c : cases) {
    absl::StatusOr<DataStudySizing> s = SizeStudyForData(30000, 3, c.interval);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->decision_bars, c.decision_bars) << c.interval << " s";
    EXPECT_EQ(ParsedFits(*s).fixed.at("decision_bars"),
              std::to_string(c.decision_bars))
        << c.interval << " s";
  }
}

TEST(DataStudyTest, VeryLongDataIsCappedAndTooShortDataIsRefused) {
  absl::StatusOr<DataStudySizing> s = SizeStudyForData(1000000, 20, 300);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->folds, 4);
  EXPECT_EQ(s->budget_env_steps, 400000);
  ParsedFits(*s);
  absl::StatusOr<DataStudySizing> short_data = SizeStudyForData(1200, 3, 3600);
  EXPECT_EQ(short_data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_data.status().message(),
              HasSubstr("1020 before the lockbox are too few"));
  EXPECT_EQ(SizeStudyForData(0, 3, 3600).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SizeStudyForData(5000, 0, 3600).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ristretto::coordinator
