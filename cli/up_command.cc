#include "cli/up_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/backtest_command.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "cli/env_commands.h"
#include "cli/study_commands.h"
#include "common/atomic_file.h"
#include "common/auth.h"
#include "common/dev_certs.h"
#include "common/options_schema.h"
#include "common/secret_file.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "coordinator/core/data_study.h"
#include "coordinator/core/study_config.h"
#include "coordinator/store/pg_cluster.h"
#include "coordinator/store/store.h"
#include "env/dataset.h"
#include "report/study_report_store.h"

// Besides these, `up` reads --study, --data-dir, --export, --dataset
// (cli/common_flags.cc) and the CSV import flags (env_commands.h).
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
using namespace std::chrono_literals;

// The learner's default ingest queue (ristretto-learner --queue), which `up`
// does not change.
constexpr int64_t kLearnerQueueChunks = 2;
constexpr int64_t kMaxActorEnvs = 16;

// The smallest value a study can give a run option: fixed, else the search
// space's lowest, else the schema default.
double SmallestRunOption(const coordinator::StudyConfig& config,
                         const std::string& name) {
  for (const coordinator::ParamSpec& p : config.space) {
    if (p.name != name) continue;
    if (p.kind != coordinator::ParamKind::kCategorical) return p.low;
    double low = OptionDefault(name);
    bool first = true;
    for (const std::string& c : p.choices) {
      double v = 0;
      if (absl::SimpleAtod(c, &v) && (first || v < low)) low = v;
      first = false;
    }
    return low;
  }
  const auto fixed = config.fixed.find(name);
  double v = 0;
  if (fixed != config.fixed.end() && absl::SimpleAtod(fixed->second, &v)) {
    return v;
  }
  return OptionDefault(name);
}

}  // namespace

int64_t ActorEnvsForStudy(const coordinator::StudyConfig& config,
                          int64_t actors, int64_t slots) {
  // A run updates every num_envs × rollout_steps samples; an actor's chunk
  // is envs × rollout_steps steps. A chunk made now is trained behind the
  // learner's queue and the chunks of every actor of its run (the learner
  // spreads actors evenly over the runs), one version per update, so it
  // stays within max_policy_lag while (queue + actors per run) × envs ≤
  // (max_policy_lag − 1) × num_envs (rollout_steps cancels; the same bound
  // as RunHost::ActorCredits with one chunk of credit).
  const int64_t runs = std::max<int64_t>(1, std::min(slots, actors));
  const int64_t actors_per_run =
      (std::max<int64_t>(1, actors) + runs - 1) / runs;
  const double num_envs = SmallestRunOption(config, "num_envs");
  const double lag = SmallestRunOption(config, "max_policy_lag");
  const double fit =
      std::floor((lag - 1) * num_envs /
                 static_cast<double>(kLearnerQueueChunks + actors_per_run));
  return std::clamp<int64_t>(static_cast<int64_t>(fit), 1, kMaxActorEnvs);
}

namespace {

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

// A resumed `up` keeps the logs of the run before as NAME.log.1 (one
// generation): the processes truncate NAME.log when they start.
void KeepPreviousLogs(const std::string& dir) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".log" || !e.is_regular_file(ec)) continue;
    fs::path previous = e.path();
    previous += ".1";
    fs::rename(e.path(), previous, ec);
    if (ec) {
      std::fprintf(stderr, "up: cannot keep %s as %s: %s\n", e.path().c_str(),
                   previous.c_str(), ec.message().c_str());
    }
  }
}

