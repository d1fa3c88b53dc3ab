// Behavioural unit tests of VectorEnv's own features (env.md): observation
// layout, trades and fees, forced trims, trailing stops, action checks,
// rewards, episode bookkeeping, start sampling, evaluation, errors, memory
// and allocation-freedom. Markets are small and hand-made so that every
// expected value can be worked out by hand; the arithmetic is in comments.
// Prices and fees are chosen as binary fractions wherever possible, so most
// expectations are exact.
#include "env/vector_env.h"

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/rng.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "env/metrics.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

// ---------------------------------------------------------------------------
// Counting global allocator. The replacement applies to the whole test
// binary, so it must be a correct allocator for everybody; it only counts
// while g_count_allocations is set (by the tests below, around the code they
// measure).
namespace {

std::atomic<bool> g_count_allocations{false};
std::atomic<int64_t> g_allocations{0};
std::atomic<int64_t> g_allocated_bytes{0};

void CountAllocation(std::size_t size) {
  if (g_count_allocations.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_allocated_bytes.fetch_add(static_cast<int64_t>(size),
                                std::memory_order_relaxed);
  }
}

void* CountedMalloc(std::size_t size) {
  if (size == 0) size = 1;
  CountAllocation(size);
  return std::malloc(size);
}

void* CountedAlignedMalloc(std::size_t size, std::align_val_t align) {
  if (size == 0) size = 1;
  CountAllocation(size);
  std::size_t alignment = static_cast<std::size_t>(align);
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size) != 0) return nullptr;
  return p;
}

