// The study statistics and the verdict (coordinator/core/verdict.h).
#include "coordinator/core/verdict.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
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

// Trials of modest skill (per-bar Sharpe ~0.1) and one far better (0.3),
// trial 1, the best by score.
std::vector<TrialEvidence> ModestTrialsAndOneStrong() {
  return {Trial(0, 1, Returns(1, 0.0010)), Trial(1, 9, Returns(2, 0.0030)),
          Trial(2, 2, Returns(3, 0.0012)), Trial(3, 1, Returns(4, 0.0008)),
          Trial(4, 1, Returns(6, 0.0011))};
}

// A synthetic market of `assets` assets and `rows` rows.
absl::StatusOr<std::shared_ptr<const env::MarketData>> SyntheticMarket(
    int assets, int64_t rows, uint64_t seed) {
  env::SyntheticMarketOptions so;
  so.num_assets = assets;
  so.num_rows = rows;
  so.seed = seed;
  absl::StatusOr<env::Dataset> data = env::GenerateSyntheticDataset(so);
  if (!data.ok()) return data.status();
  return env::MarketData::FromDataset(*data);
}

// Gives `t` a lockbox result and the returns behind it: the policy's
// per-bar mean `policy_mean`, buy and hold's `bh_mean` (600 bars, std 0.01,
// independent).
void SetLockbox(TrialEvidence* t, const TrialEvidence::Lockbox& l,
                double policy_mean, double bh_mean) {
  t->lockbox = l;
  t->lockbox_log_returns = Returns(101, policy_mean, 600);
  t->lockbox_bh_log_returns = Returns(102, bh_mean, 600);
}

TEST(VerdictTest, AStrongTrialThatBeatsTheBaselinesOnTheLockboxIsAnEdge) {
  // Trials of modest skill (per-bar Sharpe ~0.1) and one far better (0.3).
  std::vector<TrialEvidence> trials = ModestTrialsAndOneStrong();
  SetLockbox(&trials[1], Lockbox(5, 1), 0.004, 0.0005);
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  EXPECT_EQ(s.best_trial, 1);
  EXPECT_TRUE(s.has_dsr);
  EXPECT_LT(s.dsr_p_value, 0.05);
  EXPECT_EQ(s.effective_trials, 24);
  EXPECT_TRUE(s.has_pbo);
  EXPECT_TRUE(s.edge) << s.verdict;
  EXPECT_THAT(s.verdict, StartsWith("EDGE: trial 1"));
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_LT(s.lockbox->p_vs_cash, 0.05);
  EXPECT_LT(s.lockbox->p_vs_buy_and_hold, 0.05);
  EXPECT_LT(s.lockbox->p_vs_random, 0.05);
  EXPECT_GT(s.lockbox->vs_bh_se, 0);
  EXPECT_THAT(s.verdict, HasSubstr("paired"));
}

// A rule on the lockbox bars with per-bar mean `mean` (seed `seed`).
LockboxRuleResult Rule(const std::string& name, double sharpe, uint64_t seed,
                       double mean) {
  LockboxRuleResult r;
  r.name = name;
  r.parameter = absl::StrCat(name, " parameter");
  r.sharpe = sharpe;
  r.sharpe_se = 1;
  r.log_returns = Returns(seed, mean, 600);
  return r;
}

