// Store against a real PostgreSQL server (PgTestCluster): migrations,
// studies, trials, leases, completion guards, concurrency and outages.
#include "coordinator/store/store.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/pg_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/store_test_helpers.h"
#include "tests/coordinator_store/pg_test_env.h"

namespace ristretto::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

const std::string kSha(64, 'a');

// A TCP proxy in front of the server that can cut one connection at the
// moment the client sends COMMIT: either after forwarding it (the server
// commits, the client never hears back) or instead of forwarding it (the
// server rolls back). Either way the client's COMMIT is "in doubt".
class CommitCuttingProxy {
 public:
  enum class Cut { kAfterForwarding, kInsteadOfForwarding };

  explicit CommitCuttingProxy(int server_port) : server_port_(server_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~CommitCuttingProxy() {
    stop_ = true;
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : pumps_) t.join();
    close(listen_fd_);
  }

  int port() const { return port_; }
  // The next COMMIT through the proxy is cut this way.
  void ArmOnce(Cut cut) {
    cut_ = cut;
    armed_ = true;
  }
  int cuts() const { return cuts_; }

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int client = accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr = Loopback(server_port_);
      if (connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
          0) {
        close(client);
        close(server);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      pumps_.emplace_back([this, client, server] { Pump(client, server); });
    }
  }

  static bool WriteAll(int fd, const char* data, ssize_t n) {
    while (n > 0) {
      const ssize_t w = write(fd, data, static_cast<size_t>(n));
      if (w <= 0) return false;
      data += w;
      n -= w;
    }
    return true;
  }

  void Pump(int client, int server) {
    char buffer[65536];
    while (!stop_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(fds, 2, 50) <= 0) continue;
      if (fds[0].revents != 0) {
        const ssize_t n = read(client, buffer, sizeof(buffer));
        if (n <= 0) break;
        const bool commit =
            std::string(buffer, static_cast<size_t>(n)).find("COMMIT") !=
            std::string::npos;
        if (commit && armed_.exchange(false)) {
          if (cut_ == Cut::kAfterForwarding) WriteAll(server, buffer, n);
          // Let the server finish the COMMIT; its reply is never passed on.
          absl::SleepFor(absl::Milliseconds(200));
          ++cuts_;
          break;
        }
        if (!WriteAll(server, buffer, n)) break;
      }
      if (fds[1].revents != 0) {
        const ssize_t n = read(server, buffer, sizeof(buffer));
        if (n <= 0 || !WriteAll(client, buffer, n)) break;
      }
    }
    close(client);
    close(server);
  }

  const int server_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> armed_{false};
  std::atomic<Cut> cut_{Cut::kAfterForwarding};
  std::atomic<int> cuts_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> pumps_;
};

class StoreTest : public testing::PgDatabaseTest {
 protected:
  void SetUp() override {
    PgDatabaseTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<Store>> store = MigratedStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }

  // Counts rows with raw SQL, bypassing the Store.
  int64_t Count(const std::string& sql) {
    pqxx::connection conn(dsn());
    pqxx::nontransaction txn(conn);
    return txn.exec1(sql)[0].as<int64_t>();
  }

  // A study in state running.
  StudyRow RunningStudy(const std::string& name) {
    return MakeRunningStudy(*store_, name);
  }

  // A trial with `folds` runs.
  TrialRow Trial(int64_t study_id, int folds) {
    std::vector<std::string> configs;
    configs.reserve(folds);
    for (int k = 0; k < folds; ++k) {
      configs.push_back(absl::StrCat("{\"fold\":", k, "}"));
    }
    absl::StatusOr<TrialRow> trial =
        store_->CreateTrial(study_id, {{"lr", "0.001"}}, configs, "/ckpt");
    EXPECT_TRUE(trial.ok()) << trial.status();
    return trial.ok() ? *trial : TrialRow{};
  }

  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, MigrationsApplyOnceAndAreIdempotent) {
  ASSERT_OK_AND_ASSIGN(int version, store_->SchemaVersion());
  EXPECT_EQ(version, LatestSchemaVersion());
  ASSERT_OK(store_->Migrate());
  ASSERT_OK(store_->Migrate());
  ASSERT_OK_AND_ASSIGN(version, store_->SchemaVersion());
  EXPECT_EQ(version, LatestSchemaVersion());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM schema_migrations"),
            static_cast<int64_t>(Migrations().size()));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM information_schema.tables WHERE "
                  "table_schema = 'public' AND table_name IN ('datasets', "
                  "'studies', 'trials', 'params', 'runs', "
                  "'intermediate_values', 'fold_metrics', 'artifacts', "
                  "'leases', 'members')"),
            10);
}

// A database migrated by a newer build is refused, not half-used.
TEST_F(StoreTest, MigrateRefusesASchemaNewerThanTheBinary) {
  const int next = LatestSchemaVersion() + 1;
  {
    pqxx::connection conn(dsn());
    pqxx::work txn(conn);
    txn.exec_params(
        "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", next,
        "from the future");
    txn.commit();
  }
  const absl::Status s = store_->Migrate();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("schema is at version ", next,
                                     " (from the future), newer than this "
                                     "binary's ",
                                     LatestSchemaVersion())));
  {
    pqxx::connection conn(dsn());
    pqxx::work txn(conn);
    txn.exec_params("DELETE FROM schema_migrations WHERE version = $1", next);
    txn.commit();
  }
  EXPECT_TRUE(store_->Migrate().ok());
}

TEST_F(StoreTest, ConcurrentMigratorsOnAFreshDatabaseAllSucceedOnce) {
  ASSERT_OK_AND_ASSIGN(const std::string fresh,
                       testing::PgTestCluster::Get().NewDatabase());
  {
    ASSERT_OK_AND_ASSIGN(auto store, Store::Connect(fresh));
    ASSERT_OK_AND_ASSIGN(const int version, store->SchemaVersion());
    EXPECT_EQ(version, 0);
  }
  std::vector<absl::Status> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::unique_ptr<Store>> store = Store::Connect(fresh);
      results[i] = store.ok() ? (*store)->Migrate() : store.status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
  pqxx::connection conn(fresh);
  pqxx::nontransaction txn(conn);
  EXPECT_EQ(txn.exec1("SELECT COUNT(*) FROM schema_migrations")[0].as<int>(),
            static_cast<int>(Migrations().size()));
}

