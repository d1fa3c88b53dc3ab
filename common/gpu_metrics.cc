#include "common/gpu_metrics.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace ristretto {
namespace {

// ---- NVML (nvml.h), only what is used. Enums are passed as int (their
// C representation). Every call returns nvmlReturn_t; NVML_SUCCESS = 0.
using NvmlReturn = int;
using NvmlDevice = void*;  // nvmlDevice_t: struct nvmlDevice_st*
struct NvmlUtilization {   // nvmlUtilization_t, percent
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {          // nvmlMemory_t, bytes
  unsigned long long total;  // NOLINT(google-runtime-int): the C ABI type
  unsigned long long free;   // NOLINT(google-runtime-int)
  unsigned long long used;   // NOLINT(google-runtime-int)
};
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;        // NVML_CLOCK_MEM

// ---- ROCm SMI (rocm_smi/rocm_smi.h). Every call returns rsmi_status_t;
// RSMI_STATUS_SUCCESS = 0.
using RsmiStatus = uint32_t;
struct RsmiVersion {  // rsmi_version_t
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
  const char* build;
};
// rsmi_frequencies_t changed in ROCm 6 (library major version 6): a
// has_deep_sleep flag first and 33 entries instead of 32. Frequencies in Hz.
struct RsmiFrequenciesV5 {
  uint32_t num_supported;
  uint32_t current;
  uint64_t frequency[32];
};
struct RsmiFrequenciesV6 {
  bool has_deep_sleep;
  uint32_t num_supported;
  uint32_t current;
  uint64_t frequency[33];
};
constexpr int kRsmiMemVram = 0;      // RSMI_MEM_TYPE_VRAM
constexpr int kRsmiTempEdge = 0;     // RSMI_TEMP_TYPE_EDGE
constexpr int kRsmiTempCurrent = 0;  // RSMI_TEMP_CURRENT
constexpr int kRsmiClkSys = 0;       // RSMI_CLK_TYPE_SYS
constexpr int kRsmiClkMem = 4;       // RSMI_CLK_TYPE_MEM

template <typename F>
bool Resolve(void* handle, const char* name, F* out,
             std::vector<std::string>* missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr && missing != nullptr) missing->push_back(name);
  return *out != nullptr;
}

}  // namespace

struct GpuMonitor::Library {
  void* handle = nullptr;
  bool nvml = false;
  bool initialised = false;

  NvmlReturn (*nvml_shutdown)() = nullptr;
  NvmlReturn (*nvml_utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*nvml_memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*nvml_power)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*nvml_temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*nvml_clock)(NvmlDevice, int, unsigned int*) = nullptr;
  std::vector<NvmlDevice> nvml_devices;

  RsmiStatus (*rsmi_shut_down)() = nullptr;
  RsmiStatus (*rsmi_busy)(uint32_t, uint32_t*) = nullptr;
  RsmiStatus (*rsmi_memory_usage)(uint32_t, int, uint64_t*) = nullptr;
  RsmiStatus (*rsmi_memory_total)(uint32_t, int, uint64_t*) = nullptr;
  RsmiStatus (*rsmi_power_ave)(uint32_t, uint32_t, uint64_t*) = nullptr;
  // ROCm 6 replacement of power_ave on newer boards; optional.
  RsmiStatus (*rsmi_socket_power)(uint32_t, uint64_t*) = nullptr;
  RsmiStatus (*rsmi_temperature)(uint32_t, uint32_t, int, int64_t*) = nullptr;
  RsmiStatus (*rsmi_clock)(uint32_t, int, void*) = nullptr;
  bool rsmi_v6_frequencies = false;

  ~Library() {
    if (handle == nullptr) return;
    if (initialised) {
      if (nvml && nvml_shutdown != nullptr) nvml_shutdown();
      if (!nvml && rsmi_shut_down != nullptr) rsmi_shut_down();
    }
    dlclose(handle);
  }
};

namespace {

using LibraryPtr = std::unique_ptr<GpuMonitor::Library>;

// dlopen()s `path`; nullptr with `why` set on failure.
void* Load(const std::string& path, std::string* why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    *why = absl::StrCat(path, ": ", error != nullptr ? error : "not loaded");
  }
  return handle;
}

std::string Missing(const std::string& path,
                    const std::vector<std::string>& missing) {
  return absl::StrCat(path, ": no ", absl::StrJoin(missing, ", "));
}