// The verdict names the strongest rule (by lockbox Sharpe, whatever its
// position) and says whether the policy beats it beyond noise, with the
// paired test on the same bars; the rules travel in the stored result.
TEST(VerdictTest, TheVerdictNamesTheStrongestRuleAndTestsThePolicyAgainstIt) {
  std::vector<TrialEvidence> trials = ModestTrialsAndOneStrong();
  TrialEvidence::Lockbox l = Lockbox(5, 1);
  // momentum is the strongest; its returns are the policy's plus noise of
  // the same mean, so the policy does not beat it beyond noise.
  l.rules = {Rule("equal_weight_rebalanced", 0.8, 201, 0.0005),
             Rule("momentum", 4.5, 202, 0.004), Rule("macd", 2.0, 203, 0.002)};
  SetLockbox(&trials[1], l, 0.004, 0.0005);
  StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_EQ(s.lockbox->strongest_rule, 1);
  EXPECT_GE(s.lockbox->p_vs_strongest_rule, 0.05);
  EXPECT_TRUE(std::isfinite(s.lockbox->vs_rule_se));
  EXPECT_THAT(s.verdict,
              HasSubstr("the strongest rule a quant tries first, momentum "
                        "(momentum parameter), lockbox Sharpe 4.50 ± 1.00: "
                        "the policy does not beat it beyond noise"));
  // A weak strongest rule is beaten beyond noise.
  l.rules = {Rule("equal_weight_rebalanced", 0.5, 201, 0.0),
             Rule("momentum", 0.1, 202, -0.001)};
  SetLockbox(&trials[1], l, 0.004, 0.0005);
  s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_EQ(s.lockbox->strongest_rule, 0);
  EXPECT_LT(s.lockbox->p_vs_strongest_rule, 0.05);
  EXPECT_THAT(s.verdict, HasSubstr("equal_weight_rebalanced "
                                   "(equal_weight_rebalanced parameter), "
                                   "lockbox Sharpe 0.50 ± 1.00: the policy "
                                   "beats it beyond noise (difference"));
  // Round trip through the stored result: the rules without their returns.
  const std::string json = StudyStatisticsToJson(s);
  EXPECT_THAT(json, Not(HasSubstr("log_returns")));
  const absl::StatusOr<StudyStatistics> parsed = StudyStatisticsFromJson(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const StudyStatistics& back = *parsed;
  ASSERT_TRUE(back.lockbox.has_value());
  ASSERT_EQ(back.lockbox->rules.size(), 2u);
  EXPECT_EQ(back.lockbox->rules[1].name, "momentum");
  EXPECT_DOUBLE_EQ(back.lockbox->rules[0].sharpe, 0.5);
  EXPECT_EQ(back.lockbox->strongest_rule, 0);
  EXPECT_DOUBLE_EQ(back.lockbox->p_vs_strongest_rule,
                   s.lockbox->p_vs_strongest_rule);
  EXPECT_EQ(back.verdict, s.verdict);
}

// Rules whose returns do not pair with the policy's are named, not tested;
// the store's form (with returns) reads back exactly; junk is DataLoss.
TEST(VerdictTest, RulesThatDoNotPairAreNotTestedAndTheCodecRoundTrips) {
  std::vector<TrialEvidence> trials = ModestTrialsAndOneStrong();
  TrialEvidence::Lockbox l = Lockbox(5, 1);
  l.rules = {Rule("macd", 1.0, 204, 0.001)};
  l.rules[0].log_returns.resize(10);
  SetLockbox(&trials[1], l, 0.004, 0.0005);
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_EQ(s.lockbox->strongest_rule, 0);
  EXPECT_EQ(s.lockbox->p_vs_strongest_rule, 1);
  EXPECT_THAT(s.verdict, HasSubstr("not tested: the returns do not pair"));

  const std::vector<LockboxRuleResult> rules = {
      Rule("momentum", 1.25, 205, 0.001)};
  const absl::StatusOr<std::vector<LockboxRuleResult>> read =
      LockboxRulesFromJson(LockboxRulesToJson(rules, /*with_returns=*/true));
  ASSERT_TRUE(read.ok()) << read.status();
  const std::vector<LockboxRuleResult>& back = *read;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].log_returns, rules[0].log_returns);  // exact doubles
  EXPECT_EQ(back[0].parameter, "momentum parameter");
  const absl::StatusOr<std::vector<LockboxRuleResult>> none =
      LockboxRulesFromJson("");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(LockboxRulesFromJson("{}").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(LockboxRulesFromJson("[{\"sharpe\": 1}]").status().code(),
            absl::StatusCode::kDataLoss);  // no name
}

