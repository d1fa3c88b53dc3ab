#include "coordinator/core/pruner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ristretto::coordinator {
namespace {

// Reports of one trial: fold -> step -> value (a later duplicate wins).
using FoldSeries = std::map<int, std::map<int64_t, double>>;

std::map<int64_t, FoldSeries> GroupByTrial(
    const std::vector<IntermediateValue>& all) {
  std::map<int64_t, FoldSeries> trials;
  for (const IntermediateValue& v : all) {
    if (!std::isfinite(v.value)) continue;
    trials[v.trial_id][v.fold][v.step] = v.value;
  }
  return trials;
}

int64_t LatestStep(const FoldSeries& folds) {
  int64_t latest = -1;
  for (const auto& [fold, series] : folds) {
    if (!series.empty()) latest = std::max(latest, series.rbegin()->first);
  }
  return latest;
}

// Mean over folds of each fold's latest report at a step <= s.
bool ValueAtStep(const FoldSeries& folds, int64_t s, double* out) {
  double sum = 0;
  int n = 0;
  for (const auto& [fold, series] : folds) {
    auto it = series.upper_bound(s);
    if (it == series.begin()) continue;
    sum += std::prev(it)->second;
    ++n;
  }
  if (n == 0) return false;
  *out = sum / n;
  return true;
}

// Mean over folds of each fold's first report at a step >= r.
bool ValueAtRung(const FoldSeries& folds, int64_t r, double* out) {
  double sum = 0;
  int n = 0;
  for (const auto& [fold, series] : folds) {
    auto it = series.lower_bound(r);
    if (it == series.end()) continue;
    sum += it->second;
    ++n;
  }
  if (n == 0) return false;
  *out = sum / n;
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

class NonePruner : public Pruner {
 public:
  bool ShouldPrune(int64_t,
                   const std::vector<IntermediateValue>&) const override {
    return false;
  }
};

class MedianPruner : public Pruner {
 public:
  explicit MedianPruner(PrunerSpec spec) : spec_(std::move(spec)) {}

  bool ShouldPrune(int64_t trial_id,
                   const std::vector<IntermediateValue>& all) const override {
    const std::map<int64_t, FoldSeries> trials = GroupByTrial(all);
    auto self = trials.find(trial_id);
    if (self == trials.end()) return false;
    const int64_t s = LatestStep(self->second);
    if (s < spec_.warmup_steps) return false;
    double value = 0;
    if (!ValueAtStep(self->second, s, &value)) return false;
    std::vector<double> others;
    for (const auto& [id, folds] : trials) {
      if (id == trial_id || LatestStep(folds) < s) continue;
      double v = 0;
      if (ValueAtStep(folds, s, &v)) others.push_back(v);
    }
    if (static_cast<int>(others.size()) < spec_.min_trials) return false;
    return value < Median(std::move(others));
  }

 private:
  const PrunerSpec spec_;
};

class AshaPruner : public Pruner {
 public:
  explicit AshaPruner(PrunerSpec spec) : spec_(std::move(spec)) {}

  bool ShouldPrune(int64_t trial_id,
                   const std::vector<IntermediateValue>& all) const override {
    const std::map<int64_t, FoldSeries> trials = GroupByTrial(all);
    auto self = trials.find(trial_id);
    if (self == trials.end()) return false;
    const int64_t s = LatestStep(self->second);
    if (s < spec_.warmup_steps) return false;
    // Highest rung reached: rung k at min_resource · η^k (rounded down).
    int64_t rung = -1;
    for (double r = static_cast<double>(spec_.min_resource);
         r <= static_cast<double>(s); r *= spec_.reduction_factor) {
      rung = static_cast<int64_t>(r);
    }
    if (rung < 0) return false;
    double value = 0;
    if (!ValueAtRung(self->second, rung, &value)) return false;
    std::vector<double> values = {value};
    for (const auto& [id, folds] : trials) {
      if (id == trial_id) continue;
      double v = 0;
      if (ValueAtRung(folds, rung, &v)) values.push_back(v);
    }
    if (static_cast<int>(values.size()) - 1 < spec_.min_trials) return false;
    const size_t keep = std::max<size_t>(
        1, static_cast<size_t>(std::floor(static_cast<double>(values.size()) /
                                          spec_.reduction_factor)));
    std::sort(values.begin(), values.end(), std::greater<double>());
    return value < values[keep - 1];
  }

 private:
  const PrunerSpec spec_;
};

}  // namespace

std::optional<double> JudgedValue(int64_t trial_id,
                                  const std::vector<IntermediateValue>& values,
                                  int64_t* step) {
  const std::map<int64_t, FoldSeries> trials = GroupByTrial(values);
  auto self = trials.find(trial_id);
  if (self == trials.end()) return std::nullopt;
  const int64_t s = LatestStep(self->second);
  double value = 0;
  if (s < 0 || !ValueAtStep(self->second, s, &value)) return std::nullopt;
  *step = s;
  return value;
}

absl::StatusOr<std::unique_ptr<Pruner>> MakePruner(const PrunerSpec& spec) {
  if (spec.warmup_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pruner warmup_steps = ", spec.warmup_steps, " must be >= 0"));
  }
  if (spec.min_trials < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pruner min_trials = ", spec.min_trials, " must be >= 1"));
  }
  if (spec.type == "none") return std::make_unique<NonePruner>();
  if (spec.type == "median") return std::make_unique<MedianPruner>(spec);
  if (spec.type == "asha") {
    if (!(spec.reduction_factor > 1) || !std::isfinite(spec.reduction_factor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pruner reduction_factor = ", spec.reduction_factor, " must be > 1"));
    }
    if (spec.min_resource <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pruner min_resource = ", spec.min_resource, " must be > 0"));
    }
    return std::make_unique<AshaPruner>(spec);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown pruner type '", spec.type, "' (expected none, median or asha)"));
}

}  // namespace ristretto::coordinator
