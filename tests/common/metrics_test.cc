// MetricsServer (served over real HTTP on 127.0.0.1, scraped with a plain
// socket), --metrics-port parsing and BusyTracker.
#include "common/metrics.h"

#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/busy_tracker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"
#include "tests/common/metrics_scrape.h"

namespace ristretto {
namespace {

using ::ristretto::testing::HttpGet;
using ::ristretto::testing::SampleValue;
using ::testing::HasSubstr;

std::unique_ptr<MetricsServer> LocalServer(const std::string& service) {
  MetricsOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.service = service;
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

TEST(ParseMetricsPortTest, ZeroIsOffAutoIsAnyPortNumbersArePorts) {
  EXPECT_EQ(*ParseMetricsPort("0"), std::nullopt);
  EXPECT_EQ(*ParseMetricsPort("auto"), std::optional<int>(0));
  EXPECT_EQ(*ParseMetricsPort("9100"), std::optional<int>(9100));
  EXPECT_EQ(*ParseMetricsPort("65535"), std::optional<int>(65535));
  for (const char* bad : {"-1", "65536", "", "91x", "on"}) {
    EXPECT_EQ(ParseMetricsPort(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(MetricsServerTest, ServesRegisteredCountersAndProcessMemoryOverHttp) {
  std::unique_ptr<MetricsServer> server = LocalServer("learner");
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->address(), absl::StrCat("127.0.0.1:", server->port()));

  prometheus::Counter& steps = prometheus::BuildCounter()
                                   .Name("ristretto_test_steps_total")
                                   .Help("Steps.")
                                   .Register(server->registry())
                                   .Add({{"run", "run-0"}});
  steps.Increment(41);
  steps.Increment();

  const std::optional<std::string> body = HttpGet(server->port());
  ASSERT_TRUE(body.has_value());
  EXPECT_THAT(*body, HasSubstr("# TYPE ristretto_test_steps_total counter"));
  EXPECT_EQ(
      SampleValue(*body, "ristretto_test_steps_total", {{"run", "run-0"}}),
      std::optional<double>(42));
  const std::optional<double> rss =
      SampleValue(*body, "ristretto_process_resident_memory_bytes",
                  {{"service", "learner"}});
  ASSERT_TRUE(rss.has_value()) << *body;
  // A running test binary holds megabytes; the value is read at scrape time.
  EXPECT_GT(*rss, 1 << 20);
  EXPECT_LT(*rss, 2.0 * static_cast<double>(ResidentMemoryBytes()));
  EXPECT_THAT(
      *body, HasSubstr("# TYPE ristretto_process_resident_memory_bytes gauge"));
}

TEST(MetricsServerTest, GaugeCallbacksAreEvaluatedOnEveryScrape) {
  std::unique_ptr<MetricsServer> server = LocalServer("coordinator");
  ASSERT_NE(server, nullptr);
  double value = 0.25;
  server->AddGaugeCallback("ristretto_test_ratio", "A ratio.", {{"kind", "a"}},
                           [&value] { return value; });
  server->AddGaugeCallback("ristretto_test_ratio", "A ratio.", {{"kind", "b"}},
                           [] { return 1.0; });
  std::optional<std::string> body = HttpGet(server->port());
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(SampleValue(*body, "ristretto_test_ratio", {{"kind", "a"}}),
            std::optional<double>(0.25));
  EXPECT_EQ(SampleValue(*body, "ristretto_test_ratio", {{"kind", "b"}}),
            std::optional<double>(1.0));
  value = 0.75;
  body = HttpGet(server->port());
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(SampleValue(*body, "ristretto_test_ratio", {{"kind", "a"}}),
            std::optional<double>(0.75));
}

TEST(MetricsServerTest, APortInUseIsUnavailableAndOtherPathsAreNotFound) {
  std::unique_ptr<MetricsServer> first = LocalServer("actor");
  ASSERT_NE(first, nullptr);
  MetricsOptions options;
  options.address = "127.0.0.1";
  options.port = first->port();
  options.service = "actor";
  EXPECT_EQ(MetricsServer::Create(options).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpGet(first->port(), "/other"), std::nullopt);
}

TEST(MetricsServerTest, ScrapesAreCountedLikePrometheusCppsExposer) {
  std::unique_ptr<MetricsServer> server = LocalServer("actor");
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(HttpGet(server->port()).has_value());
  ASSERT_TRUE(HttpGet(server->port(), "/metrics?x=1").has_value());
  EXPECT_EQ(HttpGet(server->port(), "/"), std::nullopt);  // 404: not counted
  const std::optional<std::string> body = HttpGet(server->port());
  ASSERT_TRUE(body.has_value());
  // Counted after each response: two scrapes before this one.
  EXPECT_EQ(SampleValue(*body, "exposer_scrapes_total"),
            std::optional<double>(2));
  EXPECT_GT(SampleValue(*body, "exposer_transferred_bytes_total").value_or(0),
            100);
  EXPECT_EQ(SampleValue(*body, "exposer_request_latencies_count"),
            std::optional<double>(2));
  EXPECT_THAT(*body, HasSubstr("# TYPE exposer_request_latencies summary"));
}

TEST(MetricsServerTest, BadOptionsAreInvalidArguments) {
  MetricsOptions options;
  options.address = "127.0.0.1";
  options.port = 70000;
  options.service = "actor";
  EXPECT_EQ(MetricsServer::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.port = 0;
  options.service = "";
  EXPECT_EQ(MetricsServer::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MetricsServerTest, DestroyingTheServerStopsServing) {
  std::unique_ptr<MetricsServer> server = LocalServer("actor");
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  ASSERT_TRUE(HttpGet(port).has_value());
  server.reset();
  EXPECT_EQ(HttpGet(port), std::nullopt);
}

TEST(StartMetricsServerTest, PortZeroTurnsMetricsOffAndBadFlagsAreErrors) {
  absl::StatusOr<std::unique_ptr<MetricsServer>> off =
      StartMetricsServer("0", "127.0.0.1", "actor");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, nullptr);
  EXPECT_EQ(StartMetricsServer("x", "127.0.0.1", "actor").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<MetricsServer>> on =
      StartMetricsServer("auto", "127.0.0.1", "actor");
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_NE(*on, nullptr);
  EXPECT_TRUE(HttpGet((*on)->port()).has_value());
}

TEST(ResidentMemoryBytesTest, GrowsWhenMemoryIsTouched) {
  const int64_t before = ResidentMemoryBytes();
  std::string block(64 << 20, 'x');
  const int64_t after = ResidentMemoryBytes();
  EXPECT_GT(after - before, 48 << 20);
  EXPECT_EQ(block[12345], 'x');
}

// ---- BusyTracker

absl::Time At(double seconds) {
  return absl::UnixEpoch() + absl::Seconds(seconds);
}

TEST(BusyTrackerTest, NothingTrackedIsZero) {
  BusyTracker busy(absl::Seconds(10), At(0));
  EXPECT_EQ(busy.Ratio(At(0)), 0.0);
  EXPECT_EQ(busy.Ratio(At(5)), 0.0);
}

TEST(BusyTrackerTest, TwoBusySecondsInATenSecondWindowAreTwentyPercent) {
  BusyTracker busy(absl::Seconds(10), At(0));
  busy.Begin(At(1));
  busy.End(At(3));
  EXPECT_DOUBLE_EQ(busy.Ratio(At(10)), 0.2);
}

TEST(BusyTrackerTest, OverlappingWorkCountsOnce) {
  BusyTracker busy(absl::Seconds(10), At(0));
  busy.Begin(At(1));
  busy.Begin(At(2));
  busy.End(At(3));
  busy.End(At(5));
  EXPECT_DOUBLE_EQ(busy.Ratio(At(10)), 0.4);
}

TEST(BusyTrackerTest, WorkInProgressCountsUpToNow) {
  BusyTracker busy(absl::Seconds(10), At(0));
  busy.Begin(At(8));
  EXPECT_DOUBLE_EQ(busy.Ratio(At(10)), 0.2);
  EXPECT_DOUBLE_EQ(busy.Ratio(At(18)), 1.0);
}

TEST(BusyTrackerTest, TheWindowSlidesAndEarlyRatiosCoverTheTimeSinceStart) {
  BusyTracker busy(absl::Seconds(10), At(0));
  busy.Begin(At(0));
  busy.End(At(1));
  EXPECT_DOUBLE_EQ(busy.Ratio(At(2)), 0.5);      // 1 s of 2 s
  EXPECT_DOUBLE_EQ(busy.Ratio(At(10.5)), 0.05);  // (0.5, 10.5]: 0.5 s
  busy.Begin(At(11));
  busy.End(At(14));
  EXPECT_DOUBLE_EQ(busy.Ratio(At(20)), 0.3);  // the first interval is gone
  EXPECT_DOUBLE_EQ(busy.Ratio(At(30)), 0.0);
}

TEST(BusyTrackerTest, AnUnmatchedEndIsIgnored) {
  BusyTracker busy(absl::Seconds(10), At(0));
  busy.End(At(1));
  busy.Begin(At(2));
  busy.End(At(4));
  EXPECT_DOUBLE_EQ(busy.Ratio(At(10)), 0.2);
}

}  // namespace
}  // namespace ristretto
