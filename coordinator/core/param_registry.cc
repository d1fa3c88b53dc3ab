#include "coordinator/core/param_registry.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/options_schema.h"
#include "common/text_util.h"

namespace ristretto::coordinator {
namespace {

std::string Text(std::string_view s) { return std::string(s); }

OptionType RegistryType(ristretto::OptionType t) {
  switch (t) {
    case ristretto::OptionType::kFloat:
      return OptionType::kDouble;
    case ristretto::OptionType::kInt:
      return OptionType::kInt;
    case ristretto::OptionType::kBool:
      return OptionType::kBool;
    case ristretto::OptionType::kChoice:
      return OptionType::kEnum;
  }
  return OptionType::kDouble;
}

// The study-visible part of the schema (OptionSpec::searchable), in schema
// order.
std::vector<ParamInfo> BuildParams() {
  std::vector<ParamInfo> out;
  for (const OptionSpec& spec : kOptionSchema) {
    if (!spec.searchable) continue;
    ParamInfo info;
    info.name = Text(spec.name);
    info.type = RegistryType(spec.type);
    info.target = Text(spec.target);
    info.doc = Text(spec.doc);
    for (std::string_view c : OptionChoices(spec)) info.values.emplace_back(c);
    info.read_when = Text(spec.read_when);
    if (!spec.read_when.empty()) {
      for (absl::string_view v :
           absl::StrSplit(absl::string_view(spec.read_when_values.data(),
                                            spec.read_when_values.size()),
                          '|')) {
        info.read_when_values.emplace_back(v);
      }
    }
    info.read_when_reason = Text(spec.read_when_reason);
    out.push_back(std::move(info));
  }
  return out;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<ParamInfo>& AllParams() {
  static const std::vector<ParamInfo>* params =
      new std::vector<ParamInfo>(BuildParams());
  return *params;
}

const ParamInfo* FindParam(const std::string& name) {
  for (const ParamInfo& p : AllParams()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

absl::Status UnknownParamError(const std::string& name) {
  std::string best;
  size_t best_distance = 3;  // suggest only close names
  for (const ParamInfo& p : AllParams()) {
    // A long name is not a typo of a short one: skip the quadratic distance.
    if (name.size() > 64) break;
    const size_t d = EditDistance(name, p.name);
    if (d < best_distance) {
      best_distance = d;
      best = p.name;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown parameter '", EscapeForMessage(name), "'",
      best.empty() ? "" : absl::StrCat(" (did you mean '", best, "'?)")));
}

absl::Status ApplyParam(const std::string& name, const std::string& value,
                        learner::TrainerOptions* o) {
  if (FindParam(name) == nullptr) return UnknownParamError(name);
  absl::Status s = learner::SetRunOption(name, value, o);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat("parameter ", s.message()));
}

absl::StatusOr<std::string> GetParam(const std::string& name,
                                     const learner::TrainerOptions& o) {
  if (FindParam(name) == nullptr) return UnknownParamError(name);
  return learner::GetRunOption(name, o);
}

}  // namespace ristretto::coordinator
