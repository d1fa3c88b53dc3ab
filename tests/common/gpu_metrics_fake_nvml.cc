// A stand-in libnvidia-ml for gpu_metrics_test: the NVML functions
// GpuMonitor resolves, with fixed readings. Device 0 reports everything;
// device 1 has no power sensor (NVML_ERROR_NOT_SUPPORTED). The device count
// comes from $FAKE_NVML_DEVICES (default 2).
#include <cstdlib>
#include <cstring>

namespace {
constexpr int kSuccess = 0;
constexpr int kNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED
constexpr int kInvalidArgument = 2;
int g_devices[2] = {0, 1};
}  // namespace

extern "C" {

struct FakeUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct FakeMemory {
  unsigned long long total;  // NOLINT(google-runtime-int)
  unsigned long long free;   // NOLINT(google-runtime-int)
  unsigned long long used;   // NOLINT(google-runtime-int)
};

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  const char* env = std::getenv("FAKE_NVML_DEVICES");
  *count = env != nullptr ? static_cast<unsigned int>(std::atoi(env)) : 2;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index > 1) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}

static int Index(void* device) { return *static_cast<int*>(device); }

int nvmlDeviceGetUtilizationRates(void* device, FakeUtilization* u) {
  u->gpu = Index(device) == 0 ? 37 : 100;
  u->memory = 12;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(void* device, FakeMemory* m) {
  m->total = 8ULL << 30;
  m->used = Index(device) == 0 ? 1ULL << 30 : 3ULL << 30;
  m->free = m->total - m->used;
  return kSuccess;
}

int nvmlDeviceGetPowerUsage(void* device, unsigned int* milliwatts) {
  if (Index(device) == 1) return kNotSupported;
  *milliwatts = 123456;
  return kSuccess;
}

int nvmlDeviceGetTemperature(void* device, int sensor, unsigned int* c) {
  if (sensor != 0) return kInvalidArgument;  // NVML_TEMPERATURE_GPU only
  *c = Index(device) == 0 ? 61 : 70;
  return kSuccess;
}

int nvmlDeviceGetClockInfo(void* device, int type, unsigned int* mhz) {
  if (type == 1) {  // NVML_CLOCK_SM
    *mhz = 1410;
  } else if (type == 2) {  // NVML_CLOCK_MEM
    *mhz = 1215;
  } else {
    return kInvalidArgument;
  }
  return kSuccess;
}

}  // extern "C"
