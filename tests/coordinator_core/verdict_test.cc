// The study statistics and the verdict (coordinator/core/verdict.h).
#include "coordinator/core/verdict.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/rng.h"
#include "env/dataset.h"
#include "env/market_data.h"
#include "env/metrics.h"
#include "env/synthetic.h"
#include "env/vector_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/evaluation.h"

namespace ristretto::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// T normal log returns with per-bar mean `mean` and std 0.01.
std::vector<double> Returns(uint64_t seed, double mean, int t = 1200) {
  Rng rng(seed);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t));
  for (int i = 0; i < t; ++i) out.push_back(mean + 0.01 * rng.Normal());
  return out;
}

TrialEvidence Trial(int number, double score, std::vector<double> returns) {
  TrialEvidence e;
  e.number = number;
  e.score = score;
  e.cv_log_returns = std::move(returns);
  return e;
}

TrialEvidence::Lockbox Lockbox(double sharpe, double bh) {
  TrialEvidence::Lockbox l;
  l.sharpe = sharpe;
  l.sharpe_se = 1;
  l.bh_sharpe = bh;
  l.bars = 600;
  return l;
}

constexpr double kBpy = 17520;  // 30-minute bars

TEST(VerdictTest, AStrongTrialThatBeatsTheBaselinesOnTheLockboxIsAnEdge) {
  // Trials of modest skill (per-bar Sharpe ~0.1) and one far better (0.3).
  std::vector<TrialEvidence> trials = {
      Trial(0, 1, Returns(1, 0.0010)), Trial(1, 9, Returns(2, 0.0030)),
      Trial(2, 2, Returns(3, 0.0012)), Trial(3, 1, Returns(4, 0.0008)),
      Trial(4, 1, Returns(6, 0.0011))};
  trials[1].lockbox = Lockbox(5, 1);
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  EXPECT_EQ(s.best_trial, 1);
  EXPECT_TRUE(s.has_dsr);
  EXPECT_LT(s.dsr_p_value, 0.05);
  EXPECT_EQ(s.effective_trials, 24);
  EXPECT_TRUE(s.has_pbo);
  EXPECT_TRUE(s.edge);
  EXPECT_THAT(s.verdict, StartsWith("EDGE: trial 1"));
}

TEST(VerdictTest, NoEdgeWhenTheLockboxDoesNotBeatBuyAndHoldOrCash) {
  std::vector<TrialEvidence> trials = {Trial(0, 1, Returns(1, 0)),
                                       Trial(1, 9, Returns(2, 0.004))};
  trials[1].lockbox = Lockbox(3, 4);  // below buy and hold
  StudyStatistics s = ComputeStudyStatistics(trials, 2, 1, kBpy);
  EXPECT_FALSE(s.edge);
  EXPECT_THAT(s.verdict, StartsWith("NO EDGE distinguishable from luck"));
  EXPECT_THAT(s.verdict, HasSubstr("buy & hold 4.00"));
  trials[1].lockbox = Lockbox(-1, -2);  // beats buy and hold, not cash
  s = ComputeStudyStatistics(trials, 2, 1, kBpy);
  EXPECT_FALSE(s.edge);
  trials[1].lockbox.reset();  // no final run
  s = ComputeStudyStatistics(trials, 2, 1, kBpy);
  EXPECT_FALSE(s.edge);
  EXPECT_THAT(s.verdict, HasSubstr("no lockbox result"));
}

TEST(VerdictTest, PureNoiseIsNotSignificantEvenWithTwoAlikeTrials) {
  // Two noise trials with nearly the same Sharpe: their sample variance is
  // tiny, but the floor 1/(T − 1) keeps the deflation honest.
  std::vector<TrialEvidence> trials = {Trial(0, 1, Returns(5, 0.0004)),
                                       Trial(1, 1.1, Returns(5, 0.00041))};
  trials[1].lockbox = Lockbox(5, 1);
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  ASSERT_TRUE(s.has_dsr);
  EXPECT_GT(s.dsr_p_value, 0.05);
  EXPECT_FALSE(s.edge);
}

