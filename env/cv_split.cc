#include "env/cv_split.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace ristretto::env {
namespace {

// Group g is [bounds[g], bounds[g + 1]); the first T mod N groups get one
// extra row.
std::vector<int64_t> GroupBounds(int64_t num_rows, int num_groups) {
  std::vector<int64_t> bounds(num_groups + 1, 0);
  const int64_t base = num_rows / num_groups;
  const int64_t extra = num_rows % num_groups;
  for (int g = 0; g < num_groups; ++g) {
    bounds[g + 1] = bounds[g] + base + (g < extra ? 1 : 0);
  }
  return bounds;
}

// Builds the fold whose test set is the groups flagged in `is_test`.
Fold MakeFold(const std::vector<int64_t>& bounds,
              const std::vector<bool>& is_test, int64_t embargo_bars) {
  const int num_groups = static_cast<int>(is_test.size());
  const int64_t num_rows = bounds[num_groups];
  Fold fold;
  for (int g = 0; g < num_groups; ++g) {
    if (!is_test[g]) continue;
    if (!fold.test.empty() && fold.test.back().end == bounds[g]) {
      fold.test.back().end = bounds[g + 1];
    } else {
      fold.test.push_back({bounds[g], bounds[g + 1]});
    }
  }
  // Training rows are the gaps between test blocks (and the two edges). A gap
  // is bounded on each side by a test block or by 0 / num_rows, so trimming
  // `embargo` rows at each test-bounded side purges and embargoes exactly.
  int64_t gap_begin = 0;
  auto add_gap = [&](int64_t begin, int64_t end) {
    if (begin > 0) begin += embargo_bars;     // embargo after a test block
    if (end < num_rows) end -= embargo_bars;  // purge before a test block
    if (end > begin) fold.train.push_back({begin, end});
  };
  for (const Domain& test : fold.test) {
    add_gap(gap_begin, test.begin);
    gap_begin = test.end;
  }
  add_gap(gap_begin, num_rows);
  return fold;
}

absl::StatusOr<std::vector<Fold>> GroupedFolds(const char* scheme,
                                               int64_t num_rows, int num_groups,
                                               int num_test_groups,
                                               int64_t embargo_bars) {
  // Rows never leave [0, num_rows), so a larger embargo acts like num_rows
  // (and clamping keeps begin + embargo from overflowing).
  const int64_t embargo = std::min(embargo_bars, num_rows);
  const std::vector<int64_t> bounds = GroupBounds(num_rows, num_groups);
  std::vector<Fold> folds;
  // Lexicographic enumeration of k-combinations of {0, …, N−1}.
  std::vector<int> combo(num_test_groups);
  for (int j = 0; j < num_test_groups; ++j) combo[j] = j;
  while (true) {
    std::vector<bool> is_test(num_groups, false);
    for (int g : combo) is_test[g] = true;
    Fold fold = MakeFold(bounds, is_test, embargo);
    if (fold.train.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: embargo_bars=%d leaves no training rows when testing on "
          "group(s) {%s} of %d groups over %d rows",
          scheme, embargo_bars, absl::StrJoin(combo, ","), num_groups,
          num_rows));
    }
    folds.push_back(std::move(fold));
    // Advance to the next combination: bump the rightmost index that can
    // still move, then reset the ones after it.
    int j = num_test_groups - 1;
    while (j >= 0 && combo[j] == num_groups - num_test_groups + j) --j;
    if (j < 0) break;
    ++combo[j];
    for (int m = j + 1; m < num_test_groups; ++m) combo[m] = combo[m - 1] + 1;
  }
  return folds;
}

}  // namespace

absl::StatusOr<std::vector<Fold>> CombinatorialPurgedCv(int64_t num_rows,
                                                        int num_groups,
                                                        int num_test_groups,
                                                        int64_t embargo_bars) {
  if (num_rows < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CombinatorialPurgedCv: num_rows must be >= 1, got %d", num_rows));
  }
  if (num_groups < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CombinatorialPurgedCv: num_groups must be >= 2, got %d", num_groups));
  }
  if (num_groups > num_rows) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CombinatorialPurgedCv: num_groups=%d exceeds num_rows=%d", num_groups,
        num_rows));
  }
  if (num_test_groups < 1 || num_test_groups >= num_groups) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CombinatorialPurgedCv: num_test_groups must be in [1, num_groups) = "
        "[1, %d), got %d",
        num_groups, num_test_groups));
  }
  if (embargo_bars < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CombinatorialPurgedCv: embargo_bars must be >= 0, got %d",
        embargo_bars));
  }
  return GroupedFolds("CombinatorialPurgedCv", num_rows, num_groups,
                      num_test_groups, embargo_bars);
}

absl::StatusOr<std::vector<Fold>> WalkForward(int64_t num_rows,
                                              int64_t train_bars,
                                              int64_t test_bars,
                                              int64_t step_bars) {
  if (num_rows < 1 || train_bars < 1 || test_bars < 1 || step_bars < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "WalkForward: num_rows, train_bars, test_bars and step_bars must all "
        "be >= 1, got %d, %d, %d, %d",
        num_rows, train_bars, test_bars, step_bars));
  }
  // Compare without forming train + test, which could overflow.
  if (train_bars > num_rows || test_bars > num_rows - train_bars) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "WalkForward: no fold fits: train_bars=%d + test_bars=%d exceeds "
        "num_rows=%d",
        train_bars, test_bars, num_rows));
  }
  const int64_t window = train_bars + test_bars;
  std::vector<Fold> folds;
  for (int64_t start = 0; start <= num_rows - window; start += step_bars) {
    Fold fold;
    fold.train.push_back({start, start + train_bars});
    fold.test.push_back({start + train_bars, start + window});
    folds.push_back(std::move(fold));
    if (step_bars > num_rows - window - start) break;  // next start overflows
  }
  return folds;
}

absl::StatusOr<std::vector<Fold>> KFold(int64_t num_rows, int k,
                                        int64_t embargo_bars) {
  if (num_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KFold: num_rows must be >= 1, got %d", num_rows));
  }
  if (k < 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KFold: k must be >= 2, got %d", k));
  }
  if (k > num_rows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KFold: k=%d exceeds num_rows=%d", k, num_rows));
  }
  if (embargo_bars < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KFold: embargo_bars must be >= 0, got %d", embargo_bars));
  }
  return GroupedFolds("KFold", num_rows, k, 1, embargo_bars);
}

std::vector<Domain> IntersectDomains(const std::vector<Domain>& blocks,
                                     const std::vector<Domain>& dataset_domains,
                                     int64_t min_rows, int64_t* dropped_rows) {
  std::vector<Domain> pieces;
  int64_t dropped = 0;
  for (const Domain& block : blocks) {
    for (const Domain& domain : dataset_domains) {
      const Domain piece{std::max(block.begin, domain.begin),
                         std::min(block.end, domain.end)};
      if (piece.size() <= 0) continue;
      if (piece.size() < min_rows) {
        dropped += piece.size();
        continue;
      }
      pieces.push_back(piece);
    }
  }
  if (dropped_rows != nullptr) *dropped_rows = dropped;
  return pieces;
}

}  // namespace ristretto::env
