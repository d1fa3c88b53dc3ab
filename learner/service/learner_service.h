// LearnerService: the learner's gRPC surface (callback API). Thin: proto →
// RunHost call → proto. Each actor stream is an ActorStream (the protocol)
// on a gRPC reactor (the transport): it assigns the actor to the run with
// the fewest actors, sends the assignment and the newest weights,
// validates every chunk (ParseActorMessage + DecodeChunk straight from the
// received buffers, then RunHost::Ingest) and acknowledges it with a
// precise code; new weight versions are pushed as they are published (one
// serialised message shared by all actors). ActorStream runs on any
// ActorTransport, so tests drive a stream in-process without a server.
//
// Authentication (docs/security.md), when options.token is set or a ticket
// key was given (SetTicketKey; coordinated mode with a token): every call
// carries "authorization: Bearer <credential>", where the credential is
//   options.token   an operator: GetStatus; and, when
//                   options.token_admits_actors (stand-alone), every actor:
//                   any actor id, any served dataset. Coordinated, the
//                   token is the one every learner registers with, so it
//                   does not admit Act or FetchDataset (PERMISSION_DENIED):
//                   another learner's host holding it cannot stream into
//                   this learner's runs;
//   an actor ticket minted by the coordinator (auth::VerifyActorTicket,
//                   checked here against the current and previous key, no
//                   call to the coordinator): Act only with the ticket's
//                   actor id in Hello, FetchDataset only for datasets of
//                   runs this learner assigned to that actor id and still
//                   hosts; no GetStatus. A ticket the coordinator bound to
//                   the actor's client certificate (rt2, coordinator under
//                   mutual TLS) is good only over a connection that
//                   presented that certificate (PERMISSION_DENIED else).
// No, a malformed, forged or expired credential: UNAUTHENTICATED; a valid
// one used beyond it: PERMISSION_DENIED. Both are counted
// (ristretto_learner_rpc_denied_total) and logged. Without a token and key
// nothing is authenticated (development mode, loopback only).
// Thread-safe; owned by the learner's main, which destroys it after the
// grpc::Server has shut down.
#ifndef RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_
#define RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "learner/service/run_host.h"
#include "proto/ristretto.grpc.pb.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_wire.h"

namespace ristretto::learner {

class LearnerMetrics;
enum class RejectReason;  // learner_metrics.h

struct LearnerServiceOptions {
  wire::ChunkLimits limits;  // largest chunk accepted (T, B)
  // Most chunks an actor may have unacknowledged; each run sizes its
  // actors' credit below this to its max_policy_lag (RunHost::ActorCredits).
  int credits = 4;
  // Most actors streaming into one run at once; a Hello beyond it on every
  // run is told "every run has its maximum of N actors" (not finished: it
  // may retry later). Bounds what a flood of actors can cost a run.
  int max_actors_per_run = 64;
  // A dataset file served by FetchDataset from the start (more can be
  // added with AddDataset). Assignments carry each run's own dataset id,
  // episode length and rollout length (RunSpec::trainer).
  std::string dataset_path;
  std::string dataset_id;
  // Where rejections by reason and the hosted run count go (not owned;
  // must outlive the service). Null: no metrics.
  LearnerMetrics* metrics = nullptr;
  // The credential of operators and, in stand-alone mode, of actors
  // (--token-file / $RISTRETTO_TOKEN: with --coordinator the token the
  // learner registers with). Empty, and no ticket key given: calls are not
  // authenticated.
  std::string token;
  // Whether `token` may also act as any actor (Act with any actor id,
  // FetchDataset of any served dataset). True stand-alone, where actors
  // present the token; false with --coordinator, where the token is what
  // every learner registers with (the learners' token): actors present a
  // ticket, and the token reads GetStatus only.
  bool token_admits_actors = true;
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

