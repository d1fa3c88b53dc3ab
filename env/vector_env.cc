#include "env/vector_env.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "env/cv_split.h"
#include "env/geometry.h"

namespace ristretto::env {
namespace {

// The largest float not above x (x >= 0): a float quantity clamped to it
// never exceeds the volume cap x.
float FloatAtMost(double x) {
  if (x >= static_cast<double>(FLT_MAX)) return FLT_MAX;
  float f = static_cast<float>(x);
  if (static_cast<double>(f) > x) f = std::nextafter(f, 0.0f);
  return f;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VectorEnv>> VectorEnv::Create(
    std::shared_ptr<const MarketData> market, const VectorEnvOptions& options) {
  if (market == nullptr) return absl::InvalidArgumentError("market is null");
  if (absl::Status s = market->Validate(); !s.ok()) return s;
  if (absl::Status s = options.env.Validate(); !s.ok()) return s;
  if (options.env.max_volume_share > 0 && market->volume.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "env option max_volume_share = ", options.env.max_volume_share,
        " needs bar volumes, but the market has none (use 0 to trade without "
        "a volume cap)"));
  }
  if (options.num_copies < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_copies must be >= 1, got ", options.num_copies));
  }
  const int64_t L = options.env.lookback;
  int64_t min_rows = MinRowsForOneStep(L);
  if (options.mode == EpisodeMode::kTrain) {
    if (options.episode_steps < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "episode_steps must be >= 1, got ", options.episode_steps));
    }
    min_rows = RowsForSteps(options.episode_steps, L);
  }
  for (size_t k = 0; k < options.domains.size(); ++k) {
    const Domain& d = options.domains[k];
    for (size_t j = 0; j < k; ++j) {
      const Domain& o = options.domains[j];
      if (d.begin < o.end && o.begin < d.end) {
        return absl::InvalidArgumentError(absl::StrCat(
            "episode domains [", o.begin, ", ", o.end, ") and [", d.begin, ", ",
            d.end, ") overlap (their starts would be drawn twice)"));
      }
    }
    if (d.begin < 0 || d.end > market->num_rows || d.end <= d.begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "episode domain [", d.begin, ", ", d.end,
          ") is empty or outside the market's ", market->num_rows, " rows"));
    }
  }
  std::vector<Domain> domains = IntersectDomains(
      options.domains.empty() ? market->domains : options.domains,
      market->domains, min_rows, nullptr);
  if (domains.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no contiguous domain has the ", min_rows,
        " rows one episode needs (episode_steps + 2*lookback for training, "
        "2*lookback + 1 for evaluation)"));
  }
  return std::unique_ptr<VectorEnv>(
      new VectorEnv(std::move(market), options, std::move(domains)));
}

