// Transport benchmark (issue 4): trajectory-chunk ingestion over loopback
// gRPC against a raw TCP socket moving the same bytes, measured interleaved
// in one run (plain main; prints every repetition, then medians).
//
//   grpc           an in-process server implementing ristretto.v1.Learner/Act
//                  the way the learner's reactor does (callback API; per
//                  chunk: parse, ChunkFromProto with the run's observation
//                  and action sizes and the default limits, ack with
//                  credits), fed by a client that streams pre-built chunks
//                  the way ristretto-actor does (sync stream, a reader
//                  thread for the acks, at most --inflight unacknowledged
//                  chunks; every Write serialises the proto).
//   raw_tcp        the same ActorMessage serialised once, sent
//                  length-prefixed (8 bytes) over 127.0.0.1; the receiver
//                  reads every byte into a buffer. No parsing, no acks.
//   raw_tcp_codec  as raw_tcp, but the sender serialises each chunk and the
//                  receiver parses and validates it (ParseFromArray +
//                  ChunkFromProto): the CPU work of the gRPC path, no gRPC.
//
// A measurement sends --chunks chunks; its clock starts with the first
// chunk (stream/connection already open) and stops when the receiver has
// everything (gRPC: the last ack has arrived). MB = 10^6 bytes of the
// serialised ActorMessage. Env steps = T × B per chunk.
//
// Usage: transport_bench [--reps 5] [--chunks 150] [--steps 128]
//          [--copies 64] [--obs 106] [--actions 7] [--inflight 4]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "learner/chunk_codec.h"
#include "learner/trajectory.h"
#include "proto/ristretto.grpc.pb.h"
#include "proto/ristretto.pb.h"

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
v1::ActorMessage MakeChunk(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::uniform_real_distribution<float> uniform(0.0F, 1.0F);
  learner::TrajectoryChunk chunk;
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
  v1::ActorMessage message;
  learner::ChunkToProto(chunk, 0, message.mutable_chunk());
  return message;
}

// ---- gRPC: an Act stream that decodes and acknowledges every chunk.

class BenchService;

class ChunkReactor final
    : public grpc::ServerBidiReactor<v1::ActorMessage, v1::LearnerMessage> {
 public:
  explicit ChunkReactor(BenchService* service) : service_(service) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override;

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    outbox_.pop_front();
    if (!ok) broken_ = true;
    if (!outbox_.empty() && !broken_) {
      StartWrite(&outbox_.front());
      return;
    }
    writing_ = false;
    if (finish_requested_ && !finished_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  void OnCancel() override { FinishWhenDrained(); }
  void OnDone() override { delete this; }

 private:
  void Send(v1::LearnerMessage message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_ || broken_) return;
    outbox_.push_back(std::move(message));
    if (!writing_) {
      writing_ = true;
      StartWrite(&outbox_.front());
    }
  }

  void FinishWhenDrained() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_) return;
    finish_requested_ = true;
    if (!writing_ && !finished_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  BenchService* const service_;
  v1::ActorMessage in_;
  std::mutex mu_;
  std::deque<v1::LearnerMessage> outbox_;  // front() is being written
  bool writing_ = false;
  bool broken_ = false;
  bool finish_requested_ = false;
  bool finished_ = false;
};

class BenchService final : public v1::Learner::CallbackService {
 public:
  explicit BenchService(const Config& config) : config_(config) {}

  grpc::ServerBidiReactor<v1::ActorMessage, v1::LearnerMessage>* Act(
      grpc::CallbackServerContext* /*context*/) override {
    return new ChunkReactor(this);
  }

  const Config& config() const { return config_; }
  std::atomic<int64_t> steps_decoded{0};
  std::atomic<int64_t> chunks_rejected{0};

 private:
  const Config config_;
};

void ChunkReactor::OnReadDone(bool ok) {
  if (!ok) {
    FinishWhenDrained();
    return;
  }
  if (in_.has_chunk()) {
    const Config& c = service_->config();
    absl::StatusOr<learner::TrajectoryChunk> chunk = learner::ChunkFromProto(
        in_.chunk(), c.obs, c.actions, learner::ChunkLimits{});
    v1::LearnerMessage ack;
    ack.mutable_ack()->set_sequence(in_.chunk().sequence());
    ack.mutable_ack()->set_credits(c.inflight);
    if (chunk.ok()) {
      service_->steps_decoded.fetch_add(chunk->num_samples());
    } else {
      service_->chunks_rejected.fetch_add(1);
      ack.mutable_ack()->set_code(static_cast<int>(chunk.status().code()));
      ack.mutable_ack()->set_message(std::string(chunk.status().message()));
    }
    Send(std::move(ack));
  }
  // Hello (the real learner answers with an assignment and weights; that
  // is setup, not the measured steady state) and chunks: keep reading.
  std::lock_guard<std::mutex> lock(mu_);
  if (!finish_requested_) StartRead(&in_);
}