// Opens NVML from `path`: the devices it sees, or nullptr with `why`.
LibraryPtr OpenNvml(const std::string& path, std::string* why) {
  auto lib = std::make_unique<GpuMonitor::Library>();
  lib->nvml = true;
  lib->handle = Load(path, why);
  if (lib->handle == nullptr) return nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*count)(unsigned int*) = nullptr;
  NvmlReturn (*by_index)(unsigned int, NvmlDevice*) = nullptr;
  std::vector<std::string> missing;
  void* h = lib->handle;
  Resolve(h, "nvmlInit_v2", &init, &missing);
  Resolve(h, "nvmlShutdown", &lib->nvml_shutdown, &missing);
  Resolve(h, "nvmlDeviceGetCount_v2", &count, &missing);
  Resolve(h, "nvmlDeviceGetHandleByIndex_v2", &by_index, &missing);
  Resolve(h, "nvmlDeviceGetUtilizationRates", &lib->nvml_utilization, &missing);
  Resolve(h, "nvmlDeviceGetMemoryInfo", &lib->nvml_memory, &missing);
  Resolve(h, "nvmlDeviceGetPowerUsage", &lib->nvml_power, &missing);
  Resolve(h, "nvmlDeviceGetTemperature", &lib->nvml_temperature, &missing);
  Resolve(h, "nvmlDeviceGetClockInfo", &lib->nvml_clock, &missing);
  if (!missing.empty()) {
    *why = Missing(path, missing);
    return nullptr;
  }
  if (const NvmlReturn r = init(); r != 0) {
    *why = absl::StrCat(path, ": nvmlInit_v2 returned ", r);
    return nullptr;
  }
  lib->initialised = true;
  unsigned int n = 0;
  if (const NvmlReturn r = count(&n); r != 0 || n == 0) {
    *why = absl::StrCat(path, ": no device (nvmlDeviceGetCount_v2 returned ", r,
                        ", count ", n, ")");
    return nullptr;
  }
  for (unsigned int i = 0; i < n; ++i) {
    NvmlDevice device = nullptr;
    if (by_index(i, &device) != 0) device = nullptr;
    lib->nvml_devices.push_back(device);
  }
  return lib;
}

// Opens ROCm SMI from `path`: the devices it sees, or nullptr with `why`.
LibraryPtr OpenRocmSmi(const std::string& path, std::string* why,
                       int* devices) {
  auto lib = std::make_unique<GpuMonitor::Library>();
  lib->handle = Load(path, why);
  if (lib->handle == nullptr) return nullptr;
  RsmiStatus (*init)(uint64_t) = nullptr;
  RsmiStatus (*count)(uint32_t*) = nullptr;
  RsmiStatus (*version)(RsmiVersion*) = nullptr;
  std::vector<std::string> missing;
  void* h = lib->handle;
  Resolve(h, "rsmi_init", &init, &missing);
  Resolve(h, "rsmi_shut_down", &lib->rsmi_shut_down, &missing);
  Resolve(h, "rsmi_num_monitor_devices", &count, &missing);
  Resolve(h, "rsmi_dev_busy_percent_get", &lib->rsmi_busy, &missing);
  Resolve(h, "rsmi_dev_memory_usage_get", &lib->rsmi_memory_usage, &missing);
  Resolve(h, "rsmi_dev_memory_total_get", &lib->rsmi_memory_total, &missing);
  Resolve(h, "rsmi_dev_power_ave_get", &lib->rsmi_power_ave, &missing);
  Resolve(h, "rsmi_dev_temp_metric_get", &lib->rsmi_temperature, &missing);
  Resolve(h, "rsmi_dev_gpu_clk_freq_get", &lib->rsmi_clock, &missing);
  Resolve(h, "rsmi_dev_current_socket_power_get", &lib->rsmi_socket_power,
          nullptr);
  Resolve(h, "rsmi_version_get", &version, nullptr);
  if (!missing.empty()) {
    *why = Missing(path, missing);
    return nullptr;
  }
  if (const RsmiStatus r = init(0); r != 0) {
    *why = absl::StrCat(path, ": rsmi_init returned ", r);
    return nullptr;
  }
  lib->initialised = true;
  uint32_t n = 0;
  if (const RsmiStatus r = count(&n); r != 0 || n == 0) {
    *why = absl::StrCat(path, ": no device (rsmi_num_monitor_devices returned ",
                        r, ", count ", n, ")");
    return nullptr;
  }
  RsmiVersion v{};
  lib->rsmi_v6_frequencies =
      version != nullptr && version(&v) == 0 && v.major >= 6;
  *devices = static_cast<int>(n);
  return lib;
}

}  // namespace