void* CountedMallocOrThrow(std::size_t size) {
  void* p = CountedMalloc(size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* CountedAlignedMallocOrThrow(std::size_t size, std::align_val_t align) {
  void* p = CountedAlignedMalloc(size, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t size) { return CountedMallocOrThrow(size); }
void* operator new[](std::size_t size) { return CountedMallocOrThrow(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return CountedMalloc(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return CountedMalloc(size);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return CountedAlignedMallocOrThrow(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return CountedAlignedMallocOrThrow(size, align);
}
void* operator new(std::size_t size, std::align_val_t align,
                   const std::nothrow_t&) noexcept {
  return CountedAlignedMalloc(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align,
                     const std::nothrow_t&) noexcept {
  return CountedAlignedMalloc(size, align);
}
// Every variant allocates with malloc/posix_memalign, so every delete is
// std::free.
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace ristretto::env {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr float kSentinel = -12345.0f;
// Binary-fraction fees keep the accounting exact: 1 + fb = 65/64,
// 1 − fs = 31/32.
constexpr double kBuyFee = 1.0 / 64;
constexpr double kSellFee = 1.0 / 32;

// tech[t][j] = 100·t + j: every feature value tells its row and column.
double Tech(int64_t t, int64_t j) { return 100.0 * t + j; }

// A market with the given price rows (T × n), F features per row
// (tech[t][j] = 100·t + j), one domain unless `domains` is given, symbols
// A0, A1, … and minimum order quantities 0.
std::shared_ptr<MarketData> MakeMarket(
    const std::vector<std::vector<double>>& rows, int64_t num_features,
    const std::vector<Domain>& domains = {}) {
  auto market = std::make_shared<MarketData>();
  market->num_rows = static_cast<int64_t>(rows.size());
  market->num_assets = static_cast<int>(rows.front().size());
  market->num_features = num_features;
  for (const std::vector<double>& row : rows) {
    market->price.insert(market->price.end(), row.begin(), row.end());
  }
  for (int64_t t = 0; t < market->num_rows; ++t) {
    for (int64_t j = 0; j < num_features; ++j) {
      market->tech.push_back(Tech(t, j));
    }
  }
  for (int i = 0; i < market->num_assets; ++i) {
    market->assets.push_back(AssetMeta{"A" + std::to_string(i), 0.0});
  }
  market->domains =
      domains.empty() ? std::vector<Domain>{{0, market->num_rows}} : domains;
  return market;
}

// `num_rows` copies of one price row.
std::vector<std::vector<double>> ConstantRows(int64_t num_rows,
                                              const std::vector<double>& row) {
  return std::vector<std::vector<double>>(static_cast<size_t>(num_rows), row);
}

// kManual options with numbers that are easy to follow by hand: C0 = 1000,
// fb = 1/64, fs = 1/32, no buy safety margin, no slippage (trades fill at
// the close; section 9 covers slippage and the volume cap), and
// norm_action = 1 so that action 1 buys C0 / price[slice row 0] coins.
VectorEnvOptions ManualOptions(int num_copies = 1) {
  VectorEnvOptions o;
  o.mode = EpisodeMode::kManual;
  o.num_copies = num_copies;
  o.env.initial_capital = 1000.0;
  o.env.buy_fee = kBuyFee;
  o.env.sell_fee = kSellFee;
  o.env.slippage_bps = 0.0;
  o.env.buy_safety = 1.0;
  o.env.norm_action = 1.0;
  // Sections 1-9 test the original's action model, forced trim included
  // (target weights: tests/env/target_weights_test.cc).
  o.env.action_model = ActionModel::kShares;
  o.env.position_observation = PositionObservation::kHoldings;
  o.env.cooldown_trim_bars = 48;
  o.env.min_notional = 0.0;
  o.env.reward_mode = RewardMode::kShaped;
  return o;
}

// Owns an env and the buffers a Step writes to. final_obs is refilled with
// kSentinel before every Step, so untouched rows can be recognised.
class Harness {
 public:
  static std::unique_ptr<Harness> Create(std::shared_ptr<const MarketData> m,
                                         const VectorEnvOptions& options) {
    absl::StatusOr<std::unique_ptr<VectorEnv>> env =
        VectorEnv::Create(std::move(m), options);
    if (!env.ok()) {
      ADD_FAILURE() << env.status();
      return nullptr;
    }
    return std::unique_ptr<Harness>(new Harness(std::move(*env)));
  }

  VectorEnv& env() { return *env_; }
  int size() const { return env_->observation_size(); }

  void Reset() { env_->Reset(obs_.data()); }
  absl::Status ResetCopy(int b, int64_t begin, int64_t num_rows) {
    return env_->ResetCopy(b, begin, num_rows, ObsPtr(b));
  }
  absl::Status Step(const std::vector<float>& actions) {
    std::fill(final_obs_.begin(), final_obs_.end(), kSentinel);
    const StepOutput out{obs_.data(), reward_.data(), done_.data(),
                         final_obs_.data()};
    return env_->Step(actions.data(), out);
  }

  float* ObsPtr(int b) { return obs_.data() + static_cast<size_t>(b) * size(); }
  std::vector<float> Obs(int b) const { return Row(obs_, b); }
  std::vector<float> FinalObs(int b) const { return Row(final_obs_, b); }
  std::vector<float> AllObs() const { return obs_; }
  float reward_out(int b) const { return reward_[b]; }
  uint8_t done_out(int b) const { return done_[b]; }

 private:
  explicit Harness(std::unique_ptr<VectorEnv> env)
      : env_(std::move(env)),
        obs_(static_cast<size_t>(env_->num_copies()) * size(), kSentinel),
        final_obs_(obs_.size(), kSentinel),
        reward_(static_cast<size_t>(env_->num_copies()), kSentinel),
        done_(static_cast<size_t>(env_->num_copies()), 7) {}

  std::vector<float> Row(const std::vector<float>& v, int b) const {
    const auto first = v.begin() + static_cast<ptrdiff_t>(b) * size();
    return std::vector<float>(first, first + size());
  }

  std::unique_ptr<VectorEnv> env_;
  std::vector<float> obs_, final_obs_, reward_;
  std::vector<uint8_t> done_;
};

// Uniform actions in [-limit, limit], deterministic by seed.
std::vector<float> RandomActions(Rng& rng, size_t count, double limit) {
  std::vector<float> a(count);
  for (float& x : a) x = static_cast<float>((2 * rng.Uniform() - 1) * limit);
  return a;
}

// ---------------------------------------------------------------------------
// 1. Observation layout.

TEST(VectorEnvTest, ObservationIsCashHoldingsThenNewestFeatureRowsFirst) {
  // n = 2 at prices 64 and 32, F = 2, L = 3, T = 12.
  std::shared_ptr<MarketData> market =
      MakeMarket(ConstantRows(12, {64, 32}), 2);
  VectorEnvOptions o = ManualOptions();
  o.env.lookback = 3;
  o.env.initial_capital = 1024.0;
  o.env.norm_cash = 1.0 / 1024;
  o.env.norm_stocks = 1.0 / 8;
  o.env.norm_tech = 1.0 / 4;  // tech·norm_tech = 25·t + j/4
  auto h = Harness::Create(market, o);
  ASSERT_NE(h, nullptr);
  // D = 1 + n + F·L = 1 + 2 + 2·3.
  EXPECT_EQ(h->env().observation_size(), 9);

  // Reset (kManual) places the copy at the start of the first domain:
  // t = L − 1 = 2 → row 2; tech rows 2, 1, 0 newest first.
  h->Reset();
  EXPECT_EQ(h->env().row(0), 2);
  EXPECT_THAT(h->Obs(0), ElementsAre(1.0f, 0.0f, 0.0f, 50.0f, 50.25f, 25.0f,
                                     25.25f, 0.0f, 0.25f));

  // Slice [1, 11): row = 1 + 2 = 3; cash 1024·(1/1024) = 1.
  ASSERT_TRUE(h->ResetCopy(0, 1, 10).ok());
  EXPECT_EQ(h->env().row(0), 3);
  EXPECT_THAT(h->Obs(0), ElementsAre(1.0f, 0.0f, 0.0f, 75.0f, 75.25f, 50.0f,
                                     50.25f, 25.0f, 25.25f));

  // Action 0.5 on asset 0: ans = 1024 / (64·1) = 16 → 8 coins at 64 cost
  // 512·65/64 = 520 → cash 504 → 504/1024 = 0.4921875; holding 8·(1/8) = 1.
  ASSERT_TRUE(h->Step({0.5f, 0.0f}).ok());
  EXPECT_EQ(h->env().row(0), 4);
  EXPECT_THAT(h->Obs(0), ElementsAre(0.4921875f, 1.0f, 0.0f, 100.0f, 100.25f,
                                     75.0f, 75.25f, 50.0f, 50.25f));
}

// With F = 0 the observation is cash and holdings only; the feature copy is
// skipped (a memcpy from the empty buffer's null data() would be undefined
// behaviour, which a -fsanitize=undefined build of this test catches).
TEST(VectorEnvTest, MarketWithoutFeaturesGivesCashAndHoldingsOnlyObservation) {
  std::vector<std::vector<double>> rows = ConstantRows(8, {128, 64});
  rows[0] = {125, 50};  // ans = [8, 20]
  VectorEnvOptions o = ManualOptions();
  o.env.lookback = 2;
  o.env.norm_cash = 1.0 / 1000;
  o.env.norm_stocks = 1.0 / 2;
  auto h = Harness::Create(MakeMarket(rows, 0), o);
  ASSERT_NE(h, nullptr);
  // D = 1 + n + F·L = 3.
  ASSERT_EQ(h->env().observation_size(), 3);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  EXPECT_THAT(h->Obs(0), ElementsAre(1.0f, 0.0f, 0.0f));
  // 2 coins of asset 0 at 128 cost 260 → cash 740 → 0.74; holding 2·0.5.
  ASSERT_TRUE(h->Step({0.25f, 0.0f}).ok());
  EXPECT_THAT(h->Obs(0), ElementsAre(0.74f, 1.0f, 0.0f));
}

// ---------------------------------------------------------------------------
// 2. Buys, sells, fees, trade counts.

TEST(VectorEnvTest, SingleBuyAndSellMoveCashHoldingsFeesAndTradeCounts) {
  // Row 0 [125, 50] → ans = [1000/125, 1000/50] = [8, 20]; row 1 [128, 50];
  // rows 2.. [160, 50]. Minimum quantities 0.5 and 1 coins.
  std::vector<std::vector<double>> rows = ConstantRows(8, {160, 50});
  rows[0] = {125, 50};
  rows[1] = {128, 50};
  std::shared_ptr<MarketData> market = MakeMarket(rows, 0);
  market->assets[0].min_order_qty = 0.5;
  market->assets[1].min_order_qty = 1.0;
  auto h = Harness::Create(market, ManualOptions());
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();
  EXPECT_EQ(env.action_scale(0, 0), 8.0f);
  EXPECT_EQ(env.action_scale(0, 1), 20.0f);

  // Step 1 at row 1: asset 0 buys 0.25·8 = 2 coins at 128: notional 256,
  // fee 256/64 = 4, cash 1000 − 260 = 740. Asset 1 wants 0.03125·20 = 0.625
  // coins < min 1: no trade.
  ASSERT_TRUE(h->Step({0.25f, 0.03125f}).ok());
  EXPECT_EQ(env.cash(0), 740.0);
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.holding(0, 1), 0.0f);
  EXPECT_EQ(env.trailing_high(0, 0), 128.0f);
  EXPECT_EQ(env.total_asset(0), 740.0 + 2 * 128.0);
  EXPECT_EQ(env.current_episode(0).buy_trades, 1);
  EXPECT_EQ(env.current_episode(0).buy_fees, 4.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 0);
  EXPECT_EQ(env.current_episode(0).sell_fees, 0.0);

  // Step 2 at row 2: asset 0 sells 0.125·8 = 1 coin at 160: notional 160,
  // fee 160/32 = 5, cash 740 + 155 = 895. Asset 1 wants to sell 10 coins but
  // holds none: no trade.
  ASSERT_TRUE(h->Step({-0.125f, -0.5f}).ok());
  EXPECT_EQ(env.cash(0), 895.0);
  EXPECT_EQ(env.holding(0, 0), 1.0f);
  EXPECT_EQ(env.holding(0, 1), 0.0f);
  EXPECT_EQ(env.total_asset(0), 895.0 + 160.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);
  EXPECT_EQ(env.current_episode(0).sell_fees, 5.0);
  EXPECT_EQ(env.current_episode(0).buy_trades, 1);
  EXPECT_EQ(env.current_episode(0).buy_fees, 4.0);

  // Step 3: a sell of 0.03125·8 = 0.25 coins is below the 0.5 minimum.
  ASSERT_TRUE(h->Step({-0.03125f, 0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 1.0f);
  EXPECT_EQ(env.cash(0), 895.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);

  // Step 4: selling 8 coins sells only the 1 held: cash 895 + 155 = 1050;
  // the emptied position's trailing high is reset.
  ASSERT_TRUE(h->Step({-1.0f, 0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 1050.0);
  EXPECT_EQ(env.trailing_high(0, 0), 0.0f);
  EXPECT_EQ(env.current_episode(0).sell_trades, 2);
  EXPECT_EQ(env.current_episode(0).sell_fees, 10.0);
  EXPECT_EQ(env.current_episode(0).steps, 4);
}

TEST(VectorEnvTest, BuyIsCappedByCashAboveReserveAfterFeeAndSafetyFactor) {
  std::vector<std::vector<double>> rows = ConstantRows(6, {128});
  rows[0] = {125};
  auto h = Harness::Create(MakeMarket(rows, 0), [] {
    VectorEnvOptions o = ManualOptions();
    o.env.buy_safety = 0.5;
    o.env.min_cash_reserve = 0.2;
    return o;
  }());
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 6).ok());
  // Action 10 wants 80 coins (10 240 at 128). avail = 1000 − 0.2·1000 = 800;
  // maxq = 800 / (65/64) / 128 · 0.5 = 3.0769…; cost maxq·128·65/64 = 400 →
  // cash 600 (exactly the reserve plus half the rest).
  ASSERT_TRUE(h->Step({10.0f}).ok());
  const double maxq = 800.0 / (1.0 + kBuyFee) / 128.0 * 0.5;
  EXPECT_EQ(h->env().holding(0, 0), static_cast<float>(maxq));
  EXPECT_NEAR(h->env().cash(0), 600.0, 1e-9);
  EXPECT_NEAR(h->env().current_episode(0).buy_fees, maxq * 128.0 / 64, 1e-12);
}

// ---------------------------------------------------------------------------
// 3. Forced trim.

TEST(VectorEnvTest, ForcedTrimSellsTrimFractionAfterCooldownTrimBars) {
  std::vector<std::vector<double>> rows = ConstantRows(12, {128, 50});
  rows[0] = {125, 50};  // ans[0] = 8
  VectorEnvOptions o = ManualOptions();
  o.env.cooldown_trim_bars = 3;
  o.env.trim_fraction = 0.25;
  auto h = Harness::Create(MakeMarket(rows, 0), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 12).ok());
  VectorEnv& env = h->env();
  const std::vector<float> hold_still = {0.0f, 0.0f};

  // Step 1 buys 2 coins at 128 → cash 740. The cooldown counts positions
  // held before the step's trades, so it is still 0.
  ASSERT_TRUE(h->Step({0.25f, 0.0f}).ok());
  EXPECT_EQ(env.cooldown(0, 0), 0.0f);
  // Steps 2, 3: cooldown 1, 2; no trim yet.
  ASSERT_TRUE(h->Step(hold_still).ok());
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.cooldown(0, 0), 2.0f);
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cash(0), 740.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 0);

  // Step 4: cooldown 3 ≥ 3 → trim 0.25·2 = 0.5 coins: notional 64, fee 2,
  // cash 740 + 62 = 802; cooldown back to 0.
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.holding(0, 0), 1.5f);
  EXPECT_EQ(env.cooldown(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 802.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);
  EXPECT_EQ(env.current_episode(0).sell_fees, 2.0);
  EXPECT_EQ(env.current_episode(0).buy_trades, 1);

  // Steps 5, 6, 7: the second trim sells 0.25·1.5 = 0.375 coins: notional
  // 48, fee 1.5, cash 802 + 46.5 = 848.5; holding 1.125.
  ASSERT_TRUE(h->Step(hold_still).ok());
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.holding(0, 0), 1.5f);
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.holding(0, 0), 1.125f);
  EXPECT_EQ(env.cash(0), 848.5);
  EXPECT_EQ(env.current_episode(0).sell_trades, 2);
  EXPECT_EQ(env.current_episode(0).sell_fees, 3.5);

  // Steps 8, 9 (cooldown 1, 2); step 9 sells 1 coin, which resets the
  // cooldown, so step 10 (cooldown 1) does not trim.
  ASSERT_TRUE(h->Step(hold_still).ok());
  ASSERT_TRUE(h->Step({-0.125f, 0.0f}).ok());
  EXPECT_EQ(env.cooldown(0, 0), 0.0f);
  EXPECT_EQ(env.holding(0, 0), 0.125f);
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.cooldown(0, 0), 1.0f);
  EXPECT_EQ(env.holding(0, 0), 0.125f);
  EXPECT_EQ(env.current_episode(0).sell_trades, 3);
}

// ---------------------------------------------------------------------------
// 4. Trailing stop.

TEST(VectorEnvTest, TrailingStopSellsWholeHoldingBelowHighTimesOneMinusPct) {
  // Asset 0: 125 (ans 8), 128 (buy), 160 (new high), 121 (above
  // 160·0.75 = 120), 119 (below) …
  std::vector<std::vector<double>> rows = ConstantRows(8, {119, 50});
  rows[0] = {125, 50};
  rows[1] = {128, 50};
  rows[2] = {160, 50};
  rows[3] = {121, 50};
  VectorEnvOptions o = ManualOptions();
  o.env.trailing_stop_pct = 0.25;
  auto h = Harness::Create(MakeMarket(rows, 0), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();
  const std::vector<float> hold_still = {0.0f, 0.0f};

  ASSERT_TRUE(h->Step({0.25f, 0.0f}).ok());  // 2 coins at 128, cash 740
  EXPECT_EQ(env.trailing_high(0, 0), 128.0f);
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.trailing_high(0, 0), 160.0f);
  ASSERT_TRUE(h->Step(hold_still).ok());  // 121 is not below 120
  EXPECT_EQ(env.trailing_high(0, 0), 160.0f);
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cooldown(0, 0), 2.0f);
  EXPECT_EQ(env.current_episode(0).sell_trades, 0);

  // 119 < 120: sell both coins: notional 238, fee 238/32 = 7.4375,
  // cash 740 + 230.5625 = 970.5625; holding, cooldown and high reset.
  ASSERT_TRUE(h->Step(hold_still).ok());
  EXPECT_EQ(env.holding(0, 0), 0.0f);
  EXPECT_EQ(env.cooldown(0, 0), 0.0f);
  EXPECT_EQ(env.trailing_high(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 970.5625);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);
  EXPECT_EQ(env.current_episode(0).sell_fees, 7.4375);
}

// ---------------------------------------------------------------------------
// 5. Non-finite actions.

TEST(VectorEnvTest, NonFiniteActionIsRejectedAndChangesNothing) {
  std::vector<std::vector<double>> rows = ConstantRows(10, {128, 64});
  rows[0] = {125, 50};
  std::shared_ptr<MarketData> market = MakeMarket(rows, 2);
  auto h = Harness::Create(market, ManualOptions(2));
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 10).ok());
  ASSERT_TRUE(h->ResetCopy(1, 0, 10).ok());
  ASSERT_TRUE(h->Step({0.25f, 0.1f, 0.1f, 0.25f}).ok());
  VectorEnv& env = h->env();

  const std::vector<float> obs_before = h->AllObs();
  const double cash0 = env.cash(0), cash1 = env.cash(1);
  const float hold00 = env.holding(0, 0), hold11 = env.holding(1, 1);
  const double value1 = env.total_asset(1), reward1 = env.reward(1);
  const int64_t row0 = env.row(0), row1 = env.row(1);
  const float reward_out1 = h->reward_out(1);
  const uint8_t done_out1 = h->done_out(1);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> actions;
    std::string where;
  };
  // The bad value is in the last copy, so an implementation that stepped
  // copy 0 before checking copy 1 would be caught.
  const Case cases[] = {
      {{0.5f, 0.5f, 0.5f, nan}, "copy 1 asset 1 is nan"},
      {{0.5f, 0.5f, inf, 0.5f}, "copy 1 asset 0 is inf"},
      {{0.5f, -inf, 0.5f, 0.5f}, "copy 0 asset 1 is -inf"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.where);
    const absl::Status s = h->Step(c.actions);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.where));
    EXPECT_EQ(h->AllObs(), obs_before);
    EXPECT_EQ(env.cash(0), cash0);
    EXPECT_EQ(env.cash(1), cash1);
    EXPECT_EQ(env.holding(0, 0), hold00);
    EXPECT_EQ(env.holding(1, 1), hold11);
    EXPECT_EQ(env.total_asset(1), value1);
    EXPECT_EQ(env.reward(1), reward1);
    EXPECT_EQ(env.row(0), row0);
    EXPECT_EQ(env.row(1), row1);
    EXPECT_EQ(env.current_episode(0).steps, 1);
    EXPECT_EQ(env.current_episode(1).steps, 1);
    // Nor are the optional outputs written.
    EXPECT_EQ(h->reward_out(1), reward_out1);
    EXPECT_EQ(h->done_out(1), done_out1);
  }
}

