#include "cli/backtest_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "cli/table.h"
#include "common/atomic_file.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "coordinator/core/rule_baselines.h"
#include "coordinator/core/verdict.h"
#include "env/csv_import.h"
#include "env/dataset.h"
#include "env/geometry.h"
#include "env/market_data.h"
#include "learner/contract.h"
#include "learner/evaluation.h"
#include "learner/torch/policy_runner.h"
#include "nlohmann/json.hpp"
#include "report/svg_chart.h"

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
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr char kDefaultOut[] = "backtest";
// Written last into every output directory; its "backtest" key marks a
// directory this command may replace on a later run.
constexpr char kMetricsFile[] = "metrics.json";
// Charts draw at most this many vertices per series (min and max of each
// bucket, so peaks and drawdowns survive); the CSVs keep every bar.
constexpr size_t kMaxChartPoints = 4000;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// ---- inputs ----------------------------------------------------------------

struct Request {
  std::string policy_dir;
  std::string dataset_path;
  std::optional<int64_t> from, to;  // epoch seconds, [from, to)
  std::string from_text, to_text;
  fs::path out;
  int random_seeds = coordinator::kRandomPolicySeeds;
  int threads = 1;
  double forward_timeout_s = 60;
  std::optional<double> slippage_bps, max_volume_share;
};

// Stops the process with an error when one forward pass of a policy runs
// longer than its limit. A TorchScript call cannot be interrupted, and a
// policy directory is code: one that loops for ever would hang the
// backtest. Nothing has been written when it fires (outputs are written
// last, through a staging directory).
class ForwardWatchdog {
 public:
  explicit ForwardWatchdog(double limit_s)
      : limit_(absl::Seconds(limit_s)), thread_([this] { Watch(); }) {}
  ~ForwardWatchdog() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  ForwardWatchdog(const ForwardWatchdog&) = delete;
  ForwardWatchdog& operator=(const ForwardWatchdog&) = delete;

  void Begin(std::string what) {
    absl::MutexLock lock(&mu_);
    what_ = std::move(what);
    started_ = absl::Now();
    busy_ = true;
  }
  void End() {
    absl::MutexLock lock(&mu_);
    busy_ = false;
  }
  // `inner` with every call timed.
  learner::ActionFunction Wrap(learner::ActionFunction inner,
                               std::string what) {
    return [this, inner = std::move(inner), what = std::move(what)](
               const float* obs, int copies, float* actions) {
      Begin(what);
      inner(obs, copies, actions);
      End();
    };
  }

 private:
  void Watch() {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Milliseconds(100));
      if (!stop_ && busy_ && absl::Now() - started_ > limit_) {
        std::fprintf(stderr,
                     "ristretto backtest: %s: one forward pass of the policy "
                     "ran for more than %s (--forward-timeout-s); a policy "
                     "directory is code: run only policies you trust\n",
                     what_.c_str(), absl::FormatDuration(limit_).c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }

  const absl::Duration limit_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time started_ ABSL_GUARDED_BY(mu_);
  std::string what_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: started once the members above exist
};

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

// OK if `out` may receive the results: it does not exist, is an empty
// directory, or holds an earlier backtest (its metrics.json has the
// "backtest" key). Anything else is refused rather than replaced.
absl::Status CheckOutDir(const fs::path& out) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (ec || !fs::exists(st)) return absl::OkStatus();
  if (!fs::is_directory(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out ", out.string(), " exists and is not a directory"));
  }
  if (fs::is_empty(out, ec)) return absl::OkStatus();
  const absl::StatusOr<std::string> metrics =
      ReadFileToString((out / kMetricsFile).string());
  if (metrics.ok()) {
    const Json j = Json::parse(*metrics, nullptr, false);
    if (j.is_object() && j.contains("backtest")) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--out ", out.string(),
                   " is a non-empty directory that is not an earlier "
                   "backtest's output; choose another --out"));
}

// What a path is, for a message: "does not exist", "is a FIFO", "cannot be
// read (Too many levels of symbolic links)".
std::string WhatItIs(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    const int error = errno;
    return error == ENOENT
               ? std::string("does not exist")
               : absl::StrCat("cannot be read (", std::strerror(error), ")");
  }
  return absl::StrCat("is ", DescribeFileType(st.st_mode));
}

// contract.json is a few kilobytes; anything above this is not a contract.
constexpr int64_t kMaxContractBytes = int64_t{16} << 20;

absl::StatusOr<learner::PolicyContract> ReadPolicyContract(
    const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy directory ", dir.string(), " ", WhatItIs(dir),
                     " (expected a directory holding an exported policy)"));
  }
  for (const char* file : {"contract.json", "policy.pt"}) {
    if (!fs::is_regular_file(dir / file, ec)) {
      const std::string what = WhatItIs(dir / file);
      if (what == "does not exist") {
        return absl::InvalidArgumentError(absl::StrCat(
            "policy directory ", dir.string(), " has no ", file,
            " (expected an exported policy: policy.pt and contract.json, as "
            "written by ristretto train --export or study export)"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat((dir / file).string(), " ", what,
                       ", not a regular file (expected an exported policy)"));
    }
  }
  const std::string path = (dir / "contract.json").string();
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxContractBytes));
  absl::StatusOr<learner::PolicyContract> contract =
      learner::PolicyContract::FromJson(text);
  if (!contract.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", contract.status().message()));
  }
  return contract;
}

