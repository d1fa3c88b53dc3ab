#include "report/study_report.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ReportParam Numeric(const std::string& name, double low, double high,
                    bool log = false) {
  ReportParam p;
  p.name = name;
  p.low = low;
  p.high = high;
  p.log = log;
  return p;
}

// Trials whose score is driven by `driver` (log-uniform in [1e-5, 1e-2],
// score = −(log10 x + 3.5)²) plus small noise; `noise_a` and `noise_b` are
// drawn independently and do not matter.
std::vector<ReportTrial> SyntheticTrials(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 0.1);
  std::vector<ReportTrial> trials;
  for (int i = 0; i < n; ++i) {
    ReportTrial t;
    t.number = i;
    const double lr = std::pow(10.0, -5 + 3 * u(rng));
    const double a = u(rng);
    const int b = 1 + static_cast<int>(u(rng) * 100);
    t.params = {{"driver", absl::StrCat(lr)},
                {"noise_a", absl::StrCat(a)},
                {"noise_b", absl::StrCat(b)},
                {"mode", u(rng) < 0.5 ? "x" : "y"}};
    const double score =
        -(std::log10(lr) + 3.5) * (std::log10(lr) + 3.5) + noise(rng);
    if (i % 7 == 3) {
      t.state = "pruned";
      t.intermediate = {{1000, score - 1}, {2000, score - 0.5}};
    } else if (i % 11 == 5) {
      t.state = "failed";
      t.fail_reason = "fold 1: <b>boom</b>";
    } else {
      t.state = "complete";
      t.score = score;
      t.cv_sharpe = score;
      t.cv_sharpe_se = 0.3;
      t.intermediate = {{1000, score - 0.2}, {2000, score}};
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

std::vector<ReportParam> SyntheticParams() {
  ReportParam mode;
  mode.name = "mode";
  mode.categorical = true;
  mode.choices = {"x", "y"};
  ReportParam b = Numeric("noise_b", 1, 100);
  b.integer = true;
  return {Numeric("driver", 1e-5, 1e-2, true), Numeric("noise_a", 0, 1), b,
          mode};
}

TEST(ParameterImportanceTest, RanksTheDrivingParameterAboveNoise) {
  for (uint32_t seed : {1U, 2U, 3U}) {
    const std::vector<ParamImportance> imp =
        ParameterImportance(SyntheticParams(), SyntheticTrials(60, seed));
    ASSERT_EQ(imp.size(), 4U);
    EXPECT_EQ(imp[0].name, "driver") << "seed " << seed;
    EXPECT_GT(imp[0].importance, 0.5) << "seed " << seed;
    for (size_t i = 1; i < imp.size(); ++i) {
      EXPECT_LT(imp[i].importance, 0.25) << imp[i].name << " seed " << seed;
      EXPECT_GE(imp[i].importance, 0.0);
    }
    // 60 trials: 7 pruned and 5 failed (indices 3, 10, ... and 5, 16, ...)
    // leave the complete ones.
    EXPECT_LT(imp[0].trials, 60);
    EXPECT_GT(imp[0].trials, 40);
    EXPECT_EQ(imp[0].bins, 6);  // floor(sqrt(n)) for 36 <= n < 49
  }
}

TEST(ParameterImportanceTest, TooFewTrialsGiveNaNNotANumber) {
  const std::vector<ParamImportance> imp =
      ParameterImportance(SyntheticParams(), SyntheticTrials(3, 1));
  for (const ParamImportance& p : imp) {
    EXPECT_TRUE(std::isnan(p.importance)) << p.name;
  }
}

TEST(ParameterImportanceTest, ConstantScoreExplainsNothing) {
  std::vector<ReportTrial> trials = SyntheticTrials(40, 4);
  for (ReportTrial& t : trials) {
    if (t.score.has_value()) t.score = 1.0;
  }
  for (const ParamImportance& p :
       ParameterImportance(SyntheticParams(), trials)) {
    EXPECT_EQ(p.importance, 0.0) << p.name;
  }
}

StudyReportData HandMade() {
  StudyReportData d;
  d.study_name = "demo";
  d.state = "done";
  d.objective = "sharpe";
  d.dataset = "synthetic (2 assets)";
  d.cv = "walk_forward";
  d.params = SyntheticParams();
  d.trials = SyntheticTrials(30, 7);
  d.best_trial = 0;
  double best = -1e9;
  for (const ReportTrial& t : d.trials) {
    if (t.score.has_value() && *t.score > best) {
      best = *t.score;
      d.best_trial = t.number;
    }
  }
  for (int k = 0; k < 3; ++k) {
    ReportFold f;
    f.fold = k;
    f.bars = 500;
    f.sharpe = 1.5 + k;
    f.sharpe_se = 0.7;
    f.bh_sharpe = 0.2 * k - 0.3;
    f.bh_sharpe_se = 0.6;
    d.best_folds.push_back(f);
  }
  ReportLockbox l;
  l.bars = 300;
  for (int i = 0; i < 300; ++i) {
    l.policy_log_returns.push_back(0.001 * std::sin(i * 0.1) + 0.0005);
    l.bh_log_returns.push_back(0.002 * std::cos(i * 0.05));
    l.timestamps.push_back(1704067200 + 300 * (i + 1));
  }
  l.sharpe = 3.1;
  l.sharpe_se = 1.1;
  l.bh_sharpe = 0.4;
  l.bh_sharpe_se = 0.9;
  l.random_seeds = 20;
  d.lockbox = l;
  d.statistics.complete_trials = 20;
  d.statistics.trials_tried = 24;
  d.statistics.best_trial = d.best_trial;
  d.statistics.cv_sharpe = 2.5;
  d.statistics.cv_sharpe_se = 0.8;
  d.statistics.cv_bars = 1500;
  d.statistics.has_dsr = true;
  d.statistics.dsr = 0.97;
  d.statistics.dsr_p_value = 0.03;
  d.statistics.edge = true;
  d.statistics.verdict = "EDGE: trial 4: deflated Sharpe 0.97";
  d.generated_at = "2026-11-25 12:00 UTC";
  return d;
}

// Every chart of the page: id -> declared points.
std::vector<std::pair<std::string, int>> Charts(const std::string& html) {
  std::vector<std::pair<std::string, int>> out;
  const std::regex head(
      "<svg class=\"chart\" data-chart=\"([a-z0-9_-]+)\" "
      "data-points=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), head);
       it != std::sregex_iterator(); ++it) {
    out.emplace_back((*it)[1].str(), std::stoi((*it)[2].str()));
  }
  return out;
}

TEST(StudyReportHtmlTest, EverySectionHasItsData) {
  const StudyReportData d = HandMade();
  const std::string html = RenderStudyReportHtml(d);
  // RISTRETTO_REPORT_DUMP=FILE keeps the page to look at in a browser.
  if (const char* dump = std::getenv("RISTRETTO_REPORT_DUMP")) {
    std::ofstream(dump) << html;
  }
  for (const char* id : {"history", "importance", "slices", "folds", "lockbox",
                         "statistics", "trials"}) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<section id=\"", id, "\">")))
        << id;
  }
  const auto charts = Charts(html);
  std::map<std::string, int> points(charts.begin(), charts.end());
  // history, importance, 4 slices, folds, equity, drawdown.
  EXPECT_EQ(charts.size(), 9U);
  for (const auto& [id, n] : charts) EXPECT_GT(n, 0) << id;
  int complete = 0, pruned = 0;
  for (const ReportTrial& t : d.trials) {
    complete += t.state == "complete" ? 1 : 0;
    pruned += t.state == "pruned" ? 1 : 0;
  }
  // complete + pruned points + best-so-far vertices (>= 1).
  EXPECT_GT(points["score-history"], complete + pruned);
  EXPECT_EQ(points["param-importance"], 4);
  EXPECT_EQ(points["slice-0"], complete);
  EXPECT_EQ(points["fold-sharpe"], 6);  // 3 folds x (policy, buy & hold)
  // 301 equity points x (policy, buy & hold) + cash's 2 ends.
  EXPECT_EQ(points["lockbox-equity"], 301 * 2 + 2);
  EXPECT_EQ(points["lockbox-drawdown"], 301 * 2);
  // Element ids are unique (charts and sections share none).
  const std::regex id_attr(" id=\"([^\"]+)\"");
  std::map<std::string, int> ids;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id_attr);
       it != std::sregex_iterator(); ++it) {
    ++ids[(*it)[1].str()];
  }
  for (const auto& [id, n] : ids) EXPECT_EQ(n, 1) << "id " << id;
  // Every Sharpe with its SE; the verdict in the same words as study best.
  EXPECT_THAT(html, HasSubstr("3.10 \xC2\xB1 1.10"));
  EXPECT_THAT(html, HasSubstr("0.40 \xC2\xB1 0.90"));
  EXPECT_THAT(html, HasSubstr("2.50 \xC2\xB1 0.80"));
  EXPECT_THAT(html, HasSubstr("verdict: EDGE: trial 4: deflated Sharpe 0.97"));
  EXPECT_THAT(html, HasSubstr("correlation ratio"));
  // Self-contained: no script, no external URL.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  // A row per trial.
  int rows = 0;
  for (size_t pos = html.find("<tr class=\""); pos != std::string::npos;
       pos = html.find("<tr class=\"", pos + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, static_cast<int>(d.trials.size()));
}

