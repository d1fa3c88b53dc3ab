#include "report/study_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/svg_chart.h"

namespace ristretto::report {

const std::string* ReportTrial::Param(const std::string& name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return &value;
  }
  return nullptr;
}

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// The equity chart draws at most this many vertices per line: a lockbox of
// 50,000 bars would otherwise make a multi-megabyte page for no visible gain.
constexpr size_t kMaxCurvePoints = 2000;

// Colours shared by every chart, so a reader learns them once.
constexpr char kPolicyColor[] = "#4e79a7";
constexpr char kBuyHoldColor[] = "#f28e2b";
constexpr char kCashColor[] = "#7f7f7f";
constexpr char kPrunedColor[] = "#e15759";
constexpr char kBestColor[] = "#59a14f";
// Refits' own accounts: hues that no other line of the lockbox charts uses
// (buy & hold is the orange; the policy the blue).
constexpr const char* kRefitColors[] = {"#76b7b2", "#b07aa1", "#9c755f",
                                        "#ff9da7", "#edc948"};

bool Finite(double v) { return std::isfinite(v); }

std::string Fmt(double v, int decimals) {
  if (!Finite(v)) return "n/a";
  return absl::StrFormat("%.*f", decimals, v);
}

std::string Pct(double fraction) { return Fmt(100 * fraction, 2) + " %"; }

// Every Sharpe ratio carries its standard error.
std::string SharpeSe(double sharpe, double se) {
  return absl::StrCat(Fmt(sharpe, 2), " \xC2\xB1 ", Fmt(se, 2));
}

std::string Esc(const std::string& s) { return HtmlEscape(s); }

// A parameter value as a number (NaN when it is not one).
double ParseNumber(const std::string& text) {
  if (text.empty()) return kNan;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == nullptr || *end != '\0') return kNan;
  return v;
}

// Average ranks (ties share the mean rank), 0-based.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = mean;
    i = j + 1;
  }
  return rank;
}

// Indices that keep a long curve's shape: the first and last point and,
// in each of `max_points / 2` equal buckets, the lowest and the highest
// value of any of `curves` (so drawdowns and peaks survive).
std::vector<size_t> DecimationIndices(
    size_t n, const std::vector<const std::vector<double>*>& curves,
    size_t max_points) {
  std::vector<size_t> keep;
  if (n <= max_points) {
    keep.resize(n);
    std::iota(keep.begin(), keep.end(), 0);
    return keep;
  }
  std::set<size_t> chosen = {0, n - 1};
  const size_t buckets = std::max<size_t>(1, max_points / 2 - 1);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t begin = b * n / buckets;
    const size_t end = std::max(begin + 1, (b + 1) * n / buckets);
    for (const std::vector<double>* c : curves) {
      if (c->size() < end) continue;
      size_t lo = begin, hi = begin;
      for (size_t i = begin; i < end; ++i) {
        if ((*c)[i] < (*c)[lo]) lo = i;
        if ((*c)[i] > (*c)[hi]) hi = i;
      }
      chosen.insert(lo);
      chosen.insert(hi);
    }
  }
  keep.assign(chosen.begin(), chosen.end());
  return keep;
}

// exp(cumulative log return), starting at 1 before the first bar.
std::vector<double> Equity(const std::vector<double>& log_returns) {
  std::vector<double> out;
  out.reserve(log_returns.size() + 1);
  double sum = 0;
  out.push_back(1.0);
  for (double r : log_returns) {
    if (Finite(r)) sum += r;
    out.push_back(std::exp(sum));
  }
  return out;
}

// Fraction below the running peak (0 or negative).
std::vector<double> Drawdown(const std::vector<double>& equity) {
  std::vector<double> out;
  out.reserve(equity.size());
  double peak = -std::numeric_limits<double>::infinity();
  for (double e : equity) {
    peak = std::max(peak, e);
    out.push_back(peak > 0 ? e / peak - 1 : 0);
  }
  return out;
}

// The score a pruned trial last reported (its last intermediate value).
std::optional<double> LastReported(const ReportTrial& t) {
  if (t.intermediate.empty()) return std::nullopt;
  return t.intermediate.back().second;
}

std::string TrialTooltip(const ReportTrial& t, const std::string& what,
                         double value) {
  std::string text = absl::StrCat("trial ", t.number, " (", t.state,
                                  "): ", what, " ", Fmt(value, 4));
  if (t.cv_sharpe.has_value()) {
    absl::StrAppend(&text, "; CV Sharpe ",
                    SharpeSe(*t.cv_sharpe, t.cv_sharpe_se.value_or(kNan)));
  }
  for (const auto& [name, value_text] : t.params) {
    absl::StrAppend(&text, "\n", name, " = ", value_text);
  }
  return text;
}

// ---- sections --------------------------------------------------------------

std::string Section(const std::string& id, const std::string& title,
                    const std::string& body) {
  return absl::StrCat("<section id=\"", id, "\"><h2>", Esc(title), "</h2>\n",
                      body, "</section>\n");
}

