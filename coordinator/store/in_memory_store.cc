// InMemoryStore: each method mirrors the SQL of the same PgStore method
// (pg_store.cc), in the same order of checks, so that both fail with the
// same code for the same call. The mutex stands in for the transaction:
// every method checks everything that can fail before its first write.
#include "coordinator/store/in_memory_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/store_checks.h"

namespace ristretto::coordinator {
namespace {

// Row timestamps at PostgreSQL's resolution.
absl::Time NowMicros() {
  return absl::FromUnixMicros(absl::ToUnixMicros(absl::Now()));
}

absl::Time TruncateMicros(absl::Time t) {
  return absl::FromUnixMicros(absl::ToUnixMicros(t));
}

// PgStore keeps per-bar returns as text with 9 significant digits.
std::vector<double> RoundReturns(const std::vector<double>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  char buf[32];
  for (const double v : values) {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    out.push_back(std::strtod(buf, nullptr));
  }
  return out;
}

void ClearLease(RunRow* run) {
  run->member_id.clear();
  run->lease_expires_at.reset();
}

}  // namespace

// ---------------------------------------------------------------- helpers

absl::Status InMemoryStore::RequireStudy(int64_t study_id) const {
  if (studies_.count(study_id) == 0) {
    return absl::NotFoundError(absl::StrCat("no study with id ", study_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<TrialRow*> InMemoryStore::FindTrial(int64_t trial_id) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) {
    return absl::NotFoundError(absl::StrCat("no trial with id ", trial_id));
  }
  return &it->second;
}

absl::StatusOr<RunRow*> InMemoryStore::FindRun(int64_t run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    return absl::NotFoundError(absl::StrCat("no run with id ", run_id));
  }
  return &it->second;
}

absl::StatusOr<RunRow*> InMemoryStore::HeldRun(int64_t run_id,
                                               const std::string& member_id) {
  ASSIGN_OR_RETURN(RunRow * run, FindRun(run_id));
  RETURN_IF_ERROR(
      CheckRunHolder(run_id, run->state, run->member_id, member_id));
  return run;
}

void InMemoryStore::CancelRuns(int64_t trial_id, const std::string& why) {
  for (auto& [id, run] : runs_) {
    if (run.trial_id != trial_id) continue;
    if (run.state != RunState::kQueued && run.state != RunState::kLeased)
      continue;
    run.state = RunState::kCancelled;
    ClearLease(&run);
    run.last_error = why;
  }
}

void InMemoryStore::FailTrialLocked(TrialRow* trial,
                                    const std::string& reason) {
  trial->state = TrialState::kFailed;
  trial->fail_reason = reason;
  trial->finished_at = NowMicros();
  CancelRuns(trial->id, "trial failed");
}

void InMemoryStore::FinishRun(RunRow* run, const FoldMetrics& metrics,
                              const std::vector<ArtifactRow>& artifacts) {
  for (const ArtifactRow& a : artifacts) {
    ArtifactRow* existing = nullptr;
    for (auto& [id, stored] : artifacts_) {
      if (stored.trial_id == run->trial_id && stored.kind == a.kind &&
          stored.path == a.path) {
        existing = &stored;
      }
    }
    if (existing != nullptr) {
      existing->sha256 = a.sha256;
      existing->run_id = run->id;
      continue;
    }
    ArtifactRow row;
    row.id = next_artifact_id_++;
    row.study_id = run->study_id;
    row.trial_id = run->trial_id;
    row.run_id = run->id;
    row.kind = a.kind;
    row.path = a.path;
    row.sha256 = a.sha256;
    artifacts_[row.id] = row;
  }
  run->state = RunState::kDone;
  ClearLease(run);
  run->env_steps = std::max(run->env_steps, metrics.env_steps);
  run->env_steps_received = metrics.env_steps_received;
  run->env_steps_dropped = metrics.env_steps_dropped;
}

// ---------------------------------------------------------------- schema

absl::Status InMemoryStore::Migrate() {
  absl::MutexLock lock(&mu_);
  migrated_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int> InMemoryStore::SchemaVersion() {
  absl::MutexLock lock(&mu_);
  return migrated_ ? LatestSchemaVersion() : 0;
}

// -------------------------------------------------------------- datasets

absl::Status InMemoryStore::PutDataset(const DatasetRow& row) {
  RETURN_IF_ERROR(CheckPutDataset(row));
  absl::MutexLock lock(&mu_);
  auto [it, added] = datasets_.emplace(row.id, row);
  const absl::Time created = added ? NowMicros() : it->second.created_at;
  it->second = row;
  it->second.created_at = created;  // an upsert keeps the first creation
  return absl::OkStatus();
}

absl::StatusOr<DatasetRow> InMemoryStore::GetDataset(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = datasets_.find(id);
  if (it == datasets_.end()) {
    return absl::NotFoundError(absl::StrCat("no dataset ", id));
  }
  return it->second;
}

absl::StatusOr<std::vector<DatasetRow>> InMemoryStore::ListDatasets() {
  absl::MutexLock lock(&mu_);
  std::vector<DatasetRow> rows;
  for (const auto& [id, row] : datasets_) rows.push_back(row);
  std::sort(
      rows.begin(), rows.end(), [](const DatasetRow& a, const DatasetRow& b) {
        return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
      });
  return rows;
}

// --------------------------------------------------------------- studies

absl::StatusOr<StudyRow> InMemoryStore::CreateStudy(
    const std::string& name, const std::string& config_text) {
  RETURN_IF_ERROR(CheckCreateStudy(name));
  absl::MutexLock lock(&mu_);
  for (const auto& [id, study] : studies_) {
    if (study.name == name) {
      return absl::AlreadyExistsError(
          absl::StrCat("study '", name, "' already exists"));
    }
  }
  StudyRow row;
  row.id = next_study_id_++;
  row.name = name;
  row.config_text = config_text;
  row.state = StudyState::kCreated;
  row.created_at = row.updated_at = NowMicros();
  studies_[row.id] = row;
  return row;
}

absl::StatusOr<StudyRow> InMemoryStore::GetStudy(const std::string& name) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, study] : studies_) {
    if (study.name == name) return study;
  }
  return absl::NotFoundError(absl::StrCat("no study named '", name, "'"));
}

