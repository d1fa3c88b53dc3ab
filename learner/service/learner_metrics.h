// LearnerMetrics: the learner's Prometheus series (docs/metrics.md,
// "Learner"), registered once per process in a MetricsServer, and
// RunMetrics, the series of one hosted run. A RunMetrics holds references
// to its counters, gauges and histograms, so the run's hot paths (one call
// per chunk or per update) update them without label lookups.
//
// Lifetime: ForRun() hands out shared handles; when the last handle of a
// run is gone its series stay exported for `retain_released` (so the final
// values and the last validation score are scraped) and are then removed,
// keeping a long-lived learner's series bounded. LearnerMetrics must
// outlive every handle (the learner's main creates it before any run).
// Thread-safe.
#ifndef RISTRETTO_LEARNER_SERVICE_LEARNER_METRICS_H_
#define RISTRETTO_LEARNER_SERVICE_LEARNER_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/busy_tracker.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace ristretto {
class MetricsServer;
}  // namespace ristretto

namespace ristretto::learner {

// Why a chunk was refused before training: the `reason` label of
// ristretto_learner_chunks_rejected_total.
enum class RejectReason {
  kMalformed,   // failed validation (shapes, sizes, NaN/Inf)
  kUnknownRun,  // names a run this stream is not assigned to
  kProtocol,    // chunk before Hello, duplicate Hello, empty message
  kStale,       // older than max_policy_lag versions
  kFuture,      // claims a version the run has not published
  kFinished,    // the run has finished or is stopping
  kCutOff,      // from an actor cut off from the run (RunHost::CutOff)
};
inline constexpr int kNumRejectReasons = 7;
// "malformed", "unknown_run", "protocol", "stale", "future", "finished",
// "cut_off".
const char* RejectReasonName(RejectReason reason);

// The labels of one run's series.
struct RunLabels {
  std::string run;    // run name: "<study>/trial-<n>/fold-<k>" or "run-K"
  std::string study;  // ristretto_learner_validation_score{study,trial,fold}
  std::string trial;
  std::string fold;
};

class LearnerMetrics;

// One run's series. Thread-safe (prometheus metrics are atomic).
class RunMetrics {
 public:
  void AddTrained(int64_t samples) { trained_.Increment(samples); }
  void AddDropped(int64_t samples) {
    if (samples > 0) dropped_.Increment(samples);
  }
  void SetQueueDepth(int64_t chunks) { queue_depth_.Set(chunks); }
  void ObservePolicyLag(int64_t versions) { policy_lag_.Observe(versions); }
  void SetWeightVersion(int64_t version) { weight_version_.Set(version); }
  // One successful update: its wall time and the UpdateStats it returned.
  void Updated(double seconds, double policy_loss, double value_loss,
               double entropy, double approx_kl);
  // One update that diverged and was rolled back (RunHost).
  void RolledBack() { rolled_back_.Increment(); }
  void SetValidationScore(double score) { validation_score_.Set(score); }
  void Rejected(RejectReason reason);
  // Brackets device work (ristretto_learner_gpu_busy_ratio).
  BusyTracker& busy() { return *busy_; }

 private:
  friend class LearnerMetrics;
  RunMetrics(LearnerMetrics* parent, const RunLabels& labels);

  LearnerMetrics* const parent_;
  BusyTracker* const busy_;
  prometheus::Counter& trained_;
  prometheus::Counter& dropped_;
  prometheus::Counter& updates_;
  prometheus::Counter& rolled_back_;
  prometheus::Histogram& update_seconds_;
  prometheus::Gauge& queue_depth_;
  prometheus::Histogram& policy_lag_;
  prometheus::Gauge& weight_version_;
  prometheus::Gauge& policy_loss_;
  prometheus::Gauge& value_loss_;
  prometheus::Gauge& entropy_;
  prometheus::Gauge& approx_kl_;
  prometheus::Gauge& validation_score_;
};

class LearnerMetrics {
 public:
  // Registers the learner's families in `server` (not owned; must outlive
  // this), with every rejection reason at zero, runs_hosted at zero and
  // gpu_busy_ratio evaluated at scrape time.
  explicit LearnerMetrics(MetricsServer* server,
                          absl::Duration retain_released = absl::Minutes(10));
  ~LearnerMetrics();

  LearnerMetrics(const LearnerMetrics&) = delete;
  LearnerMetrics& operator=(const LearnerMetrics&) = delete;

  // The series of `labels.run` (created on first use; the same series for
  // every holder of the same run name). Also removes series released more
  // than `retain_released` ago.
  std::shared_ptr<RunMetrics> ForRun(const RunLabels& labels);
  // Runs whose series are exported now (held or retained).
  int exported_runs() const;

  void CountRejected(RejectReason reason);
  // An RPC refused by authentication: `method` is "Act", "FetchDataset" or
  // "GetStatus"; code unauthenticated or permission_denied.
  void CountDenied(const std::string& method, bool unauthenticated);
  void SetRunsHosted(int runs) { runs_hosted_.Set(runs); }
  BusyTracker& busy() { return busy_; }

 private:
  friend class RunMetrics;
  struct Entry {
    std::unique_ptr<RunMetrics> series;
    int holders = 0;
    absl::Time released_at;
  };
  void Release(const std::string& run);
  void Sweep(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Remove(const RunLabels& labels, RunMetrics* series);

  const absl::Duration retain_released_;
  BusyTracker busy_;
  prometheus::Family<prometheus::Counter>& trained_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Family<prometheus::Counter>& updates_;
  prometheus::Family<prometheus::Counter>& rolled_back_;
  prometheus::Family<prometheus::Histogram>& update_seconds_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Counter>& rejected_family_;
  prometheus::Family<prometheus::Histogram>& policy_lag_;
  prometheus::Family<prometheus::Gauge>& weight_version_;
  prometheus::Family<prometheus::Gauge>& loss_;
  prometheus::Family<prometheus::Gauge>& entropy_;
  prometheus::Family<prometheus::Gauge>& approx_kl_;
  prometheus::Family<prometheus::Gauge>& validation_score_;
  prometheus::Gauge& runs_hosted_;
  prometheus::Family<prometheus::Counter>& denied_;
  std::array<prometheus::Counter*, kNumRejectReasons> rejected_{};

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_LEARNER_METRICS_H_
