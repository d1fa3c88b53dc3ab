#include "ops/study.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/artifact_hash.h"
#include "common/atomic_file.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "coordinator/core/study_config.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/study_result.h"
#include "env/csv_import.h"
#include "env/dataset.h"
#include "env/synthetic.h"
#include "learner/run_config_codec.h"
#include "ops/export_layout.h"

namespace ristretto::ops {
namespace {

namespace fs = std::filesystem;
using coordinator::ArtifactRow;
using coordinator::BestTrial;
using coordinator::DatasetRow;
using coordinator::Store;
using coordinator::StudyRow;
using coordinator::TrialRow;

// ---- DSN -------------------------------------------------------------------

// Where a DSN's password is: the raw text [begin, end) (inside the quotes
// when quoted) and its value. begin == end when there is none.
struct PasswordSpan {
  size_t begin = 0, end = 0;
  std::string value;
};

// Finds the password of `dsn` in the libpq key = value form (values may be
// single-quoted with backslash escapes) or the URI form (user:password@
// or a password= query parameter).
PasswordSpan FindPassword(const std::string& dsn) {
  PasswordSpan span;
  const size_t n = dsn.size();
  const size_t scheme = dsn.find("://");
  if (scheme != std::string::npos) {
    const size_t query = dsn.find('?', scheme);
    for (size_t i = query; i != std::string::npos && i < n;) {
      const size_t param = i + 1;
      const size_t next = dsn.find('&', param);
      if (dsn.compare(param, 9, "password=") == 0) {
        span.begin = param + 9;
        span.end = next == std::string::npos ? n : next;
        span.value = dsn.substr(span.begin, span.end - span.begin);
        return span;
      }
      i = next;
    }
    const size_t authority = scheme + 3;
    const size_t host_end = std::min(dsn.find('/', authority), query);
    const size_t at = dsn.rfind('@', host_end);
    if (at == std::string::npos || at < authority) return span;
    const size_t colon = dsn.find(':', authority);
    if (colon == std::string::npos || colon > at) return span;
    span.begin = colon + 1;
    span.end = at;
    span.value = dsn.substr(span.begin, span.end - span.begin);
    return span;
  }
  auto is_space = [&](size_t i) {
    return std::isspace(static_cast<unsigned char>(dsn[i])) != 0;
  };
  size_t i = 0;
  while (i < n) {
    while (i < n && is_space(i)) ++i;
    const size_t key_begin = i;
    while (i < n && !is_space(i) && dsn[i] != '=') ++i;
    const std::string key = dsn.substr(key_begin, i - key_begin);
    while (i < n && is_space(i)) ++i;
    if (i >= n || dsn[i] != '=') return span;  // not key = value: no password
    ++i;
    while (i < n && is_space(i)) ++i;
    PasswordSpan value;
    if (i < n && dsn[i] == '\'') {
      value.begin = ++i;
      while (i < n && dsn[i] != '\'') {
        if (dsn[i] == '\\' && i + 1 < n) ++i;
        value.value.push_back(dsn[i++]);
      }
      value.end = i;
      if (i < n) ++i;  // the closing quote
    } else {
      value.begin = i;
      while (i < n && !is_space(i)) value.value.push_back(dsn[i++]);
      value.end = i;
    }
    if (key == "password") return value;
  }
  return span;
}

// `message` with every occurrence of the DSN's password masked.
std::string MaskPassword(const std::string& message, const std::string& dsn) {
  const std::string password = FindPassword(dsn).value;
  if (password.empty()) return message;
  return absl::StrReplaceAll(message, {{password, "***"}});
}

// ---- files -----------------------------------------------------------------

absl::Status CopyFile(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot copy ", from.string(),
                                            " to ", to.string(), ": ",
                                            ec.message()));
  }
  return absl::OkStatus();
}

absl::Status Rename(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot rename ", from.string(),
                                            " to ", to.string(), ": ",
                                            ec.message()));
  }
  return absl::OkStatus();
}

absl::Status CreateDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RedactDsn(const std::string& dsn) {
  const PasswordSpan span = FindPassword(dsn);
  if (span.begin == span.end) return dsn;
  return absl::StrCat(dsn.substr(0, span.begin), "***", dsn.substr(span.end));
}

