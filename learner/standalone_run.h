// The runs of a stand-alone ristretto-learner (no --coordinator), from its
// command line: the run options come through the run-options schema exactly
// as `ristretto train`'s do (RunOptionsFromFlags: the schema's flag names,
// defaults, ranges and help), so a run started either way, or leased from a
// study with the same options, is the same run. What only the stand-alone
// learner decides is here too: the samples per update, the validation
// share, the evaluation interval and the device. No torch; thread-safe (no
// shared state).
#ifndef RISTRETTO_LEARNER_STANDALONE_RUN_H_
#define RISTRETTO_LEARNER_STANDALONE_RUN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "learner/run_options.h"

namespace ristretto::learner {

// The stand-alone learner's flags that shape its runs.
struct StandaloneFlags {
  // The run-option flags given (learner::RunFlagNames(), name without "--"
  // -> text): ParsedCommandLine::passed_through.
  std::map<std::string, std::string> run_flags;
  // --samples-per-update; unset: num_envs x rollout_steps (--envs x
  // --rollout), the samples per update of a study's run.
  std::optional<int64_t> samples_per_update;
  // --validation-share: the last share of the rows validates, in (0, 1).
  double validation_share = 0.5;
  // --eval-every: env steps between evaluations (0: only at the end).
  int64_t eval_every = 0;
  std::string device = "cpu";  // --device
};

// The market the runs train on.
struct StandaloneData {
  int64_t num_rows = 0;
  std::string dataset_id;
  std::vector<std::string> feature_names;
};

// What every run of the learner shares: run k is `trainer` with seed
// trainer.seed + k (StandaloneRunOptions).
struct StandaloneRuns {
  TrainerOptions trainer;
  int64_t samples_per_update = 0;
};

// The checks of StandaloneRunsFromFlags that need no market: the run-option
// flags (RunOptionsFromFlags), the validation share, the samples per update
// and the evaluation interval; so a command line is refused before anything
// is loaded or written. Errors: as StandaloneRunsFromFlags.
absl::Status CheckStandaloneFlags(const StandaloneFlags& flags);

// Builds the runs' options: RunOptionsFromFlags(flags.run_flags), then the
// device, the evaluation interval, the dataset and the domains (train on
// [0, split), validate on [split, num_rows) with split = num_rows −
// ⌊validation_share · num_rows⌋). Errors (kInvalidArgument): as
// RunOptionsFromFlags; a validation share outside (0, 1); samples per update
// or eval interval below 1 / 0; a split that leaves either side empty.
absl::StatusOr<StandaloneRuns> StandaloneRunsFromFlags(
    const StandaloneFlags& flags, const StandaloneData& data);

// Run k's options (k >= 0): the shared options with seed trainer.seed + k.
// The run directory is the caller's.
TrainerOptions StandaloneRunOptions(const StandaloneRuns& runs, int64_t k);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_STANDALONE_RUN_H_
