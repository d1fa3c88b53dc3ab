// The target-weight action model (EnvOptions::action_model = kWeights, the
// default; docs/env_actions.md): softmax weights, the no-trade band, sells
// before buys with pro-rata buys, the minimum notional, the rewards, and
// equivariance to the order of the assets.
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/rng.h"
#include "env/env_options.h"
#include "env/market_data.h"
#include "env/vector_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::env {
namespace {

// n assets, F features per asset (asset-major columns), T rows of a seeded
// random walk with volumes and per-asset minimum quantities.
std::shared_ptr<MarketData> RandomMarket(int n, int f, int64_t T,
                                         uint64_t seed) {
  auto m = std::make_shared<MarketData>();
  m->num_rows = T;
  m->num_assets = n;
  m->num_features = static_cast<int64_t>(n) * f;
  Rng rng(seed);
  std::vector<double> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[i] = 0.01 + 100.0 * rng.Uniform();
  for (int64_t t = 0; t < T; ++t) {
    for (int i = 0; i < n; ++i) {
      p[i] *= std::exp(0.03 * rng.Normal());
      m->price.push_back(p[i]);
      m->volume.push_back(rng.Uniform() < 0.05 ? 0.0
                                               : 50.0 * rng.Uniform() / p[i]);
    }
    for (int64_t j = 0; j < m->num_features; ++j) {
      m->tech.push_back(rng.Normal());
    }
  }
  for (int i = 0; i < n; ++i) {
    m->assets.push_back(
        AssetMeta{"A" + std::to_string(i), i % 2 == 0 ? 0.0 : 0.001 / p[i]});
  }
  m->domains = {Domain{0, T}};
  return m;
}

// The market with its assets in the order perm (new asset k is old
// perm[k]); feature columns move with their asset.
std::shared_ptr<MarketData> Permuted(const MarketData& m,
                                     const std::vector<int>& perm) {
  auto out = std::make_shared<MarketData>(m);
  const int n = m.num_assets;
  const int64_t f = m.num_features / n;
  for (int64_t t = 0; t < m.num_rows; ++t) {
    for (int k = 0; k < n; ++k) {
      out->price[t * n + k] = m.price[t * n + perm[k]];
      out->volume[t * n + k] = m.volume[t * n + perm[k]];
      for (int64_t j = 0; j < f; ++j) {
        out->tech[t * m.num_features + k * f + j] =
            m.tech[t * m.num_features + perm[k] * f + j];
      }
    }
  }
  for (int k = 0; k < n; ++k) out->assets[k] = m.assets[perm[k]];
  return out;
}

// Assets X and Y over 12 rows without features: X at x_price(t), Y at 5.
std::shared_ptr<MarketData> TwoAssetMarket(double (*x_price)(int64_t t)) {
  auto m = std::make_shared<MarketData>();
  m->num_rows = 12;
  m->num_assets = 2;
  m->num_features = 0;
  for (int64_t t = 0; t < 12; ++t) {
    m->price.push_back(x_price(t));
    m->price.push_back(5.0);
  }
  m->assets = {AssetMeta{"X", 0.0}, AssetMeta{"Y", 0.0}};
  m->domains = {Domain{0, 12}};
  return m;
}

VectorEnvOptions WeightsOptions() {
  VectorEnvOptions o;
  o.mode = EpisodeMode::kManual;
  o.env.initial_capital = 1000.0;
  o.env.lookback = 2;
  return o;
}

std::unique_ptr<VectorEnv> MakeEnv(std::shared_ptr<const MarketData> m,
                                   const VectorEnvOptions& o) {
  auto env = VectorEnv::Create(std::move(m), o);
  EXPECT_TRUE(env.ok()) << env.status();
  return env.ok() ? std::move(*env) : nullptr;
}

double Value(const VectorEnv& env, const MarketData& m, int b) {
  double v = env.cash(b);
  const double* p = m.price.data() + env.row(b) * m.num_assets;
  for (int i = 0; i < m.num_assets; ++i) {
    v += static_cast<double>(env.holding(b, i)) * p[i];
  }
  return v;
}

TEST(TargetWeightsTest, DefaultsAreTargetWeightsLogReturnAndNoTrim) {
  const EnvOptions o;
  EXPECT_EQ(o.action_model, ActionModel::kWeights);
  EXPECT_EQ(o.reward_mode, RewardMode::kLogReturn);
  EXPECT_EQ(o.cooldown_trim_bars, 0);
  EXPECT_TRUE(o.Validate().ok());
}

TEST(TargetWeightsTest, ZeroActionsHoldAnEqualShareInEachAssetAndCash) {
  auto m = RandomMarket(4, 2, 60, 3);
  VectorEnvOptions o = WeightsOptions();
  o.env.slippage_bps = 0;
  o.env.min_notional = 0;
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> zero(4, 0.0f);
  ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
  // The value before trading is C0; each asset's target is C0/5 at the
  // close, bought with its fee from cash.
  const double* p = m->price.data() + env->row(0) * 4;
  double fees = 0.0;
  for (int i = 0; i < 4; ++i) {
    const double held = static_cast<double>(env->holding(0, i)) * p[i];
    EXPECT_NEAR(held, 200.0, 200.0 * 1e-6) << "asset " << i;
    fees += held * o.env.buy_fee;
  }
  EXPECT_NEAR(env->cash(0), 1000.0 - 800.0 - fees, 1e-3);
  EXPECT_EQ(env->current_episode(0).buy_trades, 4);
  EXPECT_NEAR(env->current_episode(0).traded_notional, 800.0, 1e-3);
}

TEST(TargetWeightsTest, NoTradeInsideTheBandAndATradeBackToTargetOutside) {
  // Asset 0 moves 2 % at row 3 and doubles at row 6; asset 1 is flat.
  auto m = TwoAssetMarket(
      [](int64_t t) { return t < 3 ? 10.0 : (t < 6 ? 10.2 : 20.0); });
  VectorEnvOptions o = WeightsOptions();
  o.env.lookback = 1;
  o.env.rebalance_band = 0.05;
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> zero(2, 0.0f);
  // Row 1: from cash to 1/3 each.
  ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
  const int64_t trades =
      env->current_episode(0).buy_trades + env->current_episode(0).sell_trades;
  EXPECT_EQ(trades, 2);
  const float x = env->holding(0, 0), y = env->holding(0, 1);
  // Rows 2-5: asset 0 moves 2 %, its weight by under a point: no trade.
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
  }
  EXPECT_EQ(
      env->current_episode(0).buy_trades + env->current_episode(0).sell_trades,
      trades);
  EXPECT_EQ(env->holding(0, 0), x);
  EXPECT_EQ(env->holding(0, 1), y);
  // Row 6: asset 0 doubles; its weight (~1/2) is far above 1/3: it is sold
  // back to a third of the value, and the others bought up to theirs.
  ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
  EXPECT_LT(env->holding(0, 0), x);
  EXPECT_GT(env->holding(0, 1), y);
  const double v = Value(*env, *m, 0);
  EXPECT_NEAR(env->holding(0, 0) * 20.0 / v, 1.0 / 3.0, 0.01);
  EXPECT_NEAR(env->holding(0, 1) * 5.0 / v, 1.0 / 3.0, 0.01);
}

