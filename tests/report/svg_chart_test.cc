#include "report/svg_chart.h"

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A series with its name, points and style (the rest default).
Series Make(std::string name, std::vector<double> x, std::vector<double> y,
            SeriesStyle style = SeriesStyle::kLine) {
  Series s;
  s.name = std::move(name);
  s.x = std::move(x);
  s.y = std::move(y);
  s.style = style;
  return s;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// What browser_check.sh recounts: .pt circles + .bar rects + the vertices
// every .series path declares.
int Drawn(const std::string& svg) {
  int drawn = Count(svg, "class=\"pt\"") + Count(svg, "class=\"bar\"");
  const std::regex series("class=\"series\" data-points=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), series);
       it != std::sregex_iterator(); ++it) {
    drawn += std::stoi((*it)[1].str());
  }
  return drawn;
}

int Declared(const std::string& svg) {
  const std::regex head(
      "^<svg class=\"chart\" data-chart=\"[a-z0-9_-]+\" "
      "data-points=\"([0-9]+)\"");
  std::smatch m;
  if (!std::regex_search(svg, m, head)) return -1;
  return std::stoi(m[1].str());
}

TEST(SvgChartTest, DeclaredPointsMatchWhatIsDrawnForEveryStyle) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Series line = Make("line", {0, 1, 2, 3, 4}, {1, 2, nan, 4, 5});
  Series points = Make("pts", {0, 1, 2}, {0.5, inf, 1.5});
  points.style = SeriesStyle::kPoints;
  points.y_error = {0.1, 0.1, 0.2};
  Series hollow = Make("pruned", {1.5}, {-1});
  hollow.style = SeriesStyle::kPoints;
  hollow.hollow = true;
  Series bars = Make("bars", {0, 1, 2, 3}, {1, -2, 3, nan});
  bars.style = SeriesStyle::kBars;
  Series area = Make("dd", {0, 1, 2}, {0, -0.1, -0.05});
  area.style = SeriesStyle::kArea;
  ChartOptions options;
  options.id = "mixed";
  options.title = "Mixed";
  const std::string svg =
      RenderSvgChart(options, {line, points, hollow, bars, area});
  // 4 line vertices (NaN skipped) + 2 points (inf skipped) + 1 hollow +
  // 3 bars (NaN skipped) + 3 area vertices.
  EXPECT_EQ(Declared(svg), 13);
  EXPECT_EQ(Drawn(svg), 13);
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 6);
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
  // Error bars drawn for the 2 finite points (stem + 2 caps each).
  EXPECT_EQ(Count(svg, "class=\"err\""), 6);
  // Hollow marker: white fill.
  EXPECT_THAT(svg, HasSubstr("fill=\"#ffffff\" stroke="));
}

TEST(SvgChartTest, EmptyChartSaysNoDataAndDeclaresZero) {
  ChartOptions options;
  options.id = "empty";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string svg = RenderSvgChart(options, {Make("s", {1}, {nan})});
  EXPECT_EQ(Declared(svg), 0);
  EXPECT_EQ(Drawn(svg), 0);
  EXPECT_THAT(svg, HasSubstr("no data"));
}

TEST(SvgChartTest, LogAxisSkipsNonPositiveX) {
  Series s = Make("lr", {1e-5, 3e-4, 0, -1, 1e-3}, {1, 2, 3, 4, 5});
  s.style = SeriesStyle::kPoints;
  ChartOptions options;
  options.id = "log";
  options.x_log = true;
  const std::string svg = RenderSvgChart(options, {s});
  EXPECT_EQ(Declared(svg), 3);
  EXPECT_EQ(Drawn(svg), 3);
  // Decade ticks.
  EXPECT_THAT(svg, HasSubstr(">1e-5<"));
  EXPECT_THAT(svg, HasSubstr(">0.001<"));
}

TEST(SvgChartTest, IntegerAxisTicksOnlyWholeNumbers) {
  Series s = Make("trials", {0, 1, 2, 3}, {1, 2, 3, 4}, SeriesStyle::kPoints);
  ChartOptions options;
  options.id = "int";
  options.x_integer = true;
  const std::string svg = RenderSvgChart(options, {s});
  EXPECT_THAT(svg, Not(HasSubstr(">0.5<")));
  EXPECT_THAT(svg, HasSubstr(">3<"));
  options.x_integer = false;
  EXPECT_THAT(RenderSvgChart(options, {s}), HasSubstr(">0.5<"));
}

TEST(SvgChartTest, NarrowLogAxisGetsOneTwoFiveTicks) {
  Series s = Make("lr", {5e-4, 1e-3, 3e-3}, {1, 2, 3}, SeriesStyle::kPoints);
  ChartOptions options;
  options.id = "narrow";
  options.x_log = true;
  const std::string svg = RenderSvgChart(options, {s});
  EXPECT_THAT(svg, HasSubstr(">0.001<"));
  EXPECT_THAT(svg, HasSubstr(">0.002<"));
  EXPECT_THAT(svg, Not(HasSubstr(">0.01<")));  // no empty decade
  // Narrower than one mantissa step: linear round values, at least 3.
  Series tight =
      Make("lr", {1.19e-3, 1.33e-3, 2.23e-3}, {1, 2, 3}, SeriesStyle::kPoints);
  const std::string tsvg = RenderSvgChart(options, {tight});
  const size_t axis = tsvg.find("x-axis");
  const size_t frame = tsvg.find("class=\"frame\"");
  ASSERT_NE(axis, std::string::npos);
  EXPECT_GE(Count(tsvg.substr(axis, frame - axis), "<text"), 3);
  EXPECT_THAT(tsvg, HasSubstr(">0.0014<"));
}