std::string HistorySection(const StudyReportData& d) {
  Series complete, pruned, best;
  complete.name = "complete";
  complete.style = SeriesStyle::kPoints;
  complete.color = kPolicyColor;
  pruned.name = "pruned (the value the pruner judged)";
  pruned.style = SeriesStyle::kPoints;
  pruned.hollow = true;
  pruned.color = kPrunedColor;
  best.name = "best so far";
  best.style = SeriesStyle::kLine;
  best.color = kBestColor;
  double best_so_far = -std::numeric_limits<double>::infinity();
  std::vector<const ReportTrial*> failed, running;
  int pruned_without_value = 0;
  for (const ReportTrial& t : d.trials) {
    const auto x = static_cast<double>(t.number);
    if (t.state == "complete" && t.score.has_value() && Finite(*t.score)) {
      complete.x.push_back(x);
      complete.y.push_back(*t.score);
      complete.labels.push_back(TrialTooltip(t, "score", *t.score));
      if (*t.score > best_so_far) {
        // A step: the previous best holds until this trial.
        if (!best.x.empty()) {
          best.x.push_back(x);
          best.y.push_back(best_so_far);
        }
        best_so_far = *t.score;
      }
      best.x.push_back(x);
      best.y.push_back(best_so_far);
    } else if (t.state == "pruned") {
      // What the pruner compared with the other trials: the mean over the
      // trial's folds at its last step, not the one fold that reported
      // last (data stored without it: the last reported mean).
      std::optional<double> judged = t.judged_value;
      int64_t step = t.judged_step;
      if (!judged.has_value()) {
        judged = LastReported(t);
        if (judged.has_value()) step = t.intermediate.back().first;
      }
      if (judged.has_value() && Finite(*judged)) {
        pruned.x.push_back(x);
        pruned.y.push_back(*judged);
        pruned.labels.push_back(TrialTooltip(
            t,
            absl::StrCat("pruned at ", step,
                         " env steps; judged by the mean over its folds of "
                         "each one's latest value"),
            *judged));
      } else {
        ++pruned_without_value;
      }
    } else if (t.state == "failed") {
      failed.push_back(&t);
    } else {
      running.push_back(&t);
    }
  }
  ChartOptions o;
  o.id = "score-history";
  o.title = "Optimisation history";
  o.x_label = "trial";
  o.x_integer = true;
  o.y_label = absl::StrCat("score (", d.objective, ")");
  o.width = 1080;
  o.height = 360;
  std::string body = absl::StrCat(
      "<p class=\"lead\">The study objective (", Esc(d.objective),
      ") of every complete trial, the best score so far, and pruned trials "
      "(hollow) at the value the pruner judged them by when it stopped "
      "them: at the trial's last step, the mean over its folds of each "
      "fold's latest validation score (a partial-training value, not the "
      "score of a complete trial). Hover a point for its parameters.</p>\n",
      RenderSvgChart(o, {complete, pruned, best}));
  absl::StrAppend(
      &body, "<p class=\"small\">", complete.x.size(), " complete, ",
      pruned.x.size() + pruned_without_value, " pruned",
      pruned_without_value > 0 ? absl::StrCat(" (", pruned_without_value,
                                              " before reporting a value, "
                                              "not drawn)")
                               : std::string(),
      ", ", failed.size(), " failed, ", running.size(),
      " running or unfinished.</p>\n");
  if (!failed.empty()) {
    absl::StrAppend(&body, "<p><b>Failed trials</b> (not drawn):</p><ul>");
    for (const ReportTrial* t : failed) {
      absl::StrAppend(
          &body, "<li>trial ", t->number, ": ",
          Esc(t->fail_reason.empty() ? "no reason recorded" : t->fail_reason),
          "</li>");
    }
    absl::StrAppend(&body, "</ul>\n");
  }
  return Section("history", "Optimisation history", body);
}

std::string ImportanceSection(const std::vector<ParamImportance>& imp) {
  std::string body =
      "<p class=\"lead\">How much of the score's spread across complete "
      "trials each parameter explains on its own: the <b>bias-corrected "
      "correlation ratio</b> \xCE\xB5\xC2\xB2 = 1 \xE2\x88\x92 (1 "
      "\xE2\x88\x92 \xCE\xB7\xC2\xB2)(n \xE2\x88\x92 1)/(n \xE2\x88\x92 k). "
      "\xCE\xB7\xC2\xB2 is the share of the score's variance between k "
      "groups of trials (numeric parameters: k equal-count bins by rank, k = "
      "\xE2\x8C\x8A\xE2\x88\x9An\xE2\x8C\x8B within [2, 10]; categorical: one "
      "group per value); the correction subtracts what k groups explain of "
      "pure noise, so a parameter the score ignores sits near 0. Limits: one "
      "parameter at a time (interactions are invisible), few trials make it "
      "noisy, and a sampler that concentrates on good regions (TPE) narrows "
      "the ranges it can compare.</p>\n";
  if (imp.empty()) {
    absl::StrAppend(&body,
                    "<p class=\"empty\">The study searched no "
                    "parameter.</p>");
    return Section("importance", "Parameter importance", body);
  }
  Series bars;
  bars.name = "\xCE\xB5\xC2\xB2 (bias-corrected)";
  bars.style = SeriesStyle::kBars;
  bars.color = kPolicyColor;
  ChartOptions o;
  o.id = "param-importance";
  o.title = "Parameter importance";
  o.y_label = "\xCE\xB5\xC2\xB2";
  o.width = 1080;
  o.height = 300;
  int drawn = 0;
  for (size_t i = 0; i < imp.size(); ++i) {
    o.x_categories.push_back(imp[i].name);
    bars.x.push_back(static_cast<double>(i));
    bars.y.push_back(imp[i].importance);
    bars.labels.push_back(absl::StrFormat(
        "%s: \xCE\xB5\xC2\xB2 %s (raw \xCE\xB7\xC2\xB2 %s, noise level %s; %d "
        "trials in %d groups)",
        imp[i].name, Fmt(imp[i].importance, 3), Fmt(imp[i].eta_squared, 3),
        Fmt(imp[i].noise_level, 3), imp[i].trials, imp[i].bins));
    if (Finite(imp[i].importance)) ++drawn;
  }
  int64_t most_trials = 0;
  for (const ParamImportance& p : imp) {
    most_trials = std::max(most_trials, p.trials);
  }
  if (drawn > 0 && most_trials < 20) {
    absl::StrAppend(&body, "<p class=\"small\"><b>Only ", most_trials,
                    " complete trials:</b> with so few, a parameter can "
                    "look important by chance; read these numbers as a rough "
                    "hint.</p>");
  }
  if (drawn > 0) {
    absl::StrAppend(&body, RenderSvgChart(o, {bars}));
  } else {
    absl::StrAppend(&body,
                    "<p class=\"empty\">Not enough complete trials to "
                    "estimate importance (at least 4, with varied values, "
                    "are needed).</p>");
  }
  absl::StrAppend(&body,
                  "<table class=\"data\"><tr><th>parameter</th><th>"
                  "\xCE\xB5\xC2\xB2</th><th>raw \xCE\xB7\xC2\xB2</th><th>"
                  "noise level (k\xE2\x88\x92"
                  "1)/(n\xE2\x88\x92"
                  "1)</th><th>trials n</th><th>groups k</th></tr>");
  for (const ParamImportance& p : imp) {
    absl::StrAppend(&body, "<tr><td>", Esc(p.name), "</td><td>",
                    Fmt(p.importance, 3), "</td><td>", Fmt(p.eta_squared, 3),
                    "</td><td>", Fmt(p.noise_level, 3), "</td><td>", p.trials,
                    "</td><td>", p.bins, "</td></tr>");
  }
  absl::StrAppend(&body, "</table>\n");
  return Section("importance", "Parameter importance", body);
}

