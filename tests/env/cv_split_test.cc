#include "env/cv_split.h"

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::env {

// Lets gtest print Domains in failure messages as [begin,end).
void PrintTo(const Domain& d, std::ostream* os) {
  *os << "[" << d.begin << "," << d.end << ")";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using D = Domain;

// Checks one fold against the expected train and test domains.
void ExpectFold(const Fold& fold, const std::vector<Domain>& train,
                const std::vector<Domain>& test) {
  EXPECT_EQ(fold.train, train);
  EXPECT_EQ(fold.test, test);
}

// T=12, N=4 → groups G0=[0,3) G1=[3,6) G2=[6,9) G3=[9,12); k=2 → C(4,2)=6
// folds; embargo 1 removes the row just before (purge) and just after
// (embargo) every test block.
TEST(CvSplitTest, CombinatorialPurgedCvTwelveRowsFourGroupsTwoTestEmbargoOne) {
  absl::StatusOr<std::vector<Fold>> folds = CombinatorialPurgedCv(12, 4, 2, 1);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 6u);
  // {0,1}: test [0,6); train G2+G3 = [6,12) minus embargo row 6 → [7,12).
  ExpectFold((*folds)[0], {D{7, 12}}, {D{0, 6}});
  // {0,2}: test [0,3),[6,9); G1=[3,6) loses row 3 (embargo after G0) and
  // row 5 (purge before G2) → [4,5); G3=[9,12) loses row 9 → [10,12).
  ExpectFold((*folds)[1], {D{4, 5}, D{10, 12}}, {D{0, 3}, D{6, 9}});
  // {0,3}: test [0,3),[9,12); train G1+G2=[3,9) minus rows 3 and 8 → [4,8).
  ExpectFold((*folds)[2], {D{4, 8}}, {D{0, 3}, D{9, 12}});
  // {1,2}: test [3,9); G0=[0,3) minus row 2 → [0,2); G3 minus row 9 →
  // [10,12).
  ExpectFold((*folds)[3], {D{0, 2}, D{10, 12}}, {D{3, 9}});
  // {1,3}: test [3,6),[9,12); G0 minus row 2 → [0,2); G2=[6,9) minus rows 6
  // and 8 → [7,8).
  ExpectFold((*folds)[4], {D{0, 2}, D{7, 8}}, {D{3, 6}, D{9, 12}});
  // {2,3}: test [6,12); train G0+G1=[0,6) minus row 5 → [0,5).
  ExpectFold((*folds)[5], {D{0, 5}}, {D{6, 12}});
}

// T=10, N=3: 10 = 3·3 + 1, so the first group gets the extra row:
// G0=[0,4) G1=[4,7) G2=[7,10).
TEST(CvSplitTest, CombinatorialPurgedCvUnevenGroupsGiveExtraRowsToEarlierOnes) {
  absl::StatusOr<std::vector<Fold>> folds = CombinatorialPurgedCv(10, 3, 1, 0);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 3u);
  ExpectFold((*folds)[0], {D{4, 10}}, {D{0, 4}});
  // Training groups G0 and G2 are not adjacent: two domains.
  ExpectFold((*folds)[1], {D{0, 4}, D{7, 10}}, {D{4, 7}});
  ExpectFold((*folds)[2], {D{0, 7}}, {D{7, 10}});
}

TEST(CvSplitTest, CombinatorialPurgedCvUnevenGroupsTwoTestGroupsMerge) {
  absl::StatusOr<std::vector<Fold>> folds = CombinatorialPurgedCv(10, 3, 2, 0);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 3u);
  ExpectFold((*folds)[0], {D{7, 10}}, {D{0, 7}});           // {0,1}
  ExpectFold((*folds)[1], {D{4, 7}}, {D{0, 4}, D{7, 10}});  // {0,2}
  ExpectFold((*folds)[2], {D{0, 4}}, {D{4, 10}});           // {1,2}
}

TEST(CvSplitTest, CombinatorialPurgedCvUnevenGroupsEmbargoTwo) {
  // G0=[0,4) G1=[4,7) G2=[7,10), k=1, embargo 2.
  absl::StatusOr<std::vector<Fold>> folds = CombinatorialPurgedCv(10, 3, 1, 2);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 3u);
  // Test G0: train [4,10) minus [4,6) → [6,10).
  ExpectFold((*folds)[0], {D{6, 10}}, {D{0, 4}});
  // Test G1: G0 minus purge [2,4) → [0,2); G2 minus embargo [7,9) → [9,10).
  ExpectFold((*folds)[1], {D{0, 2}, D{9, 10}}, {D{4, 7}});
  // Test G2: train [0,7) minus purge [5,7) → [0,5).
  ExpectFold((*folds)[2], {D{0, 5}}, {D{7, 10}});
}