VectorEnv::VectorEnv(std::shared_ptr<const MarketData> market,
                     const VectorEnvOptions& options,
                     std::vector<Domain> domains)
    : market_(std::move(market)),
      options_(options),
      env_(options_.env),
      num_copies_(options.num_copies),
      n_(market_->num_assets),
      num_features_(market_->num_features),
      lookback_(options.env.lookback),
      obs_size_(
          static_cast<int>(ObservationSize(n_, num_features_, lookback_))),
      price_(market_->price.data()),
      domains_(std::move(domains)),
      buy_fill_(1.0 + options.env.slippage_bps / 1e4),
      sell_fill_(1.0 - options.env.slippage_bps / 1e4),
      volume_(options.env.max_volume_share > 0 ? market_->volume.data()
                                               : nullptr) {
  const int64_t T = market_->num_rows;
  const int64_t F = num_features_;
  tech_reversed_.resize(static_cast<size_t>(T * F));
  for (int64_t t = 0; t < T; ++t) {
    const double* src = market_->tech.data() + t * F;
    float* dst = tech_reversed_.data() + (T - 1 - t) * F;
    for (int64_t j = 0; j < F; ++j) {
      dst[j] = static_cast<float>(src[j] * env_.norm_tech);
    }
  }
  if (options_.mode == EpisodeMode::kTrain) {
    const int64_t slice_rows = RowsForSteps(options_.episode_steps, lookback_);
    int64_t total = 0;
    for (const Domain& d : domains_) {
      total += d.size() - slice_rows + 1;
      start_cdf_.push_back(total);
    }
  }
  const size_t B = static_cast<size_t>(num_copies_);
  const size_t Bn = B * static_cast<size_t>(n_);
  slice_begin_.assign(B, 0);
  t_.assign(B, 0);
  max_step_.assign(B, 0);
  horizon_.assign(B, 1.0);
  cash_.assign(B, 0.0);
  value_.assign(B, 0.0);
  bench_.assign(B, 0.0);
  gamma_return_.assign(B, 0.0);
  reward_.assign(B, 0.0);
  dsr_a_.assign(B, 0.0);
  dsr_b_.assign(B, 0.0);
  done_.assign(B, 1);
  eval_domain_.assign(B, 0);
  current_.assign(B, EpisodeInfo{});
  last_.assign(B, EpisodeInfo{});
  episodes_finished_.assign(B, 0);
  rng_.reserve(B);
  for (size_t b = 0; b < B; ++b) {
    rng_.emplace_back(options_.seed ^ (0x5851f42d4c957f2dULL * (b + 1)));
    eval_domain_[b] = static_cast<int64_t>(b % domains_.size());
  }
  holdings_.assign(Bn, 0.0f);
  cooldown_.assign(Bn, 0.0f);
  high_.assign(Bn, 0.0f);
  scale_.assign(Bn, 0.0f);
  eqw_.assign(Bn, 0.0);
  min_qty_.resize(n_);
  for (int i = 0; i < n_; ++i) min_qty_[i] = market_->assets[i].min_order_qty;
  scaled_action_.assign(n_, 0.0f);
  weights_scratch_.assign(n_, 0.0);
  target_scratch_.assign(n_, 0.0);
  buy_scratch_.assign(n_, 0.0);
  volume_left_.assign(n_, 0.0);
}

size_t VectorEnv::owned_bytes() const {
  const size_t B = static_cast<size_t>(num_copies_);
  const size_t Bn = B * static_cast<size_t>(n_);
  return sizeof(*this) + tech_reversed_.capacity() * sizeof(float) +
         B * (3 * sizeof(int64_t) + 8 * sizeof(double) + sizeof(uint8_t) +
              sizeof(int64_t) + sizeof(Rng) + 2 * sizeof(EpisodeInfo) +
              sizeof(int64_t)) +
         Bn * (4 * sizeof(float) + sizeof(double)) +
         domains_.capacity() * sizeof(Domain) +
         options_.domains.capacity() * sizeof(Domain) +
         start_cdf_.capacity() * sizeof(int64_t) +
         min_qty_.capacity() * sizeof(double) +
         scaled_action_.capacity() * sizeof(float) +
         weights_scratch_.capacity() * sizeof(double) +
         target_scratch_.capacity() * sizeof(double) +
         buy_scratch_.capacity() * sizeof(double) +
         volume_left_.capacity() * sizeof(double);
}

void VectorEnv::StartEpisode(int b, int64_t slice_begin, int64_t slice_rows) {
  const int n = n_;
  const int64_t L = lookback_;
  slice_begin_[b] = slice_begin;
  t_[b] = L - 1;
  max_step_[b] = slice_rows - L - 1;
  horizon_[b] =
      static_cast<double>(std::max<int64_t>(StepsInRows(slice_rows, L), 1));
  done_[b] = 0;
  current_[b] = EpisodeInfo{};
  const double c0 = env_.initial_capital;
  const double* p0 = price_ + slice_begin * n;
  const double* pt = price_ + (slice_begin + L - 1) * n;
  float* hold = &holdings_[static_cast<size_t>(b) * n];
  double bench = 0.0;
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(b) * n + i;
    hold[i] = 0.0f;
    cooldown_[k] = 0.0f;
    high_[k] = 0.0f;
    // A zero first price makes the action scale and benchmark undefined;
    // that asset then never trades and is left out of the benchmark. The
    // benchmark buys at the slipped price with the fee, as the env's buys
    // (and as EqualWeightBuyAndHold, bit for bit).
    scale_[k] =
        p0[i] > 0 ? static_cast<float>(c0 / (p0[i] * env_.norm_action)) : 0.0f;
    eqw_[k] =
        p0[i] > 0 ? (c0 / n) / (p0[i] * buy_fill_ * (1.0 + env_.buy_fee)) : 0.0;
    bench += eqw_[k] * pt[i];
  }
  cash_[b] = c0;
  value_[b] = c0;
  bench_[b] = bench;
  gamma_return_[b] = 0.0;
  dsr_a_[b] = 0.0;
  dsr_b_[b] = 0.0;
}

