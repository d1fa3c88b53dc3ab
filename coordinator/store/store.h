// Store: the coordinator's state (studies, trials, runs, leases, metrics,
// members, datasets) behind one interface. Every state change of a study,
// trial or run is atomic; the coordinator is the only writer of trial/run
// transitions, the CLI may create studies and request start/stop.
//
// Implementations:
//  * PgStore (pg_store.h): PostgreSQL via libpqxx, what every binary uses
//    (Store::Connect returns one). Retries lost connections, so a method
//    may also answer kUnavailable after its retry budget.
//  * InMemoryStore (in_memory_store.h): a thread-safe fake for in-process
//    tests, held to the same contracts by tests/coordinator/
//    store_contract_test.cc.
//
// Contracts every implementation keeps (the tests check them):
//  * errors: a missing study/trial/run/dataset → kNotFound; a transition the
//    state machine (states.h) does not allow → kFailedPrecondition; bad
//    arguments (empty names, negative counts, bad artifact hashes, limits
//    below 1) → kInvalidArgument, checked before anything is written; a
//    method that fails writes nothing.
//  * leases: a run is leased to one member at a time; attempts counts the
//    leases granted; only the holder may report, complete or fail it.
//  * ids are positive and increase in creation order; lists are ordered as
//    each method says.
//
// Thread-safety: see each implementation (PgStore is thread-compatible,
// InMemoryStore is thread-safe).
#ifndef RISTRETTO_COORDINATOR_STORE_STORE_H_
#define RISTRETTO_COORDINATOR_STORE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/store/states.h"