std::string SliceSection(const StudyReportData& d) {
  std::string body = absl::StrCat(
      "<p class=\"lead\">The score of every complete trial against each "
      "searched parameter (log-scale parameters on a log axis; the best "
      "trial in green).</p>\n<div class=\"grid\">");
  int index = 0;
  for (const ReportParam& p : d.params) {
    Series pts, best;
    pts.name = "";
    pts.style = SeriesStyle::kPoints;
    pts.color = kPolicyColor;
    best.name = "best trial";
    best.style = SeriesStyle::kPoints;
    best.color = kBestColor;
    ChartOptions o;
    o.id = absl::StrCat("slice-", index++);
    o.title = absl::StrCat("score vs ", p.name);
    o.x_label = p.name + (p.log ? " (log scale)" : "");
    o.y_label = "score";
    o.width = 520;
    o.height = 300;
    o.x_log = p.log && !p.categorical;
    o.x_categories = p.categorical ? p.choices : std::vector<std::string>{};
    for (const ReportTrial& t : d.trials) {
      if (t.state != "complete" || !t.score.has_value()) continue;
      const std::string* v = t.Param(p.name);
      if (v == nullptr) continue;
      double x = kNan;
      if (p.categorical) {
        auto it = std::find(p.choices.begin(), p.choices.end(), *v);
        if (it == p.choices.end()) continue;
        x = static_cast<double>(it - p.choices.begin());
      } else {
        x = ParseNumber(*v);
      }
      const bool is_best =
          d.best_trial.has_value() && *d.best_trial == t.number;
      Series& s = is_best ? best : pts;
      s.x.push_back(x);
      s.y.push_back(*t.score);
      s.labels.push_back(TrialTooltip(t, "score", *t.score));
    }
    absl::StrAppend(&body, "<div>", RenderSvgChart(o, {pts, best}));
    if (!p.condition.empty()) {
      absl::StrAppend(&body, "<p class=\"small\">", Esc(p.name), " is active ",
                      Esc(p.condition), "</p>");
    }
    absl::StrAppend(&body, "</div>");
  }
  if (d.params.empty()) {
    absl::StrAppend(&body,
                    "<p class=\"empty\">The study searched no "
                    "parameter.</p>");
  }
  absl::StrAppend(&body, "</div>\n");
  return Section("slices", "Score against each parameter", body);
}

