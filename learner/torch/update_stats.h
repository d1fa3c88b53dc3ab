// UpdateStats: what one PPO update (PpoLearner::Update) reports. Plain
// numbers, no torch, so that headers other components include (the trainer,
// the learner service) can carry them without pulling LibTorch in.
#ifndef RISTRETTO_LEARNER_TORCH_UPDATE_STATS_H_
#define RISTRETTO_LEARNER_TORCH_UPDATE_STATS_H_

#include <cstdint>

namespace ristretto::learner {

struct UpdateStats {
  double policy_loss = 0;    // mean clipped-surrogate loss (to minimise)
  double value_loss = 0;     // mean value loss
  double entropy = 0;        // mean policy entropy
  double approx_kl = 0;      // mean (ratio − 1) − log ratio, last epoch
  double clip_fraction = 0;  // share of samples with |ratio − 1| > ε
  double grad_norm = 0;      // mean pre-clip gradient norm
  double explained_variance = 0;
  double learning_rate = 0;
  int64_t samples_trained = 0;  // env steps used by this update
  int64_t samples_dropped = 0;  // env steps in stale chunks
  int64_t chunks_dropped = 0;
  int64_t gradient_steps = 0;
  int64_t policy_version = 0;  // version after the update
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_UPDATE_STATS_H_
