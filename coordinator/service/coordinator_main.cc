// ristretto-coordinator: schedules the trials of every running study,
// leases runs to learners and records everything in PostgreSQL.
//
//   ristretto-coordinator --db DSN [--port P] [--address A] [--data-dir D]
//       [--lease-ttl-s 30] [--tick-ms 500] [--token-file FILE]
//       [--actor-token-file FILE] [--learner-token-file FILE]
//       [--metrics-port P|auto (0: off)] [--metrics-address 0.0.0.0]
//       [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]
//       [--allow-insecure-network]
//
// Without a token (and without mutual TLS) it binds only to loopback: a
// non-loopback --address is refused at start-up unless
// --allow-insecure-network (TLS alone authenticates no caller).
// With --tls-cert/--tls-key it serves TLS (learners and actors verify it
// with --tls-ca); adding --tls-ca requires every client to present a
// certificate that CA signed (mutual TLS). common/grpc_security.h.
// The DSN may also come from $RISTRETTO_DB. Secrets never come from argv
// (every local user reads it with ps): the registration token comes from
// --token-file (mode 600) or $RISTRETTO_TOKEN, and a --db DSN that carries a
// password is refused (libpq reads ~/.pgpass, $PGPASSFILE or $PGPASSWORD).
// The actors' token (--actor-token-file or $RISTRETTO_ACTOR_TOKEN) lets
// actor machines find learners without holding the cluster token, which
// also evicts learners and fetches datasets. The learners' token
// (--learner-token-file or $RISTRETTO_LEARNER_TOKEN) is then the only one
// that registers learners, and does nothing else: learner machines do not
// hold the operators' cluster token.
// With --metrics-port it serves Prometheus metrics (docs/metrics.md) and
// prints "metrics on HOST:PORT". Logs "listening on HOST:PORT" once
// serving; on SIGTERM/SIGINT it stops scheduling, finishes the calls in
// flight, logs its counters and exits 0. A restart resumes every study from
// the database. Diagnostics go to stderr through common/log.h.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "common/grpc_process.h"
#include "common/grpc_security.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/secret_file.h"
#include "common/shutdown_signal.h"
#include "common/status_macros.h"
#include "common/tls_flags.h"
#include "coordinator/service/coordinator_metrics.h"
#include "coordinator/service/coordinator_service.h"
#include "coordinator/service/scheduler.h"
#include "coordinator/store/store.h"
#include "grpcpp/grpcpp.h"

// Each flag once: name, type, default and meaning.
ABSL_FLAG(std::string, db, "",
          "PostgreSQL DSN, without a password (or $RISTRETTO_DB)");
ABSL_FLAG(std::string, address, "127.0.0.1", "address the gRPC server binds");
ABSL_FLAG(int64_t, port, 0, "gRPC port (0: any free port)");
ABSL_FLAG(std::string, data_dir, "/tmp/ristretto-coordinator",
          "where datasets and run outputs are kept (created if missing)");
ABSL_FLAG(int64_t, lease_ttl_s, 30,
          "seconds a learner's lease lives without a heartbeat (>= 1)");
ABSL_FLAG(int64_t, max_learners, 256,
          "most learner member ids live at once; registrations under new "
          "ids beyond it are refused");
ABSL_FLAG(int64_t, member_retention_s, 3600,
          "seconds after its last call a member that never held a lease is "
          "deleted from the members table (0: never; else > --lease-ttl-s)");
ABSL_FLAG(int64_t, tick_ms, 500, "milliseconds between scheduling passes");
ABSL_FLAG(int64_t, max_message_mb, 16, "largest gRPC message received, MiB");
ABSL_FLAG(std::string, token_file, "",
          "file (mode 600) holding the registration token (or "
          "$RISTRETTO_TOKEN)");
ABSL_FLAG(std::optional<std::string>, token, std::nullopt,
          "refused: a token in argv is readable with ps; use --token-file or "
          "$RISTRETTO_TOKEN");
ABSL_FLAG(std::string, actor_token_file, "",
          "file (mode 600) holding the actors' token (or "
          "$RISTRETTO_ACTOR_TOKEN): it finds learners and fetches datasets "
          "only; needs a cluster token and must differ from it");
ABSL_FLAG(std::optional<std::string>, actor_token, std::nullopt,
          "refused: a token in argv is readable with ps; use "
          "--actor-token-file or $RISTRETTO_ACTOR_TOKEN");
ABSL_FLAG(std::string, learner_token_file, "",
          "file (mode 600) holding the learners' token (or "
          "$RISTRETTO_LEARNER_TOKEN): then the only token that registers "
          "learners, and it does nothing else; needs a cluster token and "
          "must differ from it and from the actors' token");
ABSL_FLAG(std::optional<std::string>, learner_token, std::nullopt,
          "refused: a token in argv is readable with ps; use "
          "--learner-token-file or $RISTRETTO_LEARNER_TOKEN");
ABSL_FLAG(bool, allow_insecure_network, false,
          "serve on a non-loopback --address with no token and no mutual "
          "TLS: anyone who reaches the port may call (development only)");