absl::StatusOr<std::unique_ptr<Store>> ConnectStore(
    const std::string& dsn, absl::Duration give_up_after) {
  coordinator::RetryPolicy retry;
  retry.give_up_after = give_up_after;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Connect(dsn, retry);
  absl::Status status = store.status();
  if (status.ok()) status = (*store)->Migrate();
  if (!status.ok()) {
    return absl::Status(
        status.code(),
        absl::StrCat("database ", RedactDsn(dsn), ": ",
                     MaskPassword(std::string(status.message()), dsn)));
  }
  return store;
}

absl::StatusOr<DatasetRow> RegisterDataset(Store& store,
                                           const std::string& dataset_file,
                                           const std::string& data_dir) {
  ASSIGN_OR_RETURN(env::Dataset dataset, env::ReadDataset(dataset_file));
  const std::string id = dataset.ComputeId();
  const fs::path dir = fs::absolute(fs::path(data_dir) / "datasets");
  RETURN_IF_ERROR(CreateDirectories(dir));
  const fs::path target = dir / (id + ".rds");
  const fs::path partial = dir / ("." + id + ".rds.partial");
  RETURN_IF_ERROR(CopyFile(dataset_file, partial));
  RETURN_IF_ERROR(Rename(partial, target));
  DatasetRow row;
  row.id = id;
  row.path = target.lexically_normal().string();
  std::vector<std::string> symbols;
  for (const env::AssetMeta& a : dataset.assets) symbols.push_back(a.symbol);
  row.symbols = absl::StrJoin(symbols, ",");
  row.rows = dataset.num_rows();
  row.interval_seconds = dataset.interval_seconds;
  RETURN_IF_ERROR(Annotate(store.PutDataset(row),
                           absl::StrCat("registering dataset ", id)));
  return row;
}

absl::StatusOr<std::string> ArtifactSha256(const std::string& path) {
  return PolicyArtifactSha256(path);
}

bool IsTransientStoreError(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status) ||
         absl::IsDeadlineExceeded(status);
}

// The lockbox results of a study's trials, by trial id.
absl::StatusOr<StudyFile> CheckStudyFile(const std::string& file,
                                         const std::string& text,
                                         const std::string& name) {
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(text);
  if (!config.ok()) {
    // Every problem in the file is bad input (exit 2), whatever its code.
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", config.status().message()));
  }
  StudyFile out{name.empty() ? config->name : name, text, *std::move(config)};
  if (out.name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file,
                     ": the study has no name (add `name:` or pass "
                     "--name NAME)"));
  }
  RETURN_IF_ERROR(coordinator::CheckStudyName(out.name));
  return out;
}

absl::StatusOr<StudyRow> CreateStudy(Store& store, const std::string& file,
                                     const StudyFile& study) {
  if (!study.config.dataset.synthetic) {
    absl::StatusOr<DatasetRow> dataset =
        store.GetDataset(study.config.dataset.id);
    if (absl::IsNotFound(dataset.status())) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": dataset ", study.config.dataset.id,
          " is not registered (ristretto dataset import ... --db DSN "
          "--data-dir DIR; ristretto dataset ls)"));
    }
    RETURN_IF_ERROR(dataset.status());
  }
  absl::StatusOr<StudyRow> row = store.CreateStudy(study.name, study.text);
  if (absl::IsAlreadyExists(row.status())) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a study named '", study.name,
        "' already exists (ristretto study show ", study.name, ")"));
  }
  return row;
}

absl::StatusOr<coordinator::StudyState> SetStudyRunning(Store& store,
                                                        const std::string& name,
                                                        bool running) {
  ASSIGN_OR_RETURN(const StudyRow study, coordinator::FindStudy(store, name));
  if (study.state == coordinator::StudyState::kDone) {
    return absl::FailedPreconditionError(
        running ? absl::StrCat("study '", name,
                               "' is done (ristretto study "
                               "best ",
                               name, ")")
                : absl::StrCat("study '", name, "' is already done"));
  }
  const coordinator::StudyState wanted =
      running ? coordinator::StudyState::kRunning
              : coordinator::StudyState::kStopped;
  if (study.state != wanted) {
    RETURN_IF_ERROR(store.SetStudyState(study.id, wanted));
  }
  return study.state;
}

