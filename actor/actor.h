// Actor: a CPU worker that streams experience to one learner. It connects
// (retrying with exponential backoff), receives a run assignment, fetches and
// caches the run's dataset by content hash, steps B env copies with the
// newest policy weights it has received and sends T × B trajectory chunks
// under ack-credit flow control (../shared/design/system.md, "Processes").
// Thread-safe: Stop() and the counters may be called from any thread while
// one thread is inside Run().
//
// Threads: Run()'s caller is the supervisor. For each connection it starts
// and joins two threads: a reader (reads LearnerMessages, decodes weights,
// updates the shared state) and a rollout thread (applies assignments, steps
// the envs, writes chunks). Shutdown order: the supervisor cancels the
// stream, joins the reader and the rollout thread, then finishes the call;
// nothing outlives Run(). A session the learner ends with a Stop message is
// drained instead of cancelled: the rollout thread stops writing and
// half-closes the stream, the reader keeps reading acks until the learner
// ends the call (which it does once it has read every chunk written before
// the half-close), so each chunk counted in env_steps_sent() reaches the
// learner's accounting; after drain_timeout the call is cancelled.
//
// Network: everything goes through wire/learner_client.h (LearnerClient,
// one per connection attempt, and ActorCoordinatorClient). Create() uses
// the gRPC implementations unless ActorClients gives others (unit tests
// pass in-memory fakes).
#ifndef RISTRETTO_ACTOR_ACTOR_H_
#define RISTRETTO_ACTOR_ACTOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "env/dataset.h"
#include "learner/contract.h"
#include "proto/ristretto.pb.h"
#include "wire/learner_client.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace ristretto::actor {

class ActorMetrics;

struct ActorOptions {
  // Learner address, HOST:PORT; or, with coordinator_address, the learner
  // is asked of the coordinator (Coordinator.FindLearner) before every
  // connection. One of the two is required.
  std::string learner_address;
  std::string coordinator_address;
  // Env copies B stepped together, >= 1.
  int num_envs = 16;
  // Unique id of this actor; empty = "<hostname>-<pid>".
  std::string actor_id;
  // Dataset cache directory (files <dataset id>.rds); empty =
  // $RISTRETTO_CACHE if set, else ~/.cache/ristretto/datasets.
  std::string cache_dir;
  // Mixed into the env and noise seeds of every assignment (0 = none).
  uint64_t seed = 0;
  // Reconnect backoff: starts here, doubles per attempt, capped at
  // max_backoff; reset by a session that got an assignment and no error.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // A learner that answers "no run is accepting actors" (or that every run
  // has --max-actors-per-run actors, or that a run is training its last
  // chunks) is asked again at least this often (it usually gets its next
  // run, or a free place, within seconds).
  absl::Duration max_idle_poll = absl::Milliseconds(500);
  // Largest gRPC message sent or received, bytes.
  int max_message_bytes = 64 << 20;
  // Deadline of unary and server-streaming calls (GetStatus, FetchDataset).
  absl::Duration rpc_deadline = absl::Seconds(60);
  // Chunks sent and not yet acknowledged, at most (until a ChunkAck's
  // `credits` replaces it), >= 1.
  int max_inflight = 4;
  // When the learner says the run finished: return from Run() (OK) if no
  // new assignment arrives within `idle_timeout`; otherwise wait forever.
  // A learner that answers "not finished" meanwhile (a Stop without
  // run_finished: a run that stopped its actors early may still need more
  // data, or it is shutting down to restart) stops that clock until it
  // says "finished" again or stops answering.
  bool exit_when_idle = false;
  absl::Duration idle_timeout = absl::Seconds(2);
  // After the learner's Stop: how long to wait for the chunks written
  // before it to be read (the learner ends the call after the actor's
  // half-close) before cancelling the call.
  absl::Duration drain_timeout = absl::Seconds(10);
  // Registry the actor's Prometheus series go to, labelled with the actor
  // id (actor_metrics.h); not owned, must outlive the Actor. Null: none.
  prometheus::Registry* metrics = nullptr;
};

// The default dataset cache directory (see ActorOptions::cache_dir).
std::string DefaultCacheDir();

// The actor's network clients. A member left empty gets the gRPC
// implementation: learners through wire::GrpcLearnerClientFactory
// (max_message_bytes, rpc_deadline), the coordinator through
// wire::NewGrpcActorCoordinatorClient (5 s deadline; only when
// coordinator_address is set).
struct ActorClients {
  // Called with the learner address before every connection attempt.
  wire::LearnerClientFactory learners;
  // Asked for the learner before every connection (coordinator mode).
  std::unique_ptr<wire::ActorCoordinatorClient> coordinator;
};

