// Fixtures of the in-process RunHost and LearnerService tests: a small
// synthetic market, a run spec with a tiny network, chunks that fit it, and
// a recording ActorTransport that drives an ActorStream without a server.
#ifndef RISTRETTO_TESTS_LEARNER_SERVICE_RUN_TEST_UTIL_H_
#define RISTRETTO_TESTS_LEARNER_SERVICE_RUN_TEST_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "env/market_data.h"
#include "env/synthetic.h"
#include "grpcpp/support/byte_buffer.h"
#include "gtest/gtest.h"
#include "learner/chunk_limits.h"
#include "learner/contract.h"
#include "learner/run_options.h"
#include "learner/service/learner_service.h"
#include "learner/service/run_host.h"
#include "learner/trajectory.h"
#include "proto/ristretto.pb.h"
#include "tests/learner/torch/learner_test_util.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_wire.h"

namespace ristretto::learner::testing {

// 2 assets (kActions) x 400 bars: built once per test binary.
inline std::shared_ptr<const env::MarketData> SmallMarket() {
  static const std::shared_ptr<const env::MarketData>* market = [] {
    env::SyntheticMarketOptions synth;
    synth.num_assets = kActions;
    synth.num_rows = 400;
    synth.seed = 3;
    absl::StatusOr<env::Dataset> dataset = env::GenerateSyntheticDataset(synth);
    EXPECT_TRUE(dataset.ok()) << dataset.status();
    absl::StatusOr<std::shared_ptr<const env::MarketData>> m =
        env::MarketData::FromDataset(*dataset);
    EXPECT_TRUE(m.ok()) << m.status();
    return new std::shared_ptr<const env::MarketData>(*m);
  }();
  return *market;
}

inline int SmallObsSize() {
  const env::MarketData& m = *SmallMarket();
  return static_cast<int>(1 + m.num_assets + m.num_features);  // lookback 1
}

// A run of 8,8 networks trained in updates of 16 env steps (one chunk of
// 8 steps x 2 copies), 1 epoch, no checkpoints, no validation.
inline RunSpec SmallSpec(const std::string& run_id, int64_t budget = 1 << 20) {
  absl::StatusOr<TrainerOptions> o =
      RunOptionsFromFlags({{"policy-hidden", "8,8"},
                           {"epochs", "1"},
                           {"minibatch", "16"},
                           {"budget", std::to_string(budget)},
                           {"rollout", "8"},
                           {"episode", "50"}});
  EXPECT_TRUE(o.ok()) << o.status();
  RunSpec spec;
  spec.run_id = run_id;
  spec.trainer = *o;
  spec.trainer.dataset_id = "small-market";
  const env::MarketData& m = *SmallMarket();
  // Feature names are per asset; the market's features are all assets'.
  for (int64_t f = 0; f < m.num_features / m.num_assets; ++f) {
    spec.trainer.feature_names.push_back("f" + std::to_string(f));
  }
  spec.trainer.train_domains = {env::Domain{0, m.num_rows}};
  spec.samples_per_update = 16;
  spec.queue_capacity = 2;
  return spec;
}

// The value bounds of a SmallSpec run on SmallMarket, as RunHost derives
// them (learner/chunk_limits.h).
inline const ChunkValueBounds& SmallBounds() {
  static const ChunkValueBounds* bounds = [] {
    const RunSpec spec = SmallSpec("bounds");
    std::vector<std::string> symbols;
    for (const env::AssetMeta& a : SmallMarket()->assets) {
      symbols.push_back(a.symbol);
    }
    const PolicyContract contract =
        PolicyContract::Make(spec.trainer.env, spec.trainer.network, symbols,
                             spec.trainer.feature_names, "");
    absl::StatusOr<ChunkValueBounds> b = DeriveChunkValueBounds(
        contract, *SmallMarket(), spec.trainer.episode_steps);
    EXPECT_TRUE(b.ok()) << b.status();
    return new ChunkValueBounds(b.value_or(ChunkValueBounds{}));
  }();
  return *bounds;
}

// A chunk of 8 steps x 2 copies (16 env steps) acted by `version`, its
// random values inside SmallBounds() (so the learner's decoding accepts
// it): each observation element spread over its range, rewards over half
// of theirs.
inline TrajectoryChunk SmallChunk(const std::string& run_id, int64_t version,
                                  uint64_t seed = 1) {
  TrajectoryChunk c = MakeChunk(version, 8, 2, seed, SmallObsSize());
  c.run_id = run_id;
  const ChunkValueBounds& b = SmallBounds();
  auto spread = [&b](std::vector<float>* values) {
    for (size_t i = 0; i < values->size(); ++i) {
      const ValueRange& r = b.obs[i % b.obs.size()];
      float& v = (*values)[i];  // uniform in [-2, 2)
      v = std::clamp(r.lo + (v + 2.0f) / 4.0f * (r.hi - r.lo), r.lo, r.hi);
    }
  };
  spread(&c.obs);
  spread(&c.final_obs);
  for (float& r : c.rewards) {  // uniform in [-0.1, 0.1)
    r = std::clamp(r / 0.2f * b.reward.hi, b.reward.lo, b.reward.hi);
  }
  return c;
}

// Holds the training thread inside its first evaluation (on_evaluation
// runs on it) until opened, so that chunks pile up in the queue
// deterministically; later evaluations pass.
class EvaluationGate {
 public:
  void Pass() {
    absl::MutexLock lock(&mu_);
    entered_ = true;
    mu_.Await(absl::Condition(&open_));
  }
  bool entered() {
    absl::MutexLock lock(&mu_);
    return entered_;
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }

