// ops/local_stack.h without processes: the data directory's lock and the
// study `up` prepares (issue 36: the application layer, called directly).
#include "ops/local_stack.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/core/data_study.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::ops {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class OpsLocalStackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat(
               "ops_local_stack_test_", getpid(), "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    progress_ = std::tmpfile();
  }
  void TearDown() override {
    std::fclose(progress_);
    fs::remove_all(dir_);
  }
  // What the call under test printed on `progress_`.
  std::string Progress() {
    std::fflush(progress_);
    std::rewind(progress_);
    std::string text;
    char buf[512];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), progress_)) > 0) {
      text.append(buf, n);
    }
    return text;
  }
  static GivenData Given(int64_t rows) {
    env::SyntheticMarketOptions o;
    o.num_rows = rows;
    o.num_assets = 2;
    o.interval_seconds = 3600;
    absl::StatusOr<env::Dataset> d = env::GenerateSyntheticDataset(o);
    EXPECT_TRUE(d.ok()) << d.status();
    GivenData g;
    g.dataset = *std::move(d);
    g.id = g.dataset.ComputeId();
    g.file = "unused.rds";
    return g;
  }

  fs::path dir_;
  std::FILE* progress_ = nullptr;
};

TEST_F(OpsLocalStackTest,
       ASecondLockOnTheDataDirectoryIsRefusedNamingTheHolder) {
  absl::StatusOr<int> first = LockDataDir(dir_.string(), progress_);
  ASSERT_TRUE(first.ok()) << first.status();
  // flock locks belong to an open file description: a second open in the
  // same process conflicts like another `up`, whose pid (ours) is alive.
  absl::StatusOr<int> second = LockDataDir(dir_.string(), progress_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("another `ristretto up` (pid ", getpid(),
                                     ") is running on ", dir_.string())));
  close(*first);
  absl::StatusOr<int> again = LockDataDir(dir_.string(), progress_);
  ASSERT_TRUE(again.ok()) << again.status();
  close(*again);
}

TEST_F(OpsLocalStackTest, GivenDataWithoutAStudyGetsTheBuiltInStudySizedToIt) {
  const std::optional<GivenData> given = Given(6000);
  absl::StatusOr<UpStudy> study =
      PrepareUpStudy("", "", given, dir_.string(), progress_);
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->file, (dir_ / "default-study.yaml").string());
  EXPECT_TRUE(fs::is_regular_file(study->file));
  EXPECT_THAT(study->config.name,
              StartsWith(absl::StrCat("data-", given->id.substr(0, 12))));
  EXPECT_THAT(study->text, HasSubstr(given->id));  // bound to the data
  EXPECT_EQ(study->config.dataset.id, given->id);
  EXPECT_THAT(Progress(), HasSubstr("up: no --study: the built-in study"));
}

TEST_F(OpsLocalStackTest, AStudyThatCannotRunOnTheDataIsRefusedNamingTheFile) {
  // The built-in study sized for 20,000 rows, given 1,500.
  absl::StatusOr<coordinator::DataStudySizing> sizing =
      coordinator::SizeStudyForData(20000, 2, 3600);
  ASSERT_TRUE(sizing.ok()) << sizing.status();
  const std::string text = coordinator::DataStudyYaml(*sizing, "too-long");
  absl::StatusOr<UpStudy> study =
      PrepareUpStudy("big.yaml", text, Given(1500), dir_.string(), progress_);
  ASSERT_FALSE(study.ok());
  EXPECT_EQ(study.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(study.status().message(),
              HasSubstr("study too-long cannot run on dataset"));
  EXPECT_FALSE(fs::exists(dir_ / "default-study.yaml"));
}

TEST_F(OpsLocalStackTest, AStudyFileThatDoesNotParseIsRefusedNamingTheFile) {
  absl::StatusOr<UpStudy> study =
      PrepareUpStudy("broken.yaml", "name: x\nbudget_env_steps: [",
                     std::nullopt, dir_.string(), progress_);
  ASSERT_FALSE(study.ok());
  EXPECT_EQ(study.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(study.status().message()),
              StartsWith("broken.yaml: "));
}

}  // namespace
}  // namespace ristretto::ops
