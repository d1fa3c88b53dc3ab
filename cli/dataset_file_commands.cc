#include "cli/dataset_file_commands.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "env/csv_import.h"
#include "env/dataset.h"
#include "env/features.h"
#include "env/synthetic.h"

// dataset synth.
ABSL_FLAG(double, signal_bars,
          ristretto::env::SyntheticMarketOptions{}.signal_bars,
          "persistence of the planted signal, >= 1: a run of equal signs "
          "lasts 2x this many bars on average (1: a fresh sign every bar)");

namespace ristretto::cli {
namespace {

using env::Dataset;

// ---- dataset ---------------------------------------------------------------

void PrintDatasetInfo(const Dataset& d, const std::string& id) {
  std::printf("dataset id      %s\n", id.c_str());
  std::printf("source          %s\n", d.source.c_str());
  std::printf("assets          %d\n", d.num_assets());
  for (const env::AssetMeta& a : d.assets) {
    std::printf("  %-12s min_order_qty %.10g\n", a.symbol.c_str(),
                a.min_order_qty);
  }
  std::printf("rows            %lld\n", static_cast<long long>(d.num_rows()));
  std::printf("interval        %s\n",
              env::FormatInterval(d.interval_seconds).c_str());
  if (d.num_rows() > 0) {
    std::printf("time range      %s .. %s\n",
                env::FormatTimestamp(d.timestamps.front()).c_str(),
                env::FormatTimestamp(d.timestamps.back()).c_str());
  }
  std::printf("domains         %zu\n", d.domains.size());
  for (size_t k = 0; k < d.domains.size() && k < 20; ++k) {
    const env::Domain& dom = d.domains[k];
    std::printf("  [%lld, %lld) %lld rows  %s .. %s\n",
                static_cast<long long>(dom.begin),
                static_cast<long long>(dom.end),
                static_cast<long long>(dom.size()),
                env::FormatTimestamp(d.timestamps[dom.begin]).c_str(),
                env::FormatTimestamp(d.timestamps[dom.end - 1]).c_str());
  }
  if (d.domains.size() > 20)
    std::printf("  ... %zu more\n", d.domains.size() - 20);
  std::printf("gaps filled     %lld bars\n",
              static_cast<long long>(d.gaps_filled));
  std::printf("warm-up dropped %lld rows\n",
              static_cast<long long>(d.warmup_rows_dropped));
  std::printf("features        %d per asset, %lld columns\n",
              d.features_per_asset(), static_cast<long long>(d.num_features()));
  std::string names;
  for (const std::string& f : d.feature_names) absl::StrAppend(&names, " ", f);
  std::printf("  %s\n", names.c_str());
}

absl::Status DatasetImport() {
  ASSIGN_OR_RETURN(env::CsvImportOptions options, CsvImportOptionsFromFlags());
  ASSIGN_OR_RETURN(const env::FeatureSet features, FeatureSetFromFlags());
  ASSIGN_OR_RETURN(std::string out, Required(FLAGS_out));
  return ImportCsvToDatasetFile(options, features, out).status();
}

absl::Status DatasetSynth() {
  env::SyntheticMarketOptions o;
  ASSIGN_OR_RETURN(std::string out, Required(FLAGS_out));
  o.num_assets =
      static_cast<int>(absl::GetFlag(FLAGS_assets).value_or(o.num_assets));
  o.num_rows = absl::GetFlag(FLAGS_rows).value_or(o.num_rows);
  std::string interval = absl::GetFlag(FLAGS_interval);
  ASSIGN_OR_RETURN(o.interval_seconds,
                   env::ParseInterval(interval.empty() ? "30m" : interval));
  o.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed).value_or(1));
  o.predictability = absl::GetFlag(FLAGS_predictability);
  o.signal_bars = absl::GetFlag(FLAGS_signal_bars);
  ASSIGN_OR_RETURN(Dataset dataset, env::GenerateSyntheticDataset(o));
  RETURN_IF_ERROR(env::WriteDataset(dataset, out));
  std::printf("wrote %s\n", out.c_str());
  PrintDatasetInfo(dataset, dataset.ComputeId());
  return absl::OkStatus();
}

absl::Status DatasetInfo(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError("usage: ristretto dataset info FILE");
  }
  ASSIGN_OR_RETURN(Dataset dataset, env::ReadDataset(parsed.positional[0]));
  PrintDatasetInfo(dataset, dataset.ComputeId());
  return absl::OkStatus();
}

}  // namespace

FlagFilter CsvImportFlags() {
  return FlagsOf(FLAGS_csv_dir, FLAGS_interval, FLAGS_max_ffill,
                 FLAGS_on_long_gap, FLAGS_min_qty, FLAGS_min_domain_rows,
                 FLAGS_feature_set);
}

