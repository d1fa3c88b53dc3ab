#include "learner/gae.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;

// The running example: T = 3 steps, B = 2 copies, γ = 0.9, λ = 0.8
// (γλ = 0.72). Arrays are row-major (t, b): {t0b0, t0b1, t1b0, t1b1, t2b0,
// t2b1}. Copy 1's episode is truncated at t = 1 (V(final obs) = 4).
//   rewards      r = {1, 2,   0, −1,   2, 3}
//   values       V = {0.5, 1, 1, 0.5, −0.5, 2}
//   next_values    = {1.5, −1}
//   dones          = {0, 0,   0, 1,    0, 0}
//   final_values   = {4}
// Copy 0 (no done):
//   t2: δ = 2 + 0.9·1.5 − (−0.5) = 3.85,   A = 3.85,                R = 3.35
//   t1: δ = 0 + 0.9·(−0.5) − 1 = −1.45,   A = −1.45 + 0.72·3.85
//                                            = 1.322,               R = 2.322
//   t0: δ = 1 + 0.9·1 − 0.5 = 1.4,        A = 1.4 + 0.72·1.322
//                                            = 2.35184,             R = 2.85184
// Copy 1:
//   t2: δ = 3 + 0.9·(−1) − 2 = 0.1,       A = 0.1,                 R = 2.1
//   t1 (done), bootstrapped:  δ = −1 + 0.9·4 − 0.5 = 2.1,  A = 2.1, R = 2.6
//              not bootstrapped: δ = −1 − 0.5 = −1.5,      A = −1.5, R = −1
//   t0: δ = 2 + 0.9·0.5 − 1 = 1.45 (s_1 is still this episode), and
//       bootstrapped:     A = 1.45 + 0.72·2.1 = 2.962,     R = 3.962
//       not bootstrapped: A = 1.45 + 0.72·(−1.5) = 0.37,   R = 1.37
constexpr int kSteps = 3;
constexpr int kCopies = 2;
const std::vector<float> kRewards = {1, 2, 0, -1, 2, 3};
const std::vector<float> kValues = {0.5, 1, 1, 0.5, -0.5, 2};
const std::vector<float> kNextValues = {1.5, -1};
const std::vector<uint8_t> kDones = {0, 0, 0, 1, 0, 0};
const std::vector<float> kFinalValues = {4};

TEST(GaeTest, HandComputedExampleBootstrapsTheTruncatedEpisode) {
  const GaeResult r = ComputeGae(kSteps, kCopies, kRewards, kValues,
                                 kNextValues, kDones, kFinalValues, 0.9, 0.8,
                                 /*bootstrap_truncation=*/true);
  EXPECT_THAT(r.advantages,
              ElementsAre(FloatEq(2.35184f), FloatEq(2.962f), FloatEq(1.322f),
                          FloatEq(2.1f), FloatEq(3.85f), FloatEq(0.1f)));
  EXPECT_THAT(r.returns,
              ElementsAre(FloatEq(2.85184f), FloatEq(3.962f), FloatEq(2.322f),
                          FloatEq(2.6f), FloatEq(3.35f), FloatEq(2.1f)));
}

TEST(GaeTest, HandComputedExampleWithoutBootstrapTreatsTheDoneAsTerminal) {
  const GaeResult r = ComputeGae(kSteps, kCopies, kRewards, kValues,
                                 kNextValues, kDones, kFinalValues, 0.9, 0.8,
                                 /*bootstrap_truncation=*/false);
  EXPECT_THAT(r.advantages,
              ElementsAre(FloatEq(2.35184f), FloatEq(0.37f), FloatEq(1.322f),
                          FloatEq(-1.5f), FloatEq(3.85f), FloatEq(0.1f)));
  EXPECT_THAT(r.returns,
              ElementsAre(FloatEq(2.85184f), FloatEq(1.37f), FloatEq(2.322f),
                          FloatEq(-1.0f), FloatEq(3.35f), FloatEq(2.1f)));
}

TEST(GaeTest, WithoutBootstrapFinalValuesMayBeOmittedAndAreIgnored) {
  const GaeResult with_values =
      ComputeGae(kSteps, kCopies, kRewards, kValues, kNextValues, kDones,
                 kFinalValues, 0.9, 0.8, /*bootstrap_truncation=*/false);
  const GaeResult without_values =
      ComputeGae(kSteps, kCopies, kRewards, kValues, kNextValues, kDones, {},
                 0.9, 0.8, /*bootstrap_truncation=*/false);
  EXPECT_EQ(with_values.advantages, without_values.advantages);
  EXPECT_EQ(with_values.returns, without_values.returns);
}

