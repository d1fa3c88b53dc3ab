#include "cli/dataset_commands.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "cli/dataset_file_commands.h"
#include "cli/study_views.h"
#include "cli/table.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "coordinator/store/store.h"
#include "env/dataset.h"
#include "ops/study.h"

namespace ristretto::cli {
namespace {

using coordinator::DatasetRow;
using coordinator::Store;
using ops::ConnectStore;
using ops::RegisterDataset;

constexpr char kDatasetUsage[] =
    "usage: ristretto dataset <command> [options]\n"
    "  import --csv-dir DIR --interval 5m --out FILE [import options]\n"
    "         [--db DSN --data-dir DIR]   import CSV files (and register)\n"
    "  synth --out FILE [--assets 7] [--rows 10000] [--interval 30m]\n"
    "         [--seed 1] [--predictability 0] [--db DSN --data-dir DIR]\n"
    "  info FILE                          a dataset file's summary\n"
    "  ls [--db DSN]                      the registered datasets\n"
    "ristretto dataset COMMAND --help lists a command's flags.\n";

// ---- dataset commands ------------------------------------------------------

absl::Status DatasetLs() {
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  ASSIGN_OR_RETURN(std::vector<DatasetRow> datasets, store->ListDatasets());
  if (datasets.empty()) {
    std::printf(
        "no datasets registered (ristretto dataset import ... --db DSN "
        "--data-dir DIR)\n");
    return absl::OkStatus();
  }
  Table table({"id", "symbols", "rows", "interval", "created", "path"});
  for (const DatasetRow& d : datasets) {
    table.AddRow({d.id, d.symbols, absl::StrCat(d.rows),
                  env::FormatInterval(d.interval_seconds),
                  FormatLocalTime(d.created_at), d.path});
  }
  std::fputs(table.Render().c_str(), stdout);
  return absl::OkStatus();
}

// `dataset import|synth … --db DSN --data-dir DIR`: connects first (a bad
// DSN fails before a long import), runs the command, then registers the
// file it wrote.
int DatasetWithRegistration(const std::string& verb,
                            const ParsedCommandLine& parsed) {
  absl::StatusOr<std::string> dsn = ResolveDsn();
  if (!dsn.ok()) return Fail(dsn.status());
  const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  if (data_dir.empty()) {
    return Fail(absl::InvalidArgumentError(
        "registering a dataset needs --data-dir DIR (it is copied to "
        "DIR/datasets/<id>.rds, where the coordinator serves it)"));
  }
  const absl::StatusOr<std::string> out = Required(FLAGS_out);
  if (!out.ok()) return Fail(out.status());
  absl::StatusOr<std::unique_ptr<Store>> store = ConnectStore(*dsn);
  if (!store.ok()) return Fail(store.status());
  const absl::Status status = RunDatasetFileCommand(verb, parsed);
  if (!status.ok()) return Fail(status);
  std::fflush(stdout);
  absl::StatusOr<DatasetRow> row = RegisterDataset(**store, *out, data_dir);
  if (!row.ok()) return Fail(row.status());
  std::printf("registered dataset %s (%s)\n", row->id.c_str(),
              row->path.c_str());
  return 0;
}

}  // namespace

int RunDatasetCommand(int argc, char** argv, int first) {
  std::string verb;
  if (const std::optional<int> exit_code =
          GroupVerb(argc, argv, first, kDatasetUsage, &verb)) {
    return *exit_code;
  }
  std::optional<Command> command = DatasetFileCommand(verb);
  if (verb == "ls") {
    command = Command{"dataset ls",
                      "usage: ristretto dataset ls [--db DSN]\n"
                      "Lists the datasets registered in the coordinator's "
                      "database.\n",
                      FlagsOf(FLAGS_db)};
  }
  if (!command.has_value()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unknown dataset command '", EscapeForMessage(verb),
                     "' (import, synth, info, ls)")));
  }
  ParsedCommandLine parsed;
  if (const std::optional<int> exit_code =
          ParseCommand(*command, argc, argv, first + 1, &parsed)) {
    return *exit_code;
  }
  if (verb == "ls") {
    const absl::Status status = DatasetLs();
    return status.ok() ? 0 : Fail(status);
  }
  if (!absl::GetFlag(FLAGS_db).empty() ||
      !absl::GetFlag(FLAGS_data_dir).empty()) {
    return DatasetWithRegistration(verb, parsed);
  }
  const absl::Status status = RunDatasetFileCommand(verb, parsed);
  return status.ok() ? 0 : Fail(status);
}

}  // namespace ristretto::cli
