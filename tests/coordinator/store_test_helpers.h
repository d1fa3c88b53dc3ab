// Helpers shared by the Store tests (tests/coordinator/store_contract_test.cc
// on every backend, tests/coordinator_store/store_test.cc on PostgreSQL):
// status assertions, a study in state running, and the fold metrics both
// suites complete runs with. Header-only; for tests, not thread-safe beyond
// what gtest assertions are.
#ifndef RISTRETTO_TESTS_COORDINATOR_STORE_TEST_HELPERS_H_
#define RISTRETTO_TESTS_COORDINATOR_STORE_TEST_HELPERS_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "coordinator/store/store.h"
#include "gtest/gtest.h"

// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` is a declaration.
#define ASSERT_OK(expr)                                     \
  do {                                                      \
    const absl::Status& assert_ok_status = (expr);          \
    ASSERT_TRUE(assert_ok_status.ok()) << assert_ok_status; \
  } while (false)

#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(RISTRETTO_CONCAT_(statusor_, __LINE__), lhs, rexpr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                               \
  ASSERT_TRUE(statusor.ok()) << statusor.status();       \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace ristretto::coordinator {

// Creates study `name` and moves it to running. On failure records a
// non-fatal gtest failure and returns a default StudyRow (id 0), so the
// caller's next store call fails with kNotFound instead of crashing.
inline StudyRow MakeRunningStudy(Store& store, const std::string& name) {
  absl::StatusOr<StudyRow> study = store.CreateStudy(name, "space: {}");
  EXPECT_TRUE(study.ok()) << study.status();
  if (!study.ok()) return {};
  EXPECT_TRUE(store.SetStudyState(study->id, StudyState::kRunning).ok());
  study->state = StudyState::kRunning;
  return *study;
}

// Valid fold metrics with the given Sharpe ratio and env steps: the
// performance fields a completed run always reports (costs, exposure and
// per-bar returns left at their defaults).
inline FoldMetrics BaseMetrics(double sharpe, int64_t steps) {
  FoldMetrics m;
  m.sharpe = sharpe;
  m.benchmark_sharpe = 0.5;
  m.sortino = 1.5;
  m.max_drawdown = 0.2;
  m.calmar = 3;
  m.total_return = 0.1;
  m.benchmark_return = 0.05;
  m.trades = 42;
  m.env_steps = steps;
  return m;
}

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_TESTS_COORDINATOR_STORE_TEST_HELPERS_H_