TEST(SvgChartTest, TimeAxisHasUtcDateTicks) {
  // 2024-01-01 00:00 UTC to 2024-01-31, daily.
  Series s = Make("equity", {}, {});
  for (int d = 0; d < 31; ++d) {
    s.x.push_back(1704067200.0 + d * 86400.0);
    s.y.push_back(1.0 + 0.01 * d);
  }
  ChartOptions options;
  options.id = "time";
  options.x_is_time = true;
  const std::string svg = RenderSvgChart(options, {s});
  EXPECT_EQ(Drawn(svg), 31);
  EXPECT_THAT(svg, HasSubstr(">2024-01-"));
  EXPECT_THAT(svg, HasSubstr("(UTC)"));
}

TEST(SvgChartTest, HostileNamesAreEscapedEverywhere) {
  Series s = Make("<script>alert(1)</script>", {0}, {1});
  s.style = SeriesStyle::kBars;
  s.labels = {"\"><img src=x onerror=alert(2)>"};
  ChartOptions options;
  options.id = "x\"><script>";
  options.title = "<script>alert(3)</script>";
  options.x_label = "a&b";
  options.x_categories = {"<b>cat</b>"};
  s.color = "red\" onload=\"alert(4)";
  const std::string svg = RenderSvgChart(options, {s});
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
  EXPECT_THAT(svg, Not(HasSubstr("<img")));
  EXPECT_THAT(svg, Not(HasSubstr("<b>")));
  EXPECT_THAT(svg, Not(HasSubstr("\" onload=")));
  EXPECT_THAT(svg, HasSubstr("&lt;script&gt;alert(3)"));
  EXPECT_THAT(svg, HasSubstr("a&amp;b"));
  EXPECT_EQ(Declared(svg), 1);
}

TEST(SvgChartTest, DocumentHasPrologAndNamespace) {
  ChartOptions options;
  options.id = "doc";
  const std::string doc =
      RenderSvgDocument(options, {Make("s", {0, 1}, {0, 1})});
  EXPECT_EQ(doc.rfind("<?xml", 0), 0U);
  EXPECT_THAT(
      doc,
      HasSubstr("<svg class=\"chart\" data-chart=\"doc\" data-points=\"2\""));
  EXPECT_THAT(doc, HasSubstr("xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(HtmlEscapeTest, EscapesMarkupAndRepairsUtf8) {
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(HtmlEscape("caf\xC3\xA9"), "caf\xC3\xA9");  // valid UTF-8 kept
  EXPECT_EQ(HtmlEscape("x\xFFy"), "x\xEF\xBF\xBDy");    // invalid byte
  EXPECT_EQ(HtmlEscape("\xC3"), "\xEF\xBF\xBD");        // truncated sequence
  EXPECT_EQ(HtmlEscape("\xED\xA0\x80"),                 // surrogate
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(NiceTicksTest, RoundStepsCoveringTheRange) {
  EXPECT_THAT(NiceTicks(0, 1, 5),
              ::testing::ElementsAre(
                  0, 0.2, 0.4, ::testing::DoubleNear(0.6, 1e-12), 0.8, 1));
  const std::vector<double> t = NiceTicks(-3.7, 12.2, 5);
  ASSERT_GE(t.size(), 3U);
  EXPECT_LE(t.front(), -3.7);
  EXPECT_GE(t.back(), 12.2);
  const double step = t[1] - t[0];
  EXPECT_DOUBLE_EQ(step, 5);
  for (size_t i = 1; i < t.size(); ++i)
    EXPECT_NEAR(t[i] - t[i - 1], step, 1e-9);
  EXPECT_LE(t.size(), 8U);
}

TEST(NiceTicksTest, DegenerateAndNonFiniteInput) {
  const std::vector<double> t = NiceTicks(2, 2, 5);
  ASSERT_GE(t.size(), 2U);
  EXPECT_LT(t.front(), 2);
  EXPECT_GT(t.back(), 2);
  EXPECT_THAT(NiceTicks(0, 0, 4), ::testing::Not(::testing::IsEmpty()));
  EXPECT_THAT(NiceTicks(std::nan(""), 1, 5), ::testing::IsEmpty());
  EXPECT_THAT(NiceTicks(0, std::numeric_limits<double>::infinity(), 5),
              ::testing::IsEmpty());
  // Reversed bounds are swapped; tiny ranges get tiny steps, no -0.
  const std::vector<double> r = NiceTicks(1e-6, -1e-6, 4);
  EXPECT_LE(r.front(), -1e-6);
  EXPECT_GE(r.back(), 1e-6);
  for (double v : r) EXPECT_FALSE(v == 0 && std::signbit(v));
}

}  // namespace
}  // namespace ristretto::report
