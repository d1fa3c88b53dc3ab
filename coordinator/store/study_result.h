// The statistics and verdict of a study from what the store holds: its
// complete trials' fold metrics (with their validation returns), the number
// of trials tried and the lockbox results. Used by the coordinator when a
// study ends (it stores the result) and by the CLI on demand.
#ifndef RISTRETTO_COORDINATOR_STORE_STUDY_RESULT_H_
#define RISTRETTO_COORDINATOR_STORE_STUDY_RESULT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/store.h"

namespace ristretto::coordinator {

// The study named `name`. Errors: kNotFound with a message that says how
// to list the studies; the store's.
absl::StatusOr<StudyRow> FindStudy(Store& store, const std::string& name);

// The trial with the highest score among the complete ones (ties: the
// earlier trial), or nullopt: the best trial of `study best`, the export and
// the report.
std::optional<TrialRow> BestTrial(const std::vector<TrialRow>& trials);

// Bars per year of the study's dataset (its synthetic interval, or the
// registered dataset's). Errors: the store's (kNotFound for an unregistered
// dataset); a study file that no longer parses.
absl::StatusOr<double> StudyBarsPerYear(Store& store, const StudyRow& study);

// The rows the study's CV folds are cut from, [0, guard): the dataset's
// rows (the synthetic spec's, or the registered dataset's) up to the
// lockbox and its embargo (MakeLockboxLayout). Errors: the stored file no
// longer parses; the store's; a lockbox that does not fit.
absl::StatusOr<int64_t> StudyCvRows(Store& store, const StudyRow& study);

// Errors: the store's; a study file that no longer parses.
absl::StatusOr<StudyStatistics> ComputeStudyResult(Store& store,
                                                   const StudyRow& study);

// The stored result of a done study, else ComputeStudyResult.
absl::StatusOr<StudyStatistics> LoadOrComputeStudyResult(Store& store,
                                                         const StudyRow& study);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_STUDY_RESULT_H_
