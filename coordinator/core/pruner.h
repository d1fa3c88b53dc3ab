// Pruner: decides from intermediate validation scores whether a running
// trial should stop early. None, median (Optuna's MedianPruner) and ASHA /
// successive halving over rungs of env steps. Scores are maximised.
// Pruners are immutable after creation and thread-safe.
//
// A trial's value at a step. Each fold (run) of a trial reports its own
// values at the env steps where it was evaluated, and folds progress at
// different speeds, so a trial's value is combined from its folds:
//   * at step s (median): the mean, over the trial's folds that have a
//     report at a step <= s, of each fold's latest such report;
//   * at rung step r (ASHA): the mean, over the trial's folds that have a
//     report at a step >= r, of each fold's first such report (the value it
//     had when it crossed the rung).
// Reports at identical (trial, fold, step) keep the last one in the list.
#ifndef RISTRETTO_COORDINATOR_CORE_PRUNER_H_
#define RISTRETTO_COORDINATOR_CORE_PRUNER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ristretto::coordinator {

struct PrunerSpec {
  std::string type = "none";  // "none" | "median" | "asha"
  // No trial is pruned before its latest report reaches this many env
  // steps, >= 0.
  int64_t warmup_steps = 0;
  // No trial is pruned unless at least this many OTHER trials have a value
  // to compare with (at the step, or at the rung), >= 1.
  int min_trials = 3;
  // ASHA: rung k is at min_resource · reduction_factor^k env steps, and
  // about 1/reduction_factor of the trials at a rung go on. > 1.
  double reduction_factor = 3;
  // ASHA: env steps of the first rung, > 0 (the study parser fills in the
  // study's eval_every_env_steps when left at 0).
  int64_t min_resource = 0;
};

// One intermediate validation score of one fold of a trial.
struct IntermediateValue {
  int64_t trial_id = 0;
  int fold = 0;
  int64_t step = 0;  // env steps trained when evaluated
  double value = 0;  // validation score, higher is better
};

class Pruner {
 public:
  virtual ~Pruner() = default;

  // True if trial `trial_id` should stop, judged from `all`: every
  // intermediate value of the study so far (any order; this trial's among
  // them; every trial other than `trial_id` that appears is a comparison
  // trial, whatever its state). A trial with no value is never pruned.
  //   none:   never.
  //   median: with s the trial's latest step (>= warmup_steps), prune if its
  //           value at s is strictly below the median of the values at s of
  //           the other trials that have reported at or beyond s (at least
  //           min_trials of them).
  //   asha:   with k the highest rung the trial's latest step has reached
  //           (and >= warmup_steps), take the n trials that have reached
  //           rung k (this one included; at least min_trials others); keep
  //           the best max(1, ⌊n / reduction_factor⌋) of their rung-k values
  //           and prune the trial if its value is strictly below all kept
  //           ones. A trial is judged at its highest rung against every trial
  //           that has reached that rung so far.
  virtual bool ShouldPrune(int64_t trial_id,
                           const std::vector<IntermediateValue>& all) const = 0;
};

// The value the median pruner judges a trial by: at the trial's latest
// step s, the mean over its folds that have a report at a step <= s of each
// fold's latest such report (see the top of this file). `values`: the
// trial's own reports (others are ignored, as are non-finite values); sets
// `*step` to s. nullopt when the trial has no finite report.
std::optional<double> JudgedValue(int64_t trial_id,
                                  const std::vector<IntermediateValue>& values,
                                  int64_t* step);

// Errors (kInvalidArgument): unknown type, warmup_steps < 0,
// min_trials < 1; asha: reduction_factor <= 1 or min_resource <= 0.
absl::StatusOr<std::unique_ptr<Pruner>> MakePruner(const PrunerSpec& spec);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_PRUNER_H_