TEST(CvSplitTest, CombinatorialPurgedCvFoldCountIsBinomial) {
  // C(6,2) = 15 folds; every group is tested C(5,1) = 5 times.
  absl::StatusOr<std::vector<Fold>> folds = CombinatorialPurgedCv(60, 6, 2, 0);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 15u);
  std::vector<int64_t> test_rows(60, 0);
  for (const Fold& fold : *folds) {
    int64_t train = 0, test = 0;
    for (const Domain& d : fold.train) train += d.size();
    for (const Domain& d : fold.test) {
      test += d.size();
      for (int64_t t = d.begin; t < d.end; ++t) ++test_rows[t];
    }
    EXPECT_EQ(train + test, 60);  // no embargo: a partition of the rows
  }
  for (int64_t t = 0; t < 60; ++t) EXPECT_EQ(test_rows[t], 5) << "row " << t;
  // Lexicographic order: {0,1}, {0,2}, ..., last {4,5}.
  ExpectFold(folds->front(), {D{20, 60}}, {D{0, 20}});
  ExpectFold(folds->back(), {D{0, 40}}, {D{40, 60}});
}

TEST(CvSplitTest, CombinatorialPurgedCvRejectsBadSpecs) {
  struct Case {
    int64_t rows;
    int groups, test_groups;
    int64_t embargo;
    const char* why;
  };
  const Case cases[] = {
      {12, 4, 4, 0, "num_test_groups"},   // k == N
      {12, 4, 5, 0, "num_test_groups"},   // k > N
      {12, 4, 0, 0, "num_test_groups"},   // k < 1
      {12, 4, -1, 0, "num_test_groups"},  // k < 1
      {3, 4, 1, 0, "exceeds num_rows"},   // N > T
      {12, 1, 1, 0, "num_groups"},        // N < 2
      {0, 2, 1, 0, "num_rows"},           // T < 1
      {12, 4, 1, -1, "embargo_bars"},     // negative embargo
      // Testing G1=[3,6): G0=[0,3) loses the purge [−3,3) and G2+G3=[6,12)
      // lose the embargo [6,12): nothing is left to train on.
      {12, 4, 1, 6, "leaves no training rows"},
      // Testing {0,1,2}=[0,9): [9,12) loses the embargo [9,12).
      {12, 4, 3, 3, "leaves no training rows"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Fold>> folds =
        CombinatorialPurgedCv(c.rows, c.groups, c.test_groups, c.embargo);
    EXPECT_EQ(folds.status().code(), absl::StatusCode::kInvalidArgument)
        << c.rows << " " << c.groups << " " << c.test_groups << " "
        << c.embargo;
    EXPECT_THAT(folds.status().message(), HasSubstr(c.why));
  }
}

TEST(CvSplitTest, CombinatorialPurgedCvHugeEmbargoIsAnErrorNotAnOverflow) {
  absl::StatusOr<std::vector<Fold>> folds =
      CombinatorialPurgedCv(12, 4, 1, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(folds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(folds.status().message(), HasSubstr("leaves no training rows"));
}

// T=20, train 8, test 4, step 4: windows of 12 rows starting at 0, 4, 8; a
// fourth would test on [20,24), past T.
TEST(CvSplitTest, WalkForwardTwentyRowsTrainEightTestFourStepFour) {
  absl::StatusOr<std::vector<Fold>> folds = WalkForward(20, 8, 4, 4);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 3u);
  ExpectFold((*folds)[0], {D{0, 8}}, {D{8, 12}});
  ExpectFold((*folds)[1], {D{4, 12}}, {D{12, 16}});
  ExpectFold((*folds)[2], {D{8, 16}}, {D{16, 20}});
}

TEST(CvSplitTest, WalkForwardStopsBeforeTestEndPassesRowCount) {
  // T=21: starts 0, 4, 8 fit (test ends 12, 16, 20); start 12 would end at
  // 24. Row 20 is never tested.
  absl::StatusOr<std::vector<Fold>> folds = WalkForward(21, 8, 4, 4);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 3u);
  ExpectFold(folds->back(), {D{8, 16}}, {D{16, 20}});
  // Exactly one window fits.
  folds = WalkForward(12, 8, 4, 100);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 1u);
  ExpectFold(folds->front(), {D{0, 8}}, {D{8, 12}});
}