TEST_F(StoreTest, CreateStudyTwiceIsAlreadyExists) {
  ASSERT_OK_AND_ASSIGN(const StudyRow study,
                       store_->CreateStudy("alpha", "seed: 1"));
  EXPECT_GT(study.id, 0);
  EXPECT_EQ(study.state, StudyState::kCreated);
  EXPECT_EQ(study.config_text, "seed: 1");
  const absl::StatusOr<StudyRow> again = store_->CreateStudy("alpha", "x");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("alpha"));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM studies"), 1);

  ASSERT_OK_AND_ASSIGN(const StudyRow by_name, store_->GetStudy("alpha"));
  EXPECT_EQ(by_name.id, study.id);
  EXPECT_EQ(store_->GetStudy("beta").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetStudyById(study.id + 100).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, StudyStatesFollowTheStateMachine) {
  ASSERT_OK_AND_ASSIGN(const StudyRow study, store_->CreateStudy("s", ""));
  EXPECT_EQ(store_->SetStudyState(study.id, static_cast<StudyState>(17)).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kRunning));
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kStopped));
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kRunning));
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kDone));
  EXPECT_EQ(store_->SetStudyState(study.id, StudyState::kRunning).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->SetStudyState(study.id + 1, StudyState::kRunning).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const StudyRow now, store_->GetStudyById(study.id));
  EXPECT_EQ(now.state, StudyState::kDone);
  EXPECT_GE(now.updated_at, now.created_at);
}

// PgStore converts states at its boundary: the enum's text is what the
// table holds, and text this binary does not know (a newer schema's state)
// fails the call with kInternal naming it instead of being misread.
TEST_F(StoreTest, StatesAreStoredAsTheirTextAndUnknownTextIsInternal) {
  ASSERT_OK_AND_ASSIGN(const StudyRow study, store_->CreateStudy("s", ""));
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kStopped));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM studies WHERE state = 'stopped'"), 1);
  {
    pqxx::connection conn(dsn());
    pqxx::work txn(conn);
    txn.exec("ALTER TABLE studies DROP CONSTRAINT studies_state_check");
    txn.exec("UPDATE studies SET state = 'paused'");
    txn.commit();
  }
  const absl::StatusOr<StudyRow> row = store_->GetStudyById(study.id);
  EXPECT_EQ(row.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(row.status().message(),
              HasSubstr("unknown study state 'paused'"));
  EXPECT_EQ(store_->ListStudies().status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(store_->SetStudyState(study.id, StudyState::kRunning).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM studies WHERE state = 'paused'"), 1);
}

TEST_F(StoreTest, CreateTrialNumbersTrialsAndCreatesTheirRunsAtomically) {
  const StudyRow study = RunningStudy("numbers");
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(
        const TrialRow trial,
        store_->CreateTrial(study.id, {{"lr", "0.0003"}, {"batch", "4096"}},
                            {"{\"a\":0}", "{\"a\":1}"}, "/runs/"));
    EXPECT_EQ(trial.number, i);
    EXPECT_EQ(trial.state, TrialState::kRunning);
    ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                         store_->ListRuns(trial.id));
    ASSERT_EQ(runs.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(runs[k].fold, k);
      EXPECT_EQ(runs[k].state, RunState::kQueued);
      EXPECT_EQ(runs[k].study_id, study.id);
      EXPECT_EQ(runs[k].attempts, 0);
      EXPECT_EQ(runs[k].config_json, absl::StrCat("{\"a\":", k, "}"));
      EXPECT_EQ(runs[k].checkpoint_dir,
                absl::StrCat("/runs/numbers/trial-", i, "/fold-", k));
    }
  }
  // A duplicate parameter fails after the trial row was inserted: the
  // whole transaction rolls back and the number is not used up.
  const absl::StatusOr<TrialRow> bad = store_->CreateTrial(
      study.id, {{"lr", "1"}, {"lr", "2"}}, {"{}"}, "/runs");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'lr'"));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM trials"), 3);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM runs"), 6);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM params"), 6);
  ASSERT_OK_AND_ASSIGN(const TrialRow next,
                       store_->CreateTrial(study.id, {}, {"{}"}, "/runs"));
  EXPECT_EQ(next.number, 3);

  ASSERT_OK_AND_ASSIGN(const std::vector<TrialRow> trials,
                       store_->ListTrials(study.id));
  ASSERT_EQ(trials.size(), 4u);
  EXPECT_EQ(trials[1].number, 1);
  ASSERT_EQ(trials[1].params.size(), 2u);
  EXPECT_EQ(trials[1].params[0].name, "lr");
  EXPECT_EQ(trials[1].params[0].value, "0.0003");
  EXPECT_EQ(trials[1].params[1].name, "batch");
  EXPECT_TRUE(trials[3].params.empty());
  ASSERT_OK_AND_ASSIGN(const TrialRow got, store_->GetTrial(trials[2].id));
  EXPECT_EQ(got.params.size(), 2u);
  EXPECT_FALSE(got.score.has_value());
  EXPECT_FALSE(got.finished_at.has_value());

  EXPECT_EQ(
      store_->CreateTrial(study.id + 99, {}, {"{}"}, "/r").status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->CreateTrial(study.id, {}, {}, "/r").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, LeaseRunHandsOutTheOldestQueuedRunOfRunningStudiesOnly) {
  ASSERT_OK_AND_ASSIGN(const StudyRow idle, store_->CreateStudy("idle", ""));
  Trial(idle.id, 2);
  ASSERT_OK_AND_ASSIGN(auto none, store_->LeaseRun("l1", absl::Minutes(1)));
  EXPECT_FALSE(none.has_value());

  const StudyRow study = RunningStudy("busy");
  const TrialRow t0 = Trial(study.id, 2);
  Trial(study.id, 1);
  // PostgreSQL keeps microseconds: the lease's expiry is the lease time
  // truncated to them, so the bound is `before` truncated the same way.
  const absl::Time before =
      absl::FromUnixMicros(absl::ToUnixMicros(absl::Now()));
  ASSERT_OK_AND_ASSIGN(auto run, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->trial_id, t0.id);
  EXPECT_EQ(run->fold, 0);
  EXPECT_EQ(run->state, RunState::kLeased);
  EXPECT_EQ(run->member_id, "l1");
  EXPECT_EQ(run->attempts, 1);
  ASSERT_TRUE(run->lease_expires_at.has_value());
  EXPECT_GE(*run->lease_expires_at, before + absl::Minutes(1));
  EXPECT_LE(*run->lease_expires_at, absl::Now() + absl::Minutes(1));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE released_at IS NULL"), 1);

  // Stopping the study stops leasing.
  ASSERT_OK(store_->SetStudyState(study.id, StudyState::kStopped));
  ASSERT_OK_AND_ASSIGN(none, store_->LeaseRun("l1", absl::Minutes(1)));
  EXPECT_FALSE(none.has_value());

  // The leasing learner is recorded as a member.
  ASSERT_OK_AND_ASSIGN(const std::vector<MemberRow> members,
                       store_->ListMembers());
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].id, "l1");
  EXPECT_EQ(members[0].kind, "learner");
}

