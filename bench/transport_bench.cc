// Transport benchmark: trajectory-chunk ingestion over loopback
// gRPC against a raw TCP socket moving the same bytes, measured interleaved
// in one run (plain main; prints every repetition, then medians).
//
//   grpc           an in-process server implementing ristretto.v1.Learner/Act
//                  the way the learner's reactor does (callback API with
//                  the raw method: per chunk, ParseActorMessage over the
//                  received buffers, DecodeChunk with the run's observation
//                  and action sizes and the default limits, ack with
//                  credits), fed by a client that streams pre-built chunks
//                  the way ristretto-actor does (sync stream, a reader
//                  thread for the acks, at most --inflight unacknowledged
//                  chunks; every chunk written with EncodeChunkMessage,
//                  whose payload slices alias the chunk: learner/
//                  chunk_wire.h). 64 MiB message caps, otherwise gRPC's
//                  defaults, as in the binaries.
//   grpc_proto     the binaries before chunk_wire: generated protobuf API on
//                  both ends (the client builds the proto with ChunkToProto
//                  and Write serialises it; the server's proto is parsed by
//                  gRPC, then ChunkFromProto): before/after in one run.
//   grpc_tuned     as grpc plus large-message HTTP/2 and TCP settings on both
//                  ends (an experiment; the binaries do not use them).
//   raw_tcp        the same ActorMessage serialised once, sent
//                  length-prefixed (8 bytes) over 127.0.0.1; the receiver
//                  reads every byte into a buffer. No parsing, no acks.
//   raw_tcp_codec  as raw_tcp, but the sender serialises each chunk and the
//                  receiver parses and validates it (ParseFromArray +
//                  ChunkFromProto): the CPU work of the gRPC path, no gRPC.
//
// --malloc chunks calls wire::TuneAllocatorForChunkTraffic()
// (wire/grpc_options.h) first, as the binaries would; --malloc default
// (the default) leaves glibc's adaptive settings. It is a process-wide
// setting, so the two are compared across processes
// (scripts/bench_distributed.sh alternates them).
//
// A measurement sends --chunks chunks; its clock starts with the first
// chunk (stream/connection already open) and stops when the receiver has
// everything (gRPC: the last ack has arrived). MB = 10^6 bytes of the
// serialised ActorMessage. Env steps = T × B per chunk. CPU ms/chunk = the
// process's user + system CPU time over the measurement (both ends live in
// this process) per chunk: steadier than wall time on a shared machine.
// Ratio = raw_tcp's seconds / the variant's seconds in the same repetition.
//
// Usage: transport_bench [--reps 5] [--chunks 150] [--steps 128]
//          [--copies 64] [--obs 106] [--actions 7] [--inflight 4]
//          [--malloc default|chunks] [--only VARIANT[,VARIANT...]]
//          (--only: run these and raw_tcp, e.g. under perf)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/tensor_codec.h"
#include "grpcpp/grpcpp.h"
#include "learner/trajectory.h"
#include "proto/ristretto.grpc.pb.h"
#include "proto/ristretto.pb.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_wire.h"
#include "wire/grpc_options.h"

namespace ristretto::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  int reps = 5;
  int chunks = 150;  // per measurement
  int steps = 128;   // T
  int copies = 64;   // B
  int obs = 106;     // D: 1 + 7 assets + 98 features × lookback 1
  int actions = 7;   // A
  int inflight = 4;  // unacknowledged chunks (ristretto-actor's default)
  std::vector<std::string> only;  // variants to run; empty = all
  bool tune_malloc = false;       // --malloc chunks
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "transport_bench: %s\n", what.c_str());
  std::exit(1);
}

bool ParseFlags(int argc, char** argv, Config* c) {
  const std::pair<const char*, int*> flags[] = {
      {"--reps", &c->reps},        {"--chunks", &c->chunks},
      {"--steps", &c->steps},      {"--copies", &c->copies},
      {"--obs", &c->obs},          {"--actions", &c->actions},
      {"--inflight", &c->inflight}};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      c->only = absl::StrSplit(argv[++i], ',');
      continue;
    }
    if (std::strcmp(argv[i], "--malloc") == 0 && i + 1 < argc) {
      const std::string mode = argv[++i];
      if (mode != "default" && mode != "chunks") return false;
      c->tune_malloc = mode == "chunks";
      continue;
    }
    bool known = false;
    for (const auto& [name, value] : flags) {
      if (std::strcmp(argv[i], name) == 0 && i + 1 < argc) {
        *value = std::atoi(argv[++i]);
        known = *value > 0;
      }
    }
    if (!known) return false;
  }
  return true;
}

