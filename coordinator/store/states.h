// The states of a study, a trial and a run, as enums. The database keeps
// them as lowercase text (CHECKed by the schema, migrations.cc); PgStore
// converts at its boundary with ToString / Parse*State, InMemoryStore keeps
// the enums, and everything above the Store (scheduler, CLI, report)
// compares enums, never text.
//
// State machine (store.h has the contracts around it):
//   study: created → running ⇄ stopped; running → done (all trials finished)
//   trial: running → complete | pruned | failed
//   run:   queued → leased → done | failed; queued/leased → cancelled
//          (trial pruned/failed/stopped); leased → queued (lease expired,
//          attempts left; resumes from the run's checkpoint dir)
//
// No database, no torch: coordinator/core uses these too.
#ifndef RISTRETTO_COORDINATOR_STORE_STATES_H_
#define RISTRETTO_COORDINATOR_STORE_STATES_H_

#include <iosfwd>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ristretto::coordinator {

enum class StudyState { kCreated, kRunning, kStopped, kDone };
enum class TrialState { kRunning, kComplete, kPruned, kFailed };
enum class RunState { kQueued, kLeased, kDone, kFailed, kCancelled };

// The state's text as stored and shown: "created", "running", … A value
// that is none of the enumerators (a bad cast) is "invalid".
absl::string_view ToString(StudyState state);
absl::string_view ToString(TrialState state);
absl::string_view ToString(RunState state);

// The inverse of ToString (exact, lowercase). kInvalidArgument naming the
// bad text and the accepted ones, e.g. "unknown trial state 'done'
// (expected running, complete, pruned or failed)".
absl::StatusOr<StudyState> ParseStudyState(absl::string_view text);
absl::StatusOr<TrialState> ParseTrialState(absl::string_view text);
absl::StatusOr<RunState> ParseRunState(absl::string_view text);

// Whether `state` is one of the enumerators (false only after a bad cast).
bool IsValid(StudyState state);
bool IsValid(TrialState state);
bool IsValid(RunState state);

// ToString's text, so that test failures and logs show names, not numbers.
std::ostream& operator<<(std::ostream& os, StudyState state);
std::ostream& operator<<(std::ostream& os, TrialState state);
std::ostream& operator<<(std::ostream& os, RunState state);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_STATES_H_
