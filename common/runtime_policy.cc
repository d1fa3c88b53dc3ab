#include "common/runtime_policy.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ristretto {
namespace {

using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

// OpenBLAS's entry points, when a library loaded into the process (LibTorch
// links it) exports them; null otherwise.
SetThreadsFn OpenBlasSetThreads() {
  return reinterpret_cast<SetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
}
GetThreadsFn OpenBlasGetThreads() {
  return reinterpret_cast<GetThreadsFn>(
      dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
}

}  // namespace

const char* ProcessRoleName(ProcessRole role) {
  switch (role) {
    case ProcessRole::kTrainer:
      return "trainer";
    case ProcessRole::kLearner:
      return "learner";
    case ProcessRole::kActor:
      return "actor";
    case ProcessRole::kBench:
      return "bench";
  }
  return "unknown";
}

RuntimePolicy RuntimePolicyFor(ProcessRole role) {
  RuntimePolicy p;
  p.role = role;
  p.mmap_threshold_bytes = kMmapThresholdBytes;
  p.trim_threshold_bytes = kTrimThresholdBytes;
  p.torch_inter_op_threads = 1;
  if (role == ProcessRole::kActor) {
    p.torch_intra_op_threads = 1;
    p.blas_threads = 1;
  }
  return p;
}

bool SetAllocatorThresholds(int mmap_threshold_bytes,
                            int trim_threshold_bytes) {
  bool ok = true;
  if (mmap_threshold_bytes > 0) {
    ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold_bytes) == 1 && ok;
  }
  if (trim_threshold_bytes > 0) {
    ok = mallopt(M_TRIM_THRESHOLD, trim_threshold_bytes) == 1 && ok;
  }
  return ok;
}

int OpenBlasThreads() {
  const GetThreadsFn get = OpenBlasGetThreads();
  return get != nullptr ? get() : -1;
}

bool SetOpenBlasThreads(int threads) {
  static const SetThreadsFn set = OpenBlasSetThreads();
  if (set == nullptr) return false;
  set(threads);
  return true;
}

bool RuntimePolicyDisabled() {
  const char* value = std::getenv(kRuntimePolicyEnv);
  return value != nullptr && std::strcmp(value, "off") == 0;
}

AppliedRuntimePolicy ApplyRuntimePolicy(const RuntimePolicy& policy) {
  AppliedRuntimePolicy applied;
  if (RuntimePolicyDisabled()) {
    applied.disabled = true;
    applied.note = "disabled by RISTRETTO_RUNTIME_POLICY=off; ";
    applied.blas_threads = OpenBlasThreads();
    return applied;
  }
  applied.allocator_set = SetAllocatorThresholds(policy.mmap_threshold_bytes,
                                                 policy.trim_threshold_bytes);
  if (!applied.allocator_set) {
    absl::StrAppend(&applied.note, "glibc refused a malloc threshold; ");
  }
  if (policy.blas_threads > 0 && !SetOpenBlasThreads(policy.blas_threads)) {
    absl::StrAppend(&applied.note, "no OpenBLAS in the process; ");
  }
  applied.blas_threads = OpenBlasThreads();
  return applied;
}

std::string DescribeRuntimePolicy(const RuntimePolicy& policy,
                                  const AppliedRuntimePolicy& applied) {
  auto count = [](int n) {
    return n < 0 ? std::string("n/a") : absl::StrCat(n);
  };
  if (applied.disabled) {
    return absl::StrCat("runtime policy ", ProcessRoleName(policy.role),
                        ": off (", kRuntimePolicyEnv,
                        "=off), defaults: OpenBLAS threads ",
                        count(applied.blas_threads), ", torch intra-op ",
                        count(applied.torch_intra_op_threads), ", inter-op ",
                        count(applied.torch_inter_op_threads));
  }
  std::string text = absl::StrCat(
      "runtime policy ", ProcessRoleName(policy.role), ": malloc mmap/trim ",
      policy.mmap_threshold_bytes >> 20, "/", policy.trim_threshold_bytes >> 20,
      " MiB", applied.allocator_set ? "" : " (refused)", ", OpenBLAS threads ",
      count(applied.blas_threads), ", torch intra-op ",
      count(applied.torch_intra_op_threads), ", inter-op ",
      count(applied.torch_inter_op_threads));
  if (!applied.note.empty()) {
    // Each part of the note ends with "; ".
    absl::StrAppend(&text, " (",
                    applied.note.substr(0, applied.note.size() - 2), ")");
  }
  return text;
}

}  // namespace ristretto
