#include "wire/chunk_wire.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace ristretto::wire {

const char kActMethod[] = "/ristretto.v1.Learner/Act";

namespace {

// ---- Protobuf wire format (developers.google.com/protocol-buffers/docs/
// encoding): a message is a sequence of (tag = field << 3 | wire type,
// value); varints are little-endian base-128.
enum WireType : int {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Field numbers of ActorMessage, TrajectoryChunk and Tensor
// (proto/ristretto.proto; a test checks them against the descriptors).
constexpr int kMessageHello = 1;
constexpr int kMessageChunk = 2;
constexpr int kChunkRunId = 1;
constexpr int kChunkActorId = 2;
constexpr int kChunkEnvCopyIds = 3;
constexpr int kChunkPolicyVersion = 4;
constexpr int kChunkSequence = 5;
constexpr int kChunkFirstTensor = 6;  // observations
constexpr int kChunkLastTensor = 11;  // final_observations
constexpr int kTensorDType = 1;
constexpr int kTensorShape = 2;
constexpr int kTensorData = 3;

// ---- Encoding.

// One tensor of the chunk: header fields and where its payload lives.
struct TensorOut {
  int dtype = 0;
  absl::InlinedVector<int64_t, 4> shape;
  const void* data = nullptr;
  size_t bytes = 0;

  size_t PackedShapeSize() const {
    size_t n = 0;
    for (int64_t d : shape) n += VarintSize(static_cast<uint64_t>(d));
    return n;
  }
  // proto3: default values (dtype 0, no shape, empty data) are omitted.
  size_t Size() const {
    size_t n = 0;
    if (dtype != 0) n += 1 + VarintSize(static_cast<uint64_t>(dtype));
    if (!shape.empty()) {
      const size_t packed = PackedShapeSize();
      n += 1 + VarintSize(packed) + packed;
    }
    if (bytes > 0) n += 1 + VarintSize(bytes) + bytes;
    return n;
  }
};

// Builds the message as small header bytes (copied into one slice) and
// large payloads (aliased), in order.
class MessageBuilder {
 public:
  explicit MessageBuilder(std::shared_ptr<const learner::TrajectoryChunk> owner)
      : owner_(std::move(owner)) {}

  void Varint(uint64_t v) {
    while (v >= 0x80) {
      head_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    head_.push_back(static_cast<char>(v));
  }
  void Tag(int field, WireType type) {
    Varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(type));
  }
  void Copy(const void* data, size_t n) {
    head_.append(static_cast<const char*>(data), n);
  }
  void Payload(const void* data, size_t n) {
    if (n < kAliasMinBytes) {
      Copy(data, n);
      return;
    }
    pieces_.push_back({head_.size(), nullptr, 0});  // head up to here
    pieces_.push_back({0, static_cast<const char*>(data), n});
  }

  grpc::ByteBuffer Finish() {
    const grpc::Slice head(head_.data(), head_.size());
    std::vector<grpc::Slice> slices;
    slices.reserve(pieces_.size() + 1);
    size_t from = 0;
    for (const Piece& p : pieces_) {
      if (p.alias == nullptr) {
        if (p.head_end > from) slices.push_back(head.sub(from, p.head_end));
        from = p.head_end;
        continue;
      }
      // Each aliasing slice holds its own reference to the chunk.
      auto* keep = new std::shared_ptr<const learner::TrajectoryChunk>(owner_);
      slices.emplace_back(
          const_cast<char*>(p.alias), p.size,  // NOLINT: gRPC only reads
          +[](void* k) {
            delete static_cast<
                std::shared_ptr<const learner::TrajectoryChunk>*>(k);
          },
          keep);
    }
    if (head_.size() > from) slices.push_back(head.sub(from, head_.size()));
    return grpc::ByteBuffer(slices.data(), slices.size());
  }