namespace ristretto::coordinator {

// States: StudyState, TrialState and RunState (states.h, with the state
// machine); the database stores their ToString text.

struct RetryPolicy {
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  absl::Duration give_up_after = absl::Seconds(60);  // then kUnavailable
};

struct DatasetRow {
  std::string id;       // SHA-256 content id (env::Dataset::ComputeId)
  std::string path;     // binary dataset file the coordinator serves
  std::string symbols;  // comma-separated
  int64_t rows = 0;
  int64_t interval_seconds = 0;
  absl::Time created_at;
};

struct StudyRow {
  int64_t id = 0;
  std::string name;         // unique
  std::string config_text;  // the study file as given (YAML)
  StudyState state = StudyState::kCreated;
  absl::Time created_at, updated_at;
  // Why the coordinator stopped the study (e.g. its dataset could not be
  // written); empty when it was not stopped by the coordinator. Every
  // state change replaces it.
  std::string stop_reason;
};

struct ParamRow {
  std::string name;
  std::string value;  // as text: "0.0003", "4096", "relu"
};

struct TrialRow {
  int64_t id = 0;
  int64_t study_id = 0;
  int64_t number = 0;  // 0, 1, 2, … within the study, in creation order
  TrialState state = TrialState::kRunning;
  std::vector<ParamRow> params;
  std::optional<double> score;  // set when complete
  std::string fail_reason;      // set when failed (names the fold)
  absl::Time created_at;
  std::optional<absl::Time> finished_at;
};

struct RunRow {
  int64_t id = 0;
  int64_t trial_id = 0;
  int64_t study_id = 0;
  int fold = 0;
  RunState state = RunState::kQueued;
  std::string config_json;  // learner::TrainerOptions as JSON
  int attempts = 0;         // leases granted so far
  std::string member_id;    // lease holder while leased
  std::optional<absl::Time> lease_expires_at;
  int64_t env_steps = 0;       // last reported progress
  std::string checkpoint_dir;  // where the learner checkpoints this run
  std::string last_error;
  // A retry backing off (RetryRun): the run is not leased before
  // retry_after, and not to avoid_member before avoid_until (so another
  // learner gets it first). Unset / empty: no back-off.
  std::optional<absl::Time> retry_after;
  std::string avoid_member;
  std::optional<absl::Time> avoid_until;
  // The learner's data flow when it completed the run (CompleteRun): env
  // steps its actors delivered and, of those, the ones not trained (stale,
  // or left over at the end). 0 and 0 before completion, and for a run
  // completed by a learner that did not report them.
  int64_t env_steps_received = 0;
  int64_t env_steps_dropped = 0;
};

// The fold number of a trial's final run: trained on every row before the
// lockbox, evaluated once on the lockbox (docs/study_format.md, "lockbox").
// With several refits (lockbox.refits), refit r is fold −1 − r: the first
// is kLockboxFold, and every negative fold is a final run.
inline constexpr int kLockboxFold = -1;
inline constexpr int kMaxFinalRefits = 16;  // folds −1 … −16 (schema 7)
constexpr int FinalRunFold(int refit) { return -1 - refit; }
constexpr bool IsFinalFold(int fold) { return fold < 0; }
constexpr int RefitOfFold(int fold) { return -1 - fold; }

// Validation outcome of one fold (run), as learner::EvaluationResult.
struct FoldMetrics {
  int fold = 0;
  double sharpe = 0;
  double benchmark_sharpe = 0;
  double sortino = 0;
  double max_drawdown = 0;
  double calmar = 0;
  double total_return = 0;
  double benchmark_return = 0;
  int64_t trades = 0;
  int64_t env_steps = 0;  // training steps when evaluated
  double fees = 0;
  double turnover = 0;
  double exposure = 0;
  double score = 0;                 // the study objective's fold value
  std::vector<double> log_returns;  // per bar, the policy's (statistics)
  // The run's data flow as its learner reported it (RunRow's fields of the
  // same names): written to the run's row by CompleteRun and
  // CompleteFinalRun, not to the fold's metrics (read back as 0 there).
  int64_t env_steps_received = 0;
  int64_t env_steps_dropped = 0;
};

// A trial's final evaluation on the lockbox and the baselines on the same
// rows (cash is 0 by definition: Sharpe 0, return 0, drawdown 0).
struct LockboxRow {
  int64_t trial_id = 0;
  int64_t run_id = 0;
  int64_t bars = 0;    // lockbox bars evaluated
  FoldMetrics policy;  // the final run's policy (fold = kLockboxFold)
  // Annualised standard errors (Mertens); 0 when undefined (fewer than 2
  // bars or a flat series: no NaN in the table), shown and tested as n/a.
  double sharpe_se = 0;
  double bh_sharpe = 0, bh_sharpe_se = 0, bh_sortino = 0, bh_return = 0,
         bh_max_drawdown = 0;  // equal-weight buy and hold
  int random_seeds = 0;        // uniform random actions, that many seeds
  double random_sharpe_mean = 0, random_sharpe_std = 0, random_return_mean = 0,
         random_return_std = 0;
  // Buy and hold's log returns on the same bars as policy.log_returns (the
  // verdict's paired test); empty in rows written before schema version 6.
  std::vector<double> bh_log_returns;
  // How many refits the policy's result combines (1: one final run).
  int refits = 1;
  // The rule baselines on the same bars with their log returns
  // (LockboxRulesToJson, coordinator/core/verdict.h); "" or "[]" when none
  // (rows written before schema version 8).
  std::string rules_json;
};

// One refit's own lockbox evaluation (lockbox_refits): the trial's
// LockboxRow combines every refit's (capital split equally among them).
struct RefitRow {
  int64_t trial_id = 0;
  int64_t run_id = 0;
  int refit = 0;       // 0 … lockbox.refits − 1 (fold FinalRunFold(refit))
  FoldMetrics policy;  // its metrics and per-bar log returns on the lockbox
  double sharpe_se = 0;
};

struct ArtifactRow {
  int64_t id = 0;
  int64_t study_id = 0;
  int64_t trial_id = 0;
  int64_t run_id = 0;
  std::string kind;  // "checkpoint" | "policy"
  std::string path;
  std::string sha256;
};

struct IntermediateRow {
  int64_t trial_id = 0;
  int64_t run_id = 0;
  int fold = 0;
  int64_t step = 0;  // env steps trained when evaluated
  double value = 0;  // validation score at that step
};

struct MemberRow {
  std::string id;    // e.g. "learner-host:50051", "actor-3"
  std::string kind;  // "learner" | "actor"
  std::string address;
  std::string capacity_json;  // learner: {"slots":K,"memory_mb":M}
  absl::Time first_seen, last_seen;
};

struct TrialCounts {
  int64_t running = 0, complete = 0, pruned = 0, failed = 0;
};

class Store {
 public:
  // The PostgreSQL store (PgStore, pg_store.h): connects (retrying per
  // `retry`). `dsn` is a libpq connection string, e.g.
  // "host=/tmp/pg port=5433 dbname=ristretto user=postgres".
  static absl::StatusOr<std::unique_ptr<Store>> Connect(const std::string& dsn,
                                                        RetryPolicy retry = {});
  virtual ~Store() = default;