std::string FoldSection(const StudyReportData& d) {
  std::string body = absl::StrCat(
      "<p class=\"lead\">The best trial (",
      d.best_trial.has_value() ? absl::StrCat(*d.best_trial) : std::string("-"),
      ") on each CV fold's validation bars: annualised Sharpe with \xC2\xB1"
      "1 standard error (Mertens: non-normal iid returns), next to "
      "equal-weight buy & hold on the same bars. Cash scores 0.</p>\n");
  if (d.best_folds.empty()) {
    absl::StrAppend(&body,
                    "<p class=\"empty\">No fold results recorded for "
                    "the best trial.</p>");
    return Section("folds", "Per-fold Sharpe of the best trial", body);
  }
  Series policy, bh;
  policy.name = "best trial \xC2\xB1 1 SE";
  policy.style = SeriesStyle::kBars;
  policy.color = kPolicyColor;
  bh.name = "buy & hold \xC2\xB1 1 SE";
  bh.style = SeriesStyle::kBars;
  bh.color = kBuyHoldColor;
  ChartOptions o;
  o.id = "fold-sharpe";
  o.title = "Per-fold Sharpe (validation)";
  o.y_label = "Sharpe (annualised)";
  o.width = 1080;
  o.height = 320;
  std::string rows;
  for (size_t i = 0; i < d.best_folds.size(); ++i) {
    const ReportFold& f = d.best_folds[i];
    const std::string name = absl::StrCat("fold ", f.fold);
    o.x_categories.push_back(name);
    const auto x = static_cast<double>(i);
    policy.x.push_back(x);
    policy.y.push_back(f.sharpe);
    policy.y_error.push_back(f.sharpe_se);
    policy.labels.push_back(absl::StrCat(name, ": Sharpe ",
                                         SharpeSe(f.sharpe, f.sharpe_se),
                                         " over ", f.bars, " bars"));
    bh.x.push_back(x);
    bh.y.push_back(f.bh_sharpe);
    bh.y_error.push_back(f.bh_sharpe_se);
    bh.labels.push_back(absl::StrCat(name, ": buy & hold Sharpe ",
                                     SharpeSe(f.bh_sharpe, f.bh_sharpe_se)));
    absl::StrAppend(&rows, "<tr><td>", f.fold, "</td><td>", f.bars, "</td><td>",
                    SharpeSe(f.sharpe, f.sharpe_se), "</td><td>",
                    SharpeSe(f.bh_sharpe, f.bh_sharpe_se),
                    "</td><td>0.00 "
                    "\xC2\xB1 0.00</td><td>",
                    Pct(f.total_return), "</td><td>", Pct(f.bh_return),
                    "</td><td>", Pct(f.max_drawdown), "</td><td>",
                    Fmt(f.score, 4), "</td></tr>");
  }
  absl::StrAppend(&body, RenderSvgChart(o, {policy, bh}),
                  "<table class=\"data\"><tr><th>fold</th><th>bars</th><th>"
                  "Sharpe \xC2\xB1 SE</th><th>buy &amp; hold Sharpe \xC2\xB1 "
                  "SE</th><th>cash Sharpe</th><th>return</th><th>buy &amp; "
                  "hold return</th><th>max drawdown</th><th>fold score</th>"
                  "</tr>",
                  rows, "</table>\n");
  return Section("folds", "Per-fold Sharpe of the best trial", body);
}

