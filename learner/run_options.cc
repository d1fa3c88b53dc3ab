#include "learner/run_options.h"

#include "absl/strings/str_cat.h"

namespace ristretto::learner {

absl::Status CheckLockbox(const TrainerOptions& o) {
  if (o.lockbox_begin < 0) {
    if (o.final_evaluation) {
      return absl::InvalidArgumentError(
          "a final evaluation run needs the study's lockbox (lockbox_begin)");
    }
    return absl::OkStatus();
  }
  if (o.lockbox_guard < 0 || o.lockbox_guard > o.lockbox_begin) {
    return absl::InvalidArgumentError(
        absl::StrCat("lockbox_guard = ", o.lockbox_guard,
                     " must be in [0, lockbox_begin = ", o.lockbox_begin, "]"));
  }
  for (size_t i = 0; i < o.train_domains.size(); ++i) {
    const env::Domain& d = o.train_domains[i];
    if (d.end > o.lockbox_guard) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train domain ", i, " [", d.begin, ", ", d.end,
          ") reaches the lockbox (rows >= ", o.lockbox_guard,
          " are reserved for the final evaluation, embargo included)"));
    }
  }
  if (o.train_domains.empty()) {
    return absl::InvalidArgumentError(
        "a study run must name its train domains (all rows would include the "
        "lockbox)");
  }
  for (size_t i = 0; i < o.validation_domains.size(); ++i) {
    const env::Domain& d = o.validation_domains[i];
    if (o.final_evaluation) {
      if (d.begin < o.lockbox_begin) {
        return absl::InvalidArgumentError(absl::StrCat(
            "final evaluation domain ", i, " [", d.begin, ", ", d.end,
            ") starts before the lockbox (row ", o.lockbox_begin, ")"));
      }
    } else if (d.end > o.lockbox_guard) {
      return absl::InvalidArgumentError(
          absl::StrCat("validation domain ", i, " [", d.begin, ", ", d.end,
                       ") reaches the lockbox (rows >= ", o.lockbox_guard,
                       "): only a trial's final evaluation may read it"));
    }
  }
  if (o.final_evaluation && o.eval_every_env_steps != 0) {
    return absl::InvalidArgumentError(
        "a final evaluation run evaluates once, at the end "
        "(eval_every_env_steps must be 0)");
  }
  return absl::OkStatus();
}

}  // namespace ristretto::learner