  // Applies the schema migrations not yet recorded in schema_migrations,
  // each in its own transaction. Safe to call from several processes.
  // (InMemoryStore: nothing to migrate; SchemaVersion() is the latest.)
  virtual absl::Status Migrate() = 0;
  // Highest applied migration version.
  virtual absl::StatusOr<int> SchemaVersion() = 0;

  // --- datasets ---
  virtual absl::Status PutDataset(const DatasetRow& row) = 0;  // upsert by id
  virtual absl::StatusOr<DatasetRow> GetDataset(
      const std::string& id) = 0;  // kNotFound
  virtual absl::StatusOr<std::vector<DatasetRow>> ListDatasets() = 0;

  // --- studies ---
  // kAlreadyExists if the name is taken.
  virtual absl::StatusOr<StudyRow> CreateStudy(
      const std::string& name, const std::string& config_text) = 0;
  virtual absl::StatusOr<StudyRow> GetStudy(
      const std::string& name) = 0;                               // kNotFound
  virtual absl::StatusOr<StudyRow> GetStudyById(int64_t id) = 0;  // kNotFound
  virtual absl::StatusOr<std::vector<StudyRow>> ListStudies() = 0;
  // kInvalidArgument for a value that is not a StudyState (a bad cast).
  // `reason` becomes the study's stop_reason (the coordinator's why, for
  // `study start --wait`, `up` and `study show`); a change of state without
  // one clears it.
  virtual absl::Status SetStudyState(int64_t study_id, StudyState state,
                                     const std::string& reason) = 0;
  // The same without a reason (not virtual: calls the one above).
  absl::Status SetStudyState(int64_t study_id, StudyState state) {
    return SetStudyState(study_id, state, "");
  }

  // --- trials ---
  // Atomically: a trial with the next number, its params, and one queued
  // run per entry of `run_configs` (fold = index). checkpoint_dir of each
  // run = checkpoint_root/<study name>/trial-<number>/fold-<k>.
  virtual absl::StatusOr<TrialRow> CreateTrial(
      int64_t study_id, const std::vector<ParamRow>& params,
      const std::vector<std::string>& run_configs,
      const std::string& checkpoint_root) = 0;
  virtual absl::StatusOr<std::vector<TrialRow>> ListTrials(
      int64_t study_id) = 0;
  virtual absl::StatusOr<TrialRow> GetTrial(int64_t trial_id) = 0;
  virtual absl::StatusOr<TrialCounts> CountTrials(int64_t study_id) = 0;
  // running → complete with its score. kFailedPrecondition if not running.
  virtual absl::Status CompleteTrial(int64_t trial_id, double score) = 0;
  // running → pruned / failed (with reason); cancels its queued and leased
  // runs in the same transaction.
  virtual absl::Status PruneTrial(int64_t trial_id) = 0;
  virtual absl::Status FailTrial(int64_t trial_id,
                                 const std::string& reason) = 0;

