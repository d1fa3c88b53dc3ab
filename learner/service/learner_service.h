// LearnerService: the learner's gRPC surface (callback API). Thin: proto →
// RunHost call → proto. Each actor stream gets a reactor that assigns it to
// the run with the fewest actors, sends the assignment and the newest
// weights, validates every chunk (ChunkFromProto + RunHost::Ingest) and
// acknowledges it with a precise code; new weight versions are pushed as
// they are published (one serialised message shared by all actors).
// Thread-safe; owned by the learner's main, which destroys it after the
// grpc::Server has shut down.
#ifndef RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_
#define RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "learner/chunk_codec.h"
#include "learner/service/run_host.h"
#include "proto/ristretto.grpc.pb.h"

namespace ristretto::learner {

struct LearnerServiceOptions {
  ChunkLimits limits;        // largest chunk accepted (T, B)
  int credits = 4;           // chunks an actor may have unacknowledged
  std::string dataset_path;  // file served by FetchDataset
  std::string dataset_id;    // its id
  int episode_steps = 1024;  // sent in assignments
  int rollout_steps = 128;   // T per chunk, sent in assignments
};

class LearnerService final : public v1::Learner::CallbackService {
 public:
  // `runs` must outlive the service.
  LearnerService(std::vector<RunHost*> runs, LearnerServiceOptions options);

  grpc::ServerBidiReactor<v1::ActorMessage, v1::LearnerMessage>* Act(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<v1::DatasetPiece>* FetchDataset(
      grpc::CallbackServerContext* context,
      const v1::FetchDatasetRequest* request) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::StatusRequest* request,
                                      v1::LearnerStatus* response) override;

  // Chunks rejected on the wire (malformed, unknown run, stale, finished).
  int64_t chunks_rejected() const { return chunks_rejected_.load(); }

  // Used by the reactors.
  RunHost* AssignRun(const std::string& want_run_id);
  void ReleaseRun(RunHost* run);
  void CountRejected() { chunks_rejected_.fetch_add(1); }
  const LearnerServiceOptions& options() const { return options_; }
  RunHost* FindRun(const std::string& run_id) const;
  int ActorsOn(const std::string& run_id) const;

 private:
  const std::vector<RunHost*> runs_;
  const LearnerServiceOptions options_;
  std::atomic<int64_t> chunks_rejected_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, int> actors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_
