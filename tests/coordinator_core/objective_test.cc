// The study objectives (learner/objective.h): fold values and trial scores.
#include "learner/objective.h"

#include <cmath>

#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

EvaluationResult Fold(double sharpe, double benchmark_sharpe) {
  EvaluationResult e;
  e.sharpe = sharpe;
  e.benchmark_sharpe = benchmark_sharpe;
  return e;
}

TEST(ExcessSharpeTest, OneFoldHasNoSpreadPenalty) {
  EXPECT_DOUBLE_EQ(TrialObjective("excess_sharpe", {Fold(1.5, 0.5)}), 1.0);
}

TEST(ExcessSharpeTest, ThreeFoldsUsePopulationStandardDeviation) {
  // mean bot 2, mean bench 0.4; population std of {1,2,3} = sqrt(2/3).
  EXPECT_NEAR(TrialObjective("excess_sharpe",
                             {Fold(1, 0.5), Fold(2, 1), Fold(3, -0.3)}),
              1.5183503419072274, 1e-12);
}

TEST(ExcessSharpeTest, TwoFoldsHandComputed) {
  // mean bot 0, mean bench 0.3, std 1 → 0 − 0.3 − 0.1.
  EXPECT_DOUBLE_EQ(
      TrialObjective("excess_sharpe", {Fold(-1, 0.2), Fold(1, 0.4)}), -0.4);
}

TEST(ObjectiveTest, NoFoldsOrUnknownObjectiveHasNoScore) {
  EXPECT_TRUE(std::isnan(TrialObjective("sharpe", {})));
  EXPECT_TRUE(std::isnan(TrialObjective("sharpee", {Fold(1, 0)})));
  EXPECT_FALSE(CheckObjective("sharpee").ok());
  EXPECT_EQ(CheckObjective("sharpee").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(CheckObjective("sharpee").message()).find("'sharpee'"),
            std::string::npos);
  EXPECT_NE(std::string(CheckObjective("sharpee").message()).find("calmar"),
            std::string::npos);
}

TEST(ObjectiveTest, DefaultRanksCashAtZeroAndBuyAndHoldAtItsOwnSharpe) {
  // Cash: flat value, Sharpe 0. Buy and hold: Sharpe = its benchmark.
  const EvaluationResult cash = Fold(0, 1.7);
  const EvaluationResult hold = Fold(1.7, 1.7);
  EXPECT_EQ(TrialObjective(kDefaultObjective, {cash}), 0.0);
  EXPECT_EQ(TrialObjective(kDefaultObjective, {hold}), 1.7);
  // The original excess Sharpe scores cash at −(buy & hold) instead.
  EXPECT_EQ(TrialObjective("excess_sharpe", {cash}), -1.7);
}

TEST(ObjectiveTest, EachObjectiveReadsItsMetric) {
  EvaluationResult a;
  a.sharpe = 1;
  a.sortino = 2;
  a.calmar = 3;
  a.total_return = 0.04;
  a.benchmark_sharpe = 0.5;
  EvaluationResult b = a;
  b.sharpe = 3;
  b.sortino = 4;
  b.calmar = 5;
  b.total_return = 0.08;
  EXPECT_DOUBLE_EQ(TrialObjective("sharpe", {a, b}), 2);
  EXPECT_DOUBLE_EQ(TrialObjective("sortino", {a, b}), 3);
  EXPECT_DOUBLE_EQ(TrialObjective("calmar", {a, b}), 4);
  EXPECT_DOUBLE_EQ(TrialObjective("return", {a, b}), 0.06);
  EXPECT_DOUBLE_EQ(ObjectiveValue("excess_sharpe", b), 2.5);
}

}  // namespace
}  // namespace ristretto::learner
