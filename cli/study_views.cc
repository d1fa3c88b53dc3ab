#include "cli/study_views.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/table.h"
#include "common/status_macros.h"
#include "coordinator/core/pruner.h"
#include "coordinator/core/sampler.h"
#include "coordinator/core/search_space.h"
#include "coordinator/core/study_config.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/study_result.h"
#include "env/csv_import.h"
#include "env/dataset.h"
#include "ops/study.h"
#include "report/study_report_store.h"

namespace ristretto::cli {
namespace {

using coordinator::ArtifactRow;
using coordinator::BestTrial;
using coordinator::DatasetRow;
using coordinator::FoldMetrics;
using coordinator::FormatSharpeSe;
using coordinator::RunRow;
using coordinator::Store;
using coordinator::StudyRow;
using coordinator::TrialCounts;
using coordinator::TrialRow;
using ops::IsTransientStoreError;
using ops::LockboxByTrial;

// ---- formatting ------------------------------------------------------------

std::string FormatScore(std::optional<double> score) {
  return score.has_value() ? absl::StrFormat("%.4f", *score) : "-";
}

}  // namespace

std::string FormatDroppedShare(int64_t received, int64_t dropped) {
  if (received <= 0) return "-";
  return absl::StrFormat("%.2f %%", 100.0 * static_cast<double>(dropped) /
                                        static_cast<double>(received));
}

namespace {

// "40s", "55m", "3h05m", "2d03h".
std::string FormatEta(absl::Duration d) {
  const int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, s % 86400 / 3600);
}

std::string FormatParams(const std::vector<coordinator::ParamRow>& params) {
  return absl::StrJoin(params, " ",
                       [](std::string* out, const coordinator::ParamRow& p) {
                         absl::StrAppend(out, p.name, "=", p.value);
                       });
}

// Complete trials, best first (ties: earlier trial first).
std::vector<TrialRow> RankedTrials(const std::vector<TrialRow>& trials) {
  std::vector<TrialRow> ranked;
  for (const TrialRow& t : trials) {
    if (t.state == coordinator::TrialState::kComplete && t.score.has_value()) {
      ranked.push_back(t);
    }
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const TrialRow& a, const TrialRow& b) {
              if (*a.score != *b.score) return *a.score > *b.score;
              return a.number < b.number;
            });
  return ranked;
}

// Buy & hold's standard error on `fold` (NaN when it is not known).
double BhError(const absl::StatusOr<std::map<int, double>>& errors, int fold) {
  if (!errors.ok()) return std::numeric_limits<double>::quiet_NaN();
  auto it = errors->find(fold);
  return it == errors->end() ? std::numeric_limits<double>::quiet_NaN()
                             : it->second;
}

// "2.10 ± 0.80 (b&h 1.20)" or "-" (no final run yet / pruned / failed).
std::string FormatLockbox(
    const std::map<int64_t, coordinator::LockboxRow>& lockbox,
    int64_t trial_id) {
  auto it = lockbox.find(trial_id);
  if (it == lockbox.end()) return "-";
  return absl::StrFormat(
      "%s (b&h %.2f)",
      FormatSharpeSe(it->second.policy.sharpe, it->second.sharpe_se),
      it->second.bh_sharpe);
}

}  // namespace

