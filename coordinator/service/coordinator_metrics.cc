#include "coordinator/service/coordinator_metrics.h"

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace ristretto::coordinator {
namespace {

constexpr const char* kDbOpNames[kNumDbOps] = {
    "AddFinalRun",
    "CompleteFinalRun",
    "CountOpenRuns",
    "CompleteRun",
    "CompleteTrial",
    "CountTrials",
    "CreateTrial",
    "ExpireLeases",
    "FailRun",
    "ForgetMembers",
    "GetDataset",
    "GetMember",
    "GetRun",
    "GetStudyById",
    "GetTrial",
    "Heartbeat",
    "LeaseRun",
    "ListFoldMetrics",
    "ListIntermediates",
    "ListRefits",
    "ListRuns",
    "ListStudies",
    "ListTrials",
    "PruneTrial",
    "PutDataset",
    "PutStudyResult",
    "ReleaseLeases",
    "ReportIntermediate",
    "SetStudyState",
    "UpsertMember",
};

// The Coordinator service's RPCs (proto/coordinator.proto).
constexpr const char* kRpcNames[] = {
    "RegisterLearner",  "LeaseRun",    "Heartbeat",
    "ReportEvaluation", "CompleteRun", "FailRun",
    "Release",          "FindLearner", "FetchDataset"};

// Seconds: a local transaction takes about a millisecond; retries after a
// lost connection run up to RetryPolicy::give_up_after (60 s).
const prometheus::Histogram::BucketBoundaries kDbBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,   1,      2.5,   5,    10,    30,   60};

}  // namespace

const char* DbOpName(DbOp op) {
  const int i = static_cast<int>(op);
  return i >= 0 && i < kNumDbOps ? kDbOpNames[i] : "unknown";
}

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& registry)
    : trials_(prometheus::BuildGauge()
                  .Name("ristretto_coordinator_trials")
                  .Help("Trials of a study by state (running, complete, "
                        "pruned, failed), refreshed every scheduling pass.")
                  .Register(registry)),
      runs_leased_(prometheus::BuildCounter()
                       .Name("ristretto_coordinator_runs_leased_total")
                       .Help("Runs leased to learners.")
                       .Register(registry)
                       .Add({})),
      lease_expiries_(prometheus::BuildCounter()
                          .Name("ristretto_coordinator_lease_expiries_total")
                          .Help("Leases that expired without a heartbeat.")
                          .Register(registry)
                          .Add({})),
      learners_(prometheus::BuildGauge()
                    .Name("ristretto_coordinator_learners")
                    .Help("Learners registered and heard from within a "
                          "lease lifetime, as of the last scheduling pass.")
                    .Register(registry)
                    .Add({})),
      learners_forgotten_(
          prometheus::BuildCounter()
              .Name("ristretto_coordinator_learners_forgotten_total")
              .Help("Learners forgotten after a lease lifetime without a "
                    "call (died without Release, or cut off).")
              .Register(registry)
              .Add({})),
      denied_(prometheus::BuildCounter()
                  .Name("ristretto_coordinator_rpc_denied_total")
                  .Help("Coordinator RPCs refused: code unauthenticated (no "
                        "or an unknown credential, a wrong registration "
                        "token) or permission_denied (another member's id "
                        "or run, the wrong role).")
                  .Register(registry)) {
  for (const char* method : kRpcNames) {
    denied_.Add({{"method", method}, {"code", "unauthenticated"}});
    denied_.Add({{"method", method}, {"code", "permission_denied"}});
  }
  auto& db = prometheus::BuildHistogram()
                 .Name("ristretto_coordinator_db_latency_seconds")
                 .Help(
                     "Latency of one store operation (a transaction, "
                     "retries included), by Store method.")
                 .Register(registry);
  for (int i = 0; i < kNumDbOps; ++i) {
    db_latency_[i] = &db.Add({{"op", kDbOpNames[i]}}, kDbBuckets);
  }
}

void CoordinatorMetrics::CountRunLeased() { runs_leased_.Increment(); }

void CoordinatorMetrics::CountLeasesExpired(int64_t leases) {
  if (leases > 0) lease_expiries_.Increment(static_cast<double>(leases));
}

void CoordinatorMetrics::SetLearners(int64_t live) {
  learners_.Set(static_cast<double>(live));
}

void CoordinatorMetrics::CountLearnersForgotten(int64_t learners) {
  if (learners > 0)
    learners_forgotten_.Increment(static_cast<double>(learners));
}

void CoordinatorMetrics::ObserveDbLatency(DbOp op, double seconds) {
  const int i = static_cast<int>(op);
  if (i >= 0 && i < kNumDbOps) db_latency_[i]->Observe(seconds);
}

void CoordinatorMetrics::CountDenied(const std::string& method,
                                     bool unauthenticated) {
  // Family::Add returns the existing series for known labels.
  denied_
      .Add(
          {{"method", method},
           {"code", unauthenticated ? "unauthenticated" : "permission_denied"}})
      .Increment();
}

void CoordinatorMetrics::SetTrials(const std::string& study,
                                   const TrialCounts& counts) {
  absl::MutexLock lock(&mu_);
  auto it = studies_.find(study);
  if (it == studies_.end()) {
    auto gauge = [&](TrialState state) {
      return &trials_.Add(
          {{"study", study}, {"state", std::string(ToString(state))}});
    };
    it = studies_
             .emplace(study, StudyGauges{gauge(TrialState::kRunning),
                                         gauge(TrialState::kComplete),
                                         gauge(TrialState::kPruned),
                                         gauge(TrialState::kFailed)})
             .first;
  }
  it->second.running->Set(static_cast<double>(counts.running));
  it->second.complete->Set(static_cast<double>(counts.complete));
  it->second.pruned->Set(static_cast<double>(counts.pruned));
  it->second.failed->Set(static_cast<double>(counts.failed));
}

}  // namespace ristretto::coordinator