absl::StatusOr<std::map<int64_t, coordinator::LockboxRow>> LockboxByTrial(
    Store& store, int64_t study_id) {
  ASSIGN_OR_RETURN(std::vector<coordinator::LockboxRow> rows,
                   store.ListLockbox(study_id));
  std::map<int64_t, coordinator::LockboxRow> out;
  for (coordinator::LockboxRow& r : rows) {
    const int64_t id = r.trial_id;
    out[id] = std::move(r);
  }
  return out;
}

namespace {

// The first row of the trial's lockbox as an ISO-8601 UTC time (the --from
// of a backtest that replays it) and, when rows follow it, the end (--to);
// nullopt when the final run's options or the dataset cannot be read.
std::optional<std::pair<std::string, std::string>> LockboxTimeRange(
    Store& store, const StudyRow& study,
    const std::vector<coordinator::RunRow>& runs) {
  std::optional<learner::TrainerOptions> options;
  for (const coordinator::RunRow& run : runs) {
    if (!coordinator::IsFinalFold(run.fold)) continue;
    absl::StatusOr<learner::TrainerOptions> o =
        learner::TrainerOptionsFromConfigJson(run.config_json);
    if (o.ok() && !o->validation_domains.empty()) options = *std::move(o);
    break;
  }
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(study.config_text);
  if (!options.has_value() || !config.ok()) return std::nullopt;
  absl::StatusOr<env::Dataset> dataset = absl::InternalError("no dataset");
  if (config->dataset.synthetic) {
    dataset = env::GenerateSyntheticDataset(
        coordinator::SyntheticOptions(config->dataset));
  } else if (absl::StatusOr<DatasetRow> row =
                 store.GetDataset(config->dataset.id);
             row.ok()) {
    dataset = env::ReadDataset(row->path);
  }
  if (!dataset.ok()) return std::nullopt;
  const int64_t begin = options->validation_domains.front().begin;
  const int64_t end = options->validation_domains.back().end;
  const auto rows = static_cast<int64_t>(dataset->timestamps.size());
  if (begin < 0 || begin >= rows || end > rows) return std::nullopt;
  return std::make_pair(
      env::FormatTimestamp(dataset->timestamps[static_cast<size_t>(begin)]),
      end < rows
          ? env::FormatTimestamp(dataset->timestamps[static_cast<size_t>(end)])
          : std::string());
}

// "policy of trial N (final run[, refit r], PATH)", for export errors.
std::string PolicyContext(int64_t trial_number, int refit, size_t policies,
                          const ArtifactRow& policy) {
  return absl::StrCat(
      "policy of trial ", trial_number, " (final run",
      policies > 1 ? absl::StrCat(", refit ", refit) : std::string(), ", ",
      policy.path, ")");
}

// Copies a recorded policy (a directory holding contract.json and
// policy.pt, or one file) into directory `to` and checks that the copies
// hash to what was recorded.
absl::Status CopyRecordedPolicy(const ArtifactRow& policy,
                                const std::string& context,
                                const fs::path& to) {
  const std::string recorded = absl::AsciiStrToLower(policy.sha256);
  const fs::path source(policy.path);
  const bool is_directory = fs::is_directory(source);
  const std::vector<std::string> names =
      is_directory ? std::vector<std::string>{"contract.json", "policy.pt"}
                   : std::vector<std::string>{source.filename().string()};
  RETURN_IF_ERROR(CreateDirectories(to));
  Sha256 copied;
  for (const std::string& name : names) {
    const fs::path copy = to / name;
    RETURN_IF_ERROR(CopyFile(is_directory ? source / name : source, copy));
    RETURN_IF_ERROR(HashFile(copy.string(), &copied));
  }
  const std::string copied_hex = Sha256::ToHex(copied.Finish());
  if (copied_hex != recorded) {
    return absl::DataLossError(absl::StrCat(
        context, ": the files changed while being copied (sha256 ", copied_hex,
        ", recorded ", recorded, "); nothing exported"));
  }
  return absl::OkStatus();
}

// evaluation.json of an export: the study, the trial and its CV score, the
// statistics, the lockbox numbers `r`, the bars the lockbox scored (`range`,
// so that `ristretto backtest DIR --dataset FILE --from F [--to T]` replays
// exactly them) and the verdict.
std::string ExportMetadata(
    const StudyRow& study, const TrialRow& best,
    const coordinator::StudyStatistics& stats, const coordinator::LockboxRow& r,
    const std::optional<std::pair<std::string, std::string>>& range) {
  std::string meta = absl::StrCat(
      "{\"study\":\"", study.name, "\",\"trial\":", best.number,
      ",\"cv_score\":", absl::StrFormat("%.17g", *best.score),
      ",\"statistics\":", coordinator::StudyStatisticsToJson(stats));
  {
    absl::StrAppend(
        &meta, ",\"lockbox\":{",
        absl::StrFormat(
            "\"bars\":%d,\"sharpe\":%.17g,\"sharpe_se\":%.17g,"
            "\"sortino\":%.17g,\"total_return\":%.17g,"
            "\"max_drawdown\":%.17g,\"turnover\":%.17g,\"fees\":%.17g,"
            "\"trades\":%d,\"exposure\":%.17g,\"env_steps\":%d,"
            "\"buy_and_hold_sharpe\":%.17g,\"buy_and_hold_return\":%.17g,"
            "\"cash_sharpe\":0,\"random_seeds\":%d,"
            "\"random_sharpe_mean\":%.17g,\"random_sharpe_std\":%.17g",
            r.bars, r.policy.sharpe, r.sharpe_se, r.policy.sortino,
            r.policy.total_return, r.policy.max_drawdown, r.policy.turnover,
            r.policy.fees, r.policy.trades, r.policy.exposure,
            r.policy.env_steps, r.bh_sharpe, r.bh_return, r.random_seeds,
            r.random_sharpe_mean, r.random_sharpe_std),
        absl::StrFormat(",\"refits\":%d", r.refits), "}");
  }
  // The bars the lockbox scored, so that `ristretto backtest DIR --dataset
  // FILE --from F [--to T]` replays exactly them.
  if (range.has_value()) {
    absl::StrAppend(&meta, ",\"lockbox_from\":\"", range->first, "\"");
    if (!range->second.empty()) {
      absl::StrAppend(&meta, ",\"lockbox_to\":\"", range->second, "\"");
    }
  }
  absl::StrAppend(&meta, ",\"verdict\":\"",
                  absl::StrReplaceAll(stats.verdict, {{"\"", "'"}}),
                  "\",\"edge\":", stats.edge ? "true" : "false", "}\n");
  return meta;
}

// Moves a whole staged export into `dir`: first every policy of an earlier
// export there (another study, other refits) is removed, so none is left
// beside this one's; evaluation.json last (a directory with one is
// complete); then the empty staging directory.
absl::Status ReplaceExport(const fs::path& staging, const fs::path& dir) {
  {
    std::error_code ec;
    for (const char* name : {"policy.pt", "contract.json", "evaluation.json"}) {
      fs::remove(dir / name, ec);
    }
    std::vector<fs::path> stale;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && name.rfind(ops::kRefitDirPrefix, 0) == 0) {
        stale.push_back(entry.path());
      }
    }
    for (const fs::path& p : stale) {
      fs::remove_all(p, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot remove the earlier export's ", p.string(),
                         ": ", ec.message()));
      }
    }
  }
  std::vector<fs::path> entries;
  {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(staging, ec)) {
      if (entry.path().filename() != "evaluation.json") {
        entries.push_back(entry.path());
      }
    }
  }
  entries.push_back(staging / "evaluation.json");
  for (const fs::path& from : entries) {
    RETURN_IF_ERROR(Rename(from, dir / from.filename()));
  }
  {
    std::error_code ec;
    fs::remove(staging, ec);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ExportBest(Store& store,
                                       const std::string& study_name,
                                       const std::string& out_dir) {
  ASSIGN_OR_RETURN(StudyRow study, coordinator::FindStudy(store, study_name));
  ASSIGN_OR_RETURN(std::vector<TrialRow> trials, store.ListTrials(study.id));
  const std::optional<TrialRow> best = BestTrial(trials);
  if (!best.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("study '", study_name,
                     "' has no complete trial yet: nothing to export"));
  }
  ASSIGN_OR_RETURN(std::vector<ArtifactRow> artifacts,
                   store.ListArtifacts(best->id));
  // Exactly the policy the lockbox judged: the trial's final run, or with
  // several refits every one of them (the lockbox judged capital split
  // equally among them), by refit.
  std::map<int, ArtifactRow> policies;
  int final_runs = 0;
  ASSIGN_OR_RETURN(const std::vector<coordinator::RunRow> runs,
                   store.ListRuns(best->id));
  for (const coordinator::RunRow& run : runs) {
    if (coordinator::IsFinalFold(run.fold)) ++final_runs;
  }
  for (const ArtifactRow& a : artifacts) {
    if (a.kind != "policy") continue;
    ASSIGN_OR_RETURN(coordinator::RunRow run, store.GetRun(a.run_id));
    if (coordinator::IsFinalFold(run.fold)) {
      policies[coordinator::RefitOfFold(run.fold)] = a;
    }
  }
  if (policies.empty() ||
      static_cast<int>(policies.size()) < std::max(final_runs, 1)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "trial ", best->number, " of study '", study_name,
        "' (the best) has no lockbox-evaluated policy yet (its final run",
        final_runs > 1 ? absl::StrCat("s (", policies.size(), " of ",
                                      final_runs, " refits done)")
                       : std::string(),
        " has not finished or failed): nothing exported"));
  }
  // Exactly what the lockbox judged: a trial whose lockbox result is not
  // recorded yet (a refit still to come) has nothing to export.
  ASSIGN_OR_RETURN(const auto lockbox, LockboxByTrial(store, study.id));
  const auto l = lockbox.find(best->id);
  if (l == lockbox.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "trial ", best->number, " of study '", study_name,
        "' (the best) has no lockbox result yet (", policies.size(),
        " final polic", policies.size() == 1 ? "y" : "ies",
        " done; the result is recorded when every refit is): nothing "
        "exported"));
  }
  if (std::max(l->second.refits, 1) != static_cast<int>(policies.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "trial ", best->number, " of study '", study_name,
        "' (the best): its lockbox result combines ",
        std::max(l->second.refits, 1), " refits but ", policies.size(),
        " final policies are recorded: nothing exported"));
  }
  // The recorded hashes first: a policy changed since its run finished
  // stops the export before anything in the directory is touched.
  for (const auto& [refit, policy] : policies) {
    ASSIGN_OR_RETURN(const std::string found, ArtifactSha256(policy.path));
    const std::string recorded = absl::AsciiStrToLower(policy.sha256);
    if (found != recorded) {
      return absl::DataLossError(absl::StrCat(
          PolicyContext(best->number, refit, policies.size(), policy),
          ": sha256 mismatch: recorded ", recorded, ", found ", found,
          " (the files changed after the run finished); nothing exported"));
    }
  }
  // The policy's metadata: the verdict of the study and its lockbox
  // numbers (evaluation.json beside policy.pt).
  ASSIGN_OR_RETURN(const coordinator::StudyStatistics stats,
                   coordinator::LoadOrComputeStudyResult(store, study));
  const std::string meta = ExportMetadata(study, *best, stats, l->second,
                                          LockboxTimeRange(store, study, runs));
  // Everything is written to a private staging directory beside the
  // export and moved into place only when all of it is there: a failed
  // export leaves an earlier one as it was, never a part of this one (a
  // backtest of the directory would play whatever policies it holds).
  const fs::path dir(out_dir);
  RETURN_IF_ERROR(CreateDirectories(dir));
  const fs::path staging = dir / absl::StrCat(".export-", getpid());
  {
    std::error_code ec;
    fs::remove_all(staging, ec);
  }
  auto stage = [&]() -> absl::Status {
    RETURN_IF_ERROR(CreateDirectories(staging));
    for (const auto& [refit, policy] : policies) {
      RETURN_IF_ERROR(CopyRecordedPolicy(
          policy, PolicyContext(best->number, refit, policies.size(), policy),
          policies.size() == 1
              ? staging
              : staging / absl::StrCat(ops::kRefitDirPrefix, refit)));
    }
    return WriteFileDurably((staging / "evaluation.json").string(), meta);
  };
  if (absl::Status staged = stage(); !staged.ok()) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    return staged;
  }
  RETURN_IF_ERROR(ReplaceExport(staging, dir));
  return out_dir;
}

}  // namespace ristretto::ops
