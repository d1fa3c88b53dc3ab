// PgStore: Store in PostgreSQL (libpqxx 6.4). Every method is one
// transaction; versioned schema migrations are applied by Migrate().
//
// Connection loss: every method retries the whole transaction with
// exponential backoff (RetryPolicy) after pqxx::broken_connection, then
// returns kUnavailable. Methods that change state are idempotent or guarded
// by the run's lease holder, so a retried commit never duplicates anything.
//
// Thread-compatible: one PgStore per thread (each owns a connection).
#ifndef RISTRETTO_COORDINATOR_STORE_PG_STORE_H_
#define RISTRETTO_COORDINATOR_STORE_PG_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/store/store.h"

namespace ristretto::coordinator {

// The contracts of every method are Store's (store.h).
class PgStore final : public Store {
 public:
  // Connects (retrying per `retry`). `dsn` is a libpq connection string,
  // e.g. "host=/tmp/pg port=5433 dbname=ristretto user=postgres".
  // kInvalidArgument for a DSN libpq cannot parse; kFailedPrecondition for
  // a missing database/role or rejected credentials; kUnavailable after
  // `retry.give_up_after`.
  static absl::StatusOr<std::unique_ptr<PgStore>> Connect(
      const std::string& dsn, RetryPolicy retry = {});
  ~PgStore() override;

  // Tests only: `hook(read)` runs between the statements of every read that
  // issues more than one (named by its method), on this store's thread, so a
  // test can write through another connection exactly there.
  void SetBetweenStatementsHookForTest(
      std::function<void(const char* read)> hook);

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
  class Impl;
  explicit PgStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_PG_STORE_H_
