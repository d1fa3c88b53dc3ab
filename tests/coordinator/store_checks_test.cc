// The Store argument checks (coordinator/store/store_checks.h) on their own:
// valid arguments pass, and each bad field is refused with kInvalidArgument
// and a message that names it; the state checks refuse with
// kFailedPrecondition. The contract suite (store_contract_test.cc)
// checks that both backends give these answers through the Store methods.
#include "coordinator/store/store_checks.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

using ::testing::HasSubstr;

const std::string kSha(64, 'c');

// kInvalidArgument whose message contains `part`.
void ExpectInvalid(const absl::Status& status, const std::string& part) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr(part));
}

ArtifactRow Artifact(const std::string& kind, const std::string& path,
                     const std::string& sha) {
  ArtifactRow a;
  a.kind = kind;
  a.path = path;
  a.sha256 = sha;
  return a;
}

TEST(StoreChecksTest, DatasetNeedsAnIdAndNonNegativeSizes) {
  DatasetRow row;
  row.id = "d1";
  row.rows = 10;
  row.interval_seconds = 60;
  EXPECT_TRUE(CheckPutDataset(row).ok());
  DatasetRow no_id = row;
  no_id.id.clear();
  ExpectInvalid(CheckPutDataset(no_id), "dataset id is empty");
  DatasetRow negative = row;
  negative.rows = -1;
  ExpectInvalid(CheckPutDataset(negative), "dataset d1: negative rows");
  negative = row;
  negative.interval_seconds = -60;
  ExpectInvalid(CheckPutDataset(negative), "dataset d1: negative rows");
}

TEST(StoreChecksTest, StudyNamesAndStates) {
  EXPECT_TRUE(CheckCreateStudy("s").ok());
  ExpectInvalid(CheckCreateStudy(""), "study name is empty");
  for (const StudyState state : {StudyState::kCreated, StudyState::kRunning,
                                 StudyState::kStopped, StudyState::kDone}) {
    EXPECT_TRUE(CheckSetStudyState(state).ok()) << state;
  }
  // Only a bad cast gets past the type.
  ExpectInvalid(CheckSetStudyState(static_cast<StudyState>(17)),
                "unknown study state 17");
}

TEST(StoreChecksTest, TrialsNeedARunAndDistinctNamedParameters) {
  EXPECT_TRUE(CheckCreateTrial({"{}"}).ok());
  ExpectInvalid(CheckCreateTrial({}), "at least one run");
  EXPECT_TRUE(CheckTrialParams({}).ok());
  EXPECT_TRUE(CheckTrialParams({{"lr", "0.1"}, {"gamma", "0.9"}}).ok());
  ExpectInvalid(CheckTrialParams({{"lr", "0.1"}, {"", "1"}}),
                "parameter name is empty");
  ExpectInvalid(CheckTrialParams({{"lr", "0.1"}, {"lr", "0.2"}}),
                "parameter 'lr' given twice");
  // The first bad parameter is the one named.
  ExpectInvalid(CheckTrialParams({{"", "0"}, {"lr", "1"}, {"lr", "2"}}),
                "parameter name is empty");
}

TEST(StoreChecksTest, FailTrialNeedsAReason) {
  EXPECT_TRUE(CheckFailTrial("diverged").ok());
  ExpectInvalid(CheckFailTrial(""), "needs a reason");
}

TEST(StoreChecksTest, LeasesNeedAMemberAndAPositiveTtl) {
  EXPECT_TRUE(CheckLeaseRun("m", absl::Seconds(1)).ok());
  ExpectInvalid(CheckLeaseRun("", absl::Seconds(1)), "empty member id");
  ExpectInvalid(CheckLeaseRun("m", absl::ZeroDuration()),
                "lease ttl must be positive");
  ExpectInvalid(CheckLeaseRun("m", absl::Seconds(-1)),
                "lease ttl must be positive");

  EXPECT_TRUE(CheckHeartbeat(absl::Seconds(1), {{7, 0}, {8, 100}}).ok());
  ExpectInvalid(CheckHeartbeat(absl::ZeroDuration(), {}),
                "lease ttl must be positive");
  ExpectInvalid(CheckHeartbeat(absl::Seconds(1), {{7, 5}, {8, -3}}),
                "run 8: negative env steps -3");

  EXPECT_TRUE(CheckExpireLeases({{1, 1}, {2, 5}}, 3).ok());
  ExpectInvalid(CheckExpireLeases({}, 0), "max_attempts must be at least 1");
  ExpectInvalid(CheckExpireLeases({{1, 2}, {4, 0}}, 3),
                "max_attempts of study 4 must be at least 1");
}