TEST(CvSplitTest, WalkForwardHugeStepDoesNotOverflow) {
  absl::StatusOr<std::vector<Fold>> folds =
      WalkForward(20, 8, 4, std::numeric_limits<int64_t>::max());
  ASSERT_TRUE(folds.ok()) << folds.status();
  EXPECT_EQ(folds->size(), 1u);
}

TEST(CvSplitTest, WalkForwardRejectsBadSpecs) {
  struct Case {
    int64_t rows, train, test, step;
    const char* why;
  };
  const Case cases[] = {
      {20, 0, 4, 4, ">= 1"},         {20, -8, 4, 4, ">= 1"},
      {20, 8, 0, 4, ">= 1"},         {20, 8, 4, 0, ">= 1"},
      {20, 8, 4, -1, ">= 1"},        {0, 8, 4, 4, ">= 1"},
      {11, 8, 4, 4, "no fold fits"}, {20, 21, 1, 1, "no fold fits"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Fold>> folds =
        WalkForward(c.rows, c.train, c.test, c.step);
    EXPECT_EQ(folds.status().code(), absl::StatusCode::kInvalidArgument)
        << c.rows << " " << c.train << " " << c.test << " " << c.step;
    EXPECT_THAT(folds.status().message(), HasSubstr(c.why));
  }
}

// T=10, k=5 → groups of 2: [0,2) [2,4) [4,6) [6,8) [8,10); embargo 1.
TEST(CvSplitTest, KFoldTenRowsFiveFoldsEmbargoOne) {
  absl::StatusOr<std::vector<Fold>> folds = KFold(10, 5, 1);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ASSERT_EQ(folds->size(), 5u);
  // Test [0,2): train [2,10) minus embargo row 2 → [3,10).
  ExpectFold((*folds)[0], {D{3, 10}}, {D{0, 2}});
  // Test [2,4): [0,2) minus purge row 1 → [0,1); [4,10) minus row 4 → [5,10).
  ExpectFold((*folds)[1], {D{0, 1}, D{5, 10}}, {D{2, 4}});
  // Test [4,6): [0,4) minus row 3 → [0,3); [6,10) minus row 6 → [7,10).
  ExpectFold((*folds)[2], {D{0, 3}, D{7, 10}}, {D{4, 6}});
  // Test [6,8): [0,6) minus row 5 → [0,5); [8,10) minus row 8 → [9,10).
  ExpectFold((*folds)[3], {D{0, 5}, D{9, 10}}, {D{6, 8}});
  // Test [8,10): [0,8) minus row 7 → [0,7).
  ExpectFold((*folds)[4], {D{0, 7}}, {D{8, 10}});
}

TEST(CvSplitTest, KFoldMatchesCombinatorialWithOneTestGroup) {
  absl::StatusOr<std::vector<Fold>> kfold = KFold(103, 7, 3);
  absl::StatusOr<std::vector<Fold>> cpcv = CombinatorialPurgedCv(103, 7, 1, 3);
  ASSERT_TRUE(kfold.ok()) << kfold.status();
  ASSERT_TRUE(cpcv.ok()) << cpcv.status();
  ASSERT_EQ(kfold->size(), cpcv->size());
  for (size_t f = 0; f < kfold->size(); ++f) {
    ExpectFold((*kfold)[f], (*cpcv)[f].train, (*cpcv)[f].test);
  }
}

TEST(CvSplitTest, KFoldRejectsBadSpecs) {
  struct Case {
    int64_t rows;
    int k;
    int64_t embargo;
    const char* why;
  };
  const Case cases[] = {
      {10, 1, 0, "k must be >= 2"},
      {10, 0, 0, "k must be >= 2"},
      {10, 11, 0, "exceeds num_rows"},
      {0, 2, 0, "num_rows"},
      {10, 5, -2, "embargo_bars"},
      // Test [2,4): [0,2) loses [0,2) to the purge, [4,10) loses [4,10).
      {10, 5, 6, "leaves no training rows"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Fold>> folds = KFold(c.rows, c.k, c.embargo);
    EXPECT_EQ(folds.status().code(), absl::StatusCode::kInvalidArgument)
        << c.rows << " " << c.k << " " << c.embargo;
    EXPECT_THAT(folds.status().message(), HasSubstr(c.why));
    EXPECT_THAT(folds.status().message(), HasSubstr("KFold"));
  }
}

// Dataset of 20 rows with a gap between row 11 and row 12: domains [0,12)
// and [12,20).
TEST(CvSplitTest, IntersectDomainsSplitsBlocksAtDatasetGaps) {
  const std::vector<Domain> dataset = {{0, 12}, {12, 20}};
  const std::vector<Domain> blocks = {{2, 14}, {15, 20}};
  int64_t dropped = -1;
  // [2,14) → [2,12) and [12,14); [15,20) lies inside the second domain.
  EXPECT_THAT(IntersectDomains(blocks, dataset, 0, &dropped),
              ElementsAre(D{2, 12}, D{12, 14}, D{15, 20}));
  EXPECT_EQ(dropped, 0);
  // min_rows 3 drops [12,14) (2 rows).
  EXPECT_THAT(IntersectDomains(blocks, dataset, 3, &dropped),
              ElementsAre(D{2, 12}, D{15, 20}));
  EXPECT_EQ(dropped, 2);
  // min_rows 6 also drops [15,20) (5 rows): 2 + 5 = 7.
  EXPECT_THAT(IntersectDomains(blocks, dataset, 6, &dropped),
              ElementsAre(D{2, 12}));
  EXPECT_EQ(dropped, 7);
  // A null counter is allowed.
  EXPECT_THAT(IntersectDomains(blocks, dataset, 6, nullptr),
              ElementsAre(D{2, 12}));
}

TEST(CvSplitTest, IntersectDomainsDropsEmptyPiecesWithoutCountingThem) {
  const std::vector<Domain> dataset = {{0, 12}, {12, 20}};
  int64_t dropped = -1;
  // Ends exactly at a boundary / starts exactly at one: no empty pieces.
  EXPECT_THAT(
      IntersectDomains({{5, 12}, {12, 13}, {7, 7}}, dataset, 1, &dropped),
      ElementsAre(D{5, 12}, D{12, 13}));
  EXPECT_EQ(dropped, 0);
  EXPECT_TRUE(IntersectDomains({}, dataset, 1, &dropped).empty());
  EXPECT_EQ(dropped, 0);
}

TEST(CvSplitTest, IntersectDomainsAppliedToAKFoldTrainingSet) {
  // KFold(20, 4, 1): fold 1 tests [5,10) and trains on [0,4) and [11,20).
  // With the dataset gap at 12 the second block splits into [11,12) (1 row,
  // dropped by min_rows 2) and [12,20).
  absl::StatusOr<std::vector<Fold>> folds = KFold(20, 4, 1);
  ASSERT_TRUE(folds.ok()) << folds.status();
  ExpectFold((*folds)[1], {D{0, 4}, D{11, 20}}, {D{5, 10}});
  int64_t dropped = -1;
  EXPECT_THAT(
      IntersectDomains((*folds)[1].train, {{0, 12}, {12, 20}}, 2, &dropped),
      ElementsAre(D{0, 4}, D{12, 20}));
  EXPECT_EQ(dropped, 1);
}

// ---- SplitHoldoutByDomains (`ristretto train --dataset`).

// Every piece lies inside one dataset domain (what VectorEnv::ResetCopy
// demands of an evaluation slice).
void ExpectInsideDomains(const std::vector<Domain>& pieces,
                         const std::vector<Domain>& domains) {
  for (const Domain& p : pieces) {
    bool inside = false;
    for (const Domain& d : domains) {
      inside |= p.begin >= d.begin && p.end <= d.end;
    }
    EXPECT_TRUE(inside) << "[" << p.begin << "," << p.end << ")";
  }
}

TEST(SplitHoldoutByDomainsTest, OneDomainIsThePlainHoldout) {
  auto h = SplitHoldoutByDomains(100, {D{0, 100}}, 0.2, 0, 10, 5);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->split, 80);
  ExpectFold(h->fold, {D{0, 80}}, {D{80, 100}});
  EXPECT_EQ(h->train_rows_dropped, 0);
  EXPECT_EQ(h->test_rows_dropped, 0);
}

// The issue-13 case: 4971 rows, share 0.5. The validation rows [2486, 4971)
// span a gap at 3000; they become one piece per domain.
TEST(SplitHoldoutByDomainsTest, ValidationAcrossAGapIsOnePiecePerDomain) {
  const std::vector<Domain> domains = {D{0, 3000}, D{3000, 4971}};
  auto h = SplitHoldoutByDomains(4971, domains, 0.5, 0, 1028, 5);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->split, 2486);
  ExpectFold(h->fold, {D{0, 2486}}, {D{2486, 3000}, D{3000, 4971}});
  ExpectInsideDomains(h->fold.train, domains);
  ExpectInsideDomains(h->fold.test, domains);
}

