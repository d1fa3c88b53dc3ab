#include "coordinator/core/pruner.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

std::unique_ptr<Pruner> Make(const PrunerSpec& spec) {
  absl::StatusOr<std::unique_ptr<Pruner>> p = MakePruner(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(p).value();
}

PrunerSpec Median(int min_trials, int64_t warmup = 0) {
  PrunerSpec s;
  s.type = "median";
  s.min_trials = min_trials;
  s.warmup_steps = warmup;
  return s;
}

PrunerSpec Asha(int min_trials, int64_t warmup = 0) {
  PrunerSpec s;
  s.type = "asha";
  s.min_trials = min_trials;
  s.warmup_steps = warmup;
  s.min_resource = 1000;
  s.reduction_factor = 3;  // rungs at 1000, 3000, 9000, …
  return s;
}

// Three single-fold trials: at step 1000 they score 1.0, 0.5, 0.75; trials 1
// and 2 have also reached step 2000 (2.0 and 1.0).
std::vector<IntermediateValue> Base() {
  return {{1, 0, 1000, 1.0},
          {1, 0, 2000, 2.0},
          {2, 0, 1000, 0.5},
          {2, 0, 2000, 1.0},
          {3, 0, 1000, 0.75}};
}

std::vector<IntermediateValue> With(std::vector<IntermediateValue> all,
                                    std::vector<IntermediateValue> more) {
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

TEST(PrunerTest, NonePrunesNothing) {
  PrunerSpec spec;
  spec.type = "none";
  EXPECT_FALSE(Make(spec)->ShouldPrune(4, With(Base(), {{4, 0, 1000, -9}})));
}

TEST(MedianPrunerTest, PrunesATrialBelowTheMedianAtItsLatestStep) {
  const auto p = Make(Median(2));
  // Median of 1.0, 0.5, 0.75 is 0.75 (values exact in binary).
  EXPECT_TRUE(p->ShouldPrune(4, With(Base(), {{4, 0, 1000, 0.6}})));
  EXPECT_FALSE(p->ShouldPrune(4, With(Base(), {{4, 0, 1000, 0.9}})));
  // Equal to the median: kept (strictly below prunes).
  EXPECT_FALSE(p->ShouldPrune(4, With(Base(), {{4, 0, 1000, 0.75}})));
  // The existing trials themselves: trial 2 at 2000 (1.0) vs trial 1 (2.0)
  // only — trial 3 has not reached 2000; median of one value is 2.0.
  EXPECT_FALSE(Make(Median(2))->ShouldPrune(2, Base()));
  EXPECT_TRUE(Make(Median(1))->ShouldPrune(2, Base()));
}

TEST(MedianPrunerTest, ComparesOnlyWithTrialsThatReachedTheStep) {
  // At step 2000 the others are trials 1 and 2: median (2.0 + 1.0) / 2.
  const auto all = With(Base(), {{4, 0, 1000, 5.0}, {4, 0, 2000, 1.4}});
  EXPECT_TRUE(Make(Median(2))->ShouldPrune(4, all));
  EXPECT_FALSE(Make(Median(3))->ShouldPrune(4, all));  // only 2 others
  const auto better = With(Base(), {{4, 0, 1000, 0.0}, {4, 0, 2000, 1.6}});
  EXPECT_FALSE(Make(Median(2))->ShouldPrune(4, better));
}

TEST(MedianPrunerTest, UsesEachOthersLatestValueAtOrBeforeTheStep) {
  // Trial 5 reported at 1500 and 2500; at step 2000 its value is 1500's.
  const auto all =
      With(Base(), {{5, 0, 1500, 0.1}, {5, 0, 2500, 9.0}, {4, 0, 2000, 0.9}});
  // Others at 2000: 2.0, 1.0, 0.1 -> median 1.0; 0.9 < 1.0.
  EXPECT_TRUE(Make(Median(3))->ShouldPrune(4, all));
}

TEST(MedianPrunerTest, AveragesTheTrialsFoldsAtTheStep) {
  // Folds 0.25 and 1.25 average 0.75, the median: kept.
  const auto all = With(Base(), {{4, 0, 1000, 0.25}, {4, 1, 1000, 1.25}});
  EXPECT_FALSE(Make(Median(2))->ShouldPrune(4, all));
  // Another two-fold trial averages into the comparison too: 1.0, 0.5,
  // 0.75, (0.0 + 0.4)/2 = 0.2 -> median 0.625; trial 4's 0.75 stays, trial
  // 6's 0.2 is below the others' median 0.75.
  const auto more = With(all, {{6, 0, 1000, 0.0}, {6, 1, 1000, 0.4}});
  EXPECT_FALSE(Make(Median(2))->ShouldPrune(4, more));
  EXPECT_TRUE(Make(Median(2))->ShouldPrune(6, more));
}

// What the report draws for a pruned trial: the value the median pruner
// judges, at the trial's latest step, from each fold's latest report.
TEST(MedianPrunerTest, JudgedValueIsWhatThePrunerCompares) {
  // Fold 0 at 1000 (0.2) and 2000 (1.0); fold 1 only at 1000 (0.6): at
  // step 2000 the trial is (1.0 + 0.6) / 2 = 0.8, not fold 0's 1.0.
  const std::vector<IntermediateValue> own = {
      {7, 0, 1000, 0.2}, {7, 1, 1000, 0.6}, {7, 0, 2000, 1.0}};
  int64_t step = 0;
  const std::optional<double> v = JudgedValue(7, With(Base(), own), &step);
  ASSERT_TRUE(v.has_value());
  EXPECT_DOUBLE_EQ(*v, 0.8);
  EXPECT_EQ(step, 2000);
  // And the pruner decides with it: others at 2000 are 2.0 and 1.0
  // (median 1.5); 0.8 is below.
  EXPECT_TRUE(Make(Median(2))->ShouldPrune(7, With(Base(), own)));
  EXPECT_FALSE(JudgedValue(99, Base(), &step).has_value());
  EXPECT_FALSE(JudgedValue(8, {{8, 0, 1000, std::nan("")}}, &step).has_value());
}

TEST(MedianPrunerTest, WaitsForWarmupAndForValues) {
  EXPECT_FALSE(
      Make(Median(2, 1500))->ShouldPrune(4, With(Base(), {{4, 0, 1000, 0}})));
  EXPECT_TRUE(
      Make(Median(2, 1000))->ShouldPrune(4, With(Base(), {{4, 0, 1000, 0}})));
  EXPECT_FALSE(Make(Median(1))->ShouldPrune(99, Base()));  // no values
}

TEST(AshaPrunerTest, KeepsTheTopThirdAtTheFirstRung) {
  // Six trials at rung 1000: keep floor(6/3) = 2, i.e. 0.9 and 0.8.
  const std::vector<IntermediateValue> all = {
      {1, 0, 1000, 0.9}, {2, 0, 1000, 0.5}, {3, 0, 1000, 0.7},
      {4, 0, 1000, 0.1}, {5, 0, 1000, 0.8}, {6, 0, 1000, 0.3}};
  const auto p = Make(Asha(1));
  std::vector<int64_t> pruned;
  for (int64_t t = 1; t <= 6; ++t) {
    if (p->ShouldPrune(t, all)) pruned.push_back(t);
  }
  EXPECT_EQ(pruned, (std::vector<int64_t>{2, 3, 4, 6}));
}

TEST(AshaPrunerTest, WithFewerThanEtaTrialsOnlyTheBestGoesOn) {
  const std::vector<IntermediateValue> all = {{1, 0, 1000, 0.9},
                                              {2, 0, 1000, 0.5}};
  EXPECT_TRUE(Make(Asha(1))->ShouldPrune(2, all));
  EXPECT_FALSE(Make(Asha(1))->ShouldPrune(1, all));
  EXPECT_FALSE(Make(Asha(2))->ShouldPrune(2, all));  // needs 2 others
}

TEST(AshaPrunerTest, JudgesAtTheHighestRungWithTheValueThatCrossedIt) {
  // Trial 1 crossed rung 1000 at step 1024 with 0.3 and is now at 2048
  // (rung 0 still): its rung value is 0.3, not the later 0.95.
  std::vector<IntermediateValue> all = {{1, 0, 1024, 0.3},
                                        {1, 0, 2048, 0.95},
                                        {2, 0, 1000, 0.6},
                                        {3, 0, 1000, 0.2}};
  EXPECT_TRUE(Make(Asha(1))->ShouldPrune(1, all));
  // At rung 3000 only trials that got there compete.
  all.push_back({1, 0, 3000, 0.5});
  all.push_back({2, 0, 3000, 0.4});
  EXPECT_FALSE(Make(Asha(1))->ShouldPrune(1, all));  // 0.5 best of 2
  EXPECT_TRUE(Make(Asha(1))->ShouldPrune(2, all));
}

TEST(AshaPrunerTest, WaitsForTheFirstRungAndWarmup) {
  const std::vector<IntermediateValue> all = {
      {1, 0, 999, 0.9}, {2, 0, 999, 0.1}, {3, 0, 1000, 0.9}, {4, 0, 1000, 0.1}};
  EXPECT_FALSE(Make(Asha(1))->ShouldPrune(2, all));  // below rung 1000
  EXPECT_TRUE(Make(Asha(1))->ShouldPrune(4, all));
  EXPECT_FALSE(Make(Asha(1, 2000))->ShouldPrune(4, all));
}

TEST(PrunerTest, BadSpecsAreRefused) {
  PrunerSpec s;
  s.type = "hyperband";
  EXPECT_EQ(MakePruner(s).status().message(),
            "unknown pruner type 'hyperband' (expected none, median or asha)");
  s = Asha(1);
  s.reduction_factor = 1;
  EXPECT_EQ(MakePruner(s).status().code(), absl::StatusCode::kInvalidArgument);
  s = Asha(1);
  s.min_resource = 0;
  EXPECT_EQ(MakePruner(s).status().message(),
            "pruner min_resource = 0 must be > 0");
  s = Median(0);
  EXPECT_EQ(MakePruner(s).status().message(),
            "pruner min_trials = 0 must be >= 1");
}

}  // namespace
}  // namespace ristretto::coordinator