// A realistic chunk: normal observations and actions, log-probs in
// [−8, 0], small rewards, and the dones of 1,024-step episodes staggered
// over the copies (T·B/1024 ends per chunk, each with its final obs).
std::shared_ptr<const learner::TrajectoryChunk> MakeChunk(const Config& c,
                                                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::uniform_real_distribution<float> uniform(0.0F, 1.0F);
  auto shared = std::make_shared<learner::TrajectoryChunk>();
  learner::TrajectoryChunk& chunk = *shared;
  chunk.run_id = "run-0";
  chunk.actor_id = "bench-actor";
  chunk.steps = c.steps;
  chunk.copies = c.copies;
  chunk.obs_size = c.obs;
  chunk.action_size = c.actions;
  const size_t tb = static_cast<size_t>(c.steps) * c.copies;
  chunk.obs.resize((tb + c.copies) * c.obs);
  for (float& x : chunk.obs) x = normal(rng);
  chunk.actions.resize(tb * c.actions);
  for (float& x : chunk.actions) x = normal(rng);
  chunk.log_probs.resize(tb);
  for (float& x : chunk.log_probs) x = -8.0F * uniform(rng);
  chunk.rewards.resize(tb);
  for (float& x : chunk.rewards) x = 0.01F * normal(rng);
  chunk.dones.assign(tb, 0);
  for (int t = 0; t < c.steps; ++t) {
    for (int b = 0; b < c.copies; ++b) {
      if ((t + b * 16 + static_cast<int>(seed)) % 1024 == 1023) {
        chunk.dones[static_cast<size_t>(t) * c.copies + b] = 1;
        for (int d = 0; d < c.obs; ++d) chunk.final_obs.push_back(normal(rng));
      }
    }
  }
  return shared;
}

v1::ActorMessage ToProto(const learner::TrajectoryChunk& chunk) {
  v1::ActorMessage message;
  wire::ChunkToProto(chunk, 0, message.mutable_chunk());
  return message;
}

