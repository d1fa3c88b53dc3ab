#include "cli/backtest_command.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "cli/table.h"
#include "common/status_macros.h"
#include "coordinator/core/verdict.h"
#include "env/csv_import.h"
#include "env/dataset.h"
#include "ops/backtest.h"

ABSL_FLAG(std::string, from, "",
          "the first bar played: Unix seconds or ISO-8601 UTC (2024-01-31, "
          "2024-01-31T12:00:00Z); default: the dataset's first");
ABSL_FLAG(std::string, to, "",
          "the end of the bars played (excluded), as --from; default: the "
          "dataset's end");
ABSL_FLAG(int64_t, random_seeds, ristretto::coordinator::kRandomPolicySeeds,
          "seeds of the random-policy baseline, in [1, 10000]");
ABSL_FLAG(std::optional<double>, slippage_bps, std::nullopt,
          "slippage in basis points, in [0, 10000) (default: the policy "
          "contract's)");
ABSL_FLAG(std::optional<double>, max_volume_share, std::nullopt,
          "the largest share of a bar's volume one order may take, in [0, 1] "
          "(0: no cap; default: the policy contract's)");
ABSL_FLAG(int64_t, threads, 1, "CPU threads of the policy, in [1, 1024]");
ABSL_FLAG(double, forward_timeout_s, 60,
          "longest one forward pass of the policy may run, seconds, in "
          "(0, 86400]: a policy is code, and one that never returns stops "
          "the backtest with an error");

namespace ristretto::cli {
namespace {

namespace fs = std::filesystem;
using Request = ops::BacktestRequest;
using Row = ops::BacktestRow;
using Spread = ops::BacktestSpread;
using RandomRow = ops::BacktestRandomRow;
using RuleRow = ops::BacktestRuleRow;

constexpr char kDefaultOut[] = "backtest";

// ---- flags -----------------------------------------------------------------

absl::StatusOr<int64_t> ParseTimeFlag(const char* flag,
                                      const std::string& text) {
  absl::StatusOr<int64_t> t = env::ParseTimestamp(text);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " ", text,
                     " is not a time (Unix seconds or ISO-8601 UTC such as "
                     "2024-01-31 or 2024-01-31T12:00:00Z)"));
  }
  return *t;
}

absl::StatusOr<Request> ParseRequest(const ParsedCommandLine& parsed) {
  Request r;
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "backtest takes one POLICY_DIR (a directory with policy.pt and "
        "contract.json)");
  }
  r.policy_dir = parsed.positional[0];
  ASSIGN_OR_RETURN(r.dataset_path, Required(FLAGS_dataset));
  r.from_text = absl::GetFlag(FLAGS_from);
  r.to_text = absl::GetFlag(FLAGS_to);
  if (!r.from_text.empty()) {
    ASSIGN_OR_RETURN(r.from, ParseTimeFlag("from", r.from_text));
  }
  if (!r.to_text.empty()) {
    ASSIGN_OR_RETURN(r.to, ParseTimeFlag("to", r.to_text));
  }
  if (r.from && r.to && *r.from >= *r.to) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--from ", r.from_text, " is not before --to ", r.to_text));
  }
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) out = kDefaultOut;
  r.out = fs::absolute(fs::path(out)).lexically_normal();
  if (r.out.filename().empty()) r.out = r.out.parent_path();
  const int64_t seeds = absl::GetFlag(FLAGS_random_seeds);
  if (seeds < 1 || seeds > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--random-seeds ", seeds,
                     " must be in [1, 10000] (the random "
                     "policy is a required baseline)"));
  }
  r.random_seeds = static_cast<int>(seeds);
  const int64_t threads = absl::GetFlag(FLAGS_threads);
  if (threads < 1 || threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads ", threads, " must be in [1, 1024]"));
  }
  r.threads = static_cast<int>(threads);
  const double timeout = absl::GetFlag(FLAGS_forward_timeout_s);
  if (!(timeout > 0 && timeout <= 86400)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--forward-timeout-s ", timeout, " must be in (0, 86400]"));
  }
  r.forward_timeout_s = timeout;
  if (const std::optional<double> slippage = absl::GetFlag(FLAGS_slippage_bps);
      slippage.has_value()) {
    const double s = *slippage;
    if (!(s >= 0 && s < 1e4)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--slippage-bps ", s, " must be in [0, 10000)"));
    }
    r.slippage_bps = s;
  }
  if (const std::optional<double> share = absl::GetFlag(FLAGS_max_volume_share);
      share.has_value()) {
    const double v = *share;
    if (!(v >= 0 && v <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--max-volume-share ", v, " must be in [0, 1] (0 = no cap)"));
    }
    r.max_volume_share = v;
  }
  return r;
}

std::string Pct(double x) { return absl::StrFormat("%+.2f%%", 100 * x); }