TEST(StoreChecksTest, IntermediatesNeedANonNegativeStep) {
  EXPECT_TRUE(CheckReportIntermediate(3, 0).ok());
  ExpectInvalid(CheckReportIntermediate(3, -1), "run 3: negative step -1");
}

TEST(StoreChecksTest, ArtifactsNeedAKnownKindAPathAndALowercaseSha256) {
  EXPECT_TRUE(CheckArtifacts(5, {}).ok());
  EXPECT_TRUE(CheckArtifacts(5, {Artifact("checkpoint", "/c", kSha),
                                 Artifact("policy", "/p", kSha)})
                  .ok());
  ExpectInvalid(CheckArtifacts(5, {Artifact("model", "/m", kSha)}),
                "run 5: artifact kind 'model'");
  ExpectInvalid(CheckArtifacts(5, {Artifact("policy", "", kSha)}),
                "run 5: artifact with an empty path");
  ExpectInvalid(CheckArtifacts(5, {Artifact("policy", "/p", "abc")}),
                "artifact /p has sha256 'abc'");
  ExpectInvalid(
      CheckArtifacts(5, {Artifact("policy", "/p", std::string(64, 'C'))}),
      "not 64 lowercase hex digits");
  ExpectInvalid(
      CheckArtifacts(5, {Artifact("policy", "/p", std::string(64, 'g'))}),
      "not 64 lowercase hex digits");
}

TEST(StoreChecksTest, CompleteRunRefusesNegativeCountsThenBadArtifacts) {
  FoldMetrics m;
  m.trades = 1;
  m.env_steps = 10;
  const std::vector<ArtifactRow> good = {Artifact("policy", "/p", kSha)};
  const std::vector<ArtifactRow> bad = {Artifact("policy", "", kSha)};
  EXPECT_TRUE(CheckCompleteRun(2, m, good).ok());
  ExpectInvalid(CheckCompleteRun(2, m, bad), "empty path");
  FoldMetrics negative = m;
  negative.trades = -1;
  // The counts are checked before the artifacts.
  ExpectInvalid(CheckCompleteRun(2, negative, bad),
                "run 2: negative trades or env steps");
  negative = m;
  negative.env_steps = -1;
  ExpectInvalid(CheckCompleteRun(2, negative, good),
                "run 2: negative trades or env steps");
}

TEST(StoreChecksTest, CompleteFinalRunRefusesBadArtifactsCountsAndNonFinite) {
  LockboxRow result;
  result.policy.trades = 3;
  result.policy.env_steps = 100;
  result.bars = 200;
  result.random_seeds = 16;
  const std::vector<ArtifactRow> good = {Artifact("policy", "/p", kSha)};
  const std::vector<ArtifactRow> bad = {Artifact("weights", "/p", kSha)};
  EXPECT_TRUE(CheckCompleteFinalRun(9, result, good).ok());

  LockboxRow negative = result;
  negative.bars = -1;
  // The artifacts are checked before the counts.
  ExpectInvalid(CheckCompleteFinalRun(9, negative, bad), "kind 'weights'");
  ExpectInvalid(CheckCompleteFinalRun(9, negative, good),
                "run 9: negative trades, env steps, bars or seeds");
  negative = result;
  negative.random_seeds = -2;
  ExpectInvalid(CheckCompleteFinalRun(9, negative, good), "bars or seeds");

  // Every statistic compared with the baselines must be finite: the
  // policy's, buy & hold's and the random policy's.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::string, double LockboxRow::*>> fields = {
      {"sharpe_se", &LockboxRow::sharpe_se},
      {"bh_sharpe", &LockboxRow::bh_sharpe},
      {"bh_sharpe_se", &LockboxRow::bh_sharpe_se},
      {"bh_sortino", &LockboxRow::bh_sortino},
      {"bh_return", &LockboxRow::bh_return},
      {"bh_max_drawdown", &LockboxRow::bh_max_drawdown},
      {"random_sharpe_mean", &LockboxRow::random_sharpe_mean},
      {"random_sharpe_std", &LockboxRow::random_sharpe_std},
      {"random_return_mean", &LockboxRow::random_return_mean},
      {"random_return_std", &LockboxRow::random_return_std}};
  for (const auto& [name, field] : fields) {
    SCOPED_TRACE(name);
    LockboxRow r = result;
    r.*field = nan;
    ExpectInvalid(CheckCompleteFinalRun(9, r, good),
                  "run 9: a lockbox metric is not finite (nan)");
    r.*field = -inf;
    ExpectInvalid(CheckCompleteFinalRun(9, r, good), "is not finite (-inf)");
  }
  std::vector<std::pair<std::string, double FoldMetrics::*>> policy = {
      {"sharpe", &FoldMetrics::sharpe},
      {"sortino", &FoldMetrics::sortino},
      {"calmar", &FoldMetrics::calmar},
      {"total_return", &FoldMetrics::total_return},
      {"max_drawdown", &FoldMetrics::max_drawdown},
      {"turnover", &FoldMetrics::turnover},
      {"fees", &FoldMetrics::fees},
      {"exposure", &FoldMetrics::exposure}};
  for (const auto& [name, field] : policy) {
    SCOPED_TRACE(name);
    LockboxRow r = result;
    r.policy.*field = inf;
    ExpectInvalid(CheckCompleteFinalRun(9, r, good), "is not finite (inf)");
  }
}

