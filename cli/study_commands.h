// `ristretto study …` and the database side of `ristretto dataset …`: the
// commands that read and write the coordinator's PostgreSQL store. The
// coordinator process does the work; these commands create studies, ask it
// to start or stop them (Store::SetStudyState), and report what it recorded.
//
// The database is named by `--db DSN` or the RISTRETTO_DB environment
// variable (a libpq connection string or URI). A DSN's password is never
// printed: messages show RedactDsn(dsn) and have the password masked.
//
// The helpers below are reused by `ristretto up`. Each takes a connected
// Store and, like it, is thread-compatible (one Store per thread).
#ifndef RISTRETTO_CLI_STUDY_COMMANDS_H_
#define RISTRETTO_CLI_STUDY_COMMANDS_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/store/store.h"

namespace ristretto::cli {

// `ristretto study create|start|stop|ls|show|best|export`; argv[first] is
// the verb. Returns the exit status (0 ok, 1 failure, 2 bad usage or input)
// and prints errors to stderr as "ristretto: <message>".
int RunStudyCommand(int argc, char** argv, int first);

// `ristretto dataset import|synth|info|ls`; argv[first] is the verb. `ls`
// lists the datasets registered in the store; `import` and `synth` given
// `--db DSN` (or `--data-dir DIR` with RISTRETTO_DB set) write their file
// (env_commands.h, RunDatasetFileCommand), then RegisterDataset it. Exit
// status and errors as RunStudyCommand.
int RunDatasetCommand(int argc, char** argv, int first);

// `dsn` with its password replaced by "***" (key=value form
// "password=…" and URI form "postgresql://user:…@host" or "?password=…").
std::string RedactDsn(const std::string& dsn);

// Connects to the store named by `dsn` and applies pending migrations.
// Errors keep the Store's code (kUnavailable when the server cannot be
// reached after `give_up_after`) and name the redacted DSN.
absl::StatusOr<std::unique_ptr<coordinator::Store>> ConnectStore(
    const std::string& dsn, absl::Duration give_up_after = absl::Seconds(10));

// Copies the dataset file `dataset_file` (read and hash-checked) to
// `data_dir`/datasets/<id>.rds (absolute path; directories created) and
// records it with Store::PutDataset (upsert by id). Returns the row stored.
// Errors: those of env::ReadDataset, kInternal on I/O, the Store's.
absl::StatusOr<coordinator::DatasetRow> RegisterDataset(
    coordinator::Store& store, const std::string& dataset_file,
    const std::string& data_dir);

// The content hash recorded for a policy artifact (lowercase hex SHA-256):
//  * `path` a directory: SHA-256 of the bytes of <path>/contract.json
//    followed by the bytes of <path>/policy.pt (as written by
//    learner::ExportPolicy), nothing between them;
//  * `path` a regular file: SHA-256 of its bytes.
// The learner computes artifact hashes with this function, and `study
// export` checks them with it. Errors: kNotFound (path, contract.json or
// policy.pt missing), kInternal (read error).
absl::StatusOr<std::string> ArtifactSha256(const std::string& path);

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
// (IsTransientStoreError) prints "the database did not answer (...);
// retrying in 1s" and the reads are retried, backing off to 30 s, until
// they succeed or `should_stop`. Errors: kNotFound (no such
// study); kFailedPrecondition with the coordinator's reason when the
// coordinator stopped the study (StudyRow::stop_reason: its dataset could not
// be written, ...); the Store's.
// A store error that a retry can cure: the connection lost or the server
// restarting (kUnavailable), a serialisation conflict (kAborted), a timeout.
bool IsTransientStoreError(const absl::Status& status);

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

// Exports the policy of the study's best complete trial into `out_dir`
// (created if missing) and returns `out_dir`. The policy is the trial's
// final run's (trained on every pre-lockbox row and judged on the lockbox:
// exactly the one the lockbox numbers describe); <out_dir>/evaluation.json
// carries the verdict, the statistics and the lockbox numbers. Its recorded
// sha256 is checked against ArtifactSha256 before copying and again on the
// copies, so the exported bytes are exactly the recorded ones: for a directory
// artifact, <out_dir>/policy.pt and <out_dir>/contract.json; for a file,
// <out_dir>/<its file name>. Existing files of those names are replaced (each
// rename is atomic). Errors: kNotFound (no such study, artifact missing on
// disk), kFailedPrecondition (no complete trial, or it has no policy artifact),
// kDataLoss (hash mismatch: nothing is exported), kInternal on I/O.
absl::StatusOr<std::string> ExportBest(coordinator::Store& store,
                                       const std::string& study_name,
                                       const std::string& out_dir);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_STUDY_COMMANDS_H_
