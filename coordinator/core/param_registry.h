// The parameter registry: the names a study may search or fix — the
// searchable entries of the run-options schema (common/options_schema.h),
// which declares their types, ranges, defaults and docs — each mapped to
// the TrainerOptions field(s) that the env or the learner reads
// (learner::SetRunOption). A name that is not here, or whose option is not
// read in a study's configuration, rejects the study (study_config.h).
// Immutable tables and pure functions; thread-safe.
#ifndef RISTRETTO_COORDINATOR_CORE_PARAM_REGISTRY_H_
#define RISTRETTO_COORDINATOR_CORE_PARAM_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "learner/run_options.h"

namespace ristretto::coordinator {

// The C++ type of the option a parameter sets; it decides which ParamKinds
// a study may use for it (kInt: int or categorical of whole numbers;
// kDouble: float, int or categorical; kBool and kEnum: categorical).
enum class OptionType { kDouble, kInt, kBool, kEnum };

struct ParamInfo {
  std::string name;  // study-file name, e.g. "batch_size"
  OptionType type = OptionType::kDouble;
  std::string target;  // the field(s) set, e.g. "ppo.minibatch_size"
  std::string doc;     // one line: meaning and unit
  // kEnum: the accepted values; kBool: "true", "false".
  std::vector<std::string> values;
  // The option is read only when the parameter `read_when` (a kEnum or
  // kBool name of this registry) has one of `read_when_values`; empty =
  // always read. E.g. reward_scale is read only when reward_mode is
  // log_return.
  std::string read_when;
  std::vector<std::string> read_when_values;
  std::string read_when_reason;  // e.g. "only the log_return reward uses it"
};

// Every registered parameter, in a fixed documented order.
const std::vector<ParamInfo>& AllParams();

// Returns the entry for `name`, or nullptr.
const ParamInfo* FindParam(const std::string& name);

// Sets the option(s) behind `name` to `value` (canonical text, as in
// Params) with learner::SetRunOption (its header lists the mappings that
// are not one-to-one, e.g. batch_size -> ppo.minibatch_size). Errors
// (kInvalidArgument, message naming the parameter): unknown name (with the
// closest registered name as a hint), a value that does not parse as the
// option's type, or one outside the option's valid range. On error `o` is
// unchanged.
absl::Status ApplyParam(const std::string& name, const std::string& value,
                        learner::TrainerOptions* o);

// Returns the canonical text of the option(s) behind `name` in `o` (the
// inverse of ApplyParam; `width` reads the first policy layer, 0 if none).
// Errors: kInvalidArgument for an unknown name.
absl::StatusOr<std::string> GetParam(const std::string& name,
                                     const learner::TrainerOptions& o);

// kInvalidArgument "unknown parameter 'NAME' (did you mean 'X'?)".
absl::Status UnknownParamError(const std::string& name);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_PARAM_REGISTRY_H_
