// Dataset: n assets × T aligned bars (OHLCV) plus per-asset features, the
// unit of market data in ristretto. Identified by the SHA-256 of its content
// (the dataset id). The binary file format is documented in
// docs/dataset_format.md.
// Not thread-safe to mutate; a const Dataset may be shared by any threads.
#ifndef RISTRETTO_ENV_DATASET_H_
#define RISTRETTO_ENV_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ristretto::env {

// Indices of the five raw bar fields in Dataset::bars.
enum BarField : int { kOpen = 0, kHigh = 1, kLow = 2, kClose = 3, kVolume = 4 };
inline constexpr int kNumBarFields = 5;

// A half-open range [begin, end) of rows that are contiguous in time: an
// episode never crosses a domain boundary.
struct Domain {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const Domain& o) const {
    return begin == o.begin && end == o.end;
  }
};

// Per-asset metadata, keyed by symbol (never by column position).
struct AssetMeta {
  std::string symbol;
  // Smallest order the venue accepts, in coins, safety factor included.
  double min_order_qty = 0.0;
};

// Column-major-by-row layout throughout: row t of an (T × k) block starts at
// t·k. All vectors are sized consistently; Validate() checks it.
struct Dataset {
  // Asset metadata in column order (symbols sorted ascending by importers).
  std::vector<AssetMeta> assets;
  // Bar interval in seconds (e.g. 300 for "5m").
  int64_t interval_seconds = 0;
  // Bar open time of each row, epoch seconds, strictly increasing.
  std::vector<int64_t> timestamps;
  // T × n × 5 raw bars: bars[(t·n + i)·5 + field].
  std::vector<double> bars;
  // Names of the per-asset features (k of them; F = n·k columns).
  std::vector<std::string> feature_names;
  // T × F features, asset-major within a row: features[t·F + i·k + j] is
  // feature j of asset i. Empty until features are computed.
  std::vector<double> features;
  // Contiguous blocks of rows, ascending, non-overlapping, covering [0, T).
  std::vector<Domain> domains;
  // Provenance counters, reported by `ristretto dataset info`.
  int64_t gaps_filled = 0;          // bars forward-filled by the importer
  int64_t warmup_rows_dropped = 0;  // rows removed by feature warm-up
  std::string source;               // free text, e.g. "synthetic seed=7"

  int64_t num_rows() const { return static_cast<int64_t>(timestamps.size()); }
  int num_assets() const { return static_cast<int>(assets.size()); }
  int features_per_asset() const {
    return static_cast<int>(feature_names.size());
  }
  int64_t num_features() const {
    return static_cast<int64_t>(num_assets()) * features_per_asset();
  }
  double bar(int64_t t, int asset, BarField field) const {
    return bars[(t * num_assets() + asset) * kNumBarFields + field];
  }
  double close(int64_t t, int asset) const { return bar(t, asset, kClose); }

  // Returns the T × n close prices (the env's price matrix).
  std::vector<double> ClosePrices() const;

  // Checks shapes, ordering, domains and that every price is finite and > 0
  // and every feature finite. Returns kInvalidArgument naming the problem.
  absl::Status Validate() const;

  // Returns the hex SHA-256 of the canonical content (everything written by
  // Write except the hash itself): the dataset id.
  std::string ComputeId() const;
};

// Writes `dataset` to `path` atomically (temp file + rename).
// Errors: kInvalidArgument if the dataset is invalid; kInternal on I/O.
absl::Status WriteDataset(const Dataset& dataset, const std::string& path);

// Reads a dataset file and verifies its hash. The header is checked from
// the first 48 bytes before anything else is read, so /dev/zero or a huge
// non-dataset file is refused at once; a path that is not a regular file
// (FIFO, device, directory, socket) is refused without being opened.
// Errors: kNotFound (no file), kInvalidArgument (not a regular file),
// kDataLoss (truncated, bad magic, hash mismatch), kUnimplemented (newer
// format version), other codes from errno on read failure.
absl::StatusOr<Dataset> ReadDataset(const std::string& path);

// Reads only the id recorded in a dataset file's header (no hash check).
// Same header checks and errors as ReadDataset.
absl::StatusOr<std::string> ReadDatasetId(const std::string& path);

// Parses an interval such as "30s", "5m", "1h", "1d" into seconds.
absl::StatusOr<int64_t> ParseInterval(const std::string& text);
// Formats seconds as the shortest such string ("5m").
std::string FormatInterval(int64_t seconds);

// Bars per year for the interval (365-day crypto year), used to annualise.
double BarsPerYear(int64_t interval_seconds);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_DATASET_H_
