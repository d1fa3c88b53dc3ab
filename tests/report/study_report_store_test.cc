// LoadStudyReport / WriteStudyReport against a real PostgreSQL
// (pg_test_env.h): a study filled through the Store as the coordinator
// fills it (complete, pruned and failed trials, intermediate values, fold
// metrics, a lockbox run), then the report data and file checked.
#include "report/study_report_store.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/file_util.h"
#include "common/options_schema.h"
#include "coordinator/core/study_config.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/study_result.h"
#include "env/market_data.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/run_config_codec.h"
#include "tests/coordinator_store/pg_test_env.h"

namespace ristretto::report {
namespace {

namespace fs = std::filesystem;
namespace co = coordinator;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kMember[] = "test-learner";

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class StudyReportStoreTest : public co::testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    absl::StatusOr<std::unique_ptr<co::Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    absl::StatusOr<std::string> text = ReadFileToString(
        std::string(RISTRETTO_SOURCE_DIR) + "/deploy/studies/small.yaml");
    ASSERT_TRUE(text.ok()) << text.status();
    text_ = *text;
    absl::StatusOr<co::StudyConfig> config = co::ParseStudyConfig(text_);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
    absl::StatusOr<env::Dataset> dataset =
        env::GenerateSyntheticDataset(co::SyntheticOptions(config_.dataset));
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    dataset_ = *std::move(dataset);
    info_.id = dataset_.ComputeId();
    info_.num_rows = dataset_.num_rows();
    info_.domains = dataset_.domains;
    info_.feature_names = dataset_.feature_names;
    absl::StatusOr<std::string> dir = co::testing::MakeTempDir("report-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    tmp_ = *dir;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // runs.config_json for `o`: RunConfig's JSON, or with legacy_configs_ the
  // layout rows held before RunConfig (the fields the report reads).
  std::string Stored(const learner::TrainerOptions& o) const {
    if (legacy_configs_) {
      auto domains = [](const std::vector<env::Domain>& ds) {
        std::string out = "[";
        for (const env::Domain& d : ds) {
          absl::StrAppend(&out, out.size() > 1 ? "," : "", "[", d.begin, ",",
                          d.end, "]");
        }
        return out + "]";
      };
      return absl::StrCat(
          R"({"env":{"lookback":)", o.env.lookback, R"(,"buy_fee":)",
          FormatOptionNumber(o.env.buy_fee), R"(,"sell_fee":)",
          FormatOptionNumber(o.env.sell_fee), R"(},"train_domains":)",
          domains(o.train_domains), R"(,"validation_domains":)",
          domains(o.validation_domains), R"(,"lockbox_begin":)",
          o.lockbox_begin, R"(,"lockbox_guard":)", o.lockbox_guard,
          R"(,"final_evaluation":)", o.final_evaluation ? "true" : "false",
          R"(,"seed":)", o.seed, "}");
    }
    absl::StatusOr<std::string> json = learner::TrainerOptionsToConfigJson(o);
    EXPECT_TRUE(json.ok()) << json.status();
    return json.ok() ? *json : std::string();
  }

  co::Params ParamsOf(double lr) const {
    return {{"learning_rate", co::FormatDouble(lr)},
            {"gamma", "0.95"},
            {"clip_ratio", "0.2"}};
  }

  // A trial with its two fold runs leased. Returns the trial and runs.
  std::pair<co::TrialRow, std::vector<co::RunRow>> StartTrial(
      int64_t study_id, const co::Params& params) {
    std::vector<co::ParamRow> rows;
    rows.reserve(params.size());
    for (const auto& [k, v] : params) rows.push_back({k, v});
    absl::StatusOr<std::vector<learner::TrainerOptions>> options =
        co::BuildRunOptions(config_, params, info_);
    EXPECT_TRUE(options.ok()) << options.status();
    std::vector<std::string> configs;
    for (const auto& o : *options) {
      configs.push_back(Stored(o));
    }
    absl::StatusOr<co::TrialRow> trial =
        store_->CreateTrial(study_id, rows, configs, tmp_ + "/runs");
    EXPECT_TRUE(trial.ok()) << trial.status();
    std::vector<co::RunRow> runs;
    for (size_t k = 0; k < configs.size(); ++k) {
      absl::StatusOr<std::optional<co::RunRow>> run =
          store_->LeaseRun(kMember, absl::Minutes(5));
      EXPECT_TRUE(run.ok() && run->has_value());
      runs.push_back(**run);
    }
    return {*trial, runs};
  }

  // Completes both folds (validation returns with the given drift) and the
  // trial; optionally its final run on the lockbox. Returns the lockbox
  // options (for the row arithmetic) when it ran one.
  std::optional<learner::TrainerOptions> CompleteTrial(int64_t study_id,
                                                       double lr, double score,
                                                       bool lockbox) {
    auto [trial, runs] = StartTrial(study_id, ParamsOf(lr));
    for (const co::RunRow& run : runs) {
      EXPECT_TRUE(
          store_->ReportIntermediate(run.id, kMember, 50000, score - 1).ok());
      co::FoldMetrics m;
      m.fold = run.fold;
      for (int i = 0; i < 1192; ++i) {
        m.log_returns.push_back(0.001 * std::sin(i * 0.3 + run.fold) +
                                0.0002 * score);
      }
      m.sharpe = score;
      m.score = score;
      m.benchmark_sharpe = 0.5;
      m.env_steps = 100000;
      EXPECT_TRUE(store_->CompleteRun(run.id, kMember, m, {}).ok());
    }
    EXPECT_TRUE(store_->CompleteTrial(trial.id, score).ok());
    if (!lockbox) return std::nullopt;
    absl::StatusOr<learner::TrainerOptions> final_options =
        co::BuildFinalRunOptions(config_, ParamsOf(lr), info_, 100000);
    EXPECT_TRUE(final_options.ok()) << final_options.status();
    EXPECT_TRUE(
        store_->AddFinalRun(trial.id, Stored(*final_options), tmp_ + "/runs")
            .ok());
    absl::StatusOr<std::optional<co::RunRow>> run =
        store_->LeaseRun(kMember, absl::Minutes(5));
    EXPECT_TRUE(run.ok() && run->has_value());
    co::LockboxRow row;
    for (const env::Domain& d : final_options->validation_domains) {
      for (int64_t i = 0; i < d.size() - 2 * final_options->env.lookback; ++i) {
        row.policy.log_returns.push_back(0.0005);
      }
    }
    row.bars = static_cast<int64_t>(row.policy.log_returns.size());
    row.policy.sharpe = 3.25;
    row.sharpe_se = lockbox_se_;
    row.bh_sharpe = 0.75;
    row.bh_sharpe_se = 1.25;
    row.random_seeds = 20;
    EXPECT_TRUE(
        store_->CompleteFinalRun((*run)->id, kMember, std::move(row), {}).ok());
    return *final_options;
  }

  // Trials 0 (complete), 1 (complete, best, lockbox), 2 (pruned after
  // reports of 0.3 and 0.5), 3 (failed). Returns the lockbox options.
  learner::TrainerOptions Fill(int64_t study_id) {
    EXPECT_TRUE(store_->SetStudyState(study_id, co::StudyState::kRunning).ok());
    CompleteTrial(study_id, 1e-3, 1.0, /*lockbox=*/false);
    std::optional<learner::TrainerOptions> lockbox =
        CompleteTrial(study_id, 2e-3, 2.0, /*lockbox=*/true);
    auto [pruned, pruned_runs] = StartTrial(study_id, ParamsOf(6e-4));
    EXPECT_TRUE(
        store_->ReportIntermediate(pruned_runs[0].id, kMember, 50000, 0.3)
            .ok());
    EXPECT_TRUE(
        store_->ReportIntermediate(pruned_runs[1].id, kMember, 50000, 0.5)
            .ok());
    // Fold 0 reports once more alone; the pruner then judges the mean of
    // each fold's latest value, (0.9 + 0.5) / 2, not fold 0's 0.9.
    EXPECT_TRUE(
        store_->ReportIntermediate(pruned_runs[0].id, kMember, 100000, 0.9)
            .ok());
    EXPECT_TRUE(store_->PruneTrial(pruned.id).ok());
    auto [failed, failed_runs] = StartTrial(study_id, ParamsOf(2.5e-3));
    EXPECT_TRUE(
        store_->FailRun(failed_runs[1].id, kMember, "learner <b>crashed</b>")
            .ok());
    return *lockbox;
  }

  std::unique_ptr<co::Store> store_;
  bool legacy_configs_ = false;
  double lockbox_se_ = 1.5;  // the final run's stored Sharpe error
  std::string text_;
  co::StudyConfig config_;
  env::Dataset dataset_;
  co::DatasetInfo info_;
  std::string tmp_;
};

TEST_F(StudyReportStoreTest, LoadsEveryPartOfARealStudy) {
  absl::StatusOr<co::StudyRow> study = store_->CreateStudy("small", text_);
  ASSERT_TRUE(study.ok()) << study.status();
  const learner::TrainerOptions lockbox_options = Fill(study->id);

  absl::StatusOr<StudyReportData> d = LoadStudyReport(*store_, "small");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->study_name, "small");
  EXPECT_EQ(d->objective, config_.objective);
  ASSERT_EQ(d->params.size(), 3U);
  EXPECT_TRUE(std::any_of(
      d->params.begin(), d->params.end(),
      [](const ReportParam& p) { return p.name == "learning_rate" && p.log; }));
  ASSERT_EQ(d->trials.size(), 4U);
  for (size_t i = 0; i < d->trials.size(); ++i) {
    EXPECT_EQ(d->trials[i].number, static_cast<int64_t>(i));
  }
  EXPECT_EQ(d->best_trial, 1);
  // Complete trials: CV Sharpe ± SE over both folds' bars.
  ASSERT_TRUE(d->trials[1].cv_sharpe.has_value());
  EXPECT_TRUE(std::isfinite(*d->trials[1].cv_sharpe_se));
  EXPECT_GT(*d->trials[1].cv_sharpe_se, 0);
  EXPECT_EQ(d->trials[1].lockbox_sharpe, 3.25);
  EXPECT_EQ(d->trials[1].lockbox_sharpe_se, 1.5);
  EXPECT_FALSE(d->trials[0].lockbox_sharpe.has_value());
  // The pruned trial: the mean over the folds reporting at each step, and
  // the value the pruner judged at its last step (each fold's latest).
  EXPECT_EQ(d->trials[2].state, "pruned");
  ASSERT_EQ(d->trials[2].intermediate.size(), 2U);
  EXPECT_EQ(d->trials[2].intermediate.front().first, 50000);
  EXPECT_DOUBLE_EQ(d->trials[2].intermediate.front().second, 0.4);
  EXPECT_EQ(d->trials[2].intermediate.back().first, 100000);
  EXPECT_DOUBLE_EQ(d->trials[2].intermediate.back().second, 0.9);
  ASSERT_TRUE(d->trials[2].judged_value.has_value());
  EXPECT_DOUBLE_EQ(*d->trials[2].judged_value, 0.7);
  EXPECT_EQ(d->trials[2].judged_step, 100000);
  EXPECT_EQ(d->trials[3].state, "failed");
  EXPECT_THAT(d->trials[3].fail_reason, HasSubstr("learner <b>crashed</b>"));