// Beating buy and hold's Sharpe by a hair is not beating it: the paired
// test of the two return series on the lockbox bars decides.
TEST(VerdictTest, ALockboxWithinNoiseOfBuyAndHoldIsNoEdge) {
  std::vector<TrialEvidence> trials = ModestTrialsAndOneStrong();
  TrialEvidence::Lockbox l = Lockbox(1.01, 1.00);
  l.sharpe_se = 0.3;  // clearly above cash and random on its own
  // The policy: buy and hold's returns plus a little noise of its own.
  trials[1].lockbox = l;
  trials[1].lockbox_bh_log_returns = Returns(102, 0.0008, 600);
  const std::vector<double> own = Returns(103, 0.0, 600);
  for (size_t t = 0; t < 600; ++t) {
    trials[1].lockbox_log_returns.push_back(
        trials[1].lockbox_bh_log_returns[t] + 0.2 * own[t]);
  }
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  ASSERT_LT(s.dsr_p_value, 0.05);
  EXPECT_FALSE(s.edge);
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_GT(s.lockbox->p_vs_buy_and_hold, 0.05);
  EXPECT_LT(s.lockbox->p_vs_cash, 0.05);
  EXPECT_THAT(s.verdict, HasSubstr("does not beat buy & hold at p < 0.05"));
  // Without the returns there is no paired test, and so no edge.
  trials[1].lockbox_bh_log_returns.clear();
  const StudyStatistics untested = ComputeStudyStatistics(trials, 6, 4, kBpy);
  EXPECT_FALSE(untested.edge);
  EXPECT_THAT(untested.verdict, HasSubstr("were not recorded"));
}

TEST(VerdictTest, ALockboxThatRandomPoliciesMatchIsNoEdge) {
  std::vector<TrialEvidence> trials = ModestTrialsAndOneStrong();
  TrialEvidence::Lockbox l = Lockbox(5, 1);
  l.random_sharpe_mean = 6;
  l.random_sharpe_std = 0.5;
  SetLockbox(&trials[1], l, 0.004, 0.0005);
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  EXPECT_FALSE(s.edge);
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_GT(s.lockbox->p_vs_random, 0.5);
  EXPECT_THAT(s.verdict, HasSubstr("does not beat random"));
  EXPECT_THAT(s.verdict, HasSubstr(", random 6.00 ± 0.50 ("));
  // With refits the random baseline is split like the policy, and says so.
  trials[1].lockbox->refits = 3;
  const StudyStatistics split = ComputeStudyStatistics(trials, 6, 4, kBpy);
  EXPECT_THAT(split.verdict,
              AllOf(HasSubstr("(capital split among 3 refits)"),
                    HasSubstr(", random (each split among 3) 6.00 ± 0.50 (")));
}

// A lockbox Sharpe whose standard error is undefined (stored as 0: a flat
// series) is tested against nothing: it shows "± n/a" and is no edge.
TEST(VerdictTest, AnUndefinedLockboxErrorIsNotAZeroErrorAndNoEdge) {
  std::vector<TrialEvidence> trials = ModestTrialsAndOneStrong();
  TrialEvidence::Lockbox l = Lockbox(5, 1);
  SetLockbox(&trials[1], l, 0.004, 0.0005);
  trials[1].lockbox->sharpe_se = 0;
  const StudyStatistics s = ComputeStudyStatistics(trials, 6, 4, kBpy);
  EXPECT_FALSE(s.edge);
  ASSERT_TRUE(s.lockbox.has_value());
  EXPECT_EQ(s.lockbox->p_vs_cash, 1);
  EXPECT_EQ(s.lockbox->p_vs_random, 1);
  EXPECT_THAT(s.verdict, HasSubstr("lockbox Sharpe 5.00 ± n/a"));
  EXPECT_THAT(s.verdict, Not(HasSubstr("5.00 ± 0.00")));
  EXPECT_THAT(s.lockbox->tests_note, HasSubstr("no standard error"));
}