TEST_F(StoreTest, ConcurrentLeasersNeverGetTheSameRun) {
  const StudyRow study = RunningStudy("race");
  std::set<int64_t> all;
  for (int t = 0; t < 12; ++t) {
    const TrialRow trial = Trial(study.id, 4);
    ASSERT_OK_AND_ASSIGN(const auto runs, store_->ListRuns(trial.id));
    for (const RunRow& r : runs) all.insert(r.id);
  }
  constexpr int kThreads = 4;
  std::vector<std::vector<int64_t>> leased(kThreads);
  std::vector<absl::Status> errors(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::unique_ptr<Store>> store = Store::Connect(dsn());
      if (!store.ok()) {
        errors[i] = store.status();
        return;
      }
      for (;;) {
        absl::StatusOr<std::optional<RunRow>> run =
            (*store)->LeaseRun(absl::StrCat("learner-", i), absl::Minutes(5));
        if (!run.ok()) {
          errors[i] = run.status();
          return;
        }
        if (!run->has_value()) return;
        leased[i].push_back((*run)->id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<int64_t> every;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(errors[i].ok()) << errors[i];
    every.insert(every.end(), leased[i].begin(), leased[i].end());
  }
  EXPECT_EQ(every.size(), all.size());  // no run twice
  EXPECT_THAT(every, UnorderedElementsAreArray(all));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases"), 48);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM runs WHERE attempts = 1 AND "
                  "state = 'leased'"),
            48);
}

TEST_F(StoreTest, HeartbeatExtendsLeasesAndReportsLostRuns) {
  const StudyRow study = RunningStudy("hb");
  const TrialRow a = Trial(study.id, 1);
  const TrialRow b = Trial(study.id, 1);
  ASSERT_OK_AND_ASSIGN(auto run_a, store_->LeaseRun("l1", absl::Seconds(5)));
  ASSERT_OK_AND_ASSIGN(auto run_b, store_->LeaseRun("l1", absl::Seconds(5)));
  ASSERT_OK_AND_ASSIGN(auto other, store_->LeaseRun("l2", absl::Seconds(5)));
  ASSERT_TRUE(run_a && run_b);
  EXPECT_FALSE(other.has_value());
  ASSERT_EQ(run_a->trial_id, a.id);
  ASSERT_EQ(run_b->trial_id, b.id);

  ASSERT_OK_AND_ASSIGN(
      std::vector<int64_t> lost,
      store_->Heartbeat("l1", absl::Hours(1),
                        {{run_a->id, 1000}, {run_b->id, 2000}}));
  EXPECT_TRUE(lost.empty());
  ASSERT_OK_AND_ASSIGN(RunRow now_a, store_->GetRun(run_a->id));
  EXPECT_EQ(now_a.env_steps, 1000);
  ASSERT_TRUE(now_a.lease_expires_at.has_value());
  EXPECT_GT(*now_a.lease_expires_at, absl::Now() + absl::Minutes(59));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE released_at IS NULL "
                  "AND expires_at > now() + interval '59 minutes'"),
            2);

  // Pruned trial b: its run is lost; unknown ids and other members' runs
  // are lost too.
  ASSERT_OK(store_->PruneTrial(b.id));
  ASSERT_OK_AND_ASSIGN(
      lost,
      store_->Heartbeat("l1", absl::Hours(1),
                        {{run_a->id, 1500}, {run_b->id, 2500}, {999999, 1}}));
  EXPECT_THAT(lost, ElementsAre(run_b->id, 999999));
  ASSERT_OK_AND_ASSIGN(
      lost, store_->Heartbeat("l2", absl::Hours(1), {{run_a->id, 1}}));
  EXPECT_THAT(lost, ElementsAre(run_a->id));
  ASSERT_OK_AND_ASSIGN(now_a, store_->GetRun(run_a->id));
  EXPECT_EQ(now_a.env_steps, 1500);  // l2's report was not recorded
  ASSERT_OK_AND_ASSIGN(const RunRow now_b, store_->GetRun(run_b->id));
  EXPECT_EQ(now_b.env_steps, 2000);
}

