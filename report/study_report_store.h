// The study report from the coordinator's store: LoadStudyReport fills
// report::StudyReportData (report/study_report.h) from PostgreSQL, and
// WriteStudyReport renders it to <out_dir>/report.html. Used by
// `ristretto study report` and `ristretto up` (beside the exported policy).
//
// Buy & hold's per-bar returns are not stored: they are rebuilt on exactly
// the rows each of the best trial's runs validated on (its stored run
// options), from the study's dataset (regenerated when synthetic, read from
// the registered file otherwise), with coordinator::ComputeBaselines — the
// function the coordinator used for the lockbox's stored numbers. When the
// dataset cannot be read the report still renders, says so, and shows the
// stored buy & hold numbers without the curve.
//
// Thread-compatible (the Store is).
#ifndef RISTRETTO_REPORT_STUDY_REPORT_STORE_H_
#define RISTRETTO_REPORT_STUDY_REPORT_STORE_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store/store.h"
#include "report/study_report.h"

namespace ristretto::report {

// Errors: kNotFound for an unknown study ("no study named 'X' (ristretto
// study ls)"); kFailedPrecondition when it has no complete trial; the
// store's; a stored study file that no longer parses.
absl::StatusOr<StudyReportData> LoadStudyReport(coordinator::Store& store,
                                                const std::string& study_name);

// Buy & hold's annualised Sharpe standard error on each CV fold trial
// `trial_id` of `study` validated on (fold → SE), rebuilt on exactly the
// fold's rows as LoadStudyReport does. A fold whose stored options or rows
// cannot be rebuilt is left out. Errors: the stored study file no longer
// parses, the bar interval is unknown, the dataset cannot be read, the
// store's.
absl::StatusOr<std::map<int, double>> BuyAndHoldFoldErrors(
    coordinator::Store& store, const coordinator::StudyRow& study,
    int64_t trial_id);

// Loads, renders and writes <out_dir>/report.html (creating out_dir),
// atomically: the page is written to a hidden temporary file in out_dir and
// renamed into place, so a failure leaves no partial report (an existing
// report.html stays as it was). Returns the report's path.
// Errors: those of LoadStudyReport (nothing is created then); out_dir that
// cannot be created or written (kPermissionDenied / kInternal, naming it).
absl::StatusOr<std::string> WriteStudyReport(coordinator::Store& store,
                                             const std::string& study_name,
                                             const std::string& out_dir);

}  // namespace ristretto::report

#endif  // RISTRETTO_REPORT_STUDY_REPORT_STORE_H_