// A result stored before undefined errors were kept as such (0) reads back
// as n/a.
TEST(VerdictTest, AStoredZeroLockboxErrorReadsBackAsUndefined) {
  absl::StatusOr<StudyStatistics> s = StudyStatisticsFromJson(
      R"({"complete_trials":1,"edge":false,"verdict":"x",)"
      R"("lockbox":{"sharpe":2.5,"sharpe_se":0,"bars":10}})");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->lockbox.has_value());
  EXPECT_EQ(s->lockbox->sharpe, 2.5);
  EXPECT_TRUE(std::isnan(s->lockbox->sharpe_se));
  s = StudyStatisticsFromJson(
      R"({"lockbox":{"sharpe":2.5,"sharpe_se":0.75,"bars":10}})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->lockbox->sharpe_se, 0.75);
}

// The tests `ristretto backtest` shares with the verdict, on their own.
TEST(BaselineTestsTest, EachBaselineIsTestedOneSidedOnTheSameBars) {
  // A policy that is buy and hold plus a steady extra return: far above
  // cash and buy and hold, and above random policies around 0.
  const std::vector<double> bh = Returns(201, 0.0002, 2000);
  std::vector<double> policy = bh;
  const std::vector<double> own = Returns(202, 0.0008, 2000);
  for (size_t t = 0; t < policy.size(); ++t) policy[t] += 0.3 * own[t];
  const double sharpe = env::SharpeRatio(policy, kBpy);
  const double se = AnnualisedSharpeError(policy, kBpy);
  BaselineTests t =
      TestAgainstBaselines(sharpe, se, policy, bh, 0.0, 1.0, kBpy);
  EXPECT_LT(t.p_vs_cash, 0.05);
  EXPECT_LT(t.p_vs_buy_and_hold, 0.05);
  EXPECT_LT(t.p_vs_random, 0.05);
  EXPECT_GT(t.vs_bh_difference, 0);
  EXPECT_GT(t.vs_bh_se, 0);
  EXPECT_EQ(t.note, "");
  // Buy and hold plus zero-mean noise of its own: no better than it.
  std::vector<double> noisy = bh;
  const std::vector<double> zero_mean = Returns(203, 0.0, 2000);
  for (size_t i = 0; i < noisy.size(); ++i) noisy[i] += 0.3 * zero_mean[i];
  t = TestAgainstBaselines(env::SharpeRatio(noisy, kBpy),
                           AnnualisedSharpeError(noisy, kBpy), noisy, bh, 0.0,
                           1.0, kBpy);
  EXPECT_GT(t.p_vs_buy_and_hold, 0.05);
  EXPECT_TRUE(std::isfinite(t.vs_bh_se));
  // The policy against itself: no test can be made (p = 1), and it says so.
  t = TestAgainstBaselines(sharpe, se, policy, policy, 0.0, 1.0, kBpy);
  EXPECT_EQ(t.p_vs_buy_and_hold, 1);
  EXPECT_TRUE(std::isnan(t.vs_bh_se));
  EXPECT_THAT(t.note, HasSubstr("move together"));
  // Random policies as good as it: not beaten.
  t = TestAgainstBaselines(sharpe, se, policy, bh, sharpe, 1.0, kBpy);
  EXPECT_NEAR(t.p_vs_random, 0.5, 1e-12);
  // Without buy and hold's returns, or without an SE: untested, p = 1.
  t = TestAgainstBaselines(sharpe, se, policy, {}, 0.0, 1.0, kBpy);
  EXPECT_EQ(t.p_vs_buy_and_hold, 1);
  EXPECT_THAT(t.note, HasSubstr("no paired test"));
  t = TestAgainstBaselines(sharpe, std::nan(""), policy, bh, 0.0, 1.0, kBpy);
  EXPECT_EQ(t.p_vs_cash, 1);
  EXPECT_EQ(t.p_vs_random, 1);
  EXPECT_THAT(t.note, HasSubstr("no standard error"));
  EXPECT_THAT(t.note, Not(HasSubstr("random policies' Sharpe")));
  t = TestAgainstBaselines(sharpe, se, policy, bh, std::nan(""), 1.0, kBpy);
  EXPECT_LT(t.p_vs_cash, 0.05);
  EXPECT_EQ(t.p_vs_random, 1);
  EXPECT_THAT(t.note,
              HasSubstr("random policies' Sharpe ratios are not known"));
  EXPECT_EQ(PValueText(0.0004), "p < 0.001");
  EXPECT_EQ(PValueText(0.0123), "p = 0.012");
}

