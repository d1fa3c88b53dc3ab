// JSON form of TrainerOptions: how the coordinator stores a run's
// configuration (runs.config_json) and how it travels to a learner.
// Pure functions; thread-safe.
//
// Layout: one object with every field of TrainerOptions under its C++ name;
// `env`, `network` and `ppo` are nested objects with every field of
// EnvOptions, NetworkOptions and PpoOptions; enums are their study-file
// names ("shaped", "relu", "tanh_corrected", …); domains are
// [[begin, end], …]; `seed` is an unsigned 64-bit integer. Doubles are
// written with the shortest text that reads back to the same bits, so
// TrainerOptionsFromJson(TrainerOptionsToJson(o)) == o field for field.
#ifndef RISTRETTO_LEARNER_RUN_OPTIONS_JSON_H_
#define RISTRETTO_LEARNER_RUN_OPTIONS_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "learner/run_options.h"

namespace ristretto::learner {

// Returns the compact JSON text of every field of `o`. Non-finite doubles
// (which no valid option has) are written as null and refused on reading.
std::string TrainerOptionsToJson(const TrainerOptions& o);

// Parses the text written by TrainerOptionsToJson. Fields left out keep
// their defaults. Values are not range-checked here (call the Validate()
// methods for that). Errors (kInvalidArgument): malformed JSON, an unknown
// field, or a field of the wrong type or outside its C++ type's range; the
// message names the field by its path, e.g. "ppo.epochs".
absl::StatusOr<TrainerOptions> TrainerOptionsFromJson(const std::string& json);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_OPTIONS_JSON_H_