std::string LockboxSection(const StudyReportData& d) {
  std::string body =
      "<p class=\"lead\">The best trial's final run (trained on every row "
      "before the lockbox) on the lockbox: bars the search never saw and "
      "never ranked on. Equity starts at 1; cash stays at 1.</p>\n";
  if (!d.lockbox.has_value()) {
    absl::StrAppend(&body,
                    "<p class=\"empty\">No lockbox result for the best trial "
                    "yet (its final run has not finished, or failed).</p>");
    return Section("lockbox", "Lockbox: equity and drawdown", body);
  }
  const ReportLockbox& l = *d.lockbox;
  const std::vector<double> equity = Equity(l.policy_log_returns);
  const bool has_bh = l.bh_log_returns.size() == l.policy_log_returns.size() &&
                      !l.bh_log_returns.empty();
  const std::vector<double> bh_equity =
      has_bh ? Equity(l.bh_log_returns) : std::vector<double>{};
  const std::vector<double> dd = Drawdown(equity);
  const std::vector<double> bh_dd =
      has_bh ? Drawdown(bh_equity) : std::vector<double>{};
  // x: the bar's end time when known (the first point is the start of the
  // first bar: one interval earlier), else the bar index.
  const bool timed = l.timestamps.size() == l.policy_log_returns.size() &&
                     !l.timestamps.empty();
  std::vector<double> x(equity.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (!timed) {
      x[i] = static_cast<double>(i);
    } else if (i == 0) {
      const double step =
          l.timestamps.size() > 1
              ? static_cast<double>(l.timestamps[1] - l.timestamps[0])
              : 0.0;
      x[i] = static_cast<double>(l.timestamps[0]) - step;
    } else {
      x[i] = static_cast<double>(l.timestamps[i - 1]);
    }
  }
  std::vector<const std::vector<double>*> curves = {&equity, &dd};
  if (has_bh) {
    curves.push_back(&bh_equity);
    curves.push_back(&bh_dd);
  }
  const std::vector<size_t> keep =
      DecimationIndices(equity.size(), curves, kMaxCurvePoints);
  Series pol, bh, cash, pol_dd, bh_dd_s;
  pol.name = "policy (best trial)";
  pol.color = kPolicyColor;
  bh.name = "buy & hold (equal weight)";
  bh.color = kBuyHoldColor;
  cash.name = "cash";
  cash.color = kCashColor;
  cash.dashed = true;
  pol_dd.name = "policy drawdown";
  pol_dd.style = SeriesStyle::kArea;
  pol_dd.color = kPolicyColor;
  bh_dd_s.name = "buy & hold drawdown";
  bh_dd_s.color = kBuyHoldColor;
  bh_dd_s.dashed = true;
  for (size_t i : keep) {
    pol.x.push_back(x[i]);
    pol.y.push_back(equity[i]);
    pol_dd.x.push_back(x[i]);
    pol_dd.y.push_back(dd[i]);
    if (has_bh) {
      bh.x.push_back(x[i]);
      bh.y.push_back(bh_equity[i]);
      bh_dd_s.x.push_back(x[i]);
      bh_dd_s.y.push_back(bh_dd[i]);
    }
  }
  // Cash is flat: its two ends draw the same line.
  cash.x = {x.front(), x.back()};
  cash.y = {1.0, 1.0};
  ChartOptions eo;
  eo.id = "lockbox-equity";
  eo.title = "Lockbox equity (start = 1)";
  eo.x_is_time = timed;
  eo.x_label = timed ? "bar end" : "lockbox bar";
  eo.y_label = "equity";
  eo.width = 1080;
  eo.height = 360;
  eo.zero_line = false;
  ChartOptions dd_o = eo;
  dd_o.id = "lockbox-drawdown";
  dd_o.title = "Drawdown (fraction below the running peak)";
  dd_o.y_label = "drawdown";
  dd_o.height = 220;
  std::vector<Series> eq_series = {pol};
  std::vector<Series> dd_series = {pol_dd};
  // With refits, each one's own account (thin, dashed): the spread the
  // split averages over.
  if (l.refits > 1) {
    pol.name = absl::StrCat("policy (best trial: ", l.refits,
                            " refits, capital split)");
    eq_series = {pol};
    for (const ReportLockbox::Refit& r : l.refit_results) {
      if (r.log_returns.size() != l.policy_log_returns.size()) continue;
      const std::vector<double> refit_equity = Equity(r.log_returns);
      Series s;
      s.name = absl::StrCat("refit ", r.refit);
      s.dashed = true;
      s.color = kRefitColors[static_cast<size_t>(r.refit) %
                             (sizeof(kRefitColors) / sizeof(kRefitColors[0]))];
      for (size_t i : keep) {
        s.x.push_back(x[i]);
        s.y.push_back(refit_equity[i]);
      }
      eq_series.push_back(std::move(s));
    }
  }
  if (has_bh) {
    eq_series.push_back(bh);
    dd_series.push_back(bh_dd_s);
  }
  eq_series.push_back(cash);
  absl::StrAppend(&body, RenderSvgChart(eo, eq_series),
                  RenderSvgChart(dd_o, dd_series));
  if (keep.size() < equity.size()) {
    absl::StrAppend(&body, "<p class=\"small\">", equity.size(),
                    " points drawn as ", keep.size(),
                    " (each bucket's lowest and highest value kept).</p>");
  }
  if (!has_bh) {
    absl::StrAppend(&body,
                    "<p class=\"small\">Buy &amp; hold's curve could not be "
                    "rebuilt on these bars; its numbers are in the table."
                    "</p>");
  }
  absl::StrAppend(
      &body, "<table class=\"data\"><tr><th>on the lockbox (", l.bars,
      " bars)</th><th>Sharpe \xC2\xB1 SE</th><th>Sortino</th><th>return</th>"
      "<th>max drawdown</th><th>turnover</th><th>fees</th><th>trades</th>"
      "<th>exposure</th></tr>");
  absl::StrAppend(
      &body, "<tr><td>policy (trial ",
      d.best_trial.has_value() ? absl::StrCat(*d.best_trial) : std::string("-"),
      l.refits > 1 ? absl::StrCat(", ", l.refits, " refits, capital split")
                   : std::string(),
      ")</td><td>", SharpeSe(l.sharpe, l.sharpe_se), "</td><td>",
      Fmt(l.sortino, 2), "</td><td>", Pct(l.total_return), "</td><td>",
      Pct(l.max_drawdown), "</td><td>", Fmt(l.turnover, 2), "</td><td>",
      Fmt(l.fees, 2), "</td><td>", l.trades, "</td><td>", Pct(l.exposure),
      "</td></tr>");
  for (const ReportLockbox::Refit& r : l.refit_results) {
    absl::StrAppend(&body, "<tr><td>&nbsp;&nbsp;refit ", r.refit,
                    " (its own 1/", l.refits, " share, scaled up)</td><td>",
                    SharpeSe(r.sharpe, r.sharpe_se), "</td><td>-</td><td>",
                    Pct(r.total_return), "</td><td>", Pct(r.max_drawdown),
                    "</td><td>-</td><td>-</td><td>", r.trades,
                    "</td><td>-</td></tr>");
  }
  absl::StrAppend(&body, "<tr><td>buy &amp; hold (equal weight)</td><td>",
                  SharpeSe(l.bh_sharpe, l.bh_sharpe_se), "</td><td>-</td><td>",
                  Pct(l.bh_return), "</td><td>", Pct(l.bh_max_drawdown),
                  "</td><td>-</td><td>-</td><td>-</td><td>100.00 %</td></tr>");
  absl::StrAppend(&body,
                  "<tr><td>cash</td><td>0.00 \xC2\xB1 0.00</td><td>0.00</td>"
                  "<td>0.00 %</td><td>0.00 %</td><td>0.00</td><td>0.00</td>"
                  "<td>0</td><td>0.00 %</td></tr>");
  absl::StrAppend(
      &body, "<tr><td>random (", l.random_seeds,
      " seeds; mean \xC2\xB1 spread)</td><td>",
      SharpeSe(l.random_sharpe_mean, l.random_sharpe_std),
      " (spread)</td><td>-</td><td>",
      absl::StrCat(Fmt(100 * l.random_return_mean, 2), " \xC2\xB1 ",
                   Fmt(100 * l.random_return_std, 2), " %"),
      "</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>");
  // The rules a quant tries first: same bars, same costs, each parameter
  // chosen on the rows before the lockbox.
  if (d.statistics.lockbox.has_value()) {
    const coordinator::TrialEvidence::Lockbox& sl = *d.statistics.lockbox;
    for (size_t k = 0; k < sl.rules.size(); ++k) {
      const coordinator::LockboxRuleResult& r = sl.rules[k];
      absl::StrAppend(
          &body, "<tr class=\"rule\"><td>rule: ", Esc(r.name), " (",
          Esc(r.parameter),
          static_cast<int>(k) == sl.strongest_rule ? "; the strongest" : "",
          ")</td><td>", SharpeSe(r.sharpe, r.sharpe_se), "</td><td>-</td><td>",
          Pct(r.total_return), "</td><td>", Pct(r.max_drawdown), "</td><td>",
          Fmt(r.turnover, 2), "</td><td>", Fmt(r.fees, 2), "</td><td>",
          r.trades, "</td><td>", Pct(r.exposure), "</td></tr>");
    }
  }
  absl::StrAppend(&body, "</table>\n");
  if (d.statistics.lockbox.has_value() &&
      !d.statistics.lockbox->rules.empty()) {
    absl::StrAppend(
        &body,
        "<p class=\"small\">Rules: equal weight rebalanced (1/n each, traded "
        "back when off by more than the band), time-series momentum (an "
        "asset held while its close is above its N-bar mean) and MACD; each "
        "rule's parameter chosen by its Sharpe on the rows before the "
        "lockbox, never on it.</p>\n");
  }
  return Section("lockbox", "Lockbox: equity and drawdown", body);
}