std::string RenderTable(const Row& policy, const Row& bh, const Row& cash,
                        const RandomRow& random,
                        const std::vector<RuleRow>& rules) {
  cli::Table t({"", "Sharpe ± SE", "Sortino", "return", "max DD", "turnover",
                "fees", "trades", "exposure"});
  // `exact`: cash's 0 ± 0 is exact; a policy's or buy & hold's error that
  // is NaN or 0 is one it does not have (too few bars, a flat series).
  auto add = [&t](const std::string& name, const Row& r, bool exact) {
    t.AddRow({name,
              exact ? absl::StrFormat("%.2f ± %.2f", r.sharpe, r.sharpe_se)
                    : coordinator::FormatSharpeSe(r.sharpe, r.sharpe_se),
              absl::StrFormat("%.2f", r.sortino), Pct(r.total_return),
              absl::StrFormat("%.2f%%", 100 * r.max_drawdown),
              absl::StrFormat("%.2f", r.turnover),
              absl::StrFormat("%.2f", r.fees),
              absl::StrFormat("%.0f", r.trades),
              absl::StrFormat("%.1f%%", 100 * r.exposure)});
  };
  add("policy", policy, false);
  add("buy & hold", bh, false);
  for (const RuleRow& r : rules) add(r.name, r.row, false);
  add("cash", cash, true);
  auto ms = [](const Spread& s, int digits, double scale = 1) {
    return absl::StrFormat("%.*f ± %.*f", digits, scale * s.mean, digits,
                           scale * s.std);
  };
  t.AddRow({absl::StrCat("random (", random.seeds, " seeds",
                         random.split > 1
                             ? absl::StrCat(", each split among ", random.split,
                                            " like the policy")
                             : std::string(),
                         ", mean ± std)"),
            ms(random.sharpe, 2), ms(random.sortino, 2),
            ms(random.total_return, 2, 100) + "%",
            ms(random.max_drawdown, 2, 100) + "%", ms(random.turnover, 2),
            ms(random.fees, 2), ms(random.trades, 0),
            ms(random.exposure, 1, 100) + "%"});
  return t.Render();
}

// Prints what `r` found: warnings and notes on stderr, the rest on stdout
// (only after the run, so a failed run prints its one error line alone).
void PrintResult(const Request& req, const ops::BacktestResult& r) {
  if (!r.warning.empty()) {
    std::fprintf(stderr, "backtest: warning: %s\n", r.warning.c_str());
  }
  for (const std::string& note : r.notes) {
    std::fprintf(stderr, "backtest: note: %s\n", note.c_str());
  }
  std::printf(
      "backtest: %s on %s: %d assets, %lld bars (%zu domain%s) %s, interval "
      "%s\n",
      req.policy_dir.c_str(), req.dataset_path.c_str(), r.num_assets,
      static_cast<long long>(r.bars), r.domains, r.domains == 1 ? "" : "s",
      r.span.c_str(), env::FormatInterval(r.interval_seconds).c_str());
  if (r.refits > 1) {
    std::printf(
        "policy: %zu refits, capital split equally among them at each "
        "domain's first bar (as the lockbox scored them)\n",
        r.refits);
  }
  const std::string cap = r.max_volume_share > 0
                              ? absl::StrFormat("%.4g%% of the bar's volume",
                                                100 * r.max_volume_share)
                              : std::string("off");
  std::printf(
      "costs: buy fee %.4g%%, sell fee %.4g%%, slippage %.4g bps, volume cap "
      "%s\n",
      100 * r.buy_fee, 100 * r.sell_fee, r.slippage_bps, cap.c_str());
  if (r.in_sample) {
    std::printf(
        "note: this is the dataset the policy was trained on (same "
        "dataset_id): bars it trained or was selected on score in-sample; "
        "use --from/--to for bars it never saw\n");
  }
  std::fputs(
      RenderTable(r.policy, r.buy_and_hold, r.cash, r.random, r.rules).c_str(),
      stdout);
  std::printf("%s\n", r.comparison.c_str());
  std::printf(
      "wrote %s/{equity.csv,positions.csv,metrics.json,equity.svg,"
      "drawdown.svg}\n",
      req.out.string().c_str());
  std::printf(
      "time: %.2f s = setup %.2f s + policy %.2f s (forward passes %.2f s, "
      "%lld calls) + baselines %.2f s (%d random seeds) + outputs %.2f s\n",
      r.timing.total, r.timing.setup, r.timing.policy, r.timing.forward,
      static_cast<long long>(r.timing.forward_calls), r.timing.baselines,
      req.random_seeds, r.timing.outputs);
}

absl::Status Backtest(const ParsedCommandLine& parsed) {
  ASSIGN_OR_RETURN(const Request req, ParseRequest(parsed));
  ASSIGN_OR_RETURN(const ops::BacktestResult result, ops::RunBacktest(req));
  PrintResult(req, result);
  return absl::OkStatus();
}

}  // namespace

int RunBacktestCommand(int argc, char** argv, int first) {
  const Command command{
      "backtest",
      "usage: ristretto backtest POLICY_DIR --dataset FILE [--from TS] "
      "[--to TS]\n"
      "           [--out backtest] [--random-seeds 20] [--slippage-bps X]\n"
      "           [--max-volume-share Y] [--threads 1] "
      "[--forward-timeout-s 60]\n"
      "Plays an exported policy (policy.pt + contract.json) through the "
      "training env\non the dataset's bars in [--from, --to) beside buy and "
      "hold, cash and a random\npolicy; writes equity.csv, positions.csv, "
      "metrics.json and SVG charts to --out.\n",
      AnyOf({FlagsDefinedIn({"cli/backtest_command.cc"}),
             FlagsOf(FLAGS_dataset, FLAGS_out)}),
      /*max_positional=*/1};
  ParsedCommandLine parsed;
  if (const std::optional<int> exit_code =
          ParseCommand(command, argc, argv, first, &parsed)) {
    return *exit_code;
  }
  const absl::Status status = Backtest(parsed);
  if (!status.ok()) {
    std::fprintf(stderr, "ristretto backtest: %s\n",
                 std::string(status.message()).c_str());
    return status.code() == absl::StatusCode::kInvalidArgument ||
                   status.code() == absl::StatusCode::kFailedPrecondition
               ? 2
               : 1;
  }
  return 0;
}

}  // namespace ristretto::cli