void VectorEnv::AutoStart(int b) {
  const int64_t L = lookback_;
  if (options_.mode == EpisodeMode::kTrain) {
    const int64_t slice_rows = RowsForSteps(options_.episode_steps, L);
    const uint64_t pick =
        rng_[b].UniformInt(static_cast<uint64_t>(start_cdf_.back()));
    const size_t d = static_cast<size_t>(
        std::upper_bound(start_cdf_.begin(), start_cdf_.end(),
                         static_cast<int64_t>(pick)) -
        start_cdf_.begin());
    const int64_t before = d == 0 ? 0 : start_cdf_[d - 1];
    const int64_t begin =
        domains_[d].begin + (static_cast<int64_t>(pick) - before);
    StartEpisode(b, begin, slice_rows);
  } else {
    const Domain& d = options_.mode == EpisodeMode::kEvaluate
                          ? domains_[eval_domain_[b]]
                          : domains_.front();
    StartEpisode(b, d.begin, d.size());
  }
}

void VectorEnv::WriteObservation(int b, float* obs) const {
  const int n = n_;
  const float* hold = &holdings_[static_cast<size_t>(b) * n];
  const int64_t T = market_->num_rows;
  const int64_t row = slice_begin_[b] + t_[b];
  if (env_.position_observation == PositionObservation::kWeights) {
    // Shares of the value at this row's close (value_, which StartEpisode
    // and every step keep), the price the next trade starts from. An
    // account worth nothing (impossible without leverage) reads as all
    // cash.
    const double* p = price_ + row * n;
    const double value = value_[b];
    if (value > 0) {
      obs[0] = static_cast<float>(cash_[b] / value);
      for (int i = 0; i < n; ++i) {
        obs[1 + i] =
            static_cast<float>(static_cast<double>(hold[i]) * p[i] / value);
      }
    } else {
      obs[0] = 1.0f;
      for (int i = 0; i < n; ++i) obs[1 + i] = 0.0f;
    }
  } else {
    obs[0] = static_cast<float>(cash_[b] * env_.norm_cash);
    for (int i = 0; i < n; ++i) {
      obs[1 + i] =
          static_cast<float>(static_cast<double>(hold[i]) * env_.norm_stocks);
    }
  }
  if (num_features_ == 0) return;  // memcpy from a null data() is UB
  std::memcpy(obs + 1 + n,
              tech_reversed_.data() + (T - 1 - row) * num_features_,
              sizeof(float) * static_cast<size_t>(num_features_ * lookback_));
}

void VectorEnv::Reset(float* obs) {
  for (int b = 0; b < num_copies_; ++b) {
    reward_[b] = 0.0;
    AutoStart(b);
    WriteObservation(b, obs + static_cast<size_t>(b) * obs_size_);
  }
}

absl::Status VectorEnv::ResetCopy(int b, int64_t begin, int64_t num_rows,
                                  float* obs) {
  if (b < 0 || b >= num_copies_) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy ", b, " out of range [0, ", num_copies_, ")"));
  }
  if (num_rows < MinRowsForOneStep(lookback_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a slice needs at least 2*lookback+1 = ", MinRowsForOneStep(lookback_),
        " rows, got ", num_rows));
  }
  const Domain slice{begin, begin + num_rows};
  bool inside = false;
  for (const Domain& d : market_->domains) {
    inside |= slice.begin >= d.begin && slice.end <= d.end;
  }
  if (!inside) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows [", slice.begin, ", ", slice.end,
                     ") are not inside one contiguous market domain"));
  }
  StartEpisode(b, begin, num_rows);
  reward_[b] = 0.0;
  WriteObservation(b, obs);
  return absl::OkStatus();
}