absl::Status PrintStudyStatistics(Store& store, const StudyRow& study,
                                  std::FILE* out) {
  ASSIGN_OR_RETURN(const coordinator::StudyStatistics s,
                   coordinator::LoadOrComputeStudyResult(store, study));
  std::fprintf(out, "\nstatistics%s\n",
               study.state == coordinator::StudyState::kDone
                   ? ""
                   : " (so far: the study is not done)");
  if (s.best_trial.has_value() && s.cv_bars < 2) {
    std::fprintf(out,
                 "  best trial       %lld (no validation returns recorded)\n",
                 static_cast<long long>(*s.best_trial));
  } else if (s.best_trial.has_value()) {
    std::fprintf(out,
                 "  best trial       %lld, CV Sharpe %s (pooled) over %lld "
                 "validation bars (skew %.2f, kurtosis %.2f)\n",
                 static_cast<long long>(*s.best_trial),
                 FormatSharpeSe(s.cv_sharpe, s.cv_sharpe_se).c_str(),
                 static_cast<long long>(s.cv_bars), s.cv_skewness,
                 s.cv_kurtosis);
    if (s.cv_bar_multiplicity > 1.0 + 1e-9) {
      std::fprintf(out,
                   "                   (distinct bars: the folds test each "
                   "%.3g times, so their pooled returns count once)\n",
                   s.cv_bar_multiplicity);
    }
  }
  if (s.has_dsr) {
    std::fprintf(out,
                 "  deflated Sharpe  %.3f (p = %.3g): the best of %lld "
                 "tries (%lld trials × %lld checkpoints) of worthless "
                 "strategies would show %.2f (trials' Sharpe std %.2f)\n",
                 s.dsr, s.dsr_p_value,
                 static_cast<long long>(s.effective_trials),
                 static_cast<long long>(s.trials_tried),
                 static_cast<long long>(s.checkpoints_per_run),
                 s.expected_max_sharpe, s.trial_sharpe_std);
  } else {
    std::fprintf(out, "  deflated Sharpe  n/a: %s\n", s.dsr_note.c_str());
  }
  if (s.has_pbo) {
    std::fprintf(out,
                 "  PBO (CSCV)       %.2f over %lld combinations of %d blocks "
                 "(probability that the CV-best trial is below the median "
                 "out of sample)\n",
                 s.pbo, static_cast<long long>(s.pbo_combinations),
                 s.pbo_blocks);
  } else {
    std::fprintf(out, "  PBO (CSCV)       n/a: %s\n", s.pbo_note.c_str());
  }
  if (s.lockbox.has_value()) {
    const coordinator::TrialEvidence::Lockbox& l = *s.lockbox;
    std::fprintf(
        out,
        "  lockbox          %lld bars never seen by the search: Sharpe "
        "%s%s, return %.2f%% | buy & hold %.2f (return %.2f%%) | cash 0 | "
        "random %.2f ± %.2f\n",
        static_cast<long long>(l.bars),
        FormatSharpeSe(l.sharpe, l.sharpe_se).c_str(),
        l.refits > 1
            ? absl::StrFormat(" (capital split among %d refits)", l.refits)
                  .c_str()
            : "",
        100 * l.total_return, l.bh_sharpe, 100 * l.bh_return,
        l.random_sharpe_mean, l.random_sharpe_std);
    // The tests ComputeStudyStatistics made for the verdict (one-sided);
    // a result stored before they existed has none of them.
    const bool tested = l.vs_bh_se > 0 || !l.tests_note.empty() ||
                        l.p_vs_cash < 1 || l.p_vs_random < 1;
    std::string bh =
        l.vs_bh_se > 0
            ? absl::StrFormat(
                  "buy & hold p = %.3g (difference %.2f ± %.2f, "
                  "paired)",
                  l.p_vs_buy_and_hold, l.vs_bh_difference, l.vs_bh_se)
            : std::string("buy & hold not tested");
    if (tested) {
      std::fprintf(
          out, "  beyond noise?    cash p = %.3g, %s, random p = %.3g%s%s\n",
          l.p_vs_cash, bh.c_str(), l.p_vs_random,
          l.tests_note.empty() ? "" : "; ", l.tests_note.c_str());
    }
    // The rules a quant tries first, on the same bars with the same costs.
    for (size_t k = 0; k < l.rules.size(); ++k) {
      const coordinator::LockboxRuleResult& r = l.rules[k];
      std::fprintf(
          out,
          "  %-16s %s Sharpe %s, return %.2f%%, max DD %.2f%%, turnover "
          "%.2f, fees "
          "%.2f (%s, chosen before the lockbox)%s\n",
          k == 0 ? "rules" : "", r.name.c_str(),
          FormatSharpeSe(r.sharpe, r.sharpe_se).c_str(), 100 * r.total_return,
          100 * r.max_drawdown, r.turnover, r.fees, r.parameter.c_str(),
          static_cast<int>(k) == l.strongest_rule ? " strongest" : "");
    }
  }
  std::fprintf(out, "verdict: %s\n", s.verdict.c_str());
  std::fflush(out);
  return absl::OkStatus();
}