TEST(SplitHoldoutByDomainsTest, FewValidationRowsInADomainTrainInstead) {
  // Split 80 leaves 5 rows of [0, 85): too few to validate (9).
  auto h = SplitHoldoutByDomains(100, {D{0, 85}, D{85, 100}}, 0.2, 0, 20, 9);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->split, 85);
  ExpectFold(h->fold, {D{0, 85}}, {D{85, 100}});
}

TEST(SplitHoldoutByDomainsTest, FewTrainingRowsInADomainValidateInstead) {
  // Split 80 leaves [50, 80) = 30 rows < 40 for training: they validate.
  auto h = SplitHoldoutByDomains(100, {D{0, 50}, D{50, 100}}, 0.2, 0, 40, 9);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->split, 50);
  ExpectFold(h->fold, {D{0, 50}}, {D{50, 100}});
}

TEST(SplitHoldoutByDomainsTest, EmbargoAndShortPiecesAreLeftOutAndCounted) {
  const std::vector<Domain> domains = {D{0, 30}, D{30, 40}, D{40, 100},
                                       D{100, 103}, D{103, 120}};
  // Split 96 would leave [96, 100) (4 rows < 5) to validate: it moves to
  // 100. Embargo 6 → training [0, 94): [0,30), [30,40) (10 rows < 20,
  // dropped), [40,94); validation [100,103) (3 rows, dropped), [103,120).
  auto h = SplitHoldoutByDomains(120, domains, 0.2, 6, 20, 5);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->split, 100);
  ExpectFold(h->fold, {D{0, 30}, D{40, 94}}, {D{103, 120}});
  EXPECT_EQ(h->train_rows_dropped, 10);
  EXPECT_EQ(h->test_rows_dropped, 3);
}

