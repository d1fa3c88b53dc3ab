// CoordinatorMetrics: the coordinator's Prometheus series (docs/metrics.md,
// "Coordinator"): trials of each study by state, runs leased, lease
// expiries, the latency of every Store call the scheduler makes, by
// operation (the Store method's name), and the RPCs refused for want of a
// credential or of a permission, by method and code. Every operation's
// histogram and each study's four states exist from the start (at zero) so
// rate() and the dashboards show 0 rather than no data. Thread-safe.
#ifndef RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_METRICS_H_
#define RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store/store.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace ristretto::coordinator {

// The Store operations the scheduler times (label op = the method name).
enum class DbOp {
  kAddFinalRun,
  kCompleteFinalRun,
  kCountOpenRuns,
  kCompleteRun,
  kCompleteTrial,
  kCountTrials,
  kCreateTrial,
  kExpireLeases,
  kFailRun,
  kForgetMembers,
  kGetDataset,
  kGetMember,
  kGetRun,
  kGetStudyById,
  kGetTrial,
  kHeartbeat,
  kLeaseRun,
  kListFoldMetrics,
  kListIntermediates,
  kListRefits,
  kListRuns,
  kListStudies,
  kListTrials,
  kPruneTrial,
  kPutDataset,
  kPutStudyResult,
  kReleaseLeases,
  kReportIntermediate,
  kSetStudyState,
  kUpsertMember,
};
inline constexpr int kNumDbOps = 30;
// The Store method's name, e.g. "LeaseRun".
const char* DbOpName(DbOp op);

class CoordinatorMetrics {
 public:
  // Registers the families in `registry` (not owned; must outlive this).
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  CoordinatorMetrics(const CoordinatorMetrics&) = delete;
  CoordinatorMetrics& operator=(const CoordinatorMetrics&) = delete;

  void CountRunLeased();
  void CountLeasesExpired(int64_t leases);
  // ristretto_coordinator_learners: learners registered and heard from
  // within a lease lifetime; ristretto_coordinator_learners_forgotten_total:
  // those forgotten after a lease lifetime of silence.
  void SetLearners(int64_t live);
  void CountLearnersForgotten(int64_t learners);
  void ObserveDbLatency(DbOp op, double seconds);
  // Sets ristretto_coordinator_trials{study, state} for the four states.
  void SetTrials(const std::string& study, const TrialCounts& counts);
  // Counts one refused call: ristretto_coordinator_rpc_denied_total{method,
  // code}, code "unauthenticated" or "permission_denied". `method` is the
  // Coordinator RPC's name ("LeaseRun"); every RPC's two series exist from
  // the start at zero.
  void CountDenied(const std::string& method, bool unauthenticated);

 private:
  struct StudyGauges {
    prometheus::Gauge* running;
    prometheus::Gauge* complete;
    prometheus::Gauge* pruned;
    prometheus::Gauge* failed;
  };

  prometheus::Family<prometheus::Gauge>& trials_;
  prometheus::Counter& runs_leased_;
  prometheus::Counter& lease_expiries_;
  prometheus::Gauge& learners_;
  prometheus::Counter& learners_forgotten_;
  std::array<prometheus::Histogram*, kNumDbOps> db_latency_{};
  prometheus::Family<prometheus::Counter>& denied_;

  absl::Mutex mu_;
  std::map<std::string, StudyGauges> studies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_METRICS_H_