 private:
  struct Piece {
    size_t head_end;    // for a head marker: the head's bytes up to here
    const char* alias;  // for a payload: the aliased bytes
    size_t size;
  };
  std::shared_ptr<const learner::TrajectoryChunk> owner_;
  std::string head_;
  std::vector<Piece> pieces_;
};

void WriteTensor(int field, const TensorOut& t, MessageBuilder* out) {
  out->Tag(field, kLengthDelimited);
  out->Varint(t.Size());
  if (t.dtype != 0) {
    out->Tag(kTensorDType, kVarint);
    out->Varint(static_cast<uint64_t>(t.dtype));
  }
  if (!t.shape.empty()) {
    out->Tag(kTensorShape, kLengthDelimited);
    out->Varint(t.PackedShapeSize());
    for (int64_t d : t.shape) out->Varint(static_cast<uint64_t>(d));
  }
  if (t.bytes > 0) {
    out->Tag(kTensorData, kLengthDelimited);
    out->Varint(t.bytes);
    out->Payload(t.data, t.bytes);
  }
}

size_t StringFieldSize(const std::string& s) {
  return s.empty() ? 0 : 1 + VarintSize(s.size()) + s.size();
}

size_t Int64FieldSize(int64_t v) {
  return v == 0 ? 0 : 1 + VarintSize(static_cast<uint64_t>(v));
}

// ---- Decoding.

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed ActorMessage: ", what));
}

using Pieces = absl::InlinedVector<absl::string_view, 1>;

// Reads protobuf wire format from byte ranges in order (the slices of a
// received message); every read is bounds-checked.
class WireReader {
 public:
  explicit WireReader(absl::Span<const absl::string_view> pieces)
      : pieces_(pieces) {
    for (absl::string_view p : pieces_) remaining_ += p.size();
    Advance(0);  // past empty leading ranges
  }

  bool done() const { return remaining_ == 0; }

  bool ReadVarint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      uint8_t byte = 0;
      if (!ReadByte(&byte)) return false;
      if (shift == 63 && byte > 1) return false;  // over 64 bits
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }

  // The next `n` bytes as ranges of the underlying pieces (no copy).
  bool Take(uint64_t n, Pieces* out) {
    out->clear();
    if (n > remaining_) return false;
    remaining_ -= n;
    while (n > 0) {
      absl::string_view p = pieces_[index_].substr(offset_);
      const size_t take = std::min<uint64_t>(n, p.size());
      if (take > 0) out->push_back(p.substr(0, take));
      n -= take;
      Advance(take);
    }
    return true;
  }

  bool Skip(uint64_t n) {
    if (n > remaining_) return false;
    remaining_ -= n;
    while (n > 0) {
      const size_t take =
          std::min<uint64_t>(n, pieces_[index_].size() - offset_);
      n -= take;
      Advance(take);
    }
    return true;
  }

  // Reads a tag: false at a malformed one (field 0, groups, wire types 6
  // and 7 are errors here).
  bool ReadTag(int* field, WireType* type) {
    // At most 5 bytes (32 bits), as protobuf reads them.
    uint64_t tag = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t byte = 0;
      if (shift > 28 || !ReadByte(&byte)) return false;
      tag |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    if (tag > 0xffffffffULL) return false;
    *field = static_cast<int>(tag >> 3);
    const auto t = static_cast<int>(tag & 7);
    if (*field == 0 || t == kStartGroup || t == kEndGroup || t > kFixed32) {
      return false;
    }
    *type = static_cast<WireType>(t);
    return true;
  }

  // Skips the value of a field of wire type `type`.
  bool SkipValue(WireType type) {
    uint64_t v = 0;
    switch (type) {
      case kVarint:
        return ReadVarint(&v);
      case kFixed64:
        return Skip(8);
      case kFixed32:
        return Skip(4);
      case kLengthDelimited:
        return ReadVarint(&v) && Skip(v);
      default:
        return false;
    }
  }