  // Folds of the best trial: buy & hold's SE rebuilt on the fold's rows.
  ASSERT_EQ(d->best_folds.size(), 2U);
  for (const ReportFold& f : d->best_folds) {
    EXPECT_EQ(f.bars, 1192);
    EXPECT_EQ(f.bh_sharpe, 0.5);
    EXPECT_TRUE(std::isfinite(f.sharpe_se)) << f.fold;
    EXPECT_TRUE(std::isfinite(f.bh_sharpe_se)) << f.fold;
    EXPECT_GT(f.bh_sharpe_se, 0);
  }

  // The lockbox: buy & hold on the same bars, with each bar's end time.
  ASSERT_TRUE(d->lockbox.has_value());
  const ReportLockbox& l = *d->lockbox;
  EXPECT_EQ(l.sharpe, 3.25);
  EXPECT_EQ(l.bh_sharpe_se, 1.25);
  ASSERT_FALSE(l.policy_log_returns.empty());
  ASSERT_EQ(l.bh_log_returns.size(), l.policy_log_returns.size());
  ASSERT_EQ(l.timestamps.size(), l.policy_log_returns.size());
  // The first return ends at row begin + L of the lockbox's first domain
  // (played from begin + L − 1): its bar closes one interval after it opens.
  const env::Domain& first = lockbox_options.validation_domains.front();
  const int64_t row = first.begin + lockbox_options.env.lookback;
  EXPECT_EQ(l.timestamps.front(),
            dataset_.timestamps[static_cast<size_t>(row)] +
                dataset_.interval_seconds);
  for (size_t i = 1; i < l.timestamps.size(); ++i) {
    EXPECT_GT(l.timestamps[i], l.timestamps[i - 1]);
  }
  // Buy & hold's rebuilt returns add up to the log of the assets' mean
  // price growth over each lockbox domain's played rows (equal weight),
  // less the purchase's fee and slippage (the account starts in cash).
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      env::MarketData::FromDataset(dataset_);
  ASSERT_TRUE(market.ok()) << market.status();
  const env::MarketData& m = **market;
  double expected = 0;
  for (const env::Domain& dom : lockbox_options.validation_domains) {
    const int64_t a = dom.begin + lockbox_options.env.lookback - 1;
    const int64_t b = dom.begin + dom.size() - lockbox_options.env.lookback - 1;
    double growth = 0;
    for (int i = 0; i < m.num_assets; ++i) {
      growth += m.price[static_cast<size_t>(b * m.num_assets + i)] /
                m.price[static_cast<size_t>(a * m.num_assets + i)] /
                m.num_assets;
    }
    expected += std::log(growth) -
                std::log((1 + lockbox_options.env.slippage_bps / 1e4) *
                         (1 + lockbox_options.env.buy_fee));
  }
  double sum = 0;
  for (double r : l.bh_log_returns) sum += r;
  EXPECT_NEAR(sum, expected, 1e-9);
  EXPECT_FALSE(d->statistics.verdict.empty());
}

// CPCV with 4 groups and 2 test groups tests every bar in 3 folds: a
// trial's pooled CV returns are not 3× the bars, so its CV Sharpe's
// standard error is the pooled series' × √3, as the study statistics say.
TEST_F(StudyReportStoreTest, ACpcvTrialsErrorCountsEachBarOnce) {
  const std::string walk_forward =
      "cv:\n  scheme: walk_forward\n  train_bars: 2400\n  test_bars: 1200\n"
      "  step_bars: 1200\n";
  ASSERT_NE(text_.find(walk_forward), std::string::npos);
  text_ = absl::StrReplaceAll(
      text_,
      {{walk_forward, "cv: {scheme: cpcv, groups: 4, test_groups: 2}\n"}});
  absl::StatusOr<co::StudyConfig> config = co::ParseStudyConfig(text_);
  ASSERT_TRUE(config.ok()) << config.status();
  config_ = *config;
  absl::StatusOr<co::StudyRow> study = store_->CreateStudy("cpcv", text_);
  ASSERT_TRUE(study.ok()) << study.status();
  Fill(study->id);

  absl::StatusOr<StudyReportData> d = LoadStudyReport(*store_, "cpcv");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_NEAR(d->statistics.cv_bar_multiplicity, 3.0, 1e-9);
  ASSERT_TRUE(d->trials[1].cv_sharpe_se.has_value());
  // Trial 1's validation returns as CompleteTrial wrote them (6 folds).
  std::vector<double> pooled;
  for (int fold = 0; fold < 6; ++fold) {
    for (int i = 0; i < 1192; ++i) {
      pooled.push_back(0.001 * std::sin(i * 0.3 + fold) + 0.0002 * 2.0);
    }
  }
  const double naive = co::AnnualisedSharpeError(pooled, 17520);
  ASSERT_TRUE(std::isfinite(naive));
  // √3 larger (to the n − 1 in the error: 7151 vs 2383 distinct bars).
  EXPECT_NEAR(*d->trials[1].cv_sharpe_se / naive, std::sqrt(3.0), 1e-3);
  // The study statistics' error for the best trial is the same number.
  EXPECT_NEAR(d->statistics.cv_sharpe_se, *d->trials[1].cv_sharpe_se,
              1e-9 * naive);
}

// The deflated Sharpe's N: the complete, the pruned and the failed trials
// that reported a validation (the search saw them), each counted with the
// most validations any of them could compare (a trial's own budget).
TEST_F(StudyReportStoreTest, TriesCountFailedTrialsThatReportedAndTheirBudget) {
  absl::StatusOr<co::StudyRow> study = store_->CreateStudy("small", text_);
  ASSERT_TRUE(study.ok()) << study.status();
  Fill(study->id);
  {
    absl::StatusOr<co::StudyStatistics> s =
        co::ComputeStudyResult(*store_, *study);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->trials_tried, 3);         // trial 3 failed before any report
    EXPECT_EQ(s->checkpoints_per_run, 2);  // 100k steps, every 50k
    EXPECT_EQ(s->effective_trials, 6);
  }
  co::Params params = ParamsOf(8e-4);
  params["budget"] = "400000";
  auto [trial, runs] = StartTrial(study->id, params);
  ASSERT_EQ(runs.size(), 2U);
  ASSERT_TRUE(store_->ReportIntermediate(runs[0].id, kMember, 50000, 0.7).ok());
  ASSERT_TRUE(store_->FailRun(runs[0].id, kMember, "diverged").ok());
  absl::StatusOr<co::StudyStatistics> s =
      co::ComputeStudyResult(*store_, *study);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->trials_tried, 4);
  EXPECT_EQ(s->checkpoints_per_run, 8);  // 400k steps, every 50k
  EXPECT_EQ(s->effective_trials, 32);
  // A fold that finished (no intermediate value) before the trial failed.
  auto [other, other_runs] = StartTrial(study->id, ParamsOf(9e-4));
  ASSERT_EQ(other_runs.size(), 2U);
  co::FoldMetrics m;
  m.fold = other_runs[0].fold;
  m.log_returns.assign(1192, 0.0001);
  m.env_steps = 100000;
  ASSERT_TRUE(store_->CompleteRun(other_runs[0].id, kMember, m, {}).ok());
  ASSERT_TRUE(store_->FailRun(other_runs[1].id, kMember, "disk full").ok());
  s = co::ComputeStudyResult(*store_, *study);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->trials_tried, 5);
  EXPECT_EQ(s->effective_trials, 40);
}

