#include "common/blas_thread_tuner.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/runtime_policy.h"

namespace ristretto {
namespace {

// The first steps alternate between the two counts so that both have a
// measurement before the averages decide; step 0 (allocations, cold caches)
// is run with the full count and not measured.
constexpr int64_t kAlternatingSteps = 5;

// One thread is preferred only when clearly faster: a quiet machine keeps
// the full count through measurement noise.
constexpr double kSingleThreadMargin = 0.95;

}  // namespace

BlasThreadTuner::BlasThreadTuner(int max_threads,
                                 std::function<void(int)> set_threads,
                                 Options options)
    : max_threads_(max_threads),
      set_threads_(std::move(set_threads)),
      options_(options) {}

BlasThreadTuner& BlasThreadTuner::Process() {
  static BlasThreadTuner* const tuner = [] {
    const char* env = std::getenv(kEnv);
    const bool off = RuntimePolicyDisabled() ||
                     (env != nullptr && std::strcmp(env, "off") == 0);
    const int threads = OpenBlasThreads();  // -1 without OpenBLAS
    auto* made = new BlasThreadTuner(off ? 1 : threads,
                                     [](int n) { SetOpenBlasThreads(n); });
    made->EndSteps();
    return made;
  }();
  return *tuner;
}

void BlasThreadTuner::EndSteps() {
  if (!active()) return;
  absl::MutexLock lock(&mu_);
  set_threads_(1);
}

int BlasThreadTuner::PreferredLocked() const {
  if (average_[0] < 0 || average_[1] < 0) return max_threads_;
  return average_[0] < kSingleThreadMargin * average_[1] ? 1 : max_threads_;
}

int BlasThreadTuner::preferred() const {
  absl::MutexLock lock(&mu_);
  return active() ? PreferredLocked() : max_threads_;
}

int BlasThreadTuner::BeginFixedStep() {
  if (!active()) return max_threads_;
  absl::MutexLock lock(&mu_);
  set_threads_(max_threads_);
  return max_threads_;
}

int BlasThreadTuner::BeginStep() {
  if (!active()) return max_threads_;
  absl::MutexLock lock(&mu_);
  const int64_t n = begun_++;
  int threads;
  if (n < kAlternatingSteps) {
    threads = n % 2 == 0 ? max_threads_ : 1;
  } else {
    const int preferred = PreferredLocked();
    const bool explore =
        options_.explore_every > 0 && n % options_.explore_every == 0;
    threads = explore ? (preferred == 1 ? max_threads_ : 1) : preferred;
  }
  // Set every time (one integer store in OpenBLAS): LibTorch's
  // set_num_threads, called when a learner is built, may have reset it.
  set_threads_(threads);
  return threads;
}

void BlasThreadTuner::EndStep(int threads, absl::Duration wall,
                              int64_t samples) {
  if (!active() || samples <= 0) return;
  absl::MutexLock lock(&mu_);
  const bool first = steps_ == 0;
  ++steps_;
  if (threads == 1) ++single_steps_;
  if (first) return;  // warm-up
  int slot;
  if (threads == 1) {
    slot = 0;
  } else if (threads == max_threads_) {
    slot = 1;
  } else {
    return;
  }
  const double per_sample =
      absl::ToDoubleSeconds(wall) / static_cast<double>(samples);
  double& average = average_[slot];
  average = average < 0 ? per_sample
                        : (1.0 - options_.smoothing) * average +
                              options_.smoothing * per_sample;
}

int64_t BlasThreadTuner::single_thread_steps() const {
  absl::MutexLock lock(&mu_);
  return single_steps_;
}

int64_t BlasThreadTuner::steps() const {
  absl::MutexLock lock(&mu_);
  return steps_;
}

}  // namespace ristretto
