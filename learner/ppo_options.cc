#include "learner/ppo_options.h"

#include <cstddef>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ristretto::learner {
namespace {

// The schema entry `name`; every name used here is in the schema (a test
// validates every field, so a typo fails there, not in production).
const OptionSpec& Spec(std::string_view name) { return *FindOption(name); }

absl::Status CheckWidths(const char* name, const std::vector<int>& widths) {
  const OptionSpec& layers = Spec("layers");
  if (static_cast<double>(widths.size()) > layers.high) {
    return absl::InvalidArgumentError(
        absl::StrCat("network option ", name, " has ", widths.size(),
                     " layers; at most ", FormatOptionNumber(layers.high)));
  }
  const OptionSpec& width = Spec("width");
  for (size_t i = 0; i < widths.size(); ++i) {
    absl::Status s =
        CheckOptionRange("network", absl::StrCat(name, "[", i, "]"), width,
                         static_cast<double>(widths[i]));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// "cpu", "cuda" or "cuda:N" with N a decimal device index.
bool IsValidDevice(const std::string& device) {
  if (device == "cpu" || device == "cuda") return true;
  constexpr char kPrefix[] = "cuda:";
  constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
  if (device.size() <= kPrefixLen || device.size() > kPrefixLen + 4 ||
      device.compare(0, kPrefixLen, kPrefix) != 0) {
    return false;
  }
  for (size_t i = kPrefixLen; i < device.size(); ++i) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(device[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<int> DefaultHiddenLayers() {
  return std::vector<int>(static_cast<size_t>(OptionDefault("layers")),
                          static_cast<int>(OptionDefault("width")));
}

absl::Status NetworkOptions::Validate() const {
  // Empty hidden lists are allowed: the net is then a single linear layer.
  absl::Status s = CheckWidths("policy_hidden", policy_hidden);
  if (!s.ok()) return s;
  s = CheckWidths("value_hidden", value_hidden);
  if (!s.ok()) return s;
  s = CheckOptionRange("network", "log_std_init", Spec("log_std_init"),
                       log_std_init);
  if (!s.ok()) return s;
  return CheckOptionRange("network", "obs_clip", Spec("obs_clip"), obs_clip);
}

absl::Status PpoOptions::Validate() const {
  // {C++ field, schema name, value}: the ranges are the schema's.
  struct Check {
    const char* field;
    const char* option;
    double v;
  };
  const Check checks[] = {
      {"learning_rate", "learning_rate", learning_rate},
      {"gamma", "gamma", gamma},
      {"gae_lambda", "gae_lambda", gae_lambda},
      {"clip_ratio", "clip_ratio", clip_ratio},
      {"value_clip", "value_clip", value_clip},
      {"value_coef", "value_coef", value_coef},
      {"entropy_coef", "entropy_coef", entropy_coef},
      {"max_grad_norm", "max_grad_norm", max_grad_norm},
      {"adam_eps", "adam_eps", adam_eps},
      {"epochs", "epochs", static_cast<double>(epochs)},
      {"minibatch_size", "batch_size", static_cast<double>(minibatch_size)},
      {"max_policy_lag", "max_policy_lag", static_cast<double>(max_policy_lag)},
      {"cpu_threads", "cpu_threads", static_cast<double>(cpu_threads)},
  };
  for (const Check& c : checks) {
    absl::Status s = CheckOptionRange("ppo", c.field, Spec(c.option), c.v);
    if (!s.ok()) return s;
  }
  if (!IsValidDevice(device)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ppo option device = '", device, "' is not cpu, cuda or cuda:N"));
  }
  return absl::OkStatus();
}

absl::Status ParseActivation(const std::string& s, Activation* out) {
  if (s == "tanh") {
    *out = Activation::kTanh;
  } else if (s == "relu") {
    *out = Activation::kRelu;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown activation '", s, "' (expected tanh or relu)"));
  }
  return absl::OkStatus();
}

absl::Status ParseValueLoss(const std::string& s, ValueLoss* out) {
  if (s == "mse") {
    *out = ValueLoss::kMse;
  } else if (s == "smooth_l1") {
    *out = ValueLoss::kSmoothL1;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown value loss '", s, "' (expected mse or smooth_l1)"));
  }
  return absl::OkStatus();
}

absl::Status ParseLrSchedule(const std::string& s, LrSchedule* out) {
  if (s == "constant") {
    *out = LrSchedule::kConstant;
  } else if (s == "linear") {
    *out = LrSchedule::kLinear;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown lr schedule '", s, "' (expected constant or linear)"));
  }
  return absl::OkStatus();
}

absl::Status ParseLogProbMode(const std::string& s, LogProbMode* out) {
  if (s == "tanh_corrected") {
    *out = LogProbMode::kTanhCorrected;
  } else if (s == "uncorrected") {
    *out = LogProbMode::kUncorrected;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown log-prob mode '", s,
                     "' (expected tanh_corrected or uncorrected)"));
  }
  return absl::OkStatus();
}

absl::Status ParseAutocastMode(const std::string& s, AutocastMode* out) {
  if (s == "off") {
    *out = AutocastMode::kOff;
  } else if (s == "bf16") {
    *out = AutocastMode::kBf16;
  } else if (s == "fp16") {
    *out = AutocastMode::kFp16;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown autocast mode '", s, "' (expected off, bf16 or fp16)"));
  }
  return absl::OkStatus();
}

std::string ActivationName(Activation a) {
  switch (a) {
    case Activation::kTanh:
      return "tanh";
    case Activation::kRelu:
      return "relu";
  }
  return "unknown";
}

std::string LogProbModeName(LogProbMode m) {
  switch (m) {
    case LogProbMode::kTanhCorrected:
      return "tanh_corrected";
    case LogProbMode::kUncorrected:
      return "uncorrected";
  }
  return "unknown";
}

}  // namespace ristretto::learner