// An undefined lockbox error (stored as 0) is n/a, never "± 0.00".
TEST_F(StudyReportStoreTest, AnUndefinedLockboxErrorIsNotShownAsZero) {
  absl::StatusOr<co::StudyRow> study = store_->CreateStudy("small", text_);
  ASSERT_TRUE(study.ok()) << study.status();
  lockbox_se_ = 0;
  Fill(study->id);
  absl::StatusOr<StudyReportData> d = LoadStudyReport(*store_, "small");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->trials[1].lockbox_sharpe_se.has_value());
  EXPECT_TRUE(std::isnan(*d->trials[1].lockbox_sharpe_se));
  ASSERT_TRUE(d->lockbox.has_value());
  EXPECT_TRUE(std::isnan(d->lockbox->sharpe_se));
  EXPECT_FALSE(d->statistics.edge);
  EXPECT_THAT(d->statistics.verdict, Not(HasSubstr("3.25 ± 0.00")));
  absl::StatusOr<std::string> path =
      WriteStudyReport(*store_, "small", tmp_ + "/out");
  ASSERT_TRUE(path.ok()) << path.status();
  const std::string html = ReadAll(*path);
  EXPECT_THAT(html, HasSubstr("3.25 \xC2\xB1 n/a"));
  EXPECT_THAT(html, Not(HasSubstr("3.25 \xC2\xB1 0.00")));
}