// ---------------------------------------------------------------------------
// 6. Action clipping.

TEST(VectorEnvTest, ActionsAreClippedToPlusMinusActionClip) {
  std::vector<std::vector<double>> rows = ConstantRows(8, {128});
  rows[0] = {125};  // ans = 8
  VectorEnvOptions o = ManualOptions();
  o.env.buy_fee = 0.0;
  o.env.sell_fee = 0.0;
  o.env.action_clip = 0.25;  // at most 0.25·8 = 2 coins per step
  auto h = Harness::Create(MakeMarket(rows, 0), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();

  ASSERT_TRUE(h->Step({5.0f}).ok());  // 2 coins, cash 1000 − 256
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cash(0), 744.0);
  ASSERT_TRUE(h->Step({1000.0f}).ok());  // 2 more
  EXPECT_EQ(env.holding(0, 0), 4.0f);
  EXPECT_EQ(env.cash(0), 488.0);
  ASSERT_TRUE(h->Step({-7.0f}).ok());  // sells 2, not all 4
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cash(0), 744.0);
  ASSERT_TRUE(h->Step({-3e38f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 1000.0);
}

// ---------------------------------------------------------------------------
// 7, 8. Rewards.

// Rows: [125, 50], [100, 50], [120, 40], [140, 50], [150, 50], [150, 50]…
// ans = [8, 20]; with fb = 0, eqw = [500/125, 500/50] = [4, 10].
std::shared_ptr<MarketData> RewardMarket() {
  std::vector<std::vector<double>> rows = ConstantRows(8, {150, 50});
  rows[0] = {125, 50};
  rows[1] = {100, 50};
  rows[2] = {120, 40};
  rows[3] = {140, 50};
  return MakeMarket(rows, 0);
}

TEST(VectorEnvTest, LogReturnRewardIsLogOfValueRatioTimesRewardScale) {
  VectorEnvOptions o = ManualOptions();
  o.env.reward_mode = RewardMode::kLogReturn;
  o.env.reward_scale = 3.0;
  auto h = Harness::Create(RewardMarket(), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 6).ok());
  // Step 1: 2 coins at 100 cost 200·65/64 = 203.125 → cash 796.875,
  // V' = 796.875 + 200 = 996.875.
  ASSERT_TRUE(h->Step({0.25f, 0.0f}).ok());
  EXPECT_EQ(h->env().total_asset(0), 996.875);
  EXPECT_DOUBLE_EQ(h->env().reward(0), 3.0 * std::log(996.875 / 1000.0));
  EXPECT_EQ(h->reward_out(0), static_cast<float>(h->env().reward(0)));
  // Step 2: V' = 796.875 + 2·120 = 1036.875.
  ASSERT_TRUE(h->Step({0.0f, 0.0f}).ok());
  EXPECT_DOUBLE_EQ(h->env().reward(0), 3.0 * std::log(1036.875 / 996.875));
}

TEST(VectorEnvTest,
     ShapedRewardIsHalfAlphaPlusThreeTenthsAbsolutePlusCashBonus) {
  VectorEnvOptions o = ManualOptions();
  o.env.buy_fee = 0.0;
  o.env.sell_fee = 0.0;
  o.env.norm_reward = 0.5;  // ρ
  auto h = Harness::Create(RewardMarket(), o);
  ASSERT_NE(h, nullptr);
  // Slice of 6 rows, L = 1: horizon = 6 − 2 = 4, decay at step k = 1 − k/4.
  ASSERT_TRUE(h->ResetCopy(0, 0, 6).ok());
  VectorEnv& env = h->env();
  // E = 4·125 + 10·50 = 1000.
  EXPECT_EQ(env.benchmark_value(0), 1000.0);
  const double rho = 0.5;

  // Step 1 (row 1, [100, 50]), decay 0.75: buy 2 coins at 100 → cash 800,
  // V' = 1000, Δb = 0. E' = 400 + 500 = 900, Δe = −100.
  // alpha = (0 + 100)·ρ·0.75; absolute = 0; mkt = −0.1 < 0 and
  // cash_ratio = 0.8 > 0.1 → bonus = 0.1·0.8·ρ·0.1.
  ASSERT_TRUE(h->Step({0.25f, 0.0f}).ok());
  EXPECT_EQ(env.benchmark_value(0), 900.0);
  EXPECT_NEAR(env.reward(0),
              0.5 * (100 * rho * 0.75) + 0.2 * (0.1 * 0.8 * rho * 0.1),
              1e-12);  // = 18.7508
  EXPECT_NEAR(env.reward(0), 18.7508, 1e-12);

  // Step 2 (row 2, [120, 40]), decay 0.5: V' = 800 + 240 = 1040, Δb = 40;
  // E' = 480 + 400 = 880, Δe = −20. alpha = 60·ρ·0.5 = 15;
  // absolute = 0.04·ρ·0.5 = 0.01; bonus = (20/900)·(800/1040)·ρ·0.1.
  ASSERT_TRUE(h->Step({0.0f, 0.0f}).ok());
  EXPECT_NEAR(
      env.reward(0),
      0.5 * 15 + 0.3 * 0.01 + 0.2 * ((20.0 / 900) * (800.0 / 1040) * rho * 0.1),
      1e-12);

  // Step 3 (row 3, [140, 50]), decay 0.25, a rising market (no bonus):
  // V' = 800 + 280 = 1080, Δb = 40; E' = 560 + 500 = 1060, Δe = 180.
  // alpha = (40 − 180)·ρ·0.25 = −17.5; absolute = 0.04·ρ·0.25 = 0.005.
  ASSERT_TRUE(h->Step({0.0f, 0.0f}).ok());
  EXPECT_NEAR(env.reward(0), 0.5 * -17.5 + 0.3 * 0.005, 1e-12);  // −8.7485
}

