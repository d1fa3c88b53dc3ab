// `ristretto backtest POLICY_DIR --dataset FILE [--from TS] [--to TS]
// [--out DIR] [--random-seeds 20] [--slippage-bps X]
// [--max-volume-share Y] [--threads 1]`: plays an exported policy
// (policy.pt + contract.json, as written by `ristretto train --export`,
// `study export` and `up`) deterministically through the training env on
// the dataset's bars in [--from, --to), after checking its contract against
// the dataset (assets, features, lookback and observation size, interval).
// Prints the policy's Sharpe (± standard error), Sortino, return, maximum
// drawdown, turnover, fees, trades and exposure beside equal-weight buy and
// hold, cash and a random policy on the same bars, then one comparison
// line; writes equity.csv, positions.csv, metrics.json, equity.svg and
// drawdown.svg into --out (default ./backtest), all or nothing. A
// directory of refits (ops::kRefitDirPrefix) is played as one account
// split equally among them. Flags and the printed table only: the engine
// is ops::RunBacktest (ops/backtest.h).
#ifndef RISTRETTO_CLI_BACKTEST_COMMAND_H_
#define RISTRETTO_CLI_BACKTEST_COMMAND_H_

namespace ristretto::cli {

// argv[first] is the first argument after "backtest". Returns the exit
// status: 0, 2 for bad arguments or input (one line on stderr), 1 for
// other failures.
int RunBacktestCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_BACKTEST_COMMAND_H_
