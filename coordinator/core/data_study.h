// The built-in study of `ristretto up --csv-dir/--dataset` without --study:
// its budget and folds sized to the data (rows × assets), so that a small
// file gets a study that fits it and a long one gets folds and training that
// use it. The rules (docs/study_format.md, "Your own data"):
//   lockbox   the last 15 % of the rows (LockboxSpec's share), 3 refits;
//   guard     the rows before it;
//   folds     K = clamp(guard / 5000, 2, 4) walk-forward folds: training
//             slice guard / 2, K test slices of (guard − train) / K, each
//             test slice stepping by its length;
//   budget    10 passes over a fold's training rows, rounded up to 10,000
//             env steps, within [50,000, 400,000] (a pass: as many env
//             steps as the slice has rows);
//   width     64 units per layer up to 4 assets, 128 above (the observation
//             grows with the assets);
//   trials    6, 2 at a time; the median pruner after half the budget;
//   decisions one every three days (env decision_bars = 3 days /
//             interval, rounded, within [1, 72]: a 512-bar training
//             episode then holds at least 8 decisions); the budget counts
//             decisions.
// Pure functions; thread-safe.
#ifndef RISTRETTO_COORDINATOR_CORE_DATA_STUDY_H_
#define RISTRETTO_COORDINATOR_CORE_DATA_STUDY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ristretto::coordinator {

struct DataStudySizing {
  int64_t rows = 0;
  int assets = 0;
  int64_t lockbox_rows = 0;
  int64_t guard_rows = 0;  // rows before the lockbox
  int folds = 0;
  int64_t train_bars = 0, test_bars = 0;
  int64_t budget_env_steps = 0;
  double passes = 0;  // budget / train_bars
  int width = 0;
  int max_trials = 0, concurrency = 0, refits = 0;
  int decision_bars = 1;  // env.decision_bars: bars per decision
};

// `interval_seconds` is the bar interval (0: unknown, one decision a bar).
// Errors: kInvalidArgument when rows or assets are not positive, or the
// rows before the lockbox are too few for two folds whose training
// slices hold a 512-step episode (fewer than 1,100).
absl::StatusOr<DataStudySizing> SizeStudyForData(int64_t rows, int assets,
                                                 int64_t interval_seconds);

// The study file (YAML, `dataset: given`) named `name`.
std::string DataStudyYaml(const DataStudySizing& sizing,
                          const std::string& name);

// What `up` prints: one paragraph saying how the study was sized.
std::string DataStudySizingText(const DataStudySizing& sizing);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_DATA_STUDY_H_
