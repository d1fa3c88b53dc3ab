#include "report/study_report_store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/atomic_file.h"
#include "common/status_macros.h"
#include "coordinator/core/pruner.h"
#include "coordinator/core/statistics.h"
#include "coordinator/core/study_config.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/study_result.h"
#include "env/dataset.h"
#include "env/market_data.h"
#include "env/synthetic.h"
#include "learner/run_config_codec.h"

namespace ristretto::report {
namespace {

namespace fs = std::filesystem;
using coordinator::FoldMetrics;
using coordinator::Store;
using coordinator::StudyRow;
using coordinator::TrialRow;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// The study's market as the coordinator built it (scheduler.cc: a
// synthetic spec is regenerated; a registered dataset is read from its
// file), with its bar open times.
struct LoadedMarket {
  std::shared_ptr<const env::MarketData> market;
  std::vector<int64_t> timestamps;
  int64_t interval_seconds = 0;
};

absl::StatusOr<LoadedMarket> LoadMarket(Store& store,
                                        const coordinator::StudyConfig& c) {
  env::Dataset dataset;
  if (c.dataset.synthetic) {
    ASSIGN_OR_RETURN(dataset, env::GenerateSyntheticDataset(
                                  coordinator::SyntheticOptions(c.dataset)));
  } else {
    ASSIGN_OR_RETURN(const coordinator::DatasetRow row,
                     store.GetDataset(c.dataset.id));
    ASSIGN_OR_RETURN(dataset, env::ReadDataset(row.path));
  }
  LoadedMarket out;
  ASSIGN_OR_RETURN(out.market, env::MarketData::FromDataset(dataset));
  out.timestamps = std::move(dataset.timestamps);
  out.interval_seconds = dataset.interval_seconds;
  return out;
}

// Buy & hold's per-bar log returns on the rows a run validated on, and the
// end time of each return's bar (ComputeBaselines plays rows
// begin + L − 1 … begin + size − L of each domain; return k ends at row
// first + k).
struct BuyAndHoldSeries {
  std::vector<double> log_returns;
  std::vector<int64_t> bar_end;
};

absl::StatusOr<BuyAndHoldSeries> RebuildBuyAndHold(
    const LoadedMarket& m, const learner::TrainerOptions& options) {
  ASSIGN_OR_RETURN(const coordinator::SegmentBaselines base,
                   coordinator::ComputeBaselines(m.market, options.env,
                                                 options.validation_domains,
                                                 /*random_seeds=*/0));
  BuyAndHoldSeries out;
  out.log_returns = base.buy_and_hold.log_returns;
  const int64_t lookback = options.env.lookback;
  for (const env::Domain& d : options.validation_domains) {
    const int64_t first = d.begin + lookback - 1;
    const int64_t end = d.begin + d.size() - lookback;
    for (int64_t row = first + 1; row < end; ++row) {
      const auto i = static_cast<size_t>(row);
      out.bar_end.push_back(
          i < m.timestamps.size() ? m.timestamps[i] + m.interval_seconds : 0);
    }
  }
  if (out.bar_end.size() != out.log_returns.size()) out.bar_end.clear();
  return out;
}

std::string DescribeDataset(Store& store, const coordinator::DatasetSpec& d) {
  if (d.synthetic) {
    return absl::StrFormat(
        "synthetic: %d assets, %d bars of %s, seed %d, predictability %g",
        d.assets, d.rows, env::FormatInterval(d.interval_seconds), d.seed,
        d.predictability);
  }
  absl::StatusOr<coordinator::DatasetRow> row = store.GetDataset(d.id);
  if (!row.ok()) return absl::StrCat(d.id, " (not registered)");
  return absl::StrFormat("%s: %s, %d bars of %s", d.id.substr(0, 12),
                         row->symbols, row->rows,
                         env::FormatInterval(row->interval_seconds));
}

std::string DescribeCv(const coordinator::CvSpec& cv) {
  std::string text = cv.scheme;
  if (cv.scheme == "holdout") {
    absl::StrAppend(&text, absl::StrFormat(" (last %g %% validates)",
                                           100 * cv.validation_fraction));
  } else if (cv.scheme == "walk_forward") {
    absl::StrAppend(&text, absl::StrFormat(" (train %d, test %d bars)",
                                           cv.train_bars, cv.test_bars));
  } else if (cv.scheme == "cpcv") {
    absl::StrAppend(&text, absl::StrFormat(" (%d groups, %d test groups)",
                                           cv.groups, cv.test_groups));
  } else if (cv.scheme == "kfold") {
    absl::StrAppend(&text, absl::StrFormat(" (%d folds)", cv.folds));
  }
  if (cv.embargo_bars > 0) {
    absl::StrAppend(&text, ", embargo ", cv.embargo_bars, " bars");
  }
  return text;
}

ReportParam ToReportParam(const coordinator::ParamSpec& p) {
  ReportParam r;
  r.name = p.name;
  r.categorical = p.kind == coordinator::ParamKind::kCategorical;
  r.integer = p.kind == coordinator::ParamKind::kInt;
  r.low = p.low;
  r.high = p.high;
  r.log = p.log;
  r.choices = p.choices;
  if (!p.parent.empty()) {
    r.condition = absl::StrCat("when ", p.parent, " in {",
                               absl::StrJoin(p.parent_values, ", "), "}");
  }
  return r;
}

// Annualised Sharpe and its standard error of one return series (NaN SE
// when it cannot be computed, e.g. without the bar interval).
// `multiplicity`: how many times the series repeats each bar (CPCV).
std::pair<double, double> SharpeAndSe(const std::vector<double>& log_returns,
                                      std::optional<double> bars_per_year,
                                      double multiplicity) {
  const coordinator::SharpeStats st = coordinator::ReturnStats(log_returns);
  if (!bars_per_year.has_value()) return {kNan, kNan};
  return {coordinator::AnnualiseSharpe(st.sharpe, *bars_per_year),
          coordinator::AnnualisedSharpeError(log_returns, *bars_per_year,
                                             multiplicity)};
}

// A standard error as the store keeps it: 0 when it was undefined (a flat
// series; coordinator::LockboxRow), shown as n/a rather than "± 0.00".
double StoredSe(double se) { return se > 0 ? se : kNan; }

}  // namespace

absl::StatusOr<StudyReportData> LoadStudyReport(Store& store,
                                                const std::string& study_name) {
  ASSIGN_OR_RETURN(const StudyRow study,
                   coordinator::FindStudy(store, study_name));
  ASSIGN_OR_RETURN(const std::vector<TrialRow> trials,
                   store.ListTrials(study.id));
  const std::optional<TrialRow> best = coordinator::BestTrial(trials);
  if (!best.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study '", study_name, "' has no complete trial yet (", trials.size(),
        " trials): nothing to report (ristretto study show ", study_name, ")"));
  }
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(study.config_text);
  if (!config.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study '", study_name,
        "': its stored file no longer parses: ", config.status().message()));
  }

  StudyReportData d;
  d.study_name = study.name;
  d.state = std::string(coordinator::ToString(study.state));
  d.objective = config->objective;
  d.dataset = DescribeDataset(store, config->dataset);
  d.cv = DescribeCv(config->cv);
  d.generated_at =
      absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::Now(), absl::UTCTimeZone());
  for (const coordinator::ParamSpec& p : config->space) {
    d.params.push_back(ToReportParam(p));
  }
  d.best_trial = best->number;

  std::optional<double> bpy;
  absl::StatusOr<double> bars_per_year =
      coordinator::StudyBarsPerYear(store, study);
  if (bars_per_year.ok()) {
    bpy = *bars_per_year;
  } else {
    d.notes.push_back(absl::StrCat(
        "The dataset's bar interval is unknown (",
        bars_per_year.status().message(),
        "): Sharpe ratios computed here and their standard errors show n/a."));
  }

  // Intermediate values: the mean over the folds reporting at each step.
  ASSIGN_OR_RETURN(const std::vector<coordinator::IntermediateRow> inter,
                   store.ListIntermediates(study.id));
  std::map<int64_t, std::map<int64_t, std::pair<double, int>>> by_trial;
  std::map<int64_t, std::vector<coordinator::IntermediateValue>> values_of;
  for (const coordinator::IntermediateRow& r : inter) {
    if (r.fold < 0 || !std::isfinite(r.value)) continue;
    values_of[r.trial_id].push_back({r.trial_id, r.fold, r.step, r.value});
    auto& slot = by_trial[r.trial_id][r.step];
    slot.first += r.value;
    slot.second += 1;
  }
  ASSIGN_OR_RETURN(const auto fold_metrics,
                   store.ListStudyFoldMetrics(study.id));
  ASSIGN_OR_RETURN(const std::vector<coordinator::LockboxRow> lockbox_rows,
                   store.ListLockbox(study.id));
  std::map<int64_t, const coordinator::LockboxRow*> lockbox_of;
  for (const coordinator::LockboxRow& l : lockbox_rows) {
    lockbox_of[l.trial_id] = &l;
  }

  ASSIGN_OR_RETURN(d.statistics,
                   coordinator::LoadOrComputeStudyResult(store, study));
  // CPCV tests each bar several times: the pooled returns of a trial are
  // not that many independent bars, so its standard error counts each bar
  // once, as the study statistics do, over the folds the trial reported
  // (a pruned or failed trial may have only some). Unknown: n/a.
  const absl::StatusOr<int64_t> cv_rows =
      coordinator::StudyCvRows(store, study);
  auto repeat_of = [&](const std::vector<FoldMetrics>& reported) {
    if (!cv_rows.ok()) return kNan;
    std::vector<int> folds;
    folds.reserve(reported.size());
    for (const FoldMetrics& m : reported) folds.push_back(m.fold);
    const absl::StatusOr<double> m =
        coordinator::FoldsBarMultiplicity(config->cv, *cv_rows, folds);
    return m.ok() ? *m : kNan;
  };

  for (const TrialRow& t : trials) {
    ReportTrial r;
    r.number = t.number;
    r.state = std::string(coordinator::ToString(t.state));
    for (const coordinator::ParamRow& p : t.params) {
      r.params.emplace_back(p.name, p.value);
    }
    r.score = t.score;
    r.fail_reason = t.fail_reason;
    auto it = by_trial.find(t.id);
    if (it != by_trial.end()) {
      for (const auto& [step, sum] : it->second) {
        r.intermediate.emplace_back(step, sum.first / sum.second);
      }
    }
    auto v = values_of.find(t.id);
    if (v != values_of.end()) {
      r.judged_value =
          coordinator::JudgedValue(t.id, v->second, &r.judged_step);
    }
    auto f = fold_metrics.find(t.id);
    if (f != fold_metrics.end() && !f->second.empty()) {
      std::vector<double> all;
      for (const FoldMetrics& m : f->second) {
        all.insert(all.end(), m.log_returns.begin(), m.log_returns.end());
      }
      if (all.size() >= 2) {
        const double repeat = repeat_of(f->second);
        const auto [sharpe, se] = SharpeAndSe(all, bpy, repeat);
        if (std::isfinite(sharpe)) {
          r.cv_sharpe = sharpe;
          r.cv_sharpe_se = std::isfinite(repeat) ? se : kNan;
        }
      }
    }
    auto l = lockbox_of.find(t.id);
    if (l != lockbox_of.end()) {
      r.lockbox_sharpe = l->second->policy.sharpe;
      r.lockbox_sharpe_se = StoredSe(l->second->sharpe_se);
    }
    d.trials.push_back(std::move(r));
  }
  std::sort(d.trials.begin(), d.trials.end(),
            [](const ReportTrial& a, const ReportTrial& b) {
              return a.number < b.number;
            });

  // The best trial's runs: their options name the rows each validated on,
  // where buy & hold is rebuilt.
  ASSIGN_OR_RETURN(const std::vector<coordinator::RunRow> runs,
                   store.ListRuns(best->id));
  std::map<int, learner::TrainerOptions> options_of_fold;
  for (const coordinator::RunRow& run : runs) {
    absl::StatusOr<learner::TrainerOptions> o =
        learner::TrainerOptionsFromConfigJson(run.config_json);
    if (o.ok()) options_of_fold[run.fold] = *std::move(o);
  }
  absl::StatusOr<LoadedMarket> market = LoadMarket(store, *config);
  if (!market.ok()) {
    d.notes.push_back(absl::StrCat(
        "The study's dataset could not be read (", market.status().message(),
        "): buy & hold's per-fold standard errors and lockbox curve are "
        "missing."));
  }
  auto rebuild = [&](int fold) -> std::optional<BuyAndHoldSeries> {
    auto o = options_of_fold.find(fold);
    if (!market.ok() || o == options_of_fold.end()) return std::nullopt;
    absl::StatusOr<BuyAndHoldSeries> s = RebuildBuyAndHold(*market, o->second);
    if (!s.ok()) {
      d.notes.push_back(absl::StrCat("Buy & hold could not be rebuilt for ",
                                     fold == coordinator::kLockboxFold
                                         ? std::string("the lockbox")
                                         : absl::StrCat("fold ", fold),
                                     ": ", s.status().message()));
      return std::nullopt;
    }
    return *std::move(s);
  };

  ASSIGN_OR_RETURN(const std::vector<FoldMetrics> best_folds,
                   store.ListFoldMetrics(best->id));
  for (const FoldMetrics& m : best_folds) {
    ReportFold f;
    f.fold = m.fold;
    f.bars = static_cast<int64_t>(m.log_returns.size());
    f.sharpe = m.sharpe;
    f.sharpe_se = bpy.has_value()
                      ? coordinator::AnnualisedSharpeError(m.log_returns, *bpy)
                      : kNan;
    f.bh_sharpe = m.benchmark_sharpe;
    f.bh_sharpe_se = kNan;
    if (const std::optional<BuyAndHoldSeries> bh = rebuild(m.fold);
        bh.has_value() && bpy.has_value()) {
      f.bh_sharpe_se =
          coordinator::AnnualisedSharpeError(bh->log_returns, *bpy);
    }
    f.total_return = m.total_return;
    f.bh_return = m.benchmark_return;
    f.max_drawdown = m.max_drawdown;
    f.score = m.score;
    d.best_folds.push_back(f);
  }

  auto l = lockbox_of.find(best->id);
  if (l != lockbox_of.end()) {
    const coordinator::LockboxRow& row = *l->second;
    ReportLockbox lb;
    lb.bars = row.bars;
    lb.policy_log_returns = row.policy.log_returns;
    lb.refits = row.refits;
    if (row.refits > 1) {
      ASSIGN_OR_RETURN(const std::vector<coordinator::RefitRow> refits,
                       store.ListTrialRefits(best->id));
      for (const coordinator::RefitRow& r : refits) {
        ReportLockbox::Refit f;
        f.refit = r.refit;
        f.sharpe = r.policy.sharpe;
        f.sharpe_se = StoredSe(r.sharpe_se);
        f.total_return = r.policy.total_return;
        f.max_drawdown = r.policy.max_drawdown;
        f.trades = r.policy.trades;
        f.log_returns = r.policy.log_returns;
        lb.refit_results.push_back(std::move(f));
      }
    }
    lb.sharpe = row.policy.sharpe;
    lb.sharpe_se = StoredSe(row.sharpe_se);
    lb.sortino = row.policy.sortino;
    lb.total_return = row.policy.total_return;
    lb.max_drawdown = row.policy.max_drawdown;
    lb.turnover = row.policy.turnover;
    lb.fees = row.policy.fees;
    lb.exposure = row.policy.exposure;
    lb.trades = row.policy.trades;
    lb.bh_sharpe = row.bh_sharpe;
    lb.bh_sharpe_se = StoredSe(row.bh_sharpe_se);
    lb.bh_return = row.bh_return;
    lb.bh_max_drawdown = row.bh_max_drawdown;
    lb.random_seeds = row.random_seeds;
    lb.random_sharpe_mean = row.random_sharpe_mean;
    lb.random_sharpe_std = row.random_sharpe_std;
    lb.random_return_mean = row.random_return_mean;
    lb.random_return_std = row.random_return_std;
    if (std::optional<BuyAndHoldSeries> bh = rebuild(coordinator::kLockboxFold);
        bh.has_value()) {
      if (bh->log_returns.size() == lb.policy_log_returns.size()) {
        lb.bh_log_returns = std::move(bh->log_returns);
        lb.timestamps = std::move(bh->bar_end);
      } else {
        d.notes.push_back(absl::StrCat(
            "Buy & hold on the lockbox has ", bh->log_returns.size(),
            " bars but the policy's record has ", lb.policy_log_returns.size(),
            ": its curve is not drawn."));
      }
    }
    d.lockbox = std::move(lb);
  }
  return d;
}