absl::StatusOr<StudyRow> InMemoryStore::GetStudyById(int64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = studies_.find(id);
  if (it == studies_.end()) {
    return absl::NotFoundError(absl::StrCat("no study with id ", id));
  }
  return it->second;
}

absl::StatusOr<std::vector<StudyRow>> InMemoryStore::ListStudies() {
  absl::MutexLock lock(&mu_);
  std::vector<StudyRow> rows;
  for (const auto& [id, study] : studies_) rows.push_back(study);
  return rows;
}

absl::Status InMemoryStore::SetStudyState(int64_t study_id, StudyState state,
                                          const std::string& reason) {
  RETURN_IF_ERROR(CheckSetStudyState(state));
  absl::MutexLock lock(&mu_);
  auto it = studies_.find(study_id);
  if (it == studies_.end()) {
    return absl::NotFoundError(absl::StrCat("no study with id ", study_id));
  }
  StudyRow& study = it->second;
  if (study.state == state) return absl::OkStatus();
  RETURN_IF_ERROR(CheckStudyTransition(study_id, study.state, state));
  study.state = state;
  study.stop_reason = reason;
  study.updated_at = NowMicros();
  return absl::OkStatus();
}

// ---------------------------------------------------------------- trials

absl::StatusOr<TrialRow> InMemoryStore::CreateTrial(
    int64_t study_id, const std::vector<ParamRow>& params,
    const std::vector<std::string>& run_configs,
    const std::string& checkpoint_root) {
  RETURN_IF_ERROR(CheckCreateTrial(run_configs));
  absl::MutexLock lock(&mu_);
  auto study = studies_.find(study_id);
  if (study == studies_.end()) {
    return absl::NotFoundError(absl::StrCat("no study with id ", study_id));
  }
  RETURN_IF_ERROR(CheckStudyNotDone(study->second.name, study->second.state));
  RETURN_IF_ERROR(CheckTrialParams(params));
  int64_t number = 0;
  for (const auto& [id, t] : trials_) {
    if (t.study_id == study_id) number = std::max(number, t.number + 1);
  }
  TrialRow trial;
  trial.id = next_trial_id_++;
  trial.study_id = study_id;
  trial.number = number;
  trial.state = TrialState::kRunning;
  trial.params = params;
  trial.created_at = NowMicros();
  trials_[trial.id] = trial;
  const std::filesystem::path trial_dir =
      std::filesystem::path(checkpoint_root) / study->second.name /
      absl::StrCat("trial-", trial.number);
  for (size_t k = 0; k < run_configs.size(); ++k) {
    RunRow run;
    run.id = next_run_id_++;
    run.trial_id = trial.id;
    run.study_id = study_id;
    run.fold = static_cast<int>(k);
    run.state = RunState::kQueued;
    run.config_json = run_configs[k];
    run.checkpoint_dir = (trial_dir / absl::StrCat("fold-", k)).string();
    runs_[run.id] = run;
  }
  return trial;
}

