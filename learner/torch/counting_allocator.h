// A count of LibTorch's CPU tensor allocations (storage, not the small
// TensorImpl objects): how a test or a benchmark shows that a code path
// allocates no tensor memory. No torch in this header.
#ifndef RISTRETTO_LEARNER_TORCH_COUNTING_ALLOCATOR_H_
#define RISTRETTO_LEARNER_TORCH_COUNTING_ALLOCATOR_H_

#include <cstdint>

namespace ristretto::learner {

// The number of CPU tensor allocations since the counter was installed. The
// first call installs it, process-wide and for the rest of the process: a
// CPU allocator that counts and delegates to the one LibTorch had at that
// moment (so call it after the runtime policy has set the allocator).
// Thread-safe.
int64_t CpuAllocationCount();

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_COUNTING_ALLOCATOR_H_