// Each study's runs get the lease attempts its own file allows.
TEST_F(StoreTest, ExpireLeasesAppliesEachStudysOwnAttemptLimit) {
  const StudyRow strict = RunningStudy("strict");
  const StudyRow lenient = RunningStudy("lenient");
  const TrialRow strict_trial = Trial(strict.id, 1);
  const TrialRow lenient_trial = Trial(lenient.id, 1);
  ASSERT_OK_AND_ASSIGN(auto a, store_->LeaseRun("l1", absl::Seconds(30)));
  ASSERT_OK_AND_ASSIGN(auto b, store_->LeaseRun("l1", absl::Seconds(30)));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->trial_id, strict_trial.id);
  EXPECT_EQ(b->trial_id, lenient_trial.id);
  ASSERT_OK_AND_ASSIGN(
      std::vector<int64_t> expired,
      store_->ExpireLeases(absl::Now() + absl::Minutes(1),
                           {{strict.id, 1}, {lenient.id, 5}}, 3));
  EXPECT_THAT(expired, ElementsAre(a->id, b->id));
  ASSERT_OK_AND_ASSIGN(const RunRow failed, store_->GetRun(a->id));
  EXPECT_EQ(failed.state, RunState::kFailed);  // 1 attempt allowed, 1 used
  ASSERT_OK_AND_ASSIGN(const RunRow requeued, store_->GetRun(b->id));
  EXPECT_EQ(requeued.state, RunState::kQueued);  // 5 allowed
  ASSERT_OK_AND_ASSIGN(const TrialRow t, store_->GetTrial(strict_trial.id));
  EXPECT_EQ(t.state, TrialState::kFailed);
  EXPECT_EQ(
      store_->ExpireLeases(absl::Now(), {{lenient.id, 0}}, 3).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, ExpireLeasesRequeuesThenFailsTheTrialAfterMaxAttempts) {
  const StudyRow study = RunningStudy("expiry");
  const TrialRow trial = Trial(study.id, 2);
  ASSERT_OK_AND_ASSIGN(auto first, store_->LeaseRun("l1", absl::Seconds(30)));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->fold, 0);

  // Not yet expired.
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> expired,
                       store_->ExpireLeases(absl::Now(), 2));
  EXPECT_TRUE(expired.empty());

  // Expired, attempts left: back to queued, resumable by anyone.
  ASSERT_OK_AND_ASSIGN(expired,
                       store_->ExpireLeases(absl::Now() + absl::Minutes(1), 2));
  EXPECT_THAT(expired, ElementsAre(first->id));
  ASSERT_OK_AND_ASSIGN(RunRow run, store_->GetRun(first->id));
  EXPECT_EQ(run.state, RunState::kQueued);
  EXPECT_EQ(run.member_id, "");
  EXPECT_FALSE(run.lease_expires_at.has_value());
  EXPECT_EQ(run.attempts, 1);
  EXPECT_EQ(store_->CompleteRun(first->id, "l1", BaseMetrics(1, 10), {})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);

  // Second lease of the same run (the oldest queued), expires again: the
  // run fails, the trial fails naming the fold, the sibling is cancelled.
  ASSERT_OK_AND_ASSIGN(auto second, store_->LeaseRun("l2", absl::Seconds(30)));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->id, first->id);
  EXPECT_EQ(second->attempts, 2);
  ASSERT_OK_AND_ASSIGN(expired,
                       store_->ExpireLeases(absl::Now() + absl::Minutes(1), 2));
  EXPECT_THAT(expired, ElementsAre(first->id));
  ASSERT_OK_AND_ASSIGN(run, store_->GetRun(first->id));
  EXPECT_EQ(run.state, RunState::kFailed);
  EXPECT_THAT(run.last_error, HasSubstr("expired"));
  ASSERT_OK_AND_ASSIGN(const TrialRow failed, store_->GetTrial(trial.id));
  EXPECT_EQ(failed.state, TrialState::kFailed);
  EXPECT_THAT(failed.fail_reason, HasSubstr("fold 0"));
  EXPECT_TRUE(failed.finished_at.has_value());
  ASSERT_OK_AND_ASSIGN(const auto runs, store_->ListRuns(trial.id));
  EXPECT_EQ(runs[1].state, RunState::kCancelled);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'expired'"), 2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE released_at IS NULL"), 0);
  ASSERT_OK_AND_ASSIGN(auto none, store_->LeaseRun("l3", absl::Seconds(30)));
  EXPECT_FALSE(none.has_value());
}

