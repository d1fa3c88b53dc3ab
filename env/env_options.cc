#include "env/env_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace ristretto::env {
namespace {

absl::Status Range(const char* name, double v, double lo, double hi,
                   bool lo_open, bool hi_open) {
  const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) &&
                  (hi_open ? v < hi : v <= hi);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("env option ", name, " = ", v, " is outside ",
                   lo_open ? "(" : "[", lo, ", ", hi, hi_open ? ")" : "]"));
}

}  // namespace

absl::Status EnvOptions::Validate() const {
  constexpr double kInf = 1e300;
  if (lookback < 1 || lookback > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "env option lookback = ", lookback, " is outside [1, 4096]"));
  }
  if (cooldown_trim_bars < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("env option cooldown_trim_bars = ", cooldown_trim_bars,
                     " must be >= 0 (0 = no forced trim)"));
  }
  if (decision_bars < 1 || decision_bars > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("env option decision_bars = ", decision_bars,
                     " is outside [1, 10000]"));
  }
  if (decision_bars > 1 && (trailing_stop_pct > 0 || cooldown_trim_bars > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "env option decision_bars = ", decision_bars,
        " holds the portfolio untouched between decisions, so it needs "
        "trailing_stop_pct 0 and cooldown_trim_bars 0 (they are ",
        trailing_stop_pct, " and ", cooldown_trim_bars, ")"));
  }
  struct Check {
    const char* name;
    double v, lo, hi;
    bool lo_open, hi_open;
  };
  const Check checks[] = {
      {"initial_capital", initial_capital, 0, kInf, true, false},
      {"buy_fee", buy_fee, 0, 1, false, true},
      {"sell_fee", sell_fee, 0, 1, false, true},
      {"slippage_bps", slippage_bps, 0, 1000, false, true},
      {"max_volume_share", max_volume_share, 0, 1, false, false},
      {"buy_safety", buy_safety, 0, 1, true, false},
      {"norm_cash", norm_cash, 0, kInf, true, false},
      {"norm_stocks", norm_stocks, 0, kInf, true, false},
      {"norm_tech", norm_tech, 0, kInf, true, false},
      {"norm_reward", norm_reward, 0, kInf, true, false},
      {"norm_action", norm_action, 0, kInf, true, false},
      {"time_decay_floor", time_decay_floor, 0, 1, false, false},
      {"min_cash_reserve", min_cash_reserve, 0, 1, false, true},
      {"concentration_penalty", concentration_penalty, 0, kInf, false, false},
      {"trailing_stop_pct", trailing_stop_pct, 0, 1, false, true},
      {"trim_fraction", trim_fraction, 0, 1, true, false},
      {"gamma", gamma, 0, 1, false, false},
      {"action_clip", action_clip, 0, kInf, true, false},
      {"reward_scale", reward_scale, 0, kInf, true, false},
      {"weight_logit_scale", weight_logit_scale, 0, 1000, true, false},
      {"rebalance_band", rebalance_band, 0, 1, false, true},
      {"rebalance_rate", rebalance_rate, 0, 1, true, false},
      {"min_notional", min_notional, 0, kInf, false, false},
      {"turnover_penalty", turnover_penalty, 0, kInf, false, false},
      {"dsr_eta", dsr_eta, 0, 1, true, true},
  };
  for (const Check& c : checks) {
    absl::Status s = Range(c.name, c.v, c.lo, c.hi, c.lo_open, c.hi_open);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ParseRewardMode(const std::string& text, RewardMode* mode) {
  if (text == "shaped") {
    *mode = RewardMode::kShaped;
  } else if (text == "log_return") {
    *mode = RewardMode::kLogReturn;
  } else if (text == "differential_sharpe") {
    *mode = RewardMode::kDifferentialSharpe;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown reward mode '", text,
                     "' (expected shaped, log_return or differential_sharpe)"));
  }
  return absl::OkStatus();
}

absl::Status ParseActionModel(const std::string& text, ActionModel* model) {
  if (text == "shares") {
    *model = ActionModel::kShares;
  } else if (text == "weights") {
    *model = ActionModel::kWeights;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown action model '", text, "' (expected weights or shares)"));
  }
  return absl::OkStatus();
}

const char* ActionModelName(ActionModel model) {
  return model == ActionModel::kShares ? "shares" : "weights";
}

absl::Status ParsePositionObservation(const std::string& text,
                                      PositionObservation* out) {
  if (text == "holdings") {
    *out = PositionObservation::kHoldings;
  } else if (text == "weights") {
    *out = PositionObservation::kWeights;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown position observation '", text,
                     "' (expected weights or holdings)"));
  }
  return absl::OkStatus();
}

const char* PositionObservationName(PositionObservation p) {
  return p == PositionObservation::kHoldings ? "holdings" : "weights";
}

absl::Status ParseTerminalReward(const std::string& text,
                                 TerminalReward* mode) {
  if (text == "step") {
    *mode = TerminalReward::kStep;
  } else if (text == "discounted_sum") {
    *mode = TerminalReward::kDiscountedSum;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown terminal reward '", text,
                     "' (expected step or discounted_sum)"));
  }
  return absl::OkStatus();
}

}  // namespace ristretto::env
