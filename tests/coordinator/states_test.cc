// The state enums (coordinator/store/states.h): every enumerator's text
// parses back to it, the texts are the ones the schema CHECKs (a renamed
// state would need a migration), and bad text is refused with a message that
// names it and the accepted states.
#include "coordinator/store/states.h"

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(StatesTest, StudyStatesRoundTripThroughTheirText) {
  const std::vector<StudyState> all = {StudyState::kCreated,
                                       StudyState::kRunning,
                                       StudyState::kStopped, StudyState::kDone};
  std::set<std::string> texts;
  for (const StudyState s : all) {
    texts.insert(std::string(ToString(s)));
    EXPECT_TRUE(IsValid(s)) << s;
    absl::StatusOr<StudyState> parsed = ParseStudyState(ToString(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(texts,
            (std::set<std::string>{"created", "running", "stopped", "done"}));
}

TEST(StatesTest, TrialStatesRoundTripThroughTheirText) {
  const std::vector<TrialState> all = {
      TrialState::kRunning, TrialState::kComplete, TrialState::kPruned,
      TrialState::kFailed};
  std::set<std::string> texts;
  for (const TrialState s : all) {
    texts.insert(std::string(ToString(s)));
    EXPECT_TRUE(IsValid(s)) << s;
    absl::StatusOr<TrialState> parsed = ParseTrialState(ToString(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(texts,
            (std::set<std::string>{"running", "complete", "pruned", "failed"}));
}

TEST(StatesTest, RunStatesRoundTripThroughTheirText) {
  const std::vector<RunState> all = {RunState::kQueued, RunState::kLeased,
                                     RunState::kDone, RunState::kFailed,
                                     RunState::kCancelled};
  std::set<std::string> texts;
  for (const RunState s : all) {
    texts.insert(std::string(ToString(s)));
    EXPECT_TRUE(IsValid(s)) << s;
    absl::StatusOr<RunState> parsed = ParseRunState(ToString(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(texts, (std::set<std::string>{"queued", "leased", "done", "failed",
                                          "cancelled"}));
}

TEST(StatesTest, BadTextIsRefusedNamingItAndTheAcceptedStates) {
  const absl::StatusOr<StudyState> study = ParseStudyState("paused");
  ASSERT_EQ(study.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(study.status().message(),
            "unknown study state 'paused' (expected created, running, stopped "
            "or done)");

  // A state of another kind is not accepted: "done" is a run's, not a
  // trial's.
  const absl::StatusOr<TrialState> trial = ParseTrialState("done");
  ASSERT_EQ(trial.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(trial.status().message(),
            "unknown trial state 'done' (expected running, complete, pruned "
            "or failed)");

  const absl::StatusOr<RunState> run = ParseRunState("");
  ASSERT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("unknown run state ''"));
  EXPECT_THAT(run.status().message(),
              HasSubstr("queued, leased, done, failed or cancelled"));

  // Exact text only: no case folding, no surrounding blanks.
  const absl::StatusOr<RunState> capital = ParseRunState("Queued");
  EXPECT_FALSE(capital.ok());
  EXPECT_EQ(capital.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(capital.status().message(),
              HasSubstr("unknown run state 'Queued'"));
  const absl::StatusOr<RunState> blank = ParseRunState(" queued");
  EXPECT_FALSE(blank.ok());
  EXPECT_EQ(blank.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(blank.status().message(),
              HasSubstr("unknown run state ' queued'"));
  const absl::StatusOr<StudyState> upper = ParseStudyState("DONE");
  EXPECT_FALSE(upper.ok());
  EXPECT_EQ(upper.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(upper.status().message(),
              HasSubstr("unknown study state 'DONE'"));
}

TEST(StatesTest, ABadCastIsInvalidAndPrintsAsSuch) {
  const auto bad_study = static_cast<StudyState>(42);
  const auto bad_trial = static_cast<TrialState>(-1);
  const auto bad_run = static_cast<RunState>(5);
  EXPECT_FALSE(IsValid(bad_study));
  EXPECT_FALSE(IsValid(bad_trial));
  EXPECT_FALSE(IsValid(bad_run));
  EXPECT_EQ(ToString(bad_study), "invalid");
  EXPECT_EQ(ToString(bad_trial), "invalid");
  EXPECT_EQ(ToString(bad_run), "invalid");
  // "invalid" is not a state: it never parses back.
  const absl::StatusOr<RunState> invalid = ParseRunState(ToString(bad_run));
  EXPECT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(invalid.status().message(),
              HasSubstr("unknown run state 'invalid'"));
}

TEST(StatesTest, StreamsPrintTheText) {
  std::ostringstream out;
  out << StudyState::kStopped << ' ' << TrialState::kPruned << ' '
      << RunState::kCancelled;
  EXPECT_EQ(out.str(), "stopped pruned cancelled");
}

}  // namespace
}  // namespace ristretto::coordinator