absl::StatusOr<std::vector<TrialRow>> InMemoryStore::ListTrials(
    int64_t study_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  std::vector<TrialRow> rows;
  for (const auto& [id, t] : trials_) {
    if (t.study_id == study_id) rows.push_back(t);
  }
  std::sort(rows.begin(), rows.end(), [](const TrialRow& a, const TrialRow& b) {
    return a.number < b.number;
  });
  return rows;
}

absl::StatusOr<TrialRow> InMemoryStore::GetTrial(int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(TrialRow * trial, FindTrial(trial_id));
  return *trial;
}

absl::StatusOr<TrialCounts> InMemoryStore::CountTrials(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  TrialCounts counts;
  for (const auto& [id, t] : trials_) {
    if (t.study_id != study_id) continue;
    if (t.state == TrialState::kRunning) ++counts.running;
    if (t.state == TrialState::kComplete) ++counts.complete;
    if (t.state == TrialState::kPruned) ++counts.pruned;
    if (t.state == TrialState::kFailed) ++counts.failed;
  }
  return counts;
}

absl::Status InMemoryStore::CompleteTrial(int64_t trial_id, double score) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(TrialRow * trial, FindTrial(trial_id));
  RETURN_IF_ERROR(CheckTrialRunning(trial_id, trial->state));
  trial->state = TrialState::kComplete;
  trial->score = score;
  trial->finished_at = NowMicros();
  return absl::OkStatus();
}

absl::Status InMemoryStore::PruneTrial(int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(TrialRow * trial, FindTrial(trial_id));
  if (trial->state == TrialState::kPruned) return absl::OkStatus();
  RETURN_IF_ERROR(CheckTrialRunning(trial_id, trial->state));
  trial->state = TrialState::kPruned;
  trial->finished_at = NowMicros();
  CancelRuns(trial_id, "trial pruned");
  return absl::OkStatus();
}

absl::Status InMemoryStore::FailTrial(int64_t trial_id,
                                      const std::string& reason) {
  RETURN_IF_ERROR(CheckFailTrial(reason));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(TrialRow * trial, FindTrial(trial_id));
  if (trial->state == TrialState::kFailed) return absl::OkStatus();
  RETURN_IF_ERROR(CheckTrialRunning(trial_id, trial->state));
  FailTrialLocked(trial, reason);
  return absl::OkStatus();
}

// ------------------------------------------------------- runs and leases

absl::StatusOr<std::optional<RunRow>> InMemoryStore::LeaseRun(
    const std::string& member_id, absl::Duration ttl, absl::Time now) {
  RETURN_IF_ERROR(CheckLeaseRun(member_id, ttl));
  absl::MutexLock lock(&mu_);
  // A member leasing before it registered is recorded as a learner.
  auto [member, added] = members_.emplace(member_id, MemberRow());
  if (added) {
    member->second.id = member_id;
    member->second.kind = "learner";
    member->second.capacity_json = "{}";
    member->second.first_seen = NowMicros();
  }
  member->second.last_seen = NowMicros();
  for (auto& [id, run] : runs_) {  // ascending id: the oldest first
    if (run.state != RunState::kQueued) continue;
    if (studies_.at(run.study_id).state != StudyState::kRunning) continue;
    const TrialState trial_state = trials_.at(run.trial_id).state;
    if (trial_state != TrialState::kRunning &&
        !(trial_state == TrialState::kComplete && IsFinalFold(run.fold))) {
      continue;
    }
    if (run.retry_after.has_value() && now < *run.retry_after) continue;
    if (run.avoid_member == member_id && run.avoid_until.has_value() &&
        now < *run.avoid_until) {
      continue;
    }
    run.state = RunState::kLeased;
    run.member_id = member_id;
    lease_holders_.insert(member_id);
    run.lease_expires_at = TruncateMicros(now + ttl);
    ++run.attempts;
    return std::optional<RunRow>(run);
  }
  return std::optional<RunRow>();
}