// ---- The chunk codec before the issue-4 receive-path work, verbatim in
// behaviour (the grpc_old_codec baseline and the codec costs): every
// tensor decoded into a value-initialised vector, then copied, then
// TrajectoryChunk::Validate() re-reads everything (sizes, dones, finite
// values); encoding went through set_data(ptr, n), i.e. a temporary
// std::string and a second copy.
namespace legacy {

template <typename T>
absl::StatusOr<std::vector<T>> Decode(const v1::Tensor& tensor,
                                      v1::Tensor::DType dtype,
                                      absl::Span<const int64_t> expected,
                                      const std::string& name,
                                      int64_t max_elements,
                                      std::vector<int64_t>* shape_out) {
  // The header checks are unchanged (CheckTensor is the old code's first
  // half); the copy is the old one.
  absl::StatusOr<int64_t> count =
      CheckTensor(tensor, dtype, expected, name, max_elements, shape_out);
  if (!count.ok()) return count.status();
  std::vector<T> values(static_cast<size_t>(*count));
  const size_t bytes = values.size() * sizeof(T);
  if (bytes > 0) std::memcpy(values.data(), tensor.data().data(), bytes);
  return values;
}

void Encode(const float* values, size_t n, absl::Span<const int64_t> shape,
            v1::Tensor* out) {
  out->set_dtype(v1::Tensor::FLOAT32);
  out->clear_shape();
  for (int64_t d : shape) out->add_shape(d);
  out->set_data(reinterpret_cast<const char*>(values), n * sizeof(float));
}

void ChunkToProto(const learner::TrajectoryChunk& chunk, int64_t sequence,
                  v1::TrajectoryChunk* out) {
  const int64_t T = chunk.steps, B = chunk.copies, D = chunk.obs_size,
                A = chunk.action_size;
  out->set_run_id(chunk.run_id);
  out->set_actor_id(chunk.actor_id);
  out->clear_env_copy_ids();
  for (int b = 0; b < chunk.copies; ++b) out->add_env_copy_ids(b);
  out->set_policy_version(chunk.policy_version);
  out->set_sequence(sequence);
  Encode(chunk.obs.data(), chunk.obs.size(), {T + 1, B, D},
         out->mutable_observations());
  Encode(chunk.actions.data(), chunk.actions.size(), {T, B, A},
         out->mutable_actions());
  Encode(chunk.log_probs.data(), chunk.log_probs.size(), {T, B},
         out->mutable_log_probs());
  Encode(chunk.rewards.data(), chunk.rewards.size(), {T, B},
         out->mutable_rewards());
  v1::Tensor* dones = out->mutable_dones();
  dones->set_dtype(v1::Tensor::UINT8);
  dones->clear_shape();
  dones->add_shape(T);
  dones->add_shape(B);
  dones->set_data(reinterpret_cast<const char*>(chunk.dones.data()),
                  chunk.dones.size());
  Encode(chunk.final_obs.data(), chunk.final_obs.size(), {chunk.num_dones(), D},
         out->mutable_final_observations());
}

absl::StatusOr<learner::TrajectoryChunk> ChunkFromProto(
    const v1::TrajectoryChunk& p, int obs_size, int action_size,
    const wire::ChunkLimits& limits) {
  if (p.run_id().empty()) {
    return absl::InvalidArgumentError("chunk: run_id is empty");
  }
  if (p.policy_version() < 0) {
    return absl::InvalidArgumentError("chunk: policy_version is negative");
  }
  const int64_t kMax = int64_t{limits.max_steps + 1} * limits.max_copies *
                       std::max(obs_size, action_size);
  std::vector<int64_t> shape;
  absl::StatusOr<std::vector<float>> obs = Decode<float>(
      p.observations(), v1::Tensor::FLOAT32, {kAnyDim, kAnyDim, obs_size},
      "chunk.observations", kMax, &shape);
  if (!obs.ok()) return obs.status();
  const int64_t T = shape[0] - 1;
  const int64_t B = shape[1];
  if (T < 1 || T > limits.max_steps || B < 1 || B > limits.max_copies) {
    return absl::InvalidArgumentError("chunk.observations: bad T or B");
  }
  learner::TrajectoryChunk c;
  c.run_id = p.run_id();
  c.actor_id = p.actor_id();
  c.policy_version = p.policy_version();
  c.steps = static_cast<int>(T);
  c.copies = static_cast<int>(B);
  c.obs_size = obs_size;
  c.action_size = action_size;
  c.obs = *std::move(obs);
  auto floats = [&](const v1::Tensor& t, const std::vector<int64_t>& expected,
                    const char* name, std::vector<float>* out) {
    absl::StatusOr<std::vector<float>> v =
        Decode<float>(t, v1::Tensor::FLOAT32, expected, name, kMax, nullptr);
    if (!v.ok()) return v.status();
    *out = *std::move(v);
    return absl::OkStatus();
  };
  absl::Status s =
      floats(p.actions(), {T, B, action_size}, "chunk.actions", &c.actions);
  if (s.ok())
    s = floats(p.log_probs(), {T, B}, "chunk.log_probs", &c.log_probs);
  if (s.ok()) s = floats(p.rewards(), {T, B}, "chunk.rewards", &c.rewards);
  if (!s.ok()) return s;
  absl::StatusOr<std::vector<uint8_t>> dones = Decode<uint8_t>(
      p.dones(), v1::Tensor::UINT8, {T, B}, "chunk.dones", kMax, nullptr);
  if (!dones.ok()) return dones.status();
  c.dones = *std::move(dones);
  int64_t n_dones = 0;
  for (uint8_t d : c.dones) n_dones += d != 0;
  s = floats(p.final_observations(), {n_dones, obs_size},
             "chunk.final_observations", &c.final_obs);
  if (s.ok()) s = c.Validate();
  if (!s.ok()) return s;
  return c;
}

}  // namespace legacy

// ---- gRPC: an Act stream that decodes and acknowledges every chunk.

struct ServerCounters {
  explicit ServerCounters(const Config& c) : config(c) {}
  const Config config;
  std::atomic<int64_t> steps_decoded{0};
  std::atomic<int64_t> chunks_rejected{0};
};

v1::LearnerMessage Ack(int64_t sequence, const absl::Status& status,
                       int credits) {
  v1::LearnerMessage ack;
  ack.mutable_ack()->set_sequence(sequence);
  ack.mutable_ack()->set_credits(credits);
  ack.mutable_ack()->set_code(static_cast<int>(status.code()));
  ack.mutable_ack()->set_message(std::string(status.message()));
  return ack;
}

// The learner reactor's read/decode/ack loop over message types In/Out
// (protobuf messages, or byte buffers with the raw method). Decode(in)
// returns the ack to send, if any.
template <typename In, typename Out>
class AckingReactor : public grpc::ServerBidiReactor<In, Out> {
 public:
  explicit AckingReactor(ServerCounters* counters) : counters_(counters) {}