TEST(TargetWeightsTest, BuysAreScaledProRataWhenCashIsShort) {
  // All in: every action +1 with a large logit scale targets ~1/n each and
  // no cash; the fees make that unaffordable, so each buy is scaled by the
  // same factor: equal value in each asset whatever its position.
  auto m = RandomMarket(5, 1, 30, 11);
  for (AssetMeta& a : m->assets) a.min_order_qty = 0.0;
  VectorEnvOptions o = WeightsOptions();
  o.env.weight_logit_scale = 50.0;
  o.env.buy_safety = 1.0;
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> all_in(5, 1.0f);
  ASSERT_TRUE(env->Step(all_in.data(), StepOutput{obs.data()}).ok());
  const double* p = m->price.data() + env->row(0) * 5;
  const double first = static_cast<double>(env->holding(0, 0)) * p[0];
  for (int i = 1; i < 5; ++i) {
    EXPECT_NEAR(static_cast<double>(env->holding(0, i)) * p[i], first,
                first * 1e-6)
        << "asset " << i;
  }
  // All of it spent, but for the float rounding of the holdings (each
  // rounded down: never more than the cash).
  EXPECT_GE(env->cash(0), 0.0);
  EXPECT_LT(env->cash(0), 1e-6 * 1000.0);
  EXPECT_EQ(env->current_episode(0).buy_trades, 5);
}