// The dataset's domains intersected with [from, to) (bar open times);
// pieces too short for one step beyond the lookback window are left out.
absl::StatusOr<std::vector<env::Domain>> SelectDomains(
    const env::Dataset& d, const Request& r, int lookback,
    std::vector<std::string>* notes) {
  const std::vector<int64_t>& ts = d.timestamps;
  if (ts.empty()) return absl::InvalidArgumentError("the dataset has no bars");
  const int64_t first = ts.front();
  const int64_t end = ts.back() + std::max<int64_t>(d.interval_seconds, 1);
  const std::string range =
      absl::StrCat("the data covers ", env::FormatTimestamp(first), " to ",
                   env::FormatTimestamp(ts.back()), " (last bar)");
  if (r.from && (*r.from < first || *r.from > ts.back())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--from ", r.from_text, " is outside the data: ", range));
  }
  if (r.to && (*r.to <= first || *r.to > end)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--to ", r.to_text, " is outside the data: ", range));
  }
  const int64_t lo = r.from ? *r.from : first;
  const int64_t hi = r.to ? *r.to : end;
  const auto row_at = [&ts](int64_t t) {
    return static_cast<int64_t>(std::lower_bound(ts.begin(), ts.end(), t) -
                                ts.begin());
  };
  const int64_t row_lo = row_at(lo), row_hi = row_at(hi);
  // ResetCopy needs 2L + 1 rows for one step; two steps give a return to
  // score (Sharpe needs at least two).
  const int64_t need = env::RowsForSteps(2, lookback);
  std::vector<env::Domain> out;
  int64_t longest = 0;
  for (const env::Domain& dom : d.domains) {
    const env::Domain piece{std::max(dom.begin, row_lo),
                            std::min(dom.end, row_hi)};
    if (piece.size() <= 0) continue;
    longest = std::max(longest, piece.size());
    if (piece.size() >= need) {
      out.push_back(piece);
    } else {
      notes->push_back(absl::StrCat("skipping ", piece.size(), " bars from ",
                                    env::FormatTimestamp(ts[piece.begin]),
                                    " (a domain piece shorter than the ", need,
                                    " bars lookback ", lookback, " needs)"));
    }
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        r.from || r.to ? "--from/--to leave" : "the dataset has", " at most ",
        longest, " contiguous bars, fewer than the ", need, " that lookback ",
        lookback, " needs (2 × lookback + 2)"));
  }
  return out;
}

// ---- results ----------------------------------------------------------------

// One row of the table (and of metrics.json).
struct Row {
  double sharpe = 0, sharpe_se = 0, sortino = 0, total_return = 0,
         max_drawdown = 0, turnover = 0, fees = 0, trades = 0, exposure = 0;
};

Row PolicyRow(const learner::EvaluationResult& e, double bpy) {
  Row r;
  r.sharpe = e.sharpe;
  r.sharpe_se = coordinator::AnnualisedSharpeError(e.log_returns, bpy);
  r.sortino = e.sortino;
  r.total_return = e.total_return;
  r.max_drawdown = e.max_drawdown;
  r.turnover = e.turnover;
  r.fees = e.fees;
  r.trades = static_cast<double>(e.trades);
  r.exposure = e.exposure;
  return r;
}

// Buy and hold buys once per domain, at the first bar the env values, the
// share C0 / n of every asset with a price (EqualWeightBuyAndHold): its
// trades, fees and turnover follow from that one purchase.
Row BuyAndHoldRow(const coordinator::SegmentBaselines& b,
                  const env::MarketData& market, const env::EnvOptions& env,
                  const learner::EvaluationTrace& trace) {
  Row r;
  const learner::EvaluationResult& bh = b.buy_and_hold;
  r.sharpe = bh.sharpe;
  r.sharpe_se = b.buy_and_hold_sharpe_se;
  r.sortino = bh.sortino;
  r.total_return = bh.total_return;
  r.max_drawdown = bh.max_drawdown;
  r.exposure = 1;
  const int n = market.num_assets;
  const double slip = 1 + env.slippage_bps / 1e4;
  const double share = env.initial_capital / n;
  int domains = 0;
  for (size_t k = 0; k < trace.row.size(); ++k) {
    if (k > 0 && trace.domain[k] == trace.domain[k - 1]) continue;
    ++domains;
    const double* p = market.price.data() + trace.row[k] * n;
    for (int i = 0; i < n; ++i) {
      if (!(p[i] > 0)) continue;
      r.trades += 1;
      r.fees += share * env.buy_fee / (1 + env.buy_fee);
      r.turnover += share / (slip * (1 + env.buy_fee)) / env.initial_capital;
    }
  }
  if (domains > 0) r.turnover /= domains;
  return r;
}

struct Spread {
  double mean = 0, std = 0;  // population std over seeds
};

Spread MeanStd(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  return s;
}

struct RandomRow {
  int seeds = 0;
  int split = 1;  // random policies each account's capital is split among
  Spread sharpe, sortino, total_return, max_drawdown, turnover, fees, trades,
      exposure;
};