// CPCV with 6 groups and 2 test groups tests every bar 5 times: pooled, the
// folds' returns look like 5 times the data they are.
TEST(VerdictTest, RepeatedValidationBarsCountOnceInTheErrorsAndTheDeflation) {
  std::vector<TrialEvidence> once, five;
  for (int i = 0; i < 5; ++i) {
    const std::vector<double> x =
        Returns(20 + static_cast<uint64_t>(i), 0.0004 + 0.0001 * i);
    once.push_back(Trial(i, i, x));
    std::vector<double> repeated;
    for (int k = 0; k < 5; ++k)
      repeated.insert(repeated.end(), x.begin(), x.end());
    five.push_back(Trial(i, i, repeated));
  }
  const StudyStatistics single = ComputeStudyStatistics(once, 5, 1, kBpy);
  const StudyStatistics counted = ComputeStudyStatistics(five, 5, 1, kBpy, 5);
  const StudyStatistics naive = ComputeStudyStatistics(five, 5, 1, kBpy);
  EXPECT_EQ(single.cv_bars, 1200);
  EXPECT_EQ(counted.cv_bars, 1200);
  EXPECT_EQ(naive.cv_bars, 6000);
  EXPECT_DOUBLE_EQ(counted.cv_bar_multiplicity, 5);
  EXPECT_NEAR(counted.cv_sharpe_se, single.cv_sharpe_se,
              1e-3 * single.cv_sharpe_se);
  EXPECT_NEAR(naive.cv_sharpe_se, single.cv_sharpe_se / std::sqrt(5.0),
              0.01 * single.cv_sharpe_se);
  ASSERT_TRUE(single.has_dsr && counted.has_dsr && naive.has_dsr);
  EXPECT_NEAR(counted.dsr_p_value, single.dsr_p_value, 0.01);
  EXPECT_LT(naive.dsr_p_value, single.dsr_p_value / 2);
  // PBO would split the same bars into both halves.
  EXPECT_TRUE(single.has_pbo);
  EXPECT_FALSE(counted.has_pbo);
  EXPECT_THAT(counted.pbo_note, HasSubstr("each bar 5 times"));
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
  EXPECT_DOUBLE_EQ(back->lockbox->p_vs_cash, s.lockbox->p_vs_cash);
  EXPECT_DOUBLE_EQ(back->lockbox->p_vs_buy_and_hold,
                   s.lockbox->p_vs_buy_and_hold);
  EXPECT_DOUBLE_EQ(back->lockbox->p_vs_random, s.lockbox->p_vs_random);
  EXPECT_EQ(back->lockbox->tests_note, s.lockbox->tests_note);
  EXPECT_FALSE(back->lockbox->tests_note.empty());  // no returns given
  EXPECT_DOUBLE_EQ(back->cv_bar_multiplicity, 1);
  const absl::StatusOr<StudyStatistics> array = StudyStatisticsFromJson("[1]");
  EXPECT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(array.status().message()),
              HasSubstr("not a JSON object"));
}

TEST(BaselinesTest, BuyAndHoldIsOnTheRowsAPolicyPlaysAndRandomVaries) {
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      SyntheticMarket(2, 600, 4);
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
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      SyntheticMarket(3, 400, 9);
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
  // ComputeBaselines scores that series as an account that starts in cash,
  // C0, like a policy's: the first return pays the purchase's costs, the
  // others are the series' own.
  ASSERT_EQ(b->buy_and_hold.log_returns.size(), env_bench.size() - 1);
  EXPECT_NEAR(b->buy_and_hold.log_returns[0],
              std::log(env_bench[1] / o.initial_capital), 1e-12);
  for (size_t t = 2; t < env_bench.size(); ++t) {
    EXPECT_NEAR(b->buy_and_hold.log_returns[t - 1],
                std::log(env_bench[t] / env_bench[t - 1]), 1e-12)
        << t;
  }
  EXPECT_NEAR(b->buy_and_hold.total_return,
              env_bench.back() / o.initial_capital - 1, 1e-12);
}

