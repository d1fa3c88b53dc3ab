#include "coordinator/core/objective.h"

#include <cmath>

#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

TEST(TrialScoreTest, OneFoldHasNoSpreadPenalty) {
  EXPECT_DOUBLE_EQ(TrialScore({{1.5, 0.5}}), 1.0);
}

TEST(TrialScoreTest, ThreeFoldsUsePopulationStandardDeviation) {
  // bot 1, 2, 3: mean 2, population std sqrt(2/3); bench 0.5, 1, -0.3:
  // mean 0.4. Score 2 − 0.4 − 0.1·0.816496580927726 = 1.5183503419072274.
  EXPECT_NEAR(TrialScore({{1, 0.5}, {2, 1}, {3, -0.3}}), 1.5183503419072274,
              1e-12);
}

TEST(TrialScoreTest, TwoFoldsHandComputed) {
  // bot −1, 1: mean 0, population std 1; bench 0.2, 0.4: mean 0.3.
  EXPECT_DOUBLE_EQ(TrialScore({{-1, 0.2}, {1, 0.4}}), -0.4);
}

TEST(TrialScoreTest, NoFoldsHasNoScore) {
  EXPECT_TRUE(std::isnan(TrialScore({})));
}

}  // namespace
}  // namespace ristretto::coordinator
