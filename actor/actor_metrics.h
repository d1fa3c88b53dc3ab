// ActorMetrics: one actor's Prometheus series (docs/metrics.md, "Actor"),
// every one labelled actor="<id>": env steps, batched inference time, chunks
// sent and rejected (by ChunkAck code name, every code at zero from the
// start), reconnects and the acting policy version. The series are created
// once; the rollout thread's per-step updates are atomic adds on them.
// Thread-safe.
#ifndef RISTRETTO_ACTOR_ACTOR_METRICS_H_
#define RISTRETTO_ACTOR_ACTOR_METRICS_H_

#include <array>
#include <cstdint>
#include <string>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace ristretto::actor {

class ActorMetrics {
 public:
  // Registers the series of `actor_id` in `registry` (not owned; must
  // outlive this).
  ActorMetrics(prometheus::Registry& registry, const std::string& actor_id);

  ActorMetrics(const ActorMetrics&) = delete;
  ActorMetrics& operator=(const ActorMetrics&) = delete;

  // Env steps taken: one step of one env copy each.
  void AddEnvSteps(int64_t steps);
  // One batched policy forward pass over every env copy.
  void ObserveInference(double seconds);
  void CountChunkSent();
  // A non-OK ChunkAck; `code` is the google.rpc code (out of range counts
  // as UNKNOWN).
  void CountRejected(int code);
  void CountReconnect();
  // The version acting now (-1: none yet).
  void SetPolicyVersion(int64_t version);

 private:
  static constexpr int kNumCodes = 17;  // google.rpc codes 0..16
  prometheus::Counter& env_steps_;
  prometheus::Histogram& inference_;
  prometheus::Counter& chunks_sent_;
  prometheus::Counter& reconnects_;
  prometheus::Gauge& policy_version_;
  std::array<prometheus::Counter*, kNumCodes> rejected_{};  // [0] unused
};

}  // namespace ristretto::actor

#endif  // RISTRETTO_ACTOR_ACTOR_METRICS_H_
