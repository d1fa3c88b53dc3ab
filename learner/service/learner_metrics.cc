#include "learner/service/learner_metrics.h"

#include <utility>

#include "common/metrics.h"
#include "prometheus/registry.h"

namespace ristretto::learner {
namespace {

// Seconds: CPU updates of a few thousand samples take 50 ms – 2 s, GPU
// updates a few ms.
const prometheus::Histogram::BucketBoundaries kUpdateBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
// Versions: 0 is on-policy; max_policy_lag defaults to a few versions.
const prometheus::Histogram::BucketBoundaries kLagBuckets = {
    0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64};

}  // namespace

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kMalformed:
      return "malformed";
    case RejectReason::kUnknownRun:
      return "unknown_run";
    case RejectReason::kProtocol:
      return "protocol";
    case RejectReason::kStale:
      return "stale";
    case RejectReason::kFuture:
      return "future";
    case RejectReason::kFinished:
      return "finished";
    case RejectReason::kCutOff:
      return "cut_off";
  }
  return "unknown";
}

RunMetrics::RunMetrics(LearnerMetrics* parent, const RunLabels& labels)
    : parent_(parent),
      busy_(&parent->busy_),
      trained_(parent->trained_.Add({{"run", labels.run}})),
      dropped_(parent->dropped_.Add({{"run", labels.run}})),
      updates_(parent->updates_.Add({{"run", labels.run}})),
      rolled_back_(parent->rolled_back_.Add({{"run", labels.run}})),
      update_seconds_(
          parent->update_seconds_.Add({{"run", labels.run}}, kUpdateBuckets)),
      queue_depth_(parent->queue_depth_.Add({{"run", labels.run}})),
      policy_lag_(parent->policy_lag_.Add({{"run", labels.run}}, kLagBuckets)),
      weight_version_(parent->weight_version_.Add({{"run", labels.run}})),
      policy_loss_(
          parent->loss_.Add({{"run", labels.run}, {"kind", "policy"}})),
      value_loss_(parent->loss_.Add({{"run", labels.run}, {"kind", "value"}})),
      entropy_(parent->entropy_.Add({{"run", labels.run}})),
      approx_kl_(parent->approx_kl_.Add({{"run", labels.run}})),
      validation_score_(
          parent->validation_score_.Add({{"study", labels.study},
                                         {"trial", labels.trial},
                                         {"fold", labels.fold}})) {}

void RunMetrics::Updated(double seconds, double policy_loss, double value_loss,
                         double entropy, double approx_kl) {
  updates_.Increment();
  update_seconds_.Observe(seconds);
  policy_loss_.Set(policy_loss);
  value_loss_.Set(value_loss);
  entropy_.Set(entropy);
  approx_kl_.Set(approx_kl);
}

void RunMetrics::Rejected(RejectReason reason) {
  parent_->CountRejected(reason);
}

