#include "learner/torch/device_memory.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"

// RISTRETTO_TORCH_CUDA is defined by learner/CMakeLists.txt when LibTorch
// was built with CUDA (Debian's CPU LibTorch ships the c10/cuda headers but
// not the CUDA runtime they need).
#if defined(RISTRETTO_TORCH_CUDA) && \
    __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define RISTRETTO_HAVE_CUDA_ALLOCATOR 1
#endif

namespace ristretto::learner {

absl::Status CapDeviceMemory(const std::string& device, double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU memory fraction must be in [0, 1], got ", fraction));
  }
  if (device.rfind("cuda", 0) != 0) return absl::OkStatus();
  if (!torch::cuda::is_available()) {
    return absl::UnavailableError(absl::StrCat(
        "device ", device, " requested but LibTorch sees no CUDA device"));
  }
  if (fraction == 0.0) return absl::OkStatus();
#ifdef RISTRETTO_HAVE_CUDA_ALLOCATOR
  const torch::Device d(device);
  c10::cuda::CUDACachingAllocator::setMemoryFraction(
      fraction, d.has_index() ? d.index() : 0);
  return absl::OkStatus();
#else
  return absl::UnavailableError(
      "this LibTorch build has no CUDA caching allocator to cap");
#endif
}

}  // namespace ristretto::learner
