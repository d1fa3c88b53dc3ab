// TrajectoryChunk <-> ristretto.v1.TrajectoryChunk. Decoding is the
// learner's ingest validation: shapes must match the run (obs and action
// sizes), sizes must stay under the server's limits, and every value must
// be finite and inside the run's bounds. Thread-compatible (pure
// functions).
//
// Cost (docs/performance.md): decoding makes one copy of the
// payload, checks finiteness and bounds block by block while the copy is
// in cache and never value-initialises the destination first; every
// tensor's dtype and shape is checked before anything is copied. Encoding
// makes one copy.
#ifndef RISTRETTO_WIRE_CHUNK_CODEC_H_
#define RISTRETTO_WIRE_CHUNK_CODEC_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/tensor_codec.h"
#include "learner/chunk_limits.h"
#include "learner/trajectory.h"
#include "proto/ristretto.pb.h"

namespace ristretto::wire {

// Limits a server enforces on decoded chunks.
struct ChunkLimits {
  int max_steps = 4096;   // T
  int max_copies = 4096;  // B
  // The run's per-field value bounds (learner/chunk_limits.h: derived from
  // its contract and market when the learner creates the run): every
  // observation element, action, log probability and reward must lie in
  // its range. Shared and immutable (one per run, not copied per chunk).
  std::shared_ptr<const learner::ChunkValueBounds> values;
  // Without `values`: the largest magnitude of any float value. A finite
  // but absurd value (1e30, 3e38) from a broken or hostile actor would
  // overflow the float32 statistics and returns an update computes
  // (squares, discounted sums) and poison the run; this catch-all only
  // stops those (tools and tests that decode without a run).
  float max_abs_value = 1e9f;
};

// Status payload (type URL) of a refusal for a value outside the run's
// bound: "[LO, HI]".
inline constexpr char kBoundPayload[] = "type.ristretto/chunk-bound";

// Encodes `chunk` with the given per-actor `sequence` number.
void ChunkToProto(const learner::TrajectoryChunk& chunk, int64_t sequence,
                  v1::TrajectoryChunk* out);

// Decodes and validates a chunk for a run with the given observation and
// action sizes. Errors: kInvalidArgument naming the field (wrong dtype or
// shape, sizes over the limits, inconsistent T/B/D/A between tensors, a
// final-observation count that differs from the number of dones, NaN/Inf
// values, values outside the run's bounds (limits.values, when set: the
// message names the field, index and value, and the range is the payload
// kBoundPayload: for the learner's log, never for the sender) or else beyond
// ±limits.max_abs_value, dones other than 0/1; kInternal if limits.values
// has another observation size than `obs_size`). A decoded chunk passes
// Validate().
absl::StatusOr<learner::TrajectoryChunk> ChunkFromProto(
    const v1::TrajectoryChunk& proto, int obs_size, int action_size,
    const ChunkLimits& limits);

// The same into `*out`, reusing the capacity of its arrays (for a caller
// that recycles chunks: no allocation or page faults once they are large
// enough). Same checks and errors; on error `*out` holds unspecified
// (partially decoded) contents.
absl::Status ChunkFromProto(const v1::TrajectoryChunk& proto, int obs_size,
                            int action_size, const ChunkLimits& limits,
                            learner::TrajectoryChunk* out);

// A received chunk before decoding: its scalar fields and its tensors as
// views of the bytes they arrived in (a parsed proto's strings, or the
// network buffers themselves: wire/chunk_wire.h). The caller keeps
// those bytes alive while the view is used.
struct ChunkView {
  absl::string_view run_id;
  absl::string_view actor_id;
  int64_t policy_version = 0;
  int64_t sequence = 0;
  TensorView observations;
  TensorView actions;
  TensorView log_probs;
  TensorView rewards;
  TensorView dones;
  TensorView final_observations;
};

// A view of a parsed proto (no copy).
ChunkView ViewOf(const v1::TrajectoryChunk& proto);

// Decodes and validates a viewed chunk into `*out`: exactly the checks,
// errors and result of ChunkFromProto (which is this over ViewOf(proto)).
absl::Status DecodeChunk(const ChunkView& view, int obs_size, int action_size,
                         const ChunkLimits& limits,
                         learner::TrajectoryChunk* out);

}  // namespace ristretto::wire

#endif  // RISTRETTO_WIRE_CHUNK_CODEC_H_