absl::Status VectorEnv::Step(const float* actions, const StepOutput& out) {
  const size_t total = static_cast<size_t>(num_copies_) * n_;
  for (size_t k = 0; k < total; ++k) {
    if (!std::isfinite(actions[k])) {
      return absl::InvalidArgumentError(
          absl::StrCat("action of copy ", k / n_, " asset ", k % n_, " is ",
                       actions[k], "; actions must be finite"));
    }
  }
  for (int b = 0; b < num_copies_; ++b) {
    if (done_[b]) {
      return absl::FailedPreconditionError(
          absl::StrCat("copy ", b, " finished its episode and was not reset"));
    }
  }
  // Copies sit at unrelated rows, so the hardware prefetcher cannot guess
  // the next copy's price and feature rows; fetch them a few copies ahead.
  constexpr int kPrefetchDistance = 4;
  const int64_t T = market_->num_rows;
  const size_t window_bytes =
      sizeof(float) * static_cast<size_t>(num_features_ * lookback_);
  for (int b = 0; b < num_copies_; ++b) {
    const int ahead = b + kPrefetchDistance;
    if (ahead < num_copies_) {
      const int64_t next_row = slice_begin_[ahead] + t_[ahead] + 1;
      __builtin_prefetch(price_ + next_row * n_);
      const char* window = reinterpret_cast<const char*>(
          tech_reversed_.data() + (T - 1 - next_row) * num_features_);
      for (size_t off = 0; off < window_bytes; off += 64) {
        __builtin_prefetch(window + off);
      }
    }
    StepCopy(b, actions + static_cast<size_t>(b) * n_,
             out.obs + static_cast<size_t>(b) * obs_size_, out);
  }
  return absl::OkStatus();
}

// Books a sale of `qty` at close `close` (filled at close·(1 − s)): the
// proceeds less the sell fee to cash, the fee, the slippage and the trade;
// returns the notional at the close.
double VectorEnv::BookSell(double close, double qty, double* cash,
                           EpisodeInfo* info) const {
  const double filled = close * sell_fill_;
  const double notional = filled * qty;
  *cash += notional * (1.0 - env_.sell_fee);
  info->sell_fees += notional * env_.sell_fee;
  info->slippage += (close - filled) * qty;
  ++info->sell_trades;
  return close * qty;
}

// Books a purchase of `qty` at close `close` (filled at close·(1 + s)).
double VectorEnv::BookBuy(double close, double qty, double* cash,
                          EpisodeInfo* info) const {
  const double filled = close * buy_fill_;
  const double notional = filled * qty;
  *cash -= notional * (1.0 + env_.buy_fee);
  info->buy_fees += notional * env_.buy_fee;
  info->slippage += (filled - close) * qty;
  ++info->buy_trades;
  return close * qty;
}

double VectorEnv::ForcedTrim(int b, const double* p, bool capped,
                             double* cash_io) {
  const int n = n_;
  const size_t base = static_cast<size_t>(b) * n;
  float* hold = &holdings_[base];
  float* cool = &cooldown_[base];
  double* left = volume_left_.data();
  EpisodeInfo& info = current_[b];
  double cash = *cash_io;
  double traded = 0.0;
  const float trim_after = static_cast<float>(env_.cooldown_trim_bars);
  for (int i = 0; i < n; ++i) {
    if (cool[i] >= trim_after) {
      double sell = static_cast<double>(hold[i]) * env_.trim_fraction;
      if (capped) {
        // No volume: the trim waits for the next bar (cooldown kept).
        sell = std::min(sell, left[i]);
        if (!(sell > 0.0)) continue;
        left[i] -= sell;
      }
      cool[i] = 0.0f;
      hold[i] = static_cast<float>(static_cast<double>(hold[i]) - sell);
      traded += BookSell(p[i], sell, &cash, &info);
    }
  }

  *cash_io = cash;
  return traded;
}