absl::Status CheckNoCsvImportFlags(const ParsedCommandLine& parsed) {
  // Given is what counts, not the value: an empty --interval= is refused
  // like --interval 5m.
  for (const absl::CommandLineFlag* flag :
       {&absl::GetFlagReflectionHandle(FLAGS_interval),
        &absl::GetFlagReflectionHandle(FLAGS_max_ffill),
        &absl::GetFlagReflectionHandle(FLAGS_on_long_gap),
        &absl::GetFlagReflectionHandle(FLAGS_min_qty),
        &absl::GetFlagReflectionHandle(FLAGS_min_domain_rows),
        &absl::GetFlagReflectionHandle(FLAGS_feature_set)}) {
    if (parsed.given.count(std::string(flag->Name())) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", absl::StrReplaceAll(flag->Name(), {{"_", "-"}}),
                       " is an import option: it needs --csv-dir"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<env::CsvImportOptions> CsvImportOptionsFromFlags() {
  env::CsvImportOptions options;
  ASSIGN_OR_RETURN(options.csv_dir, Required(FLAGS_csv_dir));
  ASSIGN_OR_RETURN(std::string interval, Required(FLAGS_interval));
  ASSIGN_OR_RETURN(options.interval_seconds, env::ParseInterval(interval));
  options.max_ffill_bars =
      absl::GetFlag(FLAGS_max_ffill).value_or(env::kDefaultMaxFfillBars);
  std::string policy = absl::GetFlag(FLAGS_on_long_gap);
  if (policy.empty()) policy = "split";
  if (policy == "split") {
    options.on_long_gap = env::LongGapPolicy::kSplit;
  } else if (policy == "fail") {
    options.on_long_gap = env::LongGapPolicy::kFail;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--on-long-gap must be split or fail, got '",
                     EscapeForMessage(policy), "'"));
  }
  options.min_qty_file = absl::GetFlag(FLAGS_min_qty);
  options.min_domain_rows = absl::GetFlag(FLAGS_min_domain_rows).value_or(2);
  return options;
}

absl::StatusOr<env::FeatureSet> FeatureSetFromFlags() {
  const std::string name = absl::GetFlag(FLAGS_feature_set);
  if (name.empty()) return kDefaultImportFeatureSet;
  absl::StatusOr<env::FeatureSet> set = env::ParseFeatureSet(name);
  if (!set.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--feature-set: ",
                     EscapeForMessage(std::string(set.status().message()))));
  }
  return set;
}

absl::StatusOr<std::string> ImportCsvToDatasetFile(
    const env::CsvImportOptions& options, env::FeatureSet feature_set,
    const std::string& out) {
  env::CsvImportReport report;
  absl::StatusOr<Dataset> imported = env::ImportCsvDirectory(options, &report);
  if (!imported.ok()) {
    // What was counted before the failure helps find the bad file.
    if (report.rows_read_per_asset.empty()) return imported.status();
    std::printf("import report (failed)\n%s",
                env::FormatCsvImportReport(report).c_str());
    std::fflush(stdout);
    return imported.status();
  }
  Dataset dataset = *std::move(imported);
  std::printf("import report (forward-fill gaps of up to %lld bars)\n%s",
              static_cast<long long>(options.max_ffill_bars),
              env::FormatCsvImportReport(report).c_str());
  const int64_t rows_before = dataset.num_rows();
  RETURN_IF_ERROR(Annotate(env::ComputeFeatures(&dataset, feature_set),
                           "computing features"));
  std::printf(
      "features: %s (%zu per asset), dropped %lld warm-up rows "
      "(%lld -> %lld)\n",
      env::FeatureSetName(feature_set), dataset.feature_names.size(),
      static_cast<long long>(rows_before - dataset.num_rows()),
      static_cast<long long>(rows_before),
      static_cast<long long>(dataset.num_rows()));
  RETURN_IF_ERROR(env::WriteDataset(dataset, out));
  std::printf("wrote %s\n", out.c_str());
  const std::string id = dataset.ComputeId();
  PrintDatasetInfo(dataset, id);
  std::fflush(stdout);
  return id;
}

std::optional<Command> DatasetFileCommand(const std::string& verb) {
  if (verb == "import") {
    return Command{
        "dataset import",
        "usage: ristretto dataset import --csv-dir DIR --interval 5m --out "
        "FILE\n"
        "           [--max-ffill 3] [--on-long-gap split|fail] [--min-qty "
        "FILE]\n"
        "           [--min-domain-rows 2] [--feature-set "
        "indicators|portfolio]\n"
        "           [--db DSN --data-dir DIR]\n"
        "Imports per-asset CSV files into a dataset file (features computed);"
        " with --db\nor --data-dir also registers it in the coordinator's "
        "database.\n",
        AnyOf(
            {CsvImportFlags(), FlagsOf(FLAGS_out, FLAGS_db, FLAGS_data_dir)})};
  }
  if (verb == "synth") {
    return Command{
        "dataset synth",
        "usage: ristretto dataset synth --out FILE [--assets 7] [--rows "
        "10000]\n"
        "           [--interval 30m] [--seed 1] [--predictability 0] "
        "[--signal-bars 1]\n"
        "           [--db DSN --data-dir DIR]\n"
        "Writes a synthetic market (deterministic by seed) to a dataset file;"
        " with --db\nor --data-dir also registers it in the coordinator's "
        "database.\n",
        FlagsOf(FLAGS_out, FLAGS_assets, FLAGS_rows, FLAGS_interval, FLAGS_seed,
                FLAGS_predictability, FLAGS_signal_bars, FLAGS_db,
                FLAGS_data_dir)};
  }
  if (verb == "info") {
    return Command{"dataset info",
                   "usage: ristretto dataset info FILE\n"
                   "Prints a dataset file's id, assets, rows, domains and "
                   "features.\n",
                   FlagsOf(), /*max_positional=*/1};
  }
  return std::nullopt;
}

absl::Status RunDatasetFileCommand(const std::string& verb,
                                   const ParsedCommandLine& parsed) {
  if (verb == "import") return DatasetImport();
  if (verb == "synth") return DatasetSynth();
  if (verb == "info") return DatasetInfo(parsed);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dataset command '", EscapeForMessage(verb), "'"));
}

}  // namespace ristretto::cli
