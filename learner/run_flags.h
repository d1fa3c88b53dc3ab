// Run options given on a command line that are not PPO hyper-parameters:
// layer widths as text and where the market comes from. Shared by the
// commands that build a run (`ristretto train`, `ristretto-learner`); each
// declares and parses its own flags and calls these. No torch.
// Thread-safe: no shared state.
#ifndef RISTRETTO_LEARNER_RUN_FLAGS_H_
#define RISTRETTO_LEARNER_RUN_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "env/dataset.h"

namespace ristretto::learner {

// Parses "512,512" into {512, 512}. kInvalidArgument naming the bad width.
absl::StatusOr<std::vector<int>> ParseWidths(const std::string& text);

// Where a run's market comes from: a dataset file (--dataset), or else a
// synthetic market (--synthetic-rows, --synthetic-assets, --synthetic-seed,
// --predictability).
struct DatasetSource {
  std::string file;  // non-empty: read this dataset; the rest is ignored
  int64_t synthetic_rows = 0;
  int64_t synthetic_assets = 7;
  int64_t synthetic_seed = 1;
  double predictability = 0.0;
};

// Reads `source.file`, or generates the synthetic market. Errors: as
// env::ReadDataset and env::GenerateSyntheticDataset.
absl::StatusOr<env::Dataset> LoadDataset(const DatasetSource& source);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_FLAGS_H_
