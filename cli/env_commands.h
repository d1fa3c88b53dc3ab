// `ristretto env ...` and `ristretto dataset ...` subcommands. Each returns
// the process exit status and prints errors to stderr.
#ifndef RISTRETTO_CLI_ENV_COMMANDS_H_
#define RISTRETTO_CLI_ENV_COMMANDS_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "env/csv_import.h"

namespace ristretto::cli {

// argv[first] is the verb after the group ("replay", "import", ...).
int RunEnvCommand(int argc, char** argv, int first);
int RunDatasetCommand(int argc, char** argv, int first);

// The flags `dataset import` (and `up --csv-dir`) read besides --out.
extern const std::set<std::string> kCsvImportFlags;

// --csv-dir (required), --interval (required), --max-ffill (default
// env::kDefaultMaxFfillBars), --on-long-gap split|fail, --min-qty,
// --min-domain-rows. Errors: kInvalidArgument naming the flag.
absl::StatusOr<env::CsvImportOptions> CsvImportOptionsFromArgs(
    const Args& args);

// What `dataset import` does after parsing its flags, so `up --csv-dir`
// takes the same path: imports (env::ImportCsvDirectory), prints the import
// report, computes the features, writes the dataset to `out` atomically and
// prints its summary (`dataset info`). Returns the dataset id.
// Errors: those of the import, the features and env::WriteDataset; nothing
// is left at `out` on error.
absl::StatusOr<std::string> ImportCsvToDatasetFile(
    const env::CsvImportOptions& options, const std::string& out);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_ENV_COMMANDS_H_
