// Replays a golden trace of the original env (format:
// ../shared/golden/env/README.md) through VectorEnv and reports the largest
// error per quantity. Used by the parity test and `ristretto env replay`.
// Thread-compatible (no shared state).
#ifndef RISTRETTO_ENV_GOLDEN_REPLAY_H_
#define RISTRETTO_ENV_GOLDEN_REPLAY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "env/env_options.h"
#include "env/market_data.h"

namespace ristretto::env {

// Tolerance of env.md: |actual − expected| <= max(1e-6·|expected|, 1e-12).
inline constexpr double kGoldenRelTol = 1e-6;
inline constexpr double kGoldenAbsTol = 1e-12;

// One recorded episode, parsed.
struct GoldenCase {
  std::string name;
  EnvOptions options;
  std::shared_ptr<const MarketData> market;
  int64_t steps = 0;                // S
  int obs_size = 0;                 // D
  std::vector<float> actions;       // S × n
  std::vector<float> initial_obs;   // D
  std::vector<double> reward;       // S
  std::vector<int> done;            // S
  std::vector<double> cash;         // S
  std::vector<double> total_asset;  // S
  std::vector<double> holdings;     // S × n (float32 values)
  std::vector<double> obs;          // S × D (float32 values)
};

// Reads a case directory. Errors: kNotFound (missing file), kInvalidArgument
// (malformed CSV/JSON or inconsistent shapes, with file and line).
absl::StatusOr<GoldenCase> LoadGoldenCase(const std::string& dir);

// Largest error of one quantity over every step and copy.
struct QuantityError {
  std::string name;
  double max_abs_error = 0.0;
  // max over elements of |a − e| / max(rtol·|e|, atol): <= 1 passes.
  double max_tolerance_ratio = 0.0;
  int64_t first_failing_step = -1;  // -1 if none
  int64_t failures = 0;
  bool passed() const { return failures == 0; }
};

struct ReplayReport {
  std::string case_name;
  int copies = 1;
  int64_t steps = 0;
  std::vector<QuantityError> quantities;
  bool passed() const;
};

// Replays `golden` with `copies` identical env copies stepped together.
// Errors: kInvalidArgument if the env refuses the case's options or shapes.
absl::StatusOr<ReplayReport> ReplayGoldenCase(const GoldenCase& golden,
                                              int copies);

// Human-readable table of a report (one line per quantity + verdict).
std::string FormatReplayReport(const ReplayReport& report);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_GOLDEN_REPLAY_H_