class Actor {
 public:
  // Validates the options and fills in the defaults (actor id, cache dir);
  // connects only in Run(). Sets LibTorch to one intra-op thread for the
  // process. Errors: kInvalidArgument for an empty address, num_envs < 1,
  // max_inflight < 1 or a bad backoff/message limit.
  static absl::StatusOr<std::unique_ptr<Actor>> Create(
      const ActorOptions& options);
  // The same over the given clients (empty members: gRPC).
  static absl::StatusOr<std::unique_ptr<Actor>> Create(
      const ActorOptions& options, ActorClients clients);
  // Stops; Run() must have returned (its caller owns the threads it joins).
  ~Actor();

  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  // Connects and works until Stop() (or, with exit_when_idle, until the
  // learner finished the run and nothing new came within idle_timeout);
  // returns OK then. Stream errors and learner restarts are retried with
  // backoff, keeping the env and weights if the same run comes back.
  // Errors (not retried, Run returns them): kInvalidArgument /
  // kFailedPrecondition when an assignment cannot be run here (bad contract
  // JSON, env options the env refuses, contract and dataset or env sizes
  // that differ, weights that do not load into the contract's network, an
  // unwritable cache); kUnimplemented for a newer dataset format. Call once.
  absl::Status Run();

  // Makes Run() return promptly: cancels the stream and any dataset fetch
  // in flight. Idempotent; callable before, during or after Run().
  void Stop();

  // Calls Learner.GetStatus (rpc_deadline). Errors: the call's status
  // (kUnavailable when the learner is unreachable, kDeadlineExceeded).
  absl::StatusOr<v1::LearnerStatus> GetLearnerStatus();

  const std::string& actor_id() const { return options_.actor_id; }
  const ActorOptions& options() const { return options_; }

  // Counters since Create(). Env steps count one step of one env copy.
  int64_t env_steps_sent() const { return env_steps_sent_.load(); }
  int64_t chunks_sent() const { return chunks_sent_.load(); }
  int64_t chunks_acked_ok() const { return chunks_acked_ok_.load(); }
  int64_t chunks_rejected() const { return chunks_rejected_.load(); }
  // Connection attempts after the first.
  int64_t reconnects() const { return reconnects_.load(); }
  int64_t weight_versions_received() const {
    return weight_versions_received_.load();
  }
  // Version of the policy acting now; -1 before the first weights.
  int64_t current_version() const { return current_version_.load(); }
  // Rejected chunks by ChunkAck code (google.rpc code).
  std::map<int, int64_t> rejected_by_code() const;

 private:
  struct Policy;   // decoded weights of one version (LibTorch)
  struct Rollout;  // env, buffers and policy; owned by the rollout thread
  // A session ends with at most one of these (first writer wins).
  enum class SessionEnd {
    kNone,
    kStreamClosed,  // read/write failed or the learner closed the stream
    kLearnerStop,   // the learner sent Stop
    kResync,        // weights from the learner's future: re-register
    kError,         // session_error_ says why
    kIdle,          // exit_when_idle and nothing to do
  };

  Actor(const ActorOptions& options, ActorClients clients);
  // The learner to connect to: the coordinator's answer, else
  // learner_address.
  std::string LearnerAddress() const;

  // One connection: Hello, reader + rollout threads, until the session ends.
  // Returns the call's final status (for logging).
  absl::Status RunSession();
  void ReaderLoop(wire::ActCall* call);
  void RolloutLoop(wire::ActCall* call);
  void HandleAssignment(const v1::RunAssignment& assignment);
  void HandleWeights(const v1::WeightVersion& weights);
  // A model for `contract` to load a version's weights into: a pooled one
  // that no one holds any more, else a new one (added to the pool).
  // Loading overwrites every parameter and buffer, so a pooled model is as
  // good as a new one, and it skips the construction's initialisation (an
  // orthogonal init: a QR decomposition per layer, which cost the actor
  // more CPU than the inference of a 1024-step chunk at 2x512).
  std::shared_ptr<Policy> ReusablePolicy(
      const learner::PolicyContract& contract);
  void HandleAck(const v1::ChunkAck& ack);
  void HandleStop(const v1::Stop& stop);
  // Ends the current session (first call wins); wakes every waiter.
  void EndSession(SessionEnd end, absl::Status error);
  // After the learner's Stop: waits (drain_timeout at most, Stop() cuts it
  // short) for the rollout thread to half-close and the learner to end the
  // call; cancels `call` if it has not by then.
  void DrainSession(wire::ActCall* call);

  // Rollout thread. Returns OK when the session ends; errors end it.
  absl::Status RolloutChunks(wire::ActCall* call);
  // Builds the env for an assignment (kept if it is the one applied).
  // Errors: kFailedPrecondition / kInvalidArgument when the dataset, env
  // and contract disagree; EnsureDataset's errors.
  absl::Status ApplyAssignment(const v1::RunAssignment& assignment,
                               const learner::PolicyContract& contract);
  // The verified dataset from the cache, fetched first if absent or bad.
  // Errors: kUnavailable (fetch failed), kDataLoss (content does not hash
  // to the id), kFailedPrecondition (cache not writable), kUnimplemented.
  absl::StatusOr<env::Dataset> EnsureDataset(const std::string& dataset_id);
  // Streams the dataset to `path` (temporary file, then rename).
  absl::Status FetchDataset(const std::string& dataset_id,
                            const std::string& path);

