#include "cli/study_commands.h"

#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "cli/study_views.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "coordinator/core/study_config.h"
#include "coordinator/store/states.h"
#include "coordinator/store/store.h"
#include "ops/study.h"
#include "report/study_report_store.h"

ABSL_FLAG(std::string, name, "",
          "the study's name (default: the study file's `name:`)");
ABSL_FLAG(bool, wait, false,
          "wait for the study, printing its progress, then print the "
          "leaderboard (Ctrl-C stops waiting, not the study)");

namespace ristretto::cli {
namespace {

using coordinator::Store;
using coordinator::StudyRow;

constexpr char kStudyUsage[] =
    "usage: ristretto study <command> [--db DSN]\n"
    "  create FILE [--name NAME]   validate a study file and store it\n"
    "  start NAME [--wait]         ask the coordinator to run it\n"
    "  stop NAME                   ask the coordinator to stop it\n"
    "  ls                          all studies\n"
    "  show NAME                   settings and trials\n"
    "  best NAME                   the best complete trial\n"
    "  export NAME --out DIR       copy the best trial's policy to DIR\n"
    "  report NAME --out DIR       write DIR/report.html: history, "
    "importance,\n"
    "                              folds, lockbox, statistics (offline HTML)\n"
    "The database is --db DSN or $RISTRETTO_DB (libpq connection string).\n"
    "ristretto study COMMAND --help lists a command's flags.\n";

// The command line of `study VERB`, std::nullopt for an unknown verb.
std::optional<Command> StudyCommand(const std::string& verb) {
  auto db_and = [](FlagFilter more) {
    return AnyOf({FlagsOf(FLAGS_db), std::move(more)});
  };
  if (verb == "create") {
    return Command{"study create",
                   "usage: ristretto study create FILE [--name NAME] "
                   "[--db DSN]\n"
                   "Validates a study file and stores it (state: created).\n",
                   db_and(FlagsOf(FLAGS_name)), 1};
  }
  if (verb == "start") {
    return Command{"study start",
                   "usage: ristretto study start NAME [--wait] [--db DSN]\n"
                   "Asks the coordinator to run the study.\n",
                   db_and(FlagsOf(FLAGS_wait)), 1};
  }
  if (verb == "export" || verb == "report") {
    return Command{
        absl::StrCat("study ", verb),
        verb == "export"
            ? "usage: ristretto study export NAME --out DIR [--db DSN]\n"
              "Copies the policy of the best trial's final run to DIR.\n"
            : "usage: ristretto study report NAME --out DIR [--db DSN]\n"
              "Writes DIR/report.html: history, importance, folds, lockbox,\n"
              "statistics (offline HTML).\n",
        db_and(FlagsOf(FLAGS_out)), 1};
  }
  const std::map<std::string, std::string> only_db = {
      {"stop", "stop NAME [--db DSN]\nAsks the coordinator to stop the study."},
      {"ls", "ls [--db DSN]\nLists every study."},
      {"show", "show NAME [--db DSN]\nPrints a study's settings and trials."},
      {"best",
       "best NAME [--db DSN]\nPrints the best complete trial: params, folds, "
       "lockbox, artifacts."}};
  auto it = only_db.find(verb);
  if (it == only_db.end()) return std::nullopt;
  return Command{absl::StrCat("study ", verb),
                 absl::StrCat("usage: ristretto study ", it->second, "\n"),
                 FlagsOf(FLAGS_db), verb == "ls" ? size_t{0} : size_t{1}};
}

// ---- study commands --------------------------------------------------------

absl::Status StudyCreate(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study create FILE [--name NAME] [--db DSN]");
  }
  const std::string& file = parsed.positional[0];
  absl::StatusOr<std::string> text = coordinator::ReadStudyFile(file);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  ASSIGN_OR_RETURN(const ops::StudyFile checked,
                   ops::CheckStudyFile(file, *text, absl::GetFlag(FLAGS_name)));
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  ASSIGN_OR_RETURN(const StudyRow study,
                   ops::CreateStudy(*store, file, checked));
  std::printf("created study %s (id %lld, state %s)\n", study.name.c_str(),
              static_cast<long long>(study.id),
              std::string(coordinator::ToString(study.state)).c_str());
  std::printf("start it with: ristretto study start %s\n", study.name.c_str());
  return absl::OkStatus();
}

// Set by SIGINT while `study start --wait` waits.
std::atomic<bool> interrupted{false};

extern "C" void OnInterrupt(int /*signal*/) { interrupted.store(true); }

absl::Status StudyStart(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study start NAME [--wait] [--db DSN]");
  }
  const std::string& name = parsed.positional[0];
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  ASSIGN_OR_RETURN(const coordinator::StudyState was,
                   ops::SetStudyRunning(*store, name, /*running=*/true));
  if (was == coordinator::StudyState::kRunning) {
    std::printf("study %s is already running\n", name.c_str());
  } else {
    std::printf("study %s: %s -> running (the coordinator picks it up)\n",
                name.c_str(), std::string(coordinator::ToString(was)).c_str());
  }
  if (!absl::GetFlag(FLAGS_wait)) return absl::OkStatus();
  std::fflush(stdout);
  interrupted.store(false);
  std::signal(SIGINT, OnInterrupt);
  const absl::Status waited = WaitForStudy(
      *store, name, [] { return interrupted.load(); }, stdout);
  std::signal(SIGINT, SIG_DFL);
  RETURN_IF_ERROR(waited);
  std::printf("\n");
  return PrintLeaderboard(*store, name, 10, stdout);
}

