// A real PostgreSQL server for integration tests: one PgCluster per test
// binary (started on first use in a fresh mkdtemp directory, stopped and
// deleted when the binary exits) and a fresh database per test.
//
// Usage, in any gtest binary linking ristretto_coordinator_store:
//
//   #include "tests/coordinator_store/pg_test_env.h"
//
//   class MyTest : public ristretto::coordinator::testing::PgDatabaseTest {};
//   TEST_F(MyTest, Something) {
//     auto store = MigratedStore();          // Store on this test's database
//     ASSERT_TRUE(store.ok()) << store.status();
//     ... or Store::Connect(dsn()), cluster().Restart(), ...
//   }
//
// CMake: ristretto_test(... LIBS ristretto_coordinator_store ... SERIAL).
// ctest runs every test case in its own process, so each case pays one
// start (about 1 s; initdb only once per machine: a stopped fresh cluster is
// cached in $TMPDIR/ristretto-pgtemplate-<euid> and copied); a plain run of
// the binary shares one server.
// The server runs with fsync off (PgClusterOptions::unsafe_fast). As root
// (CI) it runs as user "postgres"; the temporary directory is made 0755 for
// that. Servers left behind by a crashed test binary are shut down the next
// time a binary starts one. Thread-safe.
#ifndef RISTRETTO_TESTS_COORDINATOR_STORE_PG_TEST_ENV_H_
#define RISTRETTO_TESTS_COORDINATOR_STORE_PG_TEST_ENV_H_

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/store/pg_cluster.h"
#include "coordinator/store/store.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator::testing {

// Creates a fresh directory "<$TMPDIR or /tmp>/<prefix>XXXXXX" with mode
// 0755 (the server user must be able to traverse it when we are root).
inline absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(
      tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp", "/", prefix, "XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, " failed"));
  }
  if (chmod(pattern.c_str(), 0755) != 0) {
    return absl::InternalError(absl::StrCat("chmod 0755 ", pattern, " failed"));
  }
  return pattern;
}

// The per-binary server. Get() starts it on first use.
class PgTestCluster {
 public:
  static PgTestCluster& Get() {
    static PgTestCluster instance;  // destroyed at exit: stop + delete
    return instance;
  }

  // Why the server could not be started (OK when it runs).
  const absl::Status& status() const { return status_; }
  // The server; null when status() is not OK.
  PgCluster* cluster() { return cluster_.get(); }

  // Returns the DSN of a database nobody has used yet: first the one made
  // with the cluster, then new ones "t_<n>" (CREATE DATABASE).
  absl::StatusOr<std::string> NewDatabase() {
    RETURN_IF_ERROR(status_);
    std::lock_guard<std::mutex> lock(mu_);
    if (!initial_database_used_) {
      initial_database_used_ = true;
      return cluster_->dsn();
    }
    const std::string name = absl::StrCat("t_", next_database_++);
    RETURN_IF_ERROR(cluster_->CreateDatabase(name));
    return cluster_->DsnFor(name);
  }

  PgTestCluster(const PgTestCluster&) = delete;
  PgTestCluster& operator=(const PgTestCluster&) = delete;

 private:
  static constexpr char kPrefix[] = "ristretto-pgtest-";

  PgTestCluster() {
    ReapOrphans();
    absl::StatusOr<std::string> root =
        MakeTempDir(absl::StrCat(kPrefix, getpid(), "-"));
    if (!root.ok()) {
      status_ = root.status();
      return;
    }
    root_ = *root;
    PgClusterOptions options;
    options.data_dir = root_ + "/data";
    options.database = "postgres_test";
    options.unsafe_fast = true;
    // initdb is most of the start-up time: start from a copy of a cached,
    // cleanly stopped cluster when there is one (PgCluster then skips
    // initdb); if it is unusable (e.g. another PostgreSQL major), initdb.
    const std::string cached = TemplateDir();
    const bool copied = CopyTree(cached, options.data_dir);
    absl::StatusOr<std::unique_ptr<PgCluster>> cluster =
        PgCluster::Start(options);
    if (!cluster.ok() && copied) {
      std::error_code ec;
      std::filesystem::remove_all(options.data_dir, ec);
      cluster = PgCluster::Start(options);
    }
    if (!cluster.ok()) {
      status_ = Annotate(cluster.status(), "starting the test PostgreSQL");
      return;
    }
    cluster_ = std::move(cluster).value();
    if (!copied) SaveTemplate(cached);
  }

