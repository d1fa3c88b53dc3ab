// ParamSpec and Params: a study's search space (one ParamSpec per searched
// parameter) and one point of it (parameter name -> canonical text), plus
// the small helpers that samplers, the study parser and the CLI share.
// Plain data and pure functions; thread-safe.
#ifndef RISTRETTO_COORDINATOR_CORE_SEARCH_SPACE_H_
#define RISTRETTO_COORDINATOR_CORE_SEARCH_SPACE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ristretto::coordinator {

enum class ParamKind { kFloat, kInt, kCategorical };

// One searched parameter. `name` is a name of the parameter registry
// (param_registry.h); the sampler only needs the fields below.
struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kFloat;
  // kFloat / kInt: the closed range [low, high]; low < high. kInt bounds are
  // whole numbers.
  double low = 0, high = 0;
  // Sample uniformly in log space (low > 0; kInt: low >= 1).
  bool log = false;
  // Values are low + k·step, k = 0, 1, …; (high − low) is a whole number of
  // steps. kInt: a whole number >= 1 (absent = 1). Not combined with log.
  std::optional<double> step;
  // kCategorical: the values, as canonical text, distinct, non-empty.
  std::vector<std::string> choices;
  // Conditional parameter: active only when params[parent] is one of
  // parent_values (so never when the parent is itself inactive). The parent
  // is a categorical parameter of the same space; empty = always active.
  std::string parent;
  std::vector<std::string> parent_values;
};

// One point of the space: name -> value as canonical text ("0.0003",
// "4096", "relu"). Inactive conditional parameters are absent.
using Params = std::map<std::string, std::string>;

// Returns the shortest decimal text that reads back to exactly `v`
// ("0.0003", "1e-06", "4096"); "nan"/"inf"/"-inf" for non-finite values.
std::string FormatDouble(double v);

// Returns the canonical text of a numeric value of `spec` (kFloat or kInt):
// kInt as a whole number ("512"); a stepped kFloat rounded to 12
// significant digits first, so low + k·step prints as "0.3", not
// "0.30000000000000004"; any other kFloat as FormatDouble.
std::string FormatValue(const ParamSpec& spec, double v);

// True when `spec` is active in `params` (unconditional, or its parent is
// present with one of parent_values).
bool IsActive(const ParamSpec& spec, const Params& params);

// Checks the structure of a space: names non-empty and distinct; every
// range, log range, step and choice list well formed; every parent a
// categorical parameter of the space whose choices include each of
// parent_values; no cycle of conditions. Returns kInvalidArgument naming the
// parameter and the problem.
absl::Status ValidateSpace(const std::vector<ParamSpec>& space);

// Returns indices into `space` in an order where every parent comes before
// its children (declaration order otherwise). Errors as ValidateSpace.
absl::StatusOr<std::vector<int>> SampleOrder(
    const std::vector<ParamSpec>& space);

// Stable 64-bit hash of `params` (FNV-1a over "name=value;" in key order);
// the same on every platform and run.
uint64_t HashParams(const Params& params);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_SEARCH_SPACE_H_