  void Begin() { this->StartRead(&in_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishWhenDrained();
      return;
    }
    std::optional<Out> ack = Decode(in_);
    if (ack.has_value()) Send(std::move(*ack));
    // Hello (the real learner answers with an assignment and weights; that
    // is setup, not the measured steady state) and chunks: keep reading.
    std::lock_guard<std::mutex> lock(mu_);
    if (!finish_requested_) this->StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    outbox_.pop_front();
    if (!ok) broken_ = true;
    if (!outbox_.empty() && !broken_) {
      this->StartWrite(&outbox_.front());
      return;
    }
    writing_ = false;
    if (finish_requested_ && !finished_) {
      finished_ = true;
      this->Finish(grpc::Status::OK);
    }
  }

  void OnCancel() override { FinishWhenDrained(); }
  void OnDone() override { delete this; }

 protected:
  virtual std::optional<Out> Decode(In& in) = 0;
  ServerCounters* const counters_;

  // Counts the outcome of one chunk.
  void Count(const absl::Status& status, int64_t steps) {
    if (status.ok()) {
      counters_->steps_decoded.fetch_add(steps);
    } else {
      counters_->chunks_rejected.fetch_add(1);
    }
  }

 private:
  void Send(Out message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_ || broken_) return;
    outbox_.push_back(std::move(message));
    if (!writing_) {
      writing_ = true;
      this->StartWrite(&outbox_.front());
    }
  }

  void FinishWhenDrained() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_) return;
    finish_requested_ = true;
    if (!writing_ && !finished_) {
      finished_ = true;
      this->Finish(grpc::Status::OK);
    }
  }

  In in_;
  std::mutex mu_;
  std::deque<Out> outbox_;  // front() is being written
  bool writing_ = false;
  bool broken_ = false;
  bool finish_requested_ = false;
  bool finished_ = false;
};

// grpc_proto: the generated protobuf API (gRPC parses the ActorMessage).
class ProtoReactor final
    : public AckingReactor<v1::ActorMessage, v1::LearnerMessage> {
 public:
  using AckingReactor::AckingReactor;

 private:
  std::optional<v1::LearnerMessage> Decode(v1::ActorMessage& in) override {
    if (!in.has_chunk()) return std::nullopt;
    const Config& c = counters_->config;
    absl::StatusOr<learner::TrajectoryChunk> chunk =
        wire::ChunkFromProto(in.chunk(), c.obs, c.actions, wire::ChunkLimits{});
    Count(chunk.status(), chunk.ok() ? chunk->num_samples() : 0);
    return Ack(in.chunk().sequence(), chunk.status(), c.inflight);
  }
};

// grpc: the raw method, decoding straight from the received buffers.
class RawReactor final
    : public AckingReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  using AckingReactor::AckingReactor;

 private:
  std::optional<grpc::ByteBuffer> Decode(grpc::ByteBuffer& in) override {
    const Config& c = counters_->config;
    absl::Status status = wire::ParseActorMessage(in, &frame_);
    if (status.ok() && frame_.kind != wire::ActorFrame::Kind::kChunk) {
      return std::nullopt;
    }
    learner::TrajectoryChunk chunk;
    if (status.ok()) {
      status = wire::DecodeChunk(frame_.chunk, c.obs, c.actions,
                                 wire::ChunkLimits{}, &chunk);
    }
    frame_.slices.clear();  // release the received buffers
    Count(status, status.ok() ? chunk.num_samples() : 0);
    return wire::SerializeToByteBuffer(
        Ack(frame_.chunk.sequence, status, c.inflight));
  }

  wire::ActorFrame frame_;
};

class ProtoService final : public v1::Learner::CallbackService {
 public:
  explicit ProtoService(ServerCounters* counters) : counters_(counters) {}
  grpc::ServerBidiReactor<v1::ActorMessage, v1::LearnerMessage>* Act(
      grpc::CallbackServerContext* /*context*/) override {
    auto* reactor = new ProtoReactor(counters_);
    reactor->Begin();
    return reactor;
  }

 private:
  ServerCounters* const counters_;
};

// The learner's composition: Act raw, the other methods as generated.
using RawActService = v1::Learner::WithRawCallbackMethod_Act<
    v1::Learner::WithCallbackMethod_FetchDataset<
        v1::Learner::WithCallbackMethod_GetStatus<v1::Learner::Service>>>;

class RawService final : public RawActService {
 public:
  explicit RawService(ServerCounters* counters) : counters_(counters) {}
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Act(
      grpc::CallbackServerContext* /*context*/) override {
    auto* reactor = new RawReactor(counters_);
    reactor->Begin();
    return reactor;
  }

 private:
  ServerCounters* const counters_;
};