absl::StatusOr<std::map<int, double>> BuyAndHoldFoldErrors(
    Store& store, const StudyRow& study, int64_t trial_id) {
  ASSIGN_OR_RETURN(const coordinator::StudyConfig config,
                   coordinator::ParseStudyConfig(study.config_text));
  ASSIGN_OR_RETURN(const double bpy,
                   coordinator::StudyBarsPerYear(store, study));
  ASSIGN_OR_RETURN(const LoadedMarket market, LoadMarket(store, config));
  ASSIGN_OR_RETURN(const std::vector<coordinator::RunRow> runs,
                   store.ListRuns(trial_id));
  std::map<int, double> out;
  for (const coordinator::RunRow& run : runs) {
    if (coordinator::IsFinalFold(run.fold)) continue;
    absl::StatusOr<learner::TrainerOptions> o =
        learner::TrainerOptionsFromConfigJson(run.config_json);
    if (!o.ok()) continue;
    absl::StatusOr<BuyAndHoldSeries> bh = RebuildBuyAndHold(market, *o);
    if (!bh.ok()) continue;
    const double se = coordinator::AnnualisedSharpeError(bh->log_returns, bpy);
    if (std::isfinite(se)) out[run.fold] = se;
  }
  return out;
}

absl::StatusOr<std::string> WriteStudyReport(Store& store,
                                             const std::string& study_name,
                                             const std::string& out_dir) {
  ASSIGN_OR_RETURN(const StudyReportData data,
                   LoadStudyReport(store, study_name));
  const std::string html = RenderStudyReportHtml(data);
  const fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat(
        "--out ", out_dir, ": cannot create the directory: ", ec.message()));
  }
  const fs::path target = dir / "report.html";
  // Written beside it, fsynced and renamed into place: a full disk shows
  // up here (with errno's text), never as a truncated report.
  const absl::Status written = WriteFileAtomically(target.string(), html);
  if (!written.ok()) {
    return absl::Status(written.code(), absl::StrCat("--out ", out_dir, ": ",
                                                     written.message()));
  }
  return target.string();
}

}  // namespace ristretto::report
