// EnvOptions: every knob of the trading env contract
// (../shared/design/env.md), with the original system's defaults.
#ifndef RISTRETTO_ENV_ENV_OPTIONS_H_
#define RISTRETTO_ENV_ENV_OPTIONS_H_

#include <string>

#include "absl/status/status.h"

namespace ristretto::env {

enum class RewardMode {
  kShaped,     // benchmark-relative + absolute + cash bonus + risk terms
  kLogReturn,  // log(V'/V) · reward_scale
};

enum class TerminalReward {
  kStep,           // every step returns that step's reward (default)
  kDiscountedSum,  // the done step returns the running discounted sum G
};

struct EnvOptions {
  // Rows of features in the observation (newest first). >= 1.
  int lookback = 1;
  // Starting cash C0, in quote currency.
  double initial_capital = 500.0;
  // Proportional fees on buy and sell notional (0.0025 = 0.25 %).
  double buy_fee = 0.0025;
  double sell_fee = 0.0025;
  // Execution costs beyond the fees. Slippage in basis points of
  // the close, paid on every trade: buys fill at close · (1 + s) and sells
  // (trims, stops) at close · (1 − s), s = slippage_bps / 10^4; >= 0.
  // Default 5 bps, a conservative spread + impact for liquid crypto pairs at
  // retail size; the golden parity traces set 0 (the original had none).
  double slippage_bps = 5.0;
  // Cap on the quantity of an asset traded in one bar, as a share of that
  // bar's volume, in [0, 1]; 0 = no cap. Needs volumes (MarketData::volume).
  double max_volume_share = 0.0;
  // Fraction of the affordable quantity actually bought (slippage margin).
  double buy_safety = 0.99;
  // Observation and reward scales (the original uses powers of two).
  double norm_cash = 1.0 / 2048;   // 2^-11
  double norm_stocks = 1.0 / 256;  // 2^-8
  double norm_tech = 1.0 / 16384;  // 2^-14
  double norm_reward = 1.0 / 512;  // 2^-9
  // Position sizing. Action scale divisor: action 1 buys
  // C0 / (price[0] · norm_action) coins, i.e. 1/norm_action of the initial
  // capital per asset and bar (sells likewise). Default 1: a policy can move
  // its whole capital in one bar and fractional actions size partial
  // positions. The original's 100 moves at most ~1 % of capital per bar,
  // too slow to follow any signal after fees; the golden traces
  // set 100 explicitly.
  double norm_action = 1.0;
  // Lower bound of the reward's linear time decay, in [0, 1].
  double time_decay_floor = 0.0;
  // Cash kept back from buys, as a fraction of C0, in [0, 1).
  double min_cash_reserve = 0.0;
  // Weight of the concentration/diversification shaping terms, >= 0.
  double concentration_penalty = 0.0;
  // Trailing stop distance below the high-water mark (0 = off), in [0, 1).
  double trailing_stop_pct = 0.0;
  // Bars a position may be held without a sell before a forced trim.
  int cooldown_trim_bars = 48;
  // Fraction of the holding sold by a forced trim, in (0, 1].
  double trim_fraction = 0.05;
  // The env's own discount for the discounted-sum terminal reward.
  double gamma = 0.99;
  // Actions are clipped to [-action_clip, action_clip] before scaling.
  double action_clip = 1000.0;
  RewardMode reward_mode = RewardMode::kShaped;
  // Multiplier of the log-return reward (kLogReturn only).
  double reward_scale = 1.0;
  TerminalReward terminal_reward = TerminalReward::kStep;

  // Returns kInvalidArgument naming the first out-of-range field.
  absl::Status Validate() const;
};

// Parses "shaped"/"log_return" and "step"/"discounted_sum".
absl::Status ParseRewardMode(const std::string& text, RewardMode* mode);
absl::Status ParseTerminalReward(const std::string& text, TerminalReward* mode);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_ENV_OPTIONS_H_