std::string StatisticsSection(const StudyReportData& d) {
  const coordinator::StudyStatistics& s = d.statistics;
  std::string rows;
  auto row = [&rows](const std::string& name, const std::string& value) {
    absl::StrAppend(&rows, "<tr><th>", name, "</th><td>", value, "</td></tr>");
  };
  row("trials", absl::StrCat(s.complete_trials, " complete of ", s.trials_tried,
                             " tried (complete + pruned)"));
  if (s.best_trial.has_value()) {
    row("best trial (CV)",
        s.cv_bars >= 2
            ? absl::StrCat(*s.best_trial, ": CV Sharpe ",
                           SharpeSe(s.cv_sharpe, s.cv_sharpe_se), " over ",
                           s.cv_bars, " validation bars (skew ",
                           Fmt(s.cv_skewness, 2), ", kurtosis ",
                           Fmt(s.cv_kurtosis, 2), ")")
            : absl::StrCat(*s.best_trial, " (no validation returns recorded)"));
  }
  if (s.has_dsr) {
    row("deflated Sharpe",
        absl::StrCat(Fmt(s.dsr, 3),
                     " (p = ", absl::StrFormat("%.3g", s.dsr_p_value),
                     "): the best of ", s.effective_trials, " tries (",
                     s.trials_tried, " trials \xC3\x97 ", s.checkpoints_per_run,
                     " checkpoints) of worthless strategies would show ",
                     Fmt(s.expected_max_sharpe, 2), " (trials' Sharpe std ",
                     Fmt(s.trial_sharpe_std, 2), ")"));
  } else {
    row("deflated Sharpe", absl::StrCat("n/a: ", Esc(s.dsr_note)));
  }
  if (s.has_pbo) {
    row("PBO (CSCV)",
        absl::StrCat(Fmt(s.pbo, 2), " over ", s.pbo_combinations,
                     " combinations of ", s.pbo_blocks,
                     " blocks (probability that the CV-best trial is below "
                     "the median out of sample)"));
  } else {
    row("PBO (CSCV)", absl::StrCat("n/a: ", Esc(s.pbo_note)));
  }
  if (s.lockbox.has_value()) {
    const coordinator::TrialEvidence::Lockbox& l = *s.lockbox;
    const double bh_se = d.lockbox.has_value() ? d.lockbox->bh_sharpe_se : kNan;
    row("lockbox",
        absl::StrCat(
            l.bars, " bars never seen by the search: Sharpe ",
            SharpeSe(l.sharpe, l.sharpe_se), ", return ", Pct(l.total_return),
            " | buy &amp; hold ", SharpeSe(l.bh_sharpe, bh_se), " (return ",
            Pct(l.bh_return), ") | cash 0.00 \xC2\xB1 0.00 | random ",
            SharpeSe(l.random_sharpe_mean, l.random_sharpe_std), " (spread)"));
  } else {
    row("lockbox", "no result for the best trial yet");
  }
  const std::string verdict_class = s.edge ? "edge" : "noedge";
  std::string body = absl::StrCat(
      "<div class=\"verdict ", verdict_class, "\">verdict: ", Esc(s.verdict),
      "</div>\n<table class=\"kv\">", rows, "</table>\n",
      "<p class=\"small\">An edge is claimed only when the deflated Sharpe "
      "ratio is significant (p &lt; 0.05) and the lockbox Sharpe beats "
      "cash's, buy &amp; hold's (paired test on the same bars) and the "
      "random policies' (against their spread), each at p &lt; 0.05. The "
      "verdict also names the strongest rule a quant tries first and says "
      "whether the policy beats it beyond noise (paired test); the random "
      "policies are a floor, not a benchmark. Sharpe ratios are "
      "annualised; \xC2\xB1 is one standard error.",
      d.state == "done" ? "" : " The study is not done: these are so far.",
      "</p>\n");
  return Section("statistics", "Statistics and verdict", body);
}

