// GpuMonitor against stand-in NVML and ROCm SMI libraries built by the test
// (gpu_metrics_fake_*.cc), missing libraries and libraries without the
// functions; the collector's output scraped over HTTP.
#include "common/gpu_metrics.h"

#include <stdlib.h>

#include <memory>
#include <optional>
#include <string>

#include "common/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/metrics_scrape.h"

namespace ristretto {
namespace {

using ::ristretto::testing::HasSample;
using ::ristretto::testing::HttpGet;
using ::ristretto::testing::SampleValue;
using ::testing::HasSubstr;
using ::testing::Optional;

GpuMonitorOptions Only(std::vector<std::string> nvml,
                       std::vector<std::string> rocm) {
  GpuMonitorOptions options;
  options.nvml_libraries = std::move(nvml);
  options.rocm_smi_libraries = std::move(rocm);
  return options;
}

// Scrapes `monitor`'s collector through a real endpoint.
std::string Scrape(std::shared_ptr<const GpuMonitor> monitor) {
  MetricsOptions options;
  options.address = "127.0.0.1";
  options.service = "learner";
  auto server = MetricsServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return "";
  (*server)->AddCollectable(MakeGpuCollector(std::move(monitor)));
  return HttpGet((*server)->port()).value_or("");
}

TEST(GpuMonitorTest, MissingLibrariesGiveSourceNoneAndNoReadings) {
  auto monitor = std::shared_ptr<GpuMonitor>(GpuMonitor::Open(
      Only({"/nonexistent/libnvidia-ml.so.1"}, {"/nonexistent/librocm.so"})));
  EXPECT_EQ(monitor->source(), "none");
  EXPECT_EQ(monitor->device_count(), 0);
  EXPECT_TRUE(monitor->Read().empty());
  EXPECT_THAT(monitor->detail(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_THAT(monitor->detail(), HasSubstr("/nonexistent/librocm.so"));

  const std::string body = Scrape(monitor);
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_metrics_available",
                        {{"source", "none"}}),
            std::optional<double>(1));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_metrics_available",
                        {{"source", "nvml"}}),
            std::optional<double>(0));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_metrics_available",
                        {{"source", "rocm_smi"}}),
            std::optional<double>(0));
  EXPECT_FALSE(HasSample(body, "ristretto_gpu_utilization_ratio"));
  EXPECT_FALSE(HasSample(body, "ristretto_gpu_clock_hertz"));
}

TEST(GpuMonitorTest, TheDefaultLibrariesAreAbsentOnThisMachineOrWork) {
  // Where neither vendor library exists (CI, this machine) the source is
  // "none"; on a GPU machine it is the vendor's and devices are seen.
  auto monitor = GpuMonitor::Open(GpuMonitorOptions{});
  if (monitor->source() == "none") {
    EXPECT_TRUE(monitor->Read().empty());
  } else {
    EXPECT_GT(monitor->device_count(), 0);
    EXPECT_EQ(static_cast<int>(monitor->Read().size()),
              monitor->device_count());
  }
}

TEST(GpuMonitorTest, ALibraryWithoutTheFunctionsIsSkipped) {
  // The ROCm stand-in has none of NVML's functions, and vice versa.
  auto monitor =
      GpuMonitor::Open(Only({RISTRETTO_FAKE_ROCM_SMI6}, {RISTRETTO_FAKE_NVML}));
  EXPECT_EQ(monitor->source(), "none");
  EXPECT_THAT(monitor->detail(), HasSubstr("no nvmlInit_v2"));
  EXPECT_THAT(monitor->detail(), HasSubstr("no rsmi_init"));
  EXPECT_TRUE(monitor->Read().empty());
}