  // "<tmp>/ristretto-pgtemplate-<euid>": a stopped cluster holding only the
  // empty database postgres_test.
  static std::string TemplateDir() {
    const char* tmp = std::getenv("TMPDIR");
    return absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                        "/ristretto-pgtemplate-", geteuid());
  }

  // Copies directory `from` to `to`; false if `from` is not a cluster.
  static bool CopyTree(const std::string& from, const std::string& to) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(fs::path(from) / "PG_VERSION", ec)) return false;
    fs::copy(from, to, fs::copy_options::recursive, ec);
    if (ec) fs::remove_all(to, ec);
    return fs::exists(fs::path(to) / "PG_VERSION", ec);
  }

  // Stops our fresh cluster, copies it to `cached` (atomically, by
  // renaming a private copy) and starts it again. Best effort.
  void SaveTemplate(const std::string& cached) {
    namespace fs = std::filesystem;
    if (!cluster_->Stop().ok()) return;
    std::string staging = absl::StrCat(cached, ".tmp-XXXXXX");
    std::error_code ec;
    if (mkdtemp(staging.data()) != nullptr) {
      fs::remove(staging, ec);
      if (CopyTree(cluster_->data_dir(), staging)) {
        fs::remove(fs::path(staging) / "postgresql.log", ec);
        fs::rename(staging, cached, ec);  // loses to a concurrent saver
      }
      fs::remove_all(staging, ec);
    }
    const absl::Status restarted = cluster_->Restart();
    if (!restarted.ok()) {
      status_ = Annotate(restarted, "restarting the test PostgreSQL");
      cluster_.reset();
    }
  }

  ~PgTestCluster() {
    cluster_.reset();  // pg_ctl stop -m fast
    if (!root_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(root_, ec);
    }
  }

  // Shuts down servers of test binaries that died without cleaning up
  // (directory "<prefix><pid>-XXXXXX" whose pid is gone) and deletes them.
  static void ReapOrphans() {
    namespace fs = std::filesystem;
    const char* tmp = std::getenv("TMPDIR");
    const fs::path dir = tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (!absl::StartsWith(name, kPrefix)) continue;
      const std::string rest = name.substr(sizeof(kPrefix) - 1);
      int owner = 0;
      if (!absl::SimpleAtoi(rest.substr(0, rest.find('-')), &owner) ||
          owner <= 0 || kill(owner, 0) == 0 || errno != ESRCH) {
        continue;  // owner alive (or not ours to judge)
      }
      std::ifstream pid_file(entry.path() / "data" / "postmaster.pid");
      int postmaster = 0;
      if (pid_file >> postmaster && postmaster > 0) {
        std::ifstream comm(absl::StrCat("/proc/", postmaster, "/comm"));
        std::string command;
        if (comm >> command && command == "postgres") {
          kill(postmaster, SIGQUIT);  // immediate shutdown
          for (int i = 0; i < 50 && kill(postmaster, 0) == 0; ++i) {
            usleep(100 * 1000);
          }
        }
      }
      fs::remove_all(entry.path(), ec);
    }
  }

  absl::Status status_;
  std::string root_;
  std::unique_ptr<PgCluster> cluster_;
  std::mutex mu_;
  int next_database_ = 0;
  bool initial_database_used_ = false;
};

// Fixture: each test gets its own empty database on the shared server.
class PgDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PgTestCluster& env = PgTestCluster::Get();
    ASSERT_TRUE(env.status().ok()) << env.status();
    absl::StatusOr<std::string> dsn = env.NewDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
  }

  // libpq DSN of this test's database.
  const std::string& dsn() const { return dsn_; }
  // The shared server (Stop/Restart it to test outages; restart it before
  // the test ends).
  PgCluster& cluster() { return *PgTestCluster::Get().cluster(); }

  // A Store on this test's database with every migration applied.
  absl::StatusOr<std::unique_ptr<Store>> MigratedStore(RetryPolicy retry = {}) {
    ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Connect(dsn_, retry));
    RETURN_IF_ERROR(store->Migrate());
    return store;
  }

 private:
  std::string dsn_;
};

}  // namespace ristretto::coordinator::testing

#endif  // RISTRETTO_TESTS_COORDINATOR_STORE_PG_TEST_ENV_H_
