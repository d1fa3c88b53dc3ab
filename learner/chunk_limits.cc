#include "learner/chunk_limits.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "env/geometry.h"

namespace ristretto::learner {
namespace {

// Every derived bound is widened by 0.1 % of its magnitude: the env rounds
// observations and rewards to float32 (6e-8 relative) and keeps holdings in
// float32, so an honest value can sit a few ulps beyond the exact bound;
// 0.1 % also absorbs a different summation order on another build.
constexpr double kRelativeMargin = 1e-3;
// Absolute slack on the reward bounds, in units of the reward's scale: a
// flat market makes the exact bound 0, and the accounting's rounding
// (relative 1e-15 in double, 6e-8 for float32 holdings) can leave an honest
// reward a hair beyond it.
constexpr double kRewardSlack = 1e-6;
// Rng::Normal (Box–Muller over 53-bit uniforms, u1 >= 2^-53) never returns
// a value beyond sqrt(−2·ln 2^-53) = 8.5716…: the largest |z| of an honest
// sample, z = (u − mean) / std.
const double kMaxAbsNoise = std::sqrt(2.0 * 53.0 * std::log(2.0));
// No principled bound: the policy's log std is a trained parameter without
// a clamp. Its initial value lies in [−20, 2] (the options schema); an
// honest run moving it beyond ±20 (a std below 2e-9 or above 4.8e8) has
// long stopped producing useful actions. Used for both signs.
constexpr double kMaxAbsLogStd = 20.0;
// No principled bound: the pre-squash sample u = mean + std·z has the
// policy network's unbounded output as its mean. tanh(u) is ±1 in float32
// for |u| >= 9.02, so |u| = 1e4 is a thousand times past saturation; an
// honest policy that far out has diverged (and the update would be rolled
// back on its non-finite loss anyway).
constexpr double kMaxAbsPreSquash = 1e4;
constexpr double kHalfLog2Pi = 0.91893853320467274178;
// VectorEnv's floor on the portfolio value in the log-return reward.
constexpr double kLogReturnFloor = 1e-12;

float ToFloatBound(double v) {
  if (!(v < static_cast<double>(FLT_MAX))) return FLT_MAX;
  if (!(v > -static_cast<double>(FLT_MAX))) return -FLT_MAX;
  return static_cast<float>(v);
}

// [lo, hi] widened by the relative margin and `slack`, rounded outwards to
// float.
ValueRange Widen(double lo, double hi, double slack) {
  lo -= kRelativeMargin * std::fabs(lo) + slack;
  hi += kRelativeMargin * std::fabs(hi) + slack;
  ValueRange r{ToFloatBound(lo), ToFloatBound(hi)};
  if (static_cast<double>(r.lo) > lo) r.lo = std::nextafter(r.lo, -FLT_MAX);
  if (static_cast<double>(r.hi) < hi) r.hi = std::nextafter(r.hi, FLT_MAX);
  return r;
}

// The reward range of one step (before the terminal discounted sum).
// Notation of env.md: V the portfolio value, E the equal-weight benchmark,
// C0 the initial capital, ρ norm_reward.
//
// Value bounds. Without leverage V = cash + Σ holding·p >= 0. Between two
// bars the untraded portfolio grows by at most the best asset's price ratio
// R_t = max(1, max_i p[t+1][i] / p[t][i]), and trading at the new close
// only loses value (fees, slippage, the buy safety factor), so
// V <= C0·G with G the market's largest growth over an episode's window
// (ScanMarketMoves). E starts at most at C0·max_i p[L−1][i] / p[0][i] and
// moves with the same ratios: E <= C0·G as well (the window covers the
// slice's 2L − 1 extra rows). In one step a sell keeps k_s = (1 − fs)(1 − s)
// of the value sold and a buy k_b = 1 / ((1 + fb)(1 + s)) of the cash spent
// (s the slippage), and each unit of value is sold and bought at most once,
// so V' >= k_s·k_b·V·r_t with r_t = min(1, min_i p[t+1][i] / p[t][i]).
void StepRewardRange(const env::EnvOptions& e, const MarketMoves& m,
                     int64_t episode_steps, double* lo, double* hi,
                     double* slack) {
  const double c0 = e.initial_capital;
  const double v_max = c0 * m.max_growth;
  const double s = e.slippage_bps / 1e4;
  const double k =
      (1.0 - e.sell_fee) * (1.0 - s) / ((1.0 + e.buy_fee) * (1.0 + s));
  const double up = m.max_step_ratio - 1.0;
  if (e.reward_mode == env::RewardMode::kDifferentialSharpe) {
    // The env clips each step's differential Sharpe ratio.
    *lo = -env::kMaxDifferentialSharpe * e.reward_scale;
    *hi = env::kMaxDifferentialSharpe * e.reward_scale;
    *slack = kRewardSlack * e.reward_scale;
    return;
  }
  // The turnover penalty: a step sells at most the holdings and buys at
  // most the cash, each at most the value before trading, so it trades at
  // most twice that value.
  const double penalty = 2.0 * e.turnover_penalty;
  if (e.reward_mode == env::RewardMode::kLogReturn) {
    // r = log(V'/V)·scale with V' in [k·r_t·V, R_t·V]. A zero price, or a
    // value that can fall below VectorEnv's 1e-12 floor, leaves only the
    // floor: |log| <= log(V_max / 1e-12).
    const double worst = k * m.min_step_ratio;
    const bool floored =
        m.has_zero_price || !(worst > 0) ||
        std::log(c0) + static_cast<double>(episode_steps) * std::log(worst) <
            std::log(kLogReturnFloor);
    const double wide = std::log(std::max(v_max, 1.0) / kLogReturnFloor);
    *lo = ((floored ? -wide : std::log(worst)) - penalty) * e.reward_scale;
    *hi = (floored ? wide : std::log(m.max_step_ratio)) * e.reward_scale;
    *slack = kRewardSlack * e.reward_scale;
    return;
  }
  // Shaped: |ΔV| <= V_max·max(R − 1, 1 − k·r) and |ΔE| <= V_max·max(R − 1,
  // 1 − r), both at most V_max (V and V' lie in [0, V_max]); a zero price
  // (a holding worth 0 that is worth something again) leaves only V_max.
  double dv = v_max, de = v_max;
  if (!m.has_zero_price) {
    dv = v_max * std::min(1.0, std::max(up, 1.0 - k * m.min_step_ratio));
    de = v_max * std::min(1.0, std::max(up, 1.0 - m.min_step_ratio));
  }
  const double rho = e.norm_reward;
  const double c = e.concentration_penalty;
  // decay <= 1. alpha = (ΔV − ΔE)·ρ·decay; absolute = ΔV/C0·ρ·decay;
  // cash_bonus = |mkt|·cash_ratio·ρ·0.1 <= 0.1ρ (mkt >= −1, ratio <= 1);
  // reserve penalty <= 0.5·min_cash_reserve·ρ; concentration: max weight
  // <= 1 costs at most 0.6c, fewer than 3 positions 1.5c, the Gini bonus
  // (Gini >= 0) pays at most 0.04c.
  const double mag = 0.5 * (dv + de) * rho + 0.3 * (dv / c0) * rho +
                     0.2 * 0.1 * rho + 0.5 * e.min_cash_reserve * rho +
                     (0.6 + 1.5 + 0.04) * c;
  *lo = -mag;
  *hi = mag;
  *slack = kRewardSlack * rho;
}

}  // namespace

MarketMoves ScanMarketMoves(const env::MarketData& market, int64_t window) {
  MarketMoves out;
  const int n = market.num_assets;
  const double* price = market.price.data();
  std::vector<double> last(static_cast<size_t>(n));
  std::vector<double> log_up;
  double best_log = 0.0;
  for (const env::Domain& d : market.domains) {
    // p̃: the last positive price of each asset in the domain (0 before
    // any). A holding bought at a positive price and worth 0 at a zero
    // price is worth p[t+1] again later; valuing it at p̃ keeps the growth
    // bound valid through such gaps.
    std::fill(last.begin(), last.end(), 0.0);
    log_up.clear();
    for (int64_t t = d.begin; t < d.end; ++t) {
      const double* p = price + t * n;
      double up = 1.0;
      for (int i = 0; i < n; ++i) {
        if (p[i] <= 0) {
          out.has_zero_price = true;
          continue;
        }
        if (last[i] > 0) up = std::max(up, p[i] / last[i]);
        if (t > d.begin) {
          const double prev = p[i - n];
          if (prev > 0) {
            out.max_step_ratio = std::max(out.max_step_ratio, p[i] / prev);
            out.min_step_ratio = std::min(out.min_step_ratio, p[i] / prev);
          }
        }
        last[i] = p[i];
      }
      if (t > d.begin) {
        // A price falling to 0: the smallest ratio is 0.
        for (int i = 0; i < n; ++i) {
          if (p[i - n] > 0 && p[i] <= 0) out.min_step_ratio = 0.0;
        }
        log_up.push_back(std::log(up));
      }
    }
    // The largest sum of `window` consecutive log ratios (all >= 0, so a
    // shorter domain's whole sum).
    const size_t w = static_cast<size_t>(std::max<int64_t>(window, 1));
    double sum = 0.0;
    for (size_t t = 0; t < log_up.size(); ++t) {
      sum += log_up[t];
      if (t >= w) sum -= log_up[t - w];
      best_log = std::max(best_log, sum);
    }
  }
  out.max_growth = std::exp(best_log);
  return out;
}

namespace {

// The holdings observation's bounds (float32 coins, never below 0: sells
// and trims take at most the holding). An asset bought at a price >= its
// smallest positive price p_min is worth holding·p <= V_max then, so
// holding <= V_max / p_min; and (action model shares) each step buys at
// most |tanh(u)| <= min(1, action_clip) times C0 / (p0·norm_action) coins
// with p0 >= p_min.
void AddHoldingBounds(const env::EnvOptions& e, const env::MarketData& market,
                      const MarketMoves& moves, int64_t episode_steps,
                      ChunkValueBounds* b) {
  const bool weights = e.action_model == env::ActionModel::kWeights;
  const int n = market.num_assets;
  const double c0 = e.initial_capital;
  const double a_max = std::min(1.0, e.action_clip);
  for (int i = 0; i < n; ++i) {
    double p_min = 0.0;
    for (int64_t t = 0; t < market.num_rows; ++t) {
      const double p = market.price[static_cast<size_t>(t * n + i)];
      if (p > 0 && (p_min == 0.0 || p < p_min)) p_min = p;
    }
    double hold_max = 0.0;  // never priced: never bought
    if (p_min > 0) {
      hold_max = c0 / p_min *
                 (weights ? moves.max_growth
                          : std::min(moves.max_growth,
                                     static_cast<double>(episode_steps) *
                                         a_max / e.norm_action));
    }
    const ValueRange r = Widen(0.0, hold_max * e.norm_stocks, 0.0);
    b->obs[1 + static_cast<size_t>(i)] = ValueRange{0.0f, r.hi};
  }
}

}  // namespace

absl::StatusOr<ChunkValueBounds> DeriveChunkValueBounds(
    const PolicyContract& contract, const env::MarketData& market,
    int64_t episode_steps) {
  const env::EnvOptions& e = contract.env;
  RETURN_IF_ERROR(e.Validate());
  if (episode_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("episode_steps = ", episode_steps, " must be >= 1"));
  }
  const int n = market.num_assets;
  const int64_t F = market.num_features;
  const int64_t L = e.lookback;
  if (contract.action_size != n ||
      contract.obs_size != env::ObservationSize(n, F, L) ||
      market.price.size() != static_cast<size_t>(market.num_rows * n) ||
      market.tech.size() != static_cast<size_t>(market.num_rows * F)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk bounds: the contract's obs_size ", contract.obs_size,
        " and action_size ", contract.action_size, " do not fit a market of ",
        n, " assets and ", F, " features with lookback ", L));
  }
  // An episode slice has episode_steps + 2L rows: V moves over
  // episode_steps of its transitions and E over L − 1 more.
  const MarketMoves moves =
      ScanMarketMoves(market, env::RowsForSteps(episode_steps, L) - 1);
  const double c0 = e.initial_capital;
  const double v_max = c0 * moves.max_growth;
  ChunkValueBounds b;
  b.obs.resize(static_cast<size_t>(contract.obs_size));

  // Cash: 0 <= cash <= V <= V_max. Buys keep cash >= the reserve up to a
  // few ulps of rounding (buy_safety may be 1), hence the margin below 0.
  if (e.position_observation == env::PositionObservation::kWeights) {
    // Shares of the value, each in [0, 1] up to the rounding of a float
    // quotient (cash a few ulps below 0 after a buy with buy_safety 1).
    for (int i = 0; i <= n; ++i) {
      b.obs[static_cast<size_t>(i)] = Widen(-kRelativeMargin, 1.0, 0.0);
    }
  } else {
    const double cash_hi = v_max * e.norm_cash;
    b.obs[0] = Widen(-kRelativeMargin * cash_hi, cash_hi, 0.0);
    AddHoldingBounds(e, market, moves, episode_steps, &b);
  }

  // Features: the observation holds float(tech·norm_tech) of market rows,
  // so each column's range over the market is exact. It is stretched to
  // include 0, so that a zero-filled placeholder observation (tools, raw
  // test clients) passes: 0 is inside every honest magnitude.
  std::vector<ValueRange> column(static_cast<size_t>(F));
  for (int64_t j = 0; j < F; ++j) {
    double lo = 0.0, hi = 0.0;
    for (int64_t t = 0; t < market.num_rows; ++t) {
      const double v = static_cast<double>(static_cast<float>(
          market.tech[static_cast<size_t>(t * F + j)] * e.norm_tech));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    column[static_cast<size_t>(j)] = Widen(lo, hi, 0.0);
  }
  for (int64_t l = 0; l < L; ++l) {
    std::copy(column.begin(), column.end(),
              b.obs.begin() + static_cast<ptrdiff_t>(1 + n + l * F));
  }

  // Reward: one step's range; the discounted-sum terminal reward G =
  // Σ_{k<S} γ^k·r_k over the S = episode_steps steps of an episode is
  // within that range times (1 − γ^S) / (1 − γ) (S when γ = 1).
  double lo = 0.0, hi = 0.0, slack = 0.0;
  StepRewardRange(e, moves, episode_steps, &lo, &hi, &slack);
  if (e.terminal_reward == env::TerminalReward::kDiscountedSum) {
    const auto steps = static_cast<double>(episode_steps);
    const double sum = e.gamma < 1.0
                           ? (1.0 - std::pow(e.gamma, steps)) / (1.0 - e.gamma)
                           : steps;
    lo = std::min(lo, lo * sum);
    hi = std::max(hi, hi * sum);
    slack *= std::max(1.0, sum);
  }
  b.reward = Widen(lo, hi, slack);

  // Actions: u, without a principled bound (kMaxAbsPreSquash).
  b.action = ValueRange{static_cast<float>(-kMaxAbsPreSquash),
                        static_cast<float>(kMaxAbsPreSquash)};

  // log π(u) = Σ_j (−z_j²/2 − log σ_j − ½ log 2π) [− Σ_j log(1 − tanh² u_j)]
  // (learner/torch/actor_critic.cc). Above: z = 0, log σ >= −20, and the
  // tanh correction −log(1 − tanh² u) = 2(|u| − log 2 + softplus(−2|u|))
  // <= 2|u| <= 2·kMaxAbsPreSquash. Below: log σ <= 20, the correction is
  // >= 0, and |z| <= 3·kMaxAbsNoise: z is recomputed in float32 from
  // u = fl(mean + σ·noise), and when σ·noise is below the mean's ulp the
  // rounding of u can triple it (a nonzero u − mean is at least half an ulp
  // of the mean; the error is at most half an ulp of u, at most 2 ulps of
  // the mean), so z²/2 <= 4.5·noise², taken as 5·noise².
  const auto a = static_cast<double>(contract.action_size);
  double lp_hi = a * (kMaxAbsLogStd - kHalfLog2Pi);
  if (contract.network.log_prob == LogProbMode::kTanhCorrected) {
    lp_hi += a * 2.0 * kMaxAbsPreSquash;
  }
  const double lp_lo =
      -a * (5.0 * kMaxAbsNoise * kMaxAbsNoise + kMaxAbsLogStd + kHalfLog2Pi);
  b.log_prob = Widen(lp_lo, lp_hi, 0.0);
  return b;
}

std::string DescribeChunkValueBounds(const ChunkValueBounds& b,
                                     int num_assets) {
  auto range = [](const ValueRange& r) {
    return absl::StrCat("[", r.lo, ", ", r.hi, "]");
  };
  std::string out =
      absl::StrCat("reward ", range(b.reward), ", action ", range(b.action),
                   ", log_prob ", range(b.log_prob));
  if (!b.obs.empty()) absl::StrAppend(&out, ", obs cash ", range(b.obs[0]));
  float hold = 0.0f;
  for (int i = 0; i < num_assets && 1 + i < static_cast<int>(b.obs.size());
       ++i) {
    hold = std::max(hold, b.obs[1 + static_cast<size_t>(i)].hi);
  }
  absl::StrAppend(&out, ", holdings <= ", hold);
  ValueRange feat{0.0f, 0.0f};
  for (size_t k = 1 + static_cast<size_t>(num_assets); k < b.obs.size(); ++k) {
    feat.lo = std::min(feat.lo, b.obs[k].lo);
    feat.hi = std::max(feat.hi, b.obs[k].hi);
  }
  absl::StrAppend(&out, ", features within ", range(feat));
  return out;
}

}  // namespace ristretto::learner
