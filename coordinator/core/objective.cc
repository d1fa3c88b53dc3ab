#include "coordinator/core/objective.h"

#include <cmath>
#include <limits>

namespace ristretto::coordinator {

double TrialScore(const std::vector<FoldScore>& folds) {
  if (folds.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(folds.size());
  double bot = 0, bench = 0;
  for (const FoldScore& f : folds) {
    bot += f.sharpe;
    bench += f.benchmark_sharpe;
  }
  bot /= n;
  bench /= n;
  double var = 0;
  for (const FoldScore& f : folds) var += (f.sharpe - bot) * (f.sharpe - bot);
  return bot - bench - 0.1 * std::sqrt(var / n);
}

}  // namespace ristretto::coordinator
