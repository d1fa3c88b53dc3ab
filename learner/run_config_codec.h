// The typed form of TrainerOptions (v1::RunConfig, proto/run_config.proto):
// how the coordinator sends a run to a learner (RunLease.run_config) and
// stores it (runs.config_json, as protobuf's JSON mapping of RunConfig).
// Pure functions; thread-safe; no torch.
//
// Schema options (common/options_schema.h) travel by name through
// GetRunOption / SetRunOption, so an option added to the schema travels
// without touching this codec. Three schema options travel as typed fields
// instead: `width` and `layers` (RunConfig.hidden_layers: the two nets may
// differ) and `seed` (a study derives full 64-bit seeds).
//
// Round trip: TrainerOptionsFromRunConfig(TrainerOptionsToRunConfig(o)) == o
// field for field for every `o` whose schema fields hold values their
// options can express (every TrainerOptions built from defaults, flags or a
// study). A field set outside its option comes back as its option reads it:
// env.gamma as ppo.gamma (one discount), env.norm_* as 2^-k with
// k = -log2(norm).
#ifndef RISTRETTO_LEARNER_RUN_CONFIG_CODEC_H_
#define RISTRETTO_LEARNER_RUN_CONFIG_CODEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "learner/run_options.h"
#include "proto/run_config.pb.h"

namespace ristretto::learner {

// Every schema option (but the three above) in schema order, and every
// typed field.
v1::RunConfig TrainerOptionsToRunConfig(const TrainerOptions& o);

// TrainerOptions{} (the schema defaults) with `config` applied. Every value
// is checked against the schema; parts left out keep their defaults.
// Errors (kInvalidArgument), naming the option or field:
//   an option without a name or without a value; a name the schema does not
//   have ("unknown run option 'X'"); one of width/layers/seed ("... travels
//   as RunConfig.hidden_layers"); a name given twice; a value of the wrong
//   type ("run option 'epochs' must be an integer, got a number"); a value
//   outside the schema's range or choices (SetRunOption's message); a hidden
//   layer width or count outside the schema's `width` / `layers` ranges; a
//   row range with begin < 0 or end < begin; an action_clip that is not
//   finite and > 0; an autocast other than off, bf16, fp16.
absl::StatusOr<TrainerOptions> TrainerOptionsFromRunConfig(
    const v1::RunConfig& config);

// The text stored in runs.config_json: TrainerOptionsToRunConfig(o) in
// protobuf's JSON mapping, field names as in the .proto (64-bit integers
// as strings, as the mapping writes them). Errors (kInvalidArgument): a
// string field that is not UTF-8 (protobuf strings must be).
absl::StatusOr<std::string> TrainerOptionsToConfigJson(const TrainerOptions& o);

// Reads runs.config_json: a document with an "options" member is a
// RunConfig (TrainerOptionsToConfigJson); any other object is the layout
// rows held before RunConfig existed (learner/run_options_json.h), still
// read so older databases load. Errors (kInvalidArgument): not JSON, JSON
// that is not a RunConfig, and TrainerOptionsFromRunConfig's / the older
// reader's errors.
absl::StatusOr<TrainerOptions> TrainerOptionsFromConfigJson(
    const std::string& json);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_RUN_CONFIG_CODEC_H_