TEST(StudyReportHtmlTest, HostileNamesShowAsText) {
  StudyReportData d = HandMade();
  d.study_name = "<script>alert(1)</script>";
  d.params[0].name = "<script>alert(2)</script>";
  for (ReportTrial& t : d.trials) {
    t.params[0].first = d.params[0].name;
    t.params[1].second = "<img src=x onerror=alert(3)>";
  }
  d.statistics.verdict = "<script>alert(4)</script>";
  const std::string html = RenderStudyReportHtml(d);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("<b>boom")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(2)"));
  EXPECT_THAT(html, HasSubstr("&lt;img src=x onerror=alert(3)&gt;"));
}

TEST(StudyReportHtmlTest, MissingPartsAreSaidInWords) {
  StudyReportData d = HandMade();
  d.lockbox.reset();
  d.best_folds.clear();
  d.statistics.edge = false;
  d.statistics.verdict = "NO EDGE distinguishable from luck: x";
  const std::string html = RenderStudyReportHtml(d);
  EXPECT_THAT(html, HasSubstr("No lockbox result for the best trial"));
  EXPECT_THAT(html, HasSubstr("No fold results recorded"));
  EXPECT_THAT(html, HasSubstr("class=\"verdict noedge\""));
  EXPECT_THAT(html, Not(HasSubstr("data-chart=\"lockbox-equity\"")));
}

TEST(StudyReportHtmlTest, LongLockboxIsDecimatedButKeepsItsExtremes) {
  StudyReportData d = HandMade();
  ReportLockbox& l = *d.lockbox;
  l.policy_log_returns.assign(50000, 0.0001);
  l.policy_log_returns[25000] = -0.5;  // one crash in the middle
  l.bh_log_returns.assign(50000, 0.0);
  l.timestamps.clear();
  const std::string html = RenderStudyReportHtml(d);
  const auto charts = Charts(html);
  std::map<std::string, int> points(charts.begin(), charts.end());
  EXPECT_LE(points["lockbox-equity"], 2 * 2000 + 2 + 10);
  EXPECT_GT(points["lockbox-equity"], 1000);
  EXPECT_THAT(html, HasSubstr("points drawn as"));
  // The crash (drawdown about -39 %) is still on the drawdown chart's axis.
  EXPECT_THAT(html, HasSubstr(">-0.4<"));
  EXPECT_LT(html.size(), 2U << 20);
}

}  // namespace
}  // namespace ristretto::report
