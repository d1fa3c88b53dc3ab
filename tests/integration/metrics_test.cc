// Every binary's /metrics endpoint with real processes on 127.0.0.1: a
// learner (static runs) and an actor training, and a whole study with a
// coordinator on a real PostgreSQL. Each endpoint is scraped over HTTP while
// the processes work; the names and labels are those of docs/metrics.md and
// the counters move with the work done.
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/store/store.h"
#include "gtest/gtest.h"
#include "tests/common/log_lines.h"
#include "tests/common/metrics_scrape.h"
#include "tests/coordinator_store/pg_test_env.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using ::ristretto::coordinator::testing::MakeTempDir;
using ::ristretto::testing::CoordinatedActorArgv;
using ::ristretto::testing::CoordinatedLearnerArgv;
using ::ristretto::testing::CoordinatorArgv;
using ::ristretto::testing::HttpGet;
using ::ristretto::testing::PollUntil;
using ::ristretto::testing::Process;
using ::ristretto::testing::SampleValue;
using ::ristretto::testing::SmallLearnerRunFlags;
using ::ristretto::testing::Terminate;
using ::ristretto::testing::TinyStudy;
using ::ristretto::testing::TinyStudyYaml;
using Labels = std::map<std::string, std::string>;
using namespace std::chrono_literals;

// The value of `pattern`'s first group in the process's log once it shows
// up (120 s at most: only a hang takes that long); "" otherwise.
std::string WaitForMatch(Process& p, const std::string& pattern) {
  const std::regex re(pattern);
  std::string match;
  PollUntil(
      [&] {
        std::smatch m;
        const std::string log = p.Log();
        if (std::regex_search(log, m, re)) {
          match = m[1].str();
          return true;
        }
        return !p.running();
      },
      120s, 50ms);
  return match;
}

// The metrics port the process printed ("metrics on HOST:PORT"); 0 if none.
int MetricsPort(Process& p) {
  int port = 0;
  const std::string s = WaitForMatch(p, "metrics on [^\\s]*:([0-9]+)");
  return absl::SimpleAtoi(s, &port) ? port : 0;
}

// Scrapes `port` until `done(body)` holds (`timeout` at most); returns the
// last body.
std::string ScrapeUntil(int port,
                        const std::function<bool(const std::string&)>& done,
                        std::chrono::seconds timeout) {
  std::string body;
  PollUntil(
      [&] {
        body = HttpGet(port).value_or("");
        return done(body);
      },
      timeout, 200ms);
  return body;
}

double Value(const std::string& body, const std::string& name,
             const Labels& labels = {}) {
  return SampleValue(body, name, labels).value_or(-1);
}