// A database written before RunConfig: its runs.config_json rows hold the
// older JSON layout, and the report still reads every run's rows from them.
TEST_F(StudyReportStoreTest, ReadsRunConfigsOfTheOlderJsonLayout) {
  legacy_configs_ = true;
  absl::StatusOr<co::StudyRow> study = store_->CreateStudy("small", text_);
  ASSERT_TRUE(study.ok()) << study.status();
  Fill(study->id);
  absl::StatusOr<std::vector<co::TrialRow>> trials =
      store_->ListTrials(study->id);
  ASSERT_TRUE(trials.ok() && !trials->empty());
  absl::StatusOr<std::vector<co::RunRow>> runs =
      store_->ListRuns(trials->front().id);
  ASSERT_TRUE(runs.ok() && !runs->empty());
  for (const co::RunRow& run : *runs) {
    EXPECT_THAT(run.config_json, Not(HasSubstr("\"options\"")));
    EXPECT_THAT(run.config_json, HasSubstr("\"validation_domains\":[["));
  }
  absl::StatusOr<StudyReportData> d = LoadStudyReport(*store_, "small");
  ASSERT_TRUE(d.ok()) << d.status();
  // Buy & hold is rebuilt on each fold's validation rows, which only the
  // stored options name.
  ASSERT_EQ(d->best_folds.size(), 2U);
  for (const ReportFold& f : d->best_folds) {
    EXPECT_TRUE(std::isfinite(f.bh_sharpe_se)) << f.fold;
    EXPECT_GT(f.bh_sharpe_se, 0);
  }
  ASSERT_TRUE(d->lockbox.has_value());
  EXPECT_EQ(d->lockbox->bh_log_returns.size(),
            d->lockbox->policy_log_returns.size());
  EXPECT_FALSE(d->lockbox->bh_log_returns.empty());
  for (const std::string& note : d->notes) {
    EXPECT_THAT(note, Not(HasSubstr("could not be rebuilt"))) << note;
  }
}

