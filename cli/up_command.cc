#include "cli/up_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "cli/dataset_file_commands.h"
#include "cli/study_views.h"
#include "common/status_macros.h"
#include "coordinator/core/study_config.h"
#include "env/dataset.h"
#include "ops/export_layout.h"
#include "ops/local_stack.h"
#include "ops/study.h"
#include "report/study_report_store.h"

// Besides these, `up` reads --study, --data-dir, --export, --dataset
// (cli/common_flags.cc) and the CSV import flags (dataset_file_commands.h).
ABSL_FLAG(int64_t, actors, 2, "actor processes");
ABSL_FLAG(std::optional<int64_t>, envs, std::nullopt,
          "env copies per actor (default: sized to the study so that chunks "
          "reach the learner within max_policy_lag, at most 16)");
ABSL_FLAG(std::optional<int64_t>, slots, std::nullopt,
          "runs the learner trains at once (default: the study's "
          "concurrency)");
ABSL_FLAG(std::string, bin_dir, "",
          "where ristretto-coordinator, -learner and -actor are (default: "
          "next to this binary, the build tree, $PATH)");
ABSL_FLAG(bool, insecure, false,
          "plaintext gRPC between up's processes, for debugging only (by "
          "default they talk mutual TLS with certificates made for the run)");

namespace ristretto::cli {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop{false};

void OnSignal(int /*sig*/) { g_stop.store(true); }

// --csv-dir and --dataset exclude each other; import flags need --csv-dir
// (given on the command line `parsed`, even with an empty value).
absl::Status CheckDataFlags(const ParsedCommandLine& parsed) {
  const bool csv = !absl::GetFlag(FLAGS_csv_dir).empty();
  if (csv && !absl::GetFlag(FLAGS_dataset).empty()) {
    return absl::InvalidArgumentError(
        "give --csv-dir DIR or --dataset FILE, not both");
  }
  if (!csv) return CheckNoCsvImportFlags(parsed);
  return absl::OkStatus();
}

// The dataset given with --csv-dir (imported as `dataset import` does) or
// --dataset (a dataset file); null when neither was given.
absl::StatusOr<std::optional<ops::GivenData>> LoadGivenData(
    const std::string& data_dir) {
  const bool csv = !absl::GetFlag(FLAGS_csv_dir).empty();
  if (!csv && absl::GetFlag(FLAGS_dataset).empty()) {
    return std::optional<ops::GivenData>();
  }
  ops::GivenData given;
  if (csv) {
    ASSIGN_OR_RETURN(env::CsvImportOptions options,
                     CsvImportOptionsFromFlags());
    ASSIGN_OR_RETURN(const env::FeatureSet feature_set, FeatureSetFromFlags());
    std::printf("up: importing %s (as `ristretto dataset import`)\n",
                options.csv_dir.c_str());
    std::fflush(stdout);
    // A hidden name of this process; registering copies it to
    // datasets/<id>.rds and it is removed.
    const fs::path dir = fs::path(data_dir) / "datasets";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
    }
    given.file = (dir / absl::StrCat(".import-", getpid(), ".rds")).string();
    given.temporary = true;
    ASSIGN_OR_RETURN(given.id,
                     ImportCsvToDatasetFile(options, feature_set, given.file));
  } else {
    given.file = absl::GetFlag(FLAGS_dataset);
  }
  absl::StatusOr<env::Dataset> dataset = env::ReadDataset(given.file);
  if (!dataset.ok()) {
    if (given.temporary) std::remove(given.file.c_str());
    return absl::Status(
        dataset.status().code(),
        absl::StrCat(given.file, ": ", dataset.status().message()));
  }
  given.dataset = *std::move(dataset);
  given.id = given.dataset.ComputeId();
  return std::optional<ops::GivenData>(std::move(given));
}

// The best policy exported and the study report written next to it, each
// said on stdout (or why not).
void ExportAndReport(coordinator::Store& store, const std::string& study,
                     const std::string& export_dir) {
  absl::StatusOr<std::string> exported =
      ops::ExportBest(store, study, export_dir);
  if (exported.ok()) {
    std::error_code refit_ec;
    const bool refits = fs::is_directory(
        fs::path(*exported) / absl::StrCat(ops::kRefitDirPrefix, 0), refit_ec);
    std::printf(
        "up: best policy exported to %s (%s, evaluation.json: verdict and "
        "lockbox numbers)\n",
        exported->c_str(),
        refits ? "refit-0/, refit-1/, …: one policy.pt and contract.json "
                 "per refit, capital split equally among them"
               : "policy.pt, contract.json");
  } else {
    std::printf("up: no policy exported: %s\n",
                std::string(exported.status().message()).c_str());
  }
  // The study report (history, importance, folds, lockbox equity,
  // statistics and verdict) next to the exported policy.
  absl::StatusOr<std::string> report_path =
      report::WriteStudyReport(store, study, export_dir);
  if (report_path.ok()) {
    std::printf("up: study report written to %s\n", report_path->c_str());
  } else {
    std::printf("up: no study report: %s\n",
                std::string(report_path.status().message()).c_str());
  }
}

