#include "actor/actor_metrics.h"

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace ristretto::actor {
namespace {

// Seconds: one forward pass of a small MLP over 8–256 env copies on one
// CPU thread takes tens of microseconds to a few milliseconds.
const prometheus::Histogram::BucketBoundaries kInferenceBuckets = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
    0.0025,  0.005,    0.01,    0.025,  0.05,    0.1,    0.25};

}  // namespace

ActorMetrics::ActorMetrics(prometheus::Registry& registry,
                           const std::string& actor_id)
    : env_steps_(prometheus::BuildCounter()
                     .Name("ristretto_actor_env_steps_total")
                     .Help("Environment steps taken (summed over the env "
                           "copies).")
                     .Register(registry)
                     .Add({{"actor", actor_id}})),
      inference_(prometheus::BuildHistogram()
                     .Name("ristretto_actor_inference_seconds")
                     .Help("Wall time of one batched policy forward pass over "
                           "all env copies.")
                     .Register(registry)
                     .Add({{"actor", actor_id}}, kInferenceBuckets)),
      chunks_sent_(prometheus::BuildCounter()
                       .Name("ristretto_actor_chunks_sent_total")
                       .Help("Trajectory chunks sent to the learner.")
                       .Register(registry)
                       .Add({{"actor", actor_id}})),
      reconnects_(prometheus::BuildCounter()
                      .Name("ristretto_actor_reconnects_total")
                      .Help("Times the actor connected to its learner again.")
                      .Register(registry)
                      .Add({{"actor", actor_id}})),
      policy_version_(prometheus::BuildGauge()
                          .Name("ristretto_actor_policy_version")
                          .Help("Weight version of the policy acting now (-1 "
                                "before the first weights).")
                          .Register(registry)
                          .Add({{"actor", actor_id}})) {
  auto& rejected = prometheus::BuildCounter()
                       .Name("ristretto_actor_chunks_rejected_total")
                       .Help(
                           "Chunks the learner answered with a non-OK "
                           "ChunkAck, by google.rpc code name.")
                       .Register(registry);
  for (int code = 1; code < kNumCodes; ++code) {
    rejected_[code] = &rejected.Add(
        {{"actor", actor_id},
         {"code",
          absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}});
  }
  policy_version_.Set(-1);
}

void ActorMetrics::AddEnvSteps(int64_t steps) {
  env_steps_.Increment(static_cast<double>(steps));
}

void ActorMetrics::ObserveInference(double seconds) {
  inference_.Observe(seconds);
}

void ActorMetrics::CountChunkSent() { chunks_sent_.Increment(); }

void ActorMetrics::CountRejected(int code) {
  const int unknown = static_cast<int>(absl::StatusCode::kUnknown);
  rejected_[code > 0 && code < kNumCodes ? code : unknown]->Increment();
}

void ActorMetrics::CountReconnect() { reconnects_.Increment(); }

void ActorMetrics::SetPolicyVersion(int64_t version) {
  policy_version_.Set(static_cast<double>(version));
}

}  // namespace ristretto::actor