GpuMonitor::GpuMonitor() = default;
GpuMonitor::~GpuMonitor() = default;

std::unique_ptr<GpuMonitor> GpuMonitor::Open(const GpuMonitorOptions& options) {
  std::unique_ptr<GpuMonitor> monitor(new GpuMonitor());
  std::vector<std::string> skipped;
  auto use = [&](LibraryPtr lib, const char* source, int devices,
                 const std::string& path) {
    monitor->source_ = source;
    monitor->device_count_ = devices;
    monitor->detail_ = absl::StrCat(path, " (", devices, " device",
                                    devices == 1 ? "" : "s", ")");
    absl::MutexLock lock(&monitor->mu_);
    monitor->library_ = std::move(lib);
  };
  for (const std::string& path : options.nvml_libraries) {
    std::string why;
    LibraryPtr lib = OpenNvml(path, &why);
    if (lib != nullptr) {
      const int n = static_cast<int>(lib->nvml_devices.size());
      use(std::move(lib), kNvml, n, path);
      return monitor;
    }
    skipped.push_back(why);
  }
  for (const std::string& path : options.rocm_smi_libraries) {
    std::string why;
    int devices = 0;
    LibraryPtr lib = OpenRocmSmi(path, &why, &devices);
    if (lib != nullptr) {
      use(std::move(lib), kRocmSmi, devices, path);
      return monitor;
    }
    skipped.push_back(why);
  }
  monitor->source_ = kNone;
  monitor->detail_ = absl::StrJoin(skipped, "; ");
  return monitor;
}

namespace {

void ReadNvml(const GpuMonitor::Library& lib, int index, GpuReading* r) {
  NvmlDevice d = lib.nvml_devices[index];
  if (d == nullptr) return;
  NvmlUtilization util{};
  if (lib.nvml_utilization(d, &util) == 0) {
    r->utilization_ratio = util.gpu / 100.0;
  }
  NvmlMemory memory{};
  if (lib.nvml_memory(d, &memory) == 0) {
    r->memory_used_bytes = static_cast<double>(memory.used);
    r->memory_total_bytes = static_cast<double>(memory.total);
  }
  unsigned int value = 0;
  if (lib.nvml_power(d, &value) == 0) r->power_watts = value / 1e3;  // mW
  if (lib.nvml_temperature(d, kNvmlTemperatureGpu, &value) == 0) {
    r->temperature_celsius = value;
  }
  if (lib.nvml_clock(d, kNvmlClockSm, &value) == 0) {
    r->sm_clock_hertz = value * 1e6;  // MHz
  }
  if (lib.nvml_clock(d, kNvmlClockMem, &value) == 0) {
    r->memory_clock_hertz = value * 1e6;
  }
}

// The current frequency (Hz) of `clock`, read with the layout of the
// library's version.
std::optional<double> RsmiClock(const GpuMonitor::Library& lib, uint32_t index,
                                int clock) {
  // Larger than either layout, zeroed: a misjudged layout reads garbage
  // values at worst, never past the buffer.
  alignas(8) unsigned char buffer[512] = {};
  if (lib.rsmi_clock(index, clock, buffer) != 0) return std::nullopt;
  uint32_t supported = 0, current = 0;
  uint64_t hz = 0;
  if (lib.rsmi_v6_frequencies) {
    RsmiFrequenciesV6 f;
    std::memcpy(&f, buffer, sizeof(f));
    supported = f.num_supported;
    current = f.current;
    if (current < supported && current < 33) hz = f.frequency[current];
  } else {
    RsmiFrequenciesV5 f;
    std::memcpy(&f, buffer, sizeof(f));
    supported = f.num_supported;
    current = f.current;
    if (current < supported && current < 32) hz = f.frequency[current];
  }
  if (hz == 0) return std::nullopt;
  return static_cast<double>(hz);
}

void ReadRocmSmi(const GpuMonitor::Library& lib, int index, GpuReading* r) {
  const auto i = static_cast<uint32_t>(index);
  uint32_t busy = 0;
  if (lib.rsmi_busy(i, &busy) == 0) r->utilization_ratio = busy / 100.0;
  uint64_t bytes = 0;
  if (lib.rsmi_memory_usage(i, kRsmiMemVram, &bytes) == 0) {
    r->memory_used_bytes = static_cast<double>(bytes);
  }
  if (lib.rsmi_memory_total(i, kRsmiMemVram, &bytes) == 0) {
    r->memory_total_bytes = static_cast<double>(bytes);
  }
  uint64_t microwatts = 0;
  if (lib.rsmi_power_ave(i, 0, &microwatts) == 0 ||
      (lib.rsmi_socket_power != nullptr &&
       lib.rsmi_socket_power(i, &microwatts) == 0)) {
    r->power_watts = microwatts / 1e6;
  }
  int64_t millidegrees = 0;
  if (lib.rsmi_temperature(i, kRsmiTempEdge, kRsmiTempCurrent, &millidegrees) ==
      0) {
    r->temperature_celsius = millidegrees / 1e3;
  }
  r->sm_clock_hertz = RsmiClock(lib, i, kRsmiClkSys);
  r->memory_clock_hertz = RsmiClock(lib, i, kRsmiClkMem);
}

}  // namespace

