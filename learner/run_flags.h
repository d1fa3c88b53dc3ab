// Flags shared by the commands that build a run (`ristretto train`,
// `ristretto-learner`): layer widths and where the market comes from.
#ifndef RISTRETTO_CLI_RUN_FLAGS_H_
#define RISTRETTO_CLI_RUN_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "env/dataset.h"

namespace ristretto::cli {

// Parses "512,512" into {512, 512}. kInvalidArgument for a bad width.
absl::StatusOr<std::vector<int>> ParseWidths(const std::string& text);

// --dataset FILE, or a synthetic market from --synthetic-rows (default
// `default_rows`), --synthetic-assets, --synthetic-seed, --predictability.
// `path` (if non-null) receives the file read, or "" for a synthetic one.
absl::StatusOr<env::Dataset> DatasetFromArgs(const Args& args,
                                             int64_t default_rows,
                                             std::string* path);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_RUN_FLAGS_H_
