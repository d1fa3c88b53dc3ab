// Fixtures shared by the learner's LibTorch tests: small networks and
// options, and synthetic trajectory chunks.
#ifndef RISTRETTO_TESTS_LEARNER_TORCH_LEARNER_TEST_UTIL_H_
#define RISTRETTO_TESTS_LEARNER_TORCH_LEARNER_TEST_UTIL_H_

#include <cstdint>
#include <string>

#include "common/rng.h"
#include "learner/ppo_options.h"
#include "learner/trajectory.h"

namespace ristretto::learner::testing {

inline constexpr int kObs = 5;
inline constexpr int kActions = 2;

inline NetworkOptions SmallNetwork() {
  NetworkOptions net;
  net.policy_hidden = {16, 16};
  net.value_hidden = {16, 16};
  return net;
}

inline PpoOptions SmallPpo() {
  PpoOptions ppo;
  ppo.learning_rate = 1e-3;
  ppo.epochs = 2;
  ppo.minibatch_size = 8;
  return ppo;
}

// A T × B chunk of finite synthetic experience (A = kActions) acted by
// `version`; every fifth sample ends an episode and has a final obs.
// Observation column k is shifted by k·column_offset, so normalisation
// statistics are non-trivial when the offset is non-zero.
inline TrajectoryChunk MakeChunk(int64_t version, int steps, int copies,
                                 uint64_t seed, int obs_size = kObs,
                                 float column_offset = 0.0f) {
  Rng rng(seed);
  auto uniform = [&](double lo, double hi) {
    return static_cast<float>(lo + (hi - lo) * rng.Uniform());
  };
  TrajectoryChunk c;
  c.run_id = "run";
  c.actor_id = "actor-" + std::to_string(seed);
  c.policy_version = version;
  c.steps = steps;
  c.copies = copies;
  c.obs_size = obs_size;
  c.action_size = kActions;
  const int n = steps * copies;
  for (int i = 0; i < (steps + 1) * copies * obs_size; ++i) {
    c.obs.push_back(uniform(-2.0, 2.0) +
                    column_offset * static_cast<float>(i % obs_size));
  }
  for (int i = 0; i < n * kActions; ++i) c.actions.push_back(uniform(-1, 1));
  for (int i = 0; i < n; ++i) {
    c.log_probs.push_back(uniform(-1.2, -0.8));
    c.rewards.push_back(uniform(-0.1, 0.1));
    c.dones.push_back(i % 5 == 4 ? 1 : 0);
    if (c.dones.back()) {
      for (int d = 0; d < obs_size; ++d) c.final_obs.push_back(uniform(-2, 2));
    }
  }
  return c;
}

}  // namespace ristretto::learner::testing

#endif  // RISTRETTO_TESTS_LEARNER_TORCH_LEARNER_TEST_UTIL_H_