  // --- runs and leases ---
  // Leases the oldest (lowest id) queued run of a running study whose trial
  // is running (or complete, for its final run) to `member_id` for `ttl`;
  // concurrent callers never get the same run; attempts += 1; a lease
  // history row is recorded; an unknown member is recorded as a learner.
  // nullopt if none. kInvalidArgument for an empty member or ttl <= 0.
  // A run backing off (RetryRun) is skipped while `now` < its retry_after,
  // and by its avoid_member while `now` < its avoid_until.
  virtual absl::StatusOr<std::optional<RunRow>> LeaseRun(
      const std::string& member_id, absl::Duration ttl, absl::Time now) = 0;
  // The same at absl::Now() (not virtual: calls the one above).
  absl::StatusOr<std::optional<RunRow>> LeaseRun(const std::string& member_id,
                                                 absl::Duration ttl) {
    return LeaseRun(member_id, ttl, absl::Now());
  }
  // Extends every lease `member_id` holds and records progress
  // (run id → env steps). Returns the ids among `run_ids` that are no longer
  // leased to this member (cancelled, expired and re-leased, finished):
  // the learner must stop them.
  virtual absl::StatusOr<std::vector<int64_t>> Heartbeat(
      const std::string& member_id, absl::Duration ttl,
      const std::vector<std::pair<int64_t, int64_t>>& run_steps) = 0;
  // Leased runs whose lease expired before `now` go back to queued, or to
  // failed (and their trial failed, reason names the run and fold) when
  // attempts >= their study's limit: `max_attempts_by_study[study id]`,
  // or `default_max_attempts` for a study not in the map. Returns the run
  // ids affected. kInvalidArgument for a limit below 1.
  virtual absl::StatusOr<std::vector<int64_t>> ExpireLeases(
      absl::Time now, const std::map<int64_t, int>& max_attempts_by_study,
      int default_max_attempts) = 0;
  // The same limit for every study (not virtual: calls the one above).
  absl::StatusOr<std::vector<int64_t>> ExpireLeases(absl::Time now,
                                                    int max_attempts) {
    return ExpireLeases(now, {}, max_attempts);
  }
  // Releases the member's leases at once (clean learner shutdown): runs go
  // back to queued without waiting for expiry.
  virtual absl::Status ReleaseLeases(const std::string& member_id) = 0;
  virtual absl::StatusOr<RunRow> GetRun(int64_t run_id) = 0;
  virtual absl::StatusOr<std::vector<RunRow>> ListRuns(int64_t trial_id) = 0;

  // Upsert of (run, step) → value; only by the lease holder
  // (kFailedPrecondition otherwise).
  virtual absl::Status ReportIntermediate(int64_t run_id,
                                          const std::string& member_id,
                                          int64_t step, double value) = 0;
  virtual absl::StatusOr<std::vector<IntermediateRow>> ListIntermediates(
      int64_t study_id) = 0;
  // leased → done with its metrics and artifacts, only by the lease holder
  // (kFailedPrecondition otherwise, e.g. after expiry or a repeated call —
  // nothing is written twice). Returns true when every run of the trial is
  // now done.
  virtual absl::StatusOr<bool> CompleteRun(
      int64_t run_id, const std::string& member_id, const FoldMetrics& metrics,
      const std::vector<ArtifactRow>& artifacts) = 0;
  // leased → failed; the trial fails with "fold K: <reason>" and its other
  // runs are cancelled, atomically. Only by the lease holder.
  virtual absl::Status FailRun(int64_t run_id, const std::string& member_id,
                               const std::string& reason) = 0;
  // leased → queued after a failure the holder reported, to be tried again
  // (attempts are kept: LeaseRun counts the next one): last_error = reason,
  // not leased before `retry_after`, nor to `member_id` before
  // `avoid_until`. Only by the lease holder (kFailedPrecondition
  // otherwise); kInvalidArgument if avoid_until < retry_after.
  virtual absl::Status RetryRun(int64_t run_id, const std::string& member_id,
                                const std::string& reason,
                                absl::Time retry_after,
                                absl::Time avoid_until) = 0;
  virtual absl::StatusOr<std::vector<FoldMetrics>> ListFoldMetrics(
      int64_t trial_id) = 0;
  // Every CV fold's metrics of the study's complete trials, by trial id
  // (the statistics' input).
  virtual absl::StatusOr<std::map<int64_t, std::vector<FoldMetrics>>>
  ListStudyFoldMetrics(int64_t study_id) = 0;