TEST(GpuMonitorTest, NvmlReadingsAreConvertedToBaseUnits) {
  auto monitor = std::shared_ptr<GpuMonitor>(GpuMonitor::Open(
      Only({"/nonexistent/libnvidia-ml.so.1", RISTRETTO_FAKE_NVML}, {})));
  ASSERT_EQ(monitor->source(), "nvml") << monitor->detail();
  EXPECT_EQ(monitor->device_count(), 2);
  const std::vector<GpuReading> r = monitor->Read();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].index, 0);
  EXPECT_THAT(r[0].utilization_ratio, Optional(0.37));
  EXPECT_THAT(r[0].memory_used_bytes, Optional(double{1 << 30}));
  EXPECT_THAT(r[0].memory_total_bytes, Optional(8.0 * (1 << 30)));
  EXPECT_THAT(r[0].power_watts, Optional(123.456));
  EXPECT_THAT(r[0].temperature_celsius, Optional(61.0));
  EXPECT_THAT(r[0].sm_clock_hertz, Optional(1410e6));
  EXPECT_THAT(r[0].memory_clock_hertz, Optional(1215e6));
  EXPECT_EQ(r[1].index, 1);
  EXPECT_THAT(r[1].utilization_ratio, Optional(1.0));
  EXPECT_EQ(r[1].power_watts, std::nullopt);  // not supported there

  const std::string body = Scrape(monitor);
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_metrics_available",
                        {{"source", "nvml"}}),
            std::optional<double>(1));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_metrics_available",
                        {{"source", "none"}}),
            std::optional<double>(0));
  EXPECT_EQ(
      SampleValue(body, "ristretto_gpu_utilization_ratio", {{"gpu", "0"}}),
      std::optional<double>(0.37));
  EXPECT_EQ(
      SampleValue(body, "ristretto_gpu_memory_total_bytes", {{"gpu", "1"}}),
      std::optional<double>(8.0 * (1 << 30)));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_power_watts", {{"gpu", "0"}}),
            std::optional<double>(123.456));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_power_watts", {{"gpu", "1"}}),
            std::nullopt);
  EXPECT_EQ(
      SampleValue(body, "ristretto_gpu_temperature_celsius", {{"gpu", "1"}}),
      std::optional<double>(70));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_clock_hertz",
                        {{"gpu", "0"}, {"clock", "sm"}}),
            std::optional<double>(1410e6));
  EXPECT_EQ(SampleValue(body, "ristretto_gpu_clock_hertz",
                        {{"gpu", "1"}, {"clock", "memory"}}),
            std::optional<double>(1215e6));
}

TEST(GpuMonitorTest, NvmlWithoutDevicesFallsBackToRocmSmi) {
  setenv("FAKE_NVML_DEVICES", "0", 1);
  auto monitor =
      GpuMonitor::Open(Only({RISTRETTO_FAKE_NVML}, {RISTRETTO_FAKE_ROCM_SMI6}));
  unsetenv("FAKE_NVML_DEVICES");
  EXPECT_EQ(monitor->source(), "rocm_smi") << monitor->detail();
  EXPECT_EQ(monitor->device_count(), 1);
}

// ROCm 5 and 6 lay rsmi_frequencies_t out differently; both give the
// current clock.
void ExpectRocmReadings(const char* library) {
  auto monitor = GpuMonitor::Open(Only({}, {library}));
  ASSERT_EQ(monitor->source(), "rocm_smi") << monitor->detail();
  const std::vector<GpuReading> r = monitor->Read();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(r[0].utilization_ratio, Optional(0.55));
  EXPECT_THAT(r[0].memory_used_bytes, Optional(2.0 * (1 << 30)));
  EXPECT_THAT(r[0].memory_total_bytes, Optional(16.0 * (1 << 30)));
  // rsmi_dev_power_ave_get is not supported: current socket power instead.
  EXPECT_THAT(r[0].power_watts, Optional(212.5));
  EXPECT_THAT(r[0].temperature_celsius, Optional(45.5));
  EXPECT_THAT(r[0].sm_clock_hertz, Optional(2300e6));
  EXPECT_THAT(r[0].memory_clock_hertz, Optional(1249e6));
}

TEST(GpuMonitorTest, RocmSmi6ReadingsAreConvertedToBaseUnits) {
  ExpectRocmReadings(RISTRETTO_FAKE_ROCM_SMI6);
}

TEST(GpuMonitorTest, RocmSmi5FrequencyLayoutIsReadToo) {
  ExpectRocmReadings(RISTRETTO_FAKE_ROCM_SMI5);
}

}  // namespace
}  // namespace ristretto