absl::Status Up(const ParsedCommandLine& parsed) {
  RETURN_IF_ERROR(CheckDataFlags(parsed));
  std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  if (data_dir.empty()) data_dir = "ristretto-data";
  std::error_code ec;
  fs::create_directories(fs::path(data_dir) / "logs", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", data_dir, ": ", ec.message()));
  }
  data_dir = fs::absolute(data_dir).string();
  // One `up` per data directory, checked before anything in it changes.
  ASSIGN_OR_RETURN(const int lock_fd, ops::LockDataDir(data_dir, stdout));
  absl::Cleanup unlock = [lock_fd] { close(lock_fd); };
  // Read the study file first: a missing one fails before a long import.
  std::string study_file = absl::GetFlag(FLAGS_study);
  std::string text;
  if (study_file.empty() && absl::GetFlag(FLAGS_csv_dir).empty() &&
      absl::GetFlag(FLAGS_dataset).empty()) {
    study_file = "deploy/studies/small.yaml";
  }
  if (!study_file.empty()) {
    ASSIGN_OR_RETURN(text, coordinator::ReadStudyFile(study_file));
  }
  ASSIGN_OR_RETURN(std::optional<ops::GivenData> given,
                   LoadGivenData(data_dir));
  absl::Cleanup remove_temporary = [&given] {
    if (given.has_value() && given->temporary) {
      std::remove(given->file.c_str());
    }
  };
  ASSIGN_OR_RETURN(const ops::UpStudy study,
                   ops::PrepareUpStudy(study_file, std::move(text), given,
                                       data_dir, stdout));
  const std::string& name = study.config.name;
  ops::LocalStackOptions options;
  options.data_dir = data_dir;
  options.actors = absl::GetFlag(FLAGS_actors);
  options.slots = absl::GetFlag(FLAGS_slots).value_or(study.config.concurrency);
  options.envs = absl::GetFlag(FLAGS_envs)
                     .value_or(ops::ActorEnvsForStudy(
                         study.config, options.actors, options.slots));
  options.bin_dir = absl::GetFlag(FLAGS_bin_dir);
  options.insecure = absl::GetFlag(FLAGS_insecure);
  std::string export_dir = absl::GetFlag(FLAGS_export);
  if (export_dir.empty()) export_dir = data_dir + "/best-policy";
  ASSIGN_OR_RETURN(std::unique_ptr<ops::LocalStack> stack,
                   ops::LocalStack::Start(options, stdout));
  RETURN_IF_ERROR(stack->OpenStudy(&given, study));
  RETURN_IF_ERROR(stack->StartProcesses());

  ops::StackExit died = ops::StackExit::kNone;
  absl::Status waited = WaitForStudy(
      stack->store(), name,
      [&] {
        if (g_stop.load()) return true;
        died = stack->CheckProcesses();
        return died != ops::StackExit::kNone;
      },
      stdout,
      [&] {
        return died == ops::StackExit::kNone
                   ? absl::StrCat("stopped waiting; study ", name,
                                  " is left running in its database (the "
                                  "same command resumes it)")
                   : absl::StrCat("stopped waiting: ", ops::StackExitText(died),
                                  " exited early");
      });
  stack->StopProcesses();
  RETURN_IF_ERROR(stack->ExitError(died));
  RETURN_IF_ERROR(waited);
  if (!g_stop.load()) {
    // The export and the report first: `up` ends with the leaderboard, the
    // statistics and the verdict line (README).
    ExportAndReport(stack->store(), name, export_dir);
    std::printf("\n");
    RETURN_IF_ERROR(PrintLeaderboard(stack->store(), name, 10, stdout));
  } else {
    std::printf("up: interrupted; run the same command again to resume\n");
  }
  return stack->StopDatabase();
}

}  // namespace

int RunUpCommand(int argc, char** argv, int first) {
  // Subprocess reaps the processes up starts: an inherited SIG_IGN would
  // make the kernel reap them and lose their exit statuses.
  signal(SIGCHLD, SIG_DFL);
  // A closed stdout (a pipe whose reader died) must not kill up before it
  // stops what it started: writes then fail with EPIPE instead.
  signal(SIGPIPE, SIG_IGN);
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  const Command command{
      "up",
      "usage: ristretto up [--study deploy/studies/small.yaml] [--data-dir "
      "DIR]\n"
      "           [--actors 2] [--envs N] [--slots N] [--export DIR] "
      "[--bin-dir DIR]\n"
      "           [--insecure]\n"
      "           [--csv-dir DIR --interval 5m [import flags] | --dataset "
      "FILE]\n"
      "A private PostgreSQL, the coordinator, a learner and --actors actors "
      "run the\nstudy to the end; prints the leaderboard and exports the "
      "best policy. With\n--csv-dir (imported as `dataset import`) or "
      "--dataset the study runs on that\ndata (`dataset: given`; without "
      "--study a built-in one). The processes\nauthenticate with fresh "
      "tokens (operators', learners', actors') and talk\nmutual TLS "
      "(certificates made per run in DATA-DIR/tls, one per process; "
      "--insecure:\nplaintext, "
      "for debugging). Ctrl-C stops everything in order; running `up`\n"
      "again resumes. A process that exits by itself is reported with the "
      "end of its\nlog; when it is the coordinator, the learner or the last "
      "actor, up stops the\nrest and exits 1.\n",
      AnyOf(
          {FlagsDefinedIn({"cli/up_command.cc"}), CsvImportFlags(),
           FlagsOf(FLAGS_study, FLAGS_data_dir, FLAGS_export, FLAGS_dataset)})};
  ParsedCommandLine parsed;
  if (const std::optional<int> exit_code =
          ParseCommand(command, argc, argv, first, &parsed)) {
    return *exit_code;
  }
  const absl::Status s = Up(parsed);
  return s.ok() ? 0 : Fail(s, "up");
}

}  // namespace ristretto::cli
