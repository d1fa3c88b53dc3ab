#include "learner/objective.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ristretto::learner {

const std::vector<std::string>& ObjectiveNames() {
  static const auto* names = new std::vector<std::string>{
      kSharpeObjective, kSortinoObjective, kExcessSharpeObjective,
      kCalmarObjective, kReturnObjective};
  return *names;
}

absl::Status CheckObjective(absl::string_view name) {
  for (const std::string& n : ObjectiveNames()) {
    if (n == name) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown objective '", name,
      "' (expected one of: ", absl::StrJoin(ObjectiveNames(), ", "), ")"));
}

double ObjectiveValue(absl::string_view objective, const EvaluationResult& e) {
  if (objective == kSharpeObjective) return e.sharpe;
  if (objective == kSortinoObjective) return e.sortino;
  if (objective == kExcessSharpeObjective) {
    return e.sharpe - e.benchmark_sharpe;
  }
  if (objective == kCalmarObjective) return e.calmar;
  if (objective == kReturnObjective) return e.total_return;
  return std::numeric_limits<double>::quiet_NaN();
}

double TrialObjective(absl::string_view objective,
                      const std::vector<EvaluationResult>& folds) {
  if (folds.empty() || !CheckObjective(objective).ok()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const double n = static_cast<double>(folds.size());
  double sum = 0;
  for (const EvaluationResult& f : folds) sum += ObjectiveValue(objective, f);
  double score = sum / n;
  if (objective == kExcessSharpeObjective) {
    double mean = 0;
    for (const EvaluationResult& f : folds) mean += f.sharpe / n;
    double var = 0;
    for (const EvaluationResult& f : folds) {
      var += (f.sharpe - mean) * (f.sharpe - mean);
    }
    score -= 0.1 * std::sqrt(var / n);
  }
  return score;
}

}  // namespace ristretto::learner