// A piece of a few bars (cut off by a gap in the data) weighs as little as
// it says: Sharpe over all bars, returns weighted by steps. (Averaged with
// equal weight, a one-return piece, Sharpe 0, halved the segment's Sharpe.)
TEST(BaselinesTest, AShortPieceCountsByItsBars) {
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      SyntheticMarket(2, 600, 4);
  ASSERT_TRUE(market.ok()) << market.status();
  env::EnvOptions o;
  o.lookback = 1;
  // No costs: the short piece's one return is then a plain market move
  // (with costs it also pays a purchase, as it should, which moves the
  // Sharpe more: 14 % here).
  o.buy_fee = 0;
  o.slippage_bps = 0;
  absl::StatusOr<SegmentBaselines> one =
      ComputeBaselines(*market, o, {{100, 400}}, 1);
  absl::StatusOr<SegmentBaselines> tiny =
      ComputeBaselines(*market, o, {{420, 423}}, 1);
  absl::StatusOr<SegmentBaselines> two =
      ComputeBaselines(*market, o, {{100, 400}, {420, 423}}, 1);
  ASSERT_TRUE(one.ok() && tiny.ok() && two.ok());
  // Rows L − 1 … size − L − 1 of each domain: 298 returns and 1.
  ASSERT_EQ(one->buy_and_hold.log_returns.size(), 298U);
  ASSERT_EQ(tiny->buy_and_hold.log_returns.size(), 1U);
  EXPECT_NEAR(
      two->buy_and_hold.total_return,
      (298 * one->buy_and_hold.total_return + tiny->buy_and_hold.total_return) /
          299,
      1e-12);
  ASSERT_GT(std::abs(one->buy_and_hold.sharpe), 0.5);
  EXPECT_NEAR(two->buy_and_hold.sharpe, one->buy_and_hold.sharpe,
              0.1 * std::abs(one->buy_and_hold.sharpe));
  // The same for a policy (EvaluateActions): cash on both, Sharpe 0, and
  // its benchmark is the baselines' buy and hold.
  absl::StatusOr<learner::EvaluationResult> cash = learner::EvaluateActions(
      *market, o, {{100, 400}, {420, 423}},
      [](const float*, int copies, float* actions) {
        std::fill(actions, actions + 2 * copies, -1.0f);
      });
  ASSERT_TRUE(cash.ok()) << cash.status();
  EXPECT_NEAR(cash->benchmark_sharpe, two->buy_and_hold.sharpe, 1e-12);
  EXPECT_NEAR(cash->benchmark_return, two->buy_and_hold.total_return, 1e-12);
}

// The fee and the slippage of buy and hold's one purchase lower its return
// (they only scaled its value series before, and every metric ignored them).
TEST(BaselinesTest, BuyAndHoldsMetricsPayItsExecutionCosts) {
  absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
      SyntheticMarket(2, 400, 5);
  ASSERT_TRUE(market.ok()) << market.status();
  env::EnvOptions free_trades;
  free_trades.lookback = 2;
  free_trades.buy_fee = 0;
  free_trades.slippage_bps = 0;
  env::EnvOptions costly = free_trades;
  costly.buy_fee = 0.05;
  costly.slippage_bps = 100;
  const std::vector<env::Domain> domains = {{50, 300}};
  absl::StatusOr<SegmentBaselines> a =
      ComputeBaselines(*market, free_trades, domains, 1);
  absl::StatusOr<SegmentBaselines> b =
      ComputeBaselines(*market, costly, domains, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  // (1 + r_b) = (1 + r_a) / (1.05 · 1.01)
  EXPECT_NEAR(1 + b->buy_and_hold.total_return,
              (1 + a->buy_and_hold.total_return) / (1.05 * 1.01), 1e-9);
  EXPECT_LT(b->buy_and_hold.sharpe, a->buy_and_hold.sharpe);
  EXPECT_GT(b->buy_and_hold.max_drawdown, a->buy_and_hold.max_drawdown - 1e-12);
}

}  // namespace
}  // namespace ristretto::coordinator
