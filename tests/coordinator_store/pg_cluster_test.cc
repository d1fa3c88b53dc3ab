// PgCluster: a private PostgreSQL server in a data directory, real
// initdb/pg_ctl processes.
#include "coordinator/store/pg_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator_store/pg_test_env.h"

namespace ristretto::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    absl::StatusOr<std::string> dir = testing::MakeTempDir("pgcluster-");
    EXPECT_TRUE(dir.ok()) << dir.status();
    if (dir.ok()) path_ = *dir;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(PgClusterTest, StopsRestartsAndReopensADataDirectoryWithItsData) {
  TempDir dir;
  PgClusterOptions options;
  options.data_dir = dir.path() + "/data";
  options.database = "keep";
  options.unsafe_fast = true;
  int first_port = 0;
  {
    absl::StatusOr<std::unique_ptr<PgCluster>> cluster =
        PgCluster::Start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    first_port = (*cluster)->port();
    EXPECT_GT(first_port, 0);
    EXPECT_EQ((*cluster)->data_dir(), options.data_dir);
    EXPECT_THAT((*cluster)->dsn(), HasSubstr("dbname=keep"));
    absl::StatusOr<std::unique_ptr<Store>> store =
        Store::Connect((*cluster)->dsn());
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Migrate().ok());
    ASSERT_TRUE((*store)->CreateStudy("persisted", "").ok());

    ASSERT_TRUE((*cluster)->Restart().ok());
    EXPECT_EQ((*cluster)->port(), first_port);
    EXPECT_TRUE((*store)->GetStudy("persisted").ok());
    ASSERT_TRUE((*cluster)->Stop().ok());
    EXPECT_TRUE((*cluster)->Stop().ok());  // idempotent
    EXPECT_FALSE(fs::exists(options.data_dir + "/postmaster.pid"));
  }
  // The existing cluster is reused (no initdb), on a new free port.
  absl::StatusOr<std::unique_ptr<PgCluster>> again = PgCluster::Start(options);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::unique_ptr<Store>> store =
      Store::Connect((*again)->dsn());
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<StudyRow> study = (*store)->GetStudy("persisted");
  EXPECT_TRUE(study.ok()) << study.status();
  // The destructor stops the server.
  again->reset();
  EXPECT_FALSE(fs::exists(options.data_dir + "/postmaster.pid"));
}

TEST(PgClusterTest, FailingToolIsNamedWithItsOutput) {
  TempDir dir;
  PgClusterOptions options;
  options.data_dir = dir.path() + "/data";
  options.bin_dir = dir.path() + "/no-such-bin";
  const absl::StatusOr<std::unique_ptr<PgCluster>> cluster =
      PgCluster::Start(options);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cluster.status().message(), HasSubstr("initdb"));
  EXPECT_THAT(cluster.status().message(), HasSubstr("no-such-bin/initdb"));
}

TEST(PgClusterTest, DataDirectoryTooLongForASocketIsInvalidArgument) {
  PgClusterOptions options;
  options.data_dir = "/tmp/" + std::string(120, 'x');
  EXPECT_EQ(PgCluster::Start(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(options.data_dir));
}

TEST(PgClusterTest, AsRootAnUnreachableParentIsExplained) {
  if (geteuid() != 0) GTEST_SKIP() << "only root hands the server to postgres";
  TempDir dir;
  const std::string parent = dir.path() + "/private";
  ASSERT_TRUE(fs::create_directory(parent));
  fs::permissions(parent, fs::perms::owner_all);  // 0700, owned by root
  PgClusterOptions options;
  options.data_dir = parent + "/data";
  const absl::StatusOr<std::unique_ptr<PgCluster>> cluster =
      PgCluster::Start(options);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(cluster.status().message(), HasSubstr(parent));
  EXPECT_THAT(cluster.status().message(), HasSubstr("chmod o+x"));
}

}  // namespace
}  // namespace ristretto::coordinator