TEST(TargetWeightsTest, OrdersBelowTheMinimumNotionalAreSkipped) {
  auto m = RandomMarket(3, 1, 30, 5);
  for (AssetMeta& a : m->assets) a.min_order_qty = 0.0;
  VectorEnvOptions o = WeightsOptions();
  o.env.rebalance_band = 0.0;
  o.env.min_notional = 400.0;  // above C0/4, the target of each asset
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> zero(3, 0.0f);
  ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
  EXPECT_EQ(env->current_episode(0).buy_trades, 0);
  EXPECT_EQ(env->cash(0), 1000.0);
}

TEST(TargetWeightsTest, ForcedTrimIsOffByDefault) {
  auto m = RandomMarket(2, 1, 200, 9);
  VectorEnvOptions o = WeightsOptions();
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  // Hold (nearly) only asset 0: its target weight is 0.993, which it can
  // never exceed by the band, so nothing but a trim could sell it.
  const std::vector<float> hold = {1.0f, -1.0f};
  for (int k = 0; k < 150; ++k) {
    ASSERT_TRUE(env->Step(hold.data(), StepOutput{obs.data()}).ok());
  }
  EXPECT_GT(env->holding(0, 0), 0.0f);
  EXPECT_GT(env->cooldown(0, 0), 100.0f);
}

TEST(TargetWeightsTest, PermutingTheAssetsPermutesEveryResult) {
  // Every code path of a weights step: band, min quantities, min notional,
  // slippage, volume cap, trailing stop, reserve, turnover penalty.
  const int n = 5;
  auto m = RandomMarket(n, 2, 400, 21);
  const std::vector<int> perm = {3, 0, 4, 2, 1};
  auto pm = Permuted(*m, perm);
  for (RewardMode mode :
       {RewardMode::kLogReturn, RewardMode::kDifferentialSharpe}) {
    VectorEnvOptions o = WeightsOptions();
    o.num_copies = 3;
    o.env.reward_mode = mode;
    o.env.max_volume_share = 0.5;
    o.env.trailing_stop_pct = 0.05;
    o.env.min_cash_reserve = 0.05;
    o.env.turnover_penalty = 0.5;
    o.env.min_notional = 2.0;
    auto a = MakeEnv(m, o);
    auto b = MakeEnv(pm, o);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    const size_t D = static_cast<size_t>(a->observation_size());
    std::vector<float> obs_a(3 * D), obs_b(3 * D), r_a(3), r_b(3);
    a->Reset(obs_a.data());
    b->Reset(obs_b.data());
    Rng rng(77);
    std::vector<float> act_a(3 * n), act_b(3 * n);
    int64_t trades = 0;
    for (int step = 0; step < 390; ++step) {
      for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < n; ++i) {
          act_a[c * n + i] = static_cast<float>(std::tanh(2 * rng.Normal()));
        }
        for (int k = 0; k < n; ++k) act_b[c * n + k] = act_a[c * n + perm[k]];
      }
      ASSERT_TRUE(
          a->Step(act_a.data(), StepOutput{obs_a.data(), r_a.data()}).ok());
      ASSERT_TRUE(
          b->Step(act_b.data(), StepOutput{obs_b.data(), r_b.data()}).ok());
      for (int c = 0; c < 3; ++c) {
        const double tol = 1e-9 * std::max(1.0, std::fabs(a->cash(c)));
        ASSERT_NEAR(a->cash(c), b->cash(c), tol) << "step " << step;
        ASSERT_NEAR(a->total_asset(c), b->total_asset(c),
                    1e-9 * a->total_asset(c));
        ASSERT_NEAR(a->reward(c), b->reward(c),
                    1e-7 * std::max(1.0, std::fabs(a->reward(c))));
        for (int k = 0; k < n; ++k) {
          const float ha = a->holding(c, perm[k]), hb = b->holding(c, k);
          ASSERT_NEAR(ha, hb, 1e-5f * std::max(ha, 1e-3f))
              << "step " << step << " copy " << c << " asset " << k;
        }
      }
    }
    for (int c = 0; c < 3; ++c) {
      const EpisodeInfo& ia = a->current_episode(c);
      const EpisodeInfo& ib = b->current_episode(c);
      EXPECT_EQ(ia.buy_trades, ib.buy_trades);
      EXPECT_EQ(ia.sell_trades, ib.sell_trades);
      EXPECT_NEAR(ia.buy_fees + ia.sell_fees, ib.buy_fees + ib.sell_fees, 1e-6);
      trades += ia.buy_trades + ia.sell_trades;
    }
    EXPECT_GT(trades, 100);  // the test exercised trading
  }
}