namespace {

// Whole numbers in full ("500000", not "5e+05"), others as FormatDouble.
std::string FormatNumber(double v) {
  if (std::abs(v) < 1e15 && v == std::trunc(v)) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return coordinator::FormatDouble(v);
}

std::string FormatDataset(const coordinator::DatasetSpec& d) {
  if (!d.synthetic) return d.id;
  return absl::StrFormat(
      "synthetic (%d assets x %d rows, %s bars, seed %d, predictability %s)",
      d.assets, d.rows, env::FormatInterval(d.interval_seconds), d.seed,
      FormatNumber(d.predictability));
}

std::string FormatCv(const coordinator::CvSpec& cv) {
  std::string text;
  if (cv.scheme == "holdout") {
    text = absl::StrFormat("holdout (last %s%% validates, embargo %d bars)",
                           FormatNumber(100 * cv.validation_fraction),
                           cv.embargo_bars);
  } else if (cv.scheme == "walk_forward") {
    text = absl::StrFormat("walk_forward (train %d, test %d, step %d bars)",
                           cv.train_bars, cv.test_bars,
                           cv.step_bars > 0 ? cv.step_bars : cv.test_bars);
  } else if (cv.scheme == "cpcv") {
    text = absl::StrFormat(
        "cpcv (%d groups, %d test groups per fold, embargo %d bars)", cv.groups,
        cv.test_groups, cv.embargo_bars);
  } else if (cv.scheme == "kfold") {
    text = absl::StrFormat("kfold (%d folds, embargo %d bars)", cv.folds,
                           cv.embargo_bars);
  } else {
    text = cv.scheme;
  }
  if (cv.max_folds > 0) {
    absl::StrAppend(&text, ", first ", cv.max_folds, " folds");
  }
  return text;
}

std::string FormatSampler(const coordinator::SamplerSpec& s) {
  if (s.type != "tpe") return absl::StrCat(s.type, " (seed ", s.seed, ")");
  return absl::StrFormat("tpe (seed %d, %d random startup trials%s)", s.seed,
                         s.startup_trials,
                         s.multivariate ? ", multivariate" : "");
}

std::string FormatPruner(const coordinator::PrunerSpec& p) {
  if (p.type == "median") {
    return absl::StrFormat("median (warm-up %d env steps, min %d trials)",
                           p.warmup_steps, p.min_trials);
  }
  if (p.type == "asha") {
    return absl::StrFormat(
        "asha (first rung %d env steps, reduction factor %s, warm-up %d, min "
        "%d trials)",
        p.min_resource, FormatNumber(p.reduction_factor), p.warmup_steps,
        p.min_trials);
  }
  return p.type;
}

std::string FormatSpec(const coordinator::ParamSpec& p) {
  std::string text;
  switch (p.kind) {
    case coordinator::ParamKind::kFloat:
    case coordinator::ParamKind::kInt:
      text = absl::StrCat(
          p.kind == coordinator::ParamKind::kInt ? "int" : "float", " [",
          FormatNumber(p.low), ", ", FormatNumber(p.high), "]");
      if (p.log) absl::StrAppend(&text, " log");
      if (p.step.has_value()) {
        absl::StrAppend(&text, " step ", FormatNumber(*p.step));
      }
      break;
    case coordinator::ParamKind::kCategorical:
      text = absl::StrCat("{", absl::StrJoin(p.choices, ", "), "}");
      break;
  }
  if (!p.parent.empty()) {
    absl::StrAppend(&text, " when ", p.parent, " in {",
                    absl::StrJoin(p.parent_values, ", "), "}");
  }
  return text;
}

// The key settings of a study, one per line, for `study show`.
// `registered` describes an imported dataset (nullptr: synthetic or not
// registered).
std::string FormatSettings(const coordinator::StudyConfig& c,
                           const DatasetRow* registered) {
  std::string out;
  absl::StrAppend(&out, "dataset      ", FormatDataset(c.dataset));
  if (registered != nullptr) {
    absl::StrAppend(&out, " (", registered->symbols, "; ", registered->rows,
                    " rows of ",
                    env::FormatInterval(registered->interval_seconds), ")");
  } else if (!c.dataset.synthetic) {
    absl::StrAppend(&out, " (not registered)");
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "cv           ", FormatCv(c.cv), "\n");
  absl::StrAppend(
      &out, "budget       ", c.budget_env_steps, " env steps per run",
      c.eval_every_env_steps > 0
          ? absl::StrCat(", validated every ", c.eval_every_env_steps)
          : std::string(", validated at the end"),
      "\n");
  absl::StrAppend(&out, "objective    ", c.objective, "\n");
  absl::StrAppend(&out, "sampler      ", FormatSampler(c.sampler), "\n");
  absl::StrAppend(&out, "pruner       ", FormatPruner(c.pruner), "\n");
  absl::StrAppend(&out, "concurrency  ", c.concurrency, " trials at once\n");
  absl::StrAppend(&out, "trials       ", c.max_trials, " (", c.max_attempts,
                  " attempts per run)\n");
  if (!c.fixed.empty()) {
    absl::StrAppend(&out, "fixed        ",
                    absl::StrJoin(c.fixed, " ", absl::PairFormatter("=")),
                    "\n");
  }
  if (!c.space.empty()) {
    Table space({"parameter", "range"});
    for (const coordinator::ParamSpec& p : c.space) {
      space.AddRow({p.name, FormatSpec(p)});
    }
    absl::StrAppend(&out, "space\n", space.Render());
  }
  return out;
}

// The study's max_trials from its stored config, or 0 when unknown.
int64_t MaxTrials(const StudyRow& study) {
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(study.config_text);
  return config.ok() ? static_cast<int64_t>(config->max_trials) : 0;
}

}  // namespace