TEST_F(StoreTest, CompleteRunOnlyByTheHolderAndOnlyOnce) {
  const StudyRow study = RunningStudy("complete");
  const TrialRow trial = Trial(study.id, 2);
  ASSERT_OK_AND_ASSIGN(auto r0, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_OK_AND_ASSIGN(auto r1, store_->LeaseRun("l2", absl::Minutes(1)));
  ASSERT_TRUE(r0 && r1);

  // Not the holder: refused, nothing written.
  const absl::StatusOr<bool> stranger =
      store_->CompleteRun(r0->id, "l2", BaseMetrics(1, 100), {});
  EXPECT_EQ(stranger.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(stranger.status().message(), HasSubstr("leased to 'l1'"));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM fold_metrics"), 0);

  const ArtifactRow ckpt{0, 0, 0, 0, "checkpoint", "/ckpt/c0.pt", kSha};
  ASSERT_OK_AND_ASSIGN(
      bool all_done,
      store_->CompleteRun(r0->id, "l1", BaseMetrics(1.25, 100), {ckpt}));
  EXPECT_FALSE(all_done);
  // Twice: refused, no duplicate rows.
  const absl::StatusOr<bool> twice =
      store_->CompleteRun(r0->id, "l1", BaseMetrics(9, 100), {ckpt});
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Count(absl::StrCat(
                "SELECT COUNT(*) FROM fold_metrics WHERE run_id = ", r0->id)),
            1);

  EXPECT_EQ(store_
                ->CompleteRun(r1->id, "l2", BaseMetrics(1, 1),
                              {{0, 0, 0, 0, "checkpoint", "/x", "zz"}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(
      all_done,
      store_->CompleteRun(r1->id, "l2", BaseMetrics(0.75, 200),
                          {{0, 0, 0, 0, "policy", "/ckpt/p1.pt", kSha}}));
  EXPECT_TRUE(all_done);

  ASSERT_OK_AND_ASSIGN(const auto metrics, store_->ListFoldMetrics(trial.id));
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(metrics[0].sharpe, 1.25);
  EXPECT_DOUBLE_EQ(metrics[1].sharpe, 0.75);
  EXPECT_EQ(metrics[1].trades, 42);
  EXPECT_EQ(metrics[1].env_steps, 200);
  ASSERT_OK_AND_ASSIGN(const auto artifacts, store_->ListArtifacts(trial.id));
  ASSERT_EQ(artifacts.size(), 2u);
  EXPECT_EQ(artifacts[0].kind, "checkpoint");
  EXPECT_EQ(artifacts[0].study_id, study.id);
  EXPECT_EQ(artifacts[0].trial_id, trial.id);
  EXPECT_EQ(artifacts[0].run_id, r0->id);
  EXPECT_EQ(artifacts[0].sha256, kSha);
  EXPECT_EQ(artifacts[1].path, "/ckpt/p1.pt");
  ASSERT_OK_AND_ASSIGN(const RunRow done, store_->GetRun(r1->id));
  EXPECT_EQ(done.state, RunState::kDone);
  EXPECT_EQ(done.env_steps, 200);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'done'"), 2);

  ASSERT_OK(store_->CompleteTrial(trial.id, 0.5));
  EXPECT_EQ(store_->CompleteTrial(trial.id, 0.6).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_OK_AND_ASSIGN(const TrialRow complete, store_->GetTrial(trial.id));
  EXPECT_EQ(complete.state, TrialState::kComplete);
  ASSERT_TRUE(complete.score.has_value());
  EXPECT_DOUBLE_EQ(*complete.score, 0.5);
}

TEST_F(StoreTest, ConcurrentCompletionsOfSiblingFoldsSayAllDoneExactlyOnce) {
  const StudyRow study = RunningStudy("siblings");
  constexpr int kTrials = 8;
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (fold 0, fold 1) runs
  for (int i = 0; i < kTrials; ++i) {
    Trial(study.id, 2);
    ASSERT_OK_AND_ASSIGN(auto a, store_->LeaseRun("l0", absl::Minutes(5)));
    ASSERT_OK_AND_ASSIGN(auto b, store_->LeaseRun("l1", absl::Minutes(5)));
    ASSERT_TRUE(a && b);
    pairs.emplace_back(a->id, b->id);
  }
  // Two learners finish the two folds of each trial at the same moment.
  std::vector<int> said_all_done(kTrials, 0);
  std::vector<absl::Status> errors(2);
  std::atomic<int> ready{0};
  std::mutex mu;
  auto learner = [&](int which) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Connect(dsn());
    if (!store.ok()) {
      errors[which] = store.status();
      return;
    }
    for (int i = 0; i < kTrials; ++i) {
      ++ready;
      while (ready.load() < 2 * (i + 1)) std::this_thread::yield();
      const int64_t run = which == 0 ? pairs[i].first : pairs[i].second;
      absl::StatusOr<bool> all_done = (*store)->CompleteRun(
          run, absl::StrCat("l", which), BaseMetrics(1, 1), {});
      if (!all_done.ok()) {
        errors[which] = all_done.status();
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      said_all_done[i] += *all_done ? 1 : 0;
    }
  };
  std::thread t0(learner, 0);
  std::thread t1(learner, 1);
  t0.join();
  t1.join();
  EXPECT_TRUE(errors[0].ok()) << errors[0];
  EXPECT_TRUE(errors[1].ok()) << errors[1];
  EXPECT_THAT(said_all_done, ::testing::Each(1));
}

TEST_F(StoreTest, FormerHolderCannotCompleteOrReportAfterReLease) {
  const StudyRow study = RunningStudy("relase");
  Trial(study.id, 1);
  ASSERT_OK_AND_ASSIGN(auto mine, store_->LeaseRun("old", absl::Seconds(1)));
  ASSERT_TRUE(mine.has_value());
  ASSERT_OK(store_->ReportIntermediate(mine->id, "old", 100, 0.1));
  ASSERT_OK_AND_ASSIGN(auto expired,
                       store_->ExpireLeases(absl::Now() + absl::Minutes(1), 3));
  ASSERT_OK_AND_ASSIGN(auto theirs, store_->LeaseRun("new", absl::Minutes(1)));
  ASSERT_TRUE(theirs.has_value());
  EXPECT_EQ(theirs->id, mine->id);

  EXPECT_EQ(store_->ReportIntermediate(mine->id, "old", 200, 0.2).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->CompleteRun(mine->id, "old", BaseMetrics(1, 1), {})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FailRun(mine->id, "old", "boom").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM fold_metrics"), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM intermediate_values"), 1);
  ASSERT_OK_AND_ASSIGN(const RunRow run, store_->GetRun(mine->id));
  EXPECT_EQ(run.state, RunState::kLeased);
  EXPECT_EQ(run.member_id, "new");
}

TEST_F(StoreTest, ReportIntermediateUpsertsPerStepForTheHolder) {
  const StudyRow study = RunningStudy("iv");
  const TrialRow trial = Trial(study.id, 2);
  ASSERT_OK_AND_ASSIGN(auto r0, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_OK_AND_ASSIGN(auto r1, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_OK(store_->ReportIntermediate(r0->id, "l1", 1000, 0.1));
  ASSERT_OK(store_->ReportIntermediate(r0->id, "l1", 1000, 0.3));  // retry
  ASSERT_OK(store_->ReportIntermediate(r0->id, "l1", 2000, 0.4));
  ASSERT_OK(store_->ReportIntermediate(r1->id, "l1", 1000, -0.2));
  EXPECT_EQ(store_->ReportIntermediate(r1->id, "l9", 3000, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->ReportIntermediate(424242, "l1", 3000, 1).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const auto values, store_->ListIntermediates(study.id));
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0].trial_id, trial.id);
  EXPECT_EQ(values[0].fold, 0);
  EXPECT_EQ(values[0].step, 1000);
  EXPECT_DOUBLE_EQ(values[0].value, 0.3);
  EXPECT_EQ(values[1].step, 2000);
  EXPECT_EQ(values[2].fold, 1);
  EXPECT_EQ(values[2].run_id, r1->id);
  EXPECT_DOUBLE_EQ(values[2].value, -0.2);
}

TEST_F(StoreTest, FailRunFailsTheTrialAndCancelsItsSiblings) {
  const StudyRow study = RunningStudy("fail");
  const TrialRow trial = Trial(study.id, 3);
  ASSERT_OK_AND_ASSIGN(auto r0, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_OK_AND_ASSIGN(auto r1, store_->LeaseRun("l2", absl::Minutes(1)));
  EXPECT_EQ(store_->FailRun(r1->id, "l1", "nan loss").code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->FailRun(r1->id, "l2", "nan loss"));
  ASSERT_OK_AND_ASSIGN(const TrialRow failed, store_->GetTrial(trial.id));
  EXPECT_EQ(failed.state, TrialState::kFailed);
  EXPECT_EQ(failed.fail_reason, "fold 1: nan loss");
  ASSERT_OK_AND_ASSIGN(const auto runs, store_->ListRuns(trial.id));
  EXPECT_EQ(runs[0].state, RunState::kCancelled);
  EXPECT_EQ(runs[0].member_id, "");
  EXPECT_EQ(runs[1].state, RunState::kFailed);
  EXPECT_EQ(runs[1].last_error, "nan loss");
  EXPECT_EQ(runs[2].state, RunState::kCancelled);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'cancelled'"),
            1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'failed'"), 1);
  // The sibling's holder learns it on its next heartbeat and cannot finish.
  ASSERT_OK_AND_ASSIGN(
      auto lost, store_->Heartbeat("l1", absl::Minutes(1), {{r0->id, 5}}));
  EXPECT_THAT(lost, ElementsAre(r0->id));
  EXPECT_EQ(
      store_->CompleteRun(r0->id, "l1", BaseMetrics(1, 1), {}).status().code(),
      absl::StatusCode::kFailedPrecondition);
  ASSERT_OK(store_->FailTrial(trial.id, "again"));  // already failed: no-op
  ASSERT_OK_AND_ASSIGN(const TrialRow still, store_->GetTrial(trial.id));
  EXPECT_EQ(still.fail_reason, "fold 1: nan loss");
}

TEST_F(StoreTest, PruneTrialCancelsItsQueuedAndLeasedRuns) {
  const StudyRow study = RunningStudy("prune");
  const TrialRow trial = Trial(study.id, 2);
  const TrialRow other = Trial(study.id, 1);
  ASSERT_OK_AND_ASSIGN(auto r0, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_EQ(r0->trial_id, trial.id);
  ASSERT_OK(store_->PruneTrial(trial.id));
  ASSERT_OK(store_->PruneTrial(trial.id));  // idempotent
  ASSERT_OK_AND_ASSIGN(const TrialRow pruned, store_->GetTrial(trial.id));
  EXPECT_EQ(pruned.state, TrialState::kPruned);
  ASSERT_OK_AND_ASSIGN(const auto runs, store_->ListRuns(trial.id));
  EXPECT_EQ(runs[0].state, RunState::kCancelled);
  EXPECT_EQ(runs[1].state, RunState::kCancelled);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE released_at IS NULL"), 0);
  // Only the other trial's run is left to lease.
  ASSERT_OK_AND_ASSIGN(auto next, store_->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->trial_id, other.id);
  ASSERT_OK_AND_ASSIGN(auto none, store_->LeaseRun("l1", absl::Minutes(1)));
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(store_->CompleteTrial(trial.id, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FailTrial(trial.id, "x").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->PruneTrial(123456).code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, CountTrialsCountsEachState) {
  const StudyRow study = RunningStudy("count");
  std::vector<TrialRow> trials;
  trials.reserve(5);
  for (int i = 0; i < 5; ++i) trials.push_back(Trial(study.id, 1));
  ASSERT_OK(store_->CompleteTrial(trials[0].id, 1.0));
  ASSERT_OK(store_->CompleteTrial(trials[1].id, 2.0));
  ASSERT_OK(store_->PruneTrial(trials[2].id));
  ASSERT_OK(store_->FailTrial(trials[3].id, "fold 0: boom"));
  ASSERT_OK_AND_ASSIGN(const TrialCounts counts, store_->CountTrials(study.id));
  EXPECT_EQ(counts.running, 1);
  EXPECT_EQ(counts.complete, 2);
  EXPECT_EQ(counts.pruned, 1);
  EXPECT_EQ(counts.failed, 1);
  EXPECT_EQ(store_->CountTrials(study.id + 1).status().code(),
            absl::StatusCode::kNotFound);
}

// The coordinator creates trials while `up` and the CLI read them. A writer
// that commits between the statements of a read (a hook, not a timing
// window) must not make the read see half of its write: before reads ran
// in one snapshot, ListTrials saw the new trial's params but not the trial
// and threw map::at, which ended a study.
TEST_F(StoreTest, MultiStatementReadsSeeOneSnapshotWhateverIsWrittenBetween) {
  const StudyRow study = RunningStudy("snapshot");
  const TrialRow first = Trial(study.id, 2);
  const TrialRow second = Trial(study.id, 1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgStore> reader,
                       PgStore::Connect(dsn()));
  std::vector<std::string> seen;
  int written = 0;
  reader->SetBetweenStatementsHookForTest([&](const char* read) {
    seen.emplace_back(read);
    // Another connection commits a whole trial (row, params, runs) here.
    absl::StatusOr<TrialRow> t = store_->CreateTrial(
        study.id, {{"lr", "0.5"}, {"gamma", "0.9"}}, {"{}", "{}"}, "/w");
    ASSERT_TRUE(t.ok()) << t.status();
    ++written;
  });

  ASSERT_OK_AND_ASSIGN(const std::vector<TrialRow> trials,
                       reader->ListTrials(study.id));
  EXPECT_EQ(written, 2);         // after the study check and after the trials
  ASSERT_EQ(trials.size(), 2u);  // what was there when the read began
  EXPECT_EQ(trials[0].id, first.id);
  EXPECT_EQ(trials[1].id, second.id);
  for (const TrialRow& t : trials) {
    ASSERT_EQ(t.params.size(), 1u) << "trial " << t.id;
    EXPECT_EQ(t.params[0].name, "lr");
  }

  ASSERT_OK_AND_ASSIGN(const TrialCounts counts, reader->CountTrials(study.id));
  EXPECT_EQ(counts.running, 4);  // 2 + the 2 written during ListTrials
  EXPECT_EQ(Count("SELECT COUNT(*) FROM trials"), 5);

  // Every other multi-statement read calls the hook and stays whole.
  ASSERT_OK_AND_ASSIGN(const TrialRow got, reader->GetTrial(first.id));
  EXPECT_EQ(got.params.size(), 1u);
  ASSERT_OK_AND_ASSIGN(const std::vector<RunRow> runs,
                       reader->ListRuns(first.id));
  EXPECT_EQ(runs.size(), 2u);
  ASSERT_OK(reader->ListIntermediates(study.id).status());
  ASSERT_OK(reader->ListFoldMetrics(first.id).status());
  ASSERT_OK(reader->ListStudyFoldMetrics(study.id).status());
  ASSERT_OK(reader->ListRefits(study.id).status());
  ASSERT_OK(reader->ListLockbox(study.id).status());
  ASSERT_OK(reader->ListArtifacts(first.id).status());
  EXPECT_THAT(
      seen, ::testing::IsSupersetOf(
                {"ListTrials", "CountTrials", "GetTrial", "ListRuns",
                 "ListIntermediates", "ListFoldMetrics", "ListStudyFoldMetrics",
                 "ListRefits", "ListLockbox", "ListArtifacts"}));
  // And a read that sees its snapshot still sees the writes once it is over.
  reader->SetBetweenStatementsHookForTest(nullptr);
  ASSERT_OK_AND_ASSIGN(const std::vector<TrialRow> all,
                       reader->ListTrials(study.id));
  EXPECT_EQ(static_cast<int>(all.size()), 2 + written);
}

TEST_F(StoreTest, ReleaseLeasesRequeuesTheMembersRunsAtOnce) {
  const StudyRow study = RunningStudy("release");
  Trial(study.id, 2);
  ASSERT_OK_AND_ASSIGN(auto r0, store_->LeaseRun("l1", absl::Hours(1)));
  ASSERT_OK_AND_ASSIGN(auto r1, store_->LeaseRun("l2", absl::Hours(1)));
  ASSERT_OK(store_->ReleaseLeases("l1"));
  ASSERT_OK_AND_ASSIGN(const RunRow released, store_->GetRun(r0->id));
  EXPECT_EQ(released.state, RunState::kQueued);
  ASSERT_OK_AND_ASSIGN(const RunRow kept, store_->GetRun(r1->id));
  EXPECT_EQ(kept.state, RunState::kLeased);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'released'"), 1);
  ASSERT_OK_AND_ASSIGN(auto again, store_->LeaseRun("l3", absl::Hours(1)));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->id, r0->id);
  EXPECT_EQ(again->attempts, 2);
}

TEST_F(StoreTest, DatasetsAndMembersRoundTrip) {
  DatasetRow d;
  d.id = kSha;
  d.path = "/data/a.rds";
  d.symbols = "BTC,ETH";
  d.rows = 1000;
  d.interval_seconds = 300;
  ASSERT_OK(store_->PutDataset(d));
  d.path = "/data/b.rds";
  ASSERT_OK(store_->PutDataset(d));  // upsert
  ASSERT_OK_AND_ASSIGN(const DatasetRow got, store_->GetDataset(kSha));
  EXPECT_EQ(got.path, "/data/b.rds");
  EXPECT_EQ(got.symbols, "BTC,ETH");
  EXPECT_EQ(got.rows, 1000);
  EXPECT_EQ(got.interval_seconds, 300);
  EXPECT_LE(got.created_at, absl::Now() + absl::Seconds(5));
  EXPECT_EQ(store_->GetDataset("nope").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(const auto datasets, store_->ListDatasets());
  EXPECT_EQ(datasets.size(), 1u);

  MemberRow m;
  m.id = "learner-host:50051";
  m.kind = "learner";
  m.address = "host:50051";
  m.capacity_json = "{\"slots\":2}";
  ASSERT_OK(store_->UpsertMember(m));
  m.kind = "robot";
  EXPECT_EQ(store_->UpsertMember(m).code(), absl::StatusCode::kInvalidArgument);
  m.id = "actor-1";
  m.kind = "actor";
  m.capacity_json = "";
  ASSERT_OK(store_->UpsertMember(m));
  ASSERT_OK_AND_ASSIGN(const auto members, store_->ListMembers());
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].id, "actor-1");
  EXPECT_EQ(members[0].capacity_json, "{}");
  EXPECT_EQ(members[1].capacity_json, "{\"slots\":2}");
  EXPECT_GE(members[1].last_seen, members[1].first_seen);
}

TEST_F(StoreTest, SurvivesPostgresRestartsWithNothingLostOrDuplicated) {
  const RetryPolicy retry{absl::Milliseconds(20), absl::Milliseconds(200),
                          absl::Seconds(30)};
  constexpr int kMinTrials = 15;
  // Worker 0 runs whole trials (create, lease, report, heartbeat, complete)
  // in a running study; worker 1 only creates trials in a study that is
  // not running (its runs are never leased) and reads counts.
  const int64_t leased_study = RunningStudy("restart-lease").id;
  ASSERT_OK_AND_ASSIGN(const StudyRow idle,
                       store_->CreateStudy("restart-create", ""));
  const auto start_time = [&] {
    pqxx::connection conn(dsn());
    pqxx::nontransaction txn(conn);
    return txn.exec1("SELECT pg_postmaster_start_time()::text")[0]
        .as<std::string>();
  };
  const std::string started_before = start_time();

  std::atomic<bool> restarts_done{false};
  absl::Status errors[2];
  int trials_made[2] = {0, 0};
  std::thread lease_worker([&] {
    absl::StatusOr<std::unique_ptr<Store>> connected =
        Store::Connect(dsn(), retry);
    if (!connected.ok()) {
      errors[0] = connected.status();
      return;
    }
    Store& store = **connected;
    for (int i = 0; !restarts_done.load() || i < kMinTrials; ++i) {
      absl::StatusOr<TrialRow> trial = store.CreateTrial(
          leased_study, {{"i", absl::StrCat(i)}}, {"{}", "{}"}, "/c");
      if (!trial.ok()) {
        errors[0] = trial.status();
        return;
      }
      ++trials_made[0];
      for (int k = 0; k < 2; ++k) {
        absl::StatusOr<std::optional<RunRow>> run =
            store.LeaseRun("learner", absl::Minutes(5));
        if (!run.ok() || !run->has_value()) {
          errors[0] = run.ok() ? absl::InternalError("no run") : run.status();
          return;
        }
        const int64_t id = (*run)->id;
        absl::Status s = store.ReportIntermediate(id, "learner", 10, 0.5);
        if (s.ok()) {
          s = store.Heartbeat("learner", absl::Minutes(5), {{id, 10}}).status();
        }
        absl::StatusOr<bool> all_done =
            s.ok() ? store.CompleteRun(id, "learner", BaseMetrics(1, 10), {})
                   : absl::StatusOr<bool>(s);
        if (all_done.ok() && *all_done != (k == 1)) {
          all_done = absl::InternalError("wrong all-done answer");
        }
        if (!all_done.ok()) {
          errors[0] = all_done.status();
          return;
        }
      }
      if (absl::Status s = store.CompleteTrial(trial->id, 1.0); !s.ok()) {
        errors[0] = s;
        return;
      }
    }
  });
  std::thread create_worker([&] {
    absl::StatusOr<std::unique_ptr<Store>> connected =
        Store::Connect(dsn(), retry);
    if (!connected.ok()) {
      errors[1] = connected.status();
      return;
    }
    Store& store = **connected;
    for (int i = 0; !restarts_done.load() || i < kMinTrials; ++i) {
      absl::StatusOr<TrialRow> trial = store.CreateTrial(
          idle.id, {{"i", absl::StrCat(i)}}, {"{}", "{}"}, "/c");
      absl::StatusOr<TrialCounts> counts =
          trial.ok() ? store.CountTrials(idle.id)
                     : absl::StatusOr<TrialCounts>(trial.status());
      if (!counts.ok()) {
        errors[1] = counts.status();
        return;
      }
      ++trials_made[1];
      if (counts->running != trials_made[1]) {
        errors[1] = absl::InternalError(
            absl::StrCat(counts->running, " running trials after creating ",
                         trials_made[1]));
        return;
      }
    }
  });
  absl::Status restart_status;
  for (int r = 0; r < 2 && restart_status.ok(); ++r) {
    absl::SleepFor(absl::Milliseconds(300));
    restart_status = cluster().Restart();
  }
  restarts_done = true;
  lease_worker.join();
  create_worker.join();
  ASSERT_OK(restart_status);
  EXPECT_TRUE(errors[0].ok()) << errors[0];
  EXPECT_TRUE(errors[1].ok()) << errors[1];
  EXPECT_NE(start_time(), started_before);  // the server really restarted

  const int64_t study_ids[2] = {leased_study, idle.id};
  for (int w = 0; w < 2; ++w) {
    ASSERT_OK_AND_ASSIGN(const auto trials, store_->ListTrials(study_ids[w]));
    ASSERT_EQ(static_cast<int>(trials.size()), trials_made[w]);
    for (int i = 0; i < trials_made[w]; ++i) {
      EXPECT_EQ(trials[i].number, i);
      ASSERT_EQ(trials[i].params.size(), 1u);
      EXPECT_EQ(trials[i].params[0].value, absl::StrCat(i));
      EXPECT_EQ(trials[i].state,
                w == 0 ? TrialState::kComplete : TrialState::kRunning);
    }
  }
  const int64_t done = 2 * trials_made[0];
  EXPECT_EQ(Count("SELECT COUNT(*) FROM trials"),
            trials_made[0] + trials_made[1]);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM runs WHERE state = 'queued' AND "
                  "attempts = 0"),
            2 * trials_made[1]);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM runs WHERE state = 'done' AND "
                  "attempts = 1 AND env_steps = 10"),
            done);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases"), done);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'done'"), done);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM fold_metrics"), done);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM intermediate_values"), done);
}