TEST(TargetWeightsTest, TurnoverPenaltyChargesTheTradedShareOfValue) {
  auto m = RandomMarket(2, 1, 30, 4);
  for (AssetMeta& a : m->assets) a.min_order_qty = 0.0;
  VectorEnvOptions plain = WeightsOptions();
  VectorEnvOptions penalised = plain;
  penalised.env.turnover_penalty = 0.1;
  auto a = MakeEnv(m, plain);
  auto b = MakeEnv(m, penalised);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<float> obs(a->observation_size());
  a->Reset(obs.data());
  b->Reset(obs.data());
  const std::vector<float> zero(2, 0.0f);
  ASSERT_TRUE(a->Step(zero.data(), StepOutput{obs.data()}).ok());
  ASSERT_TRUE(b->Step(zero.data(), StepOutput{obs.data()}).ok());
  // From cash at C0: traded notional / C0, times lambda.
  const double turnover = a->current_episode(0).traded_notional / 1000.0;
  EXPECT_GT(turnover, 0.5);
  EXPECT_NEAR(a->reward(0) - b->reward(0), 0.1 * turnover, 1e-12);
}

TEST(TargetWeightsTest, DifferentialSharpeIsZeroFirstThenFiniteAndClipped) {
  auto m = RandomMarket(3, 1, 300, 8);
  VectorEnvOptions o = WeightsOptions();
  o.env.reward_mode = RewardMode::kDifferentialSharpe;
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> zero(3, 0.0f);
  ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
  EXPECT_EQ(env->reward(0), 0.0);  // no variance yet
  int nonzero = 0;
  for (int k = 0; k < 200; ++k) {
    ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
    ASSERT_TRUE(std::isfinite(env->reward(0)));
    ASSERT_LE(std::fabs(env->reward(0)), kMaxDifferentialSharpe);
    nonzero += env->reward(0) != 0.0;
  }
  EXPECT_GT(nonzero, 150);
}

TEST(TargetWeightsTest, BadOptionsAreRefusedByName) {
  auto m = RandomMarket(2, 1, 30, 4);
  struct Case {
    const char* key;
    void (*set)(EnvOptions*);
  };
  const Case cases[] = {
      {"rebalance_band", [](EnvOptions* e) { e->rebalance_band = 1.0; }},
      {"rebalance_band", [](EnvOptions* e) { e->rebalance_band = -0.1; }},
      {"rebalance_band", [](EnvOptions* e) { e->rebalance_band = NAN; }},
      {"rebalance_rate", [](EnvOptions* e) { e->rebalance_rate = 0.0; }},
      {"rebalance_rate", [](EnvOptions* e) { e->rebalance_rate = 1.5; }},
      {"rebalance_rate", [](EnvOptions* e) { e->rebalance_rate = NAN; }},
      {"weight_logit_scale",
       [](EnvOptions* e) { e->weight_logit_scale = INFINITY; }},
      {"weight_logit_scale", [](EnvOptions* e) { e->weight_logit_scale = 0; }},
      {"min_notional", [](EnvOptions* e) { e->min_notional = -1; }},
      {"turnover_penalty", [](EnvOptions* e) { e->turnover_penalty = NAN; }},
      {"dsr_eta", [](EnvOptions* e) { e->dsr_eta = 1.0; }},
      {"cooldown_trim_bars", [](EnvOptions* e) { e->cooldown_trim_bars = -1; }},
      {"decision_bars", [](EnvOptions* e) { e->decision_bars = 0; }},
      {"decision_bars", [](EnvOptions* e) { e->decision_bars = 10001; }},
      {"decision_bars",
       [](EnvOptions* e) {
         e->decision_bars = 24;
         e->trailing_stop_pct = 0.1;
       }},
      {"decision_bars",
       [](EnvOptions* e) {
         e->decision_bars = 2;
         e->cooldown_trim_bars = 48;
       }},
  };
  for (const Case& c : cases) {
    VectorEnvOptions o = WeightsOptions();
    c.set(&o.env);
    auto env = VectorEnv::Create(m, o);
    ASSERT_FALSE(env.ok()) << c.key;
    EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(env.status().message()),
                ::testing::HasSubstr(c.key));
  }
  ActionModel model;
  const absl::Status s = ParseActionModel("portfolio", &model);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("portfolio"));
  PositionObservation position;
  const absl::Status p = ParsePositionObservation("coins", &position);
  EXPECT_EQ(p.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.message()), ::testing::HasSubstr("coins"));
}