RandomRow RandomPolicyRow(const coordinator::SegmentBaselines& b) {
  RandomRow r;
  r.seeds = b.random_seeds;
  r.split = b.random_split;
  auto field = [&b](auto get) {
    std::vector<double> v;
    v.reserve(b.random_runs.size());
    for (const learner::EvaluationResult& e : b.random_runs) {
      v.push_back(static_cast<double>(get(e)));
    }
    return MeanStd(v);
  };
  using E = learner::EvaluationResult;
  r.sharpe = {b.random_sharpe_mean, b.random_sharpe_std};
  r.total_return = {b.random_return_mean, b.random_return_std};
  r.sortino = field([](const E& e) { return e.sortino; });
  r.max_drawdown = field([](const E& e) { return e.max_drawdown; });
  r.turnover = field([](const E& e) { return e.turnover; });
  r.fees = field([](const E& e) { return e.fees; });
  r.trades = field([](const E& e) { return e.trades; });
  r.exposure = field([](const E& e) { return e.exposure; });
  return r;
}

// The policy's Sharpe against one baseline's on the same bars: the verdict's
// one-sided test (coordinator::TestAgainstBaselines), "beats" at
// p < kEdgeSignificance.
struct Versus {
  std::string name;
  double sharpe = 0;  // the baseline's
  double p_value = 1;
  std::string test;  // how p was computed
  bool beats = false;
};

std::vector<Versus> CompareWithBaselines(
    const Row& policy, const std::vector<double>& policy_log_returns,
    const coordinator::SegmentBaselines& b, double bars_per_year,
    std::string* note, double* vs_bh_difference, double* vs_bh_se) {
  const coordinator::BaselineTests t = coordinator::TestAgainstBaselines(
      policy.sharpe, policy.sharpe_se, policy_log_returns,
      b.buy_and_hold.log_returns, b.random_sharpe_mean, b.random_sharpe_std,
      bars_per_year);
  *note = t.note;
  *vs_bh_difference = t.vs_bh_difference;
  *vs_bh_se = t.vs_bh_se;
  auto make = [](std::string name, double sharpe, double p, std::string test) {
    Versus v;
    v.name = std::move(name);
    v.sharpe = sharpe;
    v.p_value = p;
    v.test = std::move(test);
    v.beats = p < coordinator::kEdgeSignificance;
    return v;
  };
  return {make("buy & hold", b.buy_and_hold.sharpe, t.p_vs_buy_and_hold,
               "paired Sharpe difference (Ledoit-Wolf, HAC)"),
          make("cash", 0, t.p_vs_cash, "PSR(0): Sharpe / its standard error"),
          make("random", b.random_sharpe_mean, t.p_vs_random,
               "against the random policies' spread and the policy's SE")};
}

std::string ComparisonLine(const Row& policy, const std::vector<Versus>& vs,
                           const std::string& note) {
  std::string line = absl::StrCat(
      "comparison: policy Sharpe ",
      coordinator::FormatSharpeSe(policy.sharpe, policy.sharpe_se));
  std::vector<std::string> lost;
  for (size_t k = 0; k < vs.size(); ++k) {
    const Versus& v = vs[k];
    absl::StrAppendFormat(&line, "%s %s %.2f (%s)", k == 0 ? " vs" : ",",
                          v.name, v.sharpe, coordinator::PValueText(v.p_value));
    if (!v.beats) lost.push_back(v.name);
  }
  const std::string level =
      absl::StrFormat("one-sided p < %.2f", coordinator::kEdgeSignificance);
  if (lost.empty()) {
    std::vector<std::string> names;
    names.reserve(vs.size());
    for (const Versus& v : vs) names.push_back(v.name);
    const std::string last = names.back();
    names.pop_back();
    absl::StrAppend(&line, ": the policy beats ", absl::StrJoin(names, ", "),
                    " and ", last, " on Sharpe beyond noise (", level,
                    " each)");
  } else {
    std::string names = lost.back();
    if (lost.size() > 1) {
      lost.pop_back();
      names = absl::StrCat(absl::StrJoin(lost, ", "), " and ", names);
    }
    absl::StrAppend(&line, ": the policy does NOT beat ", names,
                    " on Sharpe beyond noise (", level, ")");
  }
  if (!note.empty()) absl::StrAppend(&line, "; ", note);
  return line;
}

std::string Pct(double x) { return absl::StrFormat("%+.2f%%", 100 * x); }

// A rule baseline's row name and numbers.
struct RuleRow {
  std::string name;  // e.g. "momentum (N = 168 bars (7 days))"
  Row row;
};

std::vector<RuleRow> RuleRows(
    const std::vector<coordinator::RuleBaseline>& rules, double bpy) {
  std::vector<RuleRow> out;
  out.reserve(rules.size());
  for (const coordinator::RuleBaseline& r : rules) {
    RuleRow row{absl::StrCat(r.name, " (", r.parameter, ")"),
                PolicyRow(r.test, bpy)};
    row.row.sharpe_se = r.test_sharpe_se;
    out.push_back(std::move(row));
  }
  return out;
}

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