  // The key the coordinator MACs actor tickets for `member_id` with
  // (RegisterLearnerResponse.ticket_key); the previous key stays valid, older
  // ones do not. From then on calls are authenticated.
  void SetTicketKey(const std::string& member_id, const std::string& key);
  // True when calls are authenticated (a token or a ticket key).
  bool authenticating() const;
  // The caller of `context` (its "authorization" metadata): the operator
  // for options.token, an actor for a valid ticket. In development mode
  // always the operator. kUnauthenticated otherwise; kPermissionDenied for
  // a ticket bound to a client certificate (rt2) that the call's connection
  // did not present (another one, or none: a learner without mutual TLS
  // cannot check the binding, so it refuses such tickets).
  absl::StatusOr<auth::Principal> Authenticate(
      const grpc::ServerContextBase& context) const;
  // Counts and logs a refused call and returns its gRPC status.
  grpc::Status Deny(const char* method, const absl::Status& status);
  // Remembers that `actor_id` (a ticket holder) was assigned `run_id`: it
  // may then fetch that run's dataset while the run is hosted.
  void NoteAssignment(const std::string& actor_id, const std::string& run_id);
  // kOk when `caller` may download `dataset_id`, else kPermissionDenied.
  absl::Status MayFetch(const auth::Principal& caller,
                        const std::string& dataset_id) const;
  // kOk when `caller` may call `method` (Act, FetchDataset) as an actor:
  // a ticket holder, or the operator unless options.token_admits_actors
  // is false and calls are authenticated (kPermissionDenied).
  absl::Status MayActAsActor(const auth::Principal& caller,
                             absl::string_view method) const;

  void AddRun(std::shared_ptr<RunHost> run);
  void RemoveRun(const std::string& run_id);
  void AddDataset(const std::string& id, const std::string& path);
  std::vector<std::shared_ptr<RunHost>> runs() const;

  // Used by the reactors: among the unfinished runs that absorb one more
  // actor stepping `env_copies` env copies (RunHost::AbsorbsActor: its
  // chunks arrive within max_policy_lag beside the run's other actors; a
  // run without actors takes any), `want_run_id` if it is one of them, else
  // the one with the fewest actors; when none absorbs it, the run with the
  // fewest actors all the same (an idle actor costs more throughput than
  // its chunks that go stale); nullptr only when no run accepts actors or
  // every one has max_actors_per_run. env_copies ≤ 0 (not said): every run
  // absorbs it. A run that cut `actor_id` off (RunHost::IsCutOff) is never
  // assigned to it. `*refusal` (if not null) says why none was assigned.
  enum class Refusal {
    kNone,       // a run was assigned
    kNoRun,      // no run is accepting actors
    kMaxActors,  // every accepting run has max_actors_per_run actors
    kCutOff,     // every other accepting run has cut this actor off
  };
  std::shared_ptr<RunHost> AssignRun(const std::string& want_run_id,
                                     int64_t env_copies,
                                     Refusal* refusal = nullptr,
                                     const std::string& actor_id = "");
  // Undoes AssignRun for an actor stepping `env_copies` copies.
  void ReleaseRun(RunHost* run, int64_t env_copies);
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
  // Per run: env steps of one chunk of each of its actors, summed.
  std::map<std::string, int64_t> actor_steps_ ABSL_GUARDED_BY(mu_);
  // Ticket holders' actor ids -> the hosted runs they were assigned.
  std::map<std::string, std::set<std::string>> actor_runs_ ABSL_GUARDED_BY(mu_);
  auth::TicketKeys ticket_keys_;
  void ExportRunsHosted() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

// What an ActorStream reads from and writes to: gRPC's bidi reactor in the
// service, a recording fake in tests. At most one read and one write are
// outstanding at a time; each completes with ActorStream::OnReadDone /
// OnWriteDone. The stream calls these with its own lock held: an
// implementation must not call back into the stream from them.
class ActorTransport {
 public:
  virtual ~ActorTransport() = default;
  // Reads the next actor message into `*into` (kept alive by the stream).
  virtual void RequestRead(grpc::ByteBuffer* into) = 0;
  // Writes one serialised LearnerMessage (kept alive until OnWriteDone).
  virtual void Write(const grpc::ByteBuffer* message) = 0;
  // Ends the call with `status` (no read or write outstanding after it).
  virtual void End(const grpc::Status& status) = 0;
};

// One actor's Act stream, the protocol without the transport. Hello: the
// stream is assigned a run (LearnerService::AssignRun) and sends the
// RunAssignment, then the newest weights, then every new version; a run
// that has stopped or finished sends Stop ("learner shutting down" or "run
// finished"). Chunk: decoded against the run's contract and ingested; the
// ChunkAck carries the code (OK; INVALID_ARGUMENT malformed or wrong sizes;
// NOT_FOUND another run; FAILED_PRECONDITION stale, finished, or before
// Hello) and the run's credit; a parked chunk (full queue) is acknowledged
// once queued, and reading pauses until then. The transport's events may
// come from any thread; weight and queue callbacks come from the run's
// training thread.
class ActorStream {
 public:
  // `caller`: who opened the call (LearnerService::Authenticate); an actor
  // principal may say only its own id in Hello (else the call ends with
  // PERMISSION_DENIED).
  ActorStream(LearnerService* service, ActorTransport* transport,
              auth::Principal caller = {auth::Role::kOperator, "operator"});
  ~ActorStream();
  ActorStream(const ActorStream&) = delete;
  ActorStream& operator=(const ActorStream&) = delete;

