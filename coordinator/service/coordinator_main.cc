// ristretto-coordinator: schedules the trials of every running study,
// leases runs to learners and records everything in PostgreSQL.
//
//   ristretto-coordinator --db DSN [--port P] [--address A] [--data-dir D]
//       [--lease-ttl-s 30] [--tick-ms 500] [--token-file FILE]
//       [--metrics-port P|auto (0: off)] [--metrics-address 0.0.0.0]
//
// The DSN may also come from $RISTRETTO_DB. Secrets never come from argv
// (every local user reads it with ps): the registration token comes from
// --token-file (mode 600) or $RISTRETTO_TOKEN, and a --db DSN that carries a
// password is refused (libpq reads ~/.pgpass, $PGPASSFILE or $PGPASSWORD).
// With --metrics-port it serves Prometheus metrics (docs/metrics.md) and
// prints "metrics on HOST:PORT". Prints "listening on HOST:PORT" once
// serving; on SIGTERM/SIGINT it stops scheduling, finishes the calls in
// flight and exits 0. A restart resumes every study from the database.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "common/grpc_process.h"
#include "common/metrics.h"
#include "common/secret_file.h"
#include "common/shutdown_signal.h"
#include "common/status_macros.h"
#include "coordinator/service/coordinator_metrics.h"
#include "coordinator/service/coordinator_service.h"
#include "coordinator/service/scheduler.h"
#include "coordinator/store/store.h"
#include "grpcpp/grpcpp.h"

namespace ristretto::coordinator {
namespace {

constexpr char kUsage[] =
    "usage: ristretto-coordinator --db DSN (or $RISTRETTO_DB)\n"
    "    [--address A (127.0.0.1)] [--port P (0: any)]\n"
    "    [--data-dir DIR (/tmp/ristretto-coordinator)] [--lease-ttl-s S (30)]\n"
    "    [--tick-ms MS (500)] [--max-message-mb MB (16)]\n"
    "    [--token-file FILE (mode 600; or $RISTRETTO_TOKEN)]\n"
    "    [--metrics-port P|auto (0: off)] [--metrics-address A (0.0.0.0)]\n";

absl::Status Main(int argc, char** argv) {
  HoldGrpcUntilExit();
  RETURN_IF_ERROR(InstallShutdownHandlers());

  ASSIGN_OR_RETURN(cli::Args args, cli::Args::Parse(argc, argv, 1, {}));
  if (args.Has("help")) {
    std::fputs(kUsage, stdout);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(args.CheckKnown(
      {"db", "address", "port", "data-dir", "lease-ttl-s", "tick-ms", "token",
       "token-file", "max-message-mb", "metrics-port", "metrics-address"}));
  if (args.Has("db")) {
    ASSIGN_OR_RETURN(const std::string flag_dsn, args.String("db", ""));
    RETURN_IF_ERROR(RefuseDsnPasswordOnCommandLine(flag_dsn, "db"));
  }
  const char* env_dsn = std::getenv("RISTRETTO_DB");
  ASSIGN_OR_RETURN(std::string dsn,
                   args.String("db", env_dsn != nullptr ? env_dsn : ""));
  if (dsn.empty()) {
    return absl::InvalidArgumentError(
        "no database: pass --db DSN or set RISTRETTO_DB");
  }
  SchedulerOptions options;
  // Before anything is created: a refused secret leaves nothing behind.
  ASSIGN_OR_RETURN(const std::string token_file, args.String("token-file", ""));
  ASSIGN_OR_RETURN(options.token, ResolveToken(args.Has("token"), token_file,
                                               std::getenv(kTokenEnv)));
  ASSIGN_OR_RETURN(options.data_dir,
                   args.String("data-dir", "/tmp/ristretto-coordinator"));
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create --data-dir ", options.data_dir, ": ", ec.message()));
  }
  options.data_dir = std::filesystem::absolute(options.data_dir).string();
  ASSIGN_OR_RETURN(int64_t ttl_s, args.Int("lease-ttl-s", 30));
  if (ttl_s < 1)
    return absl::InvalidArgumentError("--lease-ttl-s must be >= 1");
  options.lease_ttl = absl::Seconds(ttl_s);
  ASSIGN_OR_RETURN(int64_t tick_ms, args.Int("tick-ms", 500));
  ASSIGN_OR_RETURN(std::string metrics_port, args.String("metrics-port", "0"));
  ASSIGN_OR_RETURN(std::string metrics_address,
                   args.String("metrics-address", "0.0.0.0"));
  // Declared before the scheduler: destroyed after it.
  ASSIGN_OR_RETURN(
      std::unique_ptr<MetricsServer> metrics_server,
      StartMetricsServer(metrics_port, metrics_address, "coordinator"));
  std::unique_ptr<CoordinatorMetrics> metrics;
  if (metrics_server != nullptr) {
    metrics = std::make_unique<CoordinatorMetrics>(metrics_server->registry());
    options.metrics = metrics.get();
  }

  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Connect(dsn));
  RETURN_IF_ERROR(store->Migrate());
  Scheduler scheduler(std::move(store), options);
  CoordinatorService service(&scheduler);

  ASSIGN_OR_RETURN(std::string address, args.String("address", "127.0.0.1"));
  ASSIGN_OR_RETURN(int64_t port, args.Int("port", 0));
  ASSIGN_OR_RETURN(int64_t max_mb, args.Int("max-message-mb", 16));
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(address, ":", port),
                           grpc::InsecureServerCredentials(), &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_mb << 20));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ":", port));
  }
  std::printf("listening on %s:%d\n", address.c_str(), bound_port);
  std::fflush(stdout);

  {
    SignalWatcher signals;
    while (!signals.WaitForSignal(absl::Milliseconds(tick_ms))) {
      absl::Status s = scheduler.Tick();
      if (!s.ok()) {
        std::fprintf(stderr, "coordinator: scheduling pass failed: %s\n",
                     s.ToString().c_str());
      }
    }
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  const SchedulerCounters c = scheduler.counters();
  std::printf(
      "coordinator: trials_created=%lld runs_leased=%lld leases_expired=%lld "
      "runs_completed=%lld trials_completed=%lld trials_pruned=%lld "
      "trials_failed=%lld\n",
      static_cast<long long>(c.trials_created),
      static_cast<long long>(c.runs_leased),
      static_cast<long long>(c.leases_expired),
      static_cast<long long>(c.runs_completed),
      static_cast<long long>(c.trials_completed),
      static_cast<long long>(c.trials_pruned),
      static_cast<long long>(c.trials_failed));
  return absl::OkStatus();
}

}  // namespace
}  // namespace ristretto::coordinator

int main(int argc, char** argv) {
  absl::Status s = ristretto::coordinator::Main(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "ristretto-coordinator: %s\n",
                 std::string(s.message()).c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
