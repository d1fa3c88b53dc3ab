// The LibTorch half of the process runtime policy (common/runtime_policy.h):
// intra- and inter-op threads. No torch in this header, so any binary that
// links ristretto_learner can call it from main().
#ifndef RISTRETTO_LEARNER_TORCH_TORCH_RUNTIME_H_
#define RISTRETTO_LEARNER_TORCH_TORCH_RUNTIME_H_

#include "common/runtime_policy.h"

namespace ristretto::learner {

// Applies `policy` whole: the allocator and OpenBLAS (ApplyRuntimePolicy),
// then LibTorch's thread counts. The inter-op count can only be set before
// any inter-op work has started and only once per process; a later call
// leaves it and says so in the returned note. Call first thing in main().
AppliedRuntimePolicy ApplyTorchRuntimePolicy(const RuntimePolicy& policy);

// ApplyTorchRuntimePolicy(RuntimePolicyFor(role)), logged at INFO.
AppliedRuntimePolicy ApplyProcessRuntimePolicy(ProcessRole role);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_TORCH_RUNTIME_H_
