// The flags of the `ristretto` tool that several subcommands read, each
// declared once (cli/common_flags.cc). A subcommand lets them onto its
// command line by naming them in its filter (cli/command_line.h, FlagsOf);
// flags only one subcommand reads are declared in that subcommand's file.
// Where subcommands give one flag different defaults, the flag has none
// (std::optional, or empty text) and each subcommand applies its own; its
// help says which.
#ifndef RISTRETTO_CLI_COMMON_FLAGS_H_
#define RISTRETTO_CLI_COMMON_FLAGS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "coordinator/store/store.h"

// Files and directories.
ABSL_DECLARE_FLAG(std::string, db);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, dataset);
ABSL_DECLARE_FLAG(std::string, data_dir);
ABSL_DECLARE_FLAG(std::string, study);
ABSL_DECLARE_FLAG(std::string, export);
// Markets (dataset synth, env bench|demo, train).
ABSL_DECLARE_FLAG(std::string, interval);
ABSL_DECLARE_FLAG(std::string, feature_set);
ABSL_DECLARE_FLAG(std::optional<int64_t>, seed);
ABSL_DECLARE_FLAG(std::optional<int64_t>, rows);
ABSL_DECLARE_FLAG(std::optional<int64_t>, assets);
ABSL_DECLARE_FLAG(std::optional<int64_t>, lookback);
ABSL_DECLARE_FLAG(std::optional<int64_t>, copies);
ABSL_DECLARE_FLAG(double, predictability);
// The CSV import (dataset import, up --csv-dir; with --interval).
ABSL_DECLARE_FLAG(std::string, csv_dir);
ABSL_DECLARE_FLAG(std::optional<int64_t>, max_ffill);
ABSL_DECLARE_FLAG(std::string, on_long_gap);
ABSL_DECLARE_FLAG(std::string, min_qty);
ABSL_DECLARE_FLAG(std::optional<int64_t>, min_domain_rows);

namespace ristretto::cli {

// The text of a string flag the command cannot do without;
// kInvalidArgument "missing required --NAME" when it is empty.
absl::StatusOr<std::string> Required(const absl::Flag<std::string>& flag);

// The database of the study and dataset commands: --db DSN, else
// $RISTRETTO_DB. A password on the command line is refused (every local
// user can read argv); kInvalidArgument when neither is given.
absl::StatusOr<std::string> ResolveDsn();

// The store at ResolveDsn(), connected and migrated (ops::ConnectStore).
absl::StatusOr<std::unique_ptr<coordinator::Store>> OpenStore();

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_COMMON_FLAGS_H_
