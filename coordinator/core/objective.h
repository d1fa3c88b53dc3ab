// The trial objective (system.md, "Trials and evaluation"): how the
// validation results of a trial's folds become one score to maximise.
// Pure functions; thread-safe.
#ifndef RISTRETTO_COORDINATOR_CORE_OBJECTIVE_H_
#define RISTRETTO_COORDINATOR_CORE_OBJECTIVE_H_

#include <string>
#include <vector>

namespace ristretto::coordinator {

// The study-file name of the objective below (the only one so far).
inline constexpr char kExcessSharpeObjective[] = "excess_sharpe";

// One fold's validation result (learner::EvaluationResult).
struct FoldScore {
  double sharpe = 0;            // the bot's annualised Sharpe
  double benchmark_sharpe = 0;  // equal-weight buy and hold, same slices
};

// Returns mean(sharpe) − mean(benchmark_sharpe) − 0.1·std(sharpe) over the
// folds, where std is the POPULATION standard deviation (divide by the
// number of folds, as numpy.std, the original's), so one fold has std 0.
// Returns NaN for no folds (a trial without results has no score).
double TrialScore(const std::vector<FoldScore>& folds);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_OBJECTIVE_H_
