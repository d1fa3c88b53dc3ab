// The actor stream's ActorMessage as gRPC byte buffers, without protobuf's
// intermediate copies (the transport's copy budget: docs/performance.md).
//
// The protobuf path copies a chunk's 3.8 MB four times in user space:
// TrajectoryChunk -> proto strings -> serialised bytes (actor), then
// network buffers -> proto strings -> TrajectoryChunk (learner). Here:
//  * EncodeChunkMessage writes exactly the bytes protobuf would serialise
//    for ActorMessage{chunk = ChunkToProto(chunk, sequence)}, but every
//    tensor payload is a slice aliasing the chunk's own array: no copy, the
//    kernel reads the chunk directly. The chunk is kept alive (shared
//    ownership) until gRPC releases the last slice.
//  * ParseActorMessage reads a received ActorMessage in place: the chunk's
//    tensors are views of the network buffers, and DecodeChunk
//    (chunk_codec.h) then makes the one copy, checking values as it copies.
// What standard protobuf encoders write parses here (any field order,
// packed or unpacked shapes, unknown fields), so other clients need no
// change. Refused, where protobuf would merge or skip: a chunk tensor, or
// the hello/chunk itself, given twice in one message; group fields.
// Thread-compatible.
#ifndef RISTRETTO_WIRE_CHUNK_WIRE_H_
#define RISTRETTO_WIRE_CHUNK_WIRE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"
#include "learner/trajectory.h"
#include "proto/ristretto.pb.h"
#include "wire/chunk_codec.h"

namespace ristretto::wire {

// Payloads shorter than this are copied into the message's header slice
// rather than aliased (a slice per tiny array costs more than the copy).
inline constexpr size_t kAliasMinBytes = 4096;

// ActorMessage{chunk} for `chunk` with `sequence`: byte for byte what
// protobuf serialises for ChunkToProto(*chunk, sequence) wrapped in an
// ActorMessage, with the tensor payloads aliasing `chunk`'s arrays, which
// must not change until the last copy of the buffer is gone.
grpc::ByteBuffer EncodeChunkMessage(
    std::shared_ptr<const learner::TrajectoryChunk> chunk, int64_t sequence);

// Any message serialised into a byte buffer (one copy).
grpc::ByteBuffer SerializeToByteBuffer(
    const google::protobuf::MessageLite& message);

// Caps on the strings a Hello or chunk carries (actor_id, run_id, host,
// want_run_id), in bytes: ids are logged and stored; a 10 MB id is an
// attack, not a name.
inline constexpr size_t kMaxWireIdBytes = 256;
// Cap on Hello.env_copies (B): far above any real actor's batch.
inline constexpr int32_t kMaxHelloEnvCopies = 1 << 16;

// Checks a Hello's fields: actor_id, host and want_run_id at most
// kMaxWireIdBytes and free of control characters; env_copies in
// [0, kMaxHelloEnvCopies] (0: not given); have_version >= -1.
// Errors: kInvalidArgument "malformed ActorMessage: hello.FIELD ...",
// values escaped and capped (EscapeForMessage).
absl::Status ValidateHello(const v1::Hello& hello);

// Chunks on one Act stream carry strictly increasing sequence numbers
// (the actor counts from 0). `previous` is the last accepted sequence on
// the stream, -1 before the first. Errors: kInvalidArgument naming both.
absl::Status CheckChunkSequence(int64_t previous, int64_t sequence);

// A received ActorMessage. Not copyable: the chunk's views point into the
// referenced network buffers and into this object's own strings.
struct ActorFrame {
  enum class Kind { kEmpty, kHello, kChunk };

  ActorFrame() = default;
  ActorFrame(const ActorFrame&) = delete;
  ActorFrame& operator=(const ActorFrame&) = delete;

  Kind kind = Kind::kEmpty;
  v1::Hello hello;  // kHello
  ChunkView chunk;  // kChunk: views of `slices`, `run_id` and `actor_id`
  std::string run_id;
  std::string actor_id;
  std::vector<grpc::Slice> slices;  // the received bytes (references)
};

// Parses `buffer` (an ActorMessage) into `*frame`, replacing what it held.
// Errors, all kInvalidArgument starting "malformed ActorMessage: ": bytes
// that are not a valid protobuf encoding (truncated, bad varint, bad tag,
// groups), a known field with the wrong wire type, a chunk tensor given
// twice, strings that are not UTF-8, chunk ids longer than
// kMaxWireIdBytes, a negative chunk sequence, a Hello that does not parse
// or that ValidateHello refuses. For a
// chunk whose fields can still be walked, frame->chunk.sequence holds its
// sequence (0 when absent: proto3 omits a zero), so the rejection can be
// acknowledged; it is -1 when nothing can be acknowledged.
absl::Status ParseActorMessage(const grpc::ByteBuffer& buffer,
                               ActorFrame* frame);

// The Act stream with the actor's messages written as byte buffers (the
// learner's replies are parsed as usual). Same method and wire format as
// v1::Learner::Stub::Act; this only changes how the client serialises.
using ActStream =
    grpc::ClientReaderWriter<grpc::ByteBuffer, v1::LearnerMessage>;

// The full name of Learner.Act ("/ristretto.v1.Learner/Act").
extern const char kActMethod[];

class ActStub {
 public:
  explicit ActStub(std::shared_ptr<grpc::ChannelInterface> channel);
  std::unique_ptr<ActStream> Act(grpc::ClientContext* context);

 private:
  std::shared_ptr<grpc::ChannelInterface> channel_;
  grpc::internal::RpcMethod method_;
};

}  // namespace ristretto::wire

#endif  // RISTRETTO_WIRE_CHUNK_WIRE_H_
