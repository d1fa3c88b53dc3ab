// InMemoryStore: a Store kept in process memory, for in-process tests of the
// scheduler and the coordinator service (no PostgreSQL). It keeps the
// contracts of store.h as PgStore does, the same error codes and messages,
// and the same state machine; tests/coordinator/store_contract_test.cc runs
// one suite against both to keep it honest.
//
// Deliberate simplifications (nothing a Store caller can observe through the
// interface, except where said):
//  * no lease history table: PgStore records every lease grant in `leases`,
//    which no Store method reads back; here only the run's own fields
//    (attempts, member_id, lease_expires_at) exist;
//  * ids come from one counter per kind and only successful calls consume
//    one (PostgreSQL sequences also advance on rolled-back inserts): ids
//    are positive and increase, but need not equal PgStore's;
//  * row timestamps come from absl::Now() (PgStore: the server's now()),
//    truncated to microseconds like PostgreSQL's timestamptz;
//  * no connection, so never kUnavailable; Migrate() only sets
//    SchemaVersion() from 0 to LatestSchemaVersion().
// Per-bar log returns are rounded to 9 significant digits on the way in, as
// PgStore's text column does, so both return the same values.
//
// Thread-safe: every method takes one mutex and is atomic.
#ifndef RISTRETTO_COORDINATOR_STORE_IN_MEMORY_STORE_H_
#define RISTRETTO_COORDINATOR_STORE_IN_MEMORY_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/store/store.h"

namespace ristretto::coordinator {

class InMemoryStore final : public Store {
 public:
  InMemoryStore() = default;
  ~InMemoryStore() override = default;

  using Store::ExpireLeases;

  absl::Status Migrate() override;
  absl::StatusOr<int> SchemaVersion() override;

  absl::Status PutDataset(const DatasetRow& row) override;
  absl::StatusOr<DatasetRow> GetDataset(const std::string& id) override;
  absl::StatusOr<std::vector<DatasetRow>> ListDatasets() override;

  absl::StatusOr<StudyRow> CreateStudy(const std::string& name,
                                       const std::string& config_text) override;
  absl::StatusOr<StudyRow> GetStudy(const std::string& name) override;
  absl::StatusOr<StudyRow> GetStudyById(int64_t id) override;
  absl::StatusOr<std::vector<StudyRow>> ListStudies() override;
  using Store::SetStudyState;
  absl::Status SetStudyState(int64_t study_id, StudyState state,
                             const std::string& reason) override;

  absl::StatusOr<TrialRow> CreateTrial(
      int64_t study_id, const std::vector<ParamRow>& params,
      const std::vector<std::string>& run_configs,
      const std::string& checkpoint_root) override;
  absl::StatusOr<std::vector<TrialRow>> ListTrials(int64_t study_id) override;
  absl::StatusOr<TrialRow> GetTrial(int64_t trial_id) override;
  absl::StatusOr<TrialCounts> CountTrials(int64_t study_id) override;
  absl::Status CompleteTrial(int64_t trial_id, double score) override;
  absl::Status PruneTrial(int64_t trial_id) override;
  absl::Status FailTrial(int64_t trial_id, const std::string& reason) override;

  using Store::LeaseRun;
  absl::StatusOr<std::optional<RunRow>> LeaseRun(const std::string& member_id,
                                                 absl::Duration ttl,
                                                 absl::Time now) override;
  absl::StatusOr<std::vector<int64_t>> Heartbeat(
      const std::string& member_id, absl::Duration ttl,
      const std::vector<std::pair<int64_t, int64_t>>& run_steps) override;
  absl::StatusOr<std::vector<int64_t>> ExpireLeases(
      absl::Time now, const std::map<int64_t, int>& max_attempts_by_study,
      int default_max_attempts) override;
  absl::Status ReleaseLeases(const std::string& member_id) override;
  absl::StatusOr<RunRow> GetRun(int64_t run_id) override;
  absl::StatusOr<std::vector<RunRow>> ListRuns(int64_t trial_id) override;

