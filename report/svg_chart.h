// Charts as inline SVG, rendered in C++ with no dependency: the study report
// (`ristretto study report`) and the backtest (`ristretto backtest`) embed
// them in self-contained HTML or write them as .svg files. Chosen over a
// JavaScript charting library because the output is deterministic, works
// from file:// with no network and no script, stays small for 200-trial
// studies, and the same code serves the HTML report and standalone SVG.
//
// Every chart is one <svg class="chart" data-chart="ID" data-points="N">
// element (class is its first attribute). Each point series draws one
// <circle class="pt"> per point (with a <title> tooltip); each line or area
// series one <path class="series" data-points="K"> (K vertices); bars draw
// one <rect class="bar"> each; error bars <line class="err"> (not counted).
// N is exactly the number of .pt circles + .bar rects + .series vertices:
// tests/integration/browser_check.sh recounts them in the DOM a real
// browser built, to prove every chart has data. Non-finite values are
// skipped (and not counted). Thread-safe: pure functions.
#ifndef RISTRETTO_REPORT_SVG_CHART_H_
#define RISTRETTO_REPORT_SVG_CHART_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ristretto::report {

enum class SeriesStyle {
  kLine,    // polyline through (x, y) in order
  kPoints,  // one marker per point
  kBars,    // one bar per point from 0 to y (x = category index or value)
  kArea,    // filled area between 0 and y (drawdowns)
};

struct Series {
  std::string name;  // legend entry; empty = no legend entry
  std::vector<double> x;
  std::vector<double> y;
  // Optional symmetric error bars (same length as y), e.g. ± 1 SE.
  std::vector<double> y_error;
  // Optional per-point tooltip text (same length as y); default "x, y".
  std::vector<std::string> labels;
  SeriesStyle style = SeriesStyle::kLine;
  std::string color;  // CSS colour; empty = the palette's next colour
  bool dashed = false;
  // kPoints: hollow markers (e.g. pruned trials) instead of filled ones.
  bool hollow = false;
};

struct ChartOptions {
  std::string id;     // data-chart attribute and element id; [a-z0-9_-]
  std::string title;  // drawn above the plot
  std::string x_label, y_label;
  int width = 720, height = 320;  // pixels
  // x values are Unix seconds: ticks are UTC dates/times.
  bool x_is_time = false;
  // x values are indices into these names (bar charts, categories).
  std::vector<std::string> x_categories;
  bool x_log = false;  // log10 x axis (x > 0 only; others are skipped)
  // x values are whole numbers (trial numbers): ticks only on integers.
  bool x_integer = false;
  // Horizontal reference line at y = 0 when 0 is inside the y range.
  bool zero_line = true;
};

// The <svg> element (no XML prolog), escaped for HTML and XML; an empty
// chart (no finite point) still renders axes and the text "no data".
std::string RenderSvgChart(const ChartOptions& options,
                           const std::vector<Series>& series);

// A standalone .svg document: the XML prolog and the xmlns attribute.
std::string RenderSvgDocument(const ChartOptions& options,
                              const std::vector<Series>& series);

// Escapes &, <, >, " and ' for HTML text and attributes, and replaces bytes
// that are not valid UTF-8 with U+FFFD.
std::string HtmlEscape(const std::string& text);

// Nice axis ticks covering [lo, hi]: about `target` round values (1, 2, 5
// × 10^k steps). lo == hi widens the range; non-finite input gives none.
std::vector<double> NiceTicks(double lo, double hi, int target = 5);

}  // namespace ristretto::report

#endif  // RISTRETTO_REPORT_SVG_CHART_H_
