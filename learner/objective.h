// The study objective: how one evaluation (a CV fold's validation, or any
// segment) becomes one number to maximise, and how a trial's folds combine.
// Shared by the learner (it keeps each run's best checkpoint by this value)
// and the coordinator (pruning, trial scores). Pure functions; no torch.
//
// Objectives (docs/study_format.md, "objective"), per fold f:
//   sharpe         S_f                       (default: cash scores 0, buy &
//                                             hold its own Sharpe)
//   sortino        Sortino_f
//   excess_sharpe  S_f − B_f                  (B_f: equal-weight buy & hold
//                                             Sharpe on the same slices)
//   calmar         Calmar_f
//   return         R_f (total return of the slice, a fraction)
// Trial score = mean over folds of the fold values; excess_sharpe also
// subtracts 0.1·std(S_f) (population std, the original's formula).
#ifndef RISTRETTO_LEARNER_OBJECTIVE_H_
#define RISTRETTO_LEARNER_OBJECTIVE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "learner/run_options.h"

namespace ristretto::learner {

inline constexpr char kSharpeObjective[] = "sharpe";
inline constexpr char kSortinoObjective[] = "sortino";
inline constexpr char kExcessSharpeObjective[] = "excess_sharpe";
inline constexpr char kCalmarObjective[] = "calmar";
inline constexpr char kReturnObjective[] = "return";
inline constexpr char kDefaultObjective[] = "sharpe";

// The objective names, in documentation order.
const std::vector<std::string>& ObjectiveNames();

// kInvalidArgument naming the known objectives if `name` is not one.
absl::Status CheckObjective(absl::string_view name);

// The fold value of `e` under `objective` (see the table above). An unknown
// objective returns NaN (CheckObjective first).
double ObjectiveValue(absl::string_view objective, const EvaluationResult& e);

// Mean of the fold values (excess_sharpe: minus 0.1·population std of the
// fold Sharpes). NaN for no folds or an unknown objective.
double TrialObjective(absl::string_view objective,
                      const std::vector<EvaluationResult>& folds);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_OBJECTIVE_H_