// Target weights (ActionModel::kWeights), docs/env_actions.md. Weights are
// shares of the value at this bar's close before trading, V. The target of
// asset i is V·w_i; an asset whose value is off it by more than
// rebalance_band·V is traded rebalance_rate of the way to it: sells first
// (each asset on its own), then buys, all scaled by one factor when they cost
// more than the cash (less the reserve, times buy_safety) can pay. Orders below
// the minimum quantity or min_notional are skipped. Nothing depends on the
// order of the assets but the rounding of sums.
double VectorEnv::TradeToWeights(int b, const float* action, const double* p,
                                 bool capped, double* cash_io) {
  const int n = n_;
  const size_t base = static_cast<size_t>(b) * n;
  float* hold = &holdings_[base];
  float* cool = &cooldown_[base];
  float* high = &high_[base];
  double* left = volume_left_.data();
  double* target = target_scratch_.data();
  double* want = buy_scratch_.data();
  const double fb = env_.buy_fee;
  EpisodeInfo& info = current_[b];
  double cash = *cash_io;
  double traded = 0.0;

  double value = cash;
  for (int i = 0; i < n; ++i) value += static_cast<double>(hold[i]) * p[i];
  if (!(value > 0)) return 0.0;

  // w = softmax(k·a_1, …, k·a_n, 0), shifted by the largest logit.
  const float clip = static_cast<float>(env_.action_clip);
  const double k = env_.weight_logit_scale;
  double z_max = 0.0;  // the cash logit
  for (int i = 0; i < n; ++i) {
    target[i] =
        k * static_cast<double>(std::min(std::max(action[i], -clip), clip));
    z_max = std::max(z_max, target[i]);
  }
  double denom = std::exp(-z_max);
  for (int i = 0; i < n; ++i) {
    target[i] = std::exp(target[i] - z_max);
    denom += target[i];
  }
  const double band = env_.rebalance_band * value;
  const double rate = env_.rebalance_rate;

  // Sells.
  for (int i = 0; i < n; ++i) {
    if (!(p[i] > 0) || !(hold[i] > 0.0f)) continue;
    const double held = static_cast<double>(hold[i]) * p[i];
    const double goal = target[i] / denom * value;
    if (!(held - goal > band)) continue;
    float sell =
        std::min(hold[i], static_cast<float>(rate * (held - goal) / p[i]));
    if (capped) sell = std::min(sell, FloatAtMost(left[i]));
    if (!(sell > 0.0f)) continue;
    const double s = static_cast<double>(sell);
    if (s < min_qty_[i] || s * p[i] < env_.min_notional) continue;
    if (capped) left[i] -= s;
    cool[i] = 0.0f;
    hold[i] -= sell;
    traded += BookSell(p[i], s, &cash, &info);
    if (hold[i] == 0.0f) high[i] = 0.0f;
  }

  // Buys: what each asset lacks, then one pro-rata factor for all.
  double cost = 0.0;
  for (int i = 0; i < n; ++i) {
    want[i] = 0.0;
    if (!(p[i] > 0)) continue;
    const double held = static_cast<double>(hold[i]) * p[i];
    const double goal = target[i] / denom * value;
    if (!(goal - held > band)) continue;
    double q = rate * (goal - held) / p[i];
    if (capped) q = std::min(q, left[i]);
    if (!(q > 0.0)) continue;
    want[i] = q;
    cost += q * p[i] * buy_fill_ * (1.0 + fb);
  }
  if (cost > 0.0) {
    const double avail =
        std::max(0.0, cash - env_.initial_capital * env_.min_cash_reserve) *
        env_.buy_safety;
    const double factor = cost > avail ? avail / cost : 1.0;
    for (int i = 0; i < n; ++i) {
      double buy = want[i] * factor;
      if (!(buy > 0.0) || buy < min_qty_[i] || buy * p[i] < env_.min_notional) {
        continue;
      }
      // Holdings are float: cash pays for the quantity the holding gains
      // after rounding (rounded down, never above what was planned), so
      // value is neither created nor lost by it.
      const float before = hold[i];
      float after = static_cast<float>(static_cast<double>(before) + buy);
      if (static_cast<double>(after) - static_cast<double>(before) > buy) {
        after = std::nextafter(after, 0.0f);
      }
      buy = static_cast<double>(after) - static_cast<double>(before);
      if (!(buy > 0.0)) continue;
      if (capped) left[i] -= buy;
      if (before == 0.0f) high[i] = static_cast<float>(p[i]);
      hold[i] = after;
      traded += BookBuy(p[i], buy, &cash, &info);
    }
  }
  *cash_io = cash;
  return traded;
}

