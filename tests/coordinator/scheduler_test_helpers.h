// Helpers shared by the Scheduler tests (scheduler_test.cc on PostgreSQL,
// scheduler_unit_test.cc on InMemoryStore). Header-only.
#ifndef RISTRETTO_TESTS_COORDINATOR_SCHEDULER_TEST_HELPERS_H_
#define RISTRETTO_TESTS_COORDINATOR_SCHEDULER_TEST_HELPERS_H_

#include <cstdint>

#include "proto/coordinator.pb.h"

namespace ristretto::coordinator {

// An evaluation a learner could report: the given Sharpe ratio and env steps
// and `bars` per-bar log returns that vary bar to bar (a pattern of period
// 13) and shift with `sharpe`.
inline v1::Evaluation Eval(double sharpe, int64_t steps, int bars) {
  v1::Evaluation e;
  e.set_sharpe(sharpe);
  e.set_benchmark_sharpe(0.5);
  e.set_total_return(0.01);
  e.set_env_steps(steps);
  for (int i = 0; i < bars; ++i) {
    e.add_log_returns(0.001 * ((i * 7919) % 13 - 6) + 0.0001 * sharpe);
  }
  return e;
}

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_TESTS_COORDINATOR_SCHEDULER_TEST_HELPERS_H_
