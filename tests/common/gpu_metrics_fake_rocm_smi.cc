// A stand-in librocm_smi64 for gpu_metrics_test: the ROCm SMI functions
// GpuMonitor resolves, with fixed readings for one device. Built twice:
// FAKE_RSMI_MAJOR=5 lays rsmi_frequencies_t out as ROCm 5 does, 6 as ROCm 6
// (has_deep_sleep first, 33 entries); rsmi_version_get says which.
#include <cstdint>

#ifndef FAKE_RSMI_MAJOR
#error "define FAKE_RSMI_MAJOR (5 or 6)"
#endif

namespace {
constexpr uint32_t kSuccess = 0;
constexpr uint32_t kInvalidArgs = 1;
constexpr uint32_t kNotSupported = 2;
}  // namespace

extern "C" {

struct FakeVersion {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
  const char* build;
};

#if FAKE_RSMI_MAJOR >= 6
struct FakeFrequencies {
  bool has_deep_sleep;
  uint32_t num_supported;
  uint32_t current;
  uint64_t frequency[33];
};
#else
struct FakeFrequencies {
  uint32_t num_supported;
  uint32_t current;
  uint64_t frequency[32];
};
#endif

uint32_t rsmi_init(uint64_t /*flags*/) { return kSuccess; }
uint32_t rsmi_shut_down() { return kSuccess; }

uint32_t rsmi_version_get(FakeVersion* v) {
  v->major = FAKE_RSMI_MAJOR;
  v->minor = 0;
  v->patch = 0;
  v->build = "fake";
  return kSuccess;
}

uint32_t rsmi_num_monitor_devices(uint32_t* n) {
  *n = 1;
  return kSuccess;
}

uint32_t rsmi_dev_busy_percent_get(uint32_t dv, uint32_t* busy) {
  if (dv != 0) return kInvalidArgs;
  *busy = 55;
  return kSuccess;
}

uint32_t rsmi_dev_memory_usage_get(uint32_t dv, int type, uint64_t* used) {
  if (dv != 0 || type != 0) return kInvalidArgs;  // RSMI_MEM_TYPE_VRAM
  *used = 2ULL << 30;
  return kSuccess;
}

uint32_t rsmi_dev_memory_total_get(uint32_t dv, int type, uint64_t* total) {
  if (dv != 0 || type != 0) return kInvalidArgs;
  *total = 16ULL << 30;
  return kSuccess;
}

// Like RDNA3 boards on ROCm 6: no average power, current socket power only.
uint32_t rsmi_dev_power_ave_get(uint32_t /*dv*/, uint32_t /*sensor*/,
                                uint64_t* /*microwatts*/) {
  return kNotSupported;
}
uint32_t rsmi_dev_current_socket_power_get(uint32_t dv, uint64_t* microwatts) {
  if (dv != 0) return kInvalidArgs;
  *microwatts = 212500000;
  return kSuccess;
}

uint32_t rsmi_dev_temp_metric_get(uint32_t dv, uint32_t sensor, int metric,
                                  int64_t* millidegrees) {
  // RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT only.
  if (dv != 0 || sensor != 0 || metric != 0) return kInvalidArgs;
  *millidegrees = 45500;
  return kSuccess;
}

uint32_t rsmi_dev_gpu_clk_freq_get(uint32_t dv, int type, FakeFrequencies* f) {
  if (dv != 0) return kInvalidArgs;
  f->num_supported = 3;
  f->current = 2;
  if (type == 0) {  // RSMI_CLK_TYPE_SYS
    f->frequency[0] = 500000000;
    f->frequency[1] = 1500000000;
    f->frequency[2] = 2300000000;
  } else if (type == 4) {  // RSMI_CLK_TYPE_MEM
    f->frequency[0] = 96000000;
    f->frequency[1] = 456000000;
    f->frequency[2] = 1249000000;
  } else {
    return kInvalidArgs;
  }
  return kSuccess;
}

}  // extern "C"