TEST(VectorEnvTest,
     TerminalRewardStepReturnsStepRewardAndDiscountedSumReturnsG) {
  VectorEnvOptions o = ManualOptions();
  o.env.reward_mode = RewardMode::kLogReturn;
  o.env.gamma = 0.5;
  VectorEnvOptions o_sum = o;
  o_sum.env.terminal_reward = TerminalReward::kDiscountedSum;
  auto step = Harness::Create(RewardMarket(), o);
  auto sum = Harness::Create(RewardMarket(), o_sum);
  ASSERT_NE(step, nullptr);
  ASSERT_NE(sum, nullptr);
  ASSERT_TRUE(step->ResetCopy(0, 0, 6).ok());
  ASSERT_TRUE(sum->ResetCopy(0, 0, 6).ok());

  // 4 steps. Buying 2 coins at 100 leaves cash 796.875, so
  // V = 996.875, 1036.875, 1076.875, 1096.875 at rows 1..4.
  const double v[] = {1000.0, 996.875, 1036.875, 1076.875, 1096.875};
  double r[5];
  for (int k = 1; k <= 4; ++k) {
    const std::vector<float> a = {k == 1 ? 0.25f : 0.0f, 0.0f};
    ASSERT_TRUE(step->Step(a).ok());
    ASSERT_TRUE(sum->Step(a).ok());
    r[k] = std::log(v[k] / v[k - 1]);
    EXPECT_EQ(step->env().total_asset(0), v[k]);
    EXPECT_EQ(step->done_out(0), k == 4 ? 1 : 0);
    EXPECT_EQ(sum->done_out(0), k == 4 ? 1 : 0);
    EXPECT_DOUBLE_EQ(step->env().reward(0), r[k]);
    if (k < 4) {
      EXPECT_EQ(sum->env().reward(0), step->env().reward(0));
    }
  }
  // G = r1·γ³ + r2·γ² + r3·γ + r4 with γ = 0.5.
  const double g = r[1] / 8 + r[2] / 4 + r[3] / 2 + r[4];
  EXPECT_DOUBLE_EQ(sum->env().reward(0), g);
  EXPECT_EQ(sum->reward_out(0), static_cast<float>(sum->env().reward(0)));
  EXPECT_DOUBLE_EQ(step->env().reward(0), r[4]);
  EXPECT_DOUBLE_EQ(step->env().discounted_return(0), g);
  EXPECT_DOUBLE_EQ(sum->env().discounted_return(0), g);
}

// ---------------------------------------------------------------------------
// 9. Episode length, done, auto-reset and final_obs.

// T = 40, n = 2, F = 2, prices varying with the row.
std::shared_ptr<MarketData> VaryingMarket(int64_t num_rows = 40) {
  std::vector<std::vector<double>> rows;
  for (int64_t t = 0; t < num_rows; ++t) {
    rows.push_back({100.0 + 3 * t - (t % 4) * 5, 50.0 + (t % 7) * 2});
  }
  return MakeMarket(rows, 2);
}