 private:
  absl::Mutex mu_;
  bool entered_ ABSL_GUARDED_BY(mu_) = false;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

// Opens the gate when it goes out of scope: declared after the RunHost, it
// lets the training thread go before the host's destructor joins it, even
// when an assertion ends the test early.
struct OpenOnExit {
  EvaluationGate* gate;
  ~OpenOnExit() { gate->Open(); }
};

// Polls `done` every millisecond for up to `timeout_ms`.
inline bool WaitFor(const std::function<bool()>& done,
                    int64_t timeout_ms = 5000) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// An ActorTransport that records: the stream's pending read buffer, its
// writes (parsed back into LearnerMessages once Pump completes them) and
// how the call ended. Writes are completed by Pump on the test's thread,
// never from inside the stream's callbacks.
class FakeActorTransport : public ActorTransport {
 public:
  void RequestRead(grpc::ByteBuffer* into) override {
    absl::MutexLock lock(&mu_);
    read_into_ = into;
  }
  void Write(const grpc::ByteBuffer* message) override {
    absl::MutexLock lock(&mu_);
    pending_write_ = message;
  }
  void End(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    ended_ = status;
  }

  bool read_pending() {
    absl::MutexLock lock(&mu_);
    return read_into_ != nullptr;
  }
  std::optional<grpc::Status> ended() {
    absl::MutexLock lock(&mu_);
    return ended_;
  }

  // Hands `message` to the stream as the completion of its pending read.
  // False (and nothing delivered) when the stream has no read pending.
  bool Deliver(ActorStream* stream, const grpc::ByteBuffer& message) {
    {
      absl::MutexLock lock(&mu_);
      if (read_into_ == nullptr) return false;
      *read_into_ = message;
      read_into_ = nullptr;
    }
    stream->OnReadDone(true);
    return true;
  }