// Streams `chunks` chunks on `stream` (message(i) builds the i-th, with
// sequence i) and returns the seconds from the first Write to the last
// ack. Stream: ClientReaderWriter<ActorMessage or ByteBuffer,
// LearnerMessage>.
template <typename Stream, typename Hello, typename MakeMessage>
double StreamChunks(Stream* stream, const Hello& hello, int chunks,
                    int inflight, MakeMessage message) {
  if (!stream->Write(hello)) Die("gRPC: cannot open the Act stream");
  std::mutex mu;
  std::condition_variable cv;
  int unacked = 0, acked = 0, errors = 0;
  std::thread reader([&] {
    v1::LearnerMessage m;
    while (stream->Read(&m)) {
      if (!m.has_ack()) continue;
      std::lock_guard<std::mutex> lock(mu);
      --unacked;
      ++acked;
      if (m.ack().code() != 0) ++errors;
      cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu);
    acked = chunks + 1;  // the stream ended: wake the sender
    cv.notify_all();
  });
  const Clock::time_point start = Clock::now();
  bool ok = true;
  for (int i = 0; i < chunks && ok; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return unacked < inflight || acked > chunks; });
      ++unacked;
    }
    ok = stream->Write(message(i));
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return acked >= chunks; });
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  stream->WritesDone();
  reader.join();
  const grpc::Status status = stream->Finish();
  if (!ok || !status.ok() || errors != 0) {
    Die("gRPC stream failed: " + status.error_message() + " (" +
        std::to_string(errors) + " rejected chunks)");
  }
  return seconds;
}

v1::ActorMessage HelloMessage() {
  v1::ActorMessage hello;
  hello.mutable_hello()->set_actor_id("bench-actor");
  hello.mutable_hello()->set_env_copies(64);
  return hello;
}

// grpc / grpc_tuned: as ristretto-actor writes (EncodeChunkMessage).
double RunGrpc(
    grpc::Channel* channel,
    const std::vector<std::shared_ptr<const learner::TrajectoryChunk>>&
        chunks_in,
    int chunks, int inflight) {
  wire::ActStub stub(channel->shared_from_this());
  grpc::ClientContext context;
  std::unique_ptr<wire::ActStream> stream = stub.Act(&context);
  return StreamChunks(stream.get(), wire::SerializeToByteBuffer(HelloMessage()),
                      chunks, inflight, [&](int i) {
                        return wire::EncodeChunkMessage(
                            chunks_in[i % chunks_in.size()], i);
                      });
}

// grpc_proto: the generated stub with the pre-built protos.
double RunGrpcProto(grpc::Channel* channel,
                    std::vector<v1::ActorMessage>* messages, int chunks,
                    int inflight) {
  auto stub = v1::Learner::NewStub(channel->shared_from_this());
  grpc::ClientContext context;
  auto stream = stub->Act(&context);
  return StreamChunks(stream.get(), HelloMessage(), chunks, inflight,
                      [&](int i) -> const v1::ActorMessage& {
                        v1::ActorMessage& m = (*messages)[i % messages->size()];
                        m.mutable_chunk()->set_sequence(i);
                        return m;
                      });
}

// ---- raw TCP over 127.0.0.1.

void WriteFull(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) Die(std::string("send: ") + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void ReadFull(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = recv(fd, data, size, 0);
    if (n <= 0) Die(std::string("recv: ") + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Sends `chunks` length-prefixed messages; with `codec` the sender
// serialises each one and the receiver parses and validates it, otherwise
// the pre-serialised `bytes` are sent and only read. Returns seconds from
// the first byte sent to the last byte received (and decoded).
double RunRawTcp(const Config& c, std::vector<v1::ActorMessage>* messages,
                 const std::vector<std::string>& bytes, int chunks,
                 bool codec) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (listener < 0 ||
      bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die(std::string("listen: ") + std::strerror(errno));
  }
  Clock::time_point end;
  int64_t steps = 0;
  std::thread receiver([&] {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) Die(std::string("accept: ") + std::strerror(errno));
    SetNoDelay(fd);
    std::string buffer;
    v1::ActorMessage message;
    for (int i = 0; i < chunks; ++i) {
      uint64_t size = 0;
      ReadFull(fd, reinterpret_cast<char*>(&size), sizeof(size));
      buffer.resize(size);
      ReadFull(fd, buffer.data(), size);
      if (!codec) continue;
      if (!message.ParseFromArray(buffer.data(), static_cast<int>(size))) {
        Die("raw_tcp_codec: parse failed");
      }
      absl::StatusOr<learner::TrajectoryChunk> chunk = wire::ChunkFromProto(
          message.chunk(), c.obs, c.actions, wire::ChunkLimits{});
      if (!chunk.ok()) Die(std::string(chunk.status().message()));
      steps += chunk->num_samples();
    }
    end = Clock::now();
    close(fd);
  });
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Die(std::string("connect: ") + std::strerror(errno));
  }
  SetNoDelay(fd);
  std::string serialised;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < chunks; ++i) {
    const std::string* payload = &bytes[i % bytes.size()];
    if (codec) {
      v1::ActorMessage& m = (*messages)[i % messages->size()];
      m.mutable_chunk()->set_sequence(i);
      m.SerializeToString(&serialised);
      payload = &serialised;
    }
    const uint64_t size = payload->size();
    WriteFull(fd, reinterpret_cast<const char*>(&size), sizeof(size));
    WriteFull(fd, payload->data(), payload->size());
  }
  receiver.join();
  close(fd);
  close(listener);
  if (codec && steps != int64_t{chunks} * c.steps * c.copies) {
    Die("raw_tcp_codec: wrong step count");
  }
  return std::chrono::duration<double>(end - start).count();
}

