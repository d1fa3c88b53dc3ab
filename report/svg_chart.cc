#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ristretto::report {
namespace {

// Tableau 10: distinguishable, print-friendly, and colour-blind tolerable for
// the first few entries (the ones a chart usually uses).
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                    "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                    "#9c755f", "#bab0ac"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

constexpr double kFontSize = 11.0;
// Average glyph advance of an 11 px sans-serif font; lays out the legend and
// the y-axis margin without measuring text (no browser here).
constexpr double kCharWidth = 6.2;
constexpr double kMarkerRadius = 3.5;
// Plot area inset so markers on the domain's edge are not cut by the axes.
constexpr double kInset = 6.0;

bool Finite(double v) { return std::isfinite(v); }

// Coordinates in pixels: one decimal is well below a pixel.
std::string Px(double v) { return absl::StrFormat("%.1f", v); }

// Element ids and data-chart values: [a-z0-9_-], anything else becomes '-'.
std::string SanitizeId(const std::string& id) {
  std::string out;
  out.reserve(id.size());
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (ok) {
      out.push_back(c);
    } else if (c >= 'A' && c <= 'Z') {
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else {
      out.push_back('-');
    }
  }
  return out.empty() ? std::string("chart") : out;
}

// Number formatting for tick labels: enough decimals to tell neighbouring
// ticks apart (derived from the step), scientific for huge or tiny values.
std::string FormatTick(double v, double step) {
  if (v == 0.0) return "0";
  const double mag = std::fabs(v);
  if (mag >= 1e6 || (step > 0 && step < 1e-4))
    return absl::StrFormat("%.3g", v);
  int decimals = 0;
  if (step > 0) {
    decimals =
        std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  }
  return absl::StrFormat("%.*f", std::min(decimals, 6), v);
}

std::string FormatTime(double unix_seconds, const char* format) {
  const auto t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  return std::string(buf, n);
}

// Tooltip numbers: 4 significant digits reads well for Sharpe ratios,
// learning rates and equity alike.
std::string FormatValue(double v) { return absl::StrFormat("%.4g", v); }

// One tick on an axis: its value in data units and its label.
struct Tick {
  double value;
  std::string label;
};

// An axis maps a data value (after the log transform, if any) to pixels.
struct Axis {
  double lo = 0, hi = 1;        // domain in transformed units
  double px_lo = 0, px_hi = 1;  // pixel range (px_lo maps lo)
  bool log = false;
  double Transform(double v) const { return log ? std::log10(v) : v; }
  double Map(double v) const {
    const double t = Transform(v);
    const double span = hi - lo;
    const double f = span > 0 ? (t - lo) / span : 0.5;
    return px_lo + f * (px_hi - px_lo);
  }
};

// Calendar-aware ticks for Unix-second axes: round minutes, hours, days,
// months or years in UTC, about `target` of them inside [lo, hi].
std::vector<Tick> TimeTicks(double lo, double hi, int target) {
  std::vector<Tick> ticks;
  if (!(hi > lo)) {
    ticks.push_back({lo, FormatTime(lo, "%Y-%m-%d %H:%M")});
    return ticks;
  }
  const double span = hi - lo;
  const double want = span / std::max(1, target);
  constexpr double kMinute = 60, kHour = 3600, kDay = 86400;
  const double fixed[] = {1,       5,           15,           30,
                          kMinute, 5 * kMinute, 15 * kMinute, 30 * kMinute,
                          kHour,   3 * kHour,   6 * kHour,    12 * kHour,
                          kDay,    2 * kDay,    7 * kDay,     14 * kDay};
  for (double step : fixed) {
    if (step >= want) {
      const char* format = step >= kDay    ? "%Y-%m-%d"
                           : step >= kHour ? "%m-%d %H:%M"
                                           : "%H:%M:%S";
      if (step >= kMinute && step < kHour) format = "%m-%d %H:%M";
      // Weekly ticks start on a day boundary, finer ones on their own step.
      const double align = step >= kDay ? kDay : step;
      double t = std::ceil(lo / align) * align;
      for (int i = 0; t <= hi && i < 1000; ++i, t += step) {
        ticks.push_back({t, FormatTime(t, format)});
      }
      return ticks;
    }
  }
  // Months: 1, 3, 6; then years 1, 2, 5, 10, ...
  const double kMonth = 30.44 * kDay;
  int months = 0;
  for (int m : {1, 3, 6, 12, 24, 60, 120, 240, 600, 1200}) {
    months = m;
    if (m * kMonth >= want) break;
  }
  const auto start = static_cast<std::time_t>(std::floor(lo));
  std::tm tm{};
  gmtime_r(&start, &tm);
  int year = tm.tm_year + 1900;
  int month = tm.tm_mon;  // 0-based
  // First boundary at or after lo that is a multiple of the step.
  int index = year * 12 + month;
  index = ((index + months - 1) / months) * months;
  const char* format = months >= 12 ? "%Y" : "%Y-%m";
  for (int i = 0; i < 1000; ++i, index += months) {
    std::tm b{};
    b.tm_year = index / 12 - 1900;
    b.tm_mon = index % 12;
    b.tm_mday = 1;
    const double t = static_cast<double>(timegm(&b));
    if (t < lo) continue;
    if (t > hi) break;
    ticks.push_back({t, FormatTime(t, format)});
  }
  return ticks;
}

// "1e-05" reads worse than "1e-5"; mid-range decades print plainly.
std::string FormatLogTick(double mantissa, int exponent) {
  if (exponent >= -3 && exponent <= 4) {
    return absl::StrFormat("%g", mantissa * std::pow(10.0, exponent));
  }
  return absl::StrFormat("%ge%d", mantissa, exponent);
}

// Ticks for a log10 axis over [lo, hi] (log units): decades when they are
// enough (at least 3), else 1-2-5 steps, else every integer mantissa, and
// every k-th decade when there are too many (about `target` labels).
std::vector<Tick> LogTicks(double lo, double hi, int target) {
  const int first = static_cast<int>(std::floor(lo + 1e-9));
  const int last = static_cast<int>(std::ceil(hi - 1e-9));
  auto collect = [&](const std::vector<double>& mantissas, int every) {
    std::vector<Tick> ticks;
    for (int k = first; k <= last; ++k) {
      if ((k - first) % every != 0) continue;
      for (double m : mantissas) {
        const double t = std::log10(m) + k;
        if (t < lo - 1e-9 || t > hi + 1e-9) continue;
        ticks.push_back({std::pow(10.0, t), FormatLogTick(m, k)});
      }
    }
    return ticks;
  };
  const int most = std::max(3, target + target / 2);
  std::vector<Tick> decades = collect({1}, 1);
  if (static_cast<int>(decades.size()) > most) {
    const int every = (last - first + most - 1) / most;
    return collect({1}, std::max(1, every));
  }
  if (decades.size() >= 3) return decades;
  std::vector<Tick> fine = collect({1, 2, 5}, 1);
  if (fine.size() >= 3 && static_cast<int>(fine.size()) <= most + 1) {
    return fine;
  }
  std::vector<Tick> all = collect({1, 2, 3, 4, 5, 6, 7, 8, 9}, 1);
  if (all.size() >= 3 && static_cast<int>(all.size()) <= most + 1) return all;
  if (fine.size() >= 2 && static_cast<int>(fine.size()) <= most + 1) {
    return fine;
  }
  // A range narrower than one mantissa step (e.g. 0.0012 to 0.0025): round
  // values in linear steps, placed on the log axis.
  // NiceTicks covers the range, so its end ticks may fall outside: ask for
  // more until at least 3 fall inside.
  const double vlo = std::pow(10.0, lo), vhi = std::pow(10.0, hi);
  std::vector<Tick> ticks;
  for (int want = std::max(2, target); want <= 4 * std::max(2, target);
       ++want) {
    const std::vector<double> linear = NiceTicks(vlo, vhi, want);
    const double step = linear.size() > 1 ? linear[1] - linear[0] : 0.0;
    ticks.clear();
    for (double v : linear) {
      if (v >= vlo * (1 - 1e-9) && v <= vhi * (1 + 1e-9) && v > 0) {
        ticks.push_back({v, FormatTick(v, step)});
      }
    }
    if (ticks.size() >= 3) break;
  }
  return ticks.size() >= 2 ? ticks : all;
}

struct Point {
  double x, y, err;
  std::string label;
};

// A series that draws: its resolved colour, its finite points (x defaults
// to the index when x is shorter than y; on a log axis x must be positive)
// and where its contiguous runs start (a non-finite value splits a line or
// an area into sub-paths instead of joining across the gap).
struct Prepared {
  const Series* series;
  std::string color;
  std::vector<Point> points;
  std::vector<size_t> breaks;  // index into points of each run's start
};

std::vector<Prepared> Prepare(const ChartOptions& options,
                              const std::vector<Series>& series) {
  std::vector<Prepared> out;
  int next_color = 0;
  for (const Series& s : series) {
    Prepared p;
    p.series = &s;
    if (s.color.empty()) {
      p.color = kPalette[next_color % kPaletteSize];
      ++next_color;
    } else {
      p.color = s.color;
    }
    bool in_run = false;
    for (size_t i = 0; i < s.y.size(); ++i) {
      const double x = i < s.x.size() ? s.x[i] : static_cast<double>(i);
      const double y = s.y[i];
      const bool ok =
          Finite(x) && Finite(y) &&
          (!options.x_log || !options.x_categories.empty() || x > 0);
      if (!ok) {
        in_run = false;
        continue;
      }
      if (!in_run) p.breaks.push_back(p.points.size());
      in_run = true;
      Point pt{x, y, 0.0, i < s.labels.size() ? s.labels[i] : std::string()};
      if (i < s.y_error.size() && Finite(s.y_error[i])) {
        pt.err = std::fabs(s.y_error[i]);
      }
      p.points.push_back(std::move(pt));
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string DefaultLabel(const ChartOptions& options, const Point& p) {
  std::string x;
  if (!options.x_categories.empty()) {
    const auto idx = static_cast<int64_t>(std::llround(p.x));
    x = idx >= 0 && idx < static_cast<int64_t>(options.x_categories.size())
            ? options.x_categories[static_cast<size_t>(idx)]
            : FormatValue(p.x);
  } else if (options.x_is_time) {
    x = FormatTime(p.x, "%Y-%m-%d %H:%M UTC");
  } else {
    x = FormatValue(p.x);
  }
  std::string text = absl::StrCat(x, ", ", FormatValue(p.y));
  if (p.err > 0) absl::StrAppend(&text, " \xC2\xB1 ", FormatValue(p.err));
  return text;
}

// Legend entries laid out in rows that fit the chart's width.
struct LegendItem {
  const Prepared* prepared;
  double x;
  int row;
};

std::vector<LegendItem> LayoutLegend(const std::vector<Prepared>& prepared,
                                     double left, double right, int* rows) {
  std::vector<LegendItem> items;
  double x = left;
  int row = 0;
  for (const Prepared& p : prepared) {
    if (p.series->name.empty()) continue;
    const double w =
        22 + kCharWidth * static_cast<double>(p.series->name.size()) + 14;
    if (x + w > right && x > left) {
      ++row;
      x = left;
    }
    items.push_back({&p, x, row});
    x += w;
  }
  *rows = items.empty() ? 0 : row + 1;
  return items;
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  static constexpr const char kReplacement[] = "\xEF\xBF\xBD";
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          // XML 1.0 forbids most C0 controls even as references: a
          // standalone SVG with one would not parse.
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            out += kReplacement;
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // Validate one UTF-8 sequence (no overlongs, no surrogates, <= U+10FFFF).
    size_t len = 0;
    unsigned int lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool valid = len > 0 && i + len <= n;
    for (size_t k = 1; valid && k < len; ++k) {
      const unsigned char cc = s[i + k];
      const unsigned int min = k == 1 ? lo : 0x80;
      const unsigned int max = k == 1 ? hi : 0xBF;
      if (cc < min || cc > max) valid = false;
    }
    if (valid) {
      out.append(text, i, len);
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!Finite(lo) || !Finite(hi)) return ticks;
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    const double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  target = std::max(1, target);
  const double span = hi - lo;
  if (!Finite(span) || span <= 0) {
    ticks = {lo, hi};
    return ticks;
  }
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  double step;
  if (norm < 1.5) {
    step = mag;
  } else if (norm < 3) {
    step = 2 * mag;
  } else if (norm < 7) {
    step = 5 * mag;
  } else {
    step = 10 * mag;
  }
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  if (!Finite(first) || !Finite(last) || last - first > 10000) {
    ticks = {lo, hi};
    return ticks;
  }
  for (double k = first; k <= last + 0.5; k += 1) {
    double v = k * step;
    if (std::fabs(v) < step * 1e-9) v = 0.0;  // no "-0" or 1e-17 ticks
    ticks.push_back(v);
  }
  return ticks;
}

std::string RenderSvgChart(const ChartOptions& options,
                           const std::vector<Series>& series) {
  const double width = std::max(160, options.width);
  const double height = std::max(120, options.height);
  const std::string id = SanitizeId(options.id);
  const bool categories = !options.x_categories.empty();
  const bool x_log = options.x_log && !categories;
  const bool x_time = options.x_is_time && !categories && !x_log;

  std::vector<Prepared> prepared = Prepare(options, series);

  // ---- Data ranges over finite points (y includes error bars; bars and
  // areas start at 0, so 0 is in their range).
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -x_min, y_min = x_min, y_max = -x_min;
  int bar_series = 0;
  double min_gap = std::numeric_limits<double>::infinity();
  for (const Prepared& p : prepared) {
    const SeriesStyle style = p.series->style;
    if (style == SeriesStyle::kBars && !p.points.empty()) ++bar_series;
    for (size_t i = 0; i < p.points.size(); ++i) {
      const Point& pt = p.points[i];
      const double tx = x_log ? std::log10(pt.x) : pt.x;
      x_min = std::min(x_min, tx);
      x_max = std::max(x_max, tx);
      y_min = std::min(y_min, pt.y - pt.err);
      y_max = std::max(y_max, pt.y + pt.err);
      if (style == SeriesStyle::kBars || style == SeriesStyle::kArea) {
        y_min = std::min(y_min, 0.0);
        y_max = std::max(y_max, 0.0);
      }
      if (style == SeriesStyle::kBars && i > 0) {
        const double gap = std::fabs(pt.x - p.points[i - 1].x);
        if (gap > 0) min_gap = std::min(min_gap, gap);
      }
    }
  }
  const bool has_data = Finite(x_min) && Finite(y_min);

  // ---- Layout: title, legend rows, plot, x labels, x-axis title.
  const double title_h = options.title.empty() ? 8 : 24;
  int legend_rows = 0;
  const double legend_left = 56;
  std::vector<LegendItem> legend =
      LayoutLegend(prepared, legend_left, width - 12, &legend_rows);
  const double legend_h = legend_rows * 16.0;
  const double top = title_h + legend_h + 8;
  const bool x_title = !options.x_label.empty() || x_time;
  const double bottom = height - (x_title ? 42 : 26);

  // ---- Y axis: nice ticks covering the data.
  std::vector<double> y_ticks;
  if (has_data) {
    y_ticks = NiceTicks(y_min, y_max,
                        std::max(2, static_cast<int>((bottom - top) / 50)));
  } else {
    y_ticks = NiceTicks(0, 1, 4);
  }
  Axis y_axis;
  y_axis.lo = y_ticks.front();
  y_axis.hi = y_ticks.back();
  const double y_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1.0;
  std::vector<std::string> y_labels;
  size_t longest_y = 1;
  for (double v : y_ticks) {
    y_labels.push_back(FormatTick(v, y_step));
    longest_y = std::max(longest_y, y_labels.back().size());
  }
  const double left =
      std::max(48.0, 22 + kCharWidth * static_cast<double>(longest_y) +
                         (options.y_label.empty() ? 0 : 16));
  const double right = width - 16;
  y_axis.px_lo = bottom - kInset;
  y_axis.px_hi = top + kInset;

  // ---- X axis.
  Axis x_axis;
  x_axis.log = x_log;
  x_axis.px_lo = left + kInset;
  x_axis.px_hi = right - kInset;
  std::vector<Tick> x_ticks;
  const int x_target = std::max(2, static_cast<int>((right - left) / 110));
  if (categories) {
    const double n = static_cast<double>(options.x_categories.size());
    x_axis.lo = -0.5;
    x_axis.hi = n - 0.5;
    if (has_data) {
      x_axis.lo = std::min(x_axis.lo, x_min - 0.5);
      x_axis.hi = std::max(x_axis.hi, x_max + 0.5);
    }
    // Every k-th label so they do not overlap.
    size_t longest = 1;
    for (const std::string& c : options.x_categories) {
      longest = std::max(longest, c.size());
    }
    const double slot = (right - left) / std::max(1.0, n);
    const auto every = static_cast<size_t>(std::max(
        1.0,
        std::ceil((kCharWidth * static_cast<double>(longest) + 8) / slot)));
    for (size_t i = 0; i < options.x_categories.size(); i += every) {
      x_ticks.push_back({static_cast<double>(i), options.x_categories[i]});
    }
  } else if (!has_data) {
    x_axis.lo = 0;
    x_axis.hi = 1;
  } else if (x_log) {
    if (x_max - x_min >= 1) {
      // A decade or more: whole decades make a clean axis.
      x_axis.lo = std::floor(x_min + 1e-9);
      x_axis.hi = std::ceil(x_max - 1e-9);
    } else {
      // Less: the data's range (5 % margin), read with 1-2-5 ticks.
      const double pad = std::max(0.05 * (x_max - x_min), 0.02);
      x_axis.lo = x_min - pad;
      x_axis.hi = x_max + pad;
    }
    x_ticks = LogTicks(x_axis.lo, x_axis.hi, x_target);
  } else if (x_time) {
    x_axis.lo = x_min;
    x_axis.hi = x_max > x_min ? x_max : x_min + 3600;
    x_ticks = TimeTicks(x_axis.lo, x_axis.hi, x_target);
  } else {
    double lo = x_min, hi = x_max;
    if (bar_series > 0) {
      const double half = Finite(min_gap) ? min_gap / 2 : 0.5;
      lo -= half;
      hi += half;
    }
    std::vector<double> t = NiceTicks(lo, hi, x_target);
    if (options.x_integer && t.size() > 1 && t[1] - t[0] < 1) {
      t.clear();
      for (double v = std::floor(lo); v <= std::ceil(hi) + 0.5; v += 1) {
        t.push_back(v);
      }
    }
    x_axis.lo = t.front();
    x_axis.hi = t.back();
    const double step = t.size() > 1 ? t[1] - t[0] : 1.0;
    for (double v : t) x_ticks.push_back({v, FormatTick(v, step)});
  }

  // ---- Count what will be drawn (the data-points contract).
  int total = 0;
  for (const Prepared& p : prepared) total += static_cast<int>(p.points.size());

  std::string out;
  out.reserve(4096 + static_cast<size_t>(total) * 160);
  absl::StrAppend(&out, "<svg class=\"chart\" data-chart=\"", id,
                  "\" data-points=\"", total, "\" id=\"", id, "\" width=\"",
                  static_cast<int>(width), "\" height=\"",
                  static_cast<int>(height), "\" viewBox=\"0 0 ",
                  static_cast<int>(width), " ", static_cast<int>(height),
                  "\" role=\"img\" aria-label=\"", HtmlEscape(options.title),
                  "\" font-family=\"system-ui, -apple-system, 'Segoe UI', "
                  "Roboto, 'Helvetica Neue', Arial, sans-serif\" "
                  "font-size=\"",
                  kFontSize, "\">");
  absl::StrAppend(&out, "<rect class=\"bg\" width=\"", static_cast<int>(width),
                  "\" height=\"", static_cast<int>(height),
                  "\" fill=\"#ffffff\"/>");
  if (!options.title.empty()) {
    absl::StrAppend(&out, "<text x=\"", Px(left),
                    "\" y=\"16\" font-size=\"13\" "
                    "font-weight=\"600\" fill=\"#222\">",
                    HtmlEscape(options.title), "</text>");
  }

  // Legend.
  for (const LegendItem& item : legend) {
    const Prepared& p = *item.prepared;
    const double cy = title_h + 8 + item.row * 16.0;
    const double x = item.x;
    absl::StrAppend(&out, "<g class=\"legend\">");
    switch (p.series->style) {
      case SeriesStyle::kLine:
        absl::StrAppend(
            &out, "<line x1=\"", Px(x), "\" y1=\"", Px(cy), "\" x2=\"",
            Px(x + 16), "\" y2=\"", Px(cy), "\" stroke=\"", HtmlEscape(p.color),
            "\" stroke-width=\"2\"",
            p.series->dashed ? " stroke-dasharray=\"5 3\"" : "", "/>");
        break;
      case SeriesStyle::kPoints:
        absl::StrAppend(&out, "<circle cx=\"", Px(x + 8), "\" cy=\"", Px(cy),
                        "\" r=\"", kMarkerRadius, "\" fill=\"",
                        p.series->hollow ? "#ffffff" : HtmlEscape(p.color),
                        "\" stroke=\"", HtmlEscape(p.color),
                        "\" stroke-width=\"1.5\"/>");
        break;
      case SeriesStyle::kBars:
      case SeriesStyle::kArea:
        absl::StrAppend(
            &out, "<rect x=\"", Px(x + 2), "\" y=\"", Px(cy - 5),
            "\" width=\"12\" height=\"10\" fill=\"", HtmlEscape(p.color), "\"",
            p.series->style == SeriesStyle::kArea ? " fill-opacity=\"0.35\""
                                                  : "",
            "/>");
        break;
    }
    absl::StrAppend(&out, "<text x=\"", Px(x + 22), "\" y=\"", Px(cy + 4),
                    "\" fill=\"#333\">", HtmlEscape(p.series->name),
                    "</text></g>");
  }

  // Grid and y ticks.
  absl::StrAppend(&out, "<g class=\"axis y-axis\">");
  for (size_t i = 0; i < y_ticks.size(); ++i) {
    const double py = y_axis.Map(y_ticks[i]);
    absl::StrAppend(&out, "<line class=\"grid\" x1=\"", Px(left), "\" y1=\"",
                    Px(py), "\" x2=\"", Px(right), "\" y2=\"", Px(py),
                    "\" stroke=\"#e6e6e6\"/>");
    absl::StrAppend(&out, "<text x=\"", Px(left - 6), "\" y=\"", Px(py + 4),
                    "\" text-anchor=\"end\" fill=\"#555\">", y_labels[i],
                    "</text>");
  }
  absl::StrAppend(&out, "</g>");
  // X ticks.
  absl::StrAppend(&out, "<g class=\"axis x-axis\">");
  for (const Tick& t : x_ticks) {
    const double px = x_axis.Map(t.value);
    if (px < left - 0.5 || px > right + 0.5) continue;
    absl::StrAppend(&out, "<line x1=\"", Px(px), "\" y1=\"", Px(bottom),
                    "\" x2=\"", Px(px), "\" y2=\"", Px(bottom + 4),
                    "\" stroke=\"#888\"/>");
    if (!categories) {
      absl::StrAppend(&out, "<line class=\"grid\" x1=\"", Px(px), "\" y1=\"",
                      Px(top), "\" x2=\"", Px(px), "\" y2=\"", Px(bottom),
                      "\" stroke=\"#f0f0f0\"/>");
    }
    // Labels near the chart's edges anchor inwards instead of being cut.
    const double half = kCharWidth * static_cast<double>(t.label.size()) / 2;
    const char* anchor = "middle";
    if (px + half > width - 2) {
      anchor = "end";
    } else if (px - half < 2) {
      anchor = "start";
    }
    absl::StrAppend(&out, "<text x=\"", Px(px), "\" y=\"", Px(bottom + 16),
                    "\" text-anchor=\"", anchor, "\" fill=\"#555\">",
                    HtmlEscape(t.label), "</text>");
  }
  absl::StrAppend(&out, "</g>");
  // Axes frame (left and bottom).
  absl::StrAppend(&out, "<path class=\"frame\" d=\"M", Px(left), ",", Px(top),
                  "V", Px(bottom), "H", Px(right),
                  "\" fill=\"none\" stroke=\"#888\"/>");
  // Axis titles.
  if (x_title) {
    std::string label = options.x_label;
    if (x_time && label.find("UTC") == std::string::npos) {
      label = label.empty() ? "time (UTC)" : absl::StrCat(label, " (UTC)");
    }
    absl::StrAppend(&out, "<text x=\"", Px((left + right) / 2), "\" y=\"",
                    Px(height - 8), "\" text-anchor=\"middle\" fill=\"#333\">",
                    HtmlEscape(label), "</text>");
  }
  if (!options.y_label.empty()) {
    const double cx = 14, cy = (top + bottom) / 2;
    absl::StrAppend(
        &out, "<text x=\"", Px(cx), "\" y=\"", Px(cy),
        "\" text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(-90 ",
        Px(cx), " ", Px(cy), ")\">", HtmlEscape(options.y_label), "</text>");
  }
  // Zero reference line.
  if (options.zero_line && has_data && y_axis.lo < 0 && y_axis.hi > 0) {
    const double py = y_axis.Map(0.0);
    absl::StrAppend(&out, "<line class=\"zero\" x1=\"", Px(left), "\" y1=\"",
                    Px(py), "\" x2=\"", Px(right), "\" y2=\"", Px(py),
                    "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>");
  }
  if (!has_data) {
    absl::StrAppend(&out, "<text class=\"empty\" x=\"", Px((left + right) / 2),
                    "\" y=\"", Px((top + bottom) / 2),
                    "\" text-anchor=\"middle\" fill=\"#999\" "
                    "font-size=\"14\">no data</text>");
  }

  // ---- Series, in order (later ones on top): areas, bars, lines, points
  // all keep the caller's order so a caller controls stacking.
  const double base_px = y_axis.Map(std::clamp(0.0, y_axis.lo, y_axis.hi));
  double bar_slot;
  if (categories) {
    bar_slot =
        (x_axis.px_hi - x_axis.px_lo) / std::max(1.0, x_axis.hi - x_axis.lo);
  } else if (Finite(min_gap)) {
    bar_slot =
        std::fabs(x_axis.Map(x_axis.lo + min_gap) - x_axis.Map(x_axis.lo));
  } else {
    bar_slot = 24;
  }
  const double group_w = std::clamp(bar_slot * 0.8, 1.0, 120.0);
  const double bar_w = group_w / std::max(1, bar_series);
  // ± error bars with caps; not counted in data-points.
  const auto draw_errors = [&](const Prepared& p, double offset) {
    for (const Point& pt : p.points) {
      if (!(pt.err > 0)) continue;
      const double px = x_axis.Map(pt.x) + offset;
      const double y1 = y_axis.Map(pt.y - pt.err);
      const double y2 = y_axis.Map(pt.y + pt.err);
      const double cap = std::clamp(bar_w * 0.25, 3.0, 8.0);
      absl::StrAppend(&out, "<line class=\"err\" x1=\"", Px(px), "\" y1=\"",
                      Px(y1), "\" x2=\"", Px(px), "\" y2=\"", Px(y2),
                      "\" stroke=\"#333\" stroke-width=\"1.2\"/>");
      for (double yy : {y1, y2}) {
        absl::StrAppend(&out, "<line class=\"err\" x1=\"", Px(px - cap),
                        "\" y1=\"", Px(yy), "\" x2=\"", Px(px + cap),
                        "\" y2=\"", Px(yy),
                        "\" stroke=\"#333\" stroke-width=\"1.2\"/>");
      }
    }
  };
  int bar_index = 0;
  for (const Prepared& p : prepared) {
    if (p.points.empty()) continue;
    const Series& s = *p.series;
    const std::string color = HtmlEscape(p.color);
    const std::string name = HtmlEscape(s.name);
    double offset = 0;  // bars of several series side by side
    if (s.style == SeriesStyle::kBars) {
      offset = -group_w / 2 + bar_w * (bar_index + 0.5);
      ++bar_index;
    }
    absl::StrAppend(&out, "<g class=\"series-group\">");
    if (s.style == SeriesStyle::kLine || s.style == SeriesStyle::kArea) {
      std::string d;
      for (size_t r = 0; r < p.breaks.size(); ++r) {
        const size_t begin = p.breaks[r];
        const size_t end =
            r + 1 < p.breaks.size() ? p.breaks[r + 1] : p.points.size();
        if (s.style == SeriesStyle::kArea) {
          absl::StrAppend(&d, "M", Px(x_axis.Map(p.points[begin].x)), ",",
                          Px(base_px));
          for (size_t i = begin; i < end; ++i) {
            absl::StrAppend(&d, "L", Px(x_axis.Map(p.points[i].x)), ",",
                            Px(y_axis.Map(p.points[i].y)));
          }
          absl::StrAppend(&d, "L", Px(x_axis.Map(p.points[end - 1].x)), ",",
                          Px(base_px), "Z");
        } else {
          for (size_t i = begin; i < end; ++i) {
            absl::StrAppend(&d, i == begin ? "M" : "L",
                            Px(x_axis.Map(p.points[i].x)), ",",
                            Px(y_axis.Map(p.points[i].y)));
          }
          // A lone vertex draws as a dot (round cap on a tiny segment).
          if (end - begin == 1) absl::StrAppend(&d, "h0.1");
        }
      }
      absl::StrAppend(&out, "<path class=\"series\" data-points=\"",
                      p.points.size(), "\" d=\"", d, "\"");
      if (s.style == SeriesStyle::kArea) {
        absl::StrAppend(&out, " fill=\"", color,
                        "\" fill-opacity=\"0.3\" stroke=\"", color,
                        "\" stroke-width=\"1\"");
      } else {
        absl::StrAppend(&out, " fill=\"none\" stroke=\"", color,
                        "\" stroke-width=\"1.8\" stroke-linejoin=\"round\" "
                        "stroke-linecap=\"round\"");
      }
      if (s.dashed) absl::StrAppend(&out, " stroke-dasharray=\"6 4\"");
      absl::StrAppend(&out, "><title>", name.empty() ? "series" : name,
                      "</title></path>");
    }
    if (s.style == SeriesStyle::kBars) {
      for (const Point& pt : p.points) {
        const double px = x_axis.Map(pt.x) + offset - bar_w / 2;
        const double py = y_axis.Map(pt.y);
        double y0 = std::min(py, base_px);
        double h = std::fabs(py - base_px);
        if (h < 1) {  // a zero bar still shows as a hairline
          h = 1;
          y0 = base_px - 0.5;
        }
        const std::string label =
            pt.label.empty() ? DefaultLabel(options, pt) : pt.label;
        absl::StrAppend(&out, "<rect class=\"bar\" x=\"", Px(px), "\" y=\"",
                        Px(y0), "\" width=\"", Px(std::max(1.0, bar_w - 1)),
                        "\" height=\"", Px(h), "\" fill=\"", color,
                        "\" fill-opacity=\"0.85\"><title>",
                        name.empty() ? "" : absl::StrCat(name, ": "),
                        HtmlEscape(label), "</title></rect>");
      }
    }
    // Error bars: on top of bars and lines, under point markers.
    draw_errors(p, offset);
    if (s.style == SeriesStyle::kPoints) {
      for (const Point& pt : p.points) {
        const std::string label =
            pt.label.empty() ? DefaultLabel(options, pt) : pt.label;
        absl::StrAppend(&out, "<circle class=\"pt\" cx=\"",
                        Px(x_axis.Map(pt.x)), "\" cy=\"", Px(y_axis.Map(pt.y)),
                        "\" r=\"", kMarkerRadius, "\" fill=\"",
                        s.hollow ? "#ffffff" : color, "\" stroke=\"", color,
                        "\" stroke-width=\"1.5\"><title>",
                        name.empty() ? "" : absl::StrCat(name, ": "),
                        HtmlEscape(label), "</title></circle>");
      }
    }
    absl::StrAppend(&out, "</g>");
  }
  absl::StrAppend(&out, "</svg>");
  return out;
}

std::string RenderSvgDocument(const ChartOptions& options,
                              const std::vector<Series>& series) {
  std::string svg = RenderSvgChart(options, series);
  // The chart element keeps class first; xmlns goes right after the tag
  // name's attributes (before the first '>').
  const size_t end = svg.find('>');
  std::string doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  doc.reserve(svg.size() + 128);
  absl::StrAppend(&doc, svg.substr(0, end),
                  " xmlns=\"http://www.w3.org/2000/svg\"", svg.substr(end),
                  "\n");
  return doc;
}

}  // namespace ristretto::report
