#include "learner/torch/torch_runtime.h"

#include <torch/torch.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "common/blas_thread_tuner.h"
#include "common/log.h"

namespace ristretto::learner {

AppliedRuntimePolicy ApplyTorchRuntimePolicy(const RuntimePolicy& policy) {
  AppliedRuntimePolicy applied = ApplyRuntimePolicy(policy);
  if (applied.disabled) {
    applied.torch_intra_op_threads = torch::get_num_threads();
    applied.torch_inter_op_threads = torch::get_num_interop_threads();
    return applied;
  }
  if (policy.torch_intra_op_threads > 0) {
    torch::set_num_threads(policy.torch_intra_op_threads);
  }
  if (policy.torch_inter_op_threads > 0 &&
      torch::get_num_interop_threads() != policy.torch_inter_op_threads) {
    try {
      torch::set_num_interop_threads(policy.torch_inter_op_threads);
    } catch (const std::exception&) {
      // Already set, or inter-op work has started: the count stays.
      absl::StrAppend(&applied.note, "inter-op threads already fixed; ");
    }
  }
  applied.torch_intra_op_threads = torch::get_num_threads();
  applied.torch_inter_op_threads = torch::get_num_interop_threads();
  // LibTorch's set_num_threads may reset OpenBLAS's count on some builds:
  // read it again.
  applied.blas_threads = OpenBlasThreads();
  // Roles that train: OpenBLAS runs 1 thread outside gradient steps; in
  // them the learner chooses the count per step by measuring, the trainer
  // keeps the full count unless told otherwise (PpoOptions::
  // fixed_blas_threads; common/blas_thread_tuner.h).
  if (policy.role == ProcessRole::kTrainer ||
      policy.role == ProcessRole::kLearner) {
    const BlasThreadTuner& blas = BlasThreadTuner::Process();
    if (blas.active()) {
      absl::StrAppend(
          &applied.note, "OpenBLAS 1 thread outside gradient steps, ",
          policy.role == ProcessRole::kLearner
              ? absl::StrCat(blas.max_threads(),
                             " in the steps where measuring shows it faster (",
                             BlasThreadTuner::kEnv, "=off keeps ",
                             blas.max_threads(), "); ")
              : absl::StrCat(blas.max_threads(),
                             " in gradient steps (fixed for a reproducible "
                             "seed; --reproducible=false chooses per step); "));
    }
  }
  return applied;
}

AppliedRuntimePolicy ApplyProcessRuntimePolicy(ProcessRole role) {
  const RuntimePolicy policy = RuntimePolicyFor(role);
  AppliedRuntimePolicy applied = ApplyTorchRuntimePolicy(policy);
  RLOG(INFO) << DescribeRuntimePolicy(policy, applied);
  return applied;
}

}  // namespace ristretto::learner
