#include "common/options_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace ristretto {
namespace {

const char* TypeName(OptionType t) {
  switch (t) {
    case OptionType::kFloat:
      return "float";
    case OptionType::kInt:
      return "int";
    case OptionType::kBool:
      return "bool";
    case OptionType::kChoice:
      return "choice";
  }
  return "?";
}

const char* ReaderName(OptionReader r) {
  switch (r) {
    case OptionReader::kEnv:
      return "env";
    case OptionReader::kPpo:
      return "ppo";
    case OptionReader::kRun:
      return "run";
    case OptionReader::kCoordinator:
      return "coordinator";
  }
  return "?";
}

// This Abseil's string_view is its own type: views of the table's text.
absl::string_view V(std::string_view s) { return {s.data(), s.size()}; }

// Markdown cells may not hold '|'.
std::string Cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string_view> OptionChoices(const OptionSpec& spec) {
  if (spec.choices.empty()) return {};
  std::vector<std::string_view> out;
  for (absl::string_view c : absl::StrSplit(V(spec.choices), '|')) {
    out.emplace_back(c.data(), c.size());
  }
  return out;
}

std::string FormatOptionNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // The fewest significant digits that read back to v, then Python's repr
  // layout: positional for decimal exponents in [-4, 16), else scientific.
  char buf[40];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, v);
  const int exponent = std::atoi(std::strchr(buf, 'e') + 1);
  if (exponent >= -4 && exponent < 16) {
    std::snprintf(buf, sizeof(buf), "%.*f", std::max(0, digits - 1 - exponent),
                  v);
  }
  return buf;
}

void DieUnknownRunOption(std::string_view name) {
  std::fprintf(stderr, "ristretto: unknown run option '%.*s' (a bug)\n",
               static_cast<int>(name.size()), name.data());
  std::abort();
}

std::string OptionDefaultText(const OptionSpec& spec) {
  if (spec.type == OptionType::kBool || spec.type == OptionType::kChoice) {
    const std::vector<std::string_view> choices = OptionChoices(spec);
    const size_t i = spec.type == OptionType::kBool
                         ? (spec.default_value != 0 ? 0 : 1)
                         : static_cast<size_t>(spec.default_value);
    return i < choices.size() ? std::string(choices[i]) : std::string();
  }
  return FormatOptionNumber(spec.default_value);
}

std::string OptionRangeText(const OptionSpec& spec) {
  return absl::StrCat(spec.low_open ? "(" : "[", FormatOptionNumber(spec.low),
                      ", ", FormatOptionNumber(spec.high),
                      spec.high_open ? ")" : "]");
}

bool InOptionRange(const OptionSpec& spec, double v) {
  return std::isfinite(v) && (spec.low_open ? v > spec.low : v >= spec.low) &&
         (spec.high_open ? v < spec.high : v <= spec.high);
}

absl::Status CheckOptionRange(absl::string_view component,
                              absl::string_view field, const OptionSpec& spec,
                              double v) {
  if (InOptionRange(spec, v)) return absl::OkStatus();
  const std::string head =
      absl::StrCat(component, " option ", field, " = ", FormatOptionNumber(v));
  if (spec.high == kUnbounded) {
    return absl::InvalidArgumentError(
        absl::StrCat(head, " must be ",
                     spec.low_open ? "> " : ">= ", FormatOptionNumber(spec.low),
                     spec.type == OptionType::kFloat ? " and finite" : ""));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(head, " is outside ", OptionRangeText(spec)));
}

std::string OptionsMarkdownTable() {
  std::string out =
      "| name | type | range or choices | default | unit | read by | study "
      "| flag | sets | meaning | read only when |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const OptionSpec& s : kOptionSchema) {
    const std::string range =
        s.type == OptionType::kFloat || s.type == OptionType::kInt
            ? OptionRangeText(s)
            : absl::StrReplaceAll(V(s.choices), {{"|", ", "}});
    std::string gate;
    if (!s.read_when.empty()) {
      gate = absl::StrCat(
          V(s.read_when), " ∈ {",
          absl::StrJoin(absl::StrSplit(V(s.read_when_values), '|'), ", "), "}");
    }
    absl::StrAppend(
        &out, "| `", V(s.name), "` | ", TypeName(s.type), " | ", Cell(range),
        " | ", OptionDefaultText(s), " | ", Cell(s.unit), " | ",
        ReaderName(s.reader), " | ", s.searchable ? "search, fixed" : "no",
        " | ", s.flag.empty() ? "" : absl::StrCat("`--", V(s.flag), "`"),
        " | `", Cell(s.target), "` | ", Cell(s.doc), " | ", gate, " |\n");
  }
  return out;
}

absl::StatusOr<std::string> WithGeneratedOptionsTable(absl::string_view doc) {
  auto find_line = [&](std::string_view marker_std,
                       size_t* at) -> absl::Status {
    const absl::string_view marker = V(marker_std);
    size_t found = absl::string_view::npos;
    for (size_t pos = doc.find(marker); pos != absl::string_view::npos;
         pos = doc.find(marker, pos + 1)) {
      const bool line_start = pos == 0 || doc[pos - 1] == '\n';
      const size_t end = pos + marker.size();
      const bool line_end = end == doc.size() || doc[end] == '\n';
      if (!line_start || !line_end) continue;
      if (found != absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("marker line '", marker, "' appears twice"));
      }
      found = pos;
    }
    if (found == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("marker line '", marker, "' is missing"));
    }
    *at = found;
    return absl::OkStatus();
  };
  size_t begin = 0;
  size_t end = 0;
  absl::Status s = find_line(kOptionsTableBegin, &begin);
  if (!s.ok()) return s;
  s = find_line(kOptionsTableEnd, &end);
  if (!s.ok()) return s;
  if (end < begin) {
    return absl::InvalidArgumentError(
        "the END marker of the options table comes before its BEGIN marker");
  }
  const size_t body = begin + kOptionsTableBegin.size() + 1;
  return absl::StrCat(doc.substr(0, body), OptionsMarkdownTable(),
                      doc.substr(end));
}

}  // namespace ristretto
