// FakeLearner: an in-memory learner for unit tests of actor::Actor, behind
// wire::LearnerClient (no sockets). Each connection the actor makes
// (Factory()) becomes a FakeActCall the test can inspect and drive from the
// learner's side: what the actor wrote (Hello, chunks with their sequence
// numbers, the half-close), messages to deliver to its reader (Send), and
// the end of the call (End, with the status Finish() returns).
//
// Reactions run on the actor's threads, synchronously inside the write
// that triggers them, and may only call FakeActCall's learner-side methods:
//  * on_hello(call, hello): nothing by default (the test sends the
//    assignment, or scripts it here);
//  * on_chunk(call, sequence, chunk): by default an OK ChunkAck for the
//    sequence (no credits field); set to nullptr to acknowledge by hand;
//  * on_writes_done(call): by default End(OK), as the real learner ends the
//    call once it has read every chunk written before the half-close.
// FailConnections(n, status) makes the next n calls fail as an unreachable
// learner's do over gRPC: the Hello write fails and Finish() gives status.
// FetchDataset serves datasets added with AddDataset (kUnavailable
// otherwise, as the gRPC client reports any failed download; BlockFetches
// holds a download until it is cancelled).
//
// FakeActorCoordinatorClient answers FindLearner with a settable address.
//
// Thread-safe: the actor's threads call in while the test reads.
#ifndef RISTRETTO_TESTS_ACTOR_FAKE_LEARNER_CLIENT_H_
#define RISTRETTO_TESTS_ACTOR_FAKE_LEARNER_CLIENT_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "env/dataset.h"
#include "learner/trajectory.h"
#include "proto/coordinator.pb.h"
#include "proto/ristretto.pb.h"
#include "wire/learner_client.h"

namespace ristretto::actor {

// One Act call, seen from the learner. Shared by the fake learner (the
// test's handle) and the actor's wire::ActCall.
class FakeActCall {
 public:
  struct SentChunk {
    int64_t sequence = 0;
    // The actor's own buffer, held as the gRPC call would hold it (the
    // actor must not reuse it while it is referenced).
    std::shared_ptr<const learner::TrajectoryChunk> chunk;
  };
  using HelloHandler = std::function<void(FakeActCall&, const v1::Hello&)>;
  using ChunkHandler = std::function<void(FakeActCall&, int64_t sequence,
                                          const learner::TrajectoryChunk&)>;
  using DoneHandler = std::function<void(FakeActCall&)>;

  FakeActCall(std::string address, HelloHandler on_hello, ChunkHandler on_chunk,
              DoneHandler on_writes_done)
      : address_(std::move(address)),
        on_hello_(std::move(on_hello)),
        on_chunk_(std::move(on_chunk)),
        on_writes_done_(std::move(on_writes_done)) {}

  // ---- Learner side (the test and the reactions).

  // Queues a message for the actor's Read (ignored once the call is over).
  void Send(v1::LearnerMessage message) {
    absl::MutexLock lock(&mu_);
    if (!ended_ && !cancelled_) inbox_.push_back(std::move(message));
  }
  // Ends the call: the actor reads what was sent before, then Read fails;
  // writes fail from now on; Finish() returns `status`. First end wins.
  void End(absl::Status status) {
    absl::MutexLock lock(&mu_);
    if (ended_ || cancelled_) return;
    ended_ = true;
    end_status_ = std::move(status);
  }

