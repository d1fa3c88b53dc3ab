#include "coordinator/core/search_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/options_schema.h"
#include "common/status_macros.h"

namespace ristretto::coordinator {
namespace {

absl::Status Bad(const ParamSpec& p, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("parameter ", p.name, ": ", what));
}

// The most steps a stepped range may hold (its values are sampled and
// stored as 12-digit decimals).
constexpr double kMaxSteps = 1e9;

bool IsWhole(double v) { return std::isfinite(v) && std::floor(v) == v; }

// (high − low) / step is a whole number, up to rounding of the decimals.
bool WholeSteps(double low, double high, double step) {
  const double n = (high - low) / step;
  return std::fabs(n - std::round(n)) <= 1e-9 * std::max(1.0, n);
}

absl::Status CheckNumeric(const ParamSpec& p) {
  const std::string range =
      absl::StrCat("[", FormatDouble(p.low), ", ", FormatDouble(p.high), "]");
  if (!std::isfinite(p.low) || !std::isfinite(p.high)) {
    return Bad(p, absl::StrCat("range ", range, " is not finite"));
  }
  if (!(p.low < p.high)) {
    return Bad(p, absl::StrCat("range ", range,
                               " is empty or inverted (low must be < high; "
                               "put a constant under `fixed`)"));
  }
  if (!p.choices.empty()) return Bad(p, "a numeric parameter has no choices");
  if (p.kind == ParamKind::kInt && (!IsWhole(p.low) || !IsWhole(p.high))) {
    return Bad(p, absl::StrCat("int range ", range, " has a fractional bound"));
  }
  if (p.log) {
    if (p.step.has_value()) return Bad(p, "step and log cannot be combined");
    if (p.low <= 0) {
      return Bad(p, absl::StrCat("log range ", range, " needs low > 0"));
    }
  }
  if (p.step.has_value()) {
    const double s = *p.step;
    if (!std::isfinite(s) || s <= 0) {
      return Bad(
          p, absl::StrCat("bad step ", FormatDouble(s), ": it must be > 0"));
    }
    if (p.kind == ParamKind::kInt && !IsWhole(s)) {
      return Bad(p, absl::StrCat("bad step ", FormatDouble(s),
                                 ": an int step is a whole number"));
    }
    if (s > p.high - p.low || !WholeSteps(p.low, p.high, s)) {
      return Bad(p, absl::StrCat("bad step ", FormatDouble(s), ": range ",
                                 range, " is not a whole number of steps"));
    }
    // A step so fine that the range holds more values than a search can
    // tell apart (or than the 12 significant digits a value is stored
    // with can show: low + step would read back as low) is no step.
    if ((p.high - p.low) / s > kMaxSteps ||
        FormatValue(p, p.low + s) == FormatValue(p, p.low) ||
        FormatValue(p, p.high - s) == FormatValue(p, p.high)) {
      return Bad(p, absl::StrCat("bad step ", FormatDouble(s), ": range ",
                                 range, " would hold ",
                                 FormatDouble((p.high - p.low) / s + 1),
                                 " values, more than can be told apart (at "
                                 "most ",
                                 FormatDouble(kMaxSteps + 1),
                                 "); leave the step out for a continuous "
                                 "range"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOne(const ParamSpec& p) {
  if (p.name.empty()) {
    return absl::InvalidArgumentError("a parameter has no name");
  }
  if (p.kind != ParamKind::kCategorical) return CheckNumeric(p);
  if (p.choices.empty()) return Bad(p, "empty choices");
  std::set<std::string> seen;
  for (const std::string& c : p.choices) {
    if (!seen.insert(c).second) {
      return Bad(p, absl::StrCat("choice '", c, "' appears twice"));
    }
  }
  if (p.log || p.step.has_value()) {
    return Bad(p, "a categorical parameter takes no log or step");
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatDouble(double v) { return FormatOptionNumber(v); }

std::string FormatValue(const ParamSpec& spec, double v) {
  if (spec.kind == ParamKind::kInt) {
    return absl::StrCat(static_cast<int64_t>(std::llround(v)));
  }
  if (spec.step.has_value()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.12g", v);
    return FormatDouble(std::strtod(buf, nullptr));
  }
  return FormatDouble(v);
}

bool IsActive(const ParamSpec& spec, const Params& params) {
  if (spec.parent.empty()) return true;
  auto it = params.find(spec.parent);
  if (it == params.end()) return false;
  return std::find(spec.parent_values.begin(), spec.parent_values.end(),
                   it->second) != spec.parent_values.end();
}

absl::StatusOr<std::vector<int>> SampleOrder(
    const std::vector<ParamSpec>& space) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < space.size(); ++i) {
    RETURN_IF_ERROR(CheckOne(space[i]));
    if (!index.emplace(space[i].name, static_cast<int>(i)).second) {
      return Bad(space[i], "declared twice");
    }
  }
  for (const ParamSpec& p : space) {
    if (p.parent.empty()) {
      if (!p.parent_values.empty())
        return Bad(p, "parent values need a parent");
      continue;
    }
    auto it = index.find(p.parent);
    if (it == index.end()) {
      return Bad(p, absl::StrCat("conditional on unknown parent '", p.parent,
                                 "' (not a searched parameter)"));
    }
    const ParamSpec& parent = space[it->second];
    if (parent.kind != ParamKind::kCategorical) {
      return Bad(p, absl::StrCat("conditional on '", p.parent,
                                 "', which is not categorical"));
    }
    if (p.parent_values.empty()) {
      return Bad(p, absl::StrCat("conditional on '", p.parent,
                                 "' with no parent values"));
    }
    for (const std::string& v : p.parent_values) {
      if (std::find(parent.choices.begin(), parent.choices.end(), v) ==
          parent.choices.end()) {
        return Bad(p, absl::StrCat("conditional on ", p.parent, " = '", v,
                                   "', which is not one of its choices (",
                                   absl::StrJoin(parent.choices, ", "), ")"));
      }
    }
  }
  // Depth-first from each parameter in declaration order: parents first.
  std::vector<int> order;
  std::vector<int> mark(space.size(), 0);  // 0 new, 1 on the path, 2 done
  for (size_t start = 0; start < space.size(); ++start) {
    std::vector<int> path;
    int i = static_cast<int>(start);
    while (mark[i] == 0) {
      mark[i] = 1;
      path.push_back(i);
      if (space[i].parent.empty()) break;
      i = index[space[i].parent];
      if (mark[i] == 1) {
        return Bad(space[i], "its conditions form a cycle");
      }
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      mark[*it] = 2;
      order.push_back(*it);
    }
  }
  return order;
}

absl::Status ValidateSpace(const std::vector<ParamSpec>& space) {
  return SampleOrder(space).status();
}

uint64_t HashParams(const Params& params) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
  };
  for (const auto& [name, value] : params) {
    mix(name);
    mix("=");
    mix(value);
    mix(";");
  }
  return h;
}

}  // namespace ristretto::coordinator