  // Requests the first read. Call once, after construction.
  void Start();
  // The transport's completions.
  void OnReadDone(bool ok);
  void OnWriteDone(bool ok);
  void OnCancel();
  // The call is over: no more callbacks reach this stream; the actor's run
  // is released. The stream may be destroyed after it.
  void OnDone();

 private:
  struct Link;  // this stream, for callbacks that may outlive it
  using MessagePtr = std::shared_ptr<const grpc::ByteBuffer>;
  using WeightsPtr = std::shared_ptr<const RunHost::PublishedWeights>;

  void OnWeights(const WeightsPtr& weights);
  void OnQueued(int64_t sequence);
  int Credits() const;
  void ContinueReading();
  void Send(MessagePtr message);
  void FinishWhenDrained(const grpc::Status& status);
  void Reject(int64_t sequence, absl::StatusCode code,
              absl::string_view message, std::optional<RejectReason> reason);
  void HandleHello();
  void HandleChunk();

  LearnerService* const service_;
  ActorTransport* const transport_;
  const auth::Principal caller_;
  const std::shared_ptr<Link> link_;
  grpc::ByteBuffer in_;
  wire::ActorFrame frame_;  // the parsed in_ (reader's thread only)
  // Env steps (T × B) of this actor's latest decoded chunk; read when acks
  // are sent, also from the training thread (OnQueued).
  std::atomic<int64_t> chunk_steps_{0};
  // Set once by the first Hello (reader's thread); shared so a run removed
  // from the service stays valid until its last stream ends.
  std::shared_ptr<RunHost> run_;
  int64_t env_copies_ = 0;  // the Hello's, as given to AssignRun
  // The Hello's actor id (a ticket's own): every chunk of this stream is
  // this actor's, whatever its actor_id field says (HandleChunk).
  std::string actor_id_;
  int listener_ = -1;
  bool done_ = false;  // OnDone ran (reader's thread)
  // Sequence of the last chunk that passed the order check (reader's
  // thread only); -1 before the first.
  int64_t last_sequence_ = -1;
  // Refusals for a value outside the run's bound logged with the bound
  // (reader's thread only); the first kBoundRefusalsLogged of a stream.
  static constexpr int kBoundRefusalsLogged = 5;
  int bound_refusals_logged_ = 0;

  absl::Mutex mu_;
  std::deque<MessagePtr> outbox_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
  int64_t sent_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool stop_sent_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_LEARNER_SERVICE_H_