absl::StatusOr<std::vector<int64_t>> InMemoryStore::Heartbeat(
    const std::string& member_id, absl::Duration ttl,
    const std::vector<std::pair<int64_t, int64_t>>& run_steps) {
  RETURN_IF_ERROR(CheckHeartbeat(ttl, run_steps));
  absl::MutexLock lock(&mu_);
  auto member = members_.find(member_id);
  if (member != members_.end()) member->second.last_seen = NowMicros();
  const absl::Time expires = TruncateMicros(absl::Now() + ttl);
  std::set<int64_t> held;
  for (auto& [id, run] : runs_) {
    if (run.state == RunState::kLeased && run.member_id == member_id) {
      held.insert(id);
      run.lease_expires_at = expires;
    }
  }
  std::vector<int64_t> lost;
  for (const auto& [run_id, steps] : run_steps) {
    if (held.count(run_id) == 0) {
      lost.push_back(run_id);
      continue;
    }
    runs_.at(run_id).env_steps = steps;
  }
  return lost;
}

absl::StatusOr<std::vector<int64_t>> InMemoryStore::ExpireLeases(
    absl::Time now, const std::map<int64_t, int>& max_attempts_by_study,
    int default_max_attempts) {
  RETURN_IF_ERROR(
      CheckExpireLeases(max_attempts_by_study, default_max_attempts));
  absl::MutexLock lock(&mu_);
  // The expired runs by trial, then by run id (PgStore's lock order), so a
  // trial failed by its first exhausted run cancels its later ones.
  std::map<int64_t, std::vector<int64_t>> by_trial;
  for (const auto& [id, run] : runs_) {
    if (run.state == RunState::kLeased && run.lease_expires_at.has_value() &&
        *run.lease_expires_at < now) {
      by_trial[run.trial_id].push_back(id);
    }
  }
  std::vector<int64_t> affected;
  for (const auto& [trial_id, run_ids] : by_trial) {
    TrialRow& trial = trials_.at(trial_id);
    const auto limit = max_attempts_by_study.find(trial.study_id);
    const int max_attempts = limit != max_attempts_by_study.end()
                                 ? limit->second
                                 : default_max_attempts;
    for (const int64_t run_id : run_ids) {
      RunRow& run = runs_.at(run_id);
      if (run.state != RunState::kLeased) continue;  // cancelled by a sibling
      const std::string holder = run.member_id;
      affected.push_back(run_id);
      ClearLease(&run);
      if (run.attempts < max_attempts) {
        run.state = RunState::kQueued;
        run.last_error = absl::StrCat("lease of '", holder,
                                      "' expired (attempt ", run.attempts, ")");
        continue;
      }
      const std::string reason = absl::StrCat(
          "fold ", run.fold, " (run ", run_id, "): lease expired after ",
          run.attempts, " attempts, last held by '", holder, "'");
      run.state = RunState::kFailed;
      run.last_error = reason;
      if (trial.state == TrialState::kRunning) FailTrialLocked(&trial, reason);
    }
  }
  return affected;
}

absl::Status InMemoryStore::ReleaseLeases(const std::string& member_id) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, run] : runs_) {
    if (run.state == RunState::kLeased && run.member_id == member_id) {
      run.state = RunState::kQueued;
      ClearLease(&run);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RunRow> InMemoryStore::GetRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow * run, FindRun(run_id));
  return *run;
}

absl::StatusOr<std::vector<RunRow>> InMemoryStore::ListRuns(int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(FindTrial(trial_id).status());
  std::vector<RunRow> rows;
  for (const auto& [id, run] : runs_) {
    if (run.trial_id == trial_id) rows.push_back(run);
  }
  std::sort(rows.begin(), rows.end(),
            [](const RunRow& a, const RunRow& b) { return a.fold < b.fold; });
  return rows;
}

