// What the study commands and `ristretto up` print about a study: the
// progress line while it runs, the leaderboard, the statistics and the
// verdict, a study's settings and trials (`study show`), its best trial
// (`study best`) and the list of studies (`study ls`). Each reads a
// connected Store and, like it, is thread-compatible (one Store per
// thread).
#ifndef RISTRETTO_CLI_STUDY_VIEWS_H_
#define RISTRETTO_CLI_STUDY_VIEWS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/store/store.h"

namespace ristretto::cli {

// Prints a progress line for study `study_name` to `out` until the study is
// done (state "done", or as many trials finished as its max_trials and none
// running), stopped, or `should_stop()` returns true (polled every 100 ms;
// the store every second):
//   trials 7/20 done: 5 complete, 1 pruned, 1 failed; 2 running | best
//   0.4123 (trial 3) | 14.2 trials/h | ETA 55m
// On a terminal the line is rewritten in place (\r); otherwise a new line is
// printed whenever the counts, the best score or the state change. Ends with
// a line saying why it returned (when `should_stop` ended the wait and
// `stopped_why` is given, the line it returns). A transient store error
// (ops::IsTransientStoreError) prints "the database did not answer (...);
// retrying in 1s" and the reads are retried, backing off to 30 s, until
// they succeed or `should_stop`. Errors: kNotFound (no such
// study); kFailedPrecondition with the coordinator's reason when the
// coordinator stopped the study (StudyRow::stop_reason: its dataset could not
// be written, ...); the Store's.
absl::Status WaitForStudy(
    coordinator::Store& store, const std::string& study_name,
    const std::function<bool()>& should_stop, std::FILE* out,
    const std::function<std::string()>& stopped_why = nullptr);

// Prints the `top_n` best complete trials of the study (rank, trial, CV
// score, lockbox Sharpe ± standard error with buy & hold's — a separate
// column that never ranks — and params), best first; ties keep the earlier
// trial; then the study's statistics and verdict (PrintStudyStatistics).
// Says so when none is complete. Errors: kNotFound (no such study), the
// Store's.
absl::Status PrintLeaderboard(coordinator::Store& store,
                              const std::string& study_name, int top_n,
                              std::FILE* out);

// Prints the statistics (best trial's CV Sharpe ± SE, deflated Sharpe,
// PBO, the best trial's lockbox against buy & hold, cash and random) and
// ends with the one-line verdict. Stored at the end of a study, computed on
// demand before.
absl::Status PrintStudyStatistics(coordinator::Store& store,
                                  const coordinator::StudyRow& study,
                                  std::FILE* out);

// The share of env steps a learner dropped (stale, or left over when a run
// ended) among those it received: "1.25 %" (two decimals), "-" when
// nothing was received (no run completed, or its learner did not report).
std::string FormatDroppedShare(int64_t received, int64_t dropped);

// A time in the machine's local zone, "2024-01-31 12:00".
std::string FormatLocalTime(absl::Time t);

// `study ls`: every study with its trial counts and best score.
absl::Status PrintStudies(coordinator::Store* store);

// `study show NAME`: the study's settings and its trials. kNotFound for no
// such study.
absl::Status PrintStudy(coordinator::Store* store, const std::string& name);

// `study best NAME`: the best complete trial (params, folds, lockbox,
// artifacts, the backtest that replays its lockbox). kNotFound for no such
// study; kFailedPrecondition when no trial is complete.
absl::Status PrintBestTrial(coordinator::Store* store, const std::string& name);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_STUDY_VIEWS_H_
