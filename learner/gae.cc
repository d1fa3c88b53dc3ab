#include "learner/gae.h"

#include <cstddef>
#include <cstdlib>

#include "common/log.h"

namespace ristretto::learner {
namespace {

// Sizes come from a validated TrajectoryChunk, so a mismatch is a bug in the
// caller: fail loudly (the core library has no glog CHECK).
void CheckOrDie(bool ok, const char* what) {
  if (ok) return;
  RLOG(ERROR) << "ComputeGae: " << what;
  std::abort();
}

}  // namespace

GaeResult ComputeGae(int steps, int copies, absl::Span<const float> rewards,
                     absl::Span<const float> values,
                     absl::Span<const float> next_values,
                     absl::Span<const uint8_t> dones,
                     absl::Span<const float> final_values, double gamma,
                     double lambda, bool bootstrap_truncation) {
  CheckOrDie(steps >= 0 && copies >= 0, "negative steps or copies");
  const size_t b_count = static_cast<size_t>(copies);
  const size_t n = static_cast<size_t>(steps) * b_count;
  CheckOrDie(rewards.size() == n, "rewards must hold steps * copies values");
  CheckOrDie(values.size() == n, "values must hold steps * copies values");
  CheckOrDie(dones.size() == n, "dones must hold steps * copies values");
  CheckOrDie(next_values.size() == b_count,
             "next_values must hold copies values");

  // Index of each done in row-major (t, b) order: final_values[k] belongs
  // to the k-th done. Without bootstrapping final_values is unused and may
  // be empty.
  std::vector<size_t> done_index(n, 0);
  size_t num_dones = 0;
  for (size_t i = 0; i < n; ++i) {
    if (dones[i] != 0) done_index[i] = num_dones++;
  }
  CheckOrDie(final_values.size() == num_dones ||
                 (!bootstrap_truncation && final_values.empty()),
             "final_values must hold one value per done");

  GaeResult result;
  result.advantages.assign(n, 0.0f);
  result.returns.assign(n, 0.0f);
  const double gl = gamma * lambda;
  for (size_t b = 0; b < b_count; ++b) {
    double next_advantage = 0.0;         // A_{t+1}
    double next_value = next_values[b];  // V(s_{t+1})
    for (size_t t = static_cast<size_t>(steps); t-- > 0;) {
      const size_t i = t * b_count + b;
      const double value = values[i];
      double advantage;
      if (dones[i] != 0) {
        // Truncated episode: s_{t+1} belongs to the next episode, so the
        // recursion stops here and V(final obs) stands in for it.
        double delta = double{rewards[i]} - value;
        if (bootstrap_truncation) {
          delta += gamma * double{final_values[done_index[i]]};
        }
        advantage = delta;
      } else {
        const double delta = double{rewards[i]} + gamma * next_value - value;
        advantage = delta + gl * next_advantage;
      }
      result.advantages[i] = static_cast<float>(advantage);
      result.returns[i] = static_cast<float>(advantage + value);
      next_advantage = advantage;
      next_value = value;
    }
  }
  return result;
}

}  // namespace ristretto::learner