// Every metric name with this prefix in `body` is a valid Prometheus name
// in the ristretto_ namespace with base-unit suffixes (docs/metrics.md).
void ExpectConventionalNames(const std::string& body) {
  const std::regex name("ristretto_[a-z0-9_]+");
  for (const auto& s : testing::ParseSamples(body)) {
    if (s.name.rfind("ristretto_", 0) != 0) continue;
    EXPECT_TRUE(std::regex_match(s.name, name)) << s.name;
    EXPECT_EQ(s.name.find("milli"), std::string::npos) << s.name;
    EXPECT_EQ(s.name.find("percent"), std::string::npos) << s.name;
  }
  for (const char* line : {"# TYPE ristretto_learner_samples_trained_total",
                           "# TYPE ristretto_actor_env_steps_total"}) {
    const size_t at = body.find(line);
    if (at != std::string::npos) {
      EXPECT_EQ(body.compare(at + std::strlen(line), 8, " counter"), 0) << line;
    }
  }
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir = MakeTempDir("ristretto_metrics_");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(MetricsTest,
       LearnerAndActorMetricsMoveWithTrainingAndPortZeroTurnsThemOff) {
  // A budget the run cannot reach while the test watches: the actor is
  // scraped mid-run whatever the machine's speed (a finished run would reset
  // its policy version, reconnect, and refuse the chunks in flight), and
  // SIGTERM ends it.
  std::vector<std::string> argv = {RISTRETTO_LEARNER_BINARY,
                                   "--port",
                                   "0",
                                   "--metrics-port",
                                   "auto",
                                   "--metrics-address",
                                   "127.0.0.1",
                                   "--runs",
                                   "1",
                                   "--run-dir",
                                   dir_ + "/runs",
                                   "--budget",
                                   "1000000000",
                                   "--eval-every",
                                   "4096"};
  const std::vector<std::string> run_flags = SmallLearnerRunFlags();
  argv.insert(argv.end(), run_flags.begin(), run_flags.end());
  Process learner(argv, dir_ + "/learner.log");
  const int port = MetricsPort(learner);
  ASSERT_GT(port, 0) << learner.Log();
  const std::string address = tests::WaitForListeningAddress(learner, 120s);
  ASSERT_FALSE(address.empty()) << learner.Log();

  // Before any actor: the run's series and every reason exist at zero.
  std::optional<std::string> body = HttpGet(port);
  ASSERT_TRUE(body.has_value());
  const Labels run = {{"run", "run-0"}};
  EXPECT_EQ(Value(*body, "ristretto_learner_samples_trained_total", run), 0);
  EXPECT_EQ(Value(*body, "ristretto_learner_runs_hosted"), 1);
  EXPECT_EQ(Value(*body, "ristretto_learner_chunks_rejected_total",
                  {{"reason", "stale"}}),
            0);
  EXPECT_EQ(
      Value(*body, "ristretto_gpu_metrics_available", {{"source", "none"}}), 1);
  EXPECT_GT(Value(*body, "ristretto_process_resident_memory_bytes",
                  {{"service", "learner"}}),
            10 << 20);

  Process actor({RISTRETTO_ACTOR_BINARY, "--learner", address, "--envs", "8",
                 "--actor-id", "a0", "--cache-dir", dir_ + "/cache",
                 "--metrics-port", "auto", "--metrics-address", "127.0.0.1"},
                dir_ + "/actor.log");
  const int actor_port = MetricsPort(actor);
  ASSERT_GT(actor_port, 0) << actor.Log();

  // The actor, while it works (T = 32 steps × B = 8 copies per chunk).
  const Labels a0 = {{"actor", "a0"}};
  const std::string acting = ScrapeUntil(
      actor_port,
      [&](const std::string& b) {
        return Value(b, "ristretto_actor_chunks_sent_total", a0) >= 4;
      },
      120s);
  const double chunks = Value(acting, "ristretto_actor_chunks_sent_total", a0);
  EXPECT_GE(chunks, 4) << acting << actor.Log();
  EXPECT_GE(Value(acting, "ristretto_actor_env_steps_total", a0),
            chunks * 32 * 8);
  EXPECT_GE(Value(acting, "ristretto_actor_inference_seconds_count", a0),
            chunks * 32);
  EXPECT_GT(Value(acting, "ristretto_actor_inference_seconds_sum", a0), 0);
  EXPECT_EQ(Value(acting, "ristretto_actor_inference_seconds_bucket",
                  {{"actor", "a0"}, {"le", "+Inf"}}),
            Value(acting, "ristretto_actor_inference_seconds_count", a0));
  EXPECT_GE(Value(acting, "ristretto_actor_policy_version", a0), 0);
  EXPECT_EQ(Value(acting, "ristretto_actor_reconnects_total", a0), 0);
  EXPECT_EQ(Value(acting, "ristretto_actor_chunks_rejected_total",
                  {{"actor", "a0"}, {"code", "INVALID_ARGUMENT"}}),
            0);
  EXPECT_EQ(Value(acting, "ristretto_actor_chunks_rejected_total",
                  {{"actor", "a0"}, {"code", "FAILED_PRECONDITION"}}),
            0);
  EXPECT_GT(Value(acting, "ristretto_process_resident_memory_bytes",
                  {{"service", "actor"}}),
            10 << 20);
  ExpectConventionalNames(acting);

  const std::string trained = ScrapeUntil(
      port,
      [&](const std::string& b) {
        return Value(b, "ristretto_learner_validation_score",
                     {{"study", "local"}, {"trial", "0"}, {"fold", "0"}}) !=
                   0 &&
               Value(b, "ristretto_learner_updates_total", run) >= 4;
      },
      180s);
  EXPECT_GE(Value(trained, "ristretto_learner_samples_trained_total", run),
            4096)
      << trained;
  EXPECT_EQ(
      Value(trained, "ristretto_gpu_metrics_available", {{"source", "none"}}),
      1);
  EXPECT_GE(Value(trained, "ristretto_learner_updates_total", run), 4);
  EXPECT_GE(Value(trained, "ristretto_learner_update_seconds_count", run), 4);
  EXPECT_GT(Value(trained, "ristretto_learner_update_seconds_sum", run), 0);
  EXPECT_GE(Value(trained, "ristretto_learner_weight_version", run), 4);
  EXPECT_GE(Value(trained, "ristretto_learner_policy_lag_count", run), 4);
  EXPECT_TRUE(SampleValue(trained, "ristretto_learner_loss",
                          {{"run", "run-0"}, {"kind", "value"}})
                  .has_value());
  EXPECT_GT(Value(trained, "ristretto_learner_entropy", run), -1e9);
  EXPECT_TRUE(
      SampleValue(trained, "ristretto_learner_approx_kl", run).has_value());
  EXPECT_TRUE(
      SampleValue(trained, "ristretto_learner_queue_depth", run).has_value());
  const std::optional<double> busy =
      SampleValue(trained, "ristretto_learner_gpu_busy_ratio");
  ASSERT_TRUE(busy.has_value());
  EXPECT_GT(*busy, 0);  // CPU: the share of time spent in updates
  EXPECT_LE(*busy, 1);
  ExpectConventionalNames(trained);

  EXPECT_EQ(Terminate(actor, 60s).exit_code, 0) << actor.Log();
  EXPECT_EQ(Terminate(learner, 60s).exit_code, 0) << learner.Log();

  // --metrics-port 0 (the default): no endpoint, no "metrics on" line.
  Process quiet(
      {RISTRETTO_LEARNER_BINARY, "--port", "0", "--metrics-port", "0", "--runs",
       "1", "--run-dir", dir_ + "/quiet", "--synthetic-rows", "600",
       "--synthetic-assets", "2", "--policy-hidden", "32,32"},
      dir_ + "/quiet.log");
  ASSERT_TRUE(quiet.WaitForLog("listening on", 60s)) << quiet.Log();
  EXPECT_EQ(quiet.Log().find("metrics on"), std::string::npos);
  EXPECT_EQ(Terminate(quiet, 60s).exit_code, 0) << quiet.Log();

  // A bad value is a flag error (exit 2).
  Process bad({RISTRETTO_LEARNER_BINARY, "--metrics-port", "99999", "--runs",
               "1", "--run-dir", dir_ + "/bad"},
              dir_ + "/bad.log");
  EXPECT_EQ(bad.Wait(60s), 2) << bad.Log();
}

// 1 trial × 1 fold, small nets: the coordinator's and the learner's series
// for a real study.
std::string MetricsStudy() {
  TinyStudy study;
  study.name = "metrics";
  study.predictability = 0.5;
  return TinyStudyYaml(study);
}

class StudyMetricsTest : public coordinator::testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> dir =
        coordinator::testing::MakeTempDir("ristretto_metrics_study_");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(StudyMetricsTest, CoordinatorCountsTrialsLeasesAndStoreLatency) {
  absl::StatusOr<std::unique_ptr<coordinator::Store>> store = MigratedStore();
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<coordinator::StudyRow> study =
      (*store)->CreateStudy("metrics", MetricsStudy());
  ASSERT_TRUE(study.ok()) << study.status();

  Process coord(
      CoordinatorArgv(
          RISTRETTO_COORDINATOR_BINARY, dsn(), dir_ + "/coordinator",
          {"--metrics-port", "auto", "--metrics-address", "127.0.0.1"}),
      dir_ + "/coordinator.log");
  const int coord_port = MetricsPort(coord);
  ASSERT_GT(coord_port, 0) << coord.Log();
  const std::string coord_address = tests::WaitForListeningAddress(coord, 120s);
  ASSERT_FALSE(coord_address.empty()) << coord.Log();

  // A created (not yet running) study is counted at zero in every state;
  // every operation's histogram exists before it is used.
  const Labels running = {{"study", "metrics"}, {"state", "running"}};
  const Labels complete = {{"study", "metrics"}, {"state", "complete"}};
  std::string body = ScrapeUntil(
      coord_port,
      [&](const std::string& b) {
        return SampleValue(b, "ristretto_coordinator_trials", complete)
            .has_value();
      },
      30s);
  EXPECT_EQ(Value(body, "ristretto_coordinator_trials", running), 0) << body;
  EXPECT_EQ(Value(body, "ristretto_coordinator_trials",
                  {{"study", "metrics"}, {"state", "pruned"}}),
            0);
  EXPECT_EQ(Value(body, "ristretto_coordinator_trials",
                  {{"study", "metrics"}, {"state", "failed"}}),
            0);
  EXPECT_EQ(Value(body, "ristretto_coordinator_runs_leased_total"), 0);
  EXPECT_EQ(Value(body, "ristretto_coordinator_lease_expiries_total"), 0);
  EXPECT_EQ(Value(body, "ristretto_coordinator_db_latency_seconds_count",
                  {{"op", "LeaseRun"}}),
            0);
  EXPECT_GT(Value(body, "ristretto_coordinator_db_latency_seconds_count",
                  {{"op", "ListStudies"}}),
            0);
  EXPECT_GT(Value(body, "ristretto_process_resident_memory_bytes",
                  {{"service", "coordinator"}}),
            1 << 20);

  ASSERT_TRUE((*store)
                  ->SetStudyState(study->id, coordinator::StudyState::kRunning)
                  .ok());
  // The trial is created without any learner, and it cannot finish before
  // one starts: one running trial, whenever the scrape comes.
  body = ScrapeUntil(
      coord_port,
      [&](const std::string& b) {
        return Value(b, "ristretto_coordinator_trials", running) == 1;
      },
      120s);
  EXPECT_EQ(Value(body, "ristretto_coordinator_trials", running), 1) << body;

  Process learner(
      CoordinatedLearnerArgv(RISTRETTO_LEARNER_BINARY, coord_address,
                             dir_ + "/learner",
                             {"--slots", "1", "--metrics-port", "auto",
                              "--metrics-address", "127.0.0.1"}),
      dir_ + "/learner.log");
  const int learner_port = MetricsPort(learner);
  ASSERT_GT(learner_port, 0) << learner.Log();
  Process actor(CoordinatedActorArgv(RISTRETTO_ACTOR_BINARY, coord_address,
                                     "a0", dir_ + "/cache"),
                dir_ + "/actor.log");

  // The learner hosts the lease's run under its name; its validation score
  // is labelled by study, trial number and fold.
  const Labels run = {{"run", "metrics/trial-0/fold-0"}};
  const Labels fold = {{"study", "metrics"}, {"trial", "0"}, {"fold", "0"}};
  const std::string learned = ScrapeUntil(
      learner_port,
      [&](const std::string& b) {
        return SampleValue(b, "ristretto_learner_validation_score", fold)
                   .has_value() &&
               Value(b, "ristretto_learner_validation_score", fold) != 0;
      },
      180s);
  EXPECT_TRUE(
      std::isfinite(Value(learned, "ristretto_learner_validation_score", fold)))
      << learned;
  EXPECT_GE(Value(learned, "ristretto_learner_samples_trained_total", run),
            4096)
      << learned;

  // The trial completes, then its final (lockbox) run is leased and done:
  // two leases in all, the final one recorded under its own store op.
  const Labels final_op = {{"op", "CompleteFinalRun"}};
  body = ScrapeUntil(
      coord_port,
      [&](const std::string& b) {
        return Value(b, "ristretto_coordinator_trials", complete) == 1 &&
               SampleValue(b, "ristretto_coordinator_db_latency_seconds_count",
                           final_op)
                   .has_value() &&
               Value(b, "ristretto_coordinator_db_latency_seconds_count",
                     final_op) >= 1;
      },
      180s);
  EXPECT_EQ(Value(body, "ristretto_coordinator_trials", complete), 1)
      << coord.Log() << learner.Log();
  EXPECT_EQ(Value(body, "ristretto_coordinator_trials", running), 0);
  EXPECT_EQ(
      Value(body, "ristretto_coordinator_db_latency_seconds_count", final_op),
      1)
      << coord.Log();
  EXPECT_EQ(Value(body, "ristretto_coordinator_runs_leased_total"), 2);
  EXPECT_GE(Value(body, "ristretto_coordinator_db_latency_seconds_count",
                  {{"op", "LeaseRun"}}),
            1);
  EXPECT_GE(Value(body, "ristretto_coordinator_db_latency_seconds_count",
                  {{"op", "CompleteRun"}}),
            1);
  EXPECT_GE(Value(body, "ristretto_coordinator_db_latency_seconds_count",
                  {{"op", "CountTrials"}}),
            1);
  EXPECT_GT(Value(body, "ristretto_coordinator_db_latency_seconds_sum",
                  {{"op", "CompleteRun"}}),
            0);
  ExpectConventionalNames(body);

  EXPECT_EQ(Terminate(actor, 30s).exit_code, 0) << actor.Log();
  EXPECT_EQ(Terminate(learner, 60s).exit_code, 0) << learner.Log();
  EXPECT_EQ(Terminate(coord, 30s).exit_code, 0) << coord.Log();
}

}  // namespace
}  // namespace ristretto