TEST(VectorEnvTest, TrainEpisodeLastsEpisodeStepsAndAutoResetReportsFinalObs) {
  std::shared_ptr<MarketData> market = VaryingMarket();
  VectorEnvOptions o = ManualOptions(2);
  o.mode = EpisodeMode::kTrain;
  o.env.lookback = 2;
  o.episode_steps = 5;  // slice of 5 + 2·2 = 9 rows
  o.seed = 11;
  VectorEnvOptions twin_options = o;
  twin_options.mode = EpisodeMode::kManual;
  auto h = Harness::Create(market, o);
  auto twin = Harness::Create(market, twin_options);
  ASSERT_NE(h, nullptr);
  ASSERT_NE(twin, nullptr);
  VectorEnv& env = h->env();
  const double c0 = o.env.initial_capital;

  h->Reset();
  for (int episode = 1; episode <= 3; ++episode) {
    SCOPED_TRACE(episode);
    // The twin plays the same slices, in kManual (no auto-reset).
    for (int b = 0; b < 2; ++b) {
      const int64_t begin = env.slice_begin(b);
      EXPECT_EQ(env.row(b), begin + 1);  // t = L − 1
      ASSERT_TRUE(twin->ResetCopy(b, begin, 9).ok());
      EXPECT_EQ(h->Obs(b), twin->Obs(b));
    }
    for (int k = 1; k <= 5; ++k) {
      SCOPED_TRACE(k);
      const std::vector<float> a =
          k == 1   ? std::vector<float>{0.3f, 0.5f, 0.5f, 0.2f}
          : k == 3 ? std::vector<float>{-0.1f, 0.0f, 0.0f, -0.1f}
                   : std::vector<float>(4, 0.0f);
      ASSERT_TRUE(h->Step(a).ok());
      ASSERT_TRUE(twin->Step(a).ok());
      for (int b = 0; b < 2; ++b) {
        EXPECT_EQ(h->done_out(b), k == 5 ? 1 : 0);
        EXPECT_EQ(twin->done_out(b), k == 5 ? 1 : 0);
        EXPECT_EQ(env.reward(b), twin->env().reward(b));
        EXPECT_FALSE(env.done(b));  // never left done: auto-reset
        if (k < 5) {
          EXPECT_EQ(h->Obs(b), twin->Obs(b));
          EXPECT_EQ(h->FinalObs(b), std::vector<float>(h->size(), kSentinel));
          EXPECT_EQ(env.episodes_finished(b), episode - 1);
          EXPECT_EQ(env.current_episode(b).steps, k);
          continue;
        }
        // The terminal observation is the one the twin produced at max_step.
        EXPECT_TRUE(twin->env().done(b));
        EXPECT_EQ(twin->env().row(b), twin->env().slice_begin(b) + 9 - 2 - 1);
        EXPECT_EQ(h->FinalObs(b), twin->Obs(b));
        EXPECT_EQ(env.episodes_finished(b), episode);
        const EpisodeInfo& last = env.last_episode(b);
        const EpisodeInfo& ref = twin->env().current_episode(b);
        const double value = twin->env().total_asset(b);
        EXPECT_EQ(last.steps, 5);
        EXPECT_EQ(last.buy_trades, ref.buy_trades);
        EXPECT_GT(last.buy_trades, 0);
        EXPECT_EQ(last.sell_trades, ref.sell_trades);
        EXPECT_EQ(last.buy_fees, ref.buy_fees);
        EXPECT_EQ(last.sell_fees, ref.sell_fees);
        EXPECT_EQ(last.net_return, value / c0);
        EXPECT_EQ(last.gross_return,
                  (value + ref.buy_fees + ref.sell_fees) / c0);
        // The copy already started its next episode, and obs holds the
        // new episode's first observation.
        EXPECT_EQ(env.current_episode(b).steps, 0);
        EXPECT_EQ(env.row(b), env.slice_begin(b) + 1);
        EXPECT_EQ(env.cash(b), c0);
        EXPECT_EQ(env.holding(b, 0), 0.0f);
        std::vector<float> fresh(static_cast<size_t>(h->size()));
        ASSERT_TRUE(
            twin->env().ResetCopy(b, env.slice_begin(b), 9, fresh.data()).ok());
        EXPECT_EQ(h->Obs(b), fresh);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// 10. Seeded training starts.

// Tiny market, T = 50, two domains [0, 30) and [30, 50).
std::shared_ptr<MarketData> TwoDomainMarket() {
  std::vector<std::vector<double>> rows(50);
  for (int t = 0; t < 50; ++t) rows[t] = {100.0 + t};
  return MakeMarket(rows, 0, {{0, 30}, {30, 50}});
}

VectorEnvOptions TrainOptions(int copies, int64_t episode_steps,
                              uint64_t seed) {
  VectorEnvOptions o = ManualOptions(copies);
  o.mode = EpisodeMode::kTrain;
  o.episode_steps = episode_steps;
  o.seed = seed;
  return o;
}

// Slice begins drawn by `resets` calls of Reset(), copy-major per reset.
std::vector<int64_t> ResetStarts(std::shared_ptr<const MarketData> market,
                                 const VectorEnvOptions& o, int resets) {
  auto h = Harness::Create(std::move(market), o);
  std::vector<int64_t> starts;
  if (h == nullptr) return starts;
  for (int r = 0; r < resets; ++r) {
    h->Reset();
    for (int b = 0; b < o.num_copies; ++b) {
      starts.push_back(h->env().slice_begin(b));
    }
  }
  return starts;
}

TEST(VectorEnvTest, TrainStartsAreReproducibleFromTheSeed) {
  std::shared_ptr<MarketData> market = TwoDomainMarket();
  const std::vector<int64_t> a =
      ResetStarts(market, TrainOptions(4, 5, 42), 300);
  const std::vector<int64_t> b =
      ResetStarts(market, TrainOptions(4, 5, 42), 300);
  const std::vector<int64_t> c =
      ResetStarts(market, TrainOptions(4, 5, 43), 300);
  ASSERT_EQ(a.size(), 1200u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Copies draw from their own streams: copy 0 and copy 1 differ.
  std::vector<int64_t> copy0, copy1;
  for (size_t k = 0; k < a.size(); k += 4) {
    copy0.push_back(a[k]);
    copy1.push_back(a[k + 1]);
  }
  EXPECT_NE(copy0, copy1);
}

TEST(VectorEnvTest, TrainEpisodesNeverCrossDomainsAndUseDomainsByValidStarts) {
  // episode_steps 5, L = 1 → slices of 7 rows. Valid starts: [0, 23] in the
  // first domain (24 starts) and [30, 43] in the second (14): 38 in all.
  std::shared_ptr<MarketData> market = TwoDomainMarket();
  const VectorEnvOptions o = TrainOptions(8, 5, 7);
  auto h = Harness::Create(market, o);
  ASSERT_NE(h, nullptr);
  VectorEnv& env = h->env();
  h->Reset();
  std::vector<int64_t> starts;
  const std::vector<float> actions(8, 0.2f);
  for (int round = 0; round < 500; ++round) {
    for (int b = 0; b < 8; ++b) starts.push_back(env.slice_begin(b));
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(h->Step(actions).ok());
  }
  for (int b = 0; b < 8; ++b) EXPECT_EQ(env.episodes_finished(b), 500);
  ASSERT_EQ(starts.size(), 4000u);

  std::vector<int> count(50, 0);
  int first_domain = 0;
  for (int64_t s : starts) {
    const bool in_first = s >= 0 && s + 5 + 2 <= 30;
    const bool in_second = s >= 30 && s + 5 + 2 <= 50;
    ASSERT_TRUE(in_first || in_second) << "slice begins at " << s;
    first_domain += in_first;
    ++count[static_cast<size_t>(s)];
  }
  // Expected share of the first domain 24/38 = 0.632; binomial σ over 4000
  // draws is 0.008, so ±0.05 is a generous (6σ) bound.
  EXPECT_NEAR(first_domain / 4000.0, 24.0 / 38.0, 0.05);
  // Every valid start is drawn roughly 4000/38 ≈ 105 times (σ ≈ 10).
  for (int s = 0; s < 50; ++s) {
    const bool valid = s <= 23 || (s >= 30 && s <= 43);
    if (!valid) {
      EXPECT_EQ(count[s], 0) << s;
    } else {
      EXPECT_GT(count[s], 50) << s;
      EXPECT_LT(count[s], 160) << s;
    }
  }
}

TEST(VectorEnvTest, TrainDomainsOptionIsIntersectedWithMarketDomains) {
  // [10, 40) against [0, 30) and [30, 50) → [10, 30) and [30, 40); slices
  // of 7 rows start in [10, 23] (14 starts) or [30, 33] (4 starts).
  std::shared_ptr<MarketData> market = TwoDomainMarket();
  VectorEnvOptions o = TrainOptions(4, 5, 3);
  o.domains = {{10, 40}};
  auto h = Harness::Create(market, o);
  ASSERT_NE(h, nullptr);
  const std::vector<Domain>& d = h->env().episode_domains();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].begin, 10);
  EXPECT_EQ(d[0].end, 30);
  EXPECT_EQ(d[1].begin, 30);
  EXPECT_EQ(d[1].end, 40);
  std::set<int64_t> seen;
  for (int r = 0; r < 500; ++r) {
    h->Reset();
    for (int b = 0; b < 4; ++b) {
      const int64_t s = h->env().slice_begin(b);
      EXPECT_TRUE((s >= 10 && s <= 23) || (s >= 30 && s <= 33)) << s;
      seen.insert(s);
    }
  }
  EXPECT_EQ(seen.size(), 18u);
}

// ---------------------------------------------------------------------------
// 11. Evaluation.

TEST(VectorEnvTest, EvaluateCopyPlaysWholeDomainBModDDeterministically) {
  // Domains [0, 10), [10, 16), [16, 30) with L = 2: episodes of
  // 10 − 4 = 6, 16 − 10 − 4 = 2 and 14 − 4 = 10 steps; copy 3 plays domain 0.
  std::shared_ptr<MarketData> market = VaryingMarket(30);
  market->domains = {{0, 10}, {10, 16}, {16, 30}};
  VectorEnvOptions o = ManualOptions(4);
  o.mode = EpisodeMode::kEvaluate;
  o.env.lookback = 2;
  o.seed = 1;
  VectorEnvOptions other_seed = o;
  other_seed.seed = 99;
  auto h = Harness::Create(market, o);
  auto g = Harness::Create(market, other_seed);
  ASSERT_NE(h, nullptr);
  ASSERT_NE(g, nullptr);
  VectorEnv& env = h->env();
  ASSERT_EQ(env.episode_domains().size(), 3u);

  const int64_t begin[4] = {0, 10, 16, 0};
  const int steps[4] = {6, 2, 10, 6};
  h->Reset();
  g->Reset();
  EXPECT_EQ(h->AllObs(), g->AllObs());
  Rng rng(5);
  for (int k = 1; k <= 30; ++k) {
    SCOPED_TRACE(k);
    std::vector<float> a = RandomActions(rng, 8, 0.3);
    a[6] = a[0];  // copy 3 acts like copy 0 (same domain)
    a[7] = a[1];
    ASSERT_TRUE(h->Step(a).ok());
    ASSERT_TRUE(g->Step(a).ok());
    EXPECT_EQ(h->AllObs(), g->AllObs());
    EXPECT_EQ(h->Obs(0), h->Obs(3));
    for (int b = 0; b < 4; ++b) {
      const bool done = k % steps[b] == 0;
      EXPECT_EQ(h->done_out(b), done ? 1 : 0) << b;
      EXPECT_EQ(env.reward(b), g->env().reward(b));
      EXPECT_EQ(env.slice_begin(b), begin[b]);
      EXPECT_EQ(env.episodes_finished(b), k / steps[b]);
      if (!done) {
        EXPECT_EQ(h->FinalObs(b), std::vector<float>(h->size(), kSentinel));
      } else {
        EXPECT_EQ(h->FinalObs(b), g->FinalObs(b));
        EXPECT_EQ(env.last_episode(b).steps, steps[b]);
        EXPECT_EQ(env.row(b), begin[b] + 1);
      }
    }
  }
  EXPECT_EQ(env.last_episode(0).net_return, env.last_episode(3).net_return);
}

TEST(VectorEnvTest, EvaluateDropsDomainsShorterThanTwoLookbacksPlusOne) {
  // L = 2 needs 5 rows; [10, 14) has 4 and is dropped.
  std::shared_ptr<MarketData> market = VaryingMarket(30);
  market->domains = {{0, 10}, {10, 14}, {14, 30}};
  VectorEnvOptions o = ManualOptions(2);
  o.mode = EpisodeMode::kEvaluate;
  o.env.lookback = 2;
  auto h = Harness::Create(market, o);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->env().episode_domains().size(), 2u);
  h->Reset();
  EXPECT_EQ(h->env().slice_begin(0), 0);
  EXPECT_EQ(h->env().slice_begin(1), 14);
}

// ---------------------------------------------------------------------------
// 12. Create errors.

TEST(VectorEnvTest, CreateRejectsBadOptionsWithInvalidArgument) {
  std::shared_ptr<MarketData> market = VaryingMarket(20);
  market->domains = {{0, 12}, {12, 20}};
  auto expect_error = [&](std::shared_ptr<const MarketData> m,
                          const VectorEnvOptions& o, const std::string& text) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::unique_ptr<VectorEnv>> env =
        VectorEnv::Create(std::move(m), o);
    ASSERT_FALSE(env.ok());
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(env.status().message()), HasSubstr(text));
  };
  VectorEnvOptions o = TrainOptions(1, 5, 0);

  VectorEnvOptions no_copies = o;
  no_copies.num_copies = 0;
  expect_error(market, no_copies, "num_copies must be >= 1, got 0");

  VectorEnvOptions no_lookback = o;
  no_lookback.env.lookback = 0;
  expect_error(market, no_lookback, "lookback = 0");

  VectorEnvOptions no_steps = o;
  no_steps.episode_steps = 0;
  expect_error(market, no_steps, "episode_steps must be >= 1, got 0");

  // L = 2, 10 steps need 14 rows; the domains have 12 and 8.
  VectorEnvOptions too_long = o;
  too_long.env.lookback = 2;
  too_long.episode_steps = 10;
  expect_error(market, too_long, "14 rows");

  expect_error(nullptr, o, "market is null");

  VectorEnvOptions outside = o;
  outside.domains = {{15, 25}};
  expect_error(market, outside, "[15, 25)");
  VectorEnvOptions empty = o;
  empty.domains = {{5, 5}};
  expect_error(market, empty, "[5, 5)");

  // An invalid market: a price row missing.
  auto broken = std::make_shared<MarketData>(*market);
  broken->price.pop_back();
  expect_error(broken, o, "expected T*n = 40");

  // The same options with a valid market are fine.
  EXPECT_TRUE(VectorEnv::Create(market, o).ok());
}

// ---------------------------------------------------------------------------
// 13. ResetCopy errors.

TEST(VectorEnvTest, ResetCopyRejectsBadSlicesAndCopiesAndKeepsTheCopy) {
  std::shared_ptr<MarketData> market = VaryingMarket(20);
  market->domains = {{0, 10}, {10, 20}};
  auto h = Harness::Create(market, ManualOptions(1));
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 10).ok());
  ASSERT_TRUE(h->Step({0.1f, 0.1f}).ok());
  const std::vector<float> obs = h->Obs(0);
  const double cash = h->env().cash(0);

  struct Case {
    int b;
    int64_t begin, rows;
    std::string text;
  };
  const Case cases[] = {
      {0, 8, 4, "rows [8, 12) are not inside one contiguous market domain"},
      {0, 15, 10, "rows [15, 25) are not inside"},  // leaves the market
      {0, -2, 5, "rows [-2, 3) are not inside"},
      {0, 0, 2, "at least 2*lookback+1 = 3 rows, got 2"},
      {1, 0, 5, "copy 1 out of range [0, 1)"},
      {-1, 0, 5, "copy -1 out of range [0, 1)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const absl::Status s =
        h->env().ResetCopy(c.b, c.begin, c.rows, h->ObsPtr(0));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.text));
    EXPECT_EQ(h->Obs(0), obs);
    EXPECT_EQ(h->env().row(0), 1);
    EXPECT_EQ(h->env().cash(0), cash);
  }
  // A whole second domain and a minimal slice are fine.
  ASSERT_TRUE(h->ResetCopy(0, 10, 10).ok());
  EXPECT_EQ(h->env().slice_begin(0), 10);
  EXPECT_TRUE(h->ResetCopy(0, 17, 3).ok());
}

// ---------------------------------------------------------------------------
// 14. Done copies without reset.

