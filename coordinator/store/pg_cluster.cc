// PgCluster drives Debian's PostgreSQL tools as child processes (fork +
// execv, stdout and stderr captured together). pg_ctl start gets -l so the
// daemonised postmaster never holds our pipe open.
#include "coordinator/store/pg_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace ristretto::coordinator {
namespace {

// Whether postmaster.pid in `data_dir` names a live `postgres` process
// started on `data_dir` (command line `.../postgres -D DATA_DIR ...`, as
// pg_ctl starts it): the PID in a file left by a server that died with its
// machine may since belong to any process, which must not be signalled.
bool PostmasterOfDataDirRuns(const std::string& data_dir) {
  std::ifstream pid_file(data_dir + "/postmaster.pid");
  int64_t pid = 0;
  if (!(pid_file >> pid) || pid <= 0) return false;
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline",
                        std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(cmdline)),
                         std::istreambuf_iterator<char>());
  const std::vector<std::string> argv = absl::StrSplit(text, '\0');
  if (argv.empty() || std::filesystem::path(argv[0]).filename() != "postgres") {
    return false;  // gone, a zombie (empty), or another program
  }
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != "-D") continue;
    std::error_code ec;
    if (argv[i + 1] == data_dir ||
        std::filesystem::equivalent(argv[i + 1], data_dir, ec)) {
      return true;
    }
  }
  return false;
}

namespace fs = std::filesystem;

constexpr char kServerUser[] = "postgres";
constexpr char kLogName[] = "postgresql.log";

struct ProcessResult {
  int exit_code = 0;   // 128 + signal when killed by one
  std::string output;  // stdout and stderr interleaved
};

std::string ErrnoMessage(absl::string_view what) {
  return absl::StrCat(what, ": ", std::strerror(errno));
}

// Runs argv[0] (an absolute path) with `argv`, stdin from /dev/null, in "/"
// (the server user may not be able to enter our working directory).
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int max_fd =
      static_cast<int>(std::min<int64_t>(sysconf(_SC_OPEN_MAX), 65536));
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(ErrnoMessage("pipe2"));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return absl::InternalError(ErrnoMessage("fork"));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until execv.
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    // Keep our sockets and files out of the long-lived postmaster.
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
    {
      for (int fd = 3; fd < max_fd; ++fd) close(fd);
    }
    if (chdir("/") != 0) _exit(126);
    execv(args[0], args.data());
    constexpr char kMessage[] = "execv failed: ";
    (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    (void)!write(STDERR_FILENO, args[0], strlen(args[0]));
    _exit(127);
  }
  close(pipe_fds[1]);
  ProcessResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buffer, sizeof(buffer));
    if (n > 0) {
      result.output.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(ErrnoMessage("waitpid"));
  }
  result.exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// Quotes `s` for the shell pg_ctl starts the server with.
std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

// Quotes a libpq connection-string value when it needs it.
std::string ConninfoValue(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\\") == std::string::npos) return s;
  return absl::StrCat(
      "'", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"'", "\\'"}}), "'");
}

// The newest /usr/lib/postgresql/<major>/bin that has initdb.
absl::StatusOr<std::string> NewestBinDir() {
  constexpr char kRoot[] = "/usr/lib/postgresql";
  int best = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kRoot, ec)) {
    int major = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &major) &&
        major > best && fs::exists(entry.path() / "bin" / "initdb", ec)) {
      best = major;
    }
  }
  if (best < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no PostgreSQL server binaries in ", kRoot,
        "/<major>/bin (install the postgresql package or set bin_dir)"));
  }
  return absl::StrCat(kRoot, "/", best, "/bin");
}

absl::StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(ErrnoMessage("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string message = ErrnoMessage("binding 127.0.0.1:0");
    close(fd);
    return absl::InternalError(message);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string LastLines(const std::string& path, int count) {
  std::ifstream in(path);
  if (!in) return "";
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  const size_t first =
      lines.size() > static_cast<size_t>(count) ? lines.size() - count : 0;
  return absl::StrJoin(lines.begin() + static_cast<std::ptrdiff_t>(first),
                       lines.end(), "\n");
}

}  // namespace

class PgCluster::Impl {
 public:
  explicit Impl(PgClusterOptions options) : options_(std::move(options)) {}

  // Everything Start() does: paths, ownership, initdb, pg_ctl start,
  // createdb.
  absl::Status Start();
  absl::Status StartServer();
  absl::Status Stop();
  absl::Status CreateDatabase(const std::string& database);
  std::string DsnFor(const std::string& database) const {
    return absl::StrCat("host=", ConninfoValue(data_dir_), " port=", port_,
                        " dbname=", ConninfoValue(database),
                        " user=", kServerUser);
  }

  const PgClusterOptions& options() const { return options_; }
  const std::string& data_dir() const { return data_dir_; }
  int port() const { return port_; }

 private:
  // Runs `tool` from bin_dir (as the server user when we are root);
  // returns its output, or an error naming the tool with its output.
  absl::StatusOr<std::string> Tool(const std::string& tool,
                                   const std::vector<std::string>& args);
  absl::StatusOr<ProcessResult> RunTool(const std::string& tool,
                                        const std::vector<std::string>& args);
  // Root only: hands the data directory to the server user and checks that
  // the user can reach it.
  absl::Status PrepareForServerUser();

  const PgClusterOptions options_;
  std::string bin_dir_;
  std::string data_dir_;  // absolute
  std::string log_path_;
  int port_ = 0;
  bool as_root_ = false;
  std::string runuser_;  // path of runuser, when as_root_
  bool running_ = false;
};

absl::StatusOr<ProcessResult> PgCluster::Impl::RunTool(
    const std::string& tool, const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (as_root_) argv = {runuser_, "-u", kServerUser, "--"};
  argv.push_back(absl::StrCat(bin_dir_, "/", tool));
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

absl::StatusOr<std::string> PgCluster::Impl::Tool(
    const std::string& tool, const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(ProcessResult r, RunTool(tool, args));
  if (r.exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        tool, " ", absl::StrJoin(args, " "), " failed (exit ", r.exit_code,
        "): ", absl::StripTrailingAsciiWhitespace(r.output)));
  }
  return std::move(r.output);
}