std::string FormatLocalTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M", t, absl::LocalTimeZone());
}

// ---- views ----------------------------------------------------------------

absl::Status WaitForStudy(Store& store, const std::string& study_name,
                          const std::function<bool()>& should_stop,
                          std::FILE* out,
                          const std::function<std::string()>& stopped_why) {
  ASSIGN_OR_RETURN(StudyRow study, coordinator::FindStudy(store, study_name));
  const int64_t max_trials = MaxTrials(study);
  const bool tty = isatty(fileno(out)) != 0;
  std::string last_key;
  size_t last_width = 0;
  std::string why;
  // Sleeps up to `d` in 100 ms slices; false (and `why` set) when
  // `should_stop` ends the wait.
  auto sleep_unless_stopped = [&](absl::Duration d) {
    for (absl::Duration slept; slept < d; slept += absl::Milliseconds(100)) {
      if (should_stop()) {
        why = stopped_why ? stopped_why()
                          : absl::StrCat("stopped waiting; study ", study_name,
                                         " goes on (ristretto study stop ",
                                         study_name, " to stop it)");
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  };
  // A lost connection or a restarting server (the Store has already retried
  // for its give-up time) does not end the wait: it is said, and the reads
  // are retried with backoff. Any other error is permanent and returned.
  constexpr absl::Duration kFirstBackoff = absl::Seconds(1);
  constexpr absl::Duration kMaxBackoff = absl::Seconds(30);
  absl::Duration backoff = kFirstBackoff;
  std::vector<TrialRow> trials;
  int64_t open_runs = 0;
  while (true) {
    absl::Status read = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(study, store.GetStudyById(study.id));
      ASSIGN_OR_RETURN(trials, store.ListTrials(study.id));
      ASSIGN_OR_RETURN(open_runs, store.CountOpenRuns(study.id));
      return absl::OkStatus();
    }();
    if (!read.ok()) {
      if (!IsTransientStoreError(read)) {
        if (tty && last_width > 0) std::fputc('\n', out);
        return read;
      }
      std::fprintf(out, "%sthe database did not answer (%s); retrying in %s\n",
                   tty && last_width > 0 ? "\n" : "",
                   std::string(read.message()).c_str(),
                   absl::FormatDuration(backoff).c_str());
      std::fflush(out);
      last_width = 0;
      last_key.clear();
      if (!sleep_unless_stopped(backoff)) break;
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    backoff = kFirstBackoff;
    TrialCounts c;
    std::optional<absl::Time> first_created;
    for (const TrialRow& t : trials) {
      if (t.state == coordinator::TrialState::kRunning) ++c.running;
      if (t.state == coordinator::TrialState::kComplete) ++c.complete;
      if (t.state == coordinator::TrialState::kPruned) ++c.pruned;
      if (t.state == coordinator::TrialState::kFailed) ++c.failed;
      if (!first_created.has_value() || t.created_at < *first_created) {
        first_created = t.created_at;
      }
    }
    const int64_t finished = c.complete + c.pruned + c.failed;
    const std::optional<TrialRow> best = BestTrial(trials);
    // Queued or leased runs once every trial has finished are the complete
    // trials' final (lockbox) runs: the study waits for them.
    const int64_t lockbox_left = c.running == 0 ? open_runs : 0;
    std::string counts = absl::StrFormat(
        "trials %d%s done: %d complete, %d pruned, %d failed; %d running",
        finished, max_trials > 0 ? absl::StrCat("/", max_trials) : "",
        c.complete, c.pruned, c.failed, c.running);
    if (lockbox_left > 0) {
      absl::StrAppend(&counts, "; ", lockbox_left, " lockbox run",
                      lockbox_left == 1 ? "" : "s", " left");
    }
    const std::string best_text =
        best.has_value() ? absl::StrFormat("best %.4f (trial %d)", *best->score,
                                           best->number)
                         : "best -";
    std::string rate_text = "- trials/h";
    std::string eta_text = "ETA -";
    if (finished > 0 && first_created.has_value()) {
      const double hours = absl::ToDoubleHours(absl::Now() - *first_created);
      if (hours > 0) {
        const double rate = static_cast<double>(finished) / hours;
        rate_text = absl::StrFormat("%.1f trials/h", rate);
        if (max_trials > 0) {
          const double left =
              static_cast<double>(std::max<int64_t>(0, max_trials - finished));
          eta_text = absl::StrCat("ETA ", FormatEta(absl::Hours(left / rate)));
        }
      }
    }
    const std::string key = absl::StrCat(coordinator::ToString(study.state),
                                         " ", counts, " ", best_text);
    const std::string line =
        absl::StrCat("[", coordinator::ToString(study.state), "] ", counts,
                     " | ", best_text, " | ", rate_text, " | ", eta_text);
    if (tty) {
      // Pad with blanks so a shorter line erases the previous one.
      const size_t width = DisplayWidth(line);
      std::fprintf(out, "\r%s%s", line.c_str(),
                   std::string(last_width > width ? last_width - width : 0, ' ')
                       .c_str());
      last_width = width;
    } else if (key != last_key) {
      std::fprintf(out, "%s\n", line.c_str());
    }
    std::fflush(out);
    last_key = key;

    // Only the coordinator's word: between a trial's completion and its
    // final run being queued, every count here looks finished; the
    // coordinator marks the study done once the final runs are over and
    // the study's result is stored.
    if (study.state == coordinator::StudyState::kDone) {
      why = absl::StrCat("study ", study_name, " is done");
    } else if (study.state == coordinator::StudyState::kStopped &&
               !study.stop_reason.empty()) {
      // The coordinator stopped it (its dataset could not be written, ...):
      // a failure of the study, not the end of a wait.
      if (tty) std::fputc('\n', out);
      std::fflush(out);
      return absl::FailedPreconditionError(absl::StrCat(
          "study ", study_name,
          " was stopped by the coordinator: ", study.stop_reason,
          " (fix it, then: ristretto study start ", study_name, ")"));
    } else if (study.state == coordinator::StudyState::kStopped) {
      why = absl::StrCat("study ", study_name,
                         " is stopped (resume: ristretto study start ",
                         study_name, ")");
    }
    if (why.empty()) sleep_unless_stopped(absl::Seconds(1));
    if (!why.empty()) break;
  }
  if (tty) std::fputc('\n', out);
  std::fprintf(out, "%s\n", why.c_str());
  std::fflush(out);
  return absl::OkStatus();
}

absl::Status PrintLeaderboard(Store& store, const std::string& study_name,
                              int top_n, std::FILE* out) {
  ASSIGN_OR_RETURN(StudyRow study, coordinator::FindStudy(store, study_name));
  ASSIGN_OR_RETURN(std::vector<TrialRow> trials, store.ListTrials(study.id));
  const std::vector<TrialRow> ranked = RankedTrials(trials);
  if (ranked.empty()) {
    std::fprintf(out, "leaderboard of study %s: no complete trial yet\n",
                 study_name.c_str());
    return absl::OkStatus();
  }
  const size_t shown =
      std::min(ranked.size(), static_cast<size_t>(std::max(top_n, 0)));
  std::fprintf(out, "leaderboard of study %s (top %zu of %zu complete)\n",
               study_name.c_str(), shown, ranked.size());
  ASSIGN_OR_RETURN(const auto lockbox, LockboxByTrial(store, study.id));
  Table table(
      {"rank", "trial", "score (CV)", "lockbox sharpe (not ranked)", "params"});
  for (size_t r = 0; r < shown; ++r) {
    table.AddRow({absl::StrCat(r + 1), absl::StrCat(ranked[r].number),
                  FormatScore(ranked[r].score),
                  FormatLockbox(lockbox, ranked[r].id),
                  FormatParams(ranked[r].params)});
  }
  std::fputs(table.Render().c_str(), out);
  // Two numbers for one trial that must not be read as one.
  const absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(study.config_text);
  std::fprintf(out,
               "score (CV): the study objective (%s), the mean over the "
               "trial's folds of each fold's value; the statistics' CV Sharpe "
               "below pools every fold's bars into one series, so the two "
               "differ.\n",
               config.ok() ? config->objective.c_str() : "?");
  std::fflush(out);
  return PrintStudyStatistics(store, study, out);
}

absl::Status PrintStudies(Store* store) {
  ASSIGN_OR_RETURN(std::vector<StudyRow> studies, store->ListStudies());
  if (studies.empty()) {
    std::printf("no studies (ristretto study create FILE)\n");
    return absl::OkStatus();
  }
  Table table({"name", "state", "complete", "running", "pruned", "failed",
               "best", "created"});
  for (const StudyRow& s : studies) {
    ASSIGN_OR_RETURN(TrialCounts counts, store->CountTrials(s.id));
    ASSIGN_OR_RETURN(std::vector<TrialRow> trials, store->ListTrials(s.id));
    const std::optional<TrialRow> best = BestTrial(trials);
    table.AddRow({s.name, std::string(coordinator::ToString(s.state)),
                  absl::StrCat(counts.complete), absl::StrCat(counts.running),
                  absl::StrCat(counts.pruned), absl::StrCat(counts.failed),
                  FormatScore(best.has_value() ? best->score : std::nullopt),
                  FormatLocalTime(s.created_at)});
  }
  std::fputs(table.Render().c_str(), stdout);
  return absl::OkStatus();
}

absl::Status PrintStudy(Store* store, const std::string& name) {
  ASSIGN_OR_RETURN(StudyRow study, coordinator::FindStudy(*store, name));
  std::printf("study        %s (id %lld)\n", study.name.c_str(),
              static_cast<long long>(study.id));
  std::printf("state        %s\n",
              std::string(coordinator::ToString(study.state)).c_str());
  if (!study.stop_reason.empty()) {
    std::printf("stopped by  the coordinator: %s\n", study.stop_reason.c_str());
  }
  std::printf("created      %s\n", FormatLocalTime(study.created_at).c_str());
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(study.config_text);
  if (config.ok()) {
    std::optional<DatasetRow> registered;
    if (!config->dataset.synthetic) {
      absl::StatusOr<DatasetRow> row = store->GetDataset(config->dataset.id);
      if (row.ok()) {
        registered = *std::move(row);
      } else if (!absl::IsNotFound(row.status())) {
        return row.status();
      }
    }
    std::fputs(
        FormatSettings(*config, registered.has_value() ? &*registered : nullptr)
            .c_str(),
        stdout);
  } else {
    std::printf("settings     (stored file no longer parses: %s)\n",
                std::string(config.status().message()).c_str());
  }
  ASSIGN_OR_RETURN(TrialCounts counts, store->CountTrials(study.id));
  std::printf(
      "trial counts %lld complete, %lld running, %lld pruned, %lld failed\n",
      static_cast<long long>(counts.complete),
      static_cast<long long>(counts.running),
      static_cast<long long>(counts.pruned),
      static_cast<long long>(counts.failed));
  ASSIGN_OR_RETURN(std::vector<TrialRow> trials, store->ListTrials(study.id));
  std::printf("\n");
  if (trials.empty()) {
    std::printf("no trials yet\n");
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const auto lockbox, LockboxByTrial(*store, study.id));
  Table table({"trial", "state", "score", "dropped",
               "lockbox sharpe (not ranked)", "params", "reason"});
  // Env steps the learners received and dropped, over the completed runs
  // that reported them (CompleteRun): the actors' wasted work.
  int64_t received = 0, dropped = 0, reported_runs = 0;
  for (const TrialRow& t : trials) {
    ASSIGN_OR_RETURN(const std::vector<RunRow> runs, store->ListRuns(t.id));
    int64_t trial_received = 0, trial_dropped = 0;
    for (const RunRow& r : runs) {
      if (r.env_steps_received <= 0) continue;
      trial_received += r.env_steps_received;
      trial_dropped += r.env_steps_dropped;
      ++reported_runs;
    }
    received += trial_received;
    dropped += trial_dropped;
    std::string reason = t.fail_reason;
    if (t.state == coordinator::TrialState::kRunning) {
      // A run its learner failed waits (backing off) to be tried again:
      // say why, before the trial's last attempt makes it its reason.
      for (const RunRow& r : runs) {
        if (r.state == coordinator::RunState::kQueued &&
            r.retry_after.has_value()) {
          absl::StrAppend(&reason, reason.empty() ? "" : "; ", "fold ", r.fold,
                          " retrying after attempt ", r.attempts, ": ",
                          r.last_error);
        }
      }
    }
    table.AddRow(
        {absl::StrCat(t.number), std::string(coordinator::ToString(t.state)),
         FormatScore(t.score),
         FormatDroppedShare(trial_received, trial_dropped),
         FormatLockbox(lockbox, t.id), FormatParams(t.params), reason});
  }
  std::fputs(table.Render().c_str(), stdout);
  if (reported_runs > 0) {
    std::printf(
        "\nenv steps dropped %s: %lld of %lld received (stale, or left over "
        "when a run ended), %lld completed runs\n",
        FormatDroppedShare(received, dropped).c_str(),
        static_cast<long long>(dropped), static_cast<long long>(received),
        static_cast<long long>(reported_runs));
  } else {
    std::printf("\nenv steps dropped: no completed run reported them yet\n");
  }
  return PrintStudyStatistics(*store, study, stdout);
}

absl::Status PrintBestTrial(Store* store, const std::string& name) {
  ASSIGN_OR_RETURN(StudyRow study, coordinator::FindStudy(*store, name));
  ASSIGN_OR_RETURN(std::vector<TrialRow> trials, store->ListTrials(study.id));
  const std::optional<TrialRow> best = BestTrial(trials);
  if (!best.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study '", name, "' has no complete trial yet (", trials.size(),
        " trials; ristretto study show ", name, ")"));
  }
  std::printf("study   %s\n", study.name.c_str());
  std::printf("trial   %lld\n", static_cast<long long>(best->number));
  std::printf("score   %s\n", FormatScore(best->score).c_str());
  std::printf("\nparams\n");
  Table params({"name", "value"});
  for (const coordinator::ParamRow& p : best->params) {
    params.AddRow({p.name, p.value});
  }
  std::fputs(params.Render().c_str(), stdout);

  ASSIGN_OR_RETURN(std::vector<FoldMetrics> folds,
                   store->ListFoldMetrics(best->id));
  std::printf("\nfolds (validation)\n");
  // Without the dataset's bar interval the standard errors show as n/a.
  const absl::StatusOr<double> bpy =
      coordinator::StudyBarsPerYear(*store, study);
  // Buy & hold's errors are rebuilt from the dataset on each fold's rows;
  // without it they show as n/a (and the table says why below it).
  const absl::StatusOr<std::map<int, double>> bh_se =
      report::BuyAndHoldFoldErrors(*store, study, best->id);
  Table metrics({"fold", "sharpe ± se", "buy&hold sharpe ± se", "sortino",
                 "max_dd%", "calmar", "return%", "buy&hold return%", "trades",
                 "fees", "turnover", "exposure%", "best at env_steps"});
  for (size_t k = 0; k < folds.size(); ++k) {
    const FoldMetrics& m = folds[k];
    metrics.AddRow(
        {absl::StrCat(k),
         FormatSharpeSe(
             m.sharpe,
             bpy.ok() ? coordinator::AnnualisedSharpeError(m.log_returns, *bpy)
                      : std::numeric_limits<double>::quiet_NaN()),
         FormatSharpeSe(m.benchmark_sharpe, BhError(bh_se, m.fold)),
         absl::StrFormat("%.4f", m.sortino),
         absl::StrFormat("%.2f", 100 * m.max_drawdown),
         absl::StrFormat("%.4f", m.calmar),
         absl::StrFormat("%.2f", 100 * m.total_return),
         absl::StrFormat("%.2f", 100 * m.benchmark_return),
         absl::StrCat(m.trades), absl::StrFormat("%.2f", m.fees),
         absl::StrFormat("%.2f", m.turnover),
         absl::StrFormat("%.1f", 100 * m.exposure), absl::StrCat(m.env_steps)});
  }
  std::fputs(metrics.Render().c_str(), stdout);
  if (!bh_se.ok()) {
    std::printf("  (buy & hold's standard errors: %s)\n",
                std::string(bh_se.status().message()).c_str());
  } else {
    std::vector<std::string> missing;
    for (const FoldMetrics& m : folds) {
      if (bh_se->count(m.fold) == 0) missing.push_back(absl::StrCat(m.fold));
    }
    if (!missing.empty()) {
      std::printf(
          "  (buy & hold's standard errors: not rebuilt for fold %s, whose "
          "stored run options or rows could not be read)\n",
          absl::StrJoin(missing, ", ").c_str());
    }
  }

  ASSIGN_OR_RETURN(const auto lockbox, LockboxByTrial(*store, study.id));
  auto l = lockbox.find(best->id);
  std::printf(
      "\nlockbox (final run: trained on every pre-lockbox row, evaluated "
      "once on rows the search never saw; never used for ranking)\n");
  if (l == lockbox.end()) {
    std::printf("  no result yet (the final run has not finished)\n");
  } else {
    const coordinator::LockboxRow& r = l->second;
    Table lb({"policy", "sharpe ± se", "sortino", "return%", "max_dd%",
              "turnover", "fees", "trades", "exposure%"});
    lb.AddRow(
        {absl::StrCat("trial ", best->number,
                      r.refits > 1
                          ? absl::StrCat(" (", r.refits, " refits, split)")
                          : std::string()),
         FormatSharpeSe(r.policy.sharpe, r.sharpe_se),
         absl::StrFormat("%.2f", r.policy.sortino),
         absl::StrFormat("%.2f", 100 * r.policy.total_return),
         absl::StrFormat("%.2f", 100 * r.policy.max_drawdown),
         absl::StrFormat("%.2f", r.policy.turnover),
         absl::StrFormat("%.2f", r.policy.fees), absl::StrCat(r.policy.trades),
         absl::StrFormat("%.1f", 100 * r.policy.exposure)});
    // Each refit's own result: how much the combination hangs on one run.
    if (r.refits > 1) {
      ASSIGN_OR_RETURN(const std::vector<coordinator::RefitRow> refits,
                       store->ListTrialRefits(best->id));
      for (const coordinator::RefitRow& f : refits) {
        lb.AddRow({absl::StrCat("  refit ", f.refit),
                   FormatSharpeSe(f.policy.sharpe, f.sharpe_se),
                   absl::StrFormat("%.2f", f.policy.sortino),
                   absl::StrFormat("%.2f", 100 * f.policy.total_return),
                   absl::StrFormat("%.2f", 100 * f.policy.max_drawdown),
                   absl::StrFormat("%.2f", f.policy.turnover),
                   absl::StrFormat("%.2f", f.policy.fees),
                   absl::StrCat(f.policy.trades),
                   absl::StrFormat("%.1f", 100 * f.policy.exposure)});
      }
    }
    lb.AddRow({"buy & hold (equal weight)",
               FormatSharpeSe(r.bh_sharpe, r.bh_sharpe_se),
               absl::StrFormat("%.2f", r.bh_sortino),
               absl::StrFormat("%.2f", 100 * r.bh_return),
               absl::StrFormat("%.2f", 100 * r.bh_max_drawdown), "-", "-", "-",
               "100.0"});
    lb.AddRow({"cash", "0.00 ± 0.00", "0.00", "0.00", "0.00", "0.00", "0.00",
               "0", "0.0"});
    lb.AddRow({absl::StrCat("random (", r.random_seeds, " seeds)"),
               absl::StrFormat("%.2f ± %.2f (spread)", r.random_sharpe_mean,
                               r.random_sharpe_std),
               "-",
               absl::StrFormat("%.2f ± %.2f", 100 * r.random_return_mean,
                               100 * r.random_return_std),
               "-", "-", "-", "-", "-"});
    std::fputs(lb.Render().c_str(), stdout);
  }

  ASSIGN_OR_RETURN(std::vector<ArtifactRow> artifacts,
                   store->ListArtifacts(best->id));
  std::printf("\nartifacts\n");
  Table table({"kind", "fold", "path", "sha256"});
  for (const ArtifactRow& a : artifacts) {
    absl::StatusOr<coordinator::RunRow> run = store->GetRun(a.run_id);
    table.AddRow({a.kind,
                  !run.ok()                                ? "-"
                  : run->fold == coordinator::kLockboxFold ? "lockbox"
                  : coordinator::IsFinalFold(run->fold)
                      ? absl::StrCat("lockbox refit ",
                                     coordinator::RefitOfFold(run->fold))
                      : absl::StrCat(run->fold),
                  a.path, a.sha256});
  }
  std::fputs(table.Render().c_str(), stdout);
  return PrintStudyStatistics(*store, study, stdout);
}

}  // namespace ristretto::cli
