#include "coordinator/core/data_study.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/core/study_config.h"

namespace ristretto::coordinator {
namespace {

constexpr int64_t kRowsPerFold = 5000;
constexpr int kMinFolds = 2, kMaxFolds = 4;
constexpr double kPasses = 10;
constexpr int64_t kBudgetQuantum = 10000;
constexpr int64_t kMinBudget = 50000, kMaxBudget = 400000;
// The reward's turnover penalty (env.turnover_penalty), per unit of
// turnover: about 3.3 times the 0.30 % a unit costs at the default fees.
constexpr double kTurnoverPenalty = 0.01;
// The longest decision interval of the built-in study, in bars: a
// 512-bar training episode then holds 8 decisions.
constexpr int64_t kMaxDecisionBars = 72;
// The training slice (half of them) must hold a 512-step episode and its
// lookback (512 + 2·4 rows).
constexpr int64_t kMinGuardRows = 1100;

// 12345 → "12,345".
std::string Thousands(int64_t v) {
  std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace

absl::StatusOr<DataStudySizing> SizeStudyForData(int64_t rows, int assets,
                                                 int64_t interval_seconds) {
  if (rows <= 0 || assets <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizing a study needs rows and assets, got ", rows,
                     " rows and ", assets, " assets"));
  }
  DataStudySizing s;
  s.rows = rows;
  s.assets = assets;
  const LockboxSpec lockbox;
  s.lockbox_rows = std::llround(lockbox.share * static_cast<double>(rows));
  s.guard_rows = rows - s.lockbox_rows;
  if (s.guard_rows < kMinGuardRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the data has ", rows, " rows: ", s.guard_rows,
        " before the lockbox are too few for two walk-forward folds (at "
        "least ",
        kMinGuardRows, "); give more rows or a study with --study"));
  }
  s.folds = static_cast<int>(
      std::clamp<int64_t>(s.guard_rows / kRowsPerFold, kMinFolds, kMaxFolds));
  s.train_bars = s.guard_rows / 2;
  s.test_bars = (s.guard_rows - s.train_bars) / s.folds;
  const double wanted = kPasses * static_cast<double>(s.train_bars);
  s.budget_env_steps = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(wanted / kBudgetQuantum)) * kBudgetQuantum,
      kMinBudget, kMaxBudget);
  s.passes = static_cast<double>(s.budget_env_steps) /
             static_cast<double>(s.train_bars);
  s.width = assets <= 4 ? 64 : 128;
  s.max_trials = 6;
  s.concurrency = 2;
  s.refits = 3;
  // One decision every three days, at most every kMaxDecisionBars bars
  // (docs/env_actions.md, "Decisions every k bars").
  constexpr int64_t kDecisionSeconds = 3 * 86400;
  if (interval_seconds > 0) {
    s.decision_bars = static_cast<int>(std::clamp<int64_t>(
        (kDecisionSeconds + interval_seconds / 2) / interval_seconds, 1,
        kMaxDecisionBars));
  }
  return s;
}

std::string DataStudyYaml(const DataStudySizing& s, const std::string& name) {
  const LockboxSpec lockbox;
  return absl::StrCat(
      "# The built-in study of `ristretto up --csv-dir/--dataset` without\n"
      "# --study, sized to the data (docs/study_format.md, \"Your own "
      "data\"):\n",
      "# ", s.rows, " rows x ", s.assets, " assets. Copy and edit it.\n",
      "name: ", name, "\n", "dataset: given\n", "# ", s.folds,
      " walk-forward folds over the ", s.guard_rows,
      " rows before the lockbox.\n",
      "cv: {scheme: walk_forward, train_bars: ", s.train_bars,
      ", test_bars: ", s.test_bars, ", step_bars: ", s.test_bars, "}\n",
      "# Each complete trial is refit ", s.refits,
      " times (its own seed each) and\n"
      "# judged on the lockbox as capital split among them.\n",
      "lockbox: {share: ", lockbox.share, ", refits: ", s.refits, "}\n", "# ",
      absl::StrFormat("%.1f", s.passes),
      " passes over a fold's training rows.\n",
      "budget_env_steps: ", s.budget_env_steps, "\n",
      "eval_every_env_steps: ", s.budget_env_steps / 2, "\n",
      "sampler: {type: tpe, seed: 1, startup_trials: 3}\n",
      "pruner: {type: median, warmup_steps: ", s.budget_env_steps / 2,
      ", min_trials: 2}\n", "concurrency: ", s.concurrency, "\n",
      "max_trials: ", s.max_trials, "\n", "max_attempts: 2\n", "fixed:\n",
      "  width: ", s.width, "\n",
      "  layers: 2\n"
      "  batch_size: 512\n"
      "  rollout_steps: 64\n"
      "  epochs: 8\n"
      "  episode_steps: 512\n"
      "  lookback: 4\n"
      "  reward_mode: log_return\n"
      "  reward_scale: 100\n"
      "  # Trading costs about three times what the fees and slippage take\n"
      "  # (0.25 % + 5 bps a side): without it the policy churned away its\n"
      "  # capital on real hourly data (docs/env_actions.md).\n"
      "  turnover_penalty: ",
      kTurnoverPenalty, "\n",
      "  # One decision every three days (at most every 72 bars): the\n"
      "  # policy's target is traded on the bar after it decides and held\n"
      "  # to the next decision. Every bar, or every day, the policies held\n"
      "  # the market and missed a trend momentum caught (docs/\n"
      "  # env_actions.md, \"Decisions every k bars\").\n"
      "  decision_bars: ",
      s.decision_bars, "\n",
      "  # The rate decays to 0 at each run's budget: the refits' last\n"
      "  # weights, which the lockbox scores, have settled.\n"
      "  lr_schedule: linear\n"
      "space:\n"
      "  # A slower learner swings its targets less: on real hourly data\n"
      "  # the winners at 1.8e-3 paid 75-96 % of their capital a year in\n"
      "  # fees, those at 3.5e-4..7.8e-4 8-30 %, and the demo's planted\n"
      "  # signal was still found (docs/env_actions.md).\n"
      "  learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, log: true}\n"
      "  gamma: {type: float, low: 0.9, high: 0.99}\n"
      "  clip_ratio: {type: float, low: 0.1, high: 0.3, step: 0.05}\n");
}

std::string DataStudySizingText(const DataStudySizing& s) {
  return absl::StrCat(
      "sized to the data: ", Thousands(s.rows), " rows x ", s.assets,
      " assets -> lockbox the last ", Thousands(s.lockbox_rows), " rows (",
      s.refits, " refits); ", s.folds, " walk-forward folds over the ",
      Thousands(s.guard_rows), " rows before it (train ",
      Thousands(s.train_bars), ", test ", Thousands(s.test_bars), " each); ",
      Thousands(s.budget_env_steps), " env steps per run (",
      absl::StrFormat("%.1f", s.passes),
      " passes over a fold's training rows); one decision every ",
      s.decision_bars, s.decision_bars == 1 ? " bar" : " bars", "; width ",
      s.width, "; ", s.max_trials, " trials, ", s.concurrency, " at a time");
}

}  // namespace ristretto::coordinator
