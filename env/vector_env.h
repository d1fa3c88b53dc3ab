// VectorEnv: B copies of the trading env (../shared/design/env.md) stepped
// together, structure-of-arrays over the copies. Step() is allocation-free
// and writes observations straight into a caller-provided contiguous buffer.
// All copies read one shared, read-only MarketData.
// Not thread-safe; owned by one thread (an actor's env thread).
#ifndef RISTRETTO_ENV_VECTOR_ENV_H_
#define RISTRETTO_ENV_VECTOR_ENV_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/rng.h"
#include "env/env_options.h"
#include "env/market_data.h"

namespace ristretto::env {

enum class EpisodeMode {
  // Each copy starts at a seeded random row of a random domain (weighted by
  // the number of valid starts) and runs exactly `episode_steps` steps.
  kTrain,
  // Copy b plays the whole of domain b mod D from its first row,
  // deterministically (validation and backtests).
  kEvaluate,
  // The caller places every copy with ResetCopy(); no automatic reset.
  kManual,
};

struct VectorEnvOptions {
  EnvOptions env;
  // Number of env copies B, >= 1.
  int num_copies = 1;
  EpisodeMode mode = EpisodeMode::kTrain;
  // Steps per training episode (kTrain); the slice then spans
  // episode_steps + 2·lookback rows (env.md: an episode of T rows has
  // T − 2L steps).
  int64_t episode_steps = 1024;
  // Row blocks episodes may use; empty = the market's domains. Each block is
  // intersected with the market's domains: no episode crosses a gap.
  // Blocks must not overlap (kInvalidArgument). kEvaluate plays domain
  // b mod D in copy b, so use B >= D to play every domain.
  std::vector<Domain> domains;
  // Seed of the start-row generators (copy b uses stream seed ⊕ b).
  uint64_t seed = 0;
  // kTrain/kEvaluate: a copy that finishes starts its next episode inside
  // the same Step (its terminal observation goes to StepOutput::final_obs).
  bool auto_reset = true;
};

// Where Step() writes. Pointers are owned by the caller and must hold
// B × observation_size() (obs, final_obs) or B (reward, done) elements.
struct StepOutput {
  float* obs = nullptr;        // required
  float* reward = nullptr;     // optional; the double reward is reward(b)
  uint8_t* done = nullptr;     // optional; 1 where an episode ended
  float* final_obs = nullptr;  // optional; terminal obs of copies that ended
};

// What an episode did, kept per copy (the last finished episode's values
// survive an auto-reset until the copy finishes its next one).
struct EpisodeInfo {
  double buy_fees = 0.0;   // fees paid on buys, quote currency
  double sell_fees = 0.0;  // fees paid on sells, trims and stops
  // Slippage paid on every trade, quote currency: the filled notional's
  // distance from the close, Σ close · s · quantity (EnvOptions::
  // slippage_bps); not part of the fees.
  double slippage = 0.0;
  // Notional of every trade at the close, Σ close · quantity, quote
  // currency (turnover = traded_notional / C0).
  double traded_notional = 0.0;
  int64_t buy_trades = 0;
  int64_t sell_trades = 0;  // sells + forced trims + trailing stops
  int64_t steps = 0;
  double net_return = 0.0;    // V / C0 at done
  double gross_return = 0.0;  // (V + fees + slippage) / C0 at done
};

class VectorEnv {
 public:
  // Errors: kInvalidArgument for bad options, an invalid market, a volume
  // cap (max_volume_share > 0) on a market without volumes, or no domain
  // long enough for one episode (the message gives the rows needed).
  static absl::StatusOr<std::unique_ptr<VectorEnv>> Create(
      std::shared_ptr<const MarketData> market,
      const VectorEnvOptions& options);

  VectorEnv(const VectorEnv&) = delete;
  VectorEnv& operator=(const VectorEnv&) = delete;

  int num_copies() const { return num_copies_; }
  int num_assets() const { return n_; }
  // Observation length D = 1 + n + F·L.
  int observation_size() const { return obs_size_; }
  int action_size() const { return n_; }

  // Starts a new episode in every copy (kManual: every copy at the start of
  // the first usable domain) and writes the B × D observations to `obs`.
  void Reset(float* obs);

  // Places copy `b` on rows [begin, begin + num_rows) of the market and
  // resets it; writes its observation (D floats) to `obs`. The episode has
  // num_rows − 2L steps (checked against the market's domains, not the
  // episode domains: kManual callers place copies anywhere valid).
  // Errors: kInvalidArgument if the rows leave the
  // market, cross a domain boundary or are fewer than 2L + 1.
  absl::Status ResetCopy(int b, int64_t begin, int64_t num_rows, float* obs);

  // Advances every copy by one step with `actions` (B × n, row per copy).
  // Errors: kInvalidArgument if any action is NaN or infinite (nothing is
  // changed then), kFailedPrecondition if a copy is done and not reset
  // (kManual, or auto_reset off).
  absl::Status Step(const float* actions, const StepOutput& out);