absl::Status InMemoryStore::ReportIntermediate(int64_t run_id,
                                               const std::string& member_id,
                                               int64_t step, double value) {
  RETURN_IF_ERROR(CheckReportIntermediate(run_id, step));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(HeldRun(run_id, member_id).status());
  intermediates_[{run_id, step}] = value;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<IntermediateRow>> InMemoryStore::ListIntermediates(
    int64_t study_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  std::vector<IntermediateRow> rows;
  for (const auto& [key, value] : intermediates_) {
    const RunRow& run = runs_.at(key.first);
    if (run.study_id != study_id) continue;
    IntermediateRow row;
    row.trial_id = run.trial_id;
    row.run_id = run.id;
    row.fold = run.fold;
    row.step = key.second;
    row.value = value;
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(),
            [](const IntermediateRow& a, const IntermediateRow& b) {
              return std::tie(a.trial_id, a.fold, a.step) <
                     std::tie(b.trial_id, b.fold, b.step);
            });
  return rows;
}

absl::StatusOr<bool> InMemoryStore::CompleteRun(
    int64_t run_id, const std::string& member_id, const FoldMetrics& metrics,
    const std::vector<ArtifactRow>& artifacts) {
  RETURN_IF_ERROR(CheckCompleteRun(run_id, metrics, artifacts));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow * run, HeldRun(run_id, member_id));
  RETURN_IF_ERROR(CheckCvFoldRun(run_id, run->fold));
  FoldMetrics stored = metrics;
  stored.fold = run->fold;  // the run's fold, whatever the caller said
  stored.log_returns = RoundReturns(metrics.log_returns);
  // Kept on the run's row, as PgStore does, not with the fold's metrics.
  stored.env_steps_received = 0;
  stored.env_steps_dropped = 0;
  fold_metrics_[run_id] = std::move(stored);
  FinishRun(run, metrics, artifacts);
  for (const auto& [id, other] : runs_) {
    if (other.trial_id == run->trial_id && other.state != RunState::kDone) {
      return false;
    }
  }
  return true;
}

absl::Status InMemoryStore::FailRun(int64_t run_id,
                                    const std::string& member_id,
                                    const std::string& reason) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow * run, HeldRun(run_id, member_id));
  const std::string why = reason.empty() ? "unknown error" : reason;
  run->state = RunState::kFailed;
  ClearLease(run);
  run->last_error = why;
  TrialRow& trial = trials_.at(run->trial_id);
  if (trial.state == TrialState::kRunning) {
    FailTrialLocked(&trial, absl::StrCat("fold ", run->fold, ": ", why));
  }
  return absl::OkStatus();
}

absl::Status InMemoryStore::RetryRun(int64_t run_id,
                                     const std::string& member_id,
                                     const std::string& reason,
                                     absl::Time retry_after,
                                     absl::Time avoid_until) {
  RETURN_IF_ERROR(CheckRetryRun(retry_after, avoid_until));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow * run, HeldRun(run_id, member_id));
  run->state = RunState::kQueued;
  ClearLease(run);
  run->last_error = reason.empty() ? "unknown error" : reason;
  run->retry_after = TruncateMicros(retry_after);
  run->avoid_member = member_id;
  run->avoid_until = TruncateMicros(avoid_until);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<FoldMetrics>> InMemoryStore::ListFoldMetrics(
    int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(FindTrial(trial_id).status());
  std::vector<FoldMetrics> rows;
  for (const auto& [run_id, m] : fold_metrics_) {
    if (runs_.at(run_id).trial_id == trial_id) rows.push_back(m);
  }
  std::sort(rows.begin(), rows.end(),
            [](const FoldMetrics& a, const FoldMetrics& b) {
              return a.fold < b.fold;
            });
  return rows;
}

absl::StatusOr<std::map<int64_t, std::vector<FoldMetrics>>>
InMemoryStore::ListStudyFoldMetrics(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  std::map<int64_t, std::vector<FoldMetrics>> out;
  for (const auto& [run_id, m] : fold_metrics_) {
    const TrialRow& trial = trials_.at(runs_.at(run_id).trial_id);
    if (trial.study_id != study_id || trial.state != TrialState::kComplete)
      continue;
    out[trial.id].push_back(m);
  }
  for (auto& [trial_id, folds] : out) {
    std::sort(folds.begin(), folds.end(),
              [](const FoldMetrics& a, const FoldMetrics& b) {
                return a.fold < b.fold;
              });
  }
  return out;
}