LearnerMetrics::LearnerMetrics(MetricsServer* server,
                               absl::Duration retain_released)
    : retain_released_(retain_released),
      trained_(prometheus::BuildCounter()
                   .Name("ristretto_learner_samples_trained_total")
                   .Help("Samples (env steps) consumed by PPO updates.")
                   .Register(server->registry())),
      dropped_(prometheus::BuildCounter()
                   .Name("ristretto_learner_samples_dropped_total")
                   .Help("Samples received but discarded (too stale, run "
                         "finished or stopping).")
                   .Register(server->registry())),
      updates_(prometheus::BuildCounter()
                   .Name("ristretto_learner_updates_total")
                   .Help("PPO updates (one rollout batch, all epochs).")
                   .Register(server->registry())),
      rolled_back_(prometheus::BuildCounter()
                       .Name("ristretto_learner_updates_rolled_back_total")
                       .Help("PPO updates that diverged (non-finite loss or "
                             "weights) and were rolled back.")
                       .Register(server->registry())),
      update_seconds_(prometheus::BuildHistogram()
                          .Name("ristretto_learner_update_seconds")
                          .Help("Wall time of one PPO update.")
                          .Register(server->registry())),
      queue_depth_(prometheus::BuildGauge()
                       .Name("ristretto_learner_queue_depth")
                       .Help("Chunks waiting to be trained (ingest queue plus "
                             "chunks held back by flow control).")
                       .Register(server->registry())),
      rejected_family_(prometheus::BuildCounter()
                           .Name("ristretto_learner_chunks_rejected_total")
                           .Help("Chunks rejected before training, by reason.")
                           .Register(server->registry())),
      policy_lag_(prometheus::BuildHistogram()
                      .Name("ristretto_learner_policy_lag")
                      .Help("Run version minus the version that produced an "
                            "accepted chunk.")
                      .Register(server->registry())),
      weight_version_(prometheus::BuildGauge()
                          .Name("ristretto_learner_weight_version")
                          .Help("Current policy weight version of the run.")
                          .Register(server->registry())),
      loss_(prometheus::BuildGauge()
                .Name("ristretto_learner_loss")
                .Help("Loss of the last update (kind: policy, value).")
                .Register(server->registry())),
      entropy_(prometheus::BuildGauge()
                   .Name("ristretto_learner_entropy")
                   .Help("Mean policy entropy of the last update (nats).")
                   .Register(server->registry())),
      approx_kl_(prometheus::BuildGauge()
                     .Name("ristretto_learner_approx_kl")
                     .Help("Approximate KL divergence between the old and new "
                           "policy in the last update (nats).")
                     .Register(server->registry())),
      validation_score_(prometheus::BuildGauge()
                            .Name("ristretto_learner_validation_score")
                            .Help("Latest validation score of the fold "
                                  "(the study's objective: sharpe, "
                                  "excess_sharpe, ...).")
                            .Register(server->registry())),
      runs_hosted_(prometheus::BuildGauge()
                       .Name("ristretto_learner_runs_hosted")
                       .Help("Runs the learner hosts now.")
                       .Register(server->registry())
                       .Add({})),
      denied_(prometheus::BuildCounter()
                  .Name("ristretto_learner_rpc_denied_total")
                  .Help("Learner RPCs refused: code unauthenticated (no, a "
                        "malformed, forged or expired credential) or "
                        "permission_denied (an actor id, run or dataset "
                        "its ticket does not cover, the wrong role).")
                  .Register(server->registry())) {
  for (const char* method : {"Act", "FetchDataset", "GetStatus"}) {
    denied_.Add({{"method", method}, {"code", "unauthenticated"}});
    denied_.Add({{"method", method}, {"code", "permission_denied"}});
  }
  for (int r = 0; r < kNumRejectReasons; ++r) {
    rejected_[r] = &rejected_family_.Add(
        {{"reason", RejectReasonName(static_cast<RejectReason>(r))}});
  }
  server->AddGaugeCallback(
      "ristretto_learner_gpu_busy_ratio",
      "Fraction of the last 10 s of wall time the learner's updates kept its "
      "device busy (synchronised around each update on GPUs).",
      {}, [this] { return busy_.Ratio(); });
}

LearnerMetrics::~LearnerMetrics() = default;

std::shared_ptr<RunMetrics> LearnerMetrics::ForRun(const RunLabels& labels) {
  absl::MutexLock lock(&mu_);
  Sweep(absl::Now());
  Entry& entry = runs_[labels.run];
  if (entry.series == nullptr) {
    entry.series.reset(new RunMetrics(this, labels));
  }
  ++entry.holders;
  // The handle does not own the series: dropping it releases them.
  return std::shared_ptr<RunMetrics>(
      entry.series.get(),
      [this, run = labels.run](RunMetrics*) { Release(run); });
}

int LearnerMetrics::exported_runs() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(runs_.size());
}

void LearnerMetrics::CountRejected(RejectReason reason) {
  const int r = static_cast<int>(reason);
  if (r >= 0 && r < kNumRejectReasons) rejected_[r]->Increment();
}

void LearnerMetrics::CountDenied(const std::string& method,
                                 bool unauthenticated) {
  // Family::Add returns the existing series for known labels.
  denied_
      .Add(
          {{"method", method},
           {"code", unauthenticated ? "unauthenticated" : "permission_denied"}})
      .Increment();
}

void LearnerMetrics::Release(const std::string& run) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  auto it = runs_.find(run);
  if (it != runs_.end() && --it->second.holders == 0) {
    it->second.released_at = now;
  }
  Sweep(now);
}

void LearnerMetrics::Sweep(absl::Time now) {
  for (auto it = runs_.begin(); it != runs_.end();) {
    const Entry& e = it->second;
    if (e.holders > 0 || now - e.released_at < retain_released_) {
      ++it;
      continue;
    }
    RunMetrics& s = *e.series;
    trained_.Remove(&s.trained_);
    dropped_.Remove(&s.dropped_);
    updates_.Remove(&s.updates_);
    rolled_back_.Remove(&s.rolled_back_);
    update_seconds_.Remove(&s.update_seconds_);
    queue_depth_.Remove(&s.queue_depth_);
    policy_lag_.Remove(&s.policy_lag_);
    weight_version_.Remove(&s.weight_version_);
    loss_.Remove(&s.policy_loss_);
    loss_.Remove(&s.value_loss_);
    entropy_.Remove(&s.entropy_);
    approx_kl_.Remove(&s.approx_kl_);
    validation_score_.Remove(&s.validation_score_);
    it = runs_.erase(it);
  }
}

}  // namespace ristretto::learner