TEST(StoreChecksTest, MembersNeedAnIdAndAKnownKind) {
  MemberRow row;
  row.id = "m1";
  row.kind = "learner";
  EXPECT_TRUE(CheckUpsertMember(row).ok());
  row.kind = "actor";
  EXPECT_TRUE(CheckUpsertMember(row).ok());
  row.kind = "observer";
  ExpectInvalid(CheckUpsertMember(row), "member m1: kind 'observer'");
  row.kind = "actor";
  row.id.clear();
  ExpectInvalid(CheckUpsertMember(row), "empty member id");
}

TEST(StoreChecksTest, StudyTransitionsOutOfDoneAndIntoCreatedAreRefused) {
  EXPECT_TRUE(
      CheckStudyTransition(1, StudyState::kCreated, StudyState::kRunning).ok());
  EXPECT_TRUE(
      CheckStudyTransition(1, StudyState::kRunning, StudyState::kStopped).ok());
  EXPECT_TRUE(
      CheckStudyTransition(1, StudyState::kStopped, StudyState::kRunning).ok());
  EXPECT_TRUE(
      CheckStudyTransition(1, StudyState::kRunning, StudyState::kDone).ok());
  const absl::Status out_of_done =
      CheckStudyTransition(4, StudyState::kDone, StudyState::kRunning);
  EXPECT_EQ(out_of_done.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(out_of_done.message(), "study 4 cannot go from done to running");
  EXPECT_EQ(CheckStudyTransition(4, StudyState::kRunning, StudyState::kCreated)
                .code(),
            absl::StatusCode::kFailedPrecondition);

  EXPECT_TRUE(CheckStudyNotDone("s", StudyState::kRunning).ok());
  EXPECT_EQ(CheckStudyNotDone("s", StudyState::kDone).message(),
            "study 's' is done");
}

TEST(StoreChecksTest, TrialMustBeRunning) {
  EXPECT_TRUE(CheckTrialRunning(2, TrialState::kRunning).ok());
  for (const TrialState state :
       {TrialState::kComplete, TrialState::kPruned, TrialState::kFailed}) {
    const absl::Status s = CheckTrialRunning(2, state);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << state;
    EXPECT_EQ(s.message(),
              absl::StrCat("trial 2 is ", ToString(state), ", not running"));
  }
}

TEST(StoreChecksTest, OnlyTheHolderOfALeasedRunMayActOnIt) {
  EXPECT_TRUE(CheckRunHolder(5, RunState::kLeased, "a", "a").ok());
  const absl::Status other = CheckRunHolder(5, RunState::kLeased, "a", "b");
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(other.message(), "run 5 is leased to 'a', not to 'b'");
  // A run that is not leased is refused even to the member that last held it.
  const absl::Status done = CheckRunHolder(5, RunState::kDone, "a", "a");
  EXPECT_EQ(done.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(done.message(), "run 5 is done, not leased to 'a'");
}

TEST(StoreChecksTest, CvFoldAndFinalRunsAreCompletedByTheirOwnMethod) {
  EXPECT_TRUE(CheckCvFoldRun(6, 0).ok());
  EXPECT_TRUE(CheckFinalRun(6, kLockboxFold).ok());
  const absl::Status final_as_fold = CheckCvFoldRun(6, kLockboxFold);
  EXPECT_EQ(final_as_fold.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(final_as_fold.message(), HasSubstr("run 6 is a final (lockbox)"));
  const absl::Status fold_as_final = CheckFinalRun(6, 2);
  EXPECT_EQ(fold_as_final.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fold_as_final.message(), "run 6 is a CV fold, not a final run");
}

}  // namespace
}  // namespace ristretto::coordinator