  const std::string& address() const { return address_; }
  std::optional<v1::Hello> hello() const {
    absl::MutexLock lock(&mu_);
    return hello_;
  }
  std::vector<SentChunk> chunks() const {
    absl::MutexLock lock(&mu_);
    return chunks_;
  }
  size_t num_chunks() const {
    absl::MutexLock lock(&mu_);
    return chunks_.size();
  }
  bool cancelled() const {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }
  bool writes_done() const {
    absl::MutexLock lock(&mu_);
    return writes_done_;
  }
  bool finished() const {
    absl::MutexLock lock(&mu_);
    return finished_;
  }
  // Polls `done(*this)` (every millisecond) until it holds; false after
  // `timeout`.
  bool WaitFor(const std::function<bool(const FakeActCall&)>& done,
               absl::Duration timeout) const {
    const absl::Time deadline = absl::Now() + timeout;
    while (!done(*this)) {
      if (absl::Now() >= deadline) return false;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return true;
  }
  bool WaitForChunks(size_t n, absl::Duration timeout) const {
    return WaitFor([n](const FakeActCall& c) { return c.num_chunks() >= n; },
                   timeout);
  }

  // ---- Actor side (behind wire::ActCall).

  bool WriteHello(const v1::Hello& hello) {
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || cancelled_) return false;
      hello_ = hello;
    }
    if (on_hello_) on_hello_(*this, hello);
    return true;
  }
  bool WriteChunk(std::shared_ptr<const learner::TrajectoryChunk> chunk,
                  int64_t sequence) {
    const learner::TrajectoryChunk* view = chunk.get();
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || cancelled_ || writes_done_) return false;
      chunks_.push_back({sequence, std::move(chunk)});
    }
    if (on_chunk_) on_chunk_(*this, sequence, *view);
    return true;
  }
  bool WritesDone() {
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || cancelled_) return false;
      writes_done_ = true;
    }
    if (on_writes_done_) on_writes_done_(*this);
    return true;
  }
  bool Read(v1::LearnerMessage* message) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &FakeActCall::Readable));
    if (cancelled_ || inbox_.empty()) return false;
    *message = std::move(inbox_.front());
    inbox_.pop_front();
    return true;
  }
  void Cancel() {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  absl::Status Finish() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &FakeActCall::Over));
    finished_ = true;
    // An end the learner chose before the cancel keeps its status.
    if (ended_) return end_status_;
    return absl::CancelledError("Cancelled");
  }

 private:
  bool Over() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_ || ended_;
  }
  bool Readable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Over() || !inbox_.empty();
  }

  const std::string address_;
  const HelloHandler on_hello_;
  const ChunkHandler on_chunk_;
  const DoneHandler on_writes_done_;

  mutable absl::Mutex mu_;
  std::deque<v1::LearnerMessage> inbox_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<v1::Hello> hello_ ABSL_GUARDED_BY(mu_);
  std::vector<SentChunk> chunks_ ABSL_GUARDED_BY(mu_);
};

class FakeLearner {
 public:
  FakeLearner()
      : on_chunk_([](FakeActCall& call, int64_t sequence,
                     const learner::TrajectoryChunk& /*chunk*/) {
          v1::LearnerMessage ack;
          ack.mutable_ack()->set_sequence(sequence);
          call.Send(std::move(ack));
        }),
        on_writes_done_([](FakeActCall& call) { call.End(absl::OkStatus()); }) {
  }

  FakeLearner(const FakeLearner&) = delete;
  FakeLearner& operator=(const FakeLearner&) = delete;

  // The factory to give the Actor (ActorClients::learners). The fake must
  // outlive the actor.
  wire::LearnerClientFactory Factory() {
    return [this](const std::string& address) {
      return std::unique_ptr<wire::LearnerClient>(new Client(this, address));
    };
  }