std::vector<GpuReading> GpuMonitor::Read() const {
  absl::MutexLock lock(&mu_);
  std::vector<GpuReading> readings;
  if (library_ == nullptr) return readings;
  for (int i = 0; i < device_count_; ++i) {
    GpuReading r;
    r.index = i;
    if (library_->nvml) {
      ReadNvml(*library_, i, &r);
    } else {
      ReadRocmSmi(*library_, i, &r);
    }
    readings.push_back(r);
  }
  return readings;
}

namespace {

class GpuCollector final : public prometheus::Collectable {
 public:
  explicit GpuCollector(std::shared_ptr<const GpuMonitor> monitor)
      : monitor_(std::move(monitor)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    prometheus::MetricFamily available =
        Family("ristretto_gpu_metrics_available",
               "1 for the active GPU telemetry source (nvml, rocm_smi or "
               "none), 0 for the others.");
    for (const char* source :
         {GpuMonitor::kNvml, GpuMonitor::kRocmSmi, GpuMonitor::kNone}) {
      Add(&available, {{"source", source}},
          monitor_->source() == source ? 1.0 : 0.0);
    }
    out.push_back(std::move(available));

    const std::vector<GpuReading> readings = monitor_->Read();
    if (readings.empty()) return out;
    struct Field {
      const char* name;
      const char* help;
      std::optional<double> GpuReading::*value;
    };
    static constexpr Field kFields[] = {
        {"ristretto_gpu_utilization_ratio",
         "Device utilisation reported by the driver.",
         &GpuReading::utilization_ratio},
        {"ristretto_gpu_memory_used_bytes",
         "Device memory in use (all processes).",
         &GpuReading::memory_used_bytes},
        {"ristretto_gpu_memory_total_bytes", "Device memory size.",
         &GpuReading::memory_total_bytes},
        {"ristretto_gpu_power_watts", "Board power draw.",
         &GpuReading::power_watts},
        {"ristretto_gpu_temperature_celsius", "Die (edge) temperature.",
         &GpuReading::temperature_celsius},
    };
    for (const Field& field : kFields) {
      prometheus::MetricFamily family = Family(field.name, field.help);
      for (const GpuReading& r : readings) {
        const std::optional<double>& v = r.*(field.value);
        if (v.has_value()) Add(&family, {{"gpu", absl::StrCat(r.index)}}, *v);
      }
      if (!family.metric.empty()) out.push_back(std::move(family));
    }
    prometheus::MetricFamily clocks = Family(
        "ristretto_gpu_clock_hertz", "Current clock (sm: shader, memory).");
    for (const GpuReading& r : readings) {
      const std::string gpu = absl::StrCat(r.index);
      if (r.sm_clock_hertz.has_value()) {
        Add(&clocks, {{"clock", "sm"}, {"gpu", gpu}}, *r.sm_clock_hertz);
      }
      if (r.memory_clock_hertz.has_value()) {
        Add(&clocks, {{"clock", "memory"}, {"gpu", gpu}},
            *r.memory_clock_hertz);
      }
    }
    if (!clocks.metric.empty()) out.push_back(std::move(clocks));
    return out;
  }

 private:
  static prometheus::MetricFamily Family(const char* name, const char* help) {
    prometheus::MetricFamily family;
    family.name = name;
    family.help = help;
    family.type = prometheus::MetricType::Gauge;
    return family;
  }
  static void Add(prometheus::MetricFamily* family,
                  std::vector<prometheus::ClientMetric::Label> labels,
                  double value) {
    prometheus::ClientMetric metric;
    metric.label = std::move(labels);
    metric.gauge.value = value;
    family->metric.push_back(std::move(metric));
  }

  const std::shared_ptr<const GpuMonitor> monitor_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> MakeGpuCollector(
    std::shared_ptr<const GpuMonitor> monitor) {
  return std::make_shared<GpuCollector>(std::move(monitor));
}

}  // namespace ristretto