// ---- series -----------------------------------------------------------------

// The per-bar curves of the files and charts. With several domains (gaps
// in the data) every domain is played from the initial capital, as in
// training's evaluation; the curves chain them: a domain's values are
// scaled to start where the previous domain ended.
struct Curves {
  std::vector<int64_t> time;
  std::vector<double> policy, buy_and_hold, cash, drawdown, bh_drawdown;
};

Curves ChainCurves(const learner::EvaluationTrace& trace,
                   const std::vector<int64_t>& timestamps,
                   double initial_capital) {
  Curves c;
  const size_t bars = trace.value.size();
  c.time.resize(bars);
  c.policy.resize(bars);
  c.buy_and_hold.resize(bars);
  c.cash.assign(bars, initial_capital);
  c.drawdown.resize(bars);
  c.bh_drawdown.resize(bars);
  double scale = 1, bh_scale = 1, peak = 0, bh_peak = 0;
  for (size_t k = 0; k < bars; ++k) {
    if (k > 0 && trace.domain[k] != trace.domain[k - 1]) {
      scale = c.policy[k - 1] / trace.value[k];
      bh_scale = c.buy_and_hold[k - 1] / trace.buy_and_hold[k];
    }
    c.time[k] = timestamps[static_cast<size_t>(trace.row[k])];
    c.policy[k] = scale * trace.value[k];
    c.buy_and_hold[k] = bh_scale * trace.buy_and_hold[k];
    peak = std::max(peak, c.policy[k]);
    bh_peak = std::max(bh_peak, c.buy_and_hold[k]);
    c.drawdown[k] = peak > 0 ? 1 - c.policy[k] / peak : 0;
    c.bh_drawdown[k] = bh_peak > 0 ? 1 - c.buy_and_hold[k] / bh_peak : 0;
  }
  return c;
}

// Appends `sep` and the shortest text that reads back as the same double
// ("nan" for a non-finite one). std::to_chars is exact and several times
// faster than printf's %.17g, which matters for 50,000-bar files.
void AppendNum(std::string* out, double x, char sep = ',') {
  out->push_back(sep);
  if (!std::isfinite(x)) {
    out->append("nan");
    return;
  }
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), x);
  out->append(buf, r.ptr);
}

// Bar k's leading columns: timestamp, time, domain.
void AppendBar(std::string* out, int64_t t, int domain) {
  absl::StrAppend(out, t, ",", env::FormatTimestamp(t), ",", domain);
}

std::string EquityCsv(const Curves& c, const learner::EvaluationTrace& trace) {
  std::string out =
      "timestamp,time,domain,policy,buy_and_hold,cash,drawdown,"
      "buy_and_hold_drawdown\n";
  out.reserve(out.size() + c.time.size() * 120);
  for (size_t k = 0; k < c.time.size(); ++k) {
    AppendBar(&out, c.time[k], trace.domain[k]);
    for (double x : {c.policy[k], c.buy_and_hold[k], c.cash[k], c.drawdown[k],
                     c.bh_drawdown[k]}) {
      AppendNum(&out, x);
    }
    out.push_back('\n');
  }
  return out;
}

// Holdings in coins and weights (holding · close / value) per asset; value
// = cash + Σ holding · close at the bar's close.
std::string PositionsCsv(const learner::EvaluationTrace& trace,
                         const env::MarketData& market,
                         const std::vector<int64_t>& timestamps) {
  const int n = market.num_assets;
  std::string out = "timestamp,time,domain,value,cash,cash_weight";
  for (const env::AssetMeta& a : market.assets) {
    absl::StrAppend(&out, ",", a.symbol, ",", a.symbol, "_weight");
  }
  out += "\n";
  out.reserve(out.size() + trace.value.size() * (80 + 40 * n));
  for (size_t k = 0; k < trace.value.size(); ++k) {
    const double value = trace.value[k];
    const double* p = market.price.data() + trace.row[k] * n;
    AppendBar(&out, timestamps[static_cast<size_t>(trace.row[k])],
              trace.domain[k]);
    AppendNum(&out, value);
    AppendNum(&out, trace.cash[k]);
    AppendNum(&out, value > 0 ? trace.cash[k] / value : 0);
    for (int i = 0; i < n; ++i) {
      const double h = trace.holdings[k * n + i];
      AppendNum(&out, h);
      AppendNum(&out, value > 0 ? h * p[i] / value : 0);
    }
    out.push_back('\n');
  }
  return out;
}

// At most kMaxChartPoints vertices: per bucket of consecutive bars, its
// lowest and highest value in time order.
report::Series Decimated(std::string name, const std::vector<int64_t>& time,
                         const std::vector<double>& y, double scale) {
  report::Series s;
  s.name = std::move(name);
  const size_t bars = y.size();
  const size_t buckets = kMaxChartPoints / 2;
  if (bars <= kMaxChartPoints) {
    for (size_t k = 0; k < bars; ++k) {
      s.x.push_back(static_cast<double>(time[k]));
      s.y.push_back(scale * y[k]);
    }
    return s;
  }
  for (size_t b = 0; b < buckets; ++b) {
    const size_t lo = b * bars / buckets, hi = (b + 1) * bars / buckets;
    size_t kmin = lo, kmax = lo;
    for (size_t k = lo; k < hi; ++k) {
      if (y[k] < y[kmin]) kmin = k;
      if (y[k] > y[kmax]) kmax = k;
    }
    for (size_t k : {std::min(kmin, kmax), std::max(kmin, kmax)}) {
      if (!s.x.empty() && s.x.back() == static_cast<double>(time[k])) continue;
      s.x.push_back(static_cast<double>(time[k]));
      s.y.push_back(scale * y[k]);
    }
  }
  return s;
}