  // Reactions of the calls started from now on (see the file comment).
  void set_on_hello(FakeActCall::HelloHandler f) {
    absl::MutexLock lock(&mu_);
    on_hello_ = std::move(f);
  }
  void set_on_chunk(FakeActCall::ChunkHandler f) {
    absl::MutexLock lock(&mu_);
    on_chunk_ = std::move(f);
  }
  void set_on_writes_done(FakeActCall::DoneHandler f) {
    absl::MutexLock lock(&mu_);
    on_writes_done_ = std::move(f);
  }
  // The next `n` calls fail at once with `status` (an unreachable learner).
  void FailConnections(int n, const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < n; ++i) failures_.push_back(status);
  }
  void AddDataset(const env::Dataset& dataset) {
    absl::MutexLock lock(&mu_);
    datasets_[dataset.ComputeId()] = dataset;
  }
  // Downloads wait until cancelled (then fail kUnavailable).
  void BlockFetches() {
    absl::MutexLock lock(&mu_);
    block_fetches_ = true;
  }
  void SetStatus(absl::StatusOr<v1::LearnerStatus> status) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
  }

  // Every call started, in order (failed connections included).
  std::vector<std::shared_ptr<FakeActCall>> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  size_t num_calls() const {
    absl::MutexLock lock(&mu_);
    return calls_.size();
  }
  // Call `i` once it exists; null after `timeout`.
  std::shared_ptr<FakeActCall> WaitForCall(size_t i,
                                           absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    const auto has_call = [this, i]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return calls_.size() > i;
    };
    mu_.AwaitWithTimeout(absl::Condition(&has_call), timeout);
    return calls_.size() > i ? calls_[i] : nullptr;
  }
  // Addresses clients were made for (one per connection attempt, plus
  // GetStatus calls), in order.
  std::vector<std::string> addresses() const {
    absl::MutexLock lock(&mu_);
    return addresses_;
  }
  int fetches() const {
    absl::MutexLock lock(&mu_);
    return fetches_;
  }
  int fetches_cancelled() const {
    absl::MutexLock lock(&mu_);
    return fetches_cancelled_;
  }

 private:
  class ActorEnd final : public wire::ActCall {
   public:
    explicit ActorEnd(std::shared_ptr<FakeActCall> call)
        : call_(std::move(call)) {}
    bool WriteHello(const v1::Hello& hello) override {
      return call_->WriteHello(hello);
    }
    bool WriteChunk(std::shared_ptr<const learner::TrajectoryChunk> chunk,
                    int64_t sequence) override {
      return call_->WriteChunk(std::move(chunk), sequence);
    }
    bool WritesDone() override { return call_->WritesDone(); }
    bool Read(v1::LearnerMessage* message) override {
      return call_->Read(message);
    }
    void Cancel() override { call_->Cancel(); }
    absl::Status Finish() override { return call_->Finish(); }

   private:
    std::shared_ptr<FakeActCall> call_;
  };

  class Fetch final : public wire::DatasetFetch {
   public:
    Fetch(FakeLearner* learner, std::string id)
        : learner_(learner), id_(std::move(id)) {}
    absl::Status Receive(const std::string& path) override {
      env::Dataset dataset;
      {
        absl::MutexLock lock(&learner_->mu_);
        ++learner_->fetches_;
        if (learner_->block_fetches_) {
          learner_->mu_.Await(absl::Condition(&cancelled_));
        }
        if (cancelled_) {
          ++learner_->fetches_cancelled_;
          return absl::UnavailableError("fetch cancelled");
        }
        auto it = learner_->datasets_.find(id_);
        if (it == learner_->datasets_.end()) {
          // ReceiveDatasetFile makes every failed call kUnavailable.
          return absl::UnavailableError(
              absl::StrCat("FetchDataset failed: NOT_FOUND: dataset '", id_,
                           "' is not served here"));
        }
        dataset = it->second;
      }
      return env::WriteDataset(dataset, path);
    }
    void Cancel() override {
      absl::MutexLock lock(&learner_->mu_);
      cancelled_ = true;
    }

   private:
    FakeLearner* learner_;
    const std::string id_;
    bool cancelled_ = false;  // guarded by learner_->mu_
  };

  class Client final : public wire::LearnerClient {
   public:
    Client(FakeLearner* learner, std::string address)
        : learner_(learner), address_(std::move(address)) {
      absl::MutexLock lock(&learner_->mu_);
      learner_->addresses_.push_back(address_);
    }
    std::unique_ptr<wire::ActCall> Act() override {
      return std::make_unique<ActorEnd>(learner_->NewCall(address_));
    }
    std::unique_ptr<wire::DatasetFetch> FetchDataset(
        const std::string& dataset_id) override {
      return std::make_unique<Fetch>(learner_, dataset_id);
    }
    absl::StatusOr<v1::LearnerStatus> GetStatus() override {
      absl::MutexLock lock(&learner_->mu_);
      return learner_->status_;
    }

   private:
    FakeLearner* learner_;
    const std::string address_;
  };

  std::shared_ptr<FakeActCall> NewCall(const std::string& address) {
    absl::MutexLock lock(&mu_);
    auto call = std::make_shared<FakeActCall>(address, on_hello_, on_chunk_,
                                              on_writes_done_);
    if (!failures_.empty()) {
      call->End(failures_.front());
      failures_.pop_front();
    }
    calls_.push_back(call);
    return call;
  }

  mutable absl::Mutex mu_;
  FakeActCall::HelloHandler on_hello_ ABSL_GUARDED_BY(mu_);
  FakeActCall::ChunkHandler on_chunk_ ABSL_GUARDED_BY(mu_);
  FakeActCall::DoneHandler on_writes_done_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> failures_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, env::Dataset> datasets_ ABSL_GUARDED_BY(mu_);
  bool block_fetches_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusOr<v1::LearnerStatus> status_ ABSL_GUARDED_BY(mu_) =
      v1::LearnerStatus();
  std::vector<std::shared_ptr<FakeActCall>> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mu_);
  int fetches_ ABSL_GUARDED_BY(mu_) = 0;
  int fetches_cancelled_ ABSL_GUARDED_BY(mu_) = 0;
};

// Coordinator.FindLearner from memory: answers with address() (empty: no
// learner has work) or error().
class FakeActorCoordinatorClient final : public wire::ActorCoordinatorClient {
 public:
  void set_address(std::string address) {
    absl::MutexLock lock(&mu_);
    address_ = std::move(address);
  }
  void set_error(absl::Status error) {
    absl::MutexLock lock(&mu_);
    error_ = std::move(error);
  }
  std::vector<v1::FindLearnerRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

  absl::StatusOr<v1::FindLearnerResponse> FindLearner(
      const v1::FindLearnerRequest& request) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    if (!error_.ok()) return error_;
    v1::FindLearnerResponse response;
    response.set_learner_address(address_);
    return response;
  }

 private:
  mutable absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::FindLearnerRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::actor

#endif  // RISTRETTO_TESTS_ACTOR_FAKE_LEARNER_CLIENT_H_