  // Per-copy state after the last Reset/Step.
  double reward(int b) const { return reward_[b]; }
  double cash(int b) const { return cash_[b]; }
  double total_asset(int b) const { return value_[b]; }
  double benchmark_value(int b) const { return bench_[b]; }
  double discounted_return(int b) const { return gamma_return_[b]; }
  float holding(int b, int i) const { return holdings_[b * n_ + i]; }
  float cooldown(int b, int i) const { return cooldown_[b * n_ + i]; }
  float trailing_high(int b, int i) const { return high_[b * n_ + i]; }
  float action_scale(int b, int i) const { return scale_[b * n_ + i]; }
  // Current market row of copy b, and the first row of its episode slice.
  int64_t row(int b) const { return slice_begin_[b] + t_[b]; }
  int64_t slice_begin(int b) const { return slice_begin_[b]; }
  bool done(int b) const { return done_[b] != 0; }
  // Running counters of the current episode, and the last finished one.
  const EpisodeInfo& current_episode(int b) const { return current_[b]; }
  const EpisodeInfo& last_episode(int b) const { return last_[b]; }
  // Episodes finished by copy b since creation.
  int64_t episodes_finished(int b) const { return episodes_finished_[b]; }

  // Bytes owned by this object (excluding the shared MarketData): grows
  // with B·(n + D) for state, and with T·F once for the normalised feature
  // rows, never with B·T.
  size_t owned_bytes() const;
  const MarketData& market() const { return *market_; }
  // The usable episode domains after intersecting with the market's.
  const std::vector<Domain>& episode_domains() const { return domains_; }

 private:
  VectorEnv(std::shared_ptr<const MarketData> market,
            const VectorEnvOptions& options, std::vector<Domain> domains);

  void StartEpisode(int b, int64_t slice_begin, int64_t slice_rows);
  void AutoStart(int b);
  void WriteObservation(int b, float* obs) const;
  void StepCopy(int b, const float* action, float* obs, const StepOutput& out);
  // ActionModel::kWeights: trades copy b towards the target weights of
  // `action` at prices p; returns the notional traded at the close.
  double TradeToWeights(int b, const float* action, const double* p,
                        bool capped, double* cash);
  // Cash, fees, slippage and trade count of one sale / purchase of `qty`
  // at `close`; return the notional at the close.
  double BookSell(double close, double qty, double* cash,
                  EpisodeInfo* info) const;
  double BookBuy(double close, double qty, double* cash,
                 EpisodeInfo* info) const;
  // The forced trim (env.md step 7); returns the notional traded.
  double ForcedTrim(int b, const double* p, bool capped, double* cash);

  const std::shared_ptr<const MarketData> market_;
  const VectorEnvOptions options_;
  const EnvOptions& env_;  // options_.env
  const int num_copies_;
  const int n_;
  const int64_t num_features_;
  const int lookback_;
  const int obs_size_;
  const double* price_;  // market_->price
  // Features pre-multiplied by norm_tech and rounded to float, rows stored
  // newest-last-reversed (row r holds market row T − 1 − r), so that the
  // observation window tech[t], tech[t−1], … is one contiguous copy.
  std::vector<float> tech_reversed_;
  std::vector<Domain> domains_;
  // Training start sampling: cumulative count of valid starts per domain.
  std::vector<int64_t> start_cdf_;

  // Per-copy state (structure of arrays).
  std::vector<int64_t> slice_begin_, t_, max_step_;
  std::vector<double> horizon_;
  std::vector<double> cash_, value_, bench_, gamma_return_, reward_;
  // Differential Sharpe ratio: moving averages of the return and its square.
  std::vector<double> dsr_a_, dsr_b_;
  std::vector<uint8_t> done_;
  std::vector<int64_t> eval_domain_;
  std::vector<Rng> rng_;
  std::vector<EpisodeInfo> current_, last_;
  std::vector<int64_t> episodes_finished_;
  // Per-copy × per-asset state, row per copy.
  std::vector<float> holdings_, cooldown_, high_, scale_;
  std::vector<double> eqw_;
  // Per-asset constants and scratch (no allocation in Step).
  std::vector<double> min_qty_;
  // Fill factors: buys at close · buy_fill_, sells at close · sell_fill_.
  const double buy_fill_, sell_fill_;
  // Volume cap: market_->volume when max_volume_share > 0, else null; and the
  // quantity each asset may still trade in the current bar (scratch).
  const double* volume_;
  std::vector<double> volume_left_;
  std::vector<float> scaled_action_;
  std::vector<double> weights_scratch_;
  // kWeights scratch: target weights and wanted buy quantities per asset.
  std::vector<double> target_scratch_, buy_scratch_;
};

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_VECTOR_ENV_H_
