// Caps LibTorch's CUDA caching allocator for the learner process, so all
// runs hosted on one GPU share a bounded pool (../shared/design/system.md:
// "one CUDA context, a capped memory pool").
#ifndef RISTRETTO_LEARNER_TORCH_DEVICE_MEMORY_H_
#define RISTRETTO_LEARNER_TORCH_DEVICE_MEMORY_H_

#include <string>

#include "absl/status/status.h"

namespace ristretto::learner {

// `fraction` in (0, 1] of the device's memory for `device` ("cuda",
// "cuda:N"); 0 = no cap. A CPU device ignores it. Errors:
// kInvalidArgument for a fraction outside [0, 1]; kUnavailable when a CUDA
// device is asked for and this LibTorch has no CUDA or no device.
absl::Status CapDeviceMemory(const std::string& device, double fraction);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_DEVICE_MEMORY_H_