std::string TrialsSection(const StudyReportData& d) {
  std::string body =
      "<table class=\"data trials\"><tr><th>trial</th><th>state</th><th>"
      "score</th><th>CV Sharpe \xC2\xB1 SE</th><th>lockbox Sharpe \xC2\xB1 SE "
      "(not ranked)</th><th>last reported</th><th>parameters</th><th>reason"
      "</th></tr>";
  for (const ReportTrial& t : d.trials) {
    const bool best = d.best_trial.has_value() && *d.best_trial == t.number;
    std::vector<std::string> params;
    params.reserve(t.params.size());
    for (const auto& [name, value] : t.params) {
      params.push_back(absl::StrCat(Esc(name), "=", Esc(value)));
    }
    const std::optional<double> last = LastReported(t);
    absl::StrAppend(
        &body, "<tr class=\"", Esc(t.state), best ? " best" : "", "\"><td>",
        t.number, best ? " \xE2\x98\x85" : "", "</td><td>", Esc(t.state),
        "</td><td>", t.score.has_value() ? Fmt(*t.score, 4) : "-", "</td><td>",
        t.cv_sharpe.has_value()
            ? SharpeSe(*t.cv_sharpe, t.cv_sharpe_se.value_or(kNan))
            : "-",
        "</td><td>",
        t.lockbox_sharpe.has_value()
            ? SharpeSe(*t.lockbox_sharpe, t.lockbox_sharpe_se.value_or(kNan))
            : "-",
        "</td><td>",
        last.has_value()
            ? absl::StrCat(Fmt(*last, 4), " @ ", t.intermediate.back().first)
            : "-",
        "</td><td class=\"params\">", absl::StrJoin(params, " "), "</td><td>",
        Esc(t.fail_reason), "</td></tr>");
  }
  absl::StrAppend(&body, "</table>\n");
  return Section("trials", absl::StrCat("Trials (", d.trials.size(), ")"),
                 body);
}