TEST(GaeTest, LambdaZeroGivesOneStepTemporalDifferenceErrors) {
  // A_t = δ_t from the running example: copy 0 {1.4, −1.45, 3.85}, copy 1
  // {1.45, 2.1, 0.1}; R = A + V.
  const GaeResult r = ComputeGae(kSteps, kCopies, kRewards, kValues,
                                 kNextValues, kDones, kFinalValues, 0.9, 0.0,
                                 /*bootstrap_truncation=*/true);
  EXPECT_THAT(r.advantages,
              ElementsAre(FloatEq(1.4f), FloatEq(1.45f), FloatEq(-1.45f),
                          FloatEq(2.1f), FloatEq(3.85f), FloatEq(0.1f)));
  EXPECT_THAT(r.returns,
              ElementsAre(FloatEq(1.9f), FloatEq(2.45f), FloatEq(-0.45f),
                          FloatEq(2.6f), FloatEq(3.35f), FloatEq(2.1f)));
}

TEST(GaeTest, LambdaOneGammaOneWithoutBootstrapGivesMonteCarloReturns) {
  // T = 4, B = 2. Copy 0 ends episodes at t = 1 and t = 3, copy 1 at t = 3,
  // so every return is the plain sum of the rewards left in its episode and
  // does not depend on the (arbitrary) values:
  //   copy 0 rewards {1, 2, 3, 4}: returns {1+2, 2, 3+4, 4} = {3, 2, 7, 4}
  //   copy 1 rewards {5, −1, 0.5, 2}: returns {6.5, 1.5, 2.5, 2}
  const std::vector<float> rewards = {1, 5, 2, -1, 3, 0.5, 4, 2};
  const std::vector<float> values = {9, -3, 0.25, 7, -2, 1, 100, 0.5};
  const std::vector<float> next_values = {42, -42};
  const std::vector<uint8_t> dones = {0, 0, 1, 0, 0, 0, 1, 1};
  const GaeResult r =
      ComputeGae(4, 2, rewards, values, next_values, dones, {}, 1.0, 1.0,
                 /*bootstrap_truncation=*/false);
  EXPECT_THAT(r.returns,
              ElementsAre(FloatEq(3), FloatEq(6.5), FloatEq(2), FloatEq(1.5),
                          FloatEq(7), FloatEq(2.5), FloatEq(4), FloatEq(2)));
  // A = return − V.
  EXPECT_THAT(
      r.advantages,
      ElementsAre(FloatEq(-6), FloatEq(9.5), FloatEq(1.75), FloatEq(-5.5),
                  FloatEq(9), FloatEq(1.5), FloatEq(-96), FloatEq(1.5)));
}

TEST(GaeTest, LambdaOneAddsTheBootstrapValueAtTheEndOfTheChunk) {
  // No done: return_t = Σ_{k≥t} γ^{k−t} r_k + γ^{T−t} V(s_T), γ = 0.5,
  // r = {1, 2}, V(s_T) = 8: return_1 = 2 + 0.5·8 = 6,
  // return_0 = 1 + 0.5·2 + 0.25·8 = 4.
  const GaeResult r = ComputeGae(2, 1, {1, 2}, {0.5, -0.5}, {8}, {0, 0}, {},
                                 0.5, 1.0, /*bootstrap_truncation=*/true);
  EXPECT_THAT(r.returns, ElementsAre(FloatEq(4), FloatEq(6)));
  EXPECT_THAT(r.advantages, ElementsAre(FloatEq(3.5), FloatEq(6.5)));
}

TEST(GaeTest, FinalValuesAreConsumedInRowMajorOrderOfTheDones) {
  // T = 2, B = 2, dones at (t0, b1) and (t1, b0): the first final value
  // belongs to (t0, b1) although copy 0 comes first. γ = λ = 1, r = V = 0:
  //   A(t1,b0) = 20, A(t0,b0) = 0 + V(s_1) − 0 + A(t1,b0) = 20,
  //   A(t0,b1) = 10, A(t1,b1) = 0 + V(s_T) = 0.
  const GaeResult r =
      ComputeGae(2, 2, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0}, {0, 1, 1, 0},
                 {10, 20}, 1.0, 1.0, /*bootstrap_truncation=*/true);
  EXPECT_THAT(r.advantages,
              ElementsAre(FloatEq(20), FloatEq(10), FloatEq(20), FloatEq(0)));
}

TEST(GaeTest, EmptyBlockGivesEmptyResult) {
  const GaeResult r =
      ComputeGae(0, 3, {}, {}, {1, 2, 3}, {}, {}, 0.99, 0.95, true);
  EXPECT_TRUE(r.advantages.empty());
  EXPECT_TRUE(r.returns.empty());
}

TEST(GaeDeathTest, FinalValuesCountMismatchAborts) {
  EXPECT_DEATH(ComputeGae(kSteps, kCopies, kRewards, kValues, kNextValues,
                          kDones, {}, 0.9, 0.8, /*bootstrap_truncation=*/true),
               "final_values must hold one value per done");
}

}  // namespace
}  // namespace ristretto::learner