ABSL_FLAG(bool, require_named_certificates, false,
          "under mutual TLS, refuse actors and learners whose client "
          "certificate does not name their id (URI SAN "
          "urn:ristretto:actor:ID / urn:ristretto:learner:ID; "
          "make_dev_certs.sh --actor/--learner) instead of binding ids to "
          "certificates on first use");
ABSL_FLAG(std::string, metrics_port, "0",
          "Prometheus metrics port, 'auto' for any free one (0: off)");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0",
          "address the metrics endpoint binds");

namespace ristretto::coordinator {
namespace {

constexpr char kUsage[] =
    "usage: ristretto-coordinator --db DSN (or $RISTRETTO_DB)\n"
    "    [--address A (127.0.0.1)] [--port P (0: any)]\n"
    "    [--data-dir DIR (/tmp/ristretto-coordinator)] [--lease-ttl-s S (30)]\n"
    "    [--max-learners N (256)] [--member-retention-s S (3600)]\n"
    "    [--tick-ms MS (500)] [--max-message-mb MB (16)]\n"
    "    [--token-file FILE (mode 600; or $RISTRETTO_TOKEN)]\n"
    "    [--actor-token-file FILE (mode 600; or $RISTRETTO_ACTOR_TOKEN)]\n"
    "    [--learner-token-file FILE (mode 600; or $RISTRETTO_LEARNER_TOKEN)]\n"
    "    [--metrics-port P|auto (0: off)] [--metrics-address A (0.0.0.0)]\n"
    "    [--tls-cert FILE --tls-key FILE [--tls-ca FILE (mutual TLS)]]\n"
    "    [--require-named-certificates (with --tls-ca)]\n"
    "    [--allow-insecure-network (no token, no mTLS, not loopback)]\n";

// Runs the coordinator with the parsed flags.
absl::Status Main() {
  HoldGrpcUntilExit();
  RETURN_IF_ERROR(InstallShutdownHandlers());

  std::string dsn = absl::GetFlag(FLAGS_db);
  RETURN_IF_ERROR(RefuseDsnPasswordOnCommandLine(dsn, "db"));
  if (const char* env_dsn = std::getenv("RISTRETTO_DB");
      dsn.empty() && env_dsn != nullptr) {
    dsn = env_dsn;
  }
  if (dsn.empty()) {
    return absl::InvalidArgumentError(
        "no database: pass --db DSN or set RISTRETTO_DB");
  }
  SchedulerOptions options;
  // Before anything is created: a refused secret or a bad certificate
  // leaves nothing behind.
  ASSIGN_OR_RETURN(
      const std::string token,
      ResolveToken(absl::GetFlag(FLAGS_token).has_value(),
                   absl::GetFlag(FLAGS_token_file), std::getenv(kTokenEnv)));
  ASSIGN_OR_RETURN(const std::string actor_token,
                   ResolveToken(absl::GetFlag(FLAGS_actor_token).has_value(),
                                absl::GetFlag(FLAGS_actor_token_file),
                                std::getenv("RISTRETTO_ACTOR_TOKEN"),
                                "actor-token", "RISTRETTO_ACTOR_TOKEN"));
  if (!actor_token.empty() && token.empty()) {
    return absl::InvalidArgumentError(
        "an actor token (--actor-token-file, $RISTRETTO_ACTOR_TOKEN) needs a "
        "cluster token (--token-file, $RISTRETTO_TOKEN): without one no call "
        "is authenticated");
  }
  if (!actor_token.empty() && actor_token == token) {
    return absl::InvalidArgumentError(
        "the actor token equals the cluster token: give actors a token of "
        "their own (scripts/compose_up.sh and `ristretto up` make one)");
  }
  ASSIGN_OR_RETURN(const std::string learner_token,
                   ResolveToken(absl::GetFlag(FLAGS_learner_token).has_value(),
                                absl::GetFlag(FLAGS_learner_token_file),
                                std::getenv("RISTRETTO_LEARNER_TOKEN"),
                                "learner-token", "RISTRETTO_LEARNER_TOKEN"));
  if (!learner_token.empty() && token.empty()) {
    return absl::InvalidArgumentError(
        "a learners' token (--learner-token-file, $RISTRETTO_LEARNER_TOKEN) "
        "needs a cluster token (--token-file, $RISTRETTO_TOKEN): without one "
        "no call is authenticated");
  }
  if (!learner_token.empty() &&
      (learner_token == token || learner_token == actor_token)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the learners' token equals the ",
                     learner_token == token ? "cluster" : "actors'",
                     " token: give learners a token of their own "
                     "(scripts/compose_up.sh and `ristretto up` make one)"));
  }
  const TlsFiles tls = TlsFilesFromFlags();
  ASSIGN_OR_RETURN(const std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(tls));
  const bool require_named = absl::GetFlag(FLAGS_require_named_certificates);
  if (require_named && !MutualTlsFromFlags()) {
    return absl::InvalidArgumentError(
        "--require-named-certificates needs mutual TLS (--tls-cert, "
        "--tls-key and --tls-ca): without client certificates there is "
        "nothing to name an id");
  }
  const std::string address = absl::GetFlag(FLAGS_address);
  // What protects the server, logged once. With a token every call is
  // authenticated (CoordinatorService), as with mutual TLS; without either
  // a non-loopback bind is refused unless --allow-insecure-network, before
  // the data directory or the database are touched.
  ASSIGN_OR_RETURN(const std::string exposure,
                   CheckExposure(address, !tls.cert_file.empty(),
                                 !token.empty() || MutualTlsFromFlags(),
                                 absl::GetFlag(FLAGS_allow_insecure_network)));
  RLOG(INFO) << "security: " << exposure;
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create --data-dir ", options.data_dir, ": ", ec.message()));
  }
  options.data_dir = std::filesystem::absolute(options.data_dir).string();
  const int64_t ttl_s = absl::GetFlag(FLAGS_lease_ttl_s);
  if (ttl_s < 1)
    return absl::InvalidArgumentError("--lease-ttl-s must be >= 1");
  options.lease_ttl = absl::Seconds(ttl_s);
  options.max_learners = absl::GetFlag(FLAGS_max_learners);
  if (options.max_learners < 1) {
    return absl::InvalidArgumentError("--max-learners must be >= 1");
  }
  const int64_t retention_s = absl::GetFlag(FLAGS_member_retention_s);
  if (retention_s != 0 && retention_s <= ttl_s) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--member-retention-s is ", retention_s,
        ": it must be 0 (never forget) or longer than --lease-ttl-s (", ttl_s,
        ")"));
  }
  options.member_retention = absl::Seconds(retention_s);
  const int64_t tick_ms = absl::GetFlag(FLAGS_tick_ms);
  // Declared before the scheduler: destroyed after it.
  ASSIGN_OR_RETURN(
      std::unique_ptr<MetricsServer> metrics_server,
      StartMetricsServer(absl::GetFlag(FLAGS_metrics_port),
                         absl::GetFlag(FLAGS_metrics_address), "coordinator"));
  std::unique_ptr<CoordinatorMetrics> metrics;
  if (metrics_server != nullptr) {
    metrics = std::make_unique<CoordinatorMetrics>(metrics_server->registry());
    options.metrics = metrics.get();
  }

  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Connect(dsn));
  RETURN_IF_ERROR(store->Migrate());
  Scheduler scheduler(std::move(store), options);
  CoordinatorService service(&scheduler, token, metrics.get(), actor_token,
                             learner_token, require_named);
  if (require_named) {
    RLOG(INFO) << "actors and learners must present a client certificate "
                  "that names their id (--require-named-certificates)";
  }
  if (!actor_token.empty()) {
    RLOG(INFO) << "actors authenticate with their own token (it finds "
                  "learners only)";
  }
  if (!learner_token.empty()) {
    RLOG(INFO) << "learners register with their own token (the cluster "
                  "token no longer registers them)";
  }
  if (!service.authenticating()) {
    RLOG(WARNING) << "no token (--token-file, $RISTRETTO_TOKEN): calls are "
                     "not authenticated (development mode; keep it on "
                     "loopback)";
  }

  const int64_t port = absl::GetFlag(FLAGS_port);
  const int64_t max_mb = absl::GetFlag(FLAGS_max_message_mb);
  if (max_mb < 1 || max_mb > 1024) {
    return absl::InvalidArgumentError("--max-message-mb must be in [1, 1024]");
  }
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(address, ":", port), credentials,
                           &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_mb << 20));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ":", port));
  }
  RLOG(INFO) << "listening on " << address << ":" << bound_port;

  {
    SignalWatcher signals;
    while (!signals.WaitForSignal(absl::Milliseconds(tick_ms))) {
      absl::Status s = scheduler.Tick();
      if (!s.ok()) {
        RLOG(ERROR) << "scheduling pass failed: " << s.ToString();
      }
      // Learners that died without Release leave nothing behind.
      service.ForgetSilentLearners();
    }
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  const SchedulerCounters c = scheduler.counters();
  RLOG(INFO) << "trials_created=" << c.trials_created
             << " runs_leased=" << c.runs_leased
             << " leases_expired=" << c.leases_expired
             << " runs_completed=" << c.runs_completed
             << " trials_completed=" << c.trials_completed
             << " trials_pruned=" << c.trials_pruned
             << " trials_failed=" << c.trials_failed;
  return absl::OkStatus();
}

}  // namespace
}  // namespace ristretto::coordinator

int main(int argc, char** argv) {
  ristretto::log::Init(argv[0]);
  if (const std::optional<int> exit_code = ristretto::HandleProcessCommandLine(
          "ristretto-coordinator", ristretto::coordinator::kUsage, argc,
          argv)) {
    return *exit_code;
  }
  absl::Status s = ristretto::coordinator::Main();
  if (!s.ok()) {
    RLOG(ERROR) << s.message();
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