// The last `count` lines of `text` (all of it if it has fewer).
std::string LastLines(const std::string& text, int count) {
  // From the final newline (or the end), step back over `count` newlines.
  size_t pos =
      !text.empty() && text.back() == '\n' ? text.size() - 1 : text.size();
  for (int n = 0; n < count; ++n) {
    if (pos == 0) return text;
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos + 1);
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

// Writes `text` to `path` through a hidden temporary name and a rename, so
// no partial file is ever left at `path`.
absl::Status WriteTextAtomically(const std::string& path,
                                 const std::string& text) {
  return WriteFileAtomically(path, text);
}

// The dataset given with --csv-dir (imported as `dataset import` does) or
// --dataset (a dataset file); null when neither was given. The file to
// register is `file`; `temporary` says whether `up` wrote it (and removes it
// once registered).
struct GivenData {
  env::Dataset dataset;
  std::string id;
  std::string file;
  bool temporary = false;
};

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

absl::StatusOr<std::optional<GivenData>> LoadGivenData(
    const std::string& data_dir) {
  const bool csv = !absl::GetFlag(FLAGS_csv_dir).empty();
  if (!csv && absl::GetFlag(FLAGS_dataset).empty()) {
    return std::optional<GivenData>();
  }
  GivenData given;
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
  return std::optional<GivenData>(std::move(given));
}

// `up`'s hold on its data directory: an exclusive flock on DATA_DIR/up.lock,
// with the holder's pid written in it for the message a second `up` gets.
// The descriptor is inherited by the processes `up` starts (not by
// PostgreSQL's tools, which close it), so the lock lasts until `up` and all
// of them are gone, however they end: after a kill -9 of `up` its
// processes get SIGTERM (their parent-death signal) and may still be
// writing checkpoints for seconds. A second `up` is refused while the
// holder lives; when the pid in the file is gone (only its processes hold
// the lock) it waits up to a minute for them to stop.
absl::StatusOr<int> LockDataDir(const std::string& data_dir) {
  const std::string path = data_dir + "/up.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  const auto holder = [fd] {
    char text[32] = {};
    const ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    return std::string(absl::StripAsciiWhitespace(
        absl::string_view(text, n > 0 ? static_cast<size_t>(n) : 0)));
  };
  const auto alive = [](const std::string& pid_text) {
    int pid = 0;
    return absl::SimpleAtoi(pid_text, &pid) && pid > 0 &&
           (kill(pid, 0) == 0 || errno == EPERM);
  };
  bool announced = false;
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    const std::string pid = holder();
    if (err != EWOULDBLOCK) {
      close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot lock ", path, ": ", std::strerror(err)));
    }
    if (alive(pid)) {
      close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          "another `ristretto up` (pid ", pid, ") is running on ", data_dir,
          "; stop it first (Ctrl-C, or kill that pid) or give another "
          "--data-dir"));
    }
    if (std::chrono::steady_clock::now() > give_up) {
      close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          "the processes of an earlier `ristretto up` (pid ",
          pid.empty() ? "unknown" : pid, ", gone) still run on ", data_dir,
          " after a minute; stop them (their command lines name ", data_dir,
          ") and run the same command again"));
    }
    if (!announced) {
      std::printf(
          "up: the processes of an earlier up (pid %s, gone) are still "
          "stopping on %s; waiting for them (at most a minute)\n",
          pid.empty() ? "unknown" : pid.c_str(), data_dir.c_str());
      std::fflush(stdout);
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                   static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message would lack it.
    std::fprintf(stderr, "up: cannot write its pid to %s: %s\n", path.c_str(),
                 std::strerror(errno));
  }
  return fd;
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
  ASSIGN_OR_RETURN(const int lock_fd, LockDataDir(data_dir));
  absl::Cleanup unlock = [lock_fd] { close(lock_fd); };
  // Read the study file first: a missing one fails before a long import.
  std::string study_file;
  std::string text;
  study_file = absl::GetFlag(FLAGS_study);
  if (study_file.empty() && absl::GetFlag(FLAGS_csv_dir).empty() &&
      absl::GetFlag(FLAGS_dataset).empty()) {
    study_file = "deploy/studies/small.yaml";
  }
  if (!study_file.empty()) {
    ASSIGN_OR_RETURN(text, coordinator::ReadStudyFile(study_file));
  }
  ASSIGN_OR_RETURN(std::optional<GivenData> given, LoadGivenData(data_dir));
  struct RemoveTemporary {
    const std::optional<GivenData>& given;
    ~RemoveTemporary() {
      if (given.has_value() && given->temporary) {
        std::remove(given->file.c_str());
      }
    }
  } remove_temporary{given};
  if (given.has_value()) {
    if (study_file.empty()) {
      ASSIGN_OR_RETURN(const coordinator::DataStudySizing sizing,
                       coordinator::SizeStudyForData(
                           given->dataset.num_rows(),
                           static_cast<int>(given->dataset.assets.size()),
                           given->dataset.interval_seconds));
      text = coordinator::DataStudyYaml(
          sizing,
          absl::StrCat("data-", given->dataset.ComputeId().substr(0, 12)));
      study_file = data_dir + "/default-study.yaml";
      RETURN_IF_ERROR(WriteTextAtomically(study_file, text));
      std::printf(
          "up: no --study: the built-in study for given data, %s; "
          "written to %s\n",
          coordinator::DataStudySizingText(sizing).c_str(), study_file.c_str());
    }
    absl::StatusOr<std::string> bound =
        coordinator::BindStudyDataset(text, given->id);
    if (!bound.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(study_file, ": ", bound.status().message()));
    }
    text = *std::move(bound);
  }
  absl::StatusOr<coordinator::StudyConfig> config =
      coordinator::ParseStudyConfig(text);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(study_file, ": ", config.status().message()));
  }
  if (given.has_value()) {
    // Whatever cannot work on these domains is refused before anything
    // starts (the scheduler would meet it only when sampling a trial).
    coordinator::DatasetInfo info;
    info.id = given->id;
    info.num_rows = given->dataset.num_rows();
    info.domains = given->dataset.domains;
    info.feature_names = given->dataset.feature_names;
    absl::Status fits = coordinator::CheckStudyFitsDataset(*config, info);
    if (!fits.ok()) {
      int64_t longest = 0;
      for (const env::Domain& d : info.domains) {
        longest = std::max(longest, d.size());
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "study ", config->name, " cannot run on dataset ",
          given->id.substr(0, 12), " (", info.num_rows, " rows in ",
          info.domains.size(), " domains, the longest ", longest,
          " rows): ", fits.message()));
    }
  }
  const int64_t num_actors = absl::GetFlag(FLAGS_actors);
  const int64_t slots =
      absl::GetFlag(FLAGS_slots).value_or(config->concurrency);
  const int64_t envs =
      absl::GetFlag(FLAGS_envs)
          .value_or(ActorEnvsForStudy(*config, num_actors, slots));
  const std::string bin_dir = absl::GetFlag(FLAGS_bin_dir);
  std::string export_dir = absl::GetFlag(FLAGS_export);
  if (export_dir.empty()) export_dir = data_dir + "/best-policy";
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
  // We hold the data directory: a server running there was left by an
  // `up` that died (kill -9) and is stopped before ours starts.
  pg_options.stop_stale_server = true;
  ASSIGN_OR_RETURN(std::unique_ptr<coordinator::PgCluster> pg,
                   coordinator::PgCluster::Start(pg_options));
  ASSIGN_OR_RETURN(std::unique_ptr<coordinator::Store> store,
                   ConnectStore(pg->dsn()));
  if (given.has_value()) {
    // As `dataset import --db --data-dir`: the coordinator serves it from
    // <data-dir>/datasets/<id>.rds.
    ASSIGN_OR_RETURN(coordinator::DatasetRow row,
                     RegisterDataset(*store, given->file, data_dir));
    std::printf("up: registered dataset %s (%s)\n", row.id.c_str(),
                row.path.c_str());
    if (given->temporary) {  // registering copied it
      std::remove(given->file.c_str());
      given->temporary = false;
    }
  }
  absl::StatusOr<coordinator::StudyRow> study = store->GetStudy(config->name);
  if (study.ok()) {
    if (study->config_text != text) {
      return absl::AlreadyExistsError(absl::StrCat(
          "study ", config->name, " already exists in ", data_dir,
          " with another file; rename the study or use another --data-dir"));
    }
    std::printf("up: resuming study %s (%s)\n", config->name.c_str(),
                std::string(coordinator::ToString(study->state)).c_str());
  } else if (study.status().code() == absl::StatusCode::kNotFound) {
    ASSIGN_OR_RETURN(study, store->CreateStudy(config->name, text));
    std::printf("up: created study %s from %s\n", config->name.c_str(),
                study_file.c_str());
  } else {
    return study.status();
  }
  if (study->state != coordinator::StudyState::kDone) {
    RETURN_IF_ERROR(
        store->SetStudyState(study->id, coordinator::StudyState::kRunning));
  }

  // Fresh tokens per run as mode-600 files, never in argv, where every
  // local user could read them (ps): the cluster token (the operators'),
  // which only the coordinator gets; the learners' token, which only
  // registers the learner; and the actors' token, which only finds the
  // learner (with a ticket for it). The private cluster's DSN carries no
  // password (PgCluster runs initdb -A trust), so --db shows only where the
  // server is.
  ASSIGN_OR_RETURN(const std::string token, GenerateToken());
  const std::string token_file = data_dir + "/token";
  RETURN_IF_ERROR(WriteSecretFile(token_file, token));
  ASSIGN_OR_RETURN(const std::string learner_token, GenerateToken());
  const std::string learner_token_file = data_dir + "/learner-token";
  RETURN_IF_ERROR(WriteSecretFile(learner_token_file, learner_token));
  ASSIGN_OR_RETURN(const std::string actor_token, GenerateToken());
  const std::string actor_token_file = data_dir + "/actor-token";
  RETURN_IF_ERROR(WriteSecretFile(actor_token_file, actor_token));
  // Mutual TLS between the processes, from a throw-away CA made for this
  // run in <data-dir>/tls (its key is never written): the coordinator and
  // the learner serve with server.pem and require client certificates; the
  // learner (towards the coordinator) and every actor present a client
  // certificate of their own that names them (urn:ristretto:learner:
  // learner-0, urn:ristretto:actor:actor-N), so the coordinator lets each
  // use only its own id: no actor can get tickets in another's name, no
  // learner registration but learner-0's is possible. Paths only in argv;
  // the keys are mode-600 files.
  const std::string learner_member_id = "learner-0";
  auto actor_id = [](int64_t i) { return absl::StrCat("actor-", i); };
  std::vector<std::string> server_tls;
  std::vector<std::string> coordinator_tls;
  std::vector<std::string> learner_client_tls;
  std::vector<std::vector<std::string>> actor_tls(
      static_cast<size_t>(num_actors));
  if (absl::GetFlag(FLAGS_insecure)) {
    std::fprintf(stderr,
                 "up: WARNING: --insecure: the processes talk plaintext gRPC "
                 "(token and data in clear on loopback); for debugging only\n");
  } else {
    std::vector<NamedClient> named = {
        {learner_member_id,
         auth::CertificateNameUri(auth::Role::kLearner, learner_member_id)}};
    for (int64_t i = 0; i < num_actors; ++i) {
      named.push_back({actor_id(i), auth::CertificateNameUri(auth::Role::kActor,
                                                             actor_id(i))});
    }
    ASSIGN_OR_RETURN(const DevCertificates certs,
                     MakeDevCertificates(data_dir + "/tls", {}, 30, named));
    server_tls = {"--tls-cert",     certs.server_cert, "--tls-key",
                  certs.server_key, "--tls-ca",        certs.ca_cert};
    // Every process presents a certificate naming its id: the coordinator
    // accepts no other for an actor or learner id.
    coordinator_tls = server_tls;
    coordinator_tls.push_back("--require-named-certificates");
    learner_client_tls = {"--coordinator-tls-cert", certs.named[0].cert,
                          "--coordinator-tls-key",  certs.named[0].key,
                          "--coordinator-tls-ca",   certs.ca_cert};
    for (size_t i = 0; i < actor_tls.size(); ++i) {
      actor_tls[i] = {"--tls-cert", certs.named[i + 1].cert,
                      "--tls-key",  certs.named[i + 1].key,
                      "--tls-ca",   certs.ca_cert};
    }
    std::printf(
        "up: mutual TLS with a fresh CA in %s/tls (a client certificate "
        "per process, naming it)\n",
        data_dir.c_str());
  }
  auto with = [](std::vector<std::string> argv,
                 std::initializer_list<const std::vector<std::string>*> more) {
    for (const std::vector<std::string>* m : more) {
      argv.insert(argv.end(), m->begin(), m->end());
    }
    return argv;
  };
  const std::string logs = data_dir + "/logs";
  KeepPreviousLogs(logs);
  Subprocess coordinator_process(
      with({coordinator_bin, "--db", pg->dsn(), "--port", "0", "--data-dir",
            data_dir + "/coordinator", "--token-file", token_file,
            "--actor-token-file", actor_token_file, "--learner-token-file",
            learner_token_file},
           {&coordinator_tls}),
      logs + "/coordinator.log");
  ASSIGN_OR_RETURN(std::string coordinator_address,
                   WaitListening(coordinator_process, "the coordinator"));
  Subprocess learner_process(
      with({learner_bin, "--coordinator", coordinator_address, "--port", "0",
            "--slots", absl::StrCat(slots), "--run-dir", data_dir + "/learner",
            "--token-file", learner_token_file, "--member-id",
            learner_member_id},
           {&server_tls, &learner_client_tls}),
      logs + "/learner.log");
  ASSIGN_OR_RETURN(std::string learner_address,
                   WaitListening(learner_process, "the learner"));
  std::vector<std::unique_ptr<Subprocess>> actors;
  for (int64_t i = 0; i < num_actors; ++i) {
    actors.push_back(std::make_unique<Subprocess>(
        with({actor_bin, "--coordinator", coordinator_address, "--envs",
              absl::StrCat(envs), "--actor-id", actor_id(i), "--cache-dir",
              data_dir + "/actor-cache", "--seed", absl::StrCat(i + 1),
              "--token-file", actor_token_file},
             {&actor_tls[static_cast<size_t>(i)]}),
        absl::StrCat(logs, "/actor-", i, ".log")));
  }
  std::printf(
      "up: coordinator %s, learner %s (%lld slots), %lld actors × %lld envs; "
      "logs in %s\n",
      coordinator_address.c_str(), learner_address.c_str(),
      static_cast<long long>(slots), static_cast<long long>(num_actors),
      static_cast<long long>(envs), logs.c_str());
  std::fflush(stdout);

  // running() reaps a process that has exited (it once only read a flag
  // that a Wait sets, so a crash went unnoticed here). Actors run until
  // they are stopped: one that exits is reported at once (the study goes on
  // with the others, slower); with none left the study cannot go on.
  std::vector<bool> actor_gone(actors.size(), false);
  Subprocess* last_actor_gone = nullptr;
  // What ended the wait, if a process did (not Ctrl-C, not the study's end).
  enum class Exited { kNone, kCoordinator, kLearner, kEveryActor };
  auto what_exited = [](Exited e) -> const char* {
    switch (e) {
      case Exited::kCoordinator:
        return "the coordinator";
      case Exited::kLearner:
        return "the learner";
      case Exited::kEveryActor:
        return "every actor";
      case Exited::kNone:
        break;
    }
    return "nothing";
  };
  auto crashed = [&]() -> Exited {
    if (!coordinator_process.running()) return Exited::kCoordinator;
    if (!learner_process.running()) return Exited::kLearner;
    size_t left = 0;
    for (size_t i = 0; i < actors.size(); ++i) {
      if (!actor_gone[i] && !actors[i]->running()) {
        actor_gone[i] = true;
        last_actor_gone = actors[i].get();
        std::string tail = LastLines(actors[i]->Log(), 5);
        if (!tail.empty() && tail.back() != '\n') tail += '\n';
        const size_t remaining = static_cast<size_t>(
            std::count(actor_gone.begin(), actor_gone.end(), false));
        std::fprintf(stderr,
                     "up: actor-%zu exited (status %d); %zu of %zu actors "
                     "left; see %s, which ends:\n%s",
                     i,
                     actors[i]->Wait(std::chrono::milliseconds(0)).value_or(-1),
                     remaining, actors.size(), actors[i]->log_path().c_str(),
                     tail.c_str());
        std::fflush(stderr);
      }
      if (!actor_gone[i]) ++left;
    }
    if (!actors.empty() && left == 0) return Exited::kEveryActor;
    return Exited::kNone;
  };
  Exited died = Exited::kNone;
  absl::Status waited = WaitForStudy(
      *store, config->name,
      [&] {
        if (g_stop.load()) return true;
        died = crashed();
        return died != Exited::kNone;
      },
      stdout,
      [&] {
        return died == Exited::kNone
                   ? absl::StrCat("stopped waiting; study ", config->name,
                                  " is left running in its database (the "
                                  "same command resumes it)")
                   : absl::StrCat("stopped waiting: ", what_exited(died),
                                  " exited early");
      });

  std::printf("up: shutting down\n");
  std::fflush(stdout);
  for (auto& a : actors) a->Signal(SIGTERM);  // all at once, then wait
  for (auto& a : actors) StopProcess(a.get(), 15s, /*signalled=*/true);
  StopProcess(&learner_process, 60s);
  StopProcess(&coordinator_process, 15s);
  if (died == Exited::kEveryActor) {
    return absl::InternalError(absl::StrCat(
        "every actor exited early, so the study cannot go on (run the same "
        "command again to resume it); the last to exit was ",
        last_actor_gone->log_path(), ", which ends:\n",
        LastLines(last_actor_gone->Log(), 20)));
  }
  if (died != Exited::kNone) {
    Subprocess& dead =
        died == Exited::kLearner ? learner_process : coordinator_process;
    return absl::InternalError(absl::StrCat(
        what_exited(died), " exited early (status ",
        dead.Wait(std::chrono::milliseconds(0)).value_or(-1),
        "), so the study cannot go on (run the same command again to resume "
        "it); see ",
        dead.log_path(), ", which ends:\n", LastLines(dead.Log(), 20)));
  }
  RETURN_IF_ERROR(waited);
  if (!g_stop.load()) {
    // The export and the report first: `up` ends with the leaderboard, the
    // statistics and the verdict line (README).
    absl::StatusOr<std::string> exported =
        ExportBest(*store, config->name, export_dir);
    if (exported.ok()) {
      std::error_code refit_ec;
      const bool refits = std::filesystem::is_directory(
          std::filesystem::path(*exported) / absl::StrCat(kRefitDirPrefix, 0),
          refit_ec);
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
        report::WriteStudyReport(*store, config->name, export_dir);
    if (report_path.ok()) {
      std::printf("up: study report written to %s\n", report_path->c_str());
    } else {
      std::printf("up: no study report: %s\n",
                  std::string(report_path.status().message()).c_str());
    }
    std::printf("\n");
    RETURN_IF_ERROR(PrintLeaderboard(*store, config->name, 10, stdout));
  } else {
    std::printf("up: interrupted; run the same command again to resume\n");
  }
  store.reset();
  return pg->Stop();
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
