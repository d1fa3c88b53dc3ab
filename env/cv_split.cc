#include "env/cv_split.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

absl::StatusOr<DomainHoldout> SplitHoldoutByDomains(
    int64_t num_rows, const std::vector<Domain>& dataset_domains,
    double test_share, int64_t embargo_bars, int64_t min_train_rows,
    int64_t min_test_rows) {
  if (num_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("holdout: the dataset has no rows (", num_rows, ")"));
  }
  if (!(test_share > 0 && test_share < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "holdout: the validation share ", test_share, " is outside (0, 1)"));
  }
  if (embargo_bars < 0 || min_train_rows < 1 || min_test_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("holdout: embargo_bars = ", embargo_bars,
                     " must be >= 0 and ", "min_train_rows = ", min_train_rows,
                     ", min_test_rows = ", min_test_rows, " >= 1"));
  }
  int64_t longest = 0;
  for (const Domain& d : dataset_domains) {
    if (d.begin < 0 || d.end > num_rows || d.end <= d.begin) {
      return absl::InvalidArgumentError(
          absl::StrCat("holdout: dataset domain [", d.begin, ", ", d.end,
                       ") is empty or outside the ", num_rows, " rows"));
    }
    longest = std::max(longest, d.size());
  }
  const std::string domains_text =
      absl::StrCat(dataset_domains.size(), " contiguous domain",
                   dataset_domains.size() == 1 ? "" : "s");
  if (longest < min_train_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no domain of the dataset is long enough for one training episode: "
        "the longest of its ",
        domains_text, " has ", longest, " rows, an episode needs ",
        min_train_rows,
        " (episode_steps + 2·lookback); shorten the episode or the lookback, "
        "or import with a larger --max-ffill so short gaps do not split the "
        "market"));
  }
  const int64_t test_rows = std::clamp<int64_t>(
      static_cast<int64_t>(test_share * static_cast<double>(num_rows)), 1,
      num_rows - 1);
  int64_t split = num_rows - test_rows;
  for (const Domain& d : dataset_domains) {
    if (split <= d.begin || split >= d.end) continue;
    if (d.end - split < min_test_rows) {
      split = d.end;
    } else if (split - embargo_bars - d.begin < min_train_rows) {
      split = d.begin;
    }
    break;
  }
  DomainHoldout out;
  out.split = split;
  out.fold.test = IntersectDomains({Domain{split, num_rows}}, dataset_domains,
                                   min_test_rows, &out.test_rows_dropped);
  out.fold.train = IntersectDomains(
      {Domain{0, std::max<int64_t>(0, split - embargo_bars)}}, dataset_domains,
      min_train_rows, &out.train_rows_dropped);
  if (out.fold.test.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no room for validation: rows [", split, ", ", num_rows, ") (the last ",
        test_share, " of ", num_rows,
        " rows, aligned to the domains) hold no piece of at least ",
        min_test_rows, " rows (2·lookback + 1) inside one of the dataset's ",
        domains_text, "; raise the validation share or shorten the lookback"));
  }
  if (out.fold.train.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no room for training: rows [0, ",
        std::max<int64_t>(0, split - embargo_bars),
        ") before validation hold no piece of at least ", min_train_rows,
        " rows (episode_steps + 2·lookback) inside one of the dataset's ",
        domains_text, "; lower the validation share or shorten the episode"));
  }
  return out;
}

}  // namespace ristretto::env
