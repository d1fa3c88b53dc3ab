// GpuMonitor: device telemetry (utilisation, memory, power, temperature,
// clocks) from the vendor's management library, loaded at run time with
// dlopen so the process runs where neither exists: NVML (NVIDIA,
// libnvidia-ml.so.1) is tried first, then ROCm SMI (AMD, librocm_smi64).
// A library that is missing, lacks a function, fails to initialise or sees
// no device is skipped; with none left the source is "none" and there are
// no readings. No vendor header is needed: the few types used are declared
// in the .cc, as the vendors' headers lay them out.
//
// MakeGpuCollector exports the readings on every scrape as
// ristretto_gpu_*{gpu} gauges plus ristretto_gpu_metrics_available{source}
// (docs/metrics.md).
// Thread-safe: Read() may be called from any thread (calls are serialised).
#ifndef RISTRETTO_COMMON_GPU_METRICS_H_
#define RISTRETTO_COMMON_GPU_METRICS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace ristretto {

// One device's readings in base units; a field the driver does not report
// is nullopt.
struct GpuReading {
  int index = 0;  // device index in the library's numbering
  std::optional<double> utilization_ratio;  // [0, 1]
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> power_watts;
  std::optional<double> temperature_celsius;  // die / edge sensor
  std::optional<double> sm_clock_hertz;       // shader (SM / sclk) clock
  std::optional<double> memory_clock_hertz;
};

struct GpuMonitorOptions {
  // dlopen names or paths, tried in order (the first that loads is used).
  std::vector<std::string> nvml_libraries = {"libnvidia-ml.so.1"};
  std::vector<std::string> rocm_smi_libraries = {
      "librocm_smi64.so", "librocm_smi64.so.7", "librocm_smi64.so.6",
      "librocm_smi64.so.5", "/opt/rocm/lib/librocm_smi64.so"};
};

class GpuMonitor {
 public:
  // The values of source().
  static constexpr char kNvml[] = "nvml";
  static constexpr char kRocmSmi[] = "rocm_smi";
  static constexpr char kNone[] = "none";

  // Never fails: see the file comment for what gives source "none".
  static std::unique_ptr<GpuMonitor> Open(const GpuMonitorOptions& options);
  // Shuts the library down and unloads it.
  ~GpuMonitor();

  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // "nvml", "rocm_smi" or "none".
  const std::string& source() const { return source_; }
  // Which library was loaded, or why each candidate was skipped (for logs).
  const std::string& detail() const { return detail_; }
  // Devices seen at Open().
  int device_count() const { return device_count_; }

  // Current readings of every device (empty when the source is "none").
  std::vector<GpuReading> Read() const;

  // The dlopen handle and the resolved functions (defined in the .cc).
  struct Library;

 private:
  GpuMonitor();

  std::string source_;
  std::string detail_;
  int device_count_ = 0;
  mutable absl::Mutex mu_;  // vendor calls are serialised
  std::unique_ptr<Library> library_ ABSL_PT_GUARDED_BY(mu_);
};

// A Collectable exporting `monitor`'s readings on every scrape.
std::shared_ptr<prometheus::Collectable> MakeGpuCollector(
    std::shared_ptr<const GpuMonitor> monitor);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_GPU_METRICS_H_
