#include "wire/chunk_wire.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "proto/ristretto.grpc.pb.h"

namespace ristretto::wire {
namespace {

using learner::TrajectoryChunk;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// T steps x B copies, D = 5, A = 3; a done every `done_every` (t, b) cells
// (0: none); values from `seed`.
std::shared_ptr<TrajectoryChunk> MakeChunk(int T, int B, int done_every,
                                           uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  auto c = std::make_shared<TrajectoryChunk>();
  c->run_id = "run-7";
  c->actor_id = "actor-é";  // UTF-8 beyond ASCII
  c->policy_version = 12;
  c->steps = T;
  c->copies = B;
  c->obs_size = 5;
  c->action_size = 3;
  c->obs.resize(static_cast<size_t>(T + 1) * B * 5);
  for (float& x : c->obs) x = normal(rng);
  c->actions.resize(static_cast<size_t>(T) * B * 3);
  for (float& x : c->actions) x = normal(rng);
  c->log_probs.resize(static_cast<size_t>(T) * B);
  for (float& x : c->log_probs) x = -std::abs(normal(rng));
  c->rewards.resize(static_cast<size_t>(T) * B);
  for (float& x : c->rewards) x = 0.01F * normal(rng);
  c->dones.assign(static_cast<size_t>(T) * B, 0);
  for (size_t i = 0; done_every > 0 && i < c->dones.size(); ++i) {
    if (i % done_every == static_cast<size_t>(done_every) - 1) {
      c->dones[i] = 1;
      for (int d = 0; d < 5; ++d) c->final_obs.push_back(normal(rng));
    }
  }
  return c;
}

std::string ProtoBytes(const TrajectoryChunk& c, int64_t sequence) {
  v1::ActorMessage m;
  ChunkToProto(c, sequence, m.mutable_chunk());
  return m.SerializeAsString();
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// `bytes` as a buffer cut into slices of the given sizes (cycled), so
// varints, strings and floats straddle slice boundaries.
grpc::ByteBuffer Sliced(const std::string& bytes,
                        const std::vector<size_t>& sizes) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  for (size_t k = 0; at < bytes.size(); ++k) {
    const size_t n = std::min(sizes[k % sizes.size()], bytes.size() - at);
    slices.emplace_back(bytes.data() + at, n);
    at += n;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// Decodes through the wire path; the status (and chunk on success).
absl::Status WireDecode(const grpc::ByteBuffer& buffer, int obs, int act,
                        TrajectoryChunk* out, int64_t* sequence = nullptr) {
  ActorFrame frame;
  absl::Status s = ParseActorMessage(buffer, &frame);
  if (sequence != nullptr) *sequence = frame.chunk.sequence;
  if (!s.ok()) return s;
  if (frame.kind != ActorFrame::Kind::kChunk) {
    return absl::InvalidArgumentError("not a chunk");
  }
  return DecodeChunk(frame.chunk, obs, act, ChunkLimits{}, out);
}

void ExpectSameChunk(const TrajectoryChunk& a, const TrajectoryChunk& b) {
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.actor_id, b.actor_id);
  EXPECT_EQ(a.policy_version, b.policy_version);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.copies, b.copies);
  EXPECT_EQ(a.obs_size, b.obs_size);
  EXPECT_EQ(a.action_size, b.action_size);
  EXPECT_EQ(a.obs, b.obs);  // valid chunks hold no NaN
  EXPECT_EQ(a.actions, b.actions);
  EXPECT_EQ(a.log_probs, b.log_probs);
  EXPECT_EQ(a.rewards, b.rewards);
  EXPECT_EQ(a.dones, b.dones);
  EXPECT_EQ(a.final_obs, b.final_obs);
}

TEST(ChunkWireTest, ActMethodIsTheGeneratedServicesName) {
  EXPECT_EQ(std::string(kActMethod),
            std::string("/") + v1::Learner::service_full_name() + "/Act");
}

TEST(ChunkWireTest, EncodingIsByteForByteWhatProtobufSerialises) {
  struct Case {
    int T, B, done_every;
    int64_t version, sequence;
    std::string actor;
  };
  const Case cases[] = {
      {3, 2, 4, 12, 42, "actor-é"},      // all payloads under kAliasMinBytes
      {128, 64, 1000, 12, 7, "a"},       // the actor's chunk: aliased
      {64, 32, 0, 0, 0, ""},             // defaults omitted, no dones
      {16, 300, 7, 1LL << 40, -3, "x"},  // 2-byte copy ids, big varints
  };
  for (const Case& k : cases) {
    auto c = MakeChunk(k.T, k.B, k.done_every, 1);
    c->policy_version = k.version;
    c->actor_id = k.actor;
    const grpc::ByteBuffer buffer = EncodeChunkMessage(c, k.sequence);
    EXPECT_EQ(Flatten(buffer), ProtoBytes(*c, k.sequence))
        << "T=" << k.T << " B=" << k.B;
  }
}

TEST(ChunkWireTest, LargePayloadsAliasTheChunkAndKeepItAlive) {
  auto c = MakeChunk(128, 64, 1000, 2);
  const float* obs = c->obs.data();
  const float* actions = c->actions.data();
  std::weak_ptr<TrajectoryChunk> alive = c;
  auto buffer = std::make_unique<grpc::ByteBuffer>(EncodeChunkMessage(c, 1));
  c.reset();
  EXPECT_FALSE(alive.expired());  // the buffer holds it
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer->Dump(&slices).ok());
  int aliased = 0;
  for (const grpc::Slice& s : slices) {
    const auto* p = reinterpret_cast<const float*>(s.begin());
    aliased += p == obs || p == actions;
  }
  EXPECT_EQ(aliased, 2);  // no copy of the two big arrays
  slices.clear();
  buffer.reset();
  EXPECT_TRUE(alive.expired());  // released with the last slice
}

TEST(ChunkWireTest, RoundTripThroughArbitrarySlicing) {
  auto c = MakeChunk(32, 16, 9, 3);
  const std::string bytes = ProtoBytes(*c, 99);
  const std::vector<std::vector<size_t>> slicings = {
      {bytes.size()}, {1}, {3, 7}, {4093, 5}, {2, 4096, 1, 13}};
  for (const auto& sizes : slicings) {
    TrajectoryChunk out;
    int64_t sequence = 0;
    const absl::Status s =
        WireDecode(Sliced(bytes, sizes), 5, 3, &out, &sequence);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(sequence, 99);
    ExpectSameChunk(out, *c);
  }
  // And the zero-copy encoding itself.
  TrajectoryChunk out;
  ASSERT_TRUE(WireDecode(EncodeChunkMessage(c, 5), 5, 3, &out).ok());
  ExpectSameChunk(out, *c);
}

TEST(ChunkWireTest, ValueErrorsAreWordedAsTheProtoPathAcrossSlices) {
  auto c = MakeChunk(8, 4, 0, 4);
  c->rewards[5] = std::numeric_limits<float>::quiet_NaN();
  c->obs[17] = std::numeric_limits<float>::infinity();
  v1::ActorMessage m;
  ChunkToProto(*c, 3, m.mutable_chunk());
  const absl::Status expected =
      ChunkFromProto(m.chunk(), 5, 3, ChunkLimits{}).status();
  ASSERT_FALSE(expected.ok());
  EXPECT_EQ(expected.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(expected.message()), HasSubstr("obs[17]"));
  TrajectoryChunk out;
  int64_t sequence = -5;
  const absl::Status got =
      WireDecode(Sliced(m.SerializeAsString(), {3}), 5, 3, &out, &sequence);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(sequence, 3);  // the rejection can be acknowledged
  // Wrong sizes for the run.
  EXPECT_EQ(WireDecode(Sliced(m.SerializeAsString(), {5}), 6, 3, &out),
            ChunkFromProto(m.chunk(), 6, 3, ChunkLimits{}).status());
}

TEST(ChunkWireTest, HelloAndUnknownFieldsParse) {
  v1::ActorMessage m;
  m.mutable_hello()->set_actor_id("a-1");
  m.mutable_hello()->set_env_copies(8);
  // An unknown field (number 15, varint) ahead of it.
  const std::string bytes =
      std::string("\x78\x96\x01", 3) + m.SerializeAsString();
  ActorFrame frame;
  ASSERT_TRUE(ParseActorMessage(Sliced(bytes, {2}), &frame).ok());
  EXPECT_EQ(frame.kind, ActorFrame::Kind::kHello);
  EXPECT_EQ(frame.hello.actor_id(), "a-1");
  EXPECT_EQ(frame.hello.env_copies(), 8);
  ASSERT_TRUE(ParseActorMessage(
                  Sliced(v1::ActorMessage().SerializeAsString(), {1}), &frame)
                  .ok());
  EXPECT_EQ(frame.kind, ActorFrame::Kind::kEmpty);
}

TEST(ChunkWireTest, UnpackedShapesFromOtherEncodersAreAccepted) {
  auto c = MakeChunk(2, 2, 0, 5);
  v1::ActorMessage m;
  ChunkToProto(*c, 1, m.mutable_chunk());
  // Re-encode `rewards` by hand with an unpacked shape (field 2 as varints)
  // and the data before the dtype, as another encoder may.
  m.mutable_chunk()->clear_rewards();
  std::string bytes = m.SerializeAsString();
  std::string tensor;
  const std::string data(reinterpret_cast<const char*>(c->rewards.data()),
                         c->rewards.size() * sizeof(float));
  tensor += '\x1a';
  tensor += static_cast<char>(data.size());
  tensor += data;
  tensor += std::string("\x10\x02\x10\x02\x08\x01", 6);  // shape 2, 2; dtype
  std::string field = "\x4a";  // chunk field 9, length-delimited
  field += static_cast<char>(tensor.size());
  field += tensor;
  // Append it inside the chunk: rebuild the outer length.
  v1::ActorMessage outer;
  ASSERT_TRUE(outer.ParseFromString(bytes));
  std::string chunk_bytes = outer.chunk().SerializeAsString() + field;
  std::string message = "\x12";
  uint64_t n = chunk_bytes.size();
  while (n >= 0x80) {
    message += static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  message += static_cast<char>(n);
  message += chunk_bytes;
  ASSERT_TRUE(outer.ParseFromString(message));  // protobuf agrees it is valid
  TrajectoryChunk out;
  const absl::Status s = WireDecode(Sliced(message, {7}), 5, 3, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.rewards, c->rewards);
}

TEST(ChunkWireTest, StructuralErrorsAreMalformed) {
  auto c = MakeChunk(4, 2, 0, 6);
  const std::string good = ProtoBytes(*c, 8);
  TrajectoryChunk out;
  // Truncated anywhere inside: always a clear error, never a crash.
  for (size_t n :
       {size_t{1}, size_t{2}, size_t{5}, good.size() / 2, good.size() - 1}) {
    const absl::Status s =
        WireDecode(Sliced(good.substr(0, n), {3}), 5, 3, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(std::string(s.message()), StartsWith("malformed ActorMessage"))
        << n;
  }
  // A tensor given twice.
  v1::ActorMessage m;
  ChunkToProto(*c, 8, m.mutable_chunk());
  const std::string rewards = m.chunk().rewards().SerializeAsString();
  std::string chunk_bytes = m.chunk().SerializeAsString();
  chunk_bytes += '\x4a';
  chunk_bytes += static_cast<char>(rewards.size());
  chunk_bytes += rewards;
  std::string twice = "\x12";
  twice += static_cast<char>(0x80 | (chunk_bytes.size() & 0x7f));
  twice += static_cast<char>(chunk_bytes.size() >> 7);
  twice += chunk_bytes;
  int64_t sequence = 0;
  EXPECT_EQ(WireDecode(Sliced(twice, {64}), 5, 3, &out, &sequence).message(),
            "malformed ActorMessage: chunk.rewards appears twice");
  EXPECT_EQ(sequence, 8);
  // Wire type 0 for the chunk field; invalid UTF-8 in run_id.
  EXPECT_THAT(std::string(WireDecode(Sliced(std::string("\x10\x01", 2), {1}), 5,
                                     3, &out)
                              .message()),
              HasSubstr("field 2 has wire type 0"));
  const google::protobuf::LogSilencer quiet;  // protobuf's UTF-8 warning
  auto bad = MakeChunk(2, 2, 0, 7);
  bad->run_id = "\xff\xfe";
  EXPECT_EQ(WireDecode(Sliced(ProtoBytes(*bad, 1), {4}), 5, 3, &out).message(),
            "malformed ActorMessage: chunk.run_id is not UTF-8");
}

// A chunk that fails to parse is still acknowledged with its sequence when
// its fields can be walked (0 when absent); a second hello/chunk in one
// message, which protobuf would merge, is refused.
TEST(ChunkWireTest, RejectionsKeepTheSequenceAndDuplicatesAreRefused) {
  const google::protobuf::LogSilencer quiet;  // protobuf's UTF-8 warning
  auto c = MakeChunk(2, 2, 0, 9);
  c->run_id = "\xc3\x28";  // invalid UTF-8, before the sequence field
  TrajectoryChunk out;
  int64_t sequence = -5;
  EXPECT_EQ(WireDecode(Sliced(ProtoBytes(*c, 0), {3}), 5, 3, &out, &sequence)
                .message(),
            "malformed ActorMessage: chunk.run_id is not UTF-8");
  EXPECT_EQ(sequence, 0);  // proto3 leaves a zero sequence out
  EXPECT_FALSE(
      WireDecode(Sliced(ProtoBytes(*c, 77), {3}), 5, 3, &out, &sequence).ok());
  EXPECT_EQ(sequence, 77);

  auto good = MakeChunk(2, 2, 0, 10);
  const std::string twice = ProtoBytes(*good, 1) + ProtoBytes(*good, 2);
  v1::ActorMessage merged;
  ASSERT_TRUE(merged.ParseFromString(twice));  // protobuf merges them
  EXPECT_EQ(WireDecode(Sliced(twice, {100}), 5, 3, &out).message(),
            "malformed ActorMessage: more than one hello or chunk in one "
            "message");
  // A tag padded past 5 bytes (field 15, varint) is refused, as protobuf
  // refuses it.
  const std::string padded("\xf8\x80\x80\x80\x80\x00\x01", 7);
  EXPECT_FALSE(merged.ParseFromString(padded));
  ActorFrame frame;
  const absl::Status refused = ParseActorMessage(Sliced(padded, {2}), &frame);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(), "malformed ActorMessage: bad tag");
}

// Hello fields are validated at parse time: a refused Hello has nothing
// to acknowledge it with (sequence -1), so the service ends the call with
// the message.
TEST(ChunkWireTest, HelloFieldsAreValidated) {
  const auto parse = [](const v1::Hello& hello, ActorFrame* frame) {
    v1::ActorMessage m;
    *m.mutable_hello() = hello;
    return ParseActorMessage(Sliced(m.SerializeAsString(), {7}), frame);
  };
  v1::Hello good;
  good.set_actor_id("host-1234");
  good.set_env_copies(16);
  good.set_host("host");
  good.set_want_run_id("run-1");
  good.set_have_version(-1);
  ActorFrame frame;
  ASSERT_TRUE(parse(good, &frame).ok());
  EXPECT_EQ(frame.kind, ActorFrame::Kind::kHello);
  v1::Hello at_caps = good;
  at_caps.set_actor_id(std::string(kMaxWireIdBytes, 'a'));
  at_caps.set_env_copies(kMaxHelloEnvCopies);
  EXPECT_TRUE(parse(at_caps, &frame).ok());
  at_caps.set_env_copies(0);  // not given: accepted
  EXPECT_TRUE(parse(at_caps, &frame).ok());

  const struct {
    std::function<void(v1::Hello*)> change;
    std::string message;
  } cases[] = {
      {[](v1::Hello* h) { h->set_env_copies(-4); },
       "malformed ActorMessage: hello.env_copies -4 must be in [0, 65536] "
       "(0: not given)"},
      {[](v1::Hello* h) { h->set_env_copies(kMaxHelloEnvCopies + 1); },
       "malformed ActorMessage: hello.env_copies 65537 must be in [0, 65536] "
       "(0: not given)"},
      {[](v1::Hello* h) { h->set_have_version(-2); },
       "malformed ActorMessage: hello.have_version -2 must be >= -1 (-1: "
       "none)"},
      {[](v1::Hello* h) { h->set_actor_id(std::string(10 << 20, 'x')); },
       "malformed ActorMessage: hello.actor_id is 10485760 bytes (limit 256)"},
      {[](v1::Hello* h) { h->set_want_run_id(std::string(257, 'r')); },
       "malformed ActorMessage: hello.want_run_id is 257 bytes (limit 256)"},
      {[](v1::Hello* h) { h->set_host("a\x1b[2Jb\n"); },
       "malformed ActorMessage: hello.host 'a\\x1b[2Jb\\x0a' contains "
       "control characters"},
  };
  for (const auto& c : cases) {
    v1::Hello bad = good;
    c.change(&bad);
    const absl::Status s = parse(bad, &frame);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(s.message()), c.message);
    EXPECT_EQ(frame.chunk.sequence, -1);  // ends the call
    EXPECT_EQ(ValidateHello(bad).message(), s.message());
  }
}

TEST(ChunkWireTest, ChunkIdsOverTheCapAndNegativeSequencesAreRefused) {
  auto c = MakeChunk(2, 2, 0, 9);
  c->actor_id = std::string(10 << 20, 'a');
  TrajectoryChunk out;
  int64_t sequence = -5;
  EXPECT_EQ(WireDecode(Sliced(ProtoBytes(*c, 3), {4096}), 5, 3, &out, &sequence)
                .message(),
            "malformed ActorMessage: chunk.actor_id is 10485760 bytes (limit "
            "256)");
  EXPECT_EQ(sequence, 3);  // acknowledged as a rejection, stream goes on
  c->actor_id = "a";
  c->run_id = std::string(300, 'r');
  EXPECT_EQ(WireDecode(Sliced(ProtoBytes(*c, 4), {64}), 5, 3, &out).message(),
            "malformed ActorMessage: chunk.run_id is 300 bytes (limit 256)");
  c->run_id = "run";
  EXPECT_EQ(WireDecode(Sliced(ProtoBytes(*c, -7), {64}), 5, 3, &out, &sequence)
                .message(),
            "malformed ActorMessage: chunk.sequence -7 is negative");
  EXPECT_EQ(sequence, -1);
}

TEST(ChunkWireTest, ChunkSequencesMustIncreaseOnAStream) {
  EXPECT_TRUE(CheckChunkSequence(-1, 0).ok());
  EXPECT_TRUE(CheckChunkSequence(4, 5).ok());
  EXPECT_TRUE(CheckChunkSequence(4, 90).ok());  // gaps: rejected chunks
  EXPECT_EQ(CheckChunkSequence(7, 7).message(),
            "chunk sequence 7 is not after the previous chunk's 7 (sequence "
            "numbers must increase on a stream)");
  EXPECT_EQ(CheckChunkSequence(7, 3).code(),
            absl::StatusCode::kInvalidArgument);
}

// Random corruption: whatever the wire path accepts, protobuf accepts
// too, and both decode to the same chunk or the same error.
TEST(ChunkWireTest, CorruptedBytesNeverDisagreeWithProtobuf) {
  // protobuf logs every non-UTF-8 string it meets; the test compares.
  const google::protobuf::LogSilencer quiet;
  auto c = MakeChunk(4, 3, 5, 8);
  const std::string good = ProtoBytes(*c, 4);
  std::mt19937 rng(11);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    TrajectoryChunk wire_chunk;
    ActorFrame frame;
    const absl::Status parsed =
        ParseActorMessage(Sliced(bytes, {1 + rng() % 50}), &frame);
    v1::ActorMessage m;
    const bool proto_ok = m.ParseFromString(bytes);
    if (!parsed.ok()) continue;  // stricter is allowed (e.g. wire types)
    ASSERT_TRUE(proto_ok) << "trial " << trial;
    if (frame.kind != ActorFrame::Kind::kChunk) {
      EXPECT_FALSE(m.has_chunk()) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(m.has_chunk()) << "trial " << trial;
    EXPECT_EQ(frame.chunk.sequence, m.chunk().sequence());
    const absl::Status wire =
        DecodeChunk(frame.chunk, 5, 3, ChunkLimits{}, &wire_chunk);
    absl::StatusOr<TrajectoryChunk> proto =
        ChunkFromProto(m.chunk(), 5, 3, ChunkLimits{});
    ASSERT_EQ(wire, proto.status()) << "trial " << trial;
    if (wire.ok()) {
      ++accepted;
      ExpectSameChunk(wire_chunk, *proto);
    }
  }
  EXPECT_GT(accepted, 10);  // flips inside float payloads stay valid
}

}  // namespace
}  // namespace ristretto::wire