  // Completes every write the stream starts until none is pending; the
  // messages written are appended to `written()`.
  void Pump(ActorStream* stream) {
    while (true) {
      const grpc::ByteBuffer* message = nullptr;
      {
        absl::MutexLock lock(&mu_);
        message = pending_write_;
        pending_write_ = nullptr;
      }
      if (message == nullptr) return;
      v1::LearnerMessage parsed;
      grpc::ByteBuffer copy(*message);
      std::vector<grpc::Slice> slices;
      EXPECT_TRUE(copy.Dump(&slices).ok());
      std::string bytes;
      for (const grpc::Slice& s : slices) {
        bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      EXPECT_TRUE(parsed.ParseFromString(bytes));
      {
        absl::MutexLock lock(&mu_);
        written_.push_back(std::move(parsed));
      }
      stream->OnWriteDone(true);
    }
  }

  std::vector<v1::LearnerMessage> written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }

 private:
  absl::Mutex mu_;
  grpc::ByteBuffer* read_into_ ABSL_GUARDED_BY(mu_) = nullptr;
  const grpc::ByteBuffer* pending_write_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<grpc::Status> ended_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::LearnerMessage> written_ ABSL_GUARDED_BY(mu_);
};

// One actor on an in-process ActorStream: sends messages, completes the
// stream's writes and reads back what the learner sent.
class InProcessActor {
 public:
  explicit InProcessActor(LearnerService* service)
      : stream_(std::make_unique<ActorStream>(service, &transport_)) {
    stream_->Start();
  }
  ~InProcessActor() { Close(); }

  // Hello (want_run_id, have_version -1), then completes the writes.
  void Hello(const std::string& actor_id, const std::string& want_run_id = "") {
    actor_id_ = actor_id;
    v1::ActorMessage m;
    m.mutable_hello()->set_actor_id(actor_id);
    m.mutable_hello()->set_env_copies(2);
    m.mutable_hello()->set_have_version(-1);
    m.mutable_hello()->set_want_run_id(want_run_id);
    Send(m);
  }
  // A chunk with `sequence` in the name of the Hello's actor (as a real
  // actor sends it), then completes the writes.
  void Chunk(const TrajectoryChunk& chunk, int64_t sequence) {
    TrajectoryChunk own = chunk;
    own.actor_id = actor_id_;
    ChunkAsIs(own, sequence);
  }
  // The same with the chunk's actor_id as given.
  void ChunkAsIs(const TrajectoryChunk& chunk, int64_t sequence) {
    v1::ActorMessage m;
    wire::ChunkToProto(chunk, sequence, m.mutable_chunk());
    Send(m);
  }
  void Send(const v1::ActorMessage& m) {
    SendBytes(wire::SerializeToByteBuffer(m));
  }
  void SendBytes(const grpc::ByteBuffer& bytes) {
    EXPECT_TRUE(transport_.Deliver(stream_.get(), bytes))
        << "the stream was not reading";
    Pump();
  }
  // The actor half-closes its side.
  void HalfClose() {
    stream_->OnReadDone(false);
    Pump();
  }
  void Pump() { transport_.Pump(stream_.get()); }
  // The call is over (the server's OnDone).
  void Close() {
    if (stream_ != nullptr) stream_->OnDone();
  }

  std::vector<v1::LearnerMessage> messages() { return transport_.written(); }
  // Pumps until a message satisfying `match` has been written.
  bool WaitForMessage(
      const std::function<bool(const v1::LearnerMessage&)>& match,
      int64_t timeout_ms = 5000) {
    return WaitFor(
        [&] {
          Pump();
          for (const v1::LearnerMessage& m : transport_.written()) {
            if (match(m)) return true;
          }
          return false;
        },
        timeout_ms);
  }
  // The ack of chunk `sequence`, if written.
  std::optional<v1::ChunkAck> AckOf(int64_t sequence) {
    for (const v1::LearnerMessage& m : transport_.written()) {
      if (m.has_ack() && m.ack().sequence() == sequence) return m.ack();
    }
    return std::nullopt;
  }
  FakeActorTransport& transport() { return transport_; }

 private:
  FakeActorTransport transport_;
  std::unique_ptr<ActorStream> stream_;
  std::string actor_id_;  // the Hello's
};

}  // namespace ristretto::learner::testing

#endif  // RISTRETTO_TESTS_LEARNER_SERVICE_RUN_TEST_UTIL_H_