  // --- the lockbox (final runs, docs/study_format.md "lockbox") ---
  // Queues refit `refit` (fold FinalRunFold(refit)) of a COMPLETE trial;
  // returns the existing run if it was queued before (idempotent).
  // kFailedPrecondition if the trial is not complete, kInvalidArgument for
  // a refit outside [0, kMaxFinalRefits).
  virtual absl::StatusOr<RunRow> AddRefitRun(
      int64_t trial_id, int refit, const std::string& config_json,
      const std::string& checkpoint_root) = 0;
  // The single final run (refit 0).
  absl::StatusOr<RunRow> AddFinalRun(int64_t trial_id,
                                     const std::string& config_json,
                                     const std::string& checkpoint_root) {
    return AddRefitRun(trial_id, 0, config_json, checkpoint_root);
  }
  // Completes a final run as CompleteRun does, writing its own result
  // `refit` (trial, run and refit are taken from the run) to lockbox_refits
  // and, when `combined` is given, the trial's result to lockbox_results
  // (the caller combines every refit's, this one's included, once the
  // others are complete: kFailedPrecondition if one is not).
  virtual absl::Status CompleteRefit(
      int64_t run_id, const std::string& member_id, RefitRow refit,
      std::optional<LockboxRow> combined,
      const std::vector<ArtifactRow>& artifacts) = 0;
  // A trial's single final run: its result is the trial's.
  absl::Status CompleteFinalRun(int64_t run_id, const std::string& member_id,
                                LockboxRow result,
                                const std::vector<ArtifactRow>& artifacts) {
    RefitRow refit;
    refit.policy = result.policy;
    refit.sharpe_se = result.sharpe_se;
    result.refits = 1;
    return CompleteRefit(run_id, member_id, std::move(refit), std::move(result),
                         artifacts);
  }
  // Every refit result of the study, by trial id then refit.
  virtual absl::StatusOr<std::vector<RefitRow>> ListRefits(
      int64_t study_id) = 0;
  // The refit results of one trial, by refit (empty for an unknown trial).
  virtual absl::StatusOr<std::vector<RefitRow>> ListTrialRefits(
      int64_t trial_id) = 0;
  virtual absl::StatusOr<std::vector<LockboxRow>> ListLockbox(
      int64_t study_id) = 0;
  // Runs of the study still queued or leased (final runs included); 0 for
  // an unknown study (no kNotFound).
  virtual absl::StatusOr<int64_t> CountOpenRuns(int64_t study_id) = 0;
  // The study's statistics and verdict (JSON), replaced on every write
  // (kNotFound for an unknown study); GetStudyResult: nullopt until the
  // first write, also for an unknown study.
  virtual absl::Status PutStudyResult(int64_t study_id,
                                      const std::string& json) = 0;
  virtual absl::StatusOr<std::optional<std::string>> GetStudyResult(
      int64_t study_id) = 0;
  virtual absl::StatusOr<std::vector<ArtifactRow>> ListArtifacts(
      int64_t trial_id) = 0;

  // --- members ---
  // Adds or updates the member `row.id` (sets last_seen = now). A
  // learner's row stays a learner's: an actor's upsert of a learner's id
  // changes nothing and is kAlreadyExists (an actor naming itself
  // after a learner must not replace its address, capacity or incarnation);
  // a learner may take an id an actor used.
  virtual absl::Status UpsertMember(const MemberRow& row) = 0;
  virtual absl::StatusOr<std::vector<MemberRow>> ListMembers() = 0;
  // The member `id` (learner or actor); kNotFound when none has that id.
  virtual absl::StatusOr<MemberRow> GetMember(const std::string& id) = 0;
  // Deletes the members last seen before `last_seen_before` that never held
  // a lease (no run or lease-history row names them: those rows keep who
  // trained what). Returns how many were deleted. A forgotten member that
  // comes back is registered anew (new first_seen).
  virtual absl::StatusOr<int64_t> ForgetMembers(
      absl::Time last_seen_before) = 0;

 protected:
  Store() = default;

 public:
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_STORE_H_
