// The study statistics and the verdict (coordinator/core/verdict.h).
#include "coordinator/core/verdict.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace ristretto::coordinator