// One env.md step for copy b. The numbered comments follow env.md; the
// float/double mix follows ../shared/golden/env/README.md bit for bit.
void VectorEnv::StepCopy(int b, const float* action, float* obs,
                         const StepOutput& out) {
  const int n = n_;
  const size_t base = static_cast<size_t>(b) * n;
  float* hold = &holdings_[base];
  float* cool = &cooldown_[base];
  float* high = &high_[base];
  const float* scale = &scale_[base];
  const double* eqw = &eqw_[base];
  const double fb = env_.buy_fee;
  const double c0 = env_.initial_capital;
  EpisodeInfo& info = current_[b];
  double cash = cash_[b];

  // 2. Advance time.
  int64_t t = ++t_[b];
  const double* p = price_ + (slice_begin_[b] + t) * n;

  // Volume cap: what each asset may still trade in this bar. A forward-
  // filled bar has volume 0, so nothing trades there.
  const bool capped = volume_ != nullptr;
  double* left = volume_left_.data();
  if (capped) {
    const double* vol = volume_ + (slice_begin_[b] + t) * n;
    for (int i = 0; i < n; ++i) left[i] = env_.max_volume_share * vol[i];
  }

  // The value at the new close before any trade: the turnover penalty's
  // denominator (only computed where it is read).
  double pre_trade_value = 0.0;
  if (env_.turnover_penalty > 0) {
    pre_trade_value = cash;
    for (int i = 0; i < n; ++i) {
      pre_trade_value += static_cast<double>(hold[i]) * p[i];
    }
  }
  double traded = 0.0;  // notional traded at the close in this step

  // 3. Cooldown of positions held before this step's trades.
  for (int i = 0; i < n; ++i) {
    if (hold[i] > 0.0f) cool[i] += 1.0f;
  }

  // 4. Trailing stop.
  if (env_.trailing_stop_pct > 0) {
    const double keep = 1.0 - env_.trailing_stop_pct;
    for (int i = 0; i < n; ++i) {
      if (!(hold[i] > 0.0f)) continue;
      high[i] = std::max(high[i], static_cast<float>(p[i]));
      if (high[i] > 0.0f && p[i] > 0 &&
          p[i] < static_cast<double>(high[i]) * keep) {
        // The whole holding, or what the volume cap allows (the stop then
        // fires again on the next bar for the rest).
        const double held = static_cast<double>(hold[i]);
        const double sold = capped ? std::min(held, left[i]) : held;
        if (!(sold > 0.0)) continue;
        traded += BookSell(p[i], sold, &cash, &info);
        cool[i] = 0.0f;
        if (sold == held) {
          hold[i] = 0.0f;
          high[i] = 0.0f;
        } else {
          hold[i] = static_cast<float>(held - sold);
        }
        if (capped) left[i] -= sold;
      }
    }
  }

  const double reserve = c0 * env_.min_cash_reserve;
  if (env_.action_model == ActionModel::kWeights) {
    // Target weights (docs/env_actions.md); the forced trim, when on,
    // comes first.
    if (env_.cooldown_trim_bars > 0) traded += ForcedTrim(b, p, capped, &cash);
    traded += TradeToWeights(b, action, p, capped, &cash);
  } else {
    // 1 + 5. Clip, then scale to coins (a float32 product, as the original).
    const float clip = static_cast<float>(env_.action_clip);
    float* q = scaled_action_.data();
    for (int i = 0; i < n; ++i) {
      q[i] = std::min(std::max(action[i], -clip), clip) * scale[i];
    }

    // 6. Sells, ascending asset order.
    for (int i = 0; i < n; ++i) {
      if (static_cast<double>(q[i]) < -min_qty_[i] && hold[i] > 0.0f &&
          p[i] > 0) {
        float sell = std::min(hold[i], -q[i]);
        if (capped) {
          sell = std::min(sell, FloatAtMost(left[i]));
          if (!(sell > 0.0f)) continue;
        }
        if (static_cast<double>(sell) * p[i] < env_.min_notional) continue;
        if (capped) left[i] -= static_cast<double>(sell);
        cool[i] = 0.0f;
        hold[i] -= sell;
        traded += BookSell(p[i], static_cast<double>(sell), &cash, &info);
        if (hold[i] == 0.0f) high[i] = 0.0f;
      }
    }

    // 7. Forced trim of positions held too long (runs even at price 0).
    if (env_.cooldown_trim_bars > 0) traded += ForcedTrim(b, p, capped, &cash);

    // 8. Buys, ascending order, cash consumed asset by asset.
    for (int i = 0; i < n; ++i) {
      if (static_cast<double>(q[i]) > min_qty_[i] && p[i] > 0) {
        const double filled = p[i] * buy_fill_;
        const double avail = std::max(0.0, cash - reserve);
        const double wanted = static_cast<double>(q[i]);
        // Fast path: when the cash clearly covers the order (by a margin far
        // above the few ulps of rounding below), the exact affordable amount
        // cannot be the minimum, so its two divisions are skipped. The result
        // is bit-identical to always computing it.
        double buy = wanted;
        if (!(wanted * filled * (1.0 + fb) <
              avail * env_.buy_safety * (1.0 - 1e-9))) {
          const double affordable =
              avail / (1.0 + fb) / filled * env_.buy_safety;
          // On a tie the affordable amount is chosen (std::min keeps the
          // first argument).
          buy = std::min(affordable, wanted);
        }
        if (capped) {
          buy = std::min(buy, left[i]);
          if (!(buy > 0.0)) continue;
        }
        if (buy < min_qty_[i] || buy * p[i] < env_.min_notional) continue;
        if (capped) left[i] -= buy;
        // The trailing high starts at the close (the stop compares closes).
        if (hold[i] == 0.0f) high[i] = static_cast<float>(p[i]);
        hold[i] = static_cast<float>(static_cast<double>(hold[i]) + buy);
        traded += BookBuy(p[i], buy, &cash, &info);
      }
    }
  }  // ActionModel::kShares
  info.traded_notional += traded;
  cash_[b] = cash;

  // decision_bars > 1: hold the portfolio, untouched, to the step's last
  // bar (or the episode's end); values and the reward are taken there.
  if (env_.decision_bars > 1) {
    const int64_t held =
        std::min<int64_t>(env_.decision_bars - 1, max_step_[b] - t);
    if (held > 0) {
      t = (t_[b] += held);
      p = price_ + (slice_begin_[b] + t) * n;
    }
  }

  // 9. Done.
  const bool done = t == max_step_[b];

  // 11. Portfolio and benchmark values (left-to-right sums).
  double stock_value = 0.0;
  double bench = 0.0;
  for (int i = 0; i < n; ++i) {
    stock_value += static_cast<double>(hold[i]) * p[i];
    bench += eqw[i] * p[i];
  }
  const double value = cash + stock_value;
  const double prev_value = value_[b];
  const double prev_bench = bench_[b];
  const double d_bot = value - prev_value;
  const double d_bench = bench - prev_bench;

  // 12. Linear time decay with a floor.
  double r;
  if (env_.reward_mode == RewardMode::kShaped) {
    const double k =
        static_cast<double>(std::max<int64_t>(t - (lookback_ - 1), 0));
    const double progress = std::min(std::max(k / horizon_[b], 0.0), 1.0);
    const double decay = std::max(1.0 - progress, env_.time_decay_floor);
    const double rho = env_.norm_reward;

    // 13. Shaped reward.
    const double alpha = (d_bot - d_bench) * rho * decay;
    const double absolute = (d_bot / c0) * rho * decay;
    // The cash bonus only exists in falling markets: skip its divisions
    // otherwise.
    double cash_bonus = 0.0;
    const double mkt = prev_bench > 0 ? d_bench / prev_bench : 0.0;
    if (mkt < 0) {
      const double cash_ratio = value > 0 ? cash / value : 0.0;
      if (cash_ratio > 0.1)
        cash_bonus = std::fabs(mkt) * cash_ratio * rho * 0.1;
    }
    r = 0.5 * alpha + 0.3 * absolute + 0.2 * cash_bonus;
    if (env_.min_cash_reserve > 0) {
      const double shortfall = std::max(0.0, reserve - cash);
      r -= (shortfall / c0) * rho * 0.5;
    }
    const double c = env_.concentration_penalty;
    if (c > 0 && value > 0) {
      double* w = weights_scratch_.data();
      double max_w = 0.0;
      int m = 0;
      for (int i = 0; i < n; ++i) {
        const double wi = static_cast<double>(hold[i]) * p[i] / value;
        max_w = std::max(max_w, wi);
        if (wi > 0.01) w[m++] = wi;
      }
      if (max_w > 0.40) r -= c * (max_w - 0.40);
      if (m < 3) {
        r -= c * 0.5 * (3 - m);
      } else {
        // Gini coefficient of the significant weights.
        std::sort(w, w + m);
        double weighted = 0.0, sum = 0.0;
        for (int j = 0; j < m; ++j) {
          weighted += (j + 1) * w[j];
          sum += w[j];
        }
        const double gini =
            2.0 * weighted / (m * sum) - static_cast<double>(m + 1) / m;
        if (gini < 0.4) r += c * 0.1 * (0.4 - gini);
      }
    }
  } else {
    // Log return; a non-positive value (impossible without leverage) is
    // floored so the reward stays finite.
    constexpr double kTiny = 1e-12;
    double ret = std::log(std::max(value, kTiny) / std::max(prev_value, kTiny));
    if (env_.turnover_penalty > 0 && pre_trade_value > 0) {
      ret -= env_.turnover_penalty * (traded / pre_trade_value);
    }
    if (env_.reward_mode == RewardMode::kLogReturn) {
      r = ret * env_.reward_scale;
    } else {
      // Differential Sharpe ratio (Moody & Saffell 2001): with A, B the
      // exponential moving averages of R and R² before this step,
      // D = (B·ΔA − A·ΔB/2) / (B − A²)^(3/2), ΔA = R − A, ΔB = R² − B;
      // then A += η·ΔA, B += η·ΔB. 0 while the variance is 0.
      const double a = dsr_a_[b], bb = dsr_b_[b];
      const double da = ret - a, db = ret * ret - bb;
      const double var = bb - a * a;
      double d = 0.0;
      if (var > 0) {
        d = (bb * da - 0.5 * a * db) / (var * std::sqrt(var));
        d = std::min(std::max(d, -kMaxDifferentialSharpe),
                     kMaxDifferentialSharpe);
      }
      dsr_a_[b] = a + env_.dsr_eta * da;
      dsr_b_[b] = bb + env_.dsr_eta * db;
      r = d * env_.reward_scale;
    }
  }

  // 14. Roll values and the discounted sum.
  value_[b] = value;
  bench_[b] = bench;
  gamma_return_[b] = gamma_return_[b] * env_.gamma + r;

  // 10. Observation at the new t with post-trade holdings (written after
  // step 14: the weights observation divides by the value V rolled there).
  WriteObservation(b, obs);

  // 15. Terminal reward.
  if (done && env_.terminal_reward == TerminalReward::kDiscountedSum) {
    r = gamma_return_[b];
  }
  reward_[b] = r;
  ++info.steps;
  if (out.reward != nullptr) out.reward[b] = static_cast<float>(r);
  if (out.done != nullptr) out.done[b] = done ? 1 : 0;
  if (!done) return;

  info.net_return = value / c0;
  info.gross_return =
      (value + info.buy_fees + info.sell_fees + info.slippage) / c0;
  last_[b] = info;
  ++episodes_finished_[b];
  done_[b] = 1;
  if (out.final_obs != nullptr) {
    std::memcpy(out.final_obs + static_cast<size_t>(b) * obs_size_, obs,
                sizeof(float) * obs_size_);
  }
  if (options_.auto_reset && options_.mode != EpisodeMode::kManual) {
    AutoStart(b);
    WriteObservation(b, obs);
  }
}

}  // namespace ristretto::env
