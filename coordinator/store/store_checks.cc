#include "coordinator/store/store_checks.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "common/text_util.h"

namespace ristretto::coordinator {
namespace {

bool IsLowerHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool IsOneOf(const std::string& value,
             std::initializer_list<absl::string_view> options) {
  return std::find(options.begin(), options.end(), value) != options.end();
}

absl::Status CheckPositiveTtl(absl::Duration ttl) {
  if (ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("lease ttl must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPutDataset(const DatasetRow& row) {
  if (row.id.empty()) return absl::InvalidArgumentError("dataset id is empty");
  if (row.rows < 0 || row.interval_seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset ", row.id, ": negative rows or interval"));
  }
  return absl::OkStatus();
}

absl::Status CheckCreateStudy(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("study name is empty");
  return absl::OkStatus();
}

absl::Status CheckSetStudyState(StudyState state) {
  if (!IsValid(state)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown study state ", static_cast<int>(state)));
  }
  return absl::OkStatus();
}

absl::Status CheckCreateTrial(const std::vector<std::string>& run_configs) {
  if (run_configs.empty()) {
    return absl::InvalidArgumentError("a trial needs at least one run (fold)");
  }
  return absl::OkStatus();
}

absl::Status CheckTrialParams(const std::vector<ParamRow>& params) {
  std::set<std::string> names;
  for (const ParamRow& p : params) {
    if (p.name.empty()) {
      return absl::InvalidArgumentError("parameter name is empty");
    }
    if (!names.insert(p.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", p.name, "' given twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFailTrial(const std::string& reason) {
  if (reason.empty()) {
    return absl::InvalidArgumentError("a failed trial needs a reason");
  }
  return absl::OkStatus();
}

absl::Status CheckLeaseRun(const std::string& member_id, absl::Duration ttl) {
  if (member_id.empty()) return absl::InvalidArgumentError("empty member id");
  return CheckPositiveTtl(ttl);
}

absl::Status CheckRetryRun(absl::Time retry_after, absl::Time avoid_until) {
  if (avoid_until < retry_after) {
    return absl::InvalidArgumentError(
        "avoid_until must not be before retry_after");
  }
  return absl::OkStatus();
}

absl::Status CheckHeartbeat(
    absl::Duration ttl,
    const std::vector<std::pair<int64_t, int64_t>>& run_steps) {
  RETURN_IF_ERROR(CheckPositiveTtl(ttl));
  for (const auto& [run_id, steps] : run_steps) {
    if (steps < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("run ", run_id, ": negative env steps ", steps));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckExpireLeases(
    const std::map<int64_t, int>& max_attempts_by_study,
    int default_max_attempts) {
  if (default_max_attempts < 1) {
    return absl::InvalidArgumentError("max_attempts must be at least 1");
  }
  for (const auto& [study_id, limit] : max_attempts_by_study) {
    if (limit < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_attempts of study ", study_id, " must be at least 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckReportIntermediate(int64_t run_id, int64_t step) {
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run ", run_id, ": negative step ", step));
  }
  return absl::OkStatus();
}

namespace {

// The env steps a run's learner received and dropped: neither negative, and
// no more dropped than received (a share above 100 % is a bug upstream).
absl::Status CheckDataFlow(int64_t run_id, const FoldMetrics& metrics) {
  if (metrics.env_steps_received < 0 || metrics.env_steps_dropped < 0 ||
      metrics.env_steps_dropped > metrics.env_steps_received) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run ", run_id, ": env steps dropped (", metrics.env_steps_dropped,
        ") must be between 0 and the env steps received (",
        metrics.env_steps_received, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCompleteRun(int64_t run_id, const FoldMetrics& metrics,
                              const std::vector<ArtifactRow>& artifacts) {
  if (metrics.trades < 0 || metrics.env_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run ", run_id, ": negative trades or env steps"));
  }
  RETURN_IF_ERROR(CheckDataFlow(run_id, metrics));
  return CheckArtifacts(run_id, artifacts);
}

absl::Status CheckCompleteFinalRun(int64_t run_id, const LockboxRow& result,
                                   const std::vector<ArtifactRow>& artifacts) {
  RETURN_IF_ERROR(CheckArtifacts(run_id, artifacts));
  RETURN_IF_ERROR(CheckDataFlow(run_id, result.policy));
  if (result.policy.trades < 0 || result.policy.env_steps < 0 ||
      result.bars < 0 || result.random_seeds < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run ", run_id, ": negative trades, env steps, bars or seeds"));
  }
  // A non-finite metric cannot be compared with the baselines, so the whole
  // result is refused rather than stored in part.
  for (const double v :
       {result.policy.sharpe, result.sharpe_se, result.policy.sortino,
        result.policy.calmar, result.policy.total_return,
        result.policy.max_drawdown, result.policy.turnover, result.policy.fees,
        result.policy.exposure, result.bh_sharpe, result.bh_sharpe_se,
        result.bh_sortino, result.bh_return, result.bh_max_drawdown,
        result.random_sharpe_mean, result.random_sharpe_std,
        result.random_return_mean, result.random_return_std}) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("run ", run_id, ": a lockbox metric is not finite (", v,
                       "); nothing was stored"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCompleteRefit(int64_t run_id, const RefitRow& refit,
                                const std::optional<LockboxRow>& combined,
                                const std::vector<ArtifactRow>& artifacts) {
  LockboxRow own;
  own.policy = refit.policy;
  own.sharpe_se = refit.sharpe_se;
  RETURN_IF_ERROR(CheckCompleteFinalRun(run_id, own, artifacts));
  if (!combined.has_value()) return absl::OkStatus();
  if (combined->refits < 1 || combined->refits > kMaxFinalRefits) {
    return absl::InvalidArgumentError(
        absl::StrCat("run ", run_id, ": a result combining ", combined->refits,
                     " refits (expected 1 to ", kMaxFinalRefits, ")"));
  }
  return CheckCompleteFinalRun(run_id, *combined, {});
}

absl::Status CheckRefit(int refit) {
  if (refit < 0 || refit >= kMaxFinalRefits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refit ", refit, " is outside [0, ", kMaxFinalRefits, ")"));
  }
  return absl::OkStatus();
}

std::string FinalRunDirectory(int refit) {
  return refit == 0 ? std::string("lockbox")
                    : absl::StrCat("lockbox-refit-", refit);
}

absl::Status OtherRefitOpen(int64_t run_id, int64_t other_run_id,
                            RunState state) {
  return absl::FailedPreconditionError(absl::StrCat(
      "run ", run_id, ": the trial's final run ", other_run_id, " is ",
      ToString(state), "; the refits combine once every one is complete"));
}

absl::Status CheckArtifacts(int64_t run_id,
                            const std::vector<ArtifactRow>& artifacts) {
  for (const ArtifactRow& a : artifacts) {
    if (!IsOneOf(a.kind, {"checkpoint", "policy"})) {
      return absl::InvalidArgumentError(
          absl::StrCat("run ", run_id, ": artifact kind '", a.kind,
                       "' is not \"checkpoint\" or \"policy\""));
    }
    if (a.path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("run ", run_id, ": artifact with an empty path"));
    }
    if (!IsLowerHex64(a.sha256)) {
      return absl::InvalidArgumentError(
          absl::StrCat("run ", run_id, ": artifact ", a.path, " has sha256 '",
                       a.sha256, "', not 64 lowercase hex digits"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckUpsertMember(const MemberRow& row) {
  if (row.id.empty()) return absl::InvalidArgumentError("empty member id");
  if (!IsOneOf(row.kind, {"learner", "actor"})) {
    return absl::InvalidArgumentError(
        absl::StrCat("member ", row.id, ": kind '", row.kind,
                     "' is not \"learner\" or \"actor\""));
  }
  return absl::OkStatus();
}

absl::Status LearnersMemberIdError(const MemberRow& row) {
  return absl::AlreadyExistsError(absl::StrCat(
      "member id '", EscapeForMessage(row.id, 80), "' is a learner's; a ",
      EscapeForMessage(row.kind, 16), " cannot take it"));
}

absl::Status CheckStudyTransition(int64_t study_id, StudyState from,
                                  StudyState to) {
  if (from == StudyState::kDone || to == StudyState::kCreated) {
    return absl::FailedPreconditionError(
        absl::StrCat("study ", study_id, " cannot go from ", ToString(from),
                     " to ", ToString(to)));
  }
  return absl::OkStatus();
}

absl::Status CheckStudyNotDone(const std::string& name, StudyState state) {
  if (state == StudyState::kDone) {
    return absl::FailedPreconditionError(
        absl::StrCat("study '", name, "' is done"));
  }
  return absl::OkStatus();
}

absl::Status CheckTrialRunning(int64_t trial_id, TrialState state) {
  if (state != TrialState::kRunning) {
    return absl::FailedPreconditionError(absl::StrCat(
        "trial ", trial_id, " is ", ToString(state), ", not running"));
  }
  return absl::OkStatus();
}

absl::Status CheckRunHolder(int64_t run_id, RunState state,
                            const std::string& holder,
                            const std::string& member_id) {
  if (state == RunState::kLeased && holder == member_id) {
    return absl::OkStatus();
  }
  if (state == RunState::kLeased) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is leased to '", holder, "', not to '",
                     member_id, "'"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("run ", run_id, " is ", ToString(state), ", not leased to '",
                   member_id, "'"));
}

absl::Status CheckCvFoldRun(int64_t run_id, int fold) {
  if (IsFinalFold(fold)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run_id,
        " is a final (lockbox) run: complete it with CompleteRefit"));
  }
  return absl::OkStatus();
}

absl::Status CheckFinalRun(int64_t run_id, int fold) {
  if (!IsFinalFold(fold)) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is a CV fold, not a final run"));
  }
  return absl::OkStatus();
}

}  // namespace ristretto::coordinator
