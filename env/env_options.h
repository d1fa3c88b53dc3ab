// EnvOptions: every knob of the trading env contract
// (../shared/design/env.md), with the original system's defaults.
#ifndef RISTRETTO_ENV_ENV_OPTIONS_H_
#define RISTRETTO_ENV_ENV_OPTIONS_H_

#include <string>

#include "absl/status/status.h"

namespace ristretto::env {

enum class RewardMode {
  kShaped,     // benchmark-relative + absolute + cash bonus + risk terms
  kLogReturn,  // (log(V'/V) − turnover_penalty·turnover) · reward_scale
  // Moody & Saffell's differential Sharpe ratio of the net log returns
  // (dsr_eta its moving averages' rate), clipped to ±kMaxDifferentialSharpe,
  // times reward_scale.
  kDifferentialSharpe,
};

// The clip of one step's differential Sharpe ratio (a near-zero variance
// early in an episode would otherwise make it explode).
inline constexpr double kMaxDifferentialSharpe = 10.0;

// How an action is read (docs/env_actions.md).
enum class ActionModel {
  // The original's: action i is a signed coin quantity, a·C0/(p0·
  // norm_action); sells in asset order, then buys in asset order spending
  // cash as it goes (the golden parity traces use it).
  kShares,
  // The default: the action vector is the logits of the portfolio the
  // policy wants, w = softmax(k·a_1, …, k·a_n, 0) over the n assets and
  // cash (k = weight_logit_scale; the cash logit is fixed at 0, which loses
  // nothing: a softmax is unchanged by a common shift). Assets whose weight
  // is off target by more than rebalance_band are traded to their target:
  // sells first, then buys scaled down pro rata when cash is short, so no
  // asset is favoured by its position in the dataset.
  kWeights,
};

// What the first 1 + n observation entries say about the account
// (docs/env_actions.md).
enum class PositionObservation {
  // The original's: cash·norm_cash, then each asset's coin holding ·
  // norm_stocks (the golden parity traces use it). Coin counts are not
  // comparable across assets or prices (0.002 BTC next to 10,000 of a
  // cheap coin), so a policy can hardly tell what share it holds.
  kHoldings,
  // The default: the cash weight, then each asset's weight, as fractions of
  // the account's value at the observation's close (each in [0, 1], summing
  // to 1): what a target-weight policy needs to know to hold.
  kWeights,
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
  // Bars a position may be held without a sell before a forced trim; 0 =
  // no forced trim (the default: buy & hold, the baseline, never pays one).
  // The original's 48 is kept for the golden parity traces.
  int cooldown_trim_bars = 0;
  // Fraction of the holding sold by a forced trim, in (0, 1].
  double trim_fraction = 0.05;
  // The env's own discount for the discounted-sum terminal reward.
  double gamma = 0.99;
  // Actions are clipped to [-action_clip, action_clip] before scaling.
  double action_clip = 1000.0;
  // Target weights (the default) or the original's coin quantities.
  ActionModel action_model = ActionModel::kWeights;
  // kWeights: target weight w_i = softmax(k·a, 0)_i with k this scale, so
  // the tanh-squashed actions in [-1, 1] reach 1/(1 + e^-k + (n−1)e^-2k)
  // of the capital in one asset, n·e^k/(1 + n·e^k) invested in all, and
  // down to n·e^-k/(1 + n·e^-k) invested (k = 5, n = 5: 99.3 %, 99.9 %,
  // 3.3 %); all actions 0 hold 1/(n + 1) in each asset and in cash.
  double weight_logit_scale = 5.0;
  // kWeights: an asset is traded only when |w_i − target_i| > band (weights
  // as fractions of the portfolio value at the bar's close), in [0, 1).
  double rebalance_band = 0.02;
  // kWeights: the share of an asset's gap to its target traded in one bar,
  // in (0, 1]: an asset outside the band is traded to held + rate·(goal −
  // held). 1 trades to the target at once; below 1 the position follows
  // the target like an exponential moving average (half-life
  // ln 2 / −ln(1 − rate) bars), which filters a target that flickers from
  // bar to bar (partial adjustment, as in Gârleanu & Pedersen 2013).
  double rebalance_rate = 1.0;
  // Bars per decision, >= 1. A step acts on the bar after its observation
  // (trades at that close, as always) and then holds the portfolio, with no
  // trade of any kind, for decision_bars − 1 more bars; its reward is that
  // whole stretch's (the log return from the step's start to its end, the
  // turnover penalty once, the differential Sharpe ratio of that return).
  // The last step of an episode stops at the episode's end. 1 (the default)
  // is the original's step; 24 on hourly bars decides once a day, which
  // gives a policy gradient √24 × the signal-to-noise of one bar's return
  // and a 24 × shorter credit horizon (docs/env_actions.md). > 1 needs
  // trailing_stop_pct 0 and cooldown_trim_bars 0 (both act on every bar).
  int decision_bars = 1;
  PositionObservation position_observation = PositionObservation::kWeights;
  // Smallest order traded, in quote currency (at the close); smaller
  // orders are skipped (both action models). Binance's spot minimum is 5.
  double min_notional = 5.0;
  RewardMode reward_mode = RewardMode::kLogReturn;
  // Multiplier of the log-return and differential-Sharpe rewards.
  double reward_scale = 1.0;
  // kLogReturn / kDifferentialSharpe: the step's return is
  // log(V'/V) − turnover_penalty·(notional traded / V before the trades),
  // a cost beyond the fees that the env already charges; >= 0.
  double turnover_penalty = 0.0;
  // kDifferentialSharpe: rate of the moving averages A, B of the return
  // and its square, in (0, 1).
  double dsr_eta = 0.01;
  TerminalReward terminal_reward = TerminalReward::kStep;

  // Returns kInvalidArgument naming the first out-of-range field.
  absl::Status Validate() const;
};

// Parses "shaped"/"log_return"/"differential_sharpe", "step"/
// "discounted_sum", "shares"/"weights" and "holdings"/"weights".
absl::Status ParseRewardMode(const std::string& text, RewardMode* mode);
absl::Status ParseActionModel(const std::string& text, ActionModel* model);
const char* ActionModelName(ActionModel model);
absl::Status ParsePositionObservation(const std::string& text,
                                      PositionObservation* out);
const char* PositionObservationName(PositionObservation p);
absl::Status ParseTerminalReward(const std::string& text, TerminalReward* mode);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_ENV_OPTIONS_H_
