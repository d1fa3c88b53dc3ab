#include "learner/standalone_run.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ristretto::learner {
namespace {

// Everything but the market's part.
absl::StatusOr<StandaloneRuns> FromFlagsAlone(const StandaloneFlags& flags) {
  if (!(flags.validation_share > 0 && flags.validation_share < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--validation-share must be in (0, 1), got ", flags.validation_share));
  }
  if (flags.eval_every < 0) {
    return absl::InvalidArgumentError("--eval-every must be >= 0");
  }
  StandaloneRuns runs;
  ASSIGN_OR_RETURN(runs.trainer, RunOptionsFromFlags(flags.run_flags));
  TrainerOptions& o = runs.trainer;
  runs.samples_per_update =
      flags.samples_per_update.value_or(int64_t{o.num_envs} * o.rollout_steps);
  if (runs.samples_per_update < 1) {
    return absl::InvalidArgumentError("--samples-per-update must be >= 1");
  }
  o.ppo.device = flags.device;
  o.eval_every_env_steps = flags.eval_every;
  return runs;
}

}  // namespace

absl::Status CheckStandaloneFlags(const StandaloneFlags& flags) {
  return FromFlagsAlone(flags).status();
}

absl::StatusOr<StandaloneRuns> StandaloneRunsFromFlags(
    const StandaloneFlags& flags, const StandaloneData& data) {
  ASSIGN_OR_RETURN(StandaloneRuns runs, FromFlagsAlone(flags));
  TrainerOptions& o = runs.trainer;
  o.dataset_id = data.dataset_id;
  o.feature_names = data.feature_names;
  const int64_t rows = data.num_rows;
  const int64_t split = rows - static_cast<int64_t>(flags.validation_share *
                                                    static_cast<double>(rows));
  if (split < 1 || split >= rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("--validation-share ", flags.validation_share, " of ",
                     rows, " rows leaves no training or no validation rows"));
  }
  o.train_domains = {env::Domain{0, split}};
  o.validation_domains = {env::Domain{split, rows}};
  return runs;
}

TrainerOptions StandaloneRunOptions(const StandaloneRuns& runs, int64_t k) {
  TrainerOptions o = runs.trainer;
  o.seed = runs.trainer.seed + static_cast<uint64_t>(k);
  return o;
}

}  // namespace ristretto::learner