absl::Status PgCluster::Impl::PrepareForServerUser() {
  for (const char* path :
       {"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"}) {
    if (access(path, X_OK) == 0) {
      runuser_ = path;
      break;
    }
  }
  if (runuser_.empty()) {
    return absl::FailedPreconditionError(
        "running as root, but runuser (util-linux) is missing: PostgreSQL "
        "refuses to run as root");
  }
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwnam_r(kServerUser, &pw, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "running as root, but there is no '", kServerUser,
        "' user to run PostgreSQL as (install the postgresql package)"));
  }
  const uid_t uid = pw.pw_uid;
  const gid_t gid = pw.pw_gid;
  std::error_code ec;
  if (lchown(data_dir_.c_str(), uid, gid) != 0) {
    return absl::FailedPreconditionError(
        ErrnoMessage(absl::StrCat("chown ", data_dir_)));
  }
  for (auto it = fs::recursive_directory_iterator(data_dir_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (lchown(it->path().c_str(), uid, gid) != 0) {
      return absl::FailedPreconditionError(
          ErrnoMessage(absl::StrCat("chown ", it->path().string())));
    }
  }
  // Every ancestor must be searchable by the server user.
  for (fs::path p = fs::path(data_dir_).parent_path(); !p.empty();
       p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) break;
    const bool searchable = (st.st_mode & S_IXOTH) != 0 ||
                            (st.st_uid == uid && (st.st_mode & S_IXUSR)) ||
                            (st.st_gid == gid && (st.st_mode & S_IXGRP));
    if (!searchable) {
      std::ostringstream mode;
      mode << std::oct << (st.st_mode & 07777);
      return absl::FailedPreconditionError(absl::StrCat(
          "PostgreSQL runs as user '", kServerUser, "', which cannot enter ",
          p.string(), " (mode ", mode.str(),
          "); make it traversable, e.g. chmod o+x ", p.string()));
    }
    if (p == p.root_path()) break;
  }
  return absl::OkStatus();
}

