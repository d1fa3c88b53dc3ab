// The chunk value bounds derived from a run's contract and market: exact
// on hand-made markets, and never exceeded by honest envs (random policies
// on the shipped synthetic markets, the golden traces of the original env).
#include "learner/chunk_limits.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/rng.h"
#include "env/golden_replay.h"
#include "env/synthetic.h"
#include "env/vector_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

using ::testing::HasSubstr;

PolicyContract ContractFor(const env::MarketData& market,
                           const env::EnvOptions& options,
                           const NetworkOptions& network = {}) {
  PolicyContract c;
  c.lookback = options.lookback;
  c.obs_size = static_cast<int>(1 + market.num_assets +
                                market.num_features * options.lookback);
  c.action_size = market.num_assets;
  c.env = options;
  c.network = network;
  return c;
}

// One asset, one feature, one domain: prices 100 → 110 → 99 → 99.
std::shared_ptr<env::MarketData> TinyMarket() {
  auto m = std::make_shared<env::MarketData>();
  m->num_rows = 4;
  m->num_assets = 1;
  m->num_features = 1;
  m->price = {100, 110, 99, 99};
  m->tech = {-3, 0, 5, 1};
  m->assets = {env::AssetMeta{}};
  m->assets[0].symbol = "AAA";
  m->domains = {env::Domain{0, 4}};
  return m;
}

TEST(ChunkLimitsTest, MarketMovesAreTheBestGrowthAndTheExtremeBarRatios) {
  auto m = TinyMarket();
  MarketMoves one = ScanMarketMoves(*m, 1);
  EXPECT_DOUBLE_EQ(one.max_growth, 1.1);
  EXPECT_DOUBLE_EQ(one.max_step_ratio, 1.1);
  EXPECT_DOUBLE_EQ(one.min_step_ratio, 0.9);
  EXPECT_FALSE(one.has_zero_price);
  // A second domain rising 100 → 120 → 144: growth compounds inside a
  // window, never across the gap between domains.
  m->num_rows = 7;
  m->price = {100, 110, 99, 99, 100, 120, 144};
  m->tech = {-3, 0, 5, 1, 0, 0, 0};
  m->domains = {env::Domain{0, 4}, env::Domain{4, 7}};
  EXPECT_NEAR(ScanMarketMoves(*m, 2).max_growth, 1.44, 1e-12);
  EXPECT_NEAR(ScanMarketMoves(*m, 1).max_growth, 1.2, 1e-12);
  EXPECT_NEAR(ScanMarketMoves(*m, 100).max_growth, 1.44, 1e-12);
  // A zero price is flagged and the smallest ratio becomes 0.
  m->price[2] = 0;
  const MarketMoves zero = ScanMarketMoves(*m, 100);
  EXPECT_TRUE(zero.has_zero_price);
  EXPECT_EQ(zero.min_step_ratio, 0.0);
  // Through the gap the holding is valued at its last positive price:
  // 110 → (0) → 99 is no growth.
  EXPECT_NEAR(zero.max_growth, 1.44, 1e-12);
}