// Streams `chunks` chunks (cycling through `messages`) and returns the
// seconds from the first Write to the last ack.
double RunGrpc(v1::Learner::Stub* stub, std::vector<v1::ActorMessage>* messages,
               int chunks, int inflight) {
  grpc::ClientContext context;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::ActorMessage, v1::LearnerMessage>>
      stream = stub->Act(&context);
  v1::ActorMessage hello;
  hello.mutable_hello()->set_actor_id("bench-actor");
  hello.mutable_hello()->set_env_copies(64);
  if (!stream->Write(hello)) Die("gRPC: cannot open the Act stream");
  std::mutex mu;
  std::condition_variable cv;
  int unacked = 0, acked = 0, errors = 0;
  std::thread reader([&] {
    v1::LearnerMessage message;
    while (stream->Read(&message)) {
      if (!message.has_ack()) continue;
      std::lock_guard<std::mutex> lock(mu);
      --unacked;
      ++acked;
      if (message.ack().code() != 0) ++errors;
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
    v1::ActorMessage& m = (*messages)[i % messages->size()];
    m.mutable_chunk()->set_sequence(i);
    ok = stream->Write(m);
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
      absl::StatusOr<learner::TrajectoryChunk> chunk = learner::ChunkFromProto(
          message.chunk(), c.obs, c.actions, learner::ChunkLimits{});
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
void StartGrpc(BenchService* service, bool tuned,
               std::unique_ptr<grpc::Server>* server,
               std::unique_ptr<v1::Learner::Stub>* stub) {
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
  *stub = v1::Learner::NewStub(
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                grpc::InsecureChannelCredentials(), args));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Single-thread CPU cost of the codec steps on one chunk (medians of
// `iterations`, milliseconds): where the gRPC path's time goes besides the
// socket.
void PrintCodecCosts(const Config& c, const v1::ActorMessage& message,
                     int iterations) {
  std::vector<double> serialise, parse, decode;
  std::string bytes;
  v1::ActorMessage parsed;
  for (int i = 0; i < iterations; ++i) {
    Clock::time_point t0 = Clock::now();
    message.SerializeToString(&bytes);
    Clock::time_point t1 = Clock::now();
    if (!parsed.ParseFromString(bytes)) Die("parse failed");
    Clock::time_point t2 = Clock::now();
    absl::StatusOr<learner::TrajectoryChunk> chunk = learner::ChunkFromProto(
        parsed.chunk(), c.obs, c.actions, learner::ChunkLimits{});
    Clock::time_point t3 = Clock::now();
    if (!chunk.ok()) Die(std::string(chunk.status().message()));
    serialise.push_back(std::chrono::duration<double>(t1 - t0).count());
    parse.push_back(std::chrono::duration<double>(t2 - t1).count());
    decode.push_back(std::chrono::duration<double>(t3 - t2).count());
  }
  const double mb = static_cast<double>(bytes.size()) / 1e6;
  const std::pair<const char*, std::vector<double>*> steps[] = {
      {"SerializeToString", &serialise},
      {"ParseFromString", &parse},
      {"ChunkFromProto", &decode}};
  for (const auto& [name, v] : steps) {
    const double m = Median(*v);
    std::printf("codec %-18s %6.3f ms/chunk %8.1f MB/s (one thread)\n", name,
                m * 1e3, mb / m);
  }
}

int Main(int argc, char** argv) {
  Config c;
  if (!ParseFlags(argc, argv, &c)) {
    std::fprintf(stderr,
                 "usage: transport_bench [--reps 5] [--chunks 150] "
                 "[--steps 128] [--copies 64] [--obs 106] [--actions 7] "
                 "[--inflight 4]\n");
    return 2;
  }
  constexpr int kDistinctChunks = 4;
  std::vector<v1::ActorMessage> messages;
  std::vector<std::string> bytes;
  for (int k = 0; k < kDistinctChunks; ++k) {
    messages.push_back(MakeChunk(c, static_cast<uint32_t>(k)));
    bytes.push_back(messages.back().SerializeAsString());
    absl::StatusOr<learner::TrajectoryChunk> check = learner::ChunkFromProto(
        messages.back().chunk(), c.obs, c.actions, learner::ChunkLimits{});
    if (!check.ok()) Die(std::string(check.status().message()));
  }
  const double chunk_mb = static_cast<double>(bytes[0].size()) / 1e6;
  const double chunk_steps = static_cast<double>(c.steps) * c.copies;

  BenchService service(c);
  std::unique_ptr<grpc::Server> server, tuned_server;
  std::unique_ptr<v1::Learner::Stub> stub, tuned_stub;
  StartGrpc(&service, false, &server, &stub);
  StartGrpc(&service, true, &tuned_server, &tuned_stub);

  std::printf(
      "transport_bench: T=%d B=%d D=%d A=%d, chunk %zu bytes (%.0f env steps), "
      "%d chunks per measurement, %d repetitions interleaved, inflight %d, "
      "%u cores\n",
      c.steps, c.copies, c.obs, c.actions, bytes[0].size(), chunk_steps,
      c.chunks, c.reps, c.inflight, std::thread::hardware_concurrency());

  enum Variant { kGrpc = 0, kGrpcTuned = 1, kRaw = 2, kRawCodec = 3 };
  constexpr int kVariants = 4;
  const char* const kNames[kVariants] = {"grpc", "grpc_tuned", "raw_tcp",
                                         "raw_tcp_codec"};
  auto measure = [&](int variant, int chunks) {
    switch (variant) {
      case kGrpc:
        return RunGrpc(stub.get(), &messages, chunks, c.inflight);
      case kGrpcTuned:
        return RunGrpc(tuned_stub.get(), &messages, chunks, c.inflight);
      case kRaw:
        return RunRawTcp(c, &messages, bytes, chunks, false);
      default:
        return RunRawTcp(c, &messages, bytes, chunks, true);
    }
  };
  // Warm-up (connections, allocators, page faults), not reported.
  const int warmup_chunks = std::max(1, c.chunks / 4);
  for (int v = 0; v < kVariants; ++v) measure(v, warmup_chunks);

  PrintCodecCosts(c, messages[0], 20);

  std::vector<double> seconds[kVariants];
  std::vector<double> ratios[kVariants];  // raw_tcp seconds / variant seconds
  for (int rep = 0; rep < c.reps; ++rep) {
    double s[kVariants] = {};
    for (int k = 0; k < kVariants; ++k) {  // rotate the order every rep
      const int v = (rep + k) % kVariants;
      s[v] = measure(v, c.chunks);
    }
    for (int v = 0; v < kVariants; ++v) {
      seconds[v].push_back(s[v]);
      ratios[v].push_back(s[kRaw] / s[v]);
      std::printf("rep %d %-14s %7.3f s %8.1f MB/s %7.3f M env steps/s\n",
                  rep + 1, kNames[v], s[v], c.chunks * chunk_mb / s[v],
                  c.chunks * chunk_steps / s[v] / 1e6);
    }
  }
  // Every chunk the gRPC clients sent was decoded and validated.
  const int64_t expected =
      (int64_t{c.chunks} * c.reps + warmup_chunks) * 2 * c.steps * c.copies;
  const int64_t decoded = service.steps_decoded.load();
  std::printf("grpc servers decoded %" PRId64 " of %" PRId64
              " env steps sent, rejected %" PRId64 " chunks\n",
              decoded, expected, service.chunks_rejected.load());
  for (int v = 0; v < kVariants; ++v) {
    const double m = Median(seconds[v]);
    std::printf(
        "median %-14s %7.3f s %8.1f MB/s %7.3f M env steps/s  "
        "(vs raw_tcp: %.2f, median of per-rep ratios)\n",
        kNames[v], m, c.chunks * chunk_mb / m, c.chunks * chunk_steps / m / 1e6,
        Median(ratios[v]));
  }
  server->Shutdown();
  tuned_server->Shutdown();
  return decoded == expected && service.chunks_rejected.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ristretto::bench

int main(int argc, char** argv) { return ristretto::bench::Main(argc, argv); }
