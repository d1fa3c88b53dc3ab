// Generalised advantage estimation over a T × B block of experience.
// Pure arithmetic on floats; thread-compatible.
#ifndef RISTRETTO_LEARNER_GAE_H_
#define RISTRETTO_LEARNER_GAE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace ristretto::learner {

// Inputs are T × B row-major (row t = step t of all copies).
//   values[t·B + b]       V(s_t)
//   next_values[b]        V(s_T): bootstrap after the last step
//   final_values[k]       V(final obs) of the k-th done (row-major order)
//   rewards, dones        per step
// With done at (t, b) the episode was truncated (time limit): when
// `bootstrap_truncation`, δ = r + γ·V(final) − V(s_t), otherwise δ = r −
// V(s_t) (the original's estimate); the recursion never crosses it:
//   A_t = δ_t + γλ·(1 − done_t)·A_{t+1},   return_t = A_t + V(s_t).
struct GaeResult {
  std::vector<float> advantages;  // T × B
  std::vector<float> returns;     // T × B
};

GaeResult ComputeGae(int steps, int copies, absl::Span<const float> rewards,
                     absl::Span<const float> values,
                     absl::Span<const float> next_values,
                     absl::Span<const uint8_t> dones,
                     absl::Span<const float> final_values, double gamma,
                     double lambda, bool bootstrap_truncation);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_GAE_H_
