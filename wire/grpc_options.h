// Process settings for binaries that move trajectory chunks through gRPC
// (ristretto-learner, ristretto-actor; ~3.8 MB per 128-step ×
// 64-copy chunk, hundreds per second). Header-only.
//
// Measured with bench/transport_bench (docs/performance.md, "Distributed
// transport and end to end"):
//  - glibc's allocator is what costs: every chunk allocates several
//    multi-megabyte buffers (gRPC's read and write slices, the parsed
//    proto's strings, the decoded vectors) and frees them a moment later.
//    By default those blocks are mmap'ed or trimmed back to the kernel
//    when freed, so the next chunk page-faults on ~1,000 fresh zeroed
//    pages: ~1 ms of CPU per chunk, more than the codec itself. Keeping
//    them in the process removes that (TuneAllocatorForChunkTraffic(),
//    part of every role's runtime policy: common/runtime_policy.h).
//  - HTTP/2 and TCP channel arguments (16 MiB lookahead and frames, BDP
//    probe off, 8 MiB write buffer, 1–16 MiB TCP reads: the bench's
//    grpc_tuned variant) change neither CPU per chunk nor throughput
//    measurably on loopback, so the binaries keep gRPC's defaults beside
//    their message-size caps.
#ifndef RISTRETTO_WIRE_GRPC_OPTIONS_H_
#define RISTRETTO_WIRE_GRPC_OPTIONS_H_

#include "common/runtime_policy.h"

namespace ristretto::wire {

inline constexpr int kChunkMmapThresholdBytes = kMmapThresholdBytes;
inline constexpr int kChunkTrimThresholdBytes = kTrimThresholdBytes;

// Makes glibc keep freed multi-megabyte blocks for reuse (fixed mmap and
// trim thresholds instead of the adaptive defaults): the allocator part of
// the runtime policy, which the binaries apply whole
// (learner::ApplyProcessRuntimePolicy); transport_bench toggles it alone.
// Cost: the process keeps up to ~64 MiB of freed memory per malloc arena
// instead of returning it. Returns false if glibc refused a setting (the
// defaults then stay).
inline bool TuneAllocatorForChunkTraffic() {
  return SetAllocatorThresholds(kChunkMmapThresholdBytes,
                                kChunkTrimThresholdBytes);
}

}  // namespace ristretto::wire

#endif  // RISTRETTO_WIRE_GRPC_OPTIONS_H_
