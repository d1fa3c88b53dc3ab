// Study operations on the coordinator's store that commands share (issue
// 36, the application layer): connecting to the store, registering a
// dataset, the leaderboard's lockbox rows, and exporting the best trial's
// policy with its staging and hash checks. No printing: the commands in
// cli/ render what these return.
//
// A DSN's password is never in a message: errors show RedactDsn(dsn) and
// have the password masked. Each function that takes a connected Store is,
// like it, thread-compatible (one Store per thread).
#ifndef RISTRETTO_OPS_STUDY_H_
#define RISTRETTO_OPS_STUDY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/core/study_config.h"
#include "coordinator/store/store.h"

namespace ristretto::ops {

// `dsn` with its password replaced by "***" (key=value form
// "password=…" and URI form "postgresql://user:…@host" or "?password=…").
std::string RedactDsn(const std::string& dsn);

// Connects to the store named by `dsn` and applies pending migrations.
// Errors keep the Store's code (kUnavailable when the server cannot be
// reached after `give_up_after`) and name the redacted DSN.
absl::StatusOr<std::unique_ptr<coordinator::Store>> ConnectStore(
    const std::string& dsn, absl::Duration give_up_after = absl::Seconds(10));

// A store error that a retry can cure: the connection lost or the server
// restarting (kUnavailable), a serialisation conflict (kAborted), a timeout.
bool IsTransientStoreError(const absl::Status& status);

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

// A study file checked before anything is stored: its parsed form and the
// name it will have (`name`, or else the file's `name:`).
struct StudyFile {
  std::string name;
  std::string text;
  coordinator::StudyConfig config;
};

// Parses `text` (read from `file`, which messages name) and settles its
// name. Every problem is kInvalidArgument (bad input), whatever the
// parser's code; no store is needed, so a bad file fails before a
// connection is made.
absl::StatusOr<StudyFile> CheckStudyFile(const std::string& file,
                                         const std::string& text,
                                         const std::string& name);

// Stores a checked study (state created) once its dataset is registered.
// kInvalidArgument naming the file for an unregistered dataset,
// kAlreadyExists for a name in use, the Store's errors.
absl::StatusOr<coordinator::StudyRow> CreateStudy(coordinator::Store& store,
                                                  const std::string& file,
                                                  const StudyFile& study);

// Asks the coordinator to run (kRunning) or stop (kStopped) study `name`
// and returns the state it was in (unchanged when it already was there).
// kNotFound for no such study; kFailedPrecondition when it is done.
absl::StatusOr<coordinator::StudyState> SetStudyRunning(
    coordinator::Store& store, const std::string& name, bool running);

// The study's lockbox results by trial id.
absl::StatusOr<std::map<int64_t, coordinator::LockboxRow>> LockboxByTrial(
    coordinator::Store& store, int64_t study_id);

// Exports the policy of the study's best complete trial into `out_dir`
// (created if missing) and returns `out_dir`. The policy is the trial's
// final run's (trained on every pre-lockbox row and judged on the lockbox:
// exactly the one the lockbox numbers describe; with several refits, one
// directory per refit, kRefitDirPrefix in ops/export_layout.h);
// <out_dir>/evaluation.json carries the verdict, the statistics and the
// lockbox numbers. Its recorded sha256 is checked against ArtifactSha256
// before copying and again on the copies, so the exported bytes are exactly
// the recorded ones. Everything is staged in a private directory and moved
// into place only when whole; evaluation.json is moved last. Errors:
// kNotFound (no such study, artifact missing on disk), kFailedPrecondition
// (no complete trial, no policy artifact or no lockbox result yet),
// kDataLoss (hash mismatch: nothing is exported), kInternal on I/O.
absl::StatusOr<std::string> ExportBest(coordinator::Store& store,
                                       const std::string& study_name,
                                       const std::string& out_dir);

}  // namespace ristretto::ops

#endif  // RISTRETTO_OPS_STUDY_H_
