// MarketData: the read-only price and feature matrices an env steps over,
// shared (never copied) by every env copy, vector env and thread.
// Thread-safe after construction (immutable).
#ifndef RISTRETTO_ENV_MARKET_DATA_H_
#define RISTRETTO_ENV_MARKET_DATA_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "env/dataset.h"

namespace ristretto::env {

struct MarketData {
  int64_t num_rows = 0;           // T
  int num_assets = 0;             // n
  int64_t num_features = 0;       // F (all assets together, asset-major)
  std::vector<double> price;      // T × n close prices
  std::vector<double> tech;       // T × F features
  std::vector<AssetMeta> assets;  // n; min order quantity keyed by symbol
  std::vector<Domain> domains;    // contiguous row blocks covering [0, T)
  // T × n bar volumes (base units), row per bar; empty when unknown (then
  // EnvOptions::max_volume_share must be 0).
  std::vector<double> volume;
  int64_t interval_seconds = 0;

  // Builds the env view of a dataset with computed features (one copy of the
  // close prices, features and bar volumes). Errors: kInvalidArgument if the
  // dataset is invalid or has no features.
  static absl::StatusOr<std::shared_ptr<const MarketData>> FromDataset(
      const Dataset& dataset);

  // Checks shapes and that prices are finite and >= 0, features finite, and
  // volume empty or T × n finite values >= 0. (Zero prices are allowed
  // here: the env skips trades at price 0.)
  absl::Status Validate() const;
};

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_MARKET_DATA_H_
