// LearnerMetrics and RunMetrics scraped over a real /metrics endpoint: the
// names and labels of docs/metrics.md, shared series per run name, and
// series removed once released for longer than the retention.
#include "learner/service/learner_metrics.h"

#include <memory>
#include <optional>
#include <string>

#include "common/metrics.h"
#include "gtest/gtest.h"
#include "tests/common/metrics_scrape.h"

namespace ristretto::learner {
namespace {

using ::ristretto::testing::HasSample;
using ::ristretto::testing::HttpGet;
using ::ristretto::testing::SampleValue;

class LearnerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MetricsOptions options;
    options.address = "127.0.0.1";
    options.service = "learner";
    auto server = MetricsServer::Create(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  std::string Scrape() { return HttpGet(server_->port()).value_or(""); }

  std::unique_ptr<MetricsServer> server_;
};

TEST_F(LearnerMetricsTest, EveryReasonStartsAtZeroAndCountsItsOwnRejections) {
  LearnerMetrics metrics(server_.get());
  metrics.CountRejected(RejectReason::kMalformed);
  metrics.CountRejected(RejectReason::kStale);
  metrics.CountRejected(RejectReason::kStale);
  const std::string body = Scrape();
  const std::map<std::string, double> expected = {
      {"malformed", 1}, {"unknown_run", 0}, {"protocol", 0},
      {"stale", 2},     {"future", 0},      {"finished", 0}};
  for (const auto& [reason, count] : expected) {
    EXPECT_EQ(SampleValue(body, "ristretto_learner_chunks_rejected_total",
                          {{"reason", reason}}),
              std::optional<double>(count))
        << reason;
  }
  EXPECT_EQ(SampleValue(body, "ristretto_learner_runs_hosted"),
            std::optional<double>(0));
  EXPECT_EQ(SampleValue(body, "ristretto_learner_gpu_busy_ratio"),
            std::optional<double>(0));
}

TEST_F(LearnerMetricsTest, RunSeriesCarryTheRunAndTheFoldLabels) {
  LearnerMetrics metrics(server_.get());
  std::shared_ptr<RunMetrics> run =
      metrics.ForRun({"s/trial-3/fold-1", "s", "3", "1"});
  run->AddTrained(2048);
  run->AddTrained(1024);
  run->AddDropped(64);
  run->AddDropped(0);
  run->SetQueueDepth(2);
  run->ObservePolicyLag(0);
  run->ObservePolicyLag(3);
  run->SetWeightVersion(7);
  run->Updated(0.2, 0.5, 1.5, 0.9, 0.01);
  run->RolledBack();
  run->SetValidationScore(-0.25);
  run->Rejected(RejectReason::kFuture);
  metrics.SetRunsHosted(1);

  const std::string body = Scrape();
  const std::map<std::string, std::string> r = {{"run", "s/trial-3/fold-1"}};
  auto value = [&](const std::string& name,
                   const std::map<std::string, std::string>& labels) {
    return SampleValue(body, name, labels);
  };
  EXPECT_EQ(value("ristretto_learner_samples_trained_total", r),
            std::optional<double>(3072));
  EXPECT_EQ(value("ristretto_learner_samples_dropped_total", r),
            std::optional<double>(64));
  EXPECT_EQ(value("ristretto_learner_updates_total", r),
            std::optional<double>(1));
  EXPECT_EQ(value("ristretto_learner_updates_rolled_back_total", r),
            std::optional<double>(1));
  EXPECT_EQ(value("ristretto_learner_update_seconds_count", r),
            std::optional<double>(1));
  EXPECT_EQ(value("ristretto_learner_update_seconds_sum", r),
            std::optional<double>(0.2));
  EXPECT_EQ(value("ristretto_learner_queue_depth", r),
            std::optional<double>(2));
  EXPECT_EQ(value("ristretto_learner_policy_lag_count", r),
            std::optional<double>(2));
  EXPECT_EQ(value("ristretto_learner_policy_lag_bucket",
                  {{"run", "s/trial-3/fold-1"}, {"le", "0"}}),
            std::optional<double>(1));
  EXPECT_EQ(value("ristretto_learner_policy_lag_bucket",
                  {{"run", "s/trial-3/fold-1"}, {"le", "3"}}),
            std::optional<double>(2));
  EXPECT_EQ(value("ristretto_learner_weight_version", r),
            std::optional<double>(7));
  EXPECT_EQ(value("ristretto_learner_loss",
                  {{"run", "s/trial-3/fold-1"}, {"kind", "policy"}}),
            std::optional<double>(0.5));
  EXPECT_EQ(value("ristretto_learner_loss",
                  {{"run", "s/trial-3/fold-1"}, {"kind", "value"}}),
            std::optional<double>(1.5));
  EXPECT_EQ(value("ristretto_learner_entropy", r), std::optional<double>(0.9));
  EXPECT_EQ(value("ristretto_learner_approx_kl", r),
            std::optional<double>(0.01));
  EXPECT_EQ(value("ristretto_learner_validation_score",
                  {{"study", "s"}, {"trial", "3"}, {"fold", "1"}}),
            std::optional<double>(-0.25));
  EXPECT_EQ(
      value("ristretto_learner_chunks_rejected_total", {{"reason", "future"}}),
      std::optional<double>(1));
  EXPECT_EQ(value("ristretto_learner_runs_hosted", {}),
            std::optional<double>(1));
}

TEST_F(LearnerMetricsTest, HoldersOfOneRunNameShareItsSeries) {
  LearnerMetrics metrics(server_.get());
  std::shared_ptr<RunMetrics> a = metrics.ForRun({"run-0", "local", "0", "0"});
  std::shared_ptr<RunMetrics> b = metrics.ForRun({"run-0", "local", "0", "0"});
  a->AddTrained(10);
  b->AddTrained(5);
  EXPECT_EQ(metrics.exported_runs(), 1);
  EXPECT_EQ(SampleValue(Scrape(), "ristretto_learner_samples_trained_total",
                        {{"run", "run-0"}}),
            std::optional<double>(15));
}

TEST_F(LearnerMetricsTest, ReleasedSeriesStayForTheRetentionThenGo) {
  LearnerMetrics kept(server_.get(), absl::Hours(1));
  {
    std::shared_ptr<RunMetrics> run = kept.ForRun({"run-0", "local", "0", "0"});
    run->AddTrained(10);
  }
  EXPECT_EQ(kept.exported_runs(), 1);
  EXPECT_EQ(SampleValue(Scrape(), "ristretto_learner_samples_trained_total",
                        {{"run", "run-0"}}),
            std::optional<double>(10));
  // Held again before it expired: the same series continue.
  std::shared_ptr<RunMetrics> again = kept.ForRun({"run-0", "local", "0", "0"});
  again->AddTrained(1);
  EXPECT_EQ(SampleValue(Scrape(), "ristretto_learner_samples_trained_total",
                        {{"run", "run-0"}}),
            std::optional<double>(11));
}

TEST_F(LearnerMetricsTest, SeriesReleasedLongerThanTheRetentionAreRemoved) {
  LearnerMetrics metrics(server_.get(), absl::ZeroDuration());
  std::shared_ptr<RunMetrics> stays =
      metrics.ForRun({"run-1", "local", "1", "0"});
  {
    std::shared_ptr<RunMetrics> run =
        metrics.ForRun({"run-0", "local", "0", "0"});
    run->SetValidationScore(1.5);
  }
  EXPECT_EQ(metrics.exported_runs(), 1);
  const std::string body = Scrape();
  EXPECT_EQ(SampleValue(body, "ristretto_learner_samples_trained_total",
                        {{"run", "run-0"}}),
            std::nullopt);
  EXPECT_EQ(SampleValue(body, "ristretto_learner_validation_score",
                        {{"study", "local"}, {"trial", "0"}, {"fold", "0"}}),
            std::nullopt);
  EXPECT_EQ(SampleValue(body, "ristretto_learner_samples_trained_total",
                        {{"run", "run-1"}}),
            std::optional<double>(0));
  EXPECT_TRUE(HasSample(body, "ristretto_learner_updates_total"));
}

}  // namespace
}  // namespace ristretto::learner