  ActorOptions options_;
  std::string host_;
  // Set in the constructor, then only used.
  wire::LearnerClientFactory learner_factory_;
  std::unique_ptr<wire::ActorCoordinatorClient> coordinator_;  // or null

  // Touched only by the rollout thread, and by the supervisor while no
  // rollout thread runs (thread start/join order the accesses).
  // A fresh client per connection attempt: gRPC's own reconnect backoff
  // must not stack on ours (a fail-fast call on a channel in backoff fails
  // without trying, so an actor could miss a learner that is back).
  std::unique_ptr<wire::LearnerClient> learner_;
  std::unique_ptr<Rollout> rollout_;
  int64_t next_sequence_ = 0;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // any change below
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Calls to cancel on Stop(): the Act stream and a dataset fetch.
  wire::ActCall* call_ ABSL_GUARDED_BY(mu_) = nullptr;
  wire::DatasetFetch* fetch_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Learner of the current session (coordinator mode); written by Run()'s
  // thread, read by GetLearnerStatus too.
  std::string current_learner_ ABSL_GUARDED_BY(mu_);
  // Asks the coordinator which learner to join; keeps the previous answer
  // when it has none or cannot be reached.
  void ResolveLearner();
  // The newest assignment and its parsed contract; `assignment_gen_` counts
  // assignments so the rollout thread sees every new one.
  std::optional<v1::RunAssignment> assignment_ ABSL_GUARDED_BY(mu_);
  std::optional<learner::PolicyContract> contract_ ABSL_GUARDED_BY(mu_);
  int64_t assignment_gen_ ABSL_GUARDED_BY(mu_) = 0;
  // Newest decoded weights for assignment_'s run, not yet adopted.
  std::shared_ptr<Policy> pending_policy_ ABSL_GUARDED_BY(mu_);
  // Policies decoded so far, for reuse (ReusablePolicy): the acting one
  // (and its sampler's, until the next chunk replaces it), the pending one
  // and the one being loaded are at most four in use.
  absl::Mutex policy_pool_mu_;
  std::vector<std::shared_ptr<Policy>> policy_pool_
      ABSL_GUARDED_BY(policy_pool_mu_);
  std::string policy_pool_contract_ ABSL_GUARDED_BY(policy_pool_mu_);
  // Newest version held for assignment_'s run (pending or acting), -1 none.
  int64_t have_version_ ABSL_GUARDED_BY(mu_) = -1;
  // Flow control of the current session.
  // Unacknowledged chunks: sequence -> policy version.
  std::map<int64_t, int64_t> unacked_ ABSL_GUARDED_BY(mu_);
  int window_ ABSL_GUARDED_BY(mu_) = 4;
  // Current session's outcome.
  SessionEnd session_end_ ABSL_GUARDED_BY(mu_) = SessionEnd::kNone;
  absl::Status session_error_ ABSL_GUARDED_BY(mu_);
  bool session_assigned_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<v1::Stop> learner_stop_ ABSL_GUARDED_BY(mu_);
  // Set by the reader (its last Read failed or it gave up) and the rollout
  // thread (it writes no more) as they exit.
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  bool rollout_done_ ABSL_GUARDED_BY(mu_) = false;
  // Set when the learner finished our run; cleared by a new assignment and
  // by a Stop without run_finished while set (the learner has an unfinished
  // run), which sets awaiting_finish_: the clock then starts again at
  // "finished" or once the learner stops answering.
  std::optional<absl::Time> idle_since_ ABSL_GUARDED_BY(mu_);
  bool awaiting_finish_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int, int64_t> rejected_by_code_ ABSL_GUARDED_BY(mu_);
  // Version that caused the last resync (-2 = none): one per version.
  int64_t last_resync_version_ ABSL_GUARDED_BY(mu_) = -2;

  std::atomic<int64_t> env_steps_sent_{0};
  std::atomic<int64_t> chunks_sent_{0};
  std::atomic<int64_t> chunks_acked_ok_{0};
  std::atomic<int64_t> chunks_rejected_{0};
  std::atomic<int64_t> reconnects_{0};
  std::atomic<int64_t> weight_versions_received_{0};
  std::atomic<int64_t> current_version_{-1};
  // Sets current_version_ and the policy-version gauge.
  void SetCurrentVersion(int64_t version);
  // Null without ActorOptions::metrics; set in Create, then only read.
  std::unique_ptr<ActorMetrics> metrics_;
};

}  // namespace ristretto::actor

#endif  // RISTRETTO_ACTOR_ACTOR_H_
