// The file side of `ristretto dataset …` (import, synth, info) and the CSV
// import `ristretto up --csv-dir` shares with `dataset import`: its flags,
// their checks and the import itself.
#ifndef RISTRETTO_CLI_DATASET_FILE_COMMANDS_H_
#define RISTRETTO_CLI_DATASET_FILE_COMMANDS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/command_line.h"
#include "common/flags.h"
#include "env/csv_import.h"
#include "env/features.h"

namespace ristretto::cli {

// The command line of `dataset VERB` for the verbs that write or read a
// dataset file: import, synth and info; std::nullopt for any other verb.
// import and synth also accept --db and --data-dir, which register the file
// written (dataset_commands.h, RunDatasetCommand).
std::optional<Command> DatasetFileCommand(const std::string& verb);

// Runs `dataset VERB` (import, synth, info) once ParseCommand has set its
// flags (`parsed`: its positional arguments). Prints what it did.
// Errors: kInvalidArgument for bad usage or input (exit status 2), others.
absl::Status RunDatasetFileCommand(const std::string& verb,
                                   const ParsedCommandLine& parsed);

// The flags of a CSV import, read by `dataset import` and `up --csv-dir`:
// --csv-dir, --interval, --max-ffill, --on-long-gap, --min-qty,
// --min-domain-rows.
FlagFilter CsvImportFlags();

// The import options those flags give: --csv-dir and --interval required,
// --max-ffill (default env::kDefaultMaxFfillBars), --on-long-gap split|fail
// (default split), --min-qty, --min-domain-rows (default 2). Errors:
// kInvalidArgument naming the flag.
absl::StatusOr<env::CsvImportOptions> CsvImportOptionsFromFlags();

// kInvalidArgument "--FLAG is an import option: it needs --csv-dir" for the
// first import flag besides --csv-dir that the command line `parsed` set,
// with an empty value (--interval=) too.
absl::Status CheckNoCsvImportFlags(const ParsedCommandLine& parsed);

// What `dataset import` does after parsing its flags, so `up --csv-dir`
// takes the same path: imports (env::ImportCsvDirectory), prints the import
// report, computes the features, writes the dataset to `out` atomically and
// prints its summary (`dataset info`). Returns the dataset id.
// Errors: those of the import, the features and env::WriteDataset; nothing
// is left at `out` on error.
absl::StatusOr<std::string> ImportCsvToDatasetFile(
    const env::CsvImportOptions& options, env::FeatureSet feature_set,
    const std::string& out);

// The feature set an import computes: --feature-set, or
// kDefaultImportFeatureSet. kInvalidArgument for an unknown name.
// The original indicators: on the real hourly data they gave a quarter of
// the portfolio set's turnover and a better CV score at the same trial
// parameters (docs/env_actions.md, 2026-12-07).
inline constexpr env::FeatureSet kDefaultImportFeatureSet =
    env::FeatureSet::kIndicators;
absl::StatusOr<env::FeatureSet> FeatureSetFromFlags();

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_DATASET_FILE_COMMANDS_H_
