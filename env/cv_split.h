// Cross-validation splitters: combinatorial purged CV, walk-forward and
// k-fold over the rows [0, T) of a dataset. Each contiguous block of a fold is
// its own episode domain, so an episode never jumps across a gap between
// blocks (see docs: system.md, "Trials and evaluation").
// Pure functions; thread-safe.
//
// Purge and embargo. Rows near a test block leak information into training:
// a training row just after a test block has features computed from test bars
// (indicators look back tens of bars), and a training row just before a test
// block earns rewards from prices inside it. So for every test block
// [a, b) the splitters remove from training the `embargo_bars` rows before it,
// [a − e, a) (the purge), and the `embargo_bars` rows after it, [b, b + e)
// (the embargo). What remains of the training groups is merged into maximal
// contiguous runs, one Domain each; empty runs are dropped.
#ifndef RISTRETTO_ENV_CV_SPLIT_H_
#define RISTRETTO_ENV_CV_SPLIT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "env/dataset.h"

namespace ristretto::env {

// One train/test split. Domains are ascending, non-overlapping and non-empty;
// domains that touch are merged (a Domain never ends where the next begins).
struct Fold {
  std::vector<Domain> train;
  std::vector<Domain> test;
};

// Combinatorial purged CV (López de Prado, "Advances in Financial Machine
// Learning", ch. 12). Rows [0, num_rows) are cut into `num_groups`
// contiguous groups whose sizes differ by at most one, the earlier groups
// being the larger ones (group g has ⌊T/N⌋ + (g < T mod N) rows). Every
// combination of `num_test_groups` groups is the test set of one fold, so
// there are C(N, k) folds, in lexicographic order of the group-index
// combinations ({0,1}, {0,2}, …, {N−2,N−1}). Adjacent test groups merge into
// one test domain. Training is every other row minus `embargo_bars` rows on
// each side of every test block (purge before, embargo after; see above).
//
// Errors (kInvalidArgument): num_rows < 1; num_groups < 2 or > num_rows;
// num_test_groups < 1 or >= num_groups; embargo_bars < 0; an embargo that
// leaves some fold with no training rows.
absl::StatusOr<std::vector<Fold>> CombinatorialPurgedCv(int64_t num_rows,
                                                        int num_groups,
                                                        int num_test_groups,
                                                        int64_t embargo_bars);

// Walk-forward (rolling window). Fold f trains on the single block
// [f·step, f·step + train_bars) and tests on the block that follows it,
// [f·step + train_bars, f·step + train_bars + test_bars). Folds are produced
// for f = 0, 1, … while the test end is <= num_rows. No purge is needed
// before a test block that only follows training; callers wanting a gap can
// shrink train_bars.
//
// Errors (kInvalidArgument): num_rows, train_bars, test_bars or step_bars
// < 1; train_bars + test_bars > num_rows (no fold fits).
absl::StatusOr<std::vector<Fold>> WalkForward(int64_t num_rows,
                                              int64_t train_bars,
                                              int64_t test_bars,
                                              int64_t step_bars);

// k-fold: rows are cut into k contiguous groups exactly as in
// CombinatorialPurgedCv; fold f tests on group f and trains on the rest minus
// `embargo_bars` rows on each side of the test block. Equivalent to
// CombinatorialPurgedCv(num_rows, k, 1, embargo_bars).
//
// Errors (kInvalidArgument): num_rows < 1; k < 2 or k > num_rows;
// embargo_bars < 0; an embargo that leaves some fold with no training rows.
absl::StatusOr<std::vector<Fold>> KFold(int64_t num_rows, int k,
                                        int64_t embargo_bars);

// Splits every block at the dataset's domain boundaries: returns the
// non-empty intersections of each block with each of `dataset_domains`, in
// block order then domain order. Pieces with fewer than `min_rows` rows are
// dropped (min_rows <= 1 keeps every non-empty piece); if `dropped_rows` is
// non-null it is set to the total number of rows in the dropped pieces. Rows
// of a block covered by no dataset domain are not part of any piece and are
// not counted.
std::vector<Domain> IntersectDomains(const std::vector<Domain>& blocks,
                                     const std::vector<Domain>& dataset_domains,
                                     int64_t min_rows, int64_t* dropped_rows);

// A train/validation holdout over a dataset with gaps (`ristretto train`).
struct DomainHoldout {
  // train: the pieces of [0, split − embargo) inside the dataset's domains
  // with at least min_train_rows rows; test: the pieces of [split, num_rows)
  // with at least min_test_rows rows. Both non-empty.
  Fold fold;
  int64_t split = 0;  // first validation row (after domain alignment)
  // Rows of [0, split − embargo) and of [split, num_rows) inside the
  // dataset's domains that are in pieces too short to use.
  int64_t train_rows_dropped = 0;
  int64_t test_rows_dropped = 0;
};

// Splits rows [0, num_rows) of a dataset whose contiguous blocks are
// `dataset_domains` (ascending, non-overlapping, as env::Dataset::domains)
// into training rows followed by the last `test_share` of the rows for
// validation, with `embargo_bars` rows left out before the validation rows
// (0 is enough when training only precedes validation). Every training and
// validation piece lies inside one dataset domain, so no episode crosses a
// gap: a training episode needs `min_train_rows` rows (episode_steps +
// 2·lookback), an evaluation `min_test_rows` (2·lookback + 1).
//
// The split starts at num_rows − ⌊test_share · num_rows⌋ (at least one
// row each side) and is then
// aligned to a domain so that no rows are wasted: if it falls inside a
// domain whose rows after it are too few for a validation piece, those rows
// train instead (the split moves to the domain's end); else, if the domain's
// rows before it (less the embargo) are too few for a training piece, they
// validate instead (the split moves to the domain's start).
//
// Errors (kInvalidArgument), all before any training can start, each naming
// the numbers: num_rows < 1; test_share outside (0, 1); embargo_bars < 0;
// min_train_rows or min_test_rows < 1; a domain outside [0, num_rows); no
// dataset domain as long as one training episode (naming the longest);
// no validation piece of min_test_rows rows in the last rows; no training
// piece of min_train_rows rows before the split.
absl::StatusOr<DomainHoldout> SplitHoldoutByDomains(
    int64_t num_rows, const std::vector<Domain>& dataset_domains,
    double test_share, int64_t embargo_bars, int64_t min_train_rows,
    int64_t min_test_rows);

}  // namespace ristretto::env

#endif  // RISTRETTO_ENV_CV_SPLIT_H_
