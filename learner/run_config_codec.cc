#include "learner/run_config_codec.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/options_schema.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "google/protobuf/util/json_util.h"
#include "learner/run_options_json.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

using v1::RunOptionValue;

// Schema options that travel as typed RunConfig fields, and the field.
struct TypedOption {
  std::string_view option;
  std::string_view field;
};
constexpr TypedOption kTypedOptions[] = {
    {"width", "RunConfig.hidden_layers"},
    {"layers", "RunConfig.hidden_layers"},
    {"seed", "RunConfig.seed"},
};

const TypedOption* FindTyped(std::string_view name) {
  for (const TypedOption& t : kTypedOptions) {
    if (t.option == name) return &t;
  }
  return nullptr;
}

absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

// The value case that carries each schema type.
RunOptionValue::ValueCase CaseOf(OptionType type) {
  switch (type) {
    case OptionType::kFloat:
      return RunOptionValue::kNumber;
    case OptionType::kInt:
      return RunOptionValue::kInteger;
    case OptionType::kBool:
      return RunOptionValue::kFlag;
    case OptionType::kChoice:
      return RunOptionValue::kChoice;
  }
  return RunOptionValue::VALUE_NOT_SET;
}

const char* CaseName(RunOptionValue::ValueCase c) {
  switch (c) {
    case RunOptionValue::kNumber:
      return "a number";
    case RunOptionValue::kInteger:
      return "an integer";
    case RunOptionValue::kFlag:
      return "a flag";
    case RunOptionValue::kChoice:
      return "a choice";
    case RunOptionValue::VALUE_NOT_SET:
      break;
  }
  return "nothing";
}

// The option's value from GetRunOption's canonical text (numbers as the
// shortest text that reads back exactly, so no bit is lost).
RunOptionValue EncodeOption(const OptionSpec& spec, const std::string& text) {
  RunOptionValue v;
  v.set_name(std::string(spec.name));
  switch (spec.type) {
    case OptionType::kFloat: {
      double d = 0;
      // "nan" / "inf" parse too; the decoder refuses them.
      if (!absl::SimpleAtod(text, &d)) d = std::nan("");
      v.set_number(d);
      break;
    }
    case OptionType::kInt: {
      int64_t i = 0;
      (void)absl::SimpleAtoi(text, &i);
      v.set_integer(i);
      break;
    }
    case OptionType::kBool:
      v.set_flag(text == "true");
      break;
    case OptionType::kChoice:
      v.set_choice(text);
      break;
  }
  return v;
}

// The value as SetRunOption's text; the case was checked against the type.
std::string OptionText(const RunOptionValue& v) {
  switch (v.value_case()) {
    case RunOptionValue::kNumber:
      return FormatOptionNumber(v.number());
    case RunOptionValue::kInteger:
      return absl::StrCat(v.integer());
    case RunOptionValue::kFlag:
      return v.flag() ? "true" : "false";
    case RunOptionValue::kChoice:
      return v.choice();
    case RunOptionValue::VALUE_NOT_SET:
      break;
  }
  return "";
}

absl::Status ApplyOption(const RunOptionValue& v, int index,
                         std::set<std::string>* seen, TrainerOptions* o) {
  if (v.name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run option #", index, " has no name"));
  }
  const std::string shown = EscapeForMessage(v.name());
  const OptionSpec* spec = FindOption(v.name());
  if (spec == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown run option '", shown, "'"));
  }
  if (const TypedOption* typed = FindTyped(spec->name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run option '", shown, "' travels as ", View(typed->field),
                     ", not in RunConfig.options"));
  }
  if (!seen->insert(v.name()).second) {
    return absl::InvalidArgumentError(
        absl::StrCat("run option '", shown, "' is given twice"));
  }
  if (v.value_case() == RunOptionValue::VALUE_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("run option '", shown, "' has no value"));
  }
  const RunOptionValue::ValueCase want = CaseOf(spec->type);
  if (v.value_case() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("run option '", shown, "' must be ", CaseName(want),
                     ", got ", CaseName(v.value_case())));
  }
  // SetRunOption checks the range (finite numbers) and the choices.
  return SetRunOption(v.name(), OptionText(v), o);
}

absl::StatusOr<std::vector<int>> HiddenWidths(
    const google::protobuf::RepeatedField<int32_t>& widths,
    absl::string_view field) {
  const OptionSpec& width = *FindOption("width");
  const OptionSpec& layers = *FindOption("layers");
  if (static_cast<double>(widths.size()) > layers.high) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " has ", widths.size(), " layers, more than the schema's `",
        View(layers.name), "` allows (", FormatOptionNumber(layers.high), ")"));
  }
  std::vector<int> out;
  for (int i = 0; i < widths.size(); ++i) {
    if (!InOptionRange(width, widths[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "] = ", widths[i], " is outside ",
          OptionRangeText(width), " (the schema's `", View(width.name), "`)"));
    }
    out.push_back(widths[i]);
  }
  return out;
}

absl::StatusOr<std::vector<env::Domain>> Domains(
    const google::protobuf::RepeatedPtrField<v1::RowRange>& ranges,
    absl::string_view field) {
  std::vector<env::Domain> out;
  for (int i = 0; i < ranges.size(); ++i) {
    const v1::RowRange& r = ranges[i];
    if (r.begin() < 0 || r.end() < r.begin()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "] = [", r.begin(), ", ", r.end(),
                       ") must have 0 <= begin <= end"));
    }
    out.push_back(env::Domain{r.begin(), r.end()});
  }
  return out;
}

