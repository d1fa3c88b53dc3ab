// Sampler: proposes the parameters of a study's next trial from the trials
// so far. Random search and TPE (tree-structured Parzen estimator, Bergstra
// et al. 2011; independent per-parameter and multivariate joint forms, as in
// Optuna). Scores are maximised.
//
// Deterministic: Sample() depends only on (spec, space, trial_number,
// history) — never on call order or wall time — so a restarted coordinator
// re-samples a trial identically. Samplers are immutable after creation and
// thread-safe.
#ifndef RISTRETTO_COORDINATOR_CORE_SAMPLER_H_
#define RISTRETTO_COORDINATOR_CORE_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/core/search_space.h"
#include "coordinator/store/states.h"

namespace ristretto::coordinator {

struct SamplerSpec {
  std::string type = "tpe";  // "random" | "tpe"
  uint64_t seed = 1;
  // TPE: trials sampled at random until this many trials have finished
  // (complete or pruned), >= 0.
  int startup_trials = 10;
  // TPE: model the unconditional parameters jointly (one kernel per trial
  // over all of them) instead of one estimator per parameter. Conditional
  // parameters are always modelled one by one.
  bool multivariate = false;
  // TPE: candidates drawn from the good-trial density per proposal; the one
  // with the highest good/bad density ratio is chosen. >= 1.
  int candidates = 24;
};

// One earlier trial as the sampler sees it.
struct TrialHistory {
  int64_t number = 0;  // 0, 1, 2, … within the study
  Params params;
  TrialState state = TrialState::kRunning;
  std::optional<double> score;  // complete trials: the objective (maximised)
};

class Sampler {
 public:
  virtual ~Sampler() = default;

  // Returns the parameters of trial `trial_number`: a value for every active
  // parameter of the space (conditional ones only when active), as
  // canonical text inside its range/choices. `history` may be in any order;
  // running and failed trials are ignored, pruned trials count among the
  // bad ones, a complete trial without a finite score is ignored, and
  // history values outside the space (an edited study) are skipped.
  // Errors: none for a valid space (the StatusOr leaves room for samplers
  // that consult a service).
  virtual absl::StatusOr<Params> Sample(
      int64_t trial_number, const std::vector<TrialHistory>& history) = 0;
};

// Creates the sampler of `spec` over `space`.
// Errors (kInvalidArgument): unknown type, startup_trials < 0,
// candidates < 1, or a space that ValidateSpace refuses.
absl::StatusOr<std::unique_ptr<Sampler>> MakeSampler(
    const SamplerSpec& spec, const std::vector<ParamSpec>& space);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_SAMPLER_H_
