// LearnerService: the learner's gRPC surface (callback API). Thin: proto →
// RunHost call → proto. Each actor stream gets a reactor that assigns it to
// the run with the fewest actors, sends the assignment and the newest
// weights, validates every chunk (ParseActorMessage + DecodeChunk straight
// from the received buffers, then RunHost::Ingest) and acknowledges it
// with a precise code; new weight versions are pushed as they are
// published (one serialised message shared by all actors).
// Thread-safe; owned by the learner's main, which destroys it after the
// grpc::Server has shut down.
#ifndef RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_
#define RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "learner/service/run_host.h"
#include "proto/ristretto.grpc.pb.h"
#include "wire/chunk_codec.h"

namespace ristretto::learner {

class LearnerMetrics;
enum class RejectReason;  // learner_metrics.h

struct LearnerServiceOptions {
  wire::ChunkLimits limits;  // largest chunk accepted (T, B)
  // Most chunks an actor may have unacknowledged; each run sizes its
  // actors' credit below this to its max_policy_lag (RunHost::ActorCredits).
  int credits = 4;
  // A dataset file served by FetchDataset from the start (more can be
  // added with AddDataset). Assignments carry each run's own dataset id,
  // episode length and rollout length (RunSpec::trainer).
  std::string dataset_path;
  std::string dataset_id;
  // Where rejections by reason and the hosted run count go (not owned;
  // must outlive the service). Null: no metrics.
  LearnerMetrics* metrics = nullptr;
};

// A server-streaming reactor sending the file at `path` in 1 MiB pieces
// (NOT_FOUND when `path` is empty). Shared by the learner and coordinator.
grpc::ServerWriteReactor<v1::DatasetPiece>* ServeDatasetFile(
    const std::string& path, const v1::FetchDatasetRequest& request);

// Learner's generated callback service with Act as a raw method: the
// reactor parses the actor's messages from the received buffers itself
// (chunk_wire.h); the wire format is unchanged.
using LearnerServiceBase = v1::Learner::WithRawCallbackMethod_Act<
    v1::Learner::WithCallbackMethod_FetchDataset<
        v1::Learner::WithCallbackMethod_GetStatus<v1::Learner::Service>>>;

class LearnerService final : public LearnerServiceBase {
 public:
  // Runs may be added and removed while serving (coordinator mode); a
  // removed run lives on until its last actor stream has ended.
  LearnerService(std::vector<std::shared_ptr<RunHost>> runs,
                 LearnerServiceOptions options);

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Act(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<v1::DatasetPiece>* FetchDataset(
      grpc::CallbackServerContext* context,
      const v1::FetchDatasetRequest* request) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::StatusRequest* request,
                                      v1::LearnerStatus* response) override;

  // Chunks rejected on the wire (malformed, unknown run, stale, finished).
  int64_t chunks_rejected() const { return chunks_rejected_.load(); }

  void AddRun(std::shared_ptr<RunHost> run);
  void RemoveRun(const std::string& run_id);
  void AddDataset(const std::string& id, const std::string& path);
  std::vector<std::shared_ptr<RunHost>> runs() const;

  // Used by the reactors: the unfinished run with the fewest actors (or
  // `want_run_id` if it is still training); nullptr if none.
  std::shared_ptr<RunHost> AssignRun(const std::string& want_run_id);
  void ReleaseRun(RunHost* run);
  // Counts a chunk answered with an error; `reason` (when the service, not
  // the run, decided) also goes to the metrics.
  void CountRejected(std::optional<RejectReason> reason);
  const LearnerServiceOptions& options() const { return options_; }
  std::shared_ptr<RunHost> FindRun(const std::string& run_id) const;
  int ActorsOn(const std::string& run_id) const;

 private:
  const LearnerServiceOptions options_;
  std::atomic<int64_t> chunks_rejected_{0};
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<RunHost>> runs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> datasets_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> actors_ ABSL_GUARDED_BY(mu_);
  void ExportRunsHosted() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_
