// The env's geometry: how many rows a lookback costs, how many steps and
// bars a domain gives, and how long an observation is (env.md, "State" and
// "Episodes"). Every site that needs one of these numbers calls these
// functions, so the arithmetic lives in one place. Header-only, constexpr.
//
// env.md, "Derived": on a slice of T rows an episode starts at t = L − 1
// and ends when t == max_step = T − L − 1, so it has T − 2L steps (and
// T − 2L + 1 account values, the first before any step); a slice must have
// at least 2L + 1 rows for one step.
#ifndef RISTRETTO_ENV_GEOMETRY_H_
#define RISTRETTO_ENV_GEOMETRY_H_

#include <cstdint>

namespace ristretto::env {

// Env steps a domain (or slice) of `rows` rows gives with lookback `L`
// (negative when it is too short: callers check).
constexpr int64_t StepsInRows(int64_t rows, int64_t lookback) {
  return rows - 2 * lookback;
}

// Account values (bars of an equity curve) of those steps: one more.
constexpr int64_t BarsInRows(int64_t rows, int64_t lookback) {
  return StepsInRows(rows, lookback) + 1;
}

// Rows a slice of `steps` env steps needs.
constexpr int64_t RowsForSteps(int64_t steps, int64_t lookback) {
  return steps + 2 * lookback;
}

// The fewest rows a copy can be reset on (one step).
constexpr int64_t MinRowsForOneStep(int64_t lookback) {
  return RowsForSteps(1, lookback);
}

// Observation length: cash, one position per asset, then `lookback` rows
// of all assets' features (`features` = n × per-asset count).
constexpr int64_t ObservationSize(int64_t num_assets, int64_t features,
                                  int64_t lookback) {
  return 1 + num_assets + features * lookback;
}

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_GEOMETRY_H_