void AddDomains(const std::vector<env::Domain>& domains,
                google::protobuf::RepeatedPtrField<v1::RowRange>* out) {
  for (const env::Domain& d : domains) {
    v1::RowRange* r = out->Add();
    r->set_begin(d.begin);
    r->set_end(d.end);
  }
}

std::string AutocastName(AutocastMode m) {
  switch (m) {
    case AutocastMode::kOff:
      return "off";
    case AutocastMode::kBf16:
      return "bf16";
    case AutocastMode::kFp16:
      return "fp16";
  }
  return "off";
}

}  // namespace

v1::RunConfig TrainerOptionsToRunConfig(const TrainerOptions& o) {
  v1::RunConfig c;
  for (const OptionSpec& spec : kOptionSchema) {
    if (FindTyped(spec.name) != nullptr) continue;
    absl::StatusOr<std::string> text = GetRunOption(View(spec.name), o);
    // Every schema option has an accessor (tests/learner hold them equal).
    if (!text.ok()) DieUnknownRunOption(spec.name);
    *c.add_options() = EncodeOption(spec, *text);
  }
  v1::HiddenLayers* hidden = c.mutable_hidden_layers();
  hidden->mutable_policy()->Add(o.network.policy_hidden.begin(),
                                o.network.policy_hidden.end());
  hidden->mutable_value()->Add(o.network.value_hidden.begin(),
                               o.network.value_hidden.end());
  c.set_seed(o.seed);
  AddDomains(o.train_domains, c.mutable_train_domains());
  AddDomains(o.validation_domains, c.mutable_validation_domains());
  c.set_eval_every_env_steps(o.eval_every_env_steps);
  c.set_dataset_id(o.dataset_id);
  for (const std::string& f : o.feature_names) c.add_feature_names(f);
  c.set_objective(o.objective);
  c.set_lockbox_begin(o.lockbox_begin);
  c.set_lockbox_guard(o.lockbox_guard);
  c.set_final_evaluation(o.final_evaluation);
  c.set_run_dir(o.run_dir);
  c.set_resume(o.resume);
  c.set_action_clip(o.env.action_clip);
  c.set_device(o.ppo.device);
  c.set_allow_tf32(o.ppo.allow_tf32);
  c.set_autocast(AutocastName(o.ppo.autocast));
  return c;
}

absl::StatusOr<TrainerOptions> TrainerOptionsFromRunConfig(
    const v1::RunConfig& c) {
  TrainerOptions o;
  std::set<std::string> seen;
  for (int i = 0; i < c.options_size(); ++i) {
    RETURN_IF_ERROR(ApplyOption(c.options(i), i, &seen, &o));
  }
  if (c.has_hidden_layers()) {
    ASSIGN_OR_RETURN(o.network.policy_hidden,
                     HiddenWidths(c.hidden_layers().policy(),
                                  "RunConfig.hidden_layers.policy"));
    ASSIGN_OR_RETURN(o.network.value_hidden,
                     HiddenWidths(c.hidden_layers().value(),
                                  "RunConfig.hidden_layers.value"));
  }
  if (c.has_seed()) o.seed = c.seed();
  ASSIGN_OR_RETURN(o.train_domains,
                   Domains(c.train_domains(), "RunConfig.train_domains"));
  ASSIGN_OR_RETURN(
      o.validation_domains,
      Domains(c.validation_domains(), "RunConfig.validation_domains"));
  o.eval_every_env_steps = c.eval_every_env_steps();
  o.dataset_id = c.dataset_id();
  o.feature_names.assign(c.feature_names().begin(), c.feature_names().end());
  if (c.has_objective()) o.objective = c.objective();
  if (c.has_lockbox_begin()) o.lockbox_begin = c.lockbox_begin();
  if (c.has_lockbox_guard()) o.lockbox_guard = c.lockbox_guard();
  o.final_evaluation = c.final_evaluation();
  o.run_dir = c.run_dir();
  if (c.has_resume()) o.resume = c.resume();
  if (c.has_action_clip()) {
    if (!std::isfinite(c.action_clip()) || c.action_clip() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RunConfig.action_clip = ", FormatOptionNumber(c.action_clip()),
          " must be finite and > 0"));
    }
    o.env.action_clip = c.action_clip();
  }
  if (c.has_device()) o.ppo.device = c.device();
  if (c.has_allow_tf32()) o.ppo.allow_tf32 = c.allow_tf32();
  if (c.has_autocast()) {
    RETURN_IF_ERROR(Annotate(ParseAutocastMode(c.autocast(), &o.ppo.autocast),
                             "RunConfig.autocast"));
  }
  return o;
}

absl::StatusOr<std::string> TrainerOptionsToConfigJson(
    const TrainerOptions& o) {
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  std::string out;
  const auto s = google::protobuf::util::MessageToJsonString(
      TrainerOptionsToRunConfig(o), &out, print);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run config cannot be written as JSON: ", s.ToString()));
  }
  return out;
}

absl::StatusOr<TrainerOptions> TrainerOptionsFromConfigJson(
    const std::string& json) {
  const nlohmann::json j =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError("run options are not valid JSON");
  }
  if (!j.is_object() || !j.contains("options")) {
    return TrainerOptionsFromLegacyJson(json);
  }
  v1::RunConfig c;
  const auto s = google::protobuf::util::JsonStringToMessage(
      json, &c, google::protobuf::util::JsonParseOptions());
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run config JSON: ", s.ToString()));
  }
  return TrainerOptionsFromRunConfig(c);
}

}  // namespace ristretto::learner
