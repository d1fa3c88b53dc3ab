// TrajectoryChunk <-> ristretto.v1.TrajectoryChunk. Decoding is the
// learner's ingest validation: shapes must match the run (obs and action
// sizes), sizes must stay under the server's limits, and every value must
// be finite. Thread-compatible (pure functions).
#ifndef RISTRETTO_LEARNER_CHUNK_CODEC_H_
#define RISTRETTO_LEARNER_CHUNK_CODEC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "learner/trajectory.h"
#include "proto/ristretto.pb.h"

namespace ristretto::learner {

// Limits a server enforces on decoded chunks.
struct ChunkLimits {
  int max_steps = 4096;   // T
  int max_copies = 4096;  // B
};

// Encodes `chunk` with the given per-actor `sequence` number.
void ChunkToProto(const TrajectoryChunk& chunk, int64_t sequence,
                  v1::TrajectoryChunk* out);

// Decodes and validates a chunk for a run with the given observation and
// action sizes. Errors: kInvalidArgument naming the field (wrong dtype or
// shape, sizes over the limits, inconsistent T/B/D/A between tensors, a
// final-observation count that differs from the number of dones, NaN/Inf
// values, dones other than 0/1).
absl::StatusOr<TrajectoryChunk> ChunkFromProto(const v1::TrajectoryChunk& proto,
                                               int obs_size, int action_size,
                                               const ChunkLimits& limits);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_CHUNK_CODEC_H_
