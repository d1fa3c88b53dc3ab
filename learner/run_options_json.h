// The JSON layout runs.config_json held before v1::RunConfig (see
// learner/run_config_codec.h, which writes RunConfig's JSON mapping now):
// read only, so databases written by earlier versions still load.
// Pure functions; thread-safe.
//
// Layout: one object with every field of TrainerOptions under its C++ name;
// `env`, `network` and `ppo` are nested objects with every field of
// EnvOptions, NetworkOptions and PpoOptions; enums are their study-file
// names ("shaped", "relu", "tanh_corrected", …); domains are
// [[begin, end], …]; `seed` is an unsigned 64-bit integer; doubles were
// written with the shortest text that reads back to the same bits.
#ifndef RISTRETTO_LEARNER_RUN_OPTIONS_JSON_H_
#define RISTRETTO_LEARNER_RUN_OPTIONS_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "learner/run_options.h"

namespace ristretto::learner {

// Parses a document of the older layout. Fields left out keep their
// defaults. Values are not range-checked here (call the Validate() methods
// for that). Errors (kInvalidArgument): malformed JSON, an unknown field, or
// a field of the wrong type or outside its C++ type's range (null, written
// for a non-finite double, included); the message names the field by its
// path, e.g. "ppo.epochs".
absl::StatusOr<TrainerOptions> TrainerOptionsFromLegacyJson(
    const std::string& json);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_OPTIONS_JSON_H_