TEST_F(StoreTest, CommitLostWithTheConnectionIsResolvedNotRepeated) {
  const StudyRow study = RunningStudy("in-doubt");
  CommitCuttingProxy proxy(cluster().port());
  const std::string database = dsn().substr(dsn().find("dbname="));
  const std::string via_proxy =
      absl::StrCat("host=127.0.0.1 port=", proxy.port(), " ", database);
  ASSERT_OK_AND_ASSIGN(
      auto store,
      Store::Connect(via_proxy, {absl::Milliseconds(20),
                                 absl::Milliseconds(200), absl::Seconds(20)}));

  // The server committed but the client never heard: the txid says so,
  // the result is returned and nothing is rerun (no trial number 1).
  proxy.ArmOnce(CommitCuttingProxy::Cut::kAfterForwarding);
  ASSERT_OK_AND_ASSIGN(const TrialRow first,
                       store->CreateTrial(study.id, {}, {"{}"}, "/c"));
  EXPECT_EQ(proxy.cuts(), 1);
  EXPECT_EQ(first.number, 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM trials"), 1);

  // The COMMIT never reached the server: rolled back, so it is rerun once.
  proxy.ArmOnce(CommitCuttingProxy::Cut::kInsteadOfForwarding);
  ASSERT_OK_AND_ASSIGN(const TrialRow second,
                       store->CreateTrial(study.id, {}, {"{}"}, "/c"));
  EXPECT_EQ(proxy.cuts(), 2);
  EXPECT_EQ(second.number, 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM trials"), 2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM runs"), 2);

  // A completion whose reply was lost still reports success (a naive
  // rerun would say "not leased" and the learner would think it failed).
  ASSERT_OK_AND_ASSIGN(auto run, store->LeaseRun("l1", absl::Minutes(1)));
  ASSERT_TRUE(run.has_value());
  proxy.ArmOnce(CommitCuttingProxy::Cut::kAfterForwarding);
  ASSERT_OK_AND_ASSIGN(
      const bool all_done,
      store->CompleteRun(run->id, "l1", BaseMetrics(1, 5), {}));
  EXPECT_EQ(proxy.cuts(), 3);
  EXPECT_TRUE(all_done);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM fold_metrics"), 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM leases WHERE outcome = 'done'"), 1);
}

