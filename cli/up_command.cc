#include "cli/up_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/study_commands.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "coordinator/core/study_config.h"
#include "coordinator/store/pg_cluster.h"
#include "coordinator/store/store.h"

namespace ristretto::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::atomic<bool> g_stop{false};

void OnSignal(int /*sig*/) { g_stop.store(true); }

// A sibling binary: next to this one, in the build tree's folders, or on
// $PATH.
absl::StatusOr<std::string> FindBinary(const std::string& name,
                                       const std::string& bin_dir) {
  std::vector<fs::path> candidates;
  if (!bin_dir.empty()) candidates.push_back(fs::path(bin_dir) / name);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = self.parent_path();
    candidates.push_back(dir / name);
    for (const char* sub : {"coordinator/service", "learner", "actor"}) {
      candidates.push_back(dir.parent_path() / sub / name);
    }
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      const size_t end = p.find(':', start);
      const std::string part =
          p.substr(start, end == std::string::npos ? end : end - start);
      if (!part.empty()) candidates.push_back(fs::path(part) / name);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  for (const fs::path& c : candidates) {
    if (fs::exists(c, ec) && access(c.c_str(), X_OK) == 0) return c.string();
  }
  return absl::NotFoundError(
      absl::StrCat("cannot find the ", name,
                   " binary (build it, put it on PATH or pass --bin-dir)"));
}

// Waits for "listening on HOST:PORT" in the process log.
absl::StatusOr<std::string> WaitListening(Subprocess& p,
                                          const std::string& what) {
  if (!p.WaitForLog("listening on ", 60s)) {
    return absl::UnavailableError(absl::StrCat(
        what, " did not start; its log (", p.log_path(), "):\n", p.Log()));
  }
  std::smatch m;
  const std::string log = p.Log();
  if (!std::regex_search(log, m, std::regex("listening on (\\S+)"))) {
    return absl::InternalError(absl::StrCat(what, ": no address in its log"));
  }
  return m[1].str();
}

// SIGTERM, then SIGKILL after `grace`.
void StopProcess(Subprocess* p, std::chrono::seconds grace,
                 bool signalled = false) {
  if (p == nullptr || !p->running()) return;
  if (!signalled) p->Signal(SIGTERM);
  if (!p->Wait(grace).has_value()) {
    std::fprintf(stderr, "up: %s did not stop in %llds; killing it\n",
                 p->log_path().c_str(), static_cast<long long>(grace.count()));
    p->Signal(SIGKILL);
    p->Wait(10s);
  }
}