// A server on 127.0.0.1 and a client stub with the learner's and actor's
// settings (64 MiB message caps, everything else gRPC's defaults); `tuned`
// adds HTTP/2 and TCP settings for large messages on both ends.
void StartGrpc(grpc::Service* service, bool tuned,
               std::unique_ptr<grpc::Server>* server,
               std::shared_ptr<grpc::Channel>* channel) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(64 << 20);  // the learner's default
  builder.SetMaxSendMessageSize(64 << 20);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  if (tuned) {
    const std::pair<const char*, int> settings[] = {
        {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20},
        {GRPC_ARG_HTTP2_BDP_PROBE, 0},
        {GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1},
        {GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 8 << 20},
        {GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 1 << 20},
        {GRPC_ARG_TCP_READ_CHUNK_SIZE, 4 << 20},
        {GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 16 << 20}};
    for (const auto& [name, value] : settings) {
      builder.AddChannelArgument(name, value);
      args.SetInt(name, value);
    }
  }
  builder.RegisterService(service);
  *server = builder.BuildAndStart();
  if (*server == nullptr || port == 0) Die("cannot start the gRPC server");
  *channel =
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                grpc::InsecureChannelCredentials(), args);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Single-thread CPU cost of the codec steps on one chunk (medians of
// `iterations`, milliseconds; old and new codec interleaved): where the
// gRPC path's time goes besides the socket.
void PrintCodecCosts(const Config& c, const v1::ActorMessage& message,
                     int iterations) {
  absl::StatusOr<learner::TrajectoryChunk> source = wire::ChunkFromProto(
      message.chunk(), c.obs, c.actions, wire::ChunkLimits{});
  if (!source.ok()) Die(std::string(source.status().message()));
  enum Step {
    kEncodeOld,
    kEncode,
    kSerialise,
    kParse,
    kDecodeOld,
    kDecode,
    kDecodeReuse,
    kEncodeWire,
    kDecodeWire,
    kSteps
  };
  const char* const names[kSteps] = {
      "ChunkToProto (old)",   "ChunkToProto",         "SerializeToString",
      "ParseFromString",      "ChunkFromProto (old)", "ChunkFromProto",
      "ChunkFromProto reuse", "EncodeChunkMessage",   "Parse+DecodeChunk"};
  std::vector<double> ms[kSteps];
  std::string bytes;
  v1::ActorMessage parsed;
  learner::TrajectoryChunk reused;
  const auto shared = std::make_shared<const learner::TrajectoryChunk>(*source);
  const std::string serialised = message.SerializeAsString();
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < serialised.size(); at += 65536) {
    slices.emplace_back(serialised.data() + at,
                        std::min<size_t>(65536, serialised.size() - at));
  }
  const grpc::ByteBuffer received(slices.data(), slices.size());
  wire::ActorFrame frame;
  for (int i = 0; i < iterations; ++i) {
    Clock::time_point t[kSteps + 1];
    {
      v1::ActorMessage old_encoded, encoded;
      t[0] = Clock::now();
      legacy::ChunkToProto(*source, 0, old_encoded.mutable_chunk());
      t[1] = Clock::now();
      wire::ChunkToProto(*source, 0, encoded.mutable_chunk());
      t[2] = Clock::now();
      encoded.SerializeToString(&bytes);
      t[3] = Clock::now();
    }
    if (!parsed.ParseFromString(bytes)) Die("parse failed");
    t[4] = Clock::now();
    absl::StatusOr<learner::TrajectoryChunk> old_chunk = legacy::ChunkFromProto(
        parsed.chunk(), c.obs, c.actions, wire::ChunkLimits{});
    t[5] = Clock::now();
    absl::StatusOr<learner::TrajectoryChunk> chunk = wire::ChunkFromProto(
        parsed.chunk(), c.obs, c.actions, wire::ChunkLimits{});
    t[6] = Clock::now();
    const absl::Status reuse = wire::ChunkFromProto(
        parsed.chunk(), c.obs, c.actions, wire::ChunkLimits{}, &reused);
    t[7] = Clock::now();
    // The binaries' path: a zero-copy buffer, then the in-place decode (of
    // a buffer as gRPC hands it over: the serialised bytes in 64 KiB
    // slices, so floats straddle slice boundaries).
    const grpc::ByteBuffer zero_copy = wire::EncodeChunkMessage(shared, 0);
    t[8] = Clock::now();
    learner::TrajectoryChunk wire_chunk;
    absl::Status wire_status = wire::ParseActorMessage(received, &frame);
    if (wire_status.ok()) {
      wire_status = wire::DecodeChunk(frame.chunk, c.obs, c.actions,
                                      wire::ChunkLimits{}, &wire_chunk);
    }
    t[9] = Clock::now();
    if (!wire_status.ok() || wire_chunk.obs != chunk->obs ||
        zero_copy.Length() != bytes.size()) {
      Die("codec costs: the wire path disagrees");
    }
    if (!old_chunk.ok() || !chunk.ok() || !reuse.ok() ||
        chunk->obs != old_chunk->obs || reused.obs != chunk->obs ||
        chunk->final_obs != old_chunk->final_obs) {
      Die("codec costs: the decoders disagree");
    }
    for (int k = 0; k < kSteps; ++k) {
      ms[k].push_back(std::chrono::duration<double>(t[k + 1] - t[k]).count() *
                      1e3);
    }
  }
  const double mb = static_cast<double>(bytes.size()) / 1e6;
  for (int k = 0; k < kSteps; ++k) {
    const double m = Median(ms[k]);
    std::printf("codec %-21s %6.3f ms/chunk %8.1f MB/s (one thread)\n",
                names[k], m, mb / m * 1e3);
  }
}