TEST(VerdictTest, NothingCompleteIsNoEdgeAndRoundTripsThroughJson) {
  StudyStatistics s = ComputeStudyStatistics({}, 3, 2, kBpy);
  EXPECT_FALSE(s.edge);
  EXPECT_THAT(s.verdict, StartsWith("no edge"));
  std::vector<TrialEvidence> trials = {Trial(0, 1, Returns(1, 0.001)),
                                       Trial(1, 2, Returns(2, 0.002))};
  trials[1].lockbox = Lockbox(2.5, 1.5);
  s = ComputeStudyStatistics(trials, 3, 2, kBpy);
  absl::StatusOr<StudyStatistics> back =
      StudyStatisticsFromJson(StudyStatisticsToJson(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->verdict, s.verdict);
  EXPECT_EQ(back->edge, s.edge);
  EXPECT_DOUBLE_EQ(back->dsr_p_value, s.dsr_p_value);
  ASSERT_TRUE(back->lockbox.has_value());
  EXPECT_DOUBLE_EQ(back->lockbox->sharpe, 2.5);
  EXPECT_FALSE(StudyStatisticsFromJson("[1]").ok());
}

TEST(BaselinesTest, BuyAndHoldIsOnTheRowsAPolicyPlaysAndRandomVaries) {
  env::SyntheticMarketOptions so;
  so.num_assets = 2;
  so.num_rows = 600;
  so.seed = 4;
  absl::StatusOr<env::Dataset> data = env::GenerateSyntheticDataset(so);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      env::MarketData::FromDataset(*data);
  ASSERT_TRUE(market.ok()) << market.status();
  env::EnvOptions o;
  o.lookback = 3;
  const std::vector<env::Domain> domains = {{100, 300}, {320, 500}};
  absl::StatusOr<SegmentBaselines> b =
      ComputeBaselines(*market, o, domains, /*random_seeds=*/5);
  ASSERT_TRUE(b.ok()) << b.status();
  // EvaluateActions scores its own buy and hold on the rows the env plays:
  // the baselines' must be the same series.
  absl::StatusOr<learner::EvaluationResult> cash = learner::EvaluateActions(
      *market, o, domains, [](const float*, int copies, float* actions) {
        std::fill(actions, actions + 2 * copies, -1.0f);
      });
  ASSERT_TRUE(cash.ok()) << cash.status();
  EXPECT_NEAR(b->buy_and_hold.sharpe, cash->benchmark_sharpe, 1e-12);
  EXPECT_NEAR(b->buy_and_hold.total_return, cash->benchmark_return, 1e-12);
  EXPECT_EQ(b->buy_and_hold.log_returns.size(), cash->log_returns.size());
  EXPECT_GT(b->buy_and_hold_sharpe_se, 0);
  // Cash (never buying) earns exactly nothing.
  EXPECT_EQ(cash->sharpe, 0);
  EXPECT_EQ(cash->total_return, 0);
  EXPECT_EQ(b->random_seeds, 5);
  EXPECT_GT(b->random_sharpe_std, 0);
}

TEST(BaselinesTest, BuyAndHoldPaysTheSlippageLikeTheEnvBenchmark) {
  env::SyntheticMarketOptions so;
  so.num_assets = 3;
  so.num_rows = 400;
  so.seed = 9;
  absl::StatusOr<env::Dataset> data = env::GenerateSyntheticDataset(so);
  ASSERT_TRUE(data.ok()) << data.status();
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      env::MarketData::FromDataset(*data);
  ASSERT_TRUE(market.ok()) << market.status();
  // Lookback 1: the env's reward benchmark buys at the slice's first row
  // (env.md: eqw) while the scored buy and hold buys at the first played
  // row, L − 1 rows later; with L = 1 both are the same row, so the three
  // series must agree exactly.
  env::EnvOptions o;
  o.lookback = 1;
  o.slippage_bps = 25.0;
  const env::Domain d{50, 250};
  absl::StatusOr<SegmentBaselines> b =
      ComputeBaselines(*market, o, {d}, /*random_seeds=*/2);
  ASSERT_TRUE(b.ok()) << b.status();

  // The env's own benchmark E over the episode, holding cash throughout.
  env::VectorEnvOptions vo;
  vo.env = o;
  vo.mode = env::EpisodeMode::kManual;
  absl::StatusOr<std::unique_ptr<env::VectorEnv>> vec =
      env::VectorEnv::Create(*market, vo);
  ASSERT_TRUE(vec.ok()) << vec.status();
  std::vector<float> obs(static_cast<size_t>((*vec)->observation_size()));
  ASSERT_TRUE((*vec)->ResetCopy(0, d.begin, d.size(), obs.data()).ok());
  std::vector<double> env_bench = {(*vec)->benchmark_value(0)};
  const std::vector<float> zero(3, 0.0f);
  const env::StepOutput out{obs.data(), nullptr, nullptr, nullptr};
  while (!(*vec)->done(0)) {
    ASSERT_TRUE((*vec)->Step(zero.data(), out).ok());
    env_bench.push_back((*vec)->benchmark_value(0));
  }

  // The metrics helper: the same series, level included (the level is
  // where the slippage shows: every coin cost close·1.0025·(1 + fee)).
  const std::vector<double> helper = env::EqualWeightBuyAndHold(
      (*market)->price, 3, d.begin,
      d.begin + static_cast<int64_t>(env_bench.size()), o.initial_capital,
      o.buy_fee, o.slippage_bps);
  ASSERT_EQ(helper.size(), env_bench.size());
  EXPECT_NEAR(helper.front(), o.initial_capital / (1.0025 * (1 + o.buy_fee)),
              1e-12 * o.initial_capital);
  for (size_t t = 0; t < env_bench.size(); ++t) {
    EXPECT_NEAR(helper[t], env_bench[t], 1e-12 * env_bench[t]) << t;
  }
  // ComputeBaselines scores that series: the same log returns and return.
  ASSERT_EQ(b->buy_and_hold.log_returns.size(), env_bench.size() - 1);
  for (size_t t = 1; t < env_bench.size(); ++t) {
    EXPECT_NEAR(b->buy_and_hold.log_returns[t - 1],
                std::log(env_bench[t] / env_bench[t - 1]), 1e-12)
        << t;
  }
  EXPECT_NEAR(b->buy_and_hold.total_return,
              env_bench.back() / env_bench.front() - 1, 1e-12);
}

}  // namespace
}  // namespace ristretto::coordinator
