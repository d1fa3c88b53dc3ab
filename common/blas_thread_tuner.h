// BlasThreadTuner: picks OpenBLAS's thread count for each gradient step by
// measuring, between the process's full count and one thread.
//
// Why: a PPO update is a long run of mid-sized GEMMs. On a quiet 2-core box
// OpenBLAS's two threads make a split 1.44x faster than one; on a box
// that is also running actors, other runs or anything else, every GEMM
// waits at its barrier for a worker the kernel has descheduled, and the
// same update becomes 2-5x *slower* than with one thread (measured under
// `stress --cpu 4`: 52-130 s against 25 s; `ristretto up` next to two
// actors: 797 s against 82 s — docs/performance.md, "BLAS threads under
// load"). Neither fixed choice is right on a shared machine, so the
// learner (and `ristretto train --reproducible=false`) measures: each step's
// wall time per sample is folded into a moving average for the thread count
// it ran with, the step runs with the count whose average is lower, and
// every `explore_every`-th step runs with the other one so a change of load
// is noticed.
//
// OpenBLAS (0.3.x, pthreads) keeps its worker pool at the largest count
// ever asked and reads the count at the start of each call, so switching
// between the full count and 1 is a store of one integer; a GEMM in flight
// on another thread keeps the count it started with. Results DO depend on
// the count in the last bits (Debian's OpenBLAS 0.3.21 on an AVX-512 Xeon:
// a 512x512x500 SGEMM differs in 68 % of its elements between 1 and 2
// threads; K = 256, 1024, 2048 do not), so a run that must be reproducible
// from its seed runs its steps with BeginFixedStep instead
// (PpoOptions::fixed_blas_threads), and the tuner is made before any
// inference (PpoLearner::Create) so the idle count is the same for every
// run of a process.
//
// Thread-safe: one tuner per process (Process()) is shared by every run's
// update thread; they see one another's steps, which is what the count
// they all share should follow.
#ifndef RISTRETTO_COMMON_BLAS_THREAD_TUNER_H_
#define RISTRETTO_COMMON_BLAS_THREAD_TUNER_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ristretto {

class BlasThreadTuner {
 public:
  struct Options {
    // Every this many steps, one runs with the count not preferred now.
    int explore_every = 32;
    // Weight of a new measurement in a count's moving average.
    double smoothing = 0.5;
  };

  // With the environment variable set to "off" the process's tuner never
  // changes OpenBLAS's count (for A/B runs); RISTRETTO_RUNTIME_POLICY=off
  // turns it off too.
  static constexpr char kEnv[] = "RISTRETTO_BLAS_TUNER";

  // `max_threads`: the full count (<= 1: the tuner is inactive and
  // BeginStep always answers it). `set_threads` applies a count.
  BlasThreadTuner(int max_threads, std::function<void(int)> set_threads,
                  Options options);
  BlasThreadTuner(int max_threads, std::function<void(int)> set_threads)
      : BlasThreadTuner(max_threads, std::move(set_threads), Options()) {}

  // The process's tuner over OpenBLAS: its full count is OpenBLAS's count
  // when first called (after the runtime policy is applied), and the first
  // call sets OpenBLAS to 1 thread for everything outside gradient steps
  // (small-batch inference, evaluation, set-up: a hand-off to a second
  // thread costs more than such GEMMs gain, and on a loaded machine far
  // more). Inactive without OpenBLAS, with one thread, or when turned off
  // (kEnv).
  static BlasThreadTuner& Process();

  bool active() const { return max_threads_ > 1; }
  int max_threads() const { return max_threads_; }

  // Before a step: applies and returns the count to run it with.
  int BeginStep();
  // Before a step that must not depend on timing: applies and returns the
  // full count; nothing is measured or counted (no EndStep).
  int BeginFixedStep();
  // After it: the count BeginStep returned, the step's wall time and how
  // many samples it processed (> 0).
  void EndStep(int threads, absl::Duration wall, int64_t samples);
  // After the last step of an update: back to 1 thread until the next.
  void EndSteps();

  // Steps run with one thread, and in all, since the tuner was made.
  int64_t single_thread_steps() const;
  int64_t steps() const;
  // The count the averages prefer now (max_threads before any measurement).
  int preferred() const;

 private:
  int PreferredLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_threads_;
  const std::function<void(int)> set_threads_;
  const Options options_;

  mutable absl::Mutex mu_;
  int64_t begun_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t steps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t single_steps_ ABSL_GUARDED_BY(mu_) = 0;
  // Seconds per sample, moving average; < 0 while unmeasured. [0]: one
  // thread, [1]: max_threads_.
  double average_[2] ABSL_GUARDED_BY(mu_) = {-1.0, -1.0};
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_BLAS_THREAD_TUNER_H_