// ---------------------------------------------------------------- lockbox

absl::StatusOr<RunRow> InMemoryStore::AddRefitRun(
    int64_t trial_id, int refit, const std::string& config_json,
    const std::string& checkpoint_root) {
  RETURN_IF_ERROR(CheckRefit(refit));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(TrialRow * trial, FindTrial(trial_id));
  const int fold = FinalRunFold(refit);
  for (const auto& [id, run] : runs_) {
    if (run.trial_id == trial_id && run.fold == fold) return run;
  }
  if (trial->state != TrialState::kComplete) {
    return absl::FailedPreconditionError(
        absl::StrCat("trial ", trial_id, " is ", ToString(trial->state),
                     ": only a complete trial gets a final run"));
  }
  RunRow run;
  run.id = next_run_id_++;
  run.trial_id = trial_id;
  run.study_id = trial->study_id;
  run.fold = fold;
  run.state = RunState::kQueued;
  run.config_json = config_json;
  run.checkpoint_dir =
      (std::filesystem::path(checkpoint_root) /
       studies_.at(trial->study_id).name /
       absl::StrCat("trial-", trial->number) / FinalRunDirectory(refit))
          .string();
  runs_[run.id] = run;
  return run;
}

absl::Status InMemoryStore::CompleteRefit(
    int64_t run_id, const std::string& member_id, RefitRow refit,
    std::optional<LockboxRow> combined,
    const std::vector<ArtifactRow>& artifacts) {
  RETURN_IF_ERROR(CheckCompleteRefit(run_id, refit, combined, artifacts));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow * run, HeldRun(run_id, member_id));
  RETURN_IF_ERROR(CheckFinalRun(run_id, run->fold));
  if (combined.has_value()) {
    for (const auto& [id, other] : runs_) {
      if (id != run_id && other.trial_id == run->trial_id &&
          IsFinalFold(other.fold) && other.state != RunState::kDone) {
        return OtherRefitOpen(run_id, other.id, other.state);
      }
    }
  }
  // What PgStore's tables keep, read back as its listings build it: the
  // policy's benchmark is buy and hold, its objective score is not stored.
  const FoldMetrics p = refit.policy;
  auto stored_policy = [](const FoldMetrics& m) {
    FoldMetrics x;
    x.fold = kLockboxFold;
    x.sharpe = m.sharpe;
    x.sortino = m.sortino;
    x.calmar = m.calmar;
    x.total_return = m.total_return;
    x.max_drawdown = m.max_drawdown;
    x.turnover = m.turnover;
    x.fees = m.fees;
    x.trades = m.trades;
    x.exposure = m.exposure;
    x.env_steps = m.env_steps;
    x.log_returns = RoundReturns(m.log_returns);
    return x;
  };
  RefitRow r;
  r.trial_id = run->trial_id;
  r.run_id = run_id;
  r.refit = RefitOfFold(run->fold);
  r.policy = stored_policy(refit.policy);
  r.policy.fold = run->fold;
  r.sharpe_se = refit.sharpe_se;
  const std::pair<int64_t, int> key(run->trial_id, r.refit);
  refits_[key] = {run->study_id, std::move(r)};
  if (combined.has_value()) {
    const LockboxRow& result = *combined;
    StoredLockbox stored;
    stored.study_id = run->study_id;
    LockboxRow& x = stored.row;
    x.trial_id = run->trial_id;
    x.run_id = run_id;
    x.bars = result.bars;
    x.refits = result.refits;
    x.sharpe_se = result.sharpe_se;
    x.policy = stored_policy(result.policy);
    x.bh_sharpe = result.bh_sharpe;
    x.bh_sharpe_se = result.bh_sharpe_se;
    x.bh_sortino = result.bh_sortino;
    x.bh_return = result.bh_return;
    x.bh_max_drawdown = result.bh_max_drawdown;
    x.random_seeds = result.random_seeds;
    x.random_sharpe_mean = result.random_sharpe_mean;
    x.random_sharpe_std = result.random_sharpe_std;
    x.random_return_mean = result.random_return_mean;
    x.random_return_std = result.random_return_std;
    x.bh_log_returns = RoundReturns(result.bh_log_returns);
    x.rules_json = result.rules_json;
    x.policy.benchmark_sharpe = x.bh_sharpe;
    x.policy.benchmark_return = x.bh_return;
    lockbox_[run->trial_id] = std::move(stored);
  }
  FinishRun(run, p, artifacts);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RefitRow>> InMemoryStore::ListTrialRefits(
    int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  std::vector<RefitRow> rows;
  for (auto it = refits_.lower_bound({trial_id, 0});
       it != refits_.end() && it->first.first == trial_id; ++it) {
    rows.push_back(it->second.second);
  }
  return rows;
}