std::string EquitySvg(const Curves& c, const std::string& title) {
  report::ChartOptions o;
  o.id = "equity";
  o.title = title;
  o.x_label = "time (UTC)";
  o.y_label = "portfolio value";
  o.x_is_time = true;
  o.zero_line = false;
  std::vector<report::Series> series = {
      Decimated("policy", c.time, c.policy, 1),
      Decimated("equal-weight buy & hold", c.time, c.buy_and_hold, 1),
      Decimated("cash", c.time, c.cash, 1)};
  series[2].dashed = true;
  return report::RenderSvgDocument(o, series);
}

std::string DrawdownSvg(const Curves& c, const std::string& title) {
  report::ChartOptions o;
  o.id = "drawdown";
  o.title = title;
  o.x_label = "time (UTC)";
  o.y_label = "drawdown (%)";
  o.x_is_time = true;
  std::vector<report::Series> series = {
      Decimated("policy", c.time, c.drawdown, -100),
      Decimated("equal-weight buy & hold", c.time, c.bh_drawdown, -100)};
  series[0].style = report::SeriesStyle::kArea;
  return report::RenderSvgDocument(o, series);
}

Json NumberJson(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

Json RowJson(const Row& r) {
  return Json{{"sharpe", NumberJson(r.sharpe)},
              {"sharpe_se", NumberJson(r.sharpe_se)},
              {"sortino", NumberJson(r.sortino)},
              {"total_return", NumberJson(r.total_return)},
              {"max_drawdown", NumberJson(r.max_drawdown)},
              {"turnover", NumberJson(r.turnover)},
              {"fees", NumberJson(r.fees)},
              {"trades", NumberJson(r.trades)},
              {"exposure", NumberJson(r.exposure)}};
}

Json SpreadJson(const Spread& s) {
  return Json{{"mean", NumberJson(s.mean)}, {"std", NumberJson(s.std)}};
}

// ---- output -----------------------------------------------------------------

// Every error carries its strerror ("No space left on device").
absl::Status WriteFile(const fs::path& path, const std::string& text) {
  return WriteFileDurably(path.string(), text);
}

// Writes every file into a hidden directory beside `out` and renames it
// into place (an earlier backtest there is replaced only once the new one
// is complete), so an error leaves no partial output.
absl::Status WriteOutputs(
    const fs::path& out,
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  const fs::path parent = out.parent_path();
  fs::create_directories(parent, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", parent.string(), ": ", ec.message()));
  }
  const std::string suffix = absl::StrCat(".", ::getpid());
  const fs::path tmp =
      parent / absl::StrCat(".", out.filename().string(), ".tmp", suffix);
  const fs::path old =
      parent / absl::StrCat(".", out.filename().string(), ".old", suffix);
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", tmp.string(), ": ", ec.message()));
  }
  for (const auto& [name, text] : files) {
    absl::Status written = WriteFile(tmp / name, text);
    if (!written.ok()) {
      fs::remove_all(tmp, ec);
      return written;
    }
  }
  const bool replace = fs::exists(out, ec);
  if (replace) fs::rename(out, old, ec);
  if (!ec) fs::rename(tmp, out, ec);
  if (ec) {
    const std::string why = ec.message();
    std::error_code ignored;
    if (replace && !fs::exists(out, ignored)) fs::rename(old, out, ignored);
    fs::remove_all(tmp, ignored);
    return absl::InternalError(
        absl::StrCat("cannot move the results into ", out.string(), ": ", why));
  }
  if (replace) fs::remove_all(old, ec);
  return absl::OkStatus();
}

// ---- the command ------------------------------------------------------------