TEST(SplitHoldoutByDomainsTest, DomainsShorterThanAnEpisodeAreRefused) {
  std::vector<Domain> domains;
  for (int64_t b = 0; b < 100; b += 10) domains.push_back(D{b, b + 10});
  auto h = SplitHoldoutByDomains(100, domains, 0.2, 0, 30, 5);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("no domain of the dataset is long enough for one "
                        "training episode: the longest of its 10 contiguous "
                        "domains has 10 rows, an episode needs 30"));
}

TEST(SplitHoldoutByDomainsTest, NoRoomForValidationIsRefused) {
  // The last 5 % is the 5-row domain [95, 100): shorter than 2·4 + 1.
  auto h = SplitHoldoutByDomains(100, {D{0, 95}, D{95, 100}}, 0.05, 0, 20, 9);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("no room for validation: rows [95, 100)"));
}

TEST(SplitHoldoutByDomainsTest, NoRoomForTrainingIsRefused) {
  // Split 50 inside [20, 100); [20, 50) is too short to train, so the split
  // moves to 20 and [0, 20) is all that is left for training.
  auto h = SplitHoldoutByDomains(100, {D{0, 20}, D{20, 100}}, 0.5, 0, 40, 9);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("no room for training: rows [0, 20)"));
}

TEST(SplitHoldoutByDomainsTest, BadArgumentsAreRefused) {
  const std::vector<Domain> one = {D{0, 100}};
  for (double share : {0.0, 1.0, -0.5}) {
    EXPECT_EQ(SplitHoldoutByDomains(100, one, share, 0, 10, 5).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  auto h = SplitHoldoutByDomains(100, one, 0.2, -1, 10, 5);
  EXPECT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("embargo_bars = -1 must be >= 0"));
  h = SplitHoldoutByDomains(0, {}, 0.2, 0, 10, 5);
  EXPECT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("the dataset has no rows (0)"));
  h = SplitHoldoutByDomains(100, {D{0, 101}}, 0.2, 0, 10, 5);
  EXPECT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("dataset domain [0, 101) is empty or outside the 100 "
                        "rows"));
}

}  // namespace
}  // namespace ristretto::env