TEST(ChunkLimitsTest, BoundsFollowTheContractOnAHandMadeMarket) {
  auto m = TinyMarket();
  env::EnvOptions o;
  o.action_model = env::ActionModel::kShares;
  o.position_observation = env::PositionObservation::kHoldings;
  o.reward_mode = env::RewardMode::kLogReturn;
  o.reward_scale = 100;
  o.buy_fee = o.sell_fee = 0.001;
  o.slippage_bps = 10;
  // Episodes of 1 step (slice rows 3: windows of 2 transitions).
  absl::StatusOr<ChunkValueBounds> b =
      DeriveChunkValueBounds(ContractFor(*m, o), *m, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->obs.size(), 3u);
  const double growth = 1.1;  // 100 → 110 → 99 → 99, windows of two bars
  // Cash up to C0·G·norm_cash, holdings up to C0/p_min·min(G, steps/
  // norm_action)·norm_stocks (p_min = 99), features their column's range.
  EXPECT_NEAR(b->obs[0].hi, 500 * growth / 2048, 2e-3 * 500 * growth / 2048);
  EXPECT_GE(b->obs[0].hi, 500 * growth / 2048);
  EXPECT_LE(b->obs[0].lo, 0.0f);
  EXPECT_EQ(b->obs[1].lo, 0.0f);
  EXPECT_NEAR(b->obs[1].hi, 500.0 / 99 / 256, 2e-3 * 500.0 / 99 / 256);
  EXPECT_GE(b->obs[1].hi, 500.0 / 99 / 256);
  EXPECT_NEAR(b->obs[2].lo, -3.0 / 16384, 1e-6);
  EXPECT_NEAR(b->obs[2].hi, 5.0 / 16384, 1e-6);
  // log(V'/V)·scale within [log(k·0.9), log(1.1)]·100, k the round trip's
  // fees and slippage.
  const double k = 0.999 * 0.999 / (1.001 * 1.001);
  EXPECT_NEAR(b->reward.hi, std::log(1.1) * 100, 0.02);
  EXPECT_GE(b->reward.hi, std::log(1.1) * 100);
  EXPECT_NEAR(b->reward.lo, std::log(k * 0.9) * 100, 0.02);
  EXPECT_LE(b->reward.lo, std::log(k * 0.9) * 100);
  // The discounted-sum terminal reward multiplies the step range by
  // Σ_{k<S} γ^k (S = 2 steps here: 1 + 0.99).
  o.terminal_reward = env::TerminalReward::kDiscountedSum;
  absl::StatusOr<ChunkValueBounds> g =
      DeriveChunkValueBounds(ContractFor(*m, o), *m, 2);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_NEAR(g->reward.hi, std::log(1.1) * 100 * 1.99, 0.05);
  // Log probabilities: at most A·(20 − ½log 2π) without the tanh
  // correction; the correction adds 2·|u| per action (|u| <= 1e4).
  NetworkOptions net;
  net.log_prob = LogProbMode::kUncorrected;
  absl::StatusOr<ChunkValueBounds> u =
      DeriveChunkValueBounds(ContractFor(*m, o, net), *m, 2);
  ASSERT_TRUE(u.ok());
  EXPECT_NEAR(u->log_prob.hi, 20 - 0.9189385, 0.05);
  EXPECT_NEAR(g->log_prob.hi, 20 - 0.9189385 + 2e4, 25);
  EXPECT_LT(u->log_prob.lo, -300);
  EXPECT_GT(u->log_prob.lo, -1000);
  EXPECT_EQ(u->action.hi, 1e4f);
  EXPECT_EQ(u->action.lo, -1e4f);
}

