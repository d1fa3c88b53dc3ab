#include "env/market_data.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace ristretto::env {

absl::StatusOr<std::shared_ptr<const MarketData>> MarketData::FromDataset(
    const Dataset& dataset) {
  if (absl::Status s = dataset.Validate(); !s.ok()) return s;
  if (dataset.features.empty()) {
    return absl::InvalidArgumentError(
        "dataset has no features; compute them before building an env");
  }
  auto market = std::make_shared<MarketData>();
  market->num_rows = dataset.num_rows();
  market->num_assets = dataset.num_assets();
  market->num_features = dataset.num_features();
  market->price = dataset.ClosePrices();
  market->tech = dataset.features;
  // The volume column of the bars (forward-filled bars carry volume 0).
  const int n = dataset.num_assets();
  market->volume.resize(static_cast<size_t>(dataset.num_rows()) * n);
  for (int64_t t = 0; t < dataset.num_rows(); ++t) {
    for (int i = 0; i < n; ++i) {
      market->volume[static_cast<size_t>(t) * n + i] =
          dataset.bar(t, i, kVolume);
    }
  }
  market->assets = dataset.assets;
  market->domains = dataset.domains;
  market->interval_seconds = dataset.interval_seconds;
  return std::shared_ptr<const MarketData>(std::move(market));
}

absl::Status MarketData::Validate() const {
  if (num_rows < 1 || num_assets < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "market needs rows and assets, got T=", num_rows, " n=", num_assets));
  }
  if (price.size() != static_cast<size_t>(num_rows) * num_assets) {
    return absl::InvalidArgumentError(
        absl::StrCat("price has ", price.size(), " values, expected T*n = ",
                     static_cast<size_t>(num_rows) * num_assets));
  }
  if (tech.size() != static_cast<size_t>(num_rows * num_features)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tech has ", tech.size(), " values, expected T*F = ",
                     static_cast<size_t>(num_rows * num_features)));
  }
  if (assets.size() != static_cast<size_t>(num_assets)) {
    return absl::InvalidArgumentError(
        absl::StrCat("market has ", assets.size(), " asset records for ",
                     num_assets, " price columns"));
  }
  for (size_t k = 0; k < price.size(); ++k) {
    if (!std::isfinite(price[k]) || price[k] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("price of asset ", k % num_assets, " at row ",
                       k / num_assets, " is ", price[k]));
    }
  }
  if (!volume.empty() && volume.size() != price.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("volume has ", volume.size(),
                     " values, expected 0 (unknown) or T*n = ", price.size()));
  }
  for (size_t k = 0; k < volume.size(); ++k) {
    if (!std::isfinite(volume[k]) || volume[k] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("volume of asset ", k % num_assets, " at row ",
                       k / num_assets, " is ", volume[k], " (must be >= 0)"));
    }
  }
  for (size_t k = 0; k < tech.size(); ++k) {
    if (!std::isfinite(tech[k])) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", k % num_features, " at row ",
                       k / num_features, " is not finite"));
    }
  }
  int64_t expected = 0;
  for (const Domain& d : domains) {
    if (d.begin != expected || d.end <= d.begin) {
      return absl::InvalidArgumentError(
          "market domains must tile [0, T) in order");
    }
    expected = d.end;
  }
  if (expected != num_rows) {
    return absl::InvalidArgumentError(
        "market domains must tile [0, T) in order");
  }
  return absl::OkStatus();
}

}  // namespace ristretto::env
