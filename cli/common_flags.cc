#include "cli/common_flags.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/secret_file.h"
#include "common/status_macros.h"
#include "ops/study.h"

ABSL_FLAG(std::string, db, "",
          "the coordinator's PostgreSQL database, a libpq connection string "
          "or URI without a password (default: $RISTRETTO_DB)");
ABSL_FLAG(std::string, out, "",
          "where the command writes: the dataset file (dataset import|synth), "
          "the root of the run directory (train), the output directory "
          "(backtest: default ./backtest; study export|report)");
ABSL_FLAG(std::string, dataset, "",
          "a dataset file (.rds, written by dataset import|synth)");
ABSL_FLAG(std::string, data_dir, "",
          "the data directory: a registered dataset is copied to "
          "DIR/datasets/<id>.rds (dataset import|synth --db); everything of "
          "`up` (default: ristretto-data)");
ABSL_FLAG(std::string, study, "",
          "train: the study name in the run directory (default: local); up: "
          "the study file (default: deploy/studies/small.yaml, or a built-in "
          "study for --csv-dir/--dataset)");
ABSL_FLAG(std::string, export, "",
          "the directory the best policy is exported to (policy.pt + "
          "contract.json; up: default DATA_DIR/best-policy)");
ABSL_FLAG(std::string, interval, "",
          "the bar interval, e.g. 5m, 1h (dataset import and up --csv-dir: "
          "required; dataset synth: default 30m)");
ABSL_FLAG(std::optional<int64_t>, seed, std::nullopt,
          "random seed (default: 7 for env demo, 1 otherwise)");
ABSL_FLAG(std::optional<int64_t>, rows, std::nullopt,
          "bars of the generated market (default: 10000 for dataset synth, "
          "20000 for env bench, 6000 for env demo)");
ABSL_FLAG(std::optional<int64_t>, assets, std::nullopt,
          "assets of the generated market (default: 7)");
ABSL_FLAG(std::optional<int64_t>, lookback, std::nullopt,
          "bars of features in one observation (default: 1 for env bench, 2 "
          "for env demo)");
ABSL_FLAG(std::optional<int64_t>, copies, std::nullopt,
          "env copies stepped together (default: 1 for env replay, 1024 for "
          "env bench)");
ABSL_FLAG(double, predictability, 0.0,
          "strength of the signal planted in the synthetic market's volumes "
          "(0: none)");
// The CSV import: dataset import, up --csv-dir (and --interval above).
ABSL_FLAG(std::string, csv_dir, "",
          "the directory of per-asset CSV files (SYMBOL.csv: timestamp, open, "
          "high, low, close, volume)");
ABSL_FLAG(std::optional<int64_t>, max_ffill, std::nullopt,
          "forward-fill gaps of up to this many bars (default: 3; 0: never)");
ABSL_FLAG(std::string, on_long_gap, "",
          "a longer gap: split (a new domain starts after it; the default) "
          "or fail");
ABSL_FLAG(std::string, min_qty, "",
          "a CSV file of minimum order quantities (header "
          "symbol,min_order_qty; default: 0 for every asset)");
ABSL_FLAG(std::string, feature_set, "",
          "the features computed per asset: indicators (the default: the "
          "original 14) or portfolio (scale-free returns, trends and "
          "volatility up to 720 bars, no price level)");
ABSL_FLAG(std::optional<int64_t>, min_domain_rows, std::nullopt,
          "domains (gap-free stretches) with fewer rows are dropped "
          "(default: 2; <= 1 keeps every domain)");

namespace ristretto::cli {

absl::StatusOr<std::string> Required(const absl::Flag<std::string>& flag) {
  std::string value = absl::GetFlag(flag);
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "missing required --",
        absl::StrReplaceAll(absl::GetFlagReflectionHandle(flag).Name(),
                            {{"_", "-"}})));
  }
  return value;
}

absl::StatusOr<std::string> ResolveDsn() {
  const std::string dsn = absl::GetFlag(FLAGS_db);
  // A password on the command line is readable by every local user (ps);
  // one in $RISTRETTO_DB or libpq's passfile is not.
  RETURN_IF_ERROR(RefuseDsnPasswordOnCommandLine(dsn, "db"));
  if (!dsn.empty()) return dsn;
  const char* env = std::getenv("RISTRETTO_DB");
  if (env != nullptr && env[0] != '\0') return std::string(env);
  return absl::InvalidArgumentError(
      "no database given: pass --db DSN or set RISTRETTO_DB (a libpq "
      "connection string, e.g. \"host=/var/run/postgresql dbname=ristretto "
      "user=postgres\")");
}

absl::StatusOr<std::unique_ptr<coordinator::Store>> OpenStore() {
  ASSIGN_OR_RETURN(std::string dsn, ResolveDsn());
  return ops::ConnectStore(dsn);
}

}  // namespace ristretto::cli
