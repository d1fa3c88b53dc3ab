#include "ops/backtest.h"

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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
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

namespace ristretto::ops {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using Request = BacktestRequest;
using Row = BacktestRow;
using Spread = BacktestSpread;
using RandomRow = BacktestRandomRow;
using RuleRow = BacktestRuleRow;

// Written last into every output directory; its "backtest" key marks a
// directory the backtest may replace on a later run.
constexpr char kMetricsFile[] = "metrics.json";
// Charts draw at most this many vertices per series (min and max of each
// bucket, so peaks and drawdowns survive); the CSVs keep every bar.
constexpr size_t kMaxChartPoints = 4000;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// ---- inputs ----------------------------------------------------------------

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

Spread MeanStd(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  return s;
}

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

Json RandomJson(const RandomRow& r) {
  Json random = Json::object();
  random["seeds"] = r.seeds;
  random["split"] = r.split;
  random["sharpe"] = SpreadJson(r.sharpe);
  random["sortino"] = SpreadJson(r.sortino);
  random["total_return"] = SpreadJson(r.total_return);
  random["max_drawdown"] = SpreadJson(r.max_drawdown);
  random["turnover"] = SpreadJson(r.turnover);
  random["fees"] = SpreadJson(r.fees);
  random["trades"] = SpreadJson(r.trades);
  random["exposure"] = SpreadJson(r.exposure);
  return random;
}

// Each rule's row with its name, parameter and selection Sharpe.
Json RulesJson(const std::vector<coordinator::RuleBaseline>& rules,
               const std::vector<RuleRow>& rows) {
  Json out = Json::array();
  for (size_t k = 0; k < rules.size(); ++k) {
    Json r = RowJson(rows[k].row);
    r["rule"] = rules[k].name;
    r["parameter"] = rules[k].parameter;
    r["selection_sharpe"] = NumberJson(rules[k].selection_sharpe);
    out.push_back(std::move(r));
  }
  return out;
}

// The one-sided tests against every baseline, buy & hold's paired
// difference, and the line the CLI prints.
Json CompareJson(const std::vector<Versus>& versus, double vs_bh_difference,
                 double vs_bh_se, const std::string& tests_note,
                 const std::string& comparison) {
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
  return compare;
}

// Each played domain's rows and first and last bar times.
Json DomainsJson(const std::vector<env::Domain>& domains,
                 const std::vector<int64_t>& timestamps) {
  Json doms = Json::array();
  for (const env::Domain& d : domains) {
    doms.push_back(
        Json{{"begin_row", d.begin},
             {"end_row", d.end},
             {"first_bar", env::FormatTimestamp(timestamps[d.begin])},
             {"last_bar", env::FormatTimestamp(timestamps[d.end - 1])}});
  }
  return doms;
}

// metrics.json's "backtest" object: what was played (the first and last
// bar's times in `span`), on what, and with which costs, in the file's key
// order.
Json BacktestMeta(const Request& req, const BacktestResult& done,
                  const std::string& dataset_id,
                  const std::string& contract_dataset_id,
                  double initial_capital, std::pair<int64_t, int64_t> span,
                  int64_t steps, Json domains) {
  Json meta;
  meta["policy_dir"] =
      fs::absolute(fs::path(req.policy_dir)).lexically_normal().string();
  meta["refits"] = static_cast<int64_t>(done.refits);
  meta["dataset"] = fs::absolute(req.dataset_path).lexically_normal().string();
  meta["dataset_id"] = dataset_id;
  meta["contract_dataset_id"] = contract_dataset_id;
  meta["training_dataset"] = done.in_sample;
  meta["from"] = env::FormatTimestamp(span.first);
  meta["to"] = env::FormatTimestamp(span.second);
  meta["bars"] = done.bars;
  meta["steps"] = steps;
  meta["interval_seconds"] = done.interval_seconds;
  meta["domains"] = std::move(domains);
  meta["initial_capital"] = initial_capital;
  meta["buy_fee"] = done.buy_fee;
  meta["sell_fee"] = done.sell_fee;
  meta["slippage_bps"] = done.slippage_bps;
  meta["max_volume_share"] = done.max_volume_share;
  meta["random_seeds"] = req.random_seeds;
  if (!done.warning.empty()) meta["warning"] = done.warning;
  if (!done.notes.empty()) meta["notes"] = done.notes;
  return meta;
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

// The policies an export holds: refit-0/, refit-1/, … (the lockbox judged
// capital split equally among them, and so does the backtest), or the
// directory itself; as many as its evaluation.json says the lockbox judged.
absl::StatusOr<std::vector<fs::path>> PolicyDirsOf(const fs::path& policy_dir) {
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
  return policy_dirs;
}

// The rules a quant tries first (coordinator/core/rule_baselines.h), each
// rule's parameter chosen on the rows before the first tested bar (never on
// the tested ones), played with the policy's costs as target weights; the
// strongest is tested against the policy as buy & hold is (appended to
// `versus`). A rule set that cannot be computed is a note, not an error.
std::vector<coordinator::RuleBaseline> RulesBeside(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    int lookback, const Row& policy_row,
    const std::vector<double>& policy_log_returns, double bpy,
    std::vector<Versus>* versus, std::vector<std::string>* notes) {
  std::vector<coordinator::RuleBaseline> rules;
  int64_t first_row = domains.front().begin;
  for (const env::Domain& d : domains) first_row = std::min(first_row, d.begin);
  env::EnvOptions rule_env = env_options;
  rule_env.action_model = env::ActionModel::kWeights;
  absl::StatusOr<std::vector<coordinator::RuleBaseline>> computed =
      coordinator::ComputeRuleBaselines(
          market, rule_env,
          coordinator::DomainsBefore(*market, first_row, lookback), domains,
          market->interval_seconds, bpy);
  if (computed.ok()) {
    rules = *std::move(computed);
  } else {
    notes->push_back(
        absl::StrCat("no rule baselines: ", computed.status().message()));
  }
  if (const coordinator::RuleBaseline* best =
          coordinator::StrongestRule(rules)) {
    // The same paired test as against buy & hold, on the same bars.
    const coordinator::BaselineTests t = coordinator::TestAgainstBaselines(
        policy_row.sharpe, policy_row.sharpe_se, policy_log_returns,
        best->test.log_returns, 0, 0, bpy);
    Versus v;
    v.name = absl::StrCat("the strongest rule, ", best->name);
    v.sharpe = best->test.sharpe;
    v.p_value = t.p_vs_buy_and_hold;
    v.test = "paired Sharpe difference (Ledoit-Wolf, HAC)";
    v.beats = v.p_value < coordinator::kEdgeSignificance;
    versus->push_back(std::move(v));
  }
  return rules;
}

// The contract every policy of `dirs` shares (the refits of one trial do).
absl::StatusOr<learner::PolicyContract> ContractOfRefits(
    const std::vector<fs::path>& policy_dirs) {
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
  return contract;
}

// Every policy.pt of `policy_dirs`, loaded under the watchdog (loading
// runs the policy once: its shape check).
absl::StatusOr<std::vector<std::unique_ptr<learner::TorchScriptPolicy>>>
LoadPolicies(const std::vector<fs::path>& policy_dirs,
             const learner::PolicyContract& contract,
             ForwardWatchdog* watchdog) {
  std::vector<std::unique_ptr<learner::TorchScriptPolicy>> policies;
  for (const fs::path& dir : policy_dirs) {
    const std::string file = (dir / "policy.pt").string();
    watchdog->Begin(absl::StrCat("loading ", file));
    absl::StatusOr<std::unique_ptr<learner::TorchScriptPolicy>> policy =
        learner::TorchScriptPolicy::Load(file, contract.obs_size,
                                         contract.action_size);
    watchdog->End();
    if (!policy.ok()) return policy.status();
    policies.push_back(*std::move(policy));
  }
  return policies;
}

// Plays every policy on `domains` (each from the initial capital, under
// the watchdog) and combines them as capital split equally among them.
absl::Status PlayPolicies(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    const std::vector<std::unique_ptr<learner::TorchScriptPolicy>>& policies,
    const std::vector<fs::path>& policy_dirs, ForwardWatchdog* watchdog,
    learner::EvaluationResult* result, learner::EvaluationTrace* trace) {
  std::vector<learner::EvaluationResult> results;
  std::vector<learner::EvaluationTrace> traces(policies.size());
  for (size_t r = 0; r < policies.size(); ++r) {
    absl::StatusOr<learner::EvaluationResult> played = learner::EvaluateActions(
        market, env_options, domains,
        watchdog->Wrap(policies[r]->AsActionFunction(),
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
  return learner::CombineEqualCapital(
      results, traces, env::BarsPerYear(market->interval_seconds), result,
      trace);
}

// ---- the backtest ---------------------------------------------------------

}  // namespace

absl::StatusOr<BacktestResult> RunBacktest(const BacktestRequest& req) {
  const auto start = Clock::now();
  BacktestResult done;
  RETURN_IF_ERROR(CheckOutDir(req.out));
  const fs::path policy_dir(req.policy_dir);
  ASSIGN_OR_RETURN(const std::vector<fs::path> policy_dirs,
                   PolicyDirsOf(policy_dir));
  ASSIGN_OR_RETURN(const learner::PolicyContract contract,
                   ContractOfRefits(policy_dirs));

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
  RETURN_IF_ERROR(
      learner::CheckContractForMarket(contract, symbols, dataset.feature_names,
                                      dataset.interval_seconds, &done.warning));

  env::EnvOptions env_options = contract.env;
  if (req.slippage_bps) env_options.slippage_bps = *req.slippage_bps;
  if (req.max_volume_share) {
    env_options.max_volume_share = *req.max_volume_share;
  }
  RETURN_IF_ERROR(Annotate(env_options.Validate(), "execution costs"));
  ASSIGN_OR_RETURN(std::vector<env::Domain> domains,
                   SelectDomains(dataset, req, contract.lookback, &done.notes));
  ASSIGN_OR_RETURN(std::shared_ptr<const env::MarketData> market,
                   env::MarketData::FromDataset(dataset));
  if (env_options.max_volume_share > 0 && market->volume.empty()) {
    return absl::InvalidArgumentError(
        "--max-volume-share needs bar volumes, and the dataset has none");
  }

  learner::TorchScriptPolicy::SetCpuThreads(req.threads);
  ForwardWatchdog watchdog(req.forward_timeout_s);
  ASSIGN_OR_RETURN(
      const std::vector<std::unique_ptr<learner::TorchScriptPolicy>> policies,
      LoadPolicies(policy_dirs, contract, &watchdog));
  const double setup_seconds = Seconds(start);

  const auto play_start = Clock::now();
  learner::EvaluationResult result;
  learner::EvaluationTrace trace;
  RETURN_IF_ERROR(PlayPolicies(market, env_options, domains, policies,
                               policy_dirs, &watchdog, &result, &trace));
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
  done.policy = PolicyRow(result, bpy);
  done.buy_and_hold = BuyAndHoldRow(baselines, *market, env_options, trace);
  // done.cash: never trades, every number is 0
  done.random = RandomPolicyRow(baselines);
  std::string tests_note;
  double vs_bh_difference = 0, vs_bh_se = 0;
  std::vector<Versus> versus =
      CompareWithBaselines(done.policy, result.log_returns, baselines, bpy,
                           &tests_note, &vs_bh_difference, &vs_bh_se);
  const std::vector<coordinator::RuleBaseline> rules =
      RulesBeside(market, env_options, domains, contract.lookback, done.policy,
                  result.log_returns, bpy, &versus, &done.notes);
  done.rules = RuleRows(rules, bpy);
  done.comparison = ComparisonLine(done.policy, versus, tests_note);

  done.bars = static_cast<int64_t>(trace.value.size());
  done.in_sample = dataset_id == contract.dataset_id;
  const int64_t first_time = dataset.timestamps[trace.row.front()];
  const int64_t last_time = dataset.timestamps[trace.row.back()];
  const Curves curves =
      ChainCurves(trace, dataset.timestamps, env_options.initial_capital);
  done.span = absl::StrCat(env::FormatTimestamp(first_time), " to ",
                           env::FormatTimestamp(last_time));

  done.num_assets = market->num_assets;
  done.domains = domains.size();
  done.interval_seconds = market->interval_seconds;
  done.refits = policies.size();
  done.buy_fee = env_options.buy_fee;
  done.sell_fee = env_options.sell_fee;
  done.slippage_bps = env_options.slippage_bps;
  done.max_volume_share = env_options.max_volume_share;
  Json meta =
      BacktestMeta(req, done, dataset_id, contract.dataset_id,
                   env_options.initial_capital, {first_time, last_time},
                   result.steps, DomainsJson(domains, dataset.timestamps));

  const std::string title =
      absl::StrCat("policy vs buy & hold and cash, ", done.span);
  std::vector<std::pair<std::string, std::string>> files = {
      {"equity.csv", EquityCsv(curves, trace)},
      {"positions.csv", PositionsCsv(trace, *market, dataset.timestamps)},
      {"equity.svg", EquitySvg(curves, title)},
      {"drawdown.svg",
       DrawdownSvg(curves, absl::StrCat("drawdown, ", done.span))}};
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
  metrics["policy"] = RowJson(done.policy);
  metrics["buy_and_hold"] = RowJson(done.buy_and_hold);
  metrics["cash"] = RowJson(done.cash);
  metrics["random"] = RandomJson(done.random);
  metrics["rules"] = RulesJson(rules, done.rules);
  metrics["comparison"] = CompareJson(versus, vs_bh_difference, vs_bh_se,
                                      tests_note, done.comparison);
  metrics["timing"] = std::move(timing);
  files.emplace_back(
      kMetricsFile,
      metrics.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
  RETURN_IF_ERROR(WriteOutputs(req.out, files));

  done.timing.setup = setup_seconds;
  done.timing.policy = play_seconds;
  done.timing.forward = forward_seconds;
  done.timing.forward_calls = forward_calls;
  done.timing.baselines = baseline_seconds;
  done.timing.outputs = Seconds(write_start);
  done.timing.total = Seconds(start);
  return done;
}

}  // namespace ristretto::ops
