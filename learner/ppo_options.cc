#include "learner/ppo_options.h"

#include <cmath>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ristretto::learner {
namespace {

constexpr double kInf = 1e300;
constexpr int kMaxWidth = 65536;

// kInvalidArgument "<kind> option <name> = <v> is outside [lo, hi)" (or
// "must be >= lo" where hi is kInf) unless v is finite and in range.
absl::Status Range(const char* kind, const char* name, double v, double lo,
                   double hi, bool lo_open, bool hi_open) {
  const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) &&
                  (hi_open ? v < hi : v <= hi);
  if (ok) return absl::OkStatus();
  if (hi == kInf) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " option ", name, " = ", v, " must be ",
                     lo_open ? "> " : ">= ", lo, " and finite"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kind, " option ", name, " = ", v, " is outside ",
                   lo_open ? "(" : "[", lo, ", ", hi, hi_open ? ")" : "]"));
}

absl::Status AtLeast(const char* name, int v, int lo) {
  if (v >= lo) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("ppo option ", name, " = ", v, " must be >= ", lo));
}

absl::Status CheckWidths(const char* name, const std::vector<int>& widths) {
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] < 1 || widths[i] > kMaxWidth) {
      return absl::InvalidArgumentError(
          absl::StrCat("network option ", name, "[", i, "] = ", widths[i],
                       " is outside [1, ", kMaxWidth, "]"));
    }
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

absl::Status NetworkOptions::Validate() const {
  // Empty hidden lists are allowed: the net is then a single linear layer.
  absl::Status s = CheckWidths("policy_hidden", policy_hidden);
  if (!s.ok()) return s;
  s = CheckWidths("value_hidden", value_hidden);
  if (!s.ok()) return s;
  s = Range("network", "log_std_init", log_std_init, -20, 2, false, false);
  if (!s.ok()) return s;
  return Range("network", "obs_clip", obs_clip, 0, kInf, true, false);
}

absl::Status PpoOptions::Validate() const {
  struct Check {
    const char* name;
    double v, lo, hi;
    bool lo_open, hi_open;
  };
  const Check checks[] = {
      {"learning_rate", learning_rate, 0, 1, true, false},
      {"gamma", gamma, 0, 1, false, false},
      {"gae_lambda", gae_lambda, 0, 1, false, false},
      {"clip_ratio", clip_ratio, 0, 1, true, true},
      {"value_clip", value_clip, 0, kInf, false, false},
      {"value_coef", value_coef, 0, kInf, false, false},
      {"entropy_coef", entropy_coef, 0, kInf, false, false},
      {"max_grad_norm", max_grad_norm, 0, kInf, false, false},
      {"adam_eps", adam_eps, 0, kInf, true, false},
  };
  for (const Check& c : checks) {
    absl::Status s =
        Range("ppo", c.name, c.v, c.lo, c.hi, c.lo_open, c.hi_open);
    if (!s.ok()) return s;
  }
  absl::Status s = AtLeast("epochs", epochs, 1);
  if (!s.ok()) return s;
  s = AtLeast("minibatch_size", minibatch_size, 1);
  if (!s.ok()) return s;
  s = AtLeast("max_policy_lag", max_policy_lag, 0);
  if (!s.ok()) return s;
  s = AtLeast("cpu_threads", cpu_threads, 0);
  if (!s.ok()) return s;
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