absl::StatusOr<std::vector<RefitRow>> InMemoryStore::ListRefits(
    int64_t study_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  std::vector<RefitRow> rows;
  for (const auto& [key, stored] : refits_) {  // by trial id, refit
    if (stored.first == study_id) rows.push_back(stored.second);
  }
  return rows;
}

absl::StatusOr<std::vector<LockboxRow>> InMemoryStore::ListLockbox(
    int64_t study_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  std::vector<LockboxRow> rows;
  for (const auto& [trial_id, stored] : lockbox_) {  // by trial id
    if (stored.study_id == study_id) rows.push_back(stored.row);
  }
  return rows;
}

absl::StatusOr<int64_t> InMemoryStore::CountOpenRuns(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  int64_t open = 0;
  for (const auto& [id, run] : runs_) {
    if (run.study_id == study_id &&
        (run.state == RunState::kQueued || run.state == RunState::kLeased)) {
      ++open;
    }
  }
  return open;
}

absl::Status InMemoryStore::PutStudyResult(int64_t study_id,
                                           const std::string& json) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RequireStudy(study_id));
  study_results_[study_id] = json;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> InMemoryStore::GetStudyResult(
    int64_t study_id) {
  absl::MutexLock lock(&mu_);
  auto it = study_results_.find(study_id);
  if (it == study_results_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

absl::StatusOr<std::vector<ArtifactRow>> InMemoryStore::ListArtifacts(
    int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(FindTrial(trial_id).status());
  std::vector<ArtifactRow> rows;
  for (const auto& [id, a] : artifacts_) {  // by id
    if (a.trial_id == trial_id) rows.push_back(a);
  }
  return rows;
}

// --------------------------------------------------------------- members

absl::Status InMemoryStore::UpsertMember(const MemberRow& row) {
  RETURN_IF_ERROR(CheckUpsertMember(row));
  absl::MutexLock lock(&mu_);
  const absl::Time now = NowMicros();
  auto [it, added] = members_.emplace(row.id, MemberRow());
  MemberRow& m = it->second;
  if (!added && m.kind == "learner" && row.kind != "learner") {
    return LearnersMemberIdError(row);
  }
  if (added) m.first_seen = now;
  m.id = row.id;
  m.kind = row.kind;
  m.address = row.address;
  m.capacity_json = row.capacity_json.empty() ? "{}" : row.capacity_json;
  m.last_seen = now;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MemberRow>> InMemoryStore::ListMembers() {
  absl::MutexLock lock(&mu_);
  std::vector<MemberRow> rows;
  for (const auto& [id, m] : members_) rows.push_back(m);
  return rows;
}

absl::StatusOr<int64_t> InMemoryStore::ForgetMembers(
    absl::Time last_seen_before) {
  absl::MutexLock lock(&mu_);
  int64_t forgotten = 0;
  for (auto it = members_.begin(); it != members_.end();) {
    bool named = lease_holders_.count(it->first) > 0;
    for (const auto& [id, run] : runs_) {
      if (run.member_id == it->first) named = true;
    }
    if (!named && it->second.last_seen < last_seen_before) {
      it = members_.erase(it);
      ++forgotten;
    } else {
      ++it;
    }
  }
  return forgotten;
}

absl::StatusOr<MemberRow> InMemoryStore::GetMember(const std::string& id) {
  absl::MutexLock lock(&mu_);
  const auto it = members_.find(id);
  if (it == members_.end()) {
    return absl::NotFoundError(absl::StrCat("no member with id '", id, "'"));
  }
  return it->second;
}

}  // namespace ristretto::coordinator
