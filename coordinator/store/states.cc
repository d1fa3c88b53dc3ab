#include "coordinator/store/states.h"

#include <array>
#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/text_util.h"

namespace ristretto::coordinator {
namespace {

constexpr absl::string_view kInvalid = "invalid";

// Each enum's (value, text) pairs, in declaration order.
constexpr std::array<std::pair<StudyState, absl::string_view>, 4> kStudyNames =
    {{{StudyState::kCreated, "created"},
      {StudyState::kRunning, "running"},
      {StudyState::kStopped, "stopped"},
      {StudyState::kDone, "done"}}};
constexpr std::array<std::pair<TrialState, absl::string_view>, 4> kTrialNames =
    {{{TrialState::kRunning, "running"},
      {TrialState::kComplete, "complete"},
      {TrialState::kPruned, "pruned"},
      {TrialState::kFailed, "failed"}}};
constexpr std::array<std::pair<RunState, absl::string_view>, 5> kRunNames = {
    {{RunState::kQueued, "queued"},
     {RunState::kLeased, "leased"},
     {RunState::kDone, "done"},
     {RunState::kFailed, "failed"},
     {RunState::kCancelled, "cancelled"}}};

template <typename E, size_t N>
absl::string_view Name(
    const std::array<std::pair<E, absl::string_view>, N>& names, E state) {
  for (const auto& [value, text] : names) {
    if (value == state) return text;
  }
  return kInvalid;
}

// "a, b or c".
template <typename E, size_t N>
std::string Expected(
    const std::array<std::pair<E, absl::string_view>, N>& names) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) absl::StrAppend(&out, i + 1 == N ? " or " : ", ");
    absl::StrAppend(&out, names[i].second);
  }
  return out;
}

template <typename E, size_t N>
absl::StatusOr<E> Parse(
    const std::array<std::pair<E, absl::string_view>, N>& names,
    absl::string_view kind, absl::string_view text) {
  for (const auto& [value, name] : names) {
    if (name == text) return value;
  }
  // `text` comes from a database row or a caller: escaped and capped.
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ", kind, " state '", EscapeForMessage(text),
                   "' (expected ", Expected(names), ")"));
}

}  // namespace

absl::string_view ToString(StudyState state) {
  return Name(kStudyNames, state);
}
absl::string_view ToString(TrialState state) {
  return Name(kTrialNames, state);
}
absl::string_view ToString(RunState state) { return Name(kRunNames, state); }

absl::StatusOr<StudyState> ParseStudyState(absl::string_view text) {
  return Parse(kStudyNames, "study", text);
}
absl::StatusOr<TrialState> ParseTrialState(absl::string_view text) {
  return Parse(kTrialNames, "trial", text);
}
absl::StatusOr<RunState> ParseRunState(absl::string_view text) {
  return Parse(kRunNames, "run", text);
}

bool IsValid(StudyState state) { return ToString(state) != kInvalid; }
bool IsValid(TrialState state) { return ToString(state) != kInvalid; }
bool IsValid(RunState state) { return ToString(state) != kInvalid; }

std::ostream& operator<<(std::ostream& os, StudyState state) {
  return os << ToString(state);
}
std::ostream& operator<<(std::ostream& os, TrialState state) {
  return os << ToString(state);
}
std::ostream& operator<<(std::ostream& os, RunState state) {
  return os << ToString(state);
}

}  // namespace ristretto::coordinator