TEST(ChunkLimitsTest, TargetWeightsTurnoverPenaltyAndDifferentialSharpe) {
  auto m = TinyMarket();
  env::EnvOptions o;  // target weights, log return
  o.reward_scale = 100;
  o.buy_fee = o.sell_fee = 0.001;
  o.slippage_bps = 10;
  absl::StatusOr<ChunkValueBounds> b =
      DeriveChunkValueBounds(ContractFor(*m, o), *m, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  // The default position observation is the account's weights: cash and
  // each asset in [0, 1], up to a float quotient's rounding.
  for (int i = 0; i < 2; ++i) {
    EXPECT_LE(b->obs[i].lo, 0.0f);
    EXPECT_GT(b->obs[i].lo, -2e-3f);
    EXPECT_GE(b->obs[i].hi, 1.0f);
    EXPECT_LT(b->obs[i].hi, 1.002f);
  }
  // With the original's holdings observation, a target-weight holding is
  // bounded by the value alone: C0·G / p_min.
  env::EnvOptions held = o;
  held.position_observation = env::PositionObservation::kHoldings;
  absl::StatusOr<ChunkValueBounds> h =
      DeriveChunkValueBounds(ContractFor(*m, held), *m, 1);
  ASSERT_TRUE(h.ok()) << h.status();
  const double growth = 1.1;
  EXPECT_NEAR(h->obs[1].hi, 500 * growth / 99 / 256,
              2e-3 * 500 * growth / 99 / 256);
  EXPECT_GE(h->obs[1].hi, 500 * growth / 99 / 256);
  // The turnover penalty lowers the floor by 2λ (at most twice the value
  // traded in a step), times the scale; the ceiling is unchanged.
  o.turnover_penalty = 0.5;
  absl::StatusOr<ChunkValueBounds> p =
      DeriveChunkValueBounds(ContractFor(*m, o), *m, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->reward.lo, b->reward.lo - 2 * 0.5 * 100, 0.2);
  EXPECT_LE(p->reward.lo, b->reward.lo - 2 * 0.5 * 100);
  EXPECT_EQ(p->reward.hi, b->reward.hi);
  // The differential Sharpe ratio is clipped by the env.
  o.reward_mode = env::RewardMode::kDifferentialSharpe;
  absl::StatusOr<ChunkValueBounds> d =
      DeriveChunkValueBounds(ContractFor(*m, o), *m, 1);
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR(d->reward.hi, env::kMaxDifferentialSharpe * 100, 1.5);
  EXPECT_GE(d->reward.hi, env::kMaxDifferentialSharpe * 100);
  EXPECT_LE(d->reward.lo, -env::kMaxDifferentialSharpe * 100);
}

TEST(ChunkLimitsTest, ContractsThatDoNotFitTheMarketAreRefused) {
  auto m = TinyMarket();
  env::EnvOptions o;
  PolicyContract c = ContractFor(*m, o);
  c.obs_size = 5;
  EXPECT_EQ(DeriveChunkValueBounds(c, *m, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeriveChunkValueBounds(ContractFor(*m, o), *m, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.gamma = 2;
  EXPECT_THAT(
      std::string(
          DeriveChunkValueBounds(ContractFor(*m, o), *m, 8).status().message()),
      HasSubstr("gamma"));
}

// Largest |value| / |bound| seen, per field (printed: how much room the
// bounds leave honest data).
struct Tightness {
  double cash = 0, holdings = 0, features = 0, reward = 0, action = 0,
         log_prob = 0;
  std::string bounds;  // the last bounds, described
};

double Ratio(float v, const ValueRange& r) {
  if (v >= 0) return r.hi > 0 ? v / r.hi : 0.0;
  return r.lo < 0 ? v / r.lo : 0.0;
}

// A random policy (Gaussian means drawn afresh every step, log std
// `log_std`) on `market` with the contract's env, `copies` × `steps` env
// steps; every value an actor would send must lie inside the bounds.
void ExpectRandomPolicyWithinBounds(
    std::shared_ptr<const env::MarketData> market, const env::EnvOptions& o,
    LogProbMode mode, double mean_std, float log_std, int64_t episode_steps,
    int copies, int steps, Tightness* seen) {
  NetworkOptions net;
  net.log_prob = mode;
  const PolicyContract contract = ContractFor(*market, o, net);
  absl::StatusOr<ChunkValueBounds> b =
      DeriveChunkValueBounds(contract, *market, episode_steps);
  ASSERT_TRUE(b.ok()) << b.status();
  seen->bounds = DescribeChunkValueBounds(*b, market->num_assets);
  env::VectorEnvOptions vo;
  vo.env = o;
  vo.num_copies = copies;
  vo.episode_steps = episode_steps;
  vo.seed = 11;
  absl::StatusOr<std::unique_ptr<env::VectorEnv>> e =
      env::VectorEnv::Create(market, vo);
  ASSERT_TRUE(e.ok()) << e.status();
  const int D = contract.obs_size, A = contract.action_size;
  std::vector<float> obs(static_cast<size_t>(copies) * D),
      final_obs(obs.size()), reward(copies), actions(copies * A);
  std::vector<uint8_t> done(copies);
  (*e)->Reset(obs.data());
  Rng rng(3);
  const float std = std::exp(log_std), inv_std = std::exp(-log_std);
  constexpr float kHalfLog2Pi = 0.91893853320467274178f;
  constexpr float kLog2 = 0.69314718055994530942f;
  auto check_obs = [&](const float* row, int step) {
    for (int j = 0; j < D; ++j) {
      ASSERT_TRUE(b->obs[j].Contains(row[j]))
          << "step " << step << " element " << j << " = " << row[j]
          << " outside [" << b->obs[j].lo << ", " << b->obs[j].hi << "]";
      double& block = j == 0                    ? seen->cash
                      : j <= market->num_assets ? seen->holdings
                                                : seen->features;
      block = std::max(block, Ratio(row[j], b->obs[j]));
    }
  };
  for (int t = 0; t < steps; ++t) {
    for (int c = 0; c < copies; ++c) check_obs(&obs[c * D], t);
    for (int c = 0; c < copies; ++c) {
      // PolicySampler::Sample's float arithmetic.
      float sum = 0.0f, log_det = 0.0f;
      for (int j = 0; j < A; ++j) {
        const auto mean = static_cast<float>(rng.Normal() * mean_std);
        const float noise = static_cast<float>(rng.Normal());
        const float u = mean + std * noise;
        actions[c * A + j] = std::tanh(u);
        const float z = (u - mean) * inv_std;
        sum += -0.5f * z * z - log_std - kHalfLog2Pi;
        const float m2u = -2.0f * u;
        const float softplus = m2u > 20.0f ? m2u : std::log1p(std::exp(m2u));
        log_det += 2.0f * (kLog2 - u - softplus);
        ASSERT_TRUE(b->action.Contains(u)) << u;
        seen->action = std::max(seen->action, Ratio(u, b->action));
      }
      const float lp =
          mode == LogProbMode::kTanhCorrected ? sum - log_det : sum;
      ASSERT_TRUE(b->log_prob.Contains(lp))
          << lp << " outside [" << b->log_prob.lo << ", " << b->log_prob.hi
          << "]";
      seen->log_prob = std::max(seen->log_prob, Ratio(lp, b->log_prob));
    }
    env::StepOutput out{obs.data(), reward.data(), done.data(),
                        final_obs.data()};
    ASSERT_TRUE((*e)->Step(actions.data(), out).ok());
    for (int c = 0; c < copies; ++c) {
      ASSERT_TRUE(b->reward.Contains(reward[c]))
          << "step " << t << " reward " << reward[c] << " outside ["
          << b->reward.lo << ", " << b->reward.hi << "]";
      seen->reward = std::max(seen->reward, Ratio(reward[c], b->reward));
      if (done[c]) check_obs(&final_obs[c * D], t);
    }
  }
}

void Print(const char* name, const Tightness& t) {
  std::cout << name << ": largest honest |value| / bound: cash " << t.cash
            << ", holdings " << t.holdings << ", features " << t.features
            << ", reward " << t.reward << ", action " << t.action
            << ", log_prob " << t.log_prob << "; bounds " << t.bounds << "\n";
}

std::shared_ptr<const env::MarketData> Synthetic(
    const env::SyntheticMarketOptions& s) {
  absl::StatusOr<env::Dataset> d = env::GenerateSyntheticDataset(s);
  EXPECT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::shared_ptr<const env::MarketData>> m =
      env::MarketData::FromDataset(*d);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

// The demo's market (`ristretto env demo`: 7 synthetic assets, seed 7) with
// the default contract (shaped reward, tanh-corrected log probabilities):
// 16 copies × 250 steps = 4000 random-policy steps with short episodes (so
// several end and send terminal observations), from timid to saturated.
TEST(ChunkLimitsTest, RandomPoliciesOnTheDemoMarketStayWithinTheBounds) {
  env::SyntheticMarketOptions s;
  s.num_rows = 3000;
  s.seed = 7;
  const auto market = Synthetic(s);
  Tightness t;
  ExpectRandomPolicyWithinBounds(market, env::EnvOptions{},
                                 LogProbMode::kTanhCorrected, 0.5, -0.5f, 100,
                                 16, 250, &t);
  ExpectRandomPolicyWithinBounds(market, env::EnvOptions{},
                                 LogProbMode::kUncorrected, 3.0, 2.0f, 100, 16,
                                 250, &t);
  // Every shaped term on: reserve, concentration, trailing stop, the
  // discounted-sum terminal reward, a vanishing log std.
  env::EnvOptions o;
  o.min_cash_reserve = 0.1;
  o.concentration_penalty = 0.05;
  o.trailing_stop_pct = 0.05;
  o.terminal_reward = env::TerminalReward::kDiscountedSum;
  o.lookback = 3;
  ExpectRandomPolicyWithinBounds(market, o, LogProbMode::kTanhCorrected, 3.0,
                                 -20.0f, 100, 16, 250, &t);
  Print("demo market, default contract", t);
}

// The shipped small study's contract (deploy/studies/small.yaml): 2 assets
// with a planted signal, lookback 4, log-return reward × 100.
TEST(ChunkLimitsTest, RandomPoliciesOnTheSmallStudyMarketStayWithinTheBounds) {
  env::SyntheticMarketOptions s;
  s.num_rows = 3000;
  s.num_assets = 2;
  s.seed = 7;
  s.predictability = 0.8;
  s.signal_bars = 10;
  const auto market = Synthetic(s);
  env::EnvOptions o;
  o.lookback = 4;
  o.reward_mode = env::RewardMode::kLogReturn;
  o.reward_scale = 100;
  Tightness t;
  ExpectRandomPolicyWithinBounds(market, o, LogProbMode::kTanhCorrected, 3.0,
                                 -0.5f, 64, 16, 250, &t);
  Print("small study market, log_return x100", t);
  // The log-return bound is the market's largest bar move, not a guess.
  absl::StatusOr<ChunkValueBounds> b =
      DeriveChunkValueBounds(ContractFor(*market, o), *market, 64);
  ASSERT_TRUE(b.ok());
  const MarketMoves moves = ScanMarketMoves(*market, 64 + 7);
  EXPECT_NEAR(b->reward.hi, std::log(moves.max_step_ratio) * 100,
              0.01 + 2e-3 * b->reward.hi);
  EXPECT_LT(b->reward.hi, 50.0f);
}

std::vector<std::string> GoldenDirs() {
  std::vector<std::string> dirs;
  // The bundled cases, and every case of ../shared/golden/env when present.
  for (const std::string& root :
       {std::string(RISTRETTO_GOLDEN_BUNDLED_DIR),
        std::string(RISTRETTO_SOURCE_DIR) + "/../shared/golden/env"}) {
    if (!std::filesystem::is_directory(root)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      if (std::filesystem::exists(entry.path() / "expected.csv")) {
        dirs.push_back(entry.path().string());
      }
    }
  }
  return dirs;
}

// The original env's recorded episodes (discounted-sum terminal reward,
// zero prices, trailing stops, concentration terms): every observation and
// reward lies inside the bounds derived for the case's options. Cases that
// play actions beyond tanh's [−1, 1] (up to 1500) are outside what a policy
// of the contract can send, so their holdings are not held to the bound
// (which counts on at most one action scale bought per step).
TEST(ChunkLimitsTest, GoldenTracesStayWithinTheBounds) {
  const std::vector<std::string> dirs = GoldenDirs();
  ASSERT_GE(dirs.size(), 2u) << "bundled golden cases missing";
  for (const std::string& dir : dirs) {
    SCOPED_TRACE(dir);
    absl::StatusOr<env::GoldenCase> g = env::LoadGoldenCase(dir);
    ASSERT_TRUE(g.ok()) << g.status();
    const env::MarketData& m = *g->market;
    absl::StatusOr<ChunkValueBounds> b =
        DeriveChunkValueBounds(ContractFor(m, g->options), m, g->steps);
    ASSERT_TRUE(b.ok()) << b.status();
    bool in_contract = true;
    for (float a : g->actions) in_contract &= std::fabs(a) <= 1.0f;
    const int D = g->obs_size, n = m.num_assets;
    for (int64_t s = 0; s < g->steps; ++s) {
      const auto r = static_cast<float>(g->reward[s]);
      ASSERT_TRUE(b->reward.Contains(r))
          << "step " << s << " reward " << r << " outside [" << b->reward.lo
          << ", " << b->reward.hi << "]";
      for (int j = 0; j < D; ++j) {
        if (!in_contract && j >= 1 && j <= n) continue;
        const auto v = static_cast<float>(g->obs[s * D + j]);
        ASSERT_TRUE(b->obs[j].Contains(v))
            << "step " << s << " element " << j << " = " << v << " outside ["
            << b->obs[j].lo << ", " << b->obs[j].hi << "]";
      }
    }
  }
}

}  // namespace
}  // namespace ristretto::learner
