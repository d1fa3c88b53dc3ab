#include "ops/local_stack.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/atomic_file.h"
#include "common/auth.h"
#include "common/dev_certs.h"
#include "common/options_schema.h"
#include "common/secret_file.h"
#include "common/status_macros.h"
#include "coordinator/core/data_study.h"
#include "ops/study.h"

namespace ristretto::ops {
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

}  // namespace

absl::StatusOr<int> LockDataDir(const std::string& data_dir,
                                std::FILE* progress) {
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
      std::fprintf(
          progress,
          "up: the processes of an earlier up (pid %s, gone) are still "
          "stopping on %s; waiting for them (at most a minute)\n",
          pid.empty() ? "unknown" : pid.c_str(), data_dir.c_str());
      std::fflush(progress);
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

absl::StatusOr<UpStudy> PrepareUpStudy(std::string study_file, std::string text,
                                       const std::optional<GivenData>& given,
                                       const std::string& data_dir,
                                       std::FILE* progress) {
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
      RETURN_IF_ERROR(WriteFileAtomically(study_file, text));
      std::fprintf(progress,
                   "up: no --study: the built-in study for given data, %s; "
                   "written to %s\n",
                   coordinator::DataStudySizingText(sizing).c_str(),
                   study_file.c_str());
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
  return UpStudy{std::move(study_file), std::move(text), *std::move(config)};
}

const char* StackExitText(StackExit e) {
  switch (e) {
    case StackExit::kCoordinator:
      return "the coordinator";
    case StackExit::kLearner:
      return "the learner";
    case StackExit::kEveryActor:
      return "every actor";
    case StackExit::kNone:
      break;
  }
  return "nothing";
}

LocalStack::LocalStack(LocalStackOptions options, std::FILE* progress)
    : options_(std::move(options)), progress_(progress) {}

LocalStack::~LocalStack() = default;

absl::StatusOr<std::unique_ptr<LocalStack>> LocalStack::Start(
    LocalStackOptions options, std::FILE* progress) {
  std::unique_ptr<LocalStack> s(new LocalStack(std::move(options), progress));
  const LocalStackOptions& o = s->options_;
  ASSIGN_OR_RETURN(s->coordinator_bin_,
                   FindBinary("ristretto-coordinator", o.bin_dir));
  ASSIGN_OR_RETURN(s->learner_bin_, FindBinary("ristretto-learner", o.bin_dir));
  ASSIGN_OR_RETURN(s->actor_bin_, FindBinary("ristretto-actor", o.bin_dir));

  std::fprintf(progress, "up: starting PostgreSQL in %s/pg\n",
               o.data_dir.c_str());
  std::fflush(progress);
  coordinator::PgClusterOptions pg_options;
  pg_options.data_dir = o.data_dir + "/pg";
  // We hold the data directory: a server running there was left by an
  // `up` that died (kill -9) and is stopped before ours starts.
  pg_options.stop_stale_server = true;
  ASSIGN_OR_RETURN(s->pg_, coordinator::PgCluster::Start(pg_options));
  ASSIGN_OR_RETURN(s->store_, ConnectStore(s->pg_->dsn()));
  return s;
}

absl::Status LocalStack::OpenStudy(std::optional<GivenData>* given,
                                   const UpStudy& study) {
  const std::string& name = study.config.name;
  if (given->has_value()) {
    // As `dataset import --db --data-dir`: the coordinator serves it from
    // <data-dir>/datasets/<id>.rds.
    ASSIGN_OR_RETURN(
        coordinator::DatasetRow row,
        RegisterDataset(*store_, (*given)->file, options_.data_dir));
    std::fprintf(progress_, "up: registered dataset %s (%s)\n", row.id.c_str(),
                 row.path.c_str());
    if ((*given)->temporary) {  // registering copied it
      std::remove((*given)->file.c_str());
      (*given)->temporary = false;
    }
  }
  absl::StatusOr<coordinator::StudyRow> row = store_->GetStudy(name);
  if (row.ok()) {
    if (row->config_text != study.text) {
      return absl::AlreadyExistsError(absl::StrCat(
          "study ", name, " already exists in ", options_.data_dir,
          " with another file; rename the study or use another --data-dir"));
    }
    std::fprintf(progress_, "up: resuming study %s (%s)\n", name.c_str(),
                 std::string(coordinator::ToString(row->state)).c_str());
  } else if (row.status().code() == absl::StatusCode::kNotFound) {
    ASSIGN_OR_RETURN(row, store_->CreateStudy(name, study.text));
    std::fprintf(progress_, "up: created study %s from %s\n", name.c_str(),
                 study.file.c_str());
  } else {
    return row.status();
  }
  if (row->state != coordinator::StudyState::kDone) {
    RETURN_IF_ERROR(
        store_->SetStudyState(row->id, coordinator::StudyState::kRunning));
  }
  return absl::OkStatus();
}

absl::Status LocalStack::StartProcesses() {
  const std::string& data_dir = options_.data_dir;
  const int64_t num_actors = options_.actors;
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
  if (options_.insecure) {
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
    std::fprintf(progress_,
                 "up: mutual TLS with a fresh CA in %s/tls (a client "
                 "certificate per process, naming it)\n",
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
  coordinator_ = std::make_unique<Subprocess>(
      with({coordinator_bin_, "--db", pg_->dsn(), "--port", "0", "--data-dir",
            data_dir + "/coordinator", "--token-file", token_file,
            "--actor-token-file", actor_token_file, "--learner-token-file",
            learner_token_file},
           {&coordinator_tls}),
      logs + "/coordinator.log");
  ASSIGN_OR_RETURN(std::string coordinator_address,
                   WaitListening(*coordinator_, "the coordinator"));
  learner_ = std::make_unique<Subprocess>(
      with({learner_bin_, "--coordinator", coordinator_address, "--port", "0",
            "--slots", absl::StrCat(options_.slots), "--run-dir",
            data_dir + "/learner", "--token-file", learner_token_file,
            "--member-id", learner_member_id},
           {&server_tls, &learner_client_tls}),
      logs + "/learner.log");
  ASSIGN_OR_RETURN(std::string learner_address,
                   WaitListening(*learner_, "the learner"));
  for (int64_t i = 0; i < num_actors; ++i) {
    actors_.push_back(std::make_unique<Subprocess>(
        with({actor_bin_, "--coordinator", coordinator_address, "--envs",
              absl::StrCat(options_.envs), "--actor-id", actor_id(i),
              "--cache-dir", data_dir + "/actor-cache", "--seed",
              absl::StrCat(i + 1), "--token-file", actor_token_file},
             {&actor_tls[static_cast<size_t>(i)]}),
        absl::StrCat(logs, "/actor-", i, ".log")));
  }
  actor_gone_.assign(actors_.size(), false);
  std::fprintf(
      progress_,
      "up: coordinator %s, learner %s (%lld slots), %lld actors × %lld envs; "
      "logs in %s\n",
      coordinator_address.c_str(), learner_address.c_str(),
      static_cast<long long>(options_.slots),
      static_cast<long long>(num_actors), static_cast<long long>(options_.envs),
      logs.c_str());
  std::fflush(progress_);
  return absl::OkStatus();
}

// running() reaps a process that has exited (it once only read a flag that
// a Wait sets, so a crash went unnoticed here). Actors run until they are
// stopped: one that exits is reported at once (the study goes on with the
// others, slower); with none left the study cannot go on.
StackExit LocalStack::CheckProcesses() {
  if (coordinator_ != nullptr && !coordinator_->running()) {
    return StackExit::kCoordinator;
  }
  if (learner_ != nullptr && !learner_->running()) return StackExit::kLearner;
  size_t left = 0;
  for (size_t i = 0; i < actors_.size(); ++i) {
    if (!actor_gone_[i] && !actors_[i]->running()) {
      actor_gone_[i] = true;
      last_actor_gone_ = actors_[i].get();
      std::string tail = LastLines(actors_[i]->Log(), 5);
      if (!tail.empty() && tail.back() != '\n') tail += '\n';
      const size_t remaining = static_cast<size_t>(
          std::count(actor_gone_.begin(), actor_gone_.end(), false));
      std::fprintf(stderr,
                   "up: actor-%zu exited (status %d); %zu of %zu actors "
                   "left; see %s, which ends:\n%s",
                   i,
                   actors_[i]->Wait(std::chrono::milliseconds(0)).value_or(-1),
                   remaining, actors_.size(), actors_[i]->log_path().c_str(),
                   tail.c_str());
      std::fflush(stderr);
    }
    if (!actor_gone_[i]) ++left;
  }
  if (!actors_.empty() && left == 0) return StackExit::kEveryActor;
  return StackExit::kNone;
}

void LocalStack::StopProcesses() {
  std::fprintf(progress_, "up: shutting down\n");
  std::fflush(progress_);
  for (auto& a : actors_) a->Signal(SIGTERM);  // all at once, then wait
  for (auto& a : actors_) StopProcess(a.get(), 15s, /*signalled=*/true);
  StopProcess(learner_.get(), 60s);
  StopProcess(coordinator_.get(), 15s);
}

absl::Status LocalStack::ExitError(StackExit exited) const {
  if (exited == StackExit::kEveryActor) {
    return absl::InternalError(absl::StrCat(
        "every actor exited early, so the study cannot go on (run the same "
        "command again to resume it); the last to exit was ",
        last_actor_gone_->log_path(), ", which ends:\n",
        LastLines(last_actor_gone_->Log(), 20)));
  }
  if (exited == StackExit::kNone) return absl::OkStatus();
  Subprocess& dead = exited == StackExit::kLearner ? *learner_ : *coordinator_;
  return absl::InternalError(absl::StrCat(
      StackExitText(exited), " exited early (status ",
      dead.Wait(std::chrono::milliseconds(0)).value_or(-1),
      "), so the study cannot go on (run the same command again to resume "
      "it); see ",
      dead.log_path(), ", which ends:\n", LastLines(dead.Log(), 20)));
}

absl::Status LocalStack::StopDatabase() {
  store_.reset();
  return pg_->Stop();
}

}  // namespace ristretto::ops
