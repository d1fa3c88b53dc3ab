// The calls an actor makes over the network, behind small interfaces so
// that actor::Actor can be driven in-process by fakes in unit tests
// (tests/actor/fake_learner_client.h):
//  * LearnerClient: one connection to one learner (proto/ristretto.proto,
//    service Learner): the Act stream (ActCall), dataset downloads
//    (DatasetFetch) and GetStatus. The actor makes a fresh client for each
//    connection attempt (LearnerClientFactory).
//  * ActorCoordinatorClient: Coordinator.FindLearner (which learner an
//    actor joins when it is given a coordinator instead of a learner).
// The gRPC implementations (NewGrpcLearnerClient,
// NewGrpcActorCoordinatorClient) hold the stub code; every call result goes
// through grpc_status.h (FromGrpcStatus), so codes keep their names.
//  * LearnerCredential: what the actor presents to learners
//    ("authorization: Bearer <credential>", docs/security.md): the token
//    (--learner mode) or the actor ticket of the last FindLearner answer
//    (coordinator mode: the coordinator client stores it, the learner
//    clients read it at the start of every call).
//
// Thread-safety: see each class.
#ifndef RISTRETTO_WIRE_LEARNER_CLIENT_H_
#define RISTRETTO_WIRE_LEARNER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "learner/trajectory.h"
#include "proto/coordinator.pb.h"
#include "proto/ristretto.pb.h"

namespace ristretto::wire {

// The bearer credential an actor presents to learners; empty: none.
// Thread-safe.
class LearnerCredential {
 public:
  explicit LearnerCredential(std::string initial = "")
      : value_(std::move(initial)) {}
  std::string Get() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return value_;
  }
  void Set(std::string value) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    value_ = std::move(value);
  }

 private:
  mutable absl::Mutex mu_;
  std::string value_ ABSL_GUARDED_BY(mu_);
};

// The actor's end of one Learner.Act call (a bidirectional stream that is
// already started). Thread-safety: one thread may write (WriteHello,
// WriteChunk, WritesDone) while another reads; Cancel() may be called from
// any thread at any time; Finish() once, after the reader and the writer
// are done.
class ActCall {
 public:
  virtual ~ActCall() = default;

  // Sends ActorMessage{hello}. false: the call is over (Finish says why).
  virtual bool WriteHello(const v1::Hello& hello) = 0;
  // Sends ActorMessage{chunk} with `sequence`. The chunk is shared, not
  // copied (the gRPC call sends its arrays in place): it must not change
  // until the last reference is released. false: the call is over.
  virtual bool WriteChunk(std::shared_ptr<const learner::TrajectoryChunk> chunk,
                          int64_t sequence) = 0;
  // Half-closes: the actor writes no more. false: the call is over.
  virtual bool WritesDone() = 0;
  // Blocks for the learner's next message. false: the call is over (the
  // learner ended it, it failed, or it was cancelled).
  virtual bool Read(v1::LearnerMessage* message) = 0;
  // Ends the call from this side: blocked and later reads and writes
  // return false promptly. Idempotent.
  virtual void Cancel() = 0;
  // The call's final status (kCancelled after Cancel(), kUnavailable when
  // the learner could not be reached, the learner's own status otherwise).
  // Blocks until the learner ends the call unless it was cancelled.
  virtual absl::Status Finish() = 0;
};

// One dataset download (Learner.FetchDataset). Thread-safety: Receive()
// once on one thread; Cancel() from any thread, before or during it.
class DatasetFetch {
 public:
  virtual ~DatasetFetch() = default;

  // Streams the dataset into the file `path` (ReceiveDatasetFile in
  // dataset_cache.h: kUnavailable when the call fails, kDataLoss for a
  // broken stream; the caller verifies the content hash).
  virtual absl::Status Receive(const std::string& path) = 0;
  // Makes Receive() return promptly (kUnavailable). Idempotent.
  virtual void Cancel() = 0;
};

// A connection to one learner. Thread-safe: calls may run concurrently.
class LearnerClient {
 public:
  virtual ~LearnerClient() = default;

  // Starts a Learner.Act call. Never null: a learner that cannot be reached
  // shows up as a failed first write and Finish()'s kUnavailable.
  virtual std::unique_ptr<ActCall> Act() = 0;
  // Prepares a download of `dataset_id` (nothing is sent before Receive).
  virtual std::unique_ptr<DatasetFetch> FetchDataset(
      const std::string& dataset_id) = 0;
  // Learner.GetStatus. Errors: the call's status (kUnavailable when the
  // learner is unreachable, kDeadlineExceeded).
  virtual absl::StatusOr<v1::LearnerStatus> GetStatus() = 0;
};

// Makes a client for a learner address (HOST:PORT).
using LearnerClientFactory =
    std::function<std::unique_ptr<LearnerClient>(const std::string& address)>;

struct GrpcLearnerClientOptions {
  // Largest gRPC message sent or received, bytes.
  int max_message_bytes = 64 << 20;
  // Deadline of GetStatus and of a whole FetchDataset download.
  absl::Duration rpc_deadline = absl::Seconds(60);
  // The channel's security: TLS that verifies the learner (and may present
  // a client certificate) from MakeChannelCredentials
  // (common/grpc_security.h). Null: plaintext. Under TLS the learner's
  // certificate must name the host of the address dialled (DNS or IP SAN).
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Presented as "authorization: Bearer <value>" on every call (read when
  // the call starts); null or empty: no authorization metadata.
  std::shared_ptr<const LearnerCredential> bearer;
};

// The production client: a channel of its own to `address` (no shared
// subchannels, so its first call makes a real connection attempt and
// gRPC's reconnect backoff never stacks on the caller's), secured by
// options.credentials. Never fails to construct: a learner that refuses
// the handshake shows up as kUnavailable on the calls.
std::unique_ptr<LearnerClient> NewGrpcLearnerClient(
    const std::string& address, const GrpcLearnerClientOptions& options);

// A factory of NewGrpcLearnerClient with `options`.
LearnerClientFactory GrpcLearnerClientFactory(
    const GrpcLearnerClientOptions& options);

// What an actor asks of the coordinator. Thread-safe.
class ActorCoordinatorClient {
 public:
  virtual ~ActorCoordinatorClient() = default;

  // Coordinator.FindLearner. An empty learner_address: no learner has work
  // now. Errors: the call's status (kUnavailable, kDeadlineExceeded, …).
  virtual absl::StatusOr<v1::FindLearnerResponse> FindLearner(
      const v1::FindLearnerRequest& request) = 0;
};

// The production client: every call on a fresh channel to `address` (a
// coordinator that restarted is found at once) secured by `credentials`
// (null: plaintext; see GrpcLearnerClientOptions::credentials), bounded by
// `rpc_deadline`. Every call presents `token` (the cluster token, the
// actor's credential on a coordinator that has one) as "authorization:
// Bearer <token>" metadata; none when empty. A successful FindLearner
// stores its actor_ticket in `tickets` (when not null): the credential the
// learner clients then present to the learner named.
std::unique_ptr<ActorCoordinatorClient> NewGrpcActorCoordinatorClient(
    const std::string& address, absl::Duration rpc_deadline,
    std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr,
    const std::string& token = "",
    std::shared_ptr<LearnerCredential> tickets = nullptr);

}  // namespace ristretto::wire

#endif  // RISTRETTO_WIRE_LEARNER_CLIENT_H_
