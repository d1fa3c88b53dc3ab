// The backtest engine behind `ristretto backtest` (cli/backtest_command.cc
// turns flags into a BacktestRequest and prints the result): plays an
// exported policy (policy.pt + contract.json, as written by `ristretto train
// --export`, `study export` and `up`) deterministically through the training
// env on the dataset's bars in [from, to), after checking its contract
// against the dataset (assets, features, lookback and observation size,
// interval); scores it beside equal-weight buy and hold, cash, the rules a
// quant tries first and a random policy on the same bars and with the same
// costs; writes equity.csv, positions.csv, metrics.json, equity.svg and
// drawdown.svg into `out`, all or nothing. A directory of refits
// (kRefitDirPrefix) is played as one account split equally among them.
// Links LibTorch (the policy is TorchScript); this header does not include it.
#ifndef RISTRETTO_OPS_BACKTEST_H_
#define RISTRETTO_OPS_BACKTEST_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/core/verdict.h"
#include "ops/export_layout.h"

namespace ristretto::ops {

// What to play, where, and with which costs. Text fields echo the user's
// spelling in messages (the CLI fills them from its flags).
struct BacktestRequest {
  std::string policy_dir;
  std::string dataset_path;
  std::optional<int64_t> from, to;  // epoch seconds, [from, to)
  std::string from_text, to_text;
  std::filesystem::path out;  // absolute
  int random_seeds = coordinator::kRandomPolicySeeds;
  int threads = 1;
  double forward_timeout_s = 60;
  std::optional<double> slippage_bps, max_volume_share;
};

// One row of the table (and of metrics.json).
struct BacktestRow {
  double sharpe = 0, sharpe_se = 0, sortino = 0, total_return = 0,
         max_drawdown = 0, turnover = 0, fees = 0, trades = 0, exposure = 0;
};

struct BacktestSpread {
  double mean = 0, std = 0;  // population std over seeds
};

struct BacktestRandomRow {
  int seeds = 0;
  int split = 1;  // random policies each account's capital is split among
  BacktestSpread sharpe, sortino, total_return, max_drawdown, turnover, fees,
      trades, exposure;
};

// A rule baseline's row name and numbers.
struct BacktestRuleRow {
  std::string name;  // e.g. "momentum (N = 168 bars (7 days))"
  BacktestRow row;
};

// Wall seconds of each phase.
struct BacktestTiming {
  double total = 0, setup = 0, policy = 0, forward = 0, baselines = 0,
         outputs = 0;
  int64_t forward_calls = 0;
};

// What the backtest found; its files are already in the request's `out`.
struct BacktestResult {
  std::string warning;             // the contract check's, if any
  std::vector<std::string> notes;  // skipped domain pieces, missing rules
  int num_assets = 0;
  int64_t bars = 0;
  size_t domains = 0;
  std::string span;  // "first bar to last bar"
  int64_t interval_seconds = 0;
  size_t refits = 1;
  double buy_fee = 0, sell_fee = 0, slippage_bps = 0, max_volume_share = 0;
  bool in_sample = false;  // the dataset the policy was trained on
  BacktestRow policy, buy_and_hold, cash;
  BacktestRandomRow random;
  std::vector<BacktestRuleRow> rules;
  std::string comparison;  // the one-line verdict against every baseline
  BacktestTiming timing;
};

// Plays, scores and writes (see above). kInvalidArgument for bad input (it
// names the file or the request field as the CLI spells it: --out, --from,
// --to), kInternal for write errors (with strerror). A forward pass that
// runs past `forward_timeout_s` ends the process with an error (a
// TorchScript call cannot be interrupted).
absl::StatusOr<BacktestResult> RunBacktest(const BacktestRequest& request);

}  // namespace ristretto::ops

#endif  // RISTRETTO_OPS_BACKTEST_H_
