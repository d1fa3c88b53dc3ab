// BusyTracker: the fraction of wall time during which some bracketed work
// was in progress, over a trailing window. Work is bracketed by Begin() and
// End(); work overlapping from several threads counts once (the union of
// the busy intervals), so the ratio stays in [0, 1]. The learner brackets
// its PPO updates with it (synchronising the device on CUDA) to export
// ristretto_learner_gpu_busy_ratio.
// Thread-safe.
#ifndef RISTRETTO_COMMON_BUSY_TRACKER_H_
#define RISTRETTO_COMMON_BUSY_TRACKER_H_

#include <deque>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ristretto {

class BusyTracker {
 public:
  // `window` is the trailing span Ratio() covers; `start` is when tracking
  // began (ratios before one window has passed cover the time since).
  explicit BusyTracker(absl::Duration window = absl::Seconds(10),
                       absl::Time start = absl::Now());

  // One piece of work starts / ends at `now`. Every Begin must be matched
  // by one End; times must not go backwards.
  void Begin(absl::Time now = absl::Now());
  void End(absl::Time now = absl::Now());

  // Busy time in (now − window, now] over the length of that span (or of
  // the time since `start`, if shorter); work still in progress counts up
  // to `now`. In [0, 1]; 0 before any time has passed.
  double Ratio(absl::Time now = absl::Now()) const;

 private:
  const absl::Duration window_;
  const absl::Time start_;
  mutable absl::Mutex mu_;
  int depth_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time busy_since_ ABSL_GUARDED_BY(mu_);
  // Closed busy intervals [begin, end), oldest first; those that ended
  // before the window are dropped as new ones close.
  std::deque<std::pair<absl::Time, absl::Time>> intervals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_BUSY_TRACKER_H_