// The default observation starts with the account's weights: the cash
// share, then each asset's share of the value at the observation's close.
TEST(TargetWeightsTest, TheObservationShowsTheWeightsHeld) {
  auto m = RandomMarket(3, 2, 40, 8);
  VectorEnvOptions o = WeightsOptions();
  ASSERT_EQ(o.env.position_observation, PositionObservation::kWeights);
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  EXPECT_EQ(obs[0], 1.0f);  // all cash
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(obs[i], 0.0f);
  const std::vector<float> action = {0.3f, 0.1f, 0.2f};
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(env->Step(action.data(), StepOutput{obs.data()}).ok());
    const double v = Value(*env, *m, 0);
    const double* p = m->price.data() + env->row(0) * 3;
    EXPECT_NEAR(obs[0], env->cash(0) / v, 1e-6);
    double sum = obs[0];
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(obs[1 + i], env->holding(0, i) * p[i] / v, 1e-6);
      EXPECT_GT(obs[1 + i], 0.05f);  // every asset is held
      sum += obs[1 + i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  // The holdings observation is the original's: cash and coins, scaled.
  o.env.position_observation = PositionObservation::kHoldings;
  auto original = MakeEnv(m, o);
  ASSERT_NE(original, nullptr);
  original->Reset(obs.data());
  ASSERT_TRUE(original->Step(action.data(), StepOutput{obs.data()}).ok());
  EXPECT_FLOAT_EQ(obs[0], static_cast<float>(original->cash(0) / 2048));
  EXPECT_FLOAT_EQ(obs[1], original->holding(0, 0) / 256);
}

// rebalance_rate r: an asset outside the band is traded r of the way to
// its target, so the position closes the gap geometrically.
TEST(TargetWeightsTest, APartialRateTradesThatShareOfTheGap) {
  auto m = TwoAssetMarket([](int64_t) { return 10.0; });  // flat prices
  VectorEnvOptions o = WeightsOptions();
  o.env.lookback = 1;
  o.env.slippage_bps = 0;
  o.env.buy_fee = o.env.sell_fee = 0;
  o.env.min_notional = 0;
  o.env.rebalance_band = 0;
  o.env.rebalance_rate = 0.5;
  auto env = MakeEnv(m, o);
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> zero(2, 0.0f);  // target 1/3 each
  double gap = 1.0 / 3.0;                  // asset 0's weight starts at 0
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(env->Step(zero.data(), StepOutput{obs.data()}).ok());
    gap *= 0.5;
    const double v = Value(*env, *m, 0);
    EXPECT_NEAR(v, 1000.0, 1e-6);  // no costs, flat prices
    EXPECT_NEAR(env->holding(0, 0) * 10.0 / v, 1.0 / 3.0 - gap, 1e-5) << k;
    EXPECT_NEAR(obs[1], 1.0 / 3.0 - gap, 1e-5) << k;
  }
  // Rate 1 (the default) reaches the target in one bar.
  o.env.rebalance_rate = 1.0;
  auto full = MakeEnv(m, o);
  ASSERT_NE(full, nullptr);
  full->Reset(obs.data());
  ASSERT_TRUE(full->Step(zero.data(), StepOutput{obs.data()}).ok());
  EXPECT_NEAR(full->holding(0, 0) * 10.0 / 1000.0, 1.0 / 3.0, 1e-5);
}

