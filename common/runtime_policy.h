// One process runtime policy per role: glibc's malloc thresholds, the
// OpenBLAS worker threads and LibTorch's intra-/inter-op threads, chosen in
// one place and applied first thing in main() by every binary and
// benchmark. The measurements behind each value are in docs/performance.md
// ("Runtime policy").
//
// This header and runtime_policy.cc have no torch: they set the allocator
// and OpenBLAS (found with dlsym, so a process without BLAS is fine). The
// LibTorch part is learner/torch/torch_runtime.h's ApplyProcessRuntimePolicy,
// which applies this one too; binaries without LibTorch call
// ApplyRuntimePolicy below.
#ifndef RISTRETTO_COMMON_RUNTIME_POLICY_H_
#define RISTRETTO_COMMON_RUNTIME_POLICY_H_

#include <string>

namespace ristretto {

enum class ProcessRole {
  kTrainer,  // `ristretto train`: rollout and update in one process
  kLearner,  // ristretto-learner: updates, chunk ingestion over gRPC
  kActor,    // ristretto-actor: small-batch inference and env steps
  kBench,    // bench/ binaries: as the trainer, so floors are comparable
};

const char* ProcessRoleName(ProcessRole role);

// Blocks below this are served from malloc's arenas instead of their own
// mmap (the largest value glibc accepts on 64-bit).
inline constexpr int kMmapThresholdBytes = 32 << 20;
// Free memory at the top of an arena is returned to the kernel only past
// this (a non-main arena is at most 64 MiB, so it keeps its pages).
inline constexpr int kTrimThresholdBytes = 64 << 20;

struct RuntimePolicy {
  ProcessRole role = ProcessRole::kTrainer;
  // mallopt(M_MMAP_THRESHOLD / M_TRIM_THRESHOLD); 0 leaves glibc's adaptive
  // defaults.
  int mmap_threshold_bytes = 0;
  int trim_threshold_bytes = 0;
  // openblas_set_num_threads; 0 leaves OpenBLAS's default (one per core).
  int blas_threads = 0;
  // torch::set_num_threads; 0 leaves it to the run options
  // (ppo.cpu_threads, applied when the learner is built).
  int torch_intra_op_threads = 0;
  // torch::set_num_interop_threads (only before any inter-op work); 0
  // leaves LibTorch's default (one per core).
  int torch_inter_op_threads = 0;
};

// The policy of `role` (see docs/performance.md, "Runtime policy"):
//  - every role keeps freed multi-megabyte blocks in the process (fixed
//    mmap and trim thresholds): update tensors and chunk buffers are
//    allocated and freed every step, and by default each one is a fresh
//    mmap whose pages the kernel faults in and zeroes again;
//  - one inter-op thread everywhere (nothing runs ops concurrently);
//  - the actor: one intra-op and one OpenBLAS thread (8-row forwards lose
//    to thread hand-offs, and idle OpenBLAS workers spin on the cores the
//    learner needs);
//  - trainer, learner, bench: intra-op threads from the run options,
//    OpenBLAS's default.
RuntimePolicy RuntimePolicyFor(ProcessRole role);

// What applying a policy did.
struct AppliedRuntimePolicy {
  bool disabled = false;       // RISTRETTO_RUNTIME_POLICY=off: nothing set
  bool allocator_set = false;  // both mallopt calls succeeded (or 0 asked)
  // OpenBLAS's thread count after applying; -1 when the process has no
  // OpenBLAS (no openblas_get_num_threads symbol).
  int blas_threads = -1;
  // LibTorch's counts after applying; -1 where LibTorch was not involved.
  int torch_intra_op_threads = -1;
  int torch_inter_op_threads = -1;
  // Why a part was not applied (empty when everything was).
  std::string note;
};

// With this environment variable set to "off", applying a policy sets
// nothing (glibc's, OpenBLAS's and LibTorch's defaults stay): for A/B
// measurements of the policy itself (scripts/bench_runtime_policy.sh).
inline constexpr char kRuntimePolicyEnv[] = "RISTRETTO_RUNTIME_POLICY";
bool RuntimePolicyDisabled();

// Sets glibc's malloc thresholds and OpenBLAS's threads (not LibTorch's).
// Call first thing in main(), before threads start (gRPC, LibTorch).
AppliedRuntimePolicy ApplyRuntimePolicy(const RuntimePolicy& policy);

// Only the allocator part: returns false if glibc refused a setting.
bool SetAllocatorThresholds(int mmap_threshold_bytes, int trim_threshold_bytes);

// OpenBLAS's current thread count, or -1 if the process has no OpenBLAS.
int OpenBlasThreads();
// Sets OpenBLAS's thread count; false if the process has no OpenBLAS.
bool SetOpenBlasThreads(int threads);

// One line for the log: the role and the values applied.
std::string DescribeRuntimePolicy(const RuntimePolicy& policy,
                                  const AppliedRuntimePolicy& applied);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_RUNTIME_POLICY_H_
