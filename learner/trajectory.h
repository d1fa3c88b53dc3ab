// TrajectoryChunk: T steps × B env copies of experience from one policy
// version, the unit actors send and the learner trains on. Plain arrays (no
// torch) so actors, the wire codec and tests share it.
// Not thread-safe; moved between threads by value.
#ifndef RISTRETTO_LEARNER_TRAJECTORY_H_
#define RISTRETTO_LEARNER_TRAJECTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ristretto::learner {

struct TrajectoryChunk {
  std::string run_id;
  std::string actor_id;
  int64_t policy_version = 0;  // version of the weights that acted
  int steps = 0;               // T
  int copies = 0;              // B
  int obs_size = 0;            // D
  int action_size = 0;         // A
  // (T + 1) × B × D: observations before each step, then the bootstrap
  // observation after the last step (row T).
  std::vector<float> obs;
  std::vector<float> actions;    // T × B × A, pre-tanh (u)
  std::vector<float> log_probs;  // T × B, behaviour log π(a|s)
  std::vector<float> rewards;    // T × B
  std::vector<uint8_t> dones;    // T × B, 1 where the episode ended
  // Terminal observation of every ended episode, in (t, b) row-major order
  // of the dones (one D-vector per 1 in `dones`): V(final) bootstraps the
  // truncated episode.
  std::vector<float> final_obs;

  int64_t num_samples() const { return int64_t{steps} * copies; }
  int64_t num_dones() const;
  // Checks every size against (T, B, D, A) and that all values are finite.
  // Errors: kInvalidArgument naming the field and the first bad index.
  absl::Status Validate() const;
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TRAJECTORY_H_