TEST(VectorEnvTest,
     StepOnDoneCopyWithoutResetFailsPreconditionAndStepsNothing) {
  std::shared_ptr<MarketData> market = VaryingMarket(20);
  auto h = Harness::Create(market, ManualOptions(2));
  ASSERT_NE(h, nullptr);
  const std::vector<float> a(4, 0.1f);
  // Before any reset every copy is done.
  EXPECT_EQ(h->Step(a).code(), absl::StatusCode::kFailedPrecondition);

  // Copy 0: 3 rows, L = 1 → one step; copy 1: 10 rows.
  ASSERT_TRUE(h->ResetCopy(0, 0, 3).ok());
  ASSERT_TRUE(h->ResetCopy(1, 0, 10).ok());
  ASSERT_TRUE(h->Step(a).ok());
  EXPECT_EQ(h->done_out(0), 1);
  EXPECT_EQ(h->done_out(1), 0);
  EXPECT_TRUE(h->env().done(0));  // kManual: no auto-reset
  EXPECT_EQ(h->env().row(1), 1);

  const absl::Status s = h->Step(a);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("copy 0"));
  EXPECT_EQ(h->env().row(1), 1);  // copy 1 was not stepped either
  EXPECT_EQ(h->env().current_episode(1).steps, 1);

  ASSERT_TRUE(h->ResetCopy(0, 0, 3).ok());
  EXPECT_TRUE(h->Step(a).ok());
  EXPECT_EQ(h->env().row(1), 2);
}

TEST(VectorEnvTest, TrainWithoutAutoResetFailsPreconditionUntilReset) {
  VectorEnvOptions o = TrainOptions(2, 3, 1);
  o.auto_reset = false;
  auto h = Harness::Create(TwoDomainMarket(), o);
  ASSERT_NE(h, nullptr);
  h->Reset();
  const std::vector<float> a(2, 0.0f);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(h->Step(a).ok());
  EXPECT_TRUE(h->env().done(0));
  EXPECT_TRUE(h->env().done(1));
  EXPECT_EQ(h->Step(a).code(), absl::StatusCode::kFailedPrecondition);
  h->Reset();
  EXPECT_TRUE(h->Step(a).ok());
}

// ---------------------------------------------------------------------------
// 15. Memory.

TEST(VectorEnvTest, ThousandCopiesShareTheMarketAndOwnLittlePerCopy) {
  absl::StatusOr<std::shared_ptr<const MarketData>> generated =
      GenerateBenchmarkMarket(7, 98, 50000, 5);
  ASSERT_TRUE(generated.ok()) << generated.status();
  std::shared_ptr<const MarketData> market = std::move(*generated);
  ASSERT_EQ(market.use_count(), 1);
  const size_t T = 50000, F = 98, n = 7;
  const size_t market_bytes = T * F * 8 + T * n * 8;

  VectorEnvOptions o;
  o.num_copies = 1024;
  g_allocated_bytes = 0;
  g_count_allocations = true;
  absl::StatusOr<std::unique_ptr<VectorEnv>> big = VectorEnv::Create(market, o);
  g_count_allocations = false;
  const int64_t create_bytes = g_allocated_bytes.load();
  ASSERT_TRUE(big.ok()) << big.status();
  // One reference for all 1024 copies.
  EXPECT_EQ(market.use_count(), 2);
  EXPECT_EQ(&(*big)->market(), market.get());
  EXPECT_LT((*big)->owned_bytes(), market_bytes + 1024 * 4096);
  // Everything Create allocated (a gross count) also stays below that.
  EXPECT_LT(static_cast<size_t>(create_bytes), market_bytes + 1024 * 4096);

  o.num_copies = 1;
  absl::StatusOr<std::unique_ptr<VectorEnv>> one = VectorEnv::Create(market, o);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(market.use_count(), 3);
  EXPECT_LT((*big)->owned_bytes() - (*one)->owned_bytes(), 1024u * 2048);

  // The env keeps the market alive on its own.
  const MarketData* raw = market.get();
  market.reset();
  EXPECT_EQ(&(*big)->market(), raw);
  EXPECT_EQ((*big)->market().num_rows, 50000);
}

// ---------------------------------------------------------------------------
// 16. Allocation-free Step.

TEST(VectorEnvTest, StepAllocatesNothingEvenWhenCopiesAutoReset) {
  absl::StatusOr<std::shared_ptr<const MarketData>> generated =
      GenerateBenchmarkMarket(7, 20, 3000, 3);
  ASSERT_TRUE(generated.ok()) << generated.status();
  // Volumes of 0 … 2 coins (a tenth of them 0) so that the volume cap binds
  // on some trades and blocks others.
  auto with_volume = std::make_shared<MarketData>(**generated);
  Rng volume_rng(5);
  for (size_t k = 0; k < with_volume->price.size(); ++k) {
    const double u = volume_rng.Uniform();
    with_volume->volume.push_back(u < 0.1 ? 0.0 : 2.0 * u);
  }
  const absl::StatusOr<std::shared_ptr<const MarketData>> market =
      std::shared_ptr<const MarketData>(with_volume);
  VectorEnvOptions o;
  o.num_copies = 64;
  o.episode_steps = 37;
  o.seed = 9;
  o.env.lookback = 4;
  o.env.norm_action = 1.0;
  // Every code path of a step: stops, trims, reserve, concentration terms,
  // slippage (the default 5 bps) and the volume cap.
  o.env.max_volume_share = 0.5;
  o.env.trailing_stop_pct = 0.02;
  o.env.cooldown_trim_bars = 5;
  o.env.min_cash_reserve = 0.1;
  o.env.concentration_penalty = 0.1;
  auto h = Harness::Create(*market, o);
  ASSERT_NE(h, nullptr);
  h->Reset();
  Rng rng(17);
  const size_t per_step = 64 * 7;
  const std::vector<float> actions = RandomActions(rng, 1000 * per_step, 0.2);
  std::vector<float> obs(64 * static_cast<size_t>(h->size()));
  std::vector<float> final_obs(obs.size()), reward(64);
  std::vector<uint8_t> done(64);
  const StepOutput out{obs.data(), reward.data(), done.data(),
                       final_obs.data()};
  VectorEnv& env = h->env();

  // The counter does see allocations (a control for the zero below).
  g_allocations = 0;
  g_count_allocations = true;
  auto control = std::make_unique<std::vector<double>>(3);
  g_count_allocations = false;
  EXPECT_EQ(g_allocations.load(), 2);  // the vector object and its buffer

  bool all_ok = true;
  g_allocations = 0;
  g_count_allocations = true;
  for (int k = 0; k < 1000; ++k) {
    all_ok &= env.Step(actions.data() + k * per_step, out).ok();
  }
  g_count_allocations = false;
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(g_allocations.load(), 0);

  // The loop did exercise auto-resets and trades: 1000 / 37 = 27 episodes.
  int64_t trades = 0, sells = 0;
  for (int b = 0; b < 64; ++b) {
    EXPECT_EQ(env.episodes_finished(b), 27);
    trades += env.last_episode(b).buy_trades;
    sells += env.last_episode(b).sell_trades;
  }
  EXPECT_GT(trades, 0);
  EXPECT_GT(sells, 0);
  EXPECT_GT(env.last_episode(0).slippage, 0.0);
}

// ---------------------------------------------------------------------------
// 17. Copies are independent.

TEST(VectorEnvTest, CopiesWithDifferentActionsMatchSeparateSingleCopyEnvs) {
  absl::StatusOr<std::shared_ptr<const MarketData>> market =
      GenerateBenchmarkMarket(3, 4, 400, 8);
  ASSERT_TRUE(market.ok()) << market.status();
  VectorEnvOptions o;
  o.mode = EpisodeMode::kManual;
  o.env.lookback = 2;
  o.env.norm_action = 1.0;
  o.env.trailing_stop_pct = 0.03;
  o.env.cooldown_trim_bars = 6;
  o.env.min_cash_reserve = 0.1;
  o.env.concentration_penalty = 0.1;
  VectorEnvOptions o3 = o;
  o3.num_copies = 3;
  auto all = Harness::Create(*market, o3);
  ASSERT_NE(all, nullptr);
  std::vector<std::unique_ptr<Harness>> single;
  for (int b = 0; b < 3; ++b) {
    single.push_back(Harness::Create(*market, o));
    ASSERT_NE(single.back(), nullptr);
    ASSERT_TRUE(single[b]->ResetCopy(0, 50, 300).ok());
    ASSERT_TRUE(all->ResetCopy(b, 50, 300).ok());
  }
  Rng rng(23);
  for (int k = 0; k < 296; ++k) {
    SCOPED_TRACE(k);
    const std::vector<float> a = RandomActions(rng, 9, 0.3);
    ASSERT_TRUE(all->Step(a).ok());
    for (int b = 0; b < 3; ++b) {
      ASSERT_TRUE(single[b]->Step({a[3 * b], a[3 * b + 1], a[3 * b + 2]}).ok());
      const VectorEnv& s = single[b]->env();
      EXPECT_EQ(all->Obs(b), single[b]->Obs(0));
      EXPECT_EQ(all->env().reward(b), s.reward(0));
      EXPECT_EQ(all->env().cash(b), s.cash(0));
      EXPECT_EQ(all->env().total_asset(b), s.total_asset(0));
      EXPECT_EQ(all->done_out(b), single[b]->done_out(0));
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(all->env().holding(b, i), s.holding(0, i));
      }
    }
  }
  EXPECT_TRUE(all->env().done(0));
  // Different actions did lead to different portfolios.
  EXPECT_NE(all->env().cash(0), all->env().cash(1));
  EXPECT_GT(all->env().current_episode(2).buy_trades, 0);
}

// ---------------------------------------------------------------------------
// 18. Zero prices.

