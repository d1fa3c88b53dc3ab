// The argument checks every Store implementation runs before it touches its
// state, one function per Store method that has any. They live here, not in
// each implementation, so that PgStore and InMemoryStore cannot drift apart
// in which arguments they refuse or in the messages they give (the contract
// suite, tests/coordinator/store_contract_test.cc, compares both).
//
// Every function is pure (no I/O, no access to the store) and safe to call
// from any thread. The argument checks return OkStatus or kInvalidArgument
// with a one-line message naming the offending field and value. The state
// checks at the end take the state an implementation has just read (under
// its lock or transaction) and return OkStatus or kFailedPrecondition.
// Lookups (unknown ids → kNotFound) stay in the implementations.
#ifndef RISTRETTO_COORDINATOR_STORE_STORE_CHECKS_H_
#define RISTRETTO_COORDINATOR_STORE_STORE_CHECKS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/store/store.h"

namespace ristretto::coordinator {

// PutDataset: a non-empty id, rows and interval_seconds not negative.
absl::Status CheckPutDataset(const DatasetRow& row);

// CreateStudy: a non-empty name.
absl::Status CheckCreateStudy(const std::string& name);

// SetStudyState: one of the StudyState enumerators (not a bad cast).
absl::Status CheckSetStudyState(StudyState state);

// CreateTrial, before the study is looked up: at least one run config.
absl::Status CheckCreateTrial(const std::vector<std::string>& run_configs);

// CreateTrial, after the study is found and not done: every parameter name
// non-empty and given once. Checked in that order, parameter by parameter,
// so the first bad parameter is the one named.
absl::Status CheckTrialParams(const std::vector<ParamRow>& params);

// FailTrial: a non-empty reason.
absl::Status CheckFailTrial(const std::string& reason);

// LeaseRun: a non-empty member id and a positive ttl.
absl::Status CheckLeaseRun(const std::string& member_id, absl::Duration ttl);

// RetryRun: avoid_until not before retry_after.
absl::Status CheckRetryRun(absl::Time retry_after, absl::Time avoid_until);

// Heartbeat: a positive ttl and no negative step count in run_steps
// ((run id, env steps) pairs).
absl::Status CheckHeartbeat(
    absl::Duration ttl,
    const std::vector<std::pair<int64_t, int64_t>>& run_steps);

// ExpireLeases: the default and every per-study max_attempts at least 1.
absl::Status CheckExpireLeases(
    const std::map<int64_t, int>& max_attempts_by_study,
    int default_max_attempts);

// ReportIntermediate: a step that is not negative.
absl::Status CheckReportIntermediate(int64_t run_id, int64_t step);

// CompleteRun: trades and env steps not negative, env steps dropped between
// 0 and env steps received, then every artifact as CheckArtifacts says.
absl::Status CheckCompleteRun(int64_t run_id, const FoldMetrics& metrics,
                              const std::vector<ArtifactRow>& artifacts);

// CompleteFinalRun: every artifact as CheckArtifacts says, the data flow as
// CompleteRun's, then trades, env steps, bars and random seeds not
// negative, then every lockbox metric (policy, buy & hold and random-policy
// statistics) finite.
absl::Status CheckCompleteFinalRun(int64_t run_id, const LockboxRow& result,
                                   const std::vector<ArtifactRow>& artifacts);

// CompleteRefit: the refit's own result as CheckCompleteFinalRun checks a
// result (with the artifacts), then the combined result, if any, likewise
// and with refits in [1, kMaxFinalRefits].
absl::Status CheckCompleteRefit(int64_t run_id, const RefitRow& refit,
                                const std::optional<LockboxRow>& combined,
                                const std::vector<ArtifactRow>& artifacts);

// AddRefitRun: a refit in [0, kMaxFinalRefits).
absl::Status CheckRefit(int refit);
// Where refit r of a trial checkpoints, under the trial's directory:
// "lockbox" for the first (as the single final run always did), else
// "lockbox-refit-<r>".
std::string FinalRunDirectory(int refit);
// kFailedPrecondition: CompleteRefit with a combined result while another
// final run (`other_run_id`, in `state`) of the trial is not complete.
absl::Status OtherRefitOpen(int64_t run_id, int64_t other_run_id,
                            RunState state);

// The artifacts of a completed run: kind "checkpoint" or "policy", a
// non-empty path and a sha256 of 64 lowercase hex digits.
absl::Status CheckArtifacts(int64_t run_id,
                            const std::vector<ArtifactRow>& artifacts);

// UpsertMember: a non-empty id and kind "learner" or "actor".
absl::Status CheckUpsertMember(const MemberRow& row);
// kAlreadyExists: `row` (an actor's) names a learner's member id
// (Store::UpsertMember keeps a learner's row a learner's; a code no
// database failure produces).
absl::Status LearnersMemberIdError(const MemberRow& row);

// ---------------------------------------------------------- state checks

// SetStudyState from `from` to a different state `to` (the caller answers
// OkStatus itself when they are equal): refused out of done and into created.
absl::Status CheckStudyTransition(int64_t study_id, StudyState from,
                                  StudyState to);

// CreateTrial: the study (named `name`, in `state`) is not done.
absl::Status CheckStudyNotDone(const std::string& name, StudyState state);

// CompleteTrial, PruneTrial, FailTrial: the trial is running. (Pruning a
// pruned or failing a failed trial is answered OkStatus by the caller first.)
absl::Status CheckTrialRunning(int64_t trial_id, TrialState state);

// Reports, completions and failures of a run: the run (in `state`, leased to
// `holder`, empty when none) is leased to `member_id`.
absl::Status CheckRunHolder(int64_t run_id, RunState state,
                            const std::string& holder,
                            const std::string& member_id);

// CompleteRun: the run is a CV fold, not the final (lockbox) run.
absl::Status CheckCvFoldRun(int64_t run_id, int fold);

// CompleteFinalRun: the run is the final (lockbox) run.
absl::Status CheckFinalRun(int64_t run_id, int fold);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_STORE_CHECKS_H_
