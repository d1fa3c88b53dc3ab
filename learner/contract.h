// PolicyContract: everything a checkpoint or exported policy assumes about
// its inputs and outputs. Loading compares it field by field and refuses a
// mismatch with a message naming the field, so the original's "state
// dimension mismatch" crash cannot happen. JSON on disk; no torch here.
// Thread-compatible.
#ifndef RISTRETTO_LEARNER_CONTRACT_H_
#define RISTRETTO_LEARNER_CONTRACT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "env/env_options.h"
#include "learner/ppo_options.h"

namespace ristretto::learner {

inline constexpr int kContractVersion = 1;

struct PolicyContract {
  int contract_version = kContractVersion;
  // Observation layout: [cash, holdings × n, features × F per lookback row,
  // newest first]; obs_size = 1 + n + F·lookback.
  int obs_size = 0;
  int action_size = 0;  // n, one per asset, in [−1, 1] after tanh
  int lookback = 0;
  std::vector<std::string> asset_symbols;  // column order
  std::vector<std::string> feature_names;  // per asset
  std::string dataset_id;                  // SHA-256 of the dataset
  // Bar interval of the training data in seconds; 0 = not recorded
  // (contracts written before the field existed).
  int64_t interval_seconds = 0;
  env::EnvOptions env;     // every env knob
  NetworkOptions network;  // network shape and squashing

  // Builds the contract of a policy for `env` on a dataset.
  static PolicyContract Make(const env::EnvOptions& env_options,
                             const NetworkOptions& network,
                             std::vector<std::string> asset_symbols,
                             std::vector<std::string> feature_names,
                             std::string dataset_id);

  std::string ToJson() const;
  // Errors: kInvalidArgument for malformed JSON or missing fields;
  // kFailedPrecondition for a newer contract_version.
  static absl::StatusOr<PolicyContract> FromJson(const std::string& json);
};

// Returns OK if `found` (from a checkpoint) can be used where `expected` is
// required; otherwise kFailedPrecondition naming the first differing field
// and both values, e.g. "contract mismatch: obs_size is 106 in the
// checkpoint but 204 here". `check_dataset` = false allows a policy trained
// on one dataset to run on another with the same layout (backtests).
// interval_seconds is compared only when both contracts record one (0 is
// "not recorded").
absl::Status CheckContract(const PolicyContract& expected,
                           const PolicyContract& found, bool check_dataset);

// Whether a policy with `contract` can play a market with these assets (in
// column order), per-asset feature names and bar interval in seconds (a
// backtest on another dataset than the training one). Checks, in order:
// the contract's lookback against its env.lookback, asset_symbols and
// feature_names (name by name), action_size (one per asset), obs_size
// (1 + n + n·features·lookback) and interval_seconds. Errors:
// kFailedPrecondition naming the first differing field and both values,
// e.g. "contract mismatch: asset_symbols[1] is \"ETHUSD\" in the policy's
// contract but \"SOLUSD\" in the dataset". A contract without an interval
// (0, written before it was recorded) passes and sets `*warning` (if not
// null) to a one-line note; otherwise `*warning` is cleared.
absl::Status CheckContractForMarket(
    const PolicyContract& contract,
    const std::vector<std::string>& asset_symbols,
    const std::vector<std::string>& feature_names, int64_t interval_seconds,
    std::string* warning);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_CONTRACT_H_