TEST(VectorEnvTest, ZeroFirstPriceGivesZeroActionScaleAndThatAssetNeverTrades) {
  // Row 0 [125, 0]; rows 1.. [128, 64] except row 3 where asset 0 is 0.
  std::vector<std::vector<double>> rows = ConstantRows(8, {128, 64});
  rows[0] = {125, 0};
  rows[3] = {0, 64};
  VectorEnvOptions o = ManualOptions();
  o.env.buy_fee = 0.0;
  o.env.sell_fee = 0.0;
  auto h = Harness::Create(MakeMarket(rows, 0), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();
  EXPECT_EQ(env.action_scale(0, 0), 8.0f);
  EXPECT_EQ(env.action_scale(0, 1), 0.0f);
  // The benchmark leaves asset 1 out: eqw = [500/125, 0] = [4, 0];
  // E = 4·125 = 500.
  EXPECT_EQ(env.benchmark_value(0), 500.0);

  // Step 1: asset 0 buys 2 at 128 (cash 744); asset 1's 1000·0 = 0 coins.
  ASSERT_TRUE(h->Step({0.25f, 1000.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.holding(0, 1), 0.0f);
  EXPECT_EQ(env.cash(0), 744.0);
  EXPECT_EQ(env.benchmark_value(0), 512.0);  // 4·128
  ASSERT_TRUE(h->Step({0.0f, 1000.0f}).ok());
  EXPECT_EQ(env.holding(0, 1), 0.0f);
  // Step 3 at row 3, where asset 0's price is 0: neither sells nor buys.
  ASSERT_TRUE(h->Step({-0.25f, 1000.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cash(0), 744.0);
  EXPECT_EQ(env.total_asset(0), 744.0);
  EXPECT_TRUE(std::isfinite(env.reward(0)));
  ASSERT_TRUE(h->Step({0.25f, 1000.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 4.0f);
  EXPECT_EQ(env.holding(0, 1), 0.0f);
  EXPECT_EQ(env.cash(0), 488.0);
  EXPECT_EQ(env.current_episode(0).buy_trades, 2);
  EXPECT_EQ(env.current_episode(0).sell_trades, 0);
}

}  // namespace
}  // namespace ristretto::env

namespace ristretto::env {
namespace {

TEST(VectorEnvDomainsTest, OverlappingEpisodeDomainsAreRejected) {
  auto market = GenerateBenchmarkMarket(2, 3, 200, 1);
  ASSERT_TRUE(market.ok());
  VectorEnvOptions options;
  options.episode_steps = 10;
  options.domains = {Domain{0, 100}, Domain{50, 150}};
  auto env = VectorEnv::Create(*market, options);
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(env.status().message()),
              ::testing::HasSubstr("[0, 100) and [50, 150) overlap"));
}

TEST(VectorEnvDomainsTest, ExplicitResetClearsTheLastReward) {
  auto market = GenerateBenchmarkMarket(2, 3, 200, 1);
  ASSERT_TRUE(market.ok());
  VectorEnvOptions options;
  options.episode_steps = 10;
  options.env.reward_mode = RewardMode::kLogReturn;
  auto env = VectorEnv::Create(*market, options);
  ASSERT_TRUE(env.ok());
  std::vector<float> obs((*env)->observation_size());
  (*env)->Reset(obs.data());
  const float buy[2] = {50.0f, 50.0f};
  StepOutput out{obs.data(), nullptr, nullptr, nullptr};
  ASSERT_TRUE((*env)->Step(buy, out).ok());
  ASSERT_TRUE((*env)->Step(buy, out).ok());
  ASSERT_NE((*env)->reward(0), 0.0);  // holdings moved with the market
  (*env)->Reset(obs.data());
  EXPECT_EQ((*env)->reward(0), 0.0);
}

// ---------------------------------------------------------------------------
// 19. Execution costs: slippage and the volume cap.
//
// 625 bps = s = 1/16 keeps the arithmetic exact: buys fill at close·17/16,
// sells at close·15/16; fees on the filled notional (1 + fb = 65/64,
// 1 − fs = 31/32).

VectorEnvOptions SlippageOptions() {
  VectorEnvOptions o = ManualOptions();
  o.env.slippage_bps = 625.0;
  return o;
}

// Asset rows 125 (ans = 1000/125 = 8), 128, then `third`, 160 after.
std::shared_ptr<MarketData> CostMarket(double third) {
  std::vector<std::vector<double>> rows = ConstantRows(8, {160});
  rows[0] = {125};
  rows[1] = {128};
  rows[2] = {third};
  return MakeMarket(rows, 0);
}

TEST(VectorEnvCostTest, BuyFillsAboveAndSellBelowTheCloseWithFeesOnTheFill) {
  auto h = Harness::Create(CostMarket(160), SlippageOptions());
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();

  // Bar 1 (close 128): 0.25·8 = 2 coins filled at 128·17/16 = 136: notional
  // 272, fee 272/64 = 4.25, cash 1000 − 276.25 = 723.75; slippage
  // (136 − 128)·2 = 16. The position is valued at the close.
  ASSERT_TRUE(h->Step({0.25f}).ok());
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cash(0), 723.75);
  EXPECT_EQ(env.total_asset(0), 723.75 + 2 * 128.0);
  EXPECT_EQ(env.trailing_high(0, 0), 128.0f);  // the close, not the fill
  EXPECT_EQ(env.current_episode(0).buy_fees, 4.25);
  EXPECT_EQ(env.current_episode(0).slippage, 16.0);

  // Bar 2 (close 160): 0.125·8 = 1 coin filled at 160·15/16 = 150: fee
  // 150/32 = 4.6875, cash 723.75 + 145.3125 = 869.0625; slippage 16 + 10.
  ASSERT_TRUE(h->Step({-0.125f}).ok());
  EXPECT_EQ(env.holding(0, 0), 1.0f);
  EXPECT_EQ(env.cash(0), 869.0625);
  EXPECT_EQ(env.current_episode(0).sell_fees, 4.6875);
  EXPECT_EQ(env.current_episode(0).slippage, 26.0);
  EXPECT_EQ(env.current_episode(0).buy_trades, 1);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);
}

TEST(VectorEnvCostTest, AffordableBuyDividesTheCashByTheSlippedPrice) {
  VectorEnvOptions o = SlippageOptions();
  o.env.min_cash_reserve = 0.2;
  auto h = Harness::Create(CostMarket(160), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  // Action 10 wants 80 coins. avail = 800; maxq = 800/(65/64)/136 =
  // 5.7918…; its cost maxq·136·65/64 = 800 leaves exactly the reserve.
  ASSERT_TRUE(h->Step({10.0f}).ok());
  const double maxq = 800.0 / (1.0 + kBuyFee) / 136.0;
  EXPECT_EQ(h->env().holding(0, 0), static_cast<float>(maxq));
  EXPECT_NEAR(h->env().cash(0), 200.0, 1e-9);
  EXPECT_NEAR(h->env().current_episode(0).slippage, maxq * 8.0, 1e-12);
}

TEST(VectorEnvCostTest, ForcedTrimSellsAtTheSlippedPrice) {
  VectorEnvOptions o = SlippageOptions();
  o.env.cooldown_trim_bars = 1;
  o.env.trim_fraction = 0.25;
  auto h = Harness::Create(CostMarket(160), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();
  ASSERT_TRUE(h->Step({0.25f}).ok());  // 2 coins at 136, cash 723.75
  // Bar 2: cooldown 1 → trim 0.25·2 = 0.5 coins at 150: notional 75, fee
  // 75/32 = 2.34375, cash 723.75 + 72.65625 = 796.40625; slippage 16 + 5.
  ASSERT_TRUE(h->Step({0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 1.5f);
  EXPECT_EQ(env.cash(0), 796.40625);
  EXPECT_EQ(env.current_episode(0).sell_fees, 2.34375);
  EXPECT_EQ(env.current_episode(0).slippage, 21.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);
}

TEST(VectorEnvCostTest, TrailingStopSellsAtTheSlippedPrice) {
  VectorEnvOptions o = SlippageOptions();
  o.env.trailing_stop_pct = 0.25;
  auto h = Harness::Create(CostMarket(80), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();
  ASSERT_TRUE(h->Step({0.25f}).ok());  // 2 coins at 136, high 128
  // Bar 2: close 80 < 128·0.75 = 96 → both coins at 80·15/16 = 75:
  // notional 150, fee 4.6875, cash 723.75 + 145.3125; slippage 16 + 10.
  // (The stop compares closes: the fill does not trigger it.)
  ASSERT_TRUE(h->Step({0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.0f);
  EXPECT_EQ(env.trailing_high(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 869.0625);
  EXPECT_EQ(env.current_episode(0).sell_fees, 4.6875);
  EXPECT_EQ(env.current_episode(0).slippage, 26.0);
}

TEST(VectorEnvCostTest, EpisodeGrossReturnAddsBackFeesAndSlippage) {
  auto h = Harness::Create(CostMarket(160), SlippageOptions());
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 4).ok());  // L = 1: 2 steps
  ASSERT_TRUE(h->Step({0.25f}).ok());
  ASSERT_TRUE(h->Step({-0.125f}).ok());
  ASSERT_TRUE(h->env().done(0));
  const EpisodeInfo& info = h->env().last_episode(0);
  // V = 869.0625 + 1·160 = 1029.0625; fees 4.25 + 4.6875; slippage 26.
  EXPECT_EQ(info.net_return, 1029.0625 / 1000);
  EXPECT_EQ(info.gross_return, (1029.0625 + 8.9375 + 26.0) / 1000);
}

TEST(VectorEnvCostTest, BenchmarkBuysAtTheSlippedPriceLikeTheMetricsHelper) {
  // Two assets, the second with a zero first price (left out).
  std::vector<std::vector<double>> rows = ConstantRows(8, {160, 50});
  rows[0] = {125, 0};
  rows[1] = {128, 40};
  rows[3] = {100, 60};
  VectorEnvOptions o = SlippageOptions();
  auto h = Harness::Create(MakeMarket(rows, 0), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  std::vector<double> prices;
  for (const auto& r : rows) prices.insert(prices.end(), r.begin(), r.end());
  const std::vector<double> expected = EqualWeightBuyAndHold(
      prices, 2, 0, 8, o.env.initial_capital, o.env.buy_fee, 625.0);
  ASSERT_EQ(expected.size(), 8u);
  // eqw[0] = (1000/2) / (125·17/16·65/64): the slippage lowers B&H's coins.
  const double eqw0 = 500.0 / (125.0 * (17.0 / 16) * (65.0 / 64));
  EXPECT_NEAR(expected[0], eqw0 * 125.0, 1e-12);
  EXPECT_EQ(h->env().benchmark_value(0), expected[0]);
  for (int t = 1; t < 6; ++t) {
    ASSERT_TRUE(h->Step({0.0f, 0.0f}).ok());
    EXPECT_EQ(h->env().benchmark_value(0), expected[static_cast<size_t>(t)])
        << "row " << t;
  }
}

// Rows 125 (ans 8) then 128; volumes per row given; 1 asset.
std::shared_ptr<MarketData> VolumeMarket(const std::vector<double>& volume) {
  std::vector<std::vector<double>> rows = ConstantRows(8, {128});
  rows[0] = {125};
  std::shared_ptr<MarketData> market = MakeMarket(rows, 0);
  market->volume = volume;
  return market;
}

TEST(VectorEnvCostTest, VolumeCapClampsTradesAndAZeroVolumeBarTradesNothing) {
  // Cap = 0.1 · volume: bar 1 → 1 coin, bar 2 → 0 (a forward-filled bar),
  // bar 3 → 0.5, bar 4 → 10. No slippage, so only the cap is at work.
  VectorEnvOptions o = ManualOptions();
  o.env.max_volume_share = 0.1;
  o.env.cooldown_trim_bars = 1;
  o.env.trim_fraction = 0.5;
  auto h = Harness::Create(VolumeMarket({0, 10, 0, 5, 100, 100, 100, 100}), o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();

  // Bar 1: wants 2 coins, buys the cap of 1: cash 1000 − 128·65/64 = 870.
  ASSERT_TRUE(h->Step({0.25f}).ok());
  EXPECT_EQ(env.holding(0, 0), 1.0f);
  EXPECT_EQ(env.cash(0), 870.0);

  // Bar 2 (volume 0): neither the due trim (cooldown 1) nor the buy trade;
  // the cooldown is kept, so the trim is still due on the next bar.
  ASSERT_TRUE(h->Step({0.25f}).ok());
  EXPECT_EQ(env.holding(0, 0), 1.0f);
  EXPECT_EQ(env.cash(0), 870.0);
  EXPECT_EQ(env.cooldown(0, 0), 1.0f);
  EXPECT_EQ(env.current_episode(0).buy_trades, 1);
  EXPECT_EQ(env.current_episode(0).sell_trades, 0);

  // Bar 3 (cap 0.5): the trim sells 0.5·1 = 0.5 coins (cash + 64·31/32 =
  // 62 → 932) and uses the whole cap, so the buy that follows gets nothing.
  ASSERT_TRUE(h->Step({0.25f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.5f);
  EXPECT_EQ(env.cash(0), 932.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 1);
  EXPECT_EQ(env.current_episode(0).buy_trades, 1);

  // Bar 4 (cap 10): a sell of 8 sells the 0.5 held: cash 994.
  ASSERT_TRUE(h->Step({-1.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 994.0);
  EXPECT_EQ(env.current_episode(0).sell_trades, 2);
}

TEST(VectorEnvCostTest, VolumeCapLimitsTheSellAndAPartlyStoppedPosition) {
  VectorEnvOptions o = ManualOptions();
  o.env.max_volume_share = 0.25;
  o.env.trailing_stop_pct = 0.25;
  // Bar 1 buys 2 coins at 128; bar 2 (close 80, below 96) stops out only
  // 0.25·2 = 0.5 coins; bar 3 (close 80, volume 4 → cap 1) stops 1 more;
  // bar 4 sells the last 0.5 (cap 25).
  std::vector<std::vector<double>> rows = ConstantRows(8, {80});
  rows[0] = {125};
  rows[1] = {128};
  std::shared_ptr<MarketData> market = MakeMarket(rows, 0);
  market->volume = {0, 100, 2, 4, 100, 100, 100, 100};
  auto h = Harness::Create(market, o);
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  VectorEnv& env = h->env();
  ASSERT_TRUE(h->Step({0.25f}).ok());
  EXPECT_EQ(env.holding(0, 0), 2.0f);
  EXPECT_EQ(env.cash(0), 740.0);

  // Stop of 0.5 at 80: cash + 40·31/32 = 38.75. The high is kept, so the
  // stop fires again while the close stays below it.
  ASSERT_TRUE(h->Step({0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 1.5f);
  EXPECT_EQ(env.cash(0), 778.75);
  EXPECT_EQ(env.trailing_high(0, 0), 128.0f);
  ASSERT_TRUE(h->Step({0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.5f);
  EXPECT_EQ(env.cash(0), 778.75 + 77.5);
  EXPECT_EQ(env.current_episode(0).sell_trades, 2);
  ASSERT_TRUE(h->Step({0.0f}).ok());
  EXPECT_EQ(env.holding(0, 0), 0.0f);
  EXPECT_EQ(env.trailing_high(0, 0), 0.0f);
  EXPECT_EQ(env.cash(0), 778.75 + 77.5 + 38.75);
}

TEST(VectorEnvCostTest, CapThatNeverBindsChangesNothingBitForBit) {
  absl::StatusOr<std::shared_ptr<const MarketData>> generated =
      GenerateBenchmarkMarket(4, 6, 400, 11);
  ASSERT_TRUE(generated.ok()) << generated.status();
  auto with_volume = std::make_shared<MarketData>(**generated);
  with_volume->volume.assign(with_volume->price.size(), 1e12);
  VectorEnvOptions o;
  o.num_copies = 8;
  o.episode_steps = 50;
  o.seed = 3;
  o.env.trailing_stop_pct = 0.02;
  o.env.cooldown_trim_bars = 5;
  VectorEnvOptions capped = o;
  capped.env.max_volume_share = 1.0;
  auto a = Harness::Create(*generated, o);
  auto b = Harness::Create(with_volume, capped);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  a->Reset();
  b->Reset();
  Rng rng(8);
  for (int k = 0; k < 120; ++k) {
    const std::vector<float> actions = RandomActions(rng, 8 * 4, 0.5);
    ASSERT_TRUE(a->Step(actions).ok());
    ASSERT_TRUE(b->Step(actions).ok());
  }
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(a->env().cash(c), b->env().cash(c));
    EXPECT_EQ(a->env().total_asset(c), b->env().total_asset(c));
    EXPECT_EQ(a->env().current_episode(c).slippage,
              b->env().current_episode(c).slippage);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(a->env().holding(c, i), b->env().holding(c, i));
    }
  }
  EXPECT_EQ(a->AllObs(), b->AllObs());
}

TEST(VectorEnvCostTest, ZeroSlippageFillsAtTheCloseAndCountsNothing) {
  // The same two bars as the first cost test with slippage 0: the fills are
  // the closes (the pre-slippage env) and the counter stays 0.
  auto h = Harness::Create(CostMarket(160), ManualOptions());
  ASSERT_NE(h, nullptr);
  ASSERT_TRUE(h->ResetCopy(0, 0, 8).ok());
  ASSERT_TRUE(h->Step({0.25f}).ok());
  ASSERT_TRUE(h->Step({-0.125f}).ok());
  // 1000 − 2·128·65/64 + 160·31/32 = 1000 − 260 + 155.
  EXPECT_EQ(h->env().cash(0), 895.0);
  EXPECT_EQ(h->env().current_episode(0).slippage, 0.0);
}

TEST(VectorEnvCostTest, CostOptionsAreValidatedByName) {
  std::shared_ptr<MarketData> market = CostMarket(160);
  auto expect_error = [&](std::shared_ptr<const MarketData> m,
                          const VectorEnvOptions& o, const std::string& text) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::unique_ptr<VectorEnv>> env =
        VectorEnv::Create(std::move(m), o);
    ASSERT_FALSE(env.ok());
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(env.status().message()), HasSubstr(text));
  };
  VectorEnvOptions o = ManualOptions();
  for (double bad : {-1.0, 1000.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    VectorEnvOptions x = o;
    x.env.slippage_bps = bad;
    expect_error(market, x, "env option slippage_bps = ");
  }
  for (double bad : {-0.1, 1.5}) {
    VectorEnvOptions x = o;
    x.env.max_volume_share = bad;
    expect_error(market, x, "env option max_volume_share = ");
  }
  // A cap needs volumes.
  VectorEnvOptions cap = o;
  cap.env.max_volume_share = 0.1;
  expect_error(market, cap, "max_volume_share = 0.1 needs bar volumes");
  // Volumes of the wrong shape or negative make the market invalid.
  auto short_volume = std::make_shared<MarketData>(*market);
  short_volume->volume = {1.0, 2.0};
  expect_error(short_volume, o, "volume has 2 values");
  auto negative = std::make_shared<MarketData>(*market);
  negative->volume.assign(negative->price.size(), 1.0);
  negative->volume[3] = -1.0;
  expect_error(negative, o, "volume of asset 0 at row 3 is -1");
  // Edge values are accepted.
  VectorEnvOptions edge = o;
  edge.env.slippage_bps = 999.0;
  edge.env.max_volume_share = 1.0;
  auto with_volume = std::make_shared<MarketData>(*market);
  with_volume->volume.assign(with_volume->price.size(), 0.0);
  EXPECT_TRUE(VectorEnv::Create(with_volume, edge).ok());
}

}  // namespace
}  // namespace ristretto::env