TEST(TargetWeightsTest, NonFiniteActionsChangeNothing) {
  auto m = RandomMarket(2, 1, 30, 4);
  auto env = MakeEnv(m, WeightsOptions());
  ASSERT_NE(env, nullptr);
  std::vector<float> obs(env->observation_size());
  env->Reset(obs.data());
  const std::vector<float> bad = {0.5f, NAN};
  const absl::Status s = env->Step(bad.data(), StepOutput{obs.data()});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(env->cash(0), 1000.0);
  EXPECT_EQ(env->row(0), 1);
}

// decision_bars = k: one step trades on the bar after its observation,
// exactly as a one-bar step does, then holds the portfolio untouched for
// k − 1 more bars; its reward is the log return of the whole stretch (the
// turnover penalty charged once), and an episode's last step stops at its
// end.
TEST(TargetWeightsTest, ADecisionTradesOnceAndHoldsForItsBars) {
  auto m = RandomMarket(3, 2, 40, 21);
  VectorEnvOptions every_bar = WeightsOptions();
  every_bar.env.turnover_penalty = 0.05;
  VectorEnvOptions daily = every_bar;
  daily.env.decision_bars = 5;
  auto one = MakeEnv(m, every_bar);
  auto five = MakeEnv(m, daily);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(five, nullptr);
  std::vector<float> obs1(one->observation_size());
  std::vector<float> obs5(five->observation_size());
  one->Reset(obs1.data());
  five->Reset(obs5.data());
  const int64_t start = five->row(0);
  const std::vector<float> action = {0.7f, -0.4f, 0.1f};
  ASSERT_TRUE(one->Step(action.data(), StepOutput{obs1.data()}).ok());
  ASSERT_TRUE(five->Step(action.data(), StepOutput{obs5.data()}).ok());
  // The same trades at the same close…
  EXPECT_EQ(five->cash(0), one->cash(0));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(five->holding(0, i), one->holding(0, i));
  EXPECT_EQ(five->current_episode(0).traded_notional,
            one->current_episode(0).traded_notional);
  // …then held to the fifth bar, where the value and the reward are taken.
  EXPECT_EQ(one->row(0), start + 1);
  EXPECT_EQ(five->row(0), start + 5);
  EXPECT_DOUBLE_EQ(five->total_asset(0), Value(*five, *m, 0));
  const double turnover = one->current_episode(0).traded_notional / 1000.0;
  EXPECT_GT(turnover, 0.3);
  EXPECT_NEAR(five->reward(0),
              std::log(five->total_asset(0) / 1000.0) - 0.05 * turnover, 1e-12);
  EXPECT_EQ(five->current_episode(0).steps, 1);
  // The observation is the one a one-bar env shows at that row.
  std::vector<float> later(one->observation_size());
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(one->Step(action.data(), StepOutput{later.data()}).ok());
  }
  ASSERT_EQ(one->row(0), five->row(0));
  const int n = 3, pos = 1 + n;  // features after the cash and asset weights
  for (size_t j = pos; j < later.size(); ++j) {
    EXPECT_EQ(obs5[j], later[j]) << "feature " << j;
  }
  // The episode: 40 rows, lookback 2, so 36 bars, in ⌈36/5⌉ = 8 steps, the
  // last one 1 bar long; the portfolio moves only on a step's first bar.
  int steps = 1;
  bool done = false;
  uint8_t d = 0;
  while (!done) {
    std::vector<float> before(3);
    for (int i = 0; i < 3; ++i) before[i] = five->holding(0, i);
    const int64_t from = five->row(0);
    const std::vector<float> flip = {steps % 2 ? -0.9f : 0.9f, 0.2f, -0.3f};
    ASSERT_TRUE(
        five->Step(flip.data(), StepOutput{obs5.data(), nullptr, &d}).ok());
    ++steps;
    done = d != 0;
    EXPECT_EQ(five->row(0), std::min<int64_t>(from + 5, start + 36));
  }
  EXPECT_EQ(steps, 8);
  EXPECT_EQ(five->row(0), start + 36);
  EXPECT_EQ(five->last_episode(0).steps, 8);
}

}  // namespace
}  // namespace ristretto::env