absl::Status StudyStop(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study stop NAME [--db DSN]");
  }
  const std::string& name = parsed.positional[0];
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  ASSIGN_OR_RETURN(const coordinator::StudyState was,
                   ops::SetStudyRunning(*store, name, /*running=*/false));
  if (was == coordinator::StudyState::kStopped) {
    std::printf("study %s is already stopped\n", name.c_str());
    return absl::OkStatus();
  }
  std::printf(
      "study %s: %s -> stopped (running trials finish their current step; "
      "resume with: ristretto study start %s)\n",
      name.c_str(), std::string(coordinator::ToString(was)).c_str(),
      name.c_str());
  return absl::OkStatus();
}

absl::Status StudyLs() {
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  return PrintStudies(store.get());
}

absl::Status StudyShow(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study show NAME [--db DSN]");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  return PrintStudy(store.get(), parsed.positional[0]);
}

absl::Status StudyBest(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study best NAME [--db DSN]");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  return PrintBestTrial(store.get(), parsed.positional[0]);
}

absl::Status StudyExport(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study export NAME --out DIR [--db DSN]");
  }
  const std::string& name = parsed.positional[0];
  ASSIGN_OR_RETURN(const std::string out_dir, Required(FLAGS_out));
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  ASSIGN_OR_RETURN(std::string exported,
                   ops::ExportBest(*store, name, out_dir));
  std::printf("exported the best policy of study %s to %s\n", name.c_str(),
              exported.c_str());
  return absl::OkStatus();
}

absl::Status StudyReport(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto study report NAME --out DIR [--db DSN]");
  }
  const std::string& name = parsed.positional[0];
  ASSIGN_OR_RETURN(const std::string out_dir, Required(FLAGS_out));
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore());
  ASSIGN_OR_RETURN(std::string path,
                   report::WriteStudyReport(*store, name, out_dir));
  std::printf("wrote the report of study %s to %s\n", name.c_str(),
              path.c_str());
  return absl::OkStatus();
}

}  // namespace

int RunStudyCommand(int argc, char** argv, int first) {
  std::string verb;
  if (const std::optional<int> exit_code =
          GroupVerb(argc, argv, first, kStudyUsage, &verb)) {
    return *exit_code;
  }
  const std::optional<Command> command = StudyCommand(verb);
  if (!command.has_value()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "unknown study command '", EscapeForMessage(verb),
        "' (create, start, stop, ls, show, best, export, report)")));
  }
  ParsedCommandLine parsed;
  if (const std::optional<int> exit_code =
          ParseCommand(*command, argc, argv, first + 1, &parsed)) {
    return *exit_code;
  }
  absl::Status status;
  if (verb == "create") {
    status = StudyCreate(parsed);
  } else if (verb == "start") {
    status = StudyStart(parsed);
  } else if (verb == "stop") {
    status = StudyStop(parsed);
  } else if (verb == "ls") {
    status = StudyLs();
  } else if (verb == "show") {
    status = StudyShow(parsed);
  } else if (verb == "best") {
    status = StudyBest(parsed);
  } else if (verb == "export") {
    status = StudyExport(parsed);
  } else {
    status = StudyReport(parsed);
  }
  return status.ok() ? 0 : Fail(status);
}

}  // namespace ristretto::cli