absl::Status PgCluster::Impl::Start() {
  if (options_.data_dir.empty()) {
    return absl::InvalidArgumentError("PgCluster: data_dir is empty");
  }
  if (options_.database.empty()) {
    return absl::InvalidArgumentError("PgCluster: database is empty");
  }
  if (options_.bin_dir.empty()) {
    ASSIGN_OR_RETURN(bin_dir_, NewestBinDir());
  } else {
    bin_dir_ = options_.bin_dir;
  }
  std::error_code ec;
  data_dir_ = fs::absolute(options_.data_dir, ec).lexically_normal().string();
  if (!data_dir_.empty() && data_dir_.back() == '/') data_dir_.pop_back();
  log_path_ = absl::StrCat(data_dir_, "/", kLogName);
  // The Unix socket lives in the data directory: its path must fit
  // sockaddr_un.
  const std::string socket_path = absl::StrCat(data_dir_, "/.s.PGSQL.65535");
  if (socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PgCluster: data_dir ", data_dir_,
                     " is too long for a Unix socket "
                     "path (",
                     socket_path.size(), " >= ", sizeof(sockaddr_un::sun_path),
                     " bytes); use a shorter path"));
  }
  if (!fs::exists(data_dir_, ec)) {
    fs::create_directories(data_dir_, ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create data directory ", data_dir_, ": ", ec.message()));
    }
  }
  // initdb and the server insist on 0700 (or 0750).
  fs::permissions(data_dir_, fs::perms::owner_all, ec);
  as_root_ = geteuid() == 0;
  if (as_root_) RETURN_IF_ERROR(PrepareForServerUser());
  if (!fs::exists(fs::path(data_dir_) / "PG_VERSION", ec)) {
    std::vector<std::string> args = {
        "-D",        data_dir_, "-A",   "trust",      "-U",
        kServerUser, "-E",      "UTF8", "--locale=C", "--no-instructions"};
    if (options_.unsafe_fast) {
      // Also 1 MB WAL segments: a fresh cluster is 28 MB instead of 39 MB.
      args.emplace_back("--no-sync");
      args.emplace_back("--wal-segsize=1");
    }
    RETURN_IF_ERROR(Tool("initdb", args).status());
  }
  if (options_.stop_stale_server && PostmasterOfDataDirRuns(data_dir_)) {
    std::fprintf(stderr,
                 "PostgreSQL on %s was left running by an earlier process; "
                 "stopping it\n",
                 data_dir_.c_str());
    RETURN_IF_ERROR(Tool("pg_ctl", {"stop", "-w", "-t", "60", "-m", "fast",
                                    "-D", data_dir_})
                        .status());
  }
  if (options_.port != 0) {
    port_ = options_.port;
    RETURN_IF_ERROR(StartServer());
  } else {
    // A port found free can be taken by another process before the server
    // binds it (two clusters starting at once, as parallel tests and two
    // `ristretto up` do): then another free port, a few times.
    constexpr int kPortAttempts = 5;
    for (int attempt = 1;; ++attempt) {
      ASSIGN_OR_RETURN(port_, PickFreePort());
      absl::Status started = StartServer();
      if (started.ok()) break;
      if (attempt == kPortAttempts ||
          !absl::StrContains(started.message(), "already in use")) {
        return started;
      }
      std::fprintf(stderr,
                   "PostgreSQL: port %d was taken before the server bound "
                   "it; trying another\n",
                   port_);
    }
  }
  return CreateDatabase(options_.database);
}

absl::Status PgCluster::Impl::StartServer() {
  std::string server_options =
      absl::StrCat("-k ", ShellQuote(data_dir_), " -p ", port_,
                   " -h 127.0.0.1 -c shared_buffers=32MB");
  if (options_.unsafe_fast) {
    absl::StrAppend(&server_options,
                    " -c fsync=off -c full_page_writes=off"
                    " -c synchronous_commit=off");
  }
  const absl::Status started =
      Tool("pg_ctl", {"start", "-w", "-t", "60", "-D", data_dir_, "-l",
                      log_path_, "-o", server_options})
          .status();
  if (!started.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(started.message(), "\n--- ", log_path_, " (end) ---\n",
                     LastLines(log_path_, 20)));
  }
  running_ = true;
  return absl::OkStatus();
}

absl::Status PgCluster::Impl::Stop() {
  if (!running_) return absl::OkStatus();
  const absl::StatusOr<std::string> stopped =
      Tool("pg_ctl", {"stop", "-w", "-t", "60", "-m", "fast", "-D", data_dir_});
  if (!stopped.ok()) {
    // Already gone (e.g. killed) is stopped too: pg_ctl status exits 3.
    ASSIGN_OR_RETURN(ProcessResult status,
                     RunTool("pg_ctl", {"status", "-D", data_dir_}));
    if (status.exit_code != 3) return stopped.status();
  }
  running_ = false;
  return absl::OkStatus();
}

absl::Status PgCluster::Impl::CreateDatabase(const std::string& database) {
  // One createdb, "already exists" counting as success (the server's
  // messages are English: initdb --locale=C).
  ASSIGN_OR_RETURN(
      ProcessResult r,
      RunTool("createdb", {"-h", data_dir_, "-p", absl::StrCat(port_), "-U",
                           kServerUser, "--", database}));
  if (r.exit_code == 0 || absl::StrContains(r.output, "already exists")) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("createdb ", database, " failed (exit ", r.exit_code,
                   "): ", absl::StripTrailingAsciiWhitespace(r.output)));
}

PgCluster::PgCluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PgCluster::~PgCluster() { impl_->Stop().IgnoreError(); }

absl::StatusOr<std::unique_ptr<PgCluster>> PgCluster::Start(
    const PgClusterOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  const absl::Status started = impl->Start();
  if (!started.ok()) {
    impl->Stop().IgnoreError();
    return started;
  }
  return std::unique_ptr<PgCluster>(new PgCluster(std::move(impl)));
}

absl::Status PgCluster::Stop() { return impl_->Stop(); }

absl::Status PgCluster::Restart() {
  RETURN_IF_ERROR(impl_->Stop());
  return impl_->StartServer();
}

std::string PgCluster::dsn() const {
  return impl_->DsnFor(impl_->options().database);
}

std::string PgCluster::DsnFor(const std::string& database) const {
  return impl_->DsnFor(database);
}

absl::Status PgCluster::CreateDatabase(const std::string& database) {
  return impl_->CreateDatabase(database);
}

int PgCluster::port() const { return impl_->port(); }

const std::string& PgCluster::data_dir() const { return impl_->data_dir(); }

}  // namespace ristretto::coordinator