absl::Status Up(const Args& args) {
  ASSIGN_OR_RETURN(std::string study_file,
                   args.String("study", "deploy/studies/small.yaml"));
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(study_file));
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(text);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(study_file, ": ", config.status().message()));
  }
  ASSIGN_OR_RETURN(std::string data_dir,
                   args.String("data-dir", "ristretto-data"));
  std::error_code ec;
  fs::create_directories(fs::path(data_dir) / "logs", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", data_dir, ": ", ec.message()));
  }
  data_dir = fs::absolute(data_dir).string();
  ASSIGN_OR_RETURN(int64_t num_actors, args.Int("actors", 2));
  ASSIGN_OR_RETURN(int64_t envs, args.Int("envs", 16));
  ASSIGN_OR_RETURN(int64_t slots, args.Int("slots", config->concurrency));
  ASSIGN_OR_RETURN(std::string bin_dir, args.String("bin-dir", ""));
  ASSIGN_OR_RETURN(std::string export_dir,
                   args.String("export", data_dir + "/best-policy"));
  ASSIGN_OR_RETURN(std::string coordinator_bin,
                   FindBinary("ristretto-coordinator", bin_dir));
  ASSIGN_OR_RETURN(std::string learner_bin,
                   FindBinary("ristretto-learner", bin_dir));
  ASSIGN_OR_RETURN(std::string actor_bin,
                   FindBinary("ristretto-actor", bin_dir));

  std::printf("up: starting PostgreSQL in %s/pg\n", data_dir.c_str());
  std::fflush(stdout);
  coordinator::PgClusterOptions pg_options;
  pg_options.data_dir = data_dir + "/pg";
  ASSIGN_OR_RETURN(std::unique_ptr<coordinator::PgCluster> pg,
                   coordinator::PgCluster::Start(pg_options));
  ASSIGN_OR_RETURN(std::unique_ptr<coordinator::Store> store,
                   ConnectStore(pg->dsn()));
  absl::StatusOr<coordinator::StudyRow> study = store->GetStudy(config->name);
  if (study.ok()) {
    if (study->config_text != text) {
      return absl::AlreadyExistsError(absl::StrCat(
          "study ", config->name, " already exists in ", data_dir,
          " with another file; rename the study or use another --data-dir"));
    }
    std::printf("up: resuming study %s (%s)\n", config->name.c_str(),
                study->state.c_str());
  } else if (study.status().code() == absl::StatusCode::kNotFound) {
    ASSIGN_OR_RETURN(study, store->CreateStudy(config->name, text));
    std::printf("up: created study %s from %s\n", config->name.c_str(),
                study_file.c_str());
  } else {
    return study.status();
  }
  if (study->state != coordinator::kStudyDone) {
    RETURN_IF_ERROR(
        store->SetStudyState(study->id, coordinator::kStudyRunning));
  }

  const std::string logs = data_dir + "/logs";
  Subprocess coordinator_process({coordinator_bin, "--db", pg->dsn(), "--port",
                                  "0", "--data-dir", data_dir + "/coordinator"},
                                 logs + "/coordinator.log");
  ASSIGN_OR_RETURN(std::string coordinator_address,
                   WaitListening(coordinator_process, "the coordinator"));
  Subprocess learner_process(
      {learner_bin, "--coordinator", coordinator_address, "--port", "0",
       "--slots", absl::StrCat(slots), "--run-dir", data_dir + "/learner"},
      logs + "/learner.log");
  ASSIGN_OR_RETURN(std::string learner_address,
                   WaitListening(learner_process, "the learner"));
  std::vector<std::unique_ptr<Subprocess>> actors;
  for (int64_t i = 0; i < num_actors; ++i) {
    actors.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{actor_bin, "--learner", learner_address,
                                 "--envs", absl::StrCat(envs), "--actor-id",
                                 absl::StrCat("actor-", i), "--cache-dir",
                                 data_dir + "/actor-cache", "--seed",
                                 absl::StrCat(i + 1)},
        absl::StrCat(logs, "/actor-", i, ".log")));
  }
  std::printf(
      "up: coordinator %s, learner %s (%lld slots), %lld actors × %lld envs; "
      "logs in %s\n",
      coordinator_address.c_str(), learner_address.c_str(),
      static_cast<long long>(slots), static_cast<long long>(num_actors),
      static_cast<long long>(envs), logs.c_str());
  std::fflush(stdout);

  auto crashed = [&]() -> std::string {
    if (!coordinator_process.running()) return "the coordinator";
    if (!learner_process.running()) return "the learner";
    return "";
  };
  absl::Status waited = WaitForStudy(
      *store, config->name, [&] { return g_stop.load() || !crashed().empty(); },
      stdout);
  const std::string died = crashed();

  std::printf("up: shutting down\n");
  std::fflush(stdout);
  for (auto& a : actors) a->Signal(SIGTERM);  // all at once, then wait
  for (auto& a : actors) StopProcess(a.get(), 15s, /*signalled=*/true);
  StopProcess(&learner_process, 60s);
  StopProcess(&coordinator_process, 15s);
  if (!died.empty()) {
    return absl::InternalError(
        absl::StrCat(died, " exited early; see ", logs, " (",
                     died == "the learner" ? learner_process.Log()
                                           : coordinator_process.Log(),
                     ")"));
  }
  RETURN_IF_ERROR(waited);
  if (!g_stop.load()) {
    std::printf("\n");
    RETURN_IF_ERROR(PrintLeaderboard(*store, config->name, 10, stdout));
    absl::StatusOr<std::string> exported =
        ExportBest(*store, config->name, export_dir);
    if (exported.ok()) {
      std::printf(
          "up: best policy exported to %s (policy.pt, contract.json, "
          "evaluation.json: verdict and lockbox numbers)\n",
          exported->c_str());
    } else {
      std::printf("up: no policy exported: %s\n",
                  std::string(exported.status().message()).c_str());
    }
  } else {
    std::printf("up: interrupted; run the same command again to resume\n");
  }
  store.reset();
  return pg->Stop();
}

}  // namespace

int RunUpCommand(int argc, char** argv, int first) {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  absl::StatusOr<Args> args = Args::Parse(argc, argv, first, {});
  absl::Status s = args.status();
  if (s.ok()) {
    s = args->CheckKnown(
        {"study", "data-dir", "actors", "envs", "slots", "bin-dir", "export"});
  }
  if (s.ok()) s = Up(*args);
  if (!s.ok()) {
    std::fprintf(stderr, "ristretto up: %s\n",
                 std::string(s.message()).c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ristretto::cli