absl::Status Backtest(const ParsedCommandLine& parsed) {
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(Request req, ParseRequest(parsed));
  RETURN_IF_ERROR(CheckOutDir(req.out));
  const fs::path policy_dir(req.policy_dir);
  // An export of a trial with several refits holds refit-0/, refit-1/, …:
  // the lockbox judged capital split equally among them, and so does the
  // backtest.
  std::vector<fs::path> policy_dirs;
  {
    std::error_code ec;
    if (!fs::exists(policy_dir / "policy.pt", ec) &&
        fs::is_directory(policy_dir / absl::StrCat(kRefitDirPrefix, 0), ec)) {
      for (int r = 0;
           fs::is_directory(policy_dir / absl::StrCat(kRefitDirPrefix, r), ec);
           ++r) {
        policy_dirs.push_back(policy_dir / absl::StrCat(kRefitDirPrefix, r));
      }
    } else {
      policy_dirs.push_back(policy_dir);
    }
  }
  // An export says how many refits the lockbox judged (evaluation.json):
  // play exactly those.
  if (std::error_code ec;
      fs::is_regular_file(policy_dir / "evaluation.json", ec)) {
    absl::StatusOr<std::string> text =
        ReadFileToString((policy_dir / "evaluation.json").string());
    const Json meta =
        text.ok() ? Json::parse(*text, nullptr, false) : Json(nullptr);
    if (meta.is_object() && meta.contains("lockbox") &&
        meta["lockbox"].is_object() && meta["lockbox"].contains("refits") &&
        meta["lockbox"]["refits"].is_number_integer() &&
        meta["lockbox"]["refits"].get<int64_t>() !=
            static_cast<int64_t>(policy_dirs.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy directory ", policy_dir.string(),
          ": its evaluation.json "
          "says the lockbox judged ",
          meta["lockbox"]["refits"].get<int64_t>(), " refit(s), but ",
          policy_dirs.size(),
          " policy(ies) are there (refit-0/, refit-1/, … or policy.pt); "
          "export it again into an empty directory"));
    }
  }
  ASSIGN_OR_RETURN(learner::PolicyContract contract,
                   ReadPolicyContract(policy_dirs.front()));
  for (size_t r = 1; r < policy_dirs.size(); ++r) {
    ASSIGN_OR_RETURN(const learner::PolicyContract other,
                     ReadPolicyContract(policy_dirs[r]));
    if (other.ToJson() != contract.ToJson()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy directory ", policy_dirs[r].string(),
          " has another contract than ", policy_dirs.front().string(),
          " (the refits of one trial share theirs)"));
    }
  }

  absl::StatusOr<env::Dataset> read = env::ReadDataset(req.dataset_path);
  if (!read.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read dataset ",
                                                   req.dataset_path, ": ",
                                                   read.status().message()));
  }
  const env::Dataset& dataset = *read;
  // ReadDataset verified the content against the id in the header; reading
  // the header again is cheaper than hashing the content a second time.
  ASSIGN_OR_RETURN(const std::string dataset_id,
                   env::ReadDatasetId(req.dataset_path));
  std::vector<std::string> symbols;
  for (const env::AssetMeta& a : dataset.assets) symbols.push_back(a.symbol);
  std::string warning;
  RETURN_IF_ERROR(
      learner::CheckContractForMarket(contract, symbols, dataset.feature_names,
                                      dataset.interval_seconds, &warning));

  env::EnvOptions env_options = contract.env;
  if (req.slippage_bps) env_options.slippage_bps = *req.slippage_bps;
  if (req.max_volume_share) {
    env_options.max_volume_share = *req.max_volume_share;
  }
  RETURN_IF_ERROR(Annotate(env_options.Validate(), "execution costs"));
  std::vector<std::string> notes;
  ASSIGN_OR_RETURN(std::vector<env::Domain> domains,
                   SelectDomains(dataset, req, contract.lookback, &notes));
  ASSIGN_OR_RETURN(std::shared_ptr<const env::MarketData> market,
                   env::MarketData::FromDataset(dataset));
  if (env_options.max_volume_share > 0 && market->volume.empty()) {
    return absl::InvalidArgumentError(
        "--max-volume-share needs bar volumes, and the dataset has none");
  }

  learner::TorchScriptPolicy::SetCpuThreads(req.threads);
  ForwardWatchdog watchdog(req.forward_timeout_s);
  std::vector<std::unique_ptr<learner::TorchScriptPolicy>> policies;
  for (const fs::path& dir : policy_dirs) {
    const std::string file = (dir / "policy.pt").string();
    // Loading runs the policy once (its shape check).
    watchdog.Begin(absl::StrCat("loading ", file));
    absl::StatusOr<std::unique_ptr<learner::TorchScriptPolicy>> policy =
        learner::TorchScriptPolicy::Load(file, contract.obs_size,
                                         contract.action_size);
    watchdog.End();
    if (!policy.ok()) return policy.status();
    policies.push_back(*std::move(policy));
  }
  const double setup_seconds = Seconds(start);

  const auto play_start = Clock::now();
  std::vector<learner::EvaluationResult> results;
  std::vector<learner::EvaluationTrace> traces(policies.size());
  for (size_t r = 0; r < policies.size(); ++r) {
    absl::StatusOr<learner::EvaluationResult> played = learner::EvaluateActions(
        market, env_options, domains,
        watchdog.Wrap(policies[r]->AsActionFunction(),
                      (policy_dirs[r] / "policy.pt").string()),
        &traces[r]);
    RETURN_IF_ERROR(policies[r]->status());
    if (!played.ok()) {
      return Annotate(played.status(),
                      policies.size() == 1
                          ? std::string("playing the policy")
                          : absl::StrCat("playing refit ", r, "'s policy"));
    }
    results.push_back(*std::move(played));
  }
  learner::EvaluationResult result;
  learner::EvaluationTrace trace;
  RETURN_IF_ERROR(learner::CombineEqualCapital(
      results, traces, env::BarsPerYear(market->interval_seconds), &result,
      &trace));
  const double play_seconds = Seconds(play_start);

  const auto baseline_start = Clock::now();
  ASSIGN_OR_RETURN(coordinator::SegmentBaselines baselines,
                   coordinator::ComputeBaselines(
                       market, env_options, domains, req.random_seeds,
                       // split among as many random policies as refits,
                       // as the lockbox scores them
                       static_cast<int>(policies.size())));
  const double baseline_seconds = Seconds(baseline_start);

  const auto write_start = Clock::now();
  const double bpy = env::BarsPerYear(market->interval_seconds);
  const Row policy_row = PolicyRow(result, bpy);
  const Row bh_row = BuyAndHoldRow(baselines, *market, env_options, trace);
  const Row cash_row;  // never trades: every number is 0
  const RandomRow random_row = RandomPolicyRow(baselines);
  std::string tests_note;
  double vs_bh_difference = 0, vs_bh_se = 0;
  std::vector<Versus> versus =
      CompareWithBaselines(policy_row, result.log_returns, baselines, bpy,
                           &tests_note, &vs_bh_difference, &vs_bh_se);
  // The rules a quant tries first (coordinator/core/rule_baselines.h): each
  // rule's parameter chosen on the rows before the first tested bar (never
  // on the tested ones), played with the policy's costs as target weights.
  std::vector<coordinator::RuleBaseline> rules;
  {
    int64_t first_row = domains.front().begin;
    for (const env::Domain& d : domains)
      first_row = std::min(first_row, d.begin);
    env::EnvOptions rule_env = env_options;
    rule_env.action_model = env::ActionModel::kWeights;
    absl::StatusOr<std::vector<coordinator::RuleBaseline>> computed =
        coordinator::ComputeRuleBaselines(
            market, rule_env,
            coordinator::DomainsBefore(*market, first_row, contract.lookback),
            domains, market->interval_seconds, bpy);
    if (computed.ok()) {
      rules = *std::move(computed);
    } else {
      notes.push_back(
          absl::StrCat("no rule baselines: ", computed.status().message()));
    }
  }
  const std::vector<RuleRow> rule_rows = RuleRows(rules, bpy);
  if (const coordinator::RuleBaseline* best =
          coordinator::StrongestRule(rules)) {
    // The same paired test as against buy & hold, on the same bars.
    const coordinator::BaselineTests t = coordinator::TestAgainstBaselines(
        policy_row.sharpe, policy_row.sharpe_se, result.log_returns,
        best->test.log_returns, 0, 0, bpy);
    Versus v;
    v.name = absl::StrCat("the strongest rule, ", best->name);
    v.sharpe = best->test.sharpe;
    v.p_value = t.p_vs_buy_and_hold;
    v.test = "paired Sharpe difference (Ledoit-Wolf, HAC)";
    v.beats = v.p_value < coordinator::kEdgeSignificance;
    versus.push_back(std::move(v));
  }
  const std::string comparison = ComparisonLine(policy_row, versus, tests_note);

  const int64_t bars = static_cast<int64_t>(trace.value.size());
  const bool in_sample = dataset_id == contract.dataset_id;
  const int64_t first_time = dataset.timestamps[trace.row.front()];
  const int64_t last_time = dataset.timestamps[trace.row.back()];
  const Curves curves =
      ChainCurves(trace, dataset.timestamps, env_options.initial_capital);
  const std::string span =
      absl::StrCat(env::FormatTimestamp(first_time), " to ",
                   env::FormatTimestamp(last_time));

  Json meta;
  meta["policy_dir"] = fs::absolute(policy_dir).lexically_normal().string();
  meta["refits"] = static_cast<int64_t>(policies.size());
  meta["dataset"] = fs::absolute(req.dataset_path).lexically_normal().string();
  meta["dataset_id"] = dataset_id;
  meta["contract_dataset_id"] = contract.dataset_id;
  meta["training_dataset"] = in_sample;
  meta["from"] = env::FormatTimestamp(first_time);
  meta["to"] = env::FormatTimestamp(last_time);
  meta["bars"] = bars;
  meta["steps"] = result.steps;
  meta["interval_seconds"] = market->interval_seconds;
  Json doms = Json::array();
  for (const env::Domain& d : domains) {
    doms.push_back(Json{
        {"begin_row", d.begin},
        {"end_row", d.end},
        {"first_bar", env::FormatTimestamp(dataset.timestamps[d.begin])},
        {"last_bar", env::FormatTimestamp(dataset.timestamps[d.end - 1])}});
  }
  meta["domains"] = std::move(doms);
  meta["initial_capital"] = env_options.initial_capital;
  meta["buy_fee"] = env_options.buy_fee;
  meta["sell_fee"] = env_options.sell_fee;
  meta["slippage_bps"] = env_options.slippage_bps;
  meta["max_volume_share"] = env_options.max_volume_share;
  meta["random_seeds"] = req.random_seeds;
  if (!warning.empty()) meta["warning"] = warning;
  if (!notes.empty()) meta["notes"] = notes;
  Json random = Json::object();
  random["seeds"] = random_row.seeds;
  random["split"] = random_row.split;
  random["sharpe"] = SpreadJson(random_row.sharpe);
  random["sortino"] = SpreadJson(random_row.sortino);
  random["total_return"] = SpreadJson(random_row.total_return);
  random["max_drawdown"] = SpreadJson(random_row.max_drawdown);
  random["turnover"] = SpreadJson(random_row.turnover);
  random["fees"] = SpreadJson(random_row.fees);
  random["trades"] = SpreadJson(random_row.trades);
  random["exposure"] = SpreadJson(random_row.exposure);
  Json compare = Json::object();
  for (const Versus& v : versus) {
    compare[v.name] = Json{{"sharpe", NumberJson(v.sharpe)},
                           {"p_value", NumberJson(v.p_value)},
                           {"test", v.test},
                           {"beats", v.beats}};
  }
  compare["buy & hold"]["difference"] = NumberJson(vs_bh_difference);
  compare["buy & hold"]["difference_se"] = NumberJson(vs_bh_se);
  compare["significance"] = coordinator::kEdgeSignificance;
  if (!tests_note.empty()) compare["note"] = tests_note;
  compare["line"] = comparison;

  const std::string title =
      absl::StrCat("policy vs buy & hold and cash, ", span);
  std::vector<std::pair<std::string, std::string>> files = {
      {"equity.csv", EquityCsv(curves, trace)},
      {"positions.csv", PositionsCsv(trace, *market, dataset.timestamps)},
      {"equity.svg", EquitySvg(curves, title)},
      {"drawdown.svg", DrawdownSvg(curves, absl::StrCat("drawdown, ", span))}};
  const double render_seconds = Seconds(write_start);
  double forward_seconds = 0;
  int64_t forward_calls = 0;
  for (const auto& p : policies) {
    forward_seconds += p->forward_seconds();
    forward_calls += p->forward_calls();
  }
  Json timing = Json{{"setup_seconds", setup_seconds},
                     {"policy_seconds", play_seconds},
                     {"forward_seconds", forward_seconds},
                     {"forward_calls", forward_calls},
                     {"baselines_seconds", baseline_seconds},
                     {"outputs_seconds", render_seconds}};
  Json metrics;
  metrics["backtest"] = std::move(meta);
  metrics["policy"] = RowJson(policy_row);
  metrics["buy_and_hold"] = RowJson(bh_row);
  metrics["cash"] = RowJson(cash_row);
  metrics["random"] = std::move(random);
  Json rules_json = Json::array();
  for (size_t k = 0; k < rules.size(); ++k) {
    Json r = RowJson(rule_rows[k].row);
    r["rule"] = rules[k].name;
    r["parameter"] = rules[k].parameter;
    r["selection_sharpe"] = NumberJson(rules[k].selection_sharpe);
    rules_json.push_back(std::move(r));
  }
  metrics["rules"] = std::move(rules_json);
  metrics["comparison"] = std::move(compare);
  metrics["timing"] = std::move(timing);
  files.emplace_back(
      kMetricsFile,
      metrics.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  RETURN_IF_ERROR(WriteOutputs(req.out, files));

  // Printed only now, so a failed run prints its one error line alone.
  if (!warning.empty()) {
    std::fprintf(stderr, "backtest: warning: %s\n", warning.c_str());
  }
  for (const std::string& note : notes) {
    std::fprintf(stderr, "backtest: note: %s\n", note.c_str());
  }
  std::printf(
      "backtest: %s on %s: %d assets, %lld bars (%zu domain%s) %s, interval "
      "%s\n",
      req.policy_dir.c_str(), req.dataset_path.c_str(), market->num_assets,
      static_cast<long long>(bars), domains.size(),
      domains.size() == 1 ? "" : "s", span.c_str(),
      env::FormatInterval(market->interval_seconds).c_str());
  if (policies.size() > 1) {
    std::printf(
        "policy: %zu refits, capital split equally among them at each "
        "domain's first bar (as the lockbox scored them)\n",
        policies.size());
  }
  const std::string cap =
      env_options.max_volume_share > 0
          ? absl::StrFormat("%.4g%% of the bar's volume",
                            100 * env_options.max_volume_share)
          : std::string("off");
  std::printf(
      "costs: buy fee %.4g%%, sell fee %.4g%%, slippage %.4g bps, volume cap "
      "%s\n",
      100 * env_options.buy_fee, 100 * env_options.sell_fee,
      env_options.slippage_bps, cap.c_str());
  if (in_sample) {
    std::printf(
        "note: this is the dataset the policy was trained on (same "
        "dataset_id): bars it trained or was selected on score in-sample; "
        "use --from/--to for bars it never saw\n");
  }
  std::fputs(
      RenderTable(policy_row, bh_row, cash_row, random_row, rule_rows).c_str(),
      stdout);
  std::printf("%s\n", comparison.c_str());
  std::printf(
      "wrote %s/{equity.csv,positions.csv,metrics.json,equity.svg,"
      "drawdown.svg}\n",
      req.out.string().c_str());
  std::printf(
      "time: %.2f s = setup %.2f s + policy %.2f s (forward passes %.2f s, "
      "%lld calls) + baselines %.2f s (%d random seeds) + outputs %.2f s\n",
      Seconds(start), setup_seconds, play_seconds, forward_seconds,
      static_cast<long long>(forward_calls), baseline_seconds, req.random_seeds,
      Seconds(write_start));
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
