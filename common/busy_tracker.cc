#include "common/busy_tracker.h"

#include <algorithm>

namespace ristretto {

BusyTracker::BusyTracker(absl::Duration window, absl::Time start)
    : window_(window), start_(start) {}

void BusyTracker::Begin(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (depth_++ == 0) busy_since_ = now;
}

void BusyTracker::End(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (depth_ == 0) return;  // unmatched End: ignore rather than go negative
  if (--depth_ > 0) return;
  intervals_.emplace_back(busy_since_, now);
  while (!intervals_.empty() && intervals_.front().second <= now - window_) {
    intervals_.pop_front();
  }
}

double BusyTracker::Ratio(absl::Time now) const {
  const absl::Time from = std::max(now - window_, start_);
  if (now <= from) return 0.0;
  absl::MutexLock lock(&mu_);
  absl::Duration busy;
  auto add = [&](absl::Time begin, absl::Time end) {
    begin = std::max(begin, from);
    end = std::min(end, now);
    if (end > begin) busy += end - begin;
  };
  for (const auto& [begin, end] : intervals_) add(begin, end);
  if (depth_ > 0) add(busy_since_, now);
  return std::clamp(absl::FDivDuration(busy, now - from), 0.0, 1.0);
}

}  // namespace ristretto