TEST_F(StudyReportStoreTest, WritesOnePageAtomicallyAndEscapesNames) {
  const std::string name = "<script>alert(1)</script>";
  absl::StatusOr<co::StudyRow> study = store_->CreateStudy(name, text_);
  ASSERT_TRUE(study.ok()) << study.status();
  Fill(study->id);
  const std::string out = tmp_ + "/out";
  absl::StatusOr<std::string> path = WriteStudyReport(*store_, name, out);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, out + "/report.html");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(out)) {
    files.push_back(e.path().filename().string());
  }
  EXPECT_THAT(files, ::testing::ElementsAre("report.html"));
  const std::string html = ReadAll(*path);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<b>crashed")));
  EXPECT_THAT(html, HasSubstr("Study &lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("data-chart=\"lockbox-equity\""));
  EXPECT_THAT(html, HasSubstr("3.25 \xC2\xB1 1.50"));

  // A failed write for another study leaves this report as it was.
  EXPECT_TRUE(
      absl::IsNotFound(WriteStudyReport(*store_, "nope", out).status()));
  EXPECT_EQ(ReadAll(*path), html);
}

TEST_F(StudyReportStoreTest, BadInputIsAClearErrorWithNothingWritten) {
  absl::StatusOr<StudyReportData> unknown = LoadStudyReport(*store_, "nope");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("no study named 'nope'"));

  absl::StatusOr<co::StudyRow> study = store_->CreateStudy("empty", text_);
  ASSERT_TRUE(study.ok());
  const std::string out = tmp_ + "/never";
  absl::StatusOr<std::string> none = WriteStudyReport(*store_, "empty", out);
  EXPECT_TRUE(absl::IsFailedPrecondition(none.status())) << none.status();
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("has no complete trial"));
  EXPECT_FALSE(fs::exists(out));

  // An --out that cannot be a directory (it is under a file).
  absl::StatusOr<co::StudyRow> full = store_->CreateStudy("full", text_);
  ASSERT_TRUE(full.ok());
  Fill(full->id);
  std::ofstream(tmp_ + "/file") << "x";
  absl::StatusOr<std::string> bad =
      WriteStudyReport(*store_, "full", tmp_ + "/file/sub");
  EXPECT_FALSE(bad.ok());
  // create_directories fails (a file is in the way): said as
  // kPermissionDenied, the code of every directory the report cannot make.
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("--out " + tmp_ + "/file/sub"));
  EXPECT_EQ(ReadAll(tmp_ + "/file"), "x");
}

}  // namespace
}  // namespace ristretto::report