 private:
  bool ReadByte(uint8_t* out) {
    if (remaining_ == 0) return false;
    --remaining_;
    *out = static_cast<uint8_t>(pieces_[index_][offset_]);
    Advance(1);
    return true;
  }

  void Advance(size_t n) {
    offset_ += n;
    while (index_ < pieces_.size() && offset_ == pieces_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }

  absl::Span<const absl::string_view> pieces_;
  size_t index_ = 0;
  size_t offset_ = 0;
  uint64_t remaining_ = 0;
};

void Flatten(const Pieces& pieces, std::string* out) {
  out->clear();
  for (absl::string_view p : pieces) out->append(p.data(), p.size());
}

// Structural UTF-8 check (proto3 `string` fields must be UTF-8; protobuf's
// own parser refuses them otherwise).
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF.
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// Clears views in place (assigning a fresh temporary trips GCC 12's
// -Wuninitialized false positive on absl::InlinedVector).
void ResetView(TensorView* t) {
  t->dtype = v1::Tensor::DTYPE_UNSPECIFIED;
  t->shape.clear();
  t->data.clear();
  t->data_bytes = 0;
}

void ResetView(ChunkView* c) {
  c->run_id = {};
  c->actor_id = {};
  c->policy_version = 0;
  c->sequence = 0;
  for (TensorView* t : {&c->observations, &c->actions, &c->log_probs,
                        &c->rewards, &c->dones, &c->final_observations}) {
    ResetView(t);
  }
}

const char* const kTensorNames[] = {"observations", "actions",
                                    "log_probs",    "rewards",
                                    "dones",        "final_observations"};

absl::Status ParseTensor(const Pieces& bytes, absl::string_view name,
                         TensorView* out) {
  WireReader r(bytes);
  ResetView(out);
  Pieces value;
  while (!r.done()) {
    int field = 0;
    WireType type = kVarint;
    if (!r.ReadTag(&field, &type)) {
      return Malformed(absl::StrCat("chunk.", name, ": bad tag"));
    }
    uint64_t v = 0;
    if (field == kTensorDType && type == kVarint) {
      if (!r.ReadVarint(&v)) {
        return Malformed(absl::StrCat("chunk.", name, ".dtype: bad varint"));
      }
      out->dtype = static_cast<int32_t>(static_cast<uint32_t>(v));
    } else if (field == kTensorShape && type == kVarint) {  // unpacked
      if (!r.ReadVarint(&v)) {
        return Malformed(absl::StrCat("chunk.", name, ".shape: bad varint"));
      }
      out->shape.push_back(static_cast<int64_t>(v));
    } else if (field == kTensorShape && type == kLengthDelimited) {
      if (!r.ReadVarint(&v) || !r.Take(v, &value)) {
        return Malformed(absl::StrCat("chunk.", name, ".shape: truncated"));
      }
      WireReader packed(value);
      while (!packed.done()) {
        uint64_t d = 0;
        if (!packed.ReadVarint(&d)) {
          return Malformed(absl::StrCat("chunk.", name, ".shape: bad varint"));
        }
        out->shape.push_back(static_cast<int64_t>(d));
      }
    } else if (field == kTensorData && type == kLengthDelimited) {
      if (!r.ReadVarint(&v) || !r.Take(v, &value)) {
        return Malformed(absl::StrCat("chunk.", name, ".data: truncated"));
      }
      out->data.assign(value.begin(), value.end());  // last one wins
      out->data_bytes = v;
    } else if (field <= kTensorData) {
      return Malformed(absl::StrCat("chunk.", name, ": field ", field,
                                    " has wire type ", type));
    } else if (!r.SkipValue(type)) {  // an unknown field
      return Malformed(absl::StrCat("chunk.", name, ": truncated"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseChunk(const Pieces& bytes, ActorFrame* frame,
                        bool* seen_sequence) {
  ChunkView& c = frame->chunk;
  WireReader r(bytes);
  Pieces value;
  bool seen[kChunkLastTensor + 1] = {};
  while (!r.done()) {
    int field = 0;
    WireType type = kVarint;
    if (!r.ReadTag(&field, &type)) return Malformed("chunk: bad tag");
    uint64_t v = 0;
    const bool known = field <= kChunkLastTensor;
    const WireType expected =
        field == kChunkPolicyVersion || field == kChunkSequence
            ? kVarint
            : kLengthDelimited;
    if (known && type != expected &&
        !(field == kChunkEnvCopyIds && type == kVarint)) {
      return Malformed(absl::StrCat("chunk: field ", field, " has wire type ",
                                    type, ", expected ", expected));
    }
    if (!known) {
      if (!r.SkipValue(type)) return Malformed("chunk: truncated");
      continue;
    }
    if (type == kVarint) {
      if (!r.ReadVarint(&v)) return Malformed("chunk: bad varint");
      if (field == kChunkPolicyVersion)
        c.policy_version = static_cast<int64_t>(v);
      if (field == kChunkSequence) {
        c.sequence = static_cast<int64_t>(v);
        *seen_sequence = true;
      }
      continue;  // env_copy_ids (unpacked): not used by the learner
    }
    if (!r.ReadVarint(&v) || !r.Take(v, &value)) {
      return Malformed(absl::StrCat("chunk: field ", field, " is truncated"));
    }
    if (field == kChunkRunId || field == kChunkActorId) {
      std::string* s = field == kChunkRunId ? &frame->run_id : &frame->actor_id;
      Flatten(value, s);
      if (!IsUtf8(*s)) {
        return Malformed(
            absl::StrCat("chunk.", field == kChunkRunId ? "run_id" : "actor_id",
                         " is not UTF-8"));
      }
      if (s->size() > kMaxWireIdBytes) {
        return Malformed(absl::StrCat(
            "chunk.", field == kChunkRunId ? "run_id" : "actor_id", " is ",
            s->size(), " bytes (limit ", kMaxWireIdBytes, ")"));
      }
    } else if (field == kChunkEnvCopyIds) {
      WireReader packed(value);  // checked for well-formedness only
      while (!packed.done()) {
        if (!packed.ReadVarint(&v)) {
          return Malformed("chunk.env_copy_ids: bad varint");
        }
      }
    } else {
      const char* name = kTensorNames[field - kChunkFirstTensor];
      if (seen[field]) {
        return Malformed(absl::StrCat("chunk.", name, " appears twice"));
      }
      seen[field] = true;
      // Fields 6..11, in the order of kTensorNames.
      TensorView* const views[] = {&c.observations, &c.actions,
                                   &c.log_probs,    &c.rewards,
                                   &c.dones,        &c.final_observations};
      absl::Status s =
          ParseTensor(value, name, views[field - kChunkFirstTensor]);
      if (!s.ok()) return s;
    }
  }
  c.run_id = frame->run_id;
  c.actor_id = frame->actor_id;
  return absl::OkStatus();
}

// The sequence of a chunk that failed to parse, for its rejection: field 5
// if the chunk's fields can be walked, 0 (proto3's default) if they can but
// it is absent, -1 if the bytes cannot be walked.
int64_t SequenceOf(const Pieces& bytes) {
  WireReader r(bytes);
  int64_t sequence = 0;
  while (!r.done()) {
    int field = 0;
    WireType type = kVarint;
    if (!r.ReadTag(&field, &type)) return -1;
    if (field == kChunkSequence && type == kVarint) {
      uint64_t v = 0;
      if (!r.ReadVarint(&v)) return -1;
      sequence = static_cast<int64_t>(v);
    } else if (!r.SkipValue(type)) {
      return -1;
    }
  }
  return sequence;
}

}  // namespace

grpc::ByteBuffer EncodeChunkMessage(
    std::shared_ptr<const learner::TrajectoryChunk> chunk, int64_t sequence) {
  const learner::TrajectoryChunk& c = *chunk;
  const int64_t T = c.steps, B = c.copies, D = c.obs_size, A = c.action_size;
  auto floats = [](const std::vector<float>& v,
                   std::initializer_list<int64_t> shape) {
    TensorOut t;
    t.dtype = v1::Tensor::FLOAT32;
    t.shape.assign(shape.begin(), shape.end());
    t.data = v.data();
    t.bytes = v.size() * sizeof(float);
    return t;
  };
  TensorOut tensors[] = {
      floats(c.obs, {T + 1, B, D}),
      floats(c.actions, {T, B, A}),
      floats(c.log_probs, {T, B}),
      floats(c.rewards, {T, B}),
      TensorOut{v1::Tensor::UINT8, {T, B}, c.dones.data(), c.dones.size()},
      floats(c.final_obs, {c.num_dones(), D}),
  };
  size_t ids_packed = 0;
  for (int b = 0; b < c.copies; ++b) ids_packed += VarintSize(b);
  size_t chunk_size = StringFieldSize(c.run_id) + StringFieldSize(c.actor_id) +
                      Int64FieldSize(c.policy_version) +
                      Int64FieldSize(sequence);
  if (ids_packed > 0) chunk_size += 1 + VarintSize(ids_packed) + ids_packed;
  for (const TensorOut& t : tensors) {
    chunk_size += 1 + VarintSize(t.Size()) + t.Size();
  }

  MessageBuilder out(std::move(chunk));
  out.Tag(kMessageChunk, kLengthDelimited);
  out.Varint(chunk_size);
  if (!c.run_id.empty()) {
    out.Tag(kChunkRunId, kLengthDelimited);
    out.Varint(c.run_id.size());
    out.Copy(c.run_id.data(), c.run_id.size());
  }
  if (!c.actor_id.empty()) {
    out.Tag(kChunkActorId, kLengthDelimited);
    out.Varint(c.actor_id.size());
    out.Copy(c.actor_id.data(), c.actor_id.size());
  }
  if (ids_packed > 0) {
    out.Tag(kChunkEnvCopyIds, kLengthDelimited);
    out.Varint(ids_packed);
    for (int b = 0; b < c.copies; ++b) out.Varint(static_cast<uint64_t>(b));
  }
  if (c.policy_version != 0) {
    out.Tag(kChunkPolicyVersion, kVarint);
    out.Varint(static_cast<uint64_t>(c.policy_version));
  }
  if (sequence != 0) {
    out.Tag(kChunkSequence, kVarint);
    out.Varint(static_cast<uint64_t>(sequence));
  }
  for (int k = 0; k < 6; ++k) {
    WriteTensor(kChunkFirstTensor + k, tensors[k], &out);
  }
  return out.Finish();
}

grpc::ByteBuffer SerializeToByteBuffer(
    const google::protobuf::MessageLite& message) {
  grpc::ByteBuffer buffer;
  bool own = false;
  // Fails only for messages over 2 GiB, which no caller builds.
  (void)grpc::GenericSerialize<grpc::ProtoBufferWriter,
                               google::protobuf::MessageLite>(message, &buffer,
                                                              &own);
  return buffer;
}

absl::Status ParseActorMessage(const grpc::ByteBuffer& buffer,
                               ActorFrame* frame) {
  frame->kind = ActorFrame::Kind::kEmpty;
  ResetView(&frame->chunk);
  frame->chunk.sequence = -1;
  frame->run_id.clear();
  frame->actor_id.clear();
  frame->slices.clear();
  if (!buffer.Dump(&frame->slices).ok()) {
    return Malformed("cannot read the received buffer");
  }
  absl::InlinedVector<absl::string_view, 64> pieces;
  for (const grpc::Slice& s : frame->slices) {
    if (s.size() > 0) {
      pieces.emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  WireReader r(pieces);
  Pieces value;
  while (!r.done()) {
    int field = 0;
    WireType type = kVarint;
    if (!r.ReadTag(&field, &type)) return Malformed("bad tag");
    if (field != kMessageHello && field != kMessageChunk) {
      if (!r.SkipValue(type)) return Malformed("truncated");
      continue;
    }
    uint64_t n = 0;
    if (type != kLengthDelimited) {
      return Malformed(absl::StrCat("field ", field, " has wire type ", type,
                                    ", expected 2"));
    }
    if (!r.ReadVarint(&n) || !r.Take(n, &value)) {
      return Malformed(absl::StrCat("field ", field, " is truncated"));
    }
    if (frame->kind != ActorFrame::Kind::kEmpty) {
      // protobuf would merge or replace; no encoder of ours sends this.
      return Malformed("more than one hello or chunk in one message");
    }
    if (field == kMessageHello) {  // small: parsed by protobuf
      std::string bytes;
      Flatten(value, &bytes);
      if (!frame->hello.ParseFromString(bytes)) {
        return Malformed("hello does not parse");
      }
      RETURN_IF_ERROR(ValidateHello(frame->hello));
      frame->kind = ActorFrame::Kind::kHello;
    } else {
      ResetView(&frame->chunk);
      bool seen_sequence = false;
      absl::Status s = ParseChunk(value, frame, &seen_sequence);
      if (!s.ok()) {
        if (!seen_sequence) frame->chunk.sequence = SequenceOf(value);
        return s;
      }
      if (frame->chunk.sequence < 0) {  // nothing to acknowledge it with
        const int64_t sequence = frame->chunk.sequence;
        frame->chunk.sequence = -1;
        return Malformed(
            absl::StrCat("chunk.sequence ", sequence, " is negative"));
      }
      frame->kind = ActorFrame::Kind::kChunk;
    }
  }
  return absl::OkStatus();
}

namespace {

// Checks one Hello string field: length cap, no control characters.
absl::Status CheckHelloText(absl::string_view field, const std::string& s) {
  const absl::Status checked =
      CheckIdText(absl::StrCat("hello.", field), s, kMaxWireIdBytes);
  return checked.ok() ? checked : Malformed(checked.message());
}

}  // namespace

absl::Status ValidateHello(const v1::Hello& hello) {
  RETURN_IF_ERROR(CheckHelloText("actor_id", hello.actor_id()));
  RETURN_IF_ERROR(CheckHelloText("host", hello.host()));
  RETURN_IF_ERROR(CheckHelloText("want_run_id", hello.want_run_id()));
  if (hello.env_copies() < 0 || hello.env_copies() > kMaxHelloEnvCopies) {
    return Malformed(absl::StrCat("hello.env_copies ", hello.env_copies(),
                                  " must be in [0, ", kMaxHelloEnvCopies,
                                  "] (0: not given)"));
  }
  if (hello.have_version() < -1) {
    return Malformed(absl::StrCat("hello.have_version ", hello.have_version(),
                                  " must be >= -1 (-1: none)"));
  }
  return absl::OkStatus();
}

absl::Status CheckChunkSequence(int64_t previous, int64_t sequence) {
  if (sequence > previous) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "chunk sequence ", sequence, " is not after the previous chunk's ",
      previous, " (sequence numbers must increase on a stream)"));
}

ActStub::ActStub(std::shared_ptr<grpc::ChannelInterface> channel)
    : channel_(std::move(channel)),
      method_(kActMethod, grpc::internal::RpcMethod::BIDI_STREAMING, channel_) {
}

std::unique_ptr<ActStream> ActStub::Act(grpc::ClientContext* context) {
  // What the generated stub does for its own message types.
  return std::unique_ptr<ActStream>(
      grpc::internal::ClientReaderWriterFactory<
          grpc::ByteBuffer, v1::LearnerMessage>::Create(channel_.get(), method_,
                                                        context));
}

}  // namespace ristretto::wire