constexpr char kCss[] = R"css(
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#e3e3e3;--accent:#4e79a7}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;color:var(--fg);background:#f6f7f9}
main{max-width:1140px;margin:0 auto;padding:24px}
header{margin-bottom:8px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}
.meta{color:var(--muted);margin:0}
.meta b{color:var(--fg);font-weight:600}
.lead{color:var(--muted);margin:0 0 8px}
.small{color:var(--muted);font-size:12px}
.empty{color:var(--muted);font-style:italic}
nav a{margin-right:12px;color:var(--accent);text-decoration:none}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{flex:1 1 150px;background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card .k{color:var(--muted);font-size:12px}
.card .v{font-size:18px;font-weight:600}
.verdict{padding:10px 14px;border-radius:6px;font-weight:600;margin:8px 0}
.verdict.edge{background:#e6f4ea;border:1px solid #34a853;color:#1e6b34}
.verdict.noedge{background:#fdecea;border:1px solid #d93025;color:#8c1d18}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
table.data th,table.data td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
table.data th:first-child,table.data td:first-child{text-align:left}
table.data tr:nth-child(even) td{background:#fafafa}
table.trials td.params{text-align:left;white-space:normal;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
table.trials tr.best td{background:#eef6ee}
table.trials tr.pruned td,table.trials tr.failed td{color:var(--muted)}
table.kv th{text-align:left;padding:4px 12px 4px 0;vertical-align:top;white-space:nowrap;color:var(--muted);font-weight:500}
table.kv td{padding:4px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:8px}
svg.chart{max-width:100%;height:auto;display:block}
footer{color:var(--muted);font-size:12px;margin:16px 0}
)css";

}  // namespace

std::vector<ParamImportance> ParameterImportance(
    const std::vector<ReportParam>& params,
    const std::vector<ReportTrial>& trials) {
  std::vector<ParamImportance> out;
  for (const ReportParam& p : params) {
    ParamImportance imp;
    imp.name = p.name;
    imp.importance = kNan;
    imp.eta_squared = kNan;
    imp.noise_level = kNan;
    // (group key, score) of the complete trials where p is active.
    std::vector<double> values, scores;
    std::vector<std::string> labels;
    for (const ReportTrial& t : trials) {
      if (t.state != "complete" || !t.score.has_value() || !Finite(*t.score)) {
        continue;
      }
      const std::string* v = t.Param(p.name);
      if (v == nullptr) continue;
      if (p.categorical) {
        labels.push_back(*v);
        scores.push_back(*t.score);
      } else {
        const double x = ParseNumber(*v);
        if (!Finite(x)) continue;
        values.push_back(x);
        scores.push_back(*t.score);
      }
    }
    const auto n = static_cast<int64_t>(scores.size());
    imp.trials = n;
    std::vector<int> group(scores.size());
    int k = 0;
    if (p.categorical) {
      std::map<std::string, int> ids;
      for (size_t i = 0; i < labels.size(); ++i) {
        auto [it, added] = ids.emplace(labels[i], static_cast<int>(ids.size()));
        group[i] = it->second;
      }
      k = static_cast<int>(ids.size());
    } else if (n > 0) {
      // Equal-count bins by rank; tied values share a rank, so they land in
      // the same bin.
      const int want = std::clamp(
          static_cast<int>(std::floor(std::sqrt(static_cast<double>(n)))), 2,
          10);
      const std::vector<double> rank = Ranks(values);
      std::set<int> used;
      for (size_t i = 0; i < rank.size(); ++i) {
        group[i] = std::min(want - 1, static_cast<int>(rank[i] * want /
                                                       static_cast<double>(n)));
        used.insert(group[i]);
      }
      k = static_cast<int>(used.size());
    }
    imp.bins = k;
    if (n >= 4 && k >= 2 && n > k) {
      // Scores about the first one: a constant score has exactly zero
      // spread (no rounding noise for η² to "explain").
      const double origin = scores[0];
      for (double& s : scores) s -= origin;
      double mean = 0;
      for (double s : scores) mean += s / static_cast<double>(n);
      std::map<int, std::pair<double, int64_t>> sums;  // group -> (sum, count)
      double total = 0;
      for (size_t i = 0; i < scores.size(); ++i) {
        total += (scores[i] - mean) * (scores[i] - mean);
        sums[group[i]].first += scores[i];
        sums[group[i]].second += 1;
      }
      double between = 0;
      for (const auto& [g, sc] : sums) {
        const double gm = sc.first / static_cast<double>(sc.second);
        between += static_cast<double>(sc.second) * (gm - mean) * (gm - mean);
      }
      const auto nd = static_cast<double>(n);
      const auto kd = static_cast<double>(k);
      imp.noise_level = (kd - 1) / (nd - 1);
      if (total > 0) {
        imp.eta_squared = std::clamp(between / total, 0.0, 1.0);
        imp.importance = std::clamp(
            1 - (1 - imp.eta_squared) * (nd - 1) / (nd - kd), 0.0, 1.0);
      } else {
        // Every trial scored the same: nothing to explain.
        imp.eta_squared = 0;
        imp.importance = 0;
      }
    }
    out.push_back(std::move(imp));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ParamImportance& a, const ParamImportance& b) {
                     const bool fa = Finite(a.importance);
                     const bool fb = Finite(b.importance);
                     if (fa != fb) return fa;
                     return fa && a.importance > b.importance;
                   });
  return out;
}

std::string RenderStudyReportHtml(const StudyReportData& d) {
  const std::vector<ParamImportance> importance =
      ParameterImportance(d.params, d.trials);
  const coordinator::StudyStatistics& s = d.statistics;
  std::string html;
  html.reserve(256 * 1024);
  absl::StrAppend(
      &html,
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">"
      // No external resource may load, even by accident.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
      "'none'; style-src 'unsafe-inline'; img-src data:\">"
      "<title>ristretto study ",
      Esc(d.study_name), "</title><style>", kCss,
      "</style></head><body><main>\n<header><h1>Study ", Esc(d.study_name),
      "</h1><p class=\"meta\"><b>state</b> ", Esc(d.state),
      " \xC2\xB7 <b>objective</b> ", Esc(d.objective),
      " \xC2\xB7 <b>dataset</b> ", Esc(d.dataset), " \xC2\xB7 <b>CV</b> ",
      Esc(d.cv), "</p><p class=\"meta\">generated ", Esc(d.generated_at),
      " by <code>ristretto study report</code></p>\n");
  absl::StrAppend(&html, "<div class=\"verdict ", s.edge ? "edge" : "noedge",
                  "\">verdict: ", Esc(s.verdict), "</div>\n");
  // Headline numbers.
  std::string best_score = "-";
  for (const ReportTrial& t : d.trials) {
    if (d.best_trial.has_value() && t.number == *d.best_trial &&
        t.score.has_value()) {
      best_score = Fmt(*t.score, 4);
    }
  }
  auto card = [&html](const std::string& k, const std::string& v) {
    absl::StrAppend(&html, "<div class=\"card\"><div class=\"k\">", k,
                    "</div><div class=\"v\">", v, "</div></div>");
  };
  absl::StrAppend(&html, "<div class=\"cards\">");
  card("best trial (score)",
       d.best_trial.has_value()
           ? absl::StrCat(*d.best_trial, " (", best_score, ")")
           : std::string("-"));
  card("CV Sharpe \xC2\xB1 SE",
       s.cv_bars >= 2 ? SharpeSe(s.cv_sharpe, s.cv_sharpe_se) : "-");
  if (d.lockbox.has_value()) {
    card("lockbox Sharpe \xC2\xB1 SE",
         SharpeSe(d.lockbox->sharpe, d.lockbox->sharpe_se));
    card("buy &amp; hold (lockbox)",
         SharpeSe(d.lockbox->bh_sharpe, d.lockbox->bh_sharpe_se));
  } else {
    card("lockbox Sharpe \xC2\xB1 SE", "-");
  }
  card("deflated Sharpe p",
       s.has_dsr ? absl::StrFormat("%.3g", s.dsr_p_value) : "n/a");
  card("PBO", s.has_pbo ? Fmt(s.pbo, 2) : "n/a");
  absl::StrAppend(&html, "</div>\n");
  absl::StrAppend(&html,
                  "<nav><a href=\"#history\">history</a><a "
                  "href=\"#importance\">importance</a><a "
                  "href=\"#slices\">parameters</a><a href=\"#folds\">folds</a>"
                  "<a href=\"#lockbox\">lockbox</a><a "
                  "href=\"#statistics\">statistics</a><a "
                  "href=\"#trials\">trials</a></nav></header>\n");
  for (const std::string& note : d.notes) {
    absl::StrAppend(&html, "<p class=\"small\">", Esc(note), "</p>\n");
  }
  absl::StrAppend(&html, HistorySection(d), ImportanceSection(importance),
                  SliceSection(d), FoldSection(d), LockboxSection(d),
                  StatisticsSection(d), TrialsSection(d));
  absl::StrAppend(
      &html,
      "<footer>Self-contained: no script, no network. Sharpe ratios are "
      "annualised from per-bar log returns with a risk-free rate of 0; "
      "\xC2\xB1 is one standard error (Mertens 2002). Parameter importance: "
      "bias-corrected correlation ratio, marginal.</footer>\n"
      "</main></body></html>\n");
  return html;
}

}  // namespace ristretto::report
