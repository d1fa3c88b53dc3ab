// Parity with the original env: every golden trace replays within env.md's
// tolerance, with one copy and with several identical copies.
#include <filesystem>
#include <string>
#include <vector>

#include "env/golden_replay.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::env {
namespace {

namespace fs = std::filesystem;

// Case directories: ../shared/golden/env when present (CI always has it),
// and the two cases copied into tests/data (extracted into the build tree by
// CMake), so a clone without ../shared still checks parity.
std::vector<std::string> CaseDirs(const std::string& root) {
  std::vector<std::string> dirs;
  if (!fs::is_directory(root)) return dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "expected.csv")) {
      dirs.push_back(entry.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

void ExpectCasePasses(const std::string& dir, int copies) {
  SCOPED_TRACE(dir);
  absl::StatusOr<GoldenCase> golden = LoadGoldenCase(dir);
  ASSERT_TRUE(golden.ok()) << golden.status();
  absl::StatusOr<ReplayReport> report = ReplayGoldenCase(*golden, copies);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->passed()) << FormatReplayReport(*report);
  EXPECT_EQ(report->steps, golden->steps);
  EXPECT_EQ(report->quantities.size(), 7u);
}

TEST(GoldenParityTest, BundledCasesReplayWithinToleranceForOneCopy) {
  const std::vector<std::string> dirs = CaseDirs(RISTRETTO_GOLDEN_BUNDLED_DIR);
  ASSERT_EQ(dirs.size(), 2u) << "bundled golden cases missing";
  for (const std::string& dir : dirs) ExpectCasePasses(dir, 1);
}

TEST(GoldenParityTest, BundledCasesReplayWithinToleranceForFiveCopies) {
  for (const std::string& dir : CaseDirs(RISTRETTO_GOLDEN_BUNDLED_DIR)) {
    ExpectCasePasses(dir, 5);
  }
}

TEST(GoldenParityTest, EverySharedCaseReplaysWithinTolerance) {
  const std::string root =
      std::string(RISTRETTO_SOURCE_DIR) + "/../shared/golden/env";
  const std::vector<std::string> dirs = CaseDirs(root);
  if (dirs.empty()) GTEST_SKIP() << "no ../shared/golden/env in this checkout";
  EXPECT_GE(dirs.size(), 8u);
  for (const std::string& dir : dirs) {
    ExpectCasePasses(dir, 1);
    ExpectCasePasses(dir, 3);
  }
}

TEST(GoldenParityTest, CorruptedExpectationIsReportedAsFailure) {
  const std::vector<std::string> dirs = CaseDirs(RISTRETTO_GOLDEN_BUNDLED_DIR);
  ASSERT_FALSE(dirs.empty());
  absl::StatusOr<GoldenCase> golden = LoadGoldenCase(dirs.front());
  ASSERT_TRUE(golden.ok()) << golden.status();
  golden->cash[10] *= 1.0 + 1e-5;  // ten times the tolerance
  absl::StatusOr<ReplayReport> report = ReplayGoldenCase(*golden, 1);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->passed());
  for (const QuantityError& q : report->quantities) {
    if (q.name == "cash") {
      EXPECT_EQ(q.failures, 1);
      EXPECT_EQ(q.first_failing_step, 10);
    } else {
      EXPECT_TRUE(q.passed()) << q.name;
    }
  }
}

TEST(GoldenParityTest, MissingCaseDirectoryIsNotFound) {
  absl::StatusOr<GoldenCase> golden = LoadGoldenCase("/nonexistent/case");
  EXPECT_EQ(golden.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ristretto::env
