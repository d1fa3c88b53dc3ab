#include "learner/torch/counting_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ristretto::learner {
namespace {

// Counts every allocate() and delegates it to `base`.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  // LibTorch 2.3 made allocate() non-const and added copy_data(); 1.13
  // (Debian's) has neither.
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t n) override {
    count_.fetch_add(1, std::memory_order_relaxed);
    return base_->allocate(n);
  }
  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override {
    count_.fetch_add(1, std::memory_order_relaxed);
    return base_->allocate(n);
  }
#endif
  c10::DeleterFnPtr raw_deleter() const override {
    return base_->raw_deleter();
  }
  int64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  c10::Allocator* base_;
  mutable std::atomic<int64_t> count_{0};
};

}  // namespace

int64_t CpuAllocationCount() {
  // Never destroyed: LibTorch keeps the pointer for the process's life.
  static CountingAllocator* const counting = [] {
    auto* c = new CountingAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(c, /*priority=*/100);
    return c;
  }();
  return counting->count();
}

}  // namespace ristretto::learner