  absl::Status ReportIntermediate(int64_t run_id, const std::string& member_id,
                                  int64_t step, double value) override;
  absl::StatusOr<std::vector<IntermediateRow>> ListIntermediates(
      int64_t study_id) override;
  absl::StatusOr<bool> CompleteRun(
      int64_t run_id, const std::string& member_id, const FoldMetrics& metrics,
      const std::vector<ArtifactRow>& artifacts) override;
  absl::Status FailRun(int64_t run_id, const std::string& member_id,
                       const std::string& reason) override;
  absl::Status RetryRun(int64_t run_id, const std::string& member_id,
                        const std::string& reason, absl::Time retry_after,
                        absl::Time avoid_until) override;
  absl::StatusOr<std::vector<FoldMetrics>> ListFoldMetrics(
      int64_t trial_id) override;
  absl::StatusOr<std::map<int64_t, std::vector<FoldMetrics>>>
  ListStudyFoldMetrics(int64_t study_id) override;

  absl::StatusOr<RunRow> AddRefitRun(
      int64_t trial_id, int refit, const std::string& config_json,
      const std::string& checkpoint_root) override;
  absl::Status CompleteRefit(
      int64_t run_id, const std::string& member_id, RefitRow refit,
      std::optional<LockboxRow> combined,
      const std::vector<ArtifactRow>& artifacts) override;
  absl::StatusOr<std::vector<RefitRow>> ListRefits(int64_t study_id) override;
  absl::StatusOr<std::vector<RefitRow>> ListTrialRefits(
      int64_t trial_id) override;
  absl::StatusOr<std::vector<LockboxRow>> ListLockbox(
      int64_t study_id) override;
  absl::StatusOr<int64_t> CountOpenRuns(int64_t study_id) override;
  absl::Status PutStudyResult(int64_t study_id,
                              const std::string& json) override;
  absl::StatusOr<std::optional<std::string>> GetStudyResult(
      int64_t study_id) override;
  absl::StatusOr<std::vector<ArtifactRow>> ListArtifacts(
      int64_t trial_id) override;

  absl::Status UpsertMember(const MemberRow& row) override;
  absl::StatusOr<std::vector<MemberRow>> ListMembers() override;
  absl::StatusOr<MemberRow> GetMember(const std::string& id) override;
  absl::StatusOr<int64_t> ForgetMembers(absl::Time last_seen_before) override;

 private:
  struct StoredLockbox {
    int64_t study_id = 0;
    LockboxRow row;
  };

  absl::Status RequireStudy(int64_t study_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<TrialRow*> FindTrial(int64_t trial_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<RunRow*> FindRun(int64_t run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The run if `member_id` holds its lease, else kFailedPrecondition.
  absl::StatusOr<RunRow*> HeldRun(int64_t run_id, const std::string& member_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queued and leased runs of the trial → cancelled with `why`.
  void CancelRuns(int64_t trial_id, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // running → failed with `reason`, siblings cancelled.
  void FailTrialLocked(TrialRow* trial, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Artifacts recorded (upsert by trial, kind, path), lease closed, run done
  // with `metrics`' env_steps (progress) and data flow.
  void FinishRun(RunRow* run, const FoldMetrics& metrics,
                 const std::vector<ArtifactRow>& artifacts)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  bool migrated_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_study_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_trial_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_run_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_artifact_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, DatasetRow> datasets_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, StudyRow> studies_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, TrialRow> trials_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, RunRow> runs_ ABSL_GUARDED_BY(mu_);
  // Run id → its CV fold's metrics (one per run).
  std::map<int64_t, FoldMetrics> fold_metrics_ ABSL_GUARDED_BY(mu_);
  // Trial id → its final run's lockbox result (one per trial).
  std::map<int64_t, StoredLockbox> lockbox_ ABSL_GUARDED_BY(mu_);
  // By (trial id, refit); study id beside.
  std::map<std::pair<int64_t, int>, std::pair<int64_t, RefitRow>> refits_
      ABSL_GUARDED_BY(mu_);
  // (run id, step) → value.
  std::map<std::pair<int64_t, int64_t>, double> intermediates_
      ABSL_GUARDED_BY(mu_);
  std::map<int64_t, ArtifactRow> artifacts_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> study_results_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, MemberRow> members_ ABSL_GUARDED_BY(mu_);
  // Members that ever held a lease (PgStore: named by a `leases` row).
  std::set<std::string> lease_holders_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_IN_MEMORY_STORE_H_