// Process CPU time (user + system) in seconds.
double CpuSeconds() {
  rusage u = {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int Main(int argc, char** argv) {
  Config c;
  if (!ParseFlags(argc, argv, &c)) {
    std::fprintf(stderr,
                 "usage: transport_bench [--reps 5] [--chunks 150] "
                 "[--steps 128] [--copies 64] [--obs 106] [--actions 7] "
                 "[--inflight 4] [--malloc default|chunks] "
                 "[--only VARIANT,...]\n");
    return 2;
  }
  if (c.tune_malloc && !wire::TuneAllocatorForChunkTraffic()) {
    Die("mallopt refused the chunk settings");
  }
  constexpr int kDistinctChunks = 4;
  std::vector<std::shared_ptr<const learner::TrajectoryChunk>> chunks;
  std::vector<v1::ActorMessage> messages;
  std::vector<std::string> bytes;
  for (int k = 0; k < kDistinctChunks; ++k) {
    chunks.push_back(MakeChunk(c, static_cast<uint32_t>(k)));
    messages.push_back(ToProto(*chunks.back()));
    bytes.push_back(messages.back().SerializeAsString());
    absl::StatusOr<learner::TrajectoryChunk> check = wire::ChunkFromProto(
        messages.back().chunk(), c.obs, c.actions, wire::ChunkLimits{});
    if (!check.ok()) Die(std::string(check.status().message()));
  }
  const double chunk_mb = static_cast<double>(bytes[0].size()) / 1e6;
  const double chunk_steps = static_cast<double>(c.steps) * c.copies;

  // One server and stub per gRPC variant (each its own connection).
  struct GrpcEnd {
    std::unique_ptr<ServerCounters> counters;
    std::unique_ptr<grpc::Service> service;
    std::unique_ptr<grpc::Server> server;
    std::shared_ptr<grpc::Channel> channel;
    bool proto = false;  // grpc_proto: the generated API on both ends
  };
  auto start = [&](bool tuned, bool proto) {
    GrpcEnd end;
    end.counters = std::make_unique<ServerCounters>(c);
    if (proto) {
      end.service = std::make_unique<ProtoService>(end.counters.get());
    } else {
      end.service = std::make_unique<RawService>(end.counters.get());
    }
    end.proto = proto;
    StartGrpc(end.service.get(), tuned, &end.server, &end.channel);
    return end;
  };
  struct Variant {
    std::string name;
    GrpcEnd grpc;  // no server: a raw TCP variant
    bool codec = false;
  };
  std::vector<Variant> all;
  all.push_back({"grpc", start(false, false)});
  all.push_back({"grpc_proto", start(false, true)});
  all.push_back({"grpc_tuned", start(true, false)});
  all.push_back({"raw_tcp", {}, false});
  all.push_back({"raw_tcp_codec", {}, true});
  std::vector<Variant> variants;
  for (Variant& v : all) {
    if (v.name == "raw_tcp" || c.only.empty() ||
        std::find(c.only.begin(), c.only.end(), v.name) != c.only.end()) {
      variants.push_back(std::move(v));
    }
  }
  const int n = static_cast<int>(variants.size());
  int raw = 0;
  while (variants[raw].name != "raw_tcp") ++raw;

  std::printf(
      "transport_bench: T=%d B=%d D=%d A=%d, chunk %zu bytes (%.0f env steps), "
      "%d chunks per measurement, %d repetitions interleaved, inflight %d, "
      "malloc %s, %u cores\n",
      c.steps, c.copies, c.obs, c.actions, bytes[0].size(), chunk_steps,
      c.chunks, c.reps, c.inflight, c.tune_malloc ? "chunks" : "default",
      std::thread::hardware_concurrency());

  int64_t grpc_chunks_sent = 0;
  // Returns {wall seconds, process CPU seconds}.
  auto measure = [&](int v, int chunks_n) {
    const double cpu0 = CpuSeconds();
    double seconds = 0.0;
    Variant& variant = variants[v];
    if (variant.grpc.channel != nullptr) {
      seconds = variant.grpc.proto
                    ? RunGrpcProto(variant.grpc.channel.get(), &messages,
                                   chunks_n, c.inflight)
                    : RunGrpc(variant.grpc.channel.get(), chunks, chunks_n,
                              c.inflight);
      grpc_chunks_sent += chunks_n;
    } else {
      seconds = RunRawTcp(c, &messages, bytes, chunks_n, variant.codec);
    }
    return std::make_pair(seconds, CpuSeconds() - cpu0);
  };
  // Warm-up (connections, allocators, page faults), not reported.
  const int warmup_chunks = std::max(1, c.chunks / 4);
  for (int v = 0; v < n; ++v) measure(v, warmup_chunks);

  PrintCodecCosts(c, messages[0], 20);

  std::vector<std::vector<double>> seconds(n), cpu(n), ratios(n);
  for (int rep = 0; rep < c.reps; ++rep) {
    std::vector<std::pair<double, double>> r(n);
    for (int k = 0; k < n; ++k) {  // rotate the order every rep
      const int v = (rep + k) % n;
      r[v] = measure(v, c.chunks);
    }
    for (int v = 0; v < n; ++v) {
      const double s = r[v].first;
      seconds[v].push_back(s);
      cpu[v].push_back(r[v].second * 1e3 / c.chunks);
      ratios[v].push_back(r[raw].first / s);
      std::printf(
          "rep %d %-15s %7.3f s %8.1f MB/s %7.3f M env steps/s %6.2f CPU "
          "ms/chunk ratio %.3f\n",
          rep + 1, variants[v].name.c_str(), s, c.chunks * chunk_mb / s,
          c.chunks * chunk_steps / s / 1e6, cpu[v].back(), ratios[v].back());
    }
    std::fflush(stdout);
  }
  // Every chunk the gRPC clients sent was decoded and validated.
  const int64_t expected = grpc_chunks_sent * c.steps * c.copies;
  int64_t decoded = 0, rejected = 0;
  for (const Variant& v : variants) {
    if (v.grpc.counters == nullptr) continue;
    decoded += v.grpc.counters->steps_decoded.load();
    rejected += v.grpc.counters->chunks_rejected.load();
  }
  std::printf("grpc servers decoded %" PRId64 " of %" PRId64
              " env steps sent, rejected %" PRId64 " chunks\n",
              decoded, expected, rejected);
  for (int v = 0; v < n; ++v) {
    const double m = Median(seconds[v]);
    std::printf(
        "median %-15s %7.3f s %8.1f MB/s %7.3f M env steps/s %6.2f CPU "
        "ms/chunk  (vs raw_tcp: %.2f, median of per-rep ratios)\n",
        variants[v].name.c_str(), m, c.chunks * chunk_mb / m,
        c.chunks * chunk_steps / m / 1e6, Median(cpu[v]), Median(ratios[v]));
  }
  for (Variant& v : variants) {
    if (v.grpc.server != nullptr) v.grpc.server->Shutdown();
  }
  return decoded == expected && rejected == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ristretto::bench

int main(int argc, char** argv) { return ristretto::bench::Main(argc, argv); }