TEST_F(StoreTest, ServerThatStaysDownGivesUnavailableAfterGiveUpAfter) {
  const RetryPolicy retry{absl::Milliseconds(20), absl::Milliseconds(200),
                          absl::Seconds(1)};
  ASSERT_OK_AND_ASSIGN(auto store, MigratedStore(retry));
  ASSERT_OK(cluster().Stop());
  const absl::Time start = absl::Now();
  const absl::StatusOr<StudyRow> study = store->CreateStudy("down", "");
  const absl::Duration waited = absl::Now() - start;
  const absl::Status restarted = cluster().Restart();
  ASSERT_OK(restarted);
  EXPECT_EQ(study.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(study.status().message(), HasSubstr("CreateStudy"));
  EXPECT_THAT(study.status().message(), HasSubstr(cluster().data_dir()));
  EXPECT_GE(waited, absl::Milliseconds(800));
  EXPECT_LE(waited, absl::Seconds(5));
  // Back up: the same Store reconnects; nothing was written while down.
  ASSERT_OK_AND_ASSIGN(const StudyRow created, store->CreateStudy("down", ""));
  EXPECT_EQ(created.name, "down");
  EXPECT_EQ(Count("SELECT COUNT(*) FROM studies"), 1);
}

TEST_F(StoreTest, MissingDatabaseFailsAtOnceInsteadOfRetrying) {
  const std::string missing = cluster().DsnFor("no_such_db");
  const absl::Time start = absl::Now();
  const absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Connect(missing);  // default policy: would retry for 60 s
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("no_such_db"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(StoreConnectTest, UnreachableServerIsUnavailableWithoutThePassword) {
  const RetryPolicy retry{absl::Milliseconds(10), absl::Milliseconds(50),
                          absl::Milliseconds(300)};
  // Port 1 on loopback: nothing listens there.
  const absl::StatusOr<std::unique_ptr<Store>> store = Store::Connect(
      "host=127.0.0.1 port=1 dbname=x user=u password=s3cret-pw "
      "connect_timeout=2",
      retry);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr("host=127.0.0.1 port=1"));
  EXPECT_THAT(store.status().message(), Not(HasSubstr("s3cret-pw")));
}

TEST(StoreConnectTest, MalformedDsnIsInvalidArgument) {
  EXPECT_EQ(Store::Connect("host=/tmp bogus_option=1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ristretto::coordinator
