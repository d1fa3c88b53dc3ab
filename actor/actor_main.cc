// ristretto-actor: one CPU actor process. Connects to a learner (retrying
// with backoff until it answers), steps --envs env copies of the run it is
// assigned and streams trajectory chunks until SIGTERM/SIGINT (or, with
// --exit-when-idle, until the learner's runs have finished). With
// --metrics-port P (or 'auto') it serves Prometheus metrics
// (docs/metrics.md) and prints "metrics on HOST:PORT" first.
//
// At exit prints one line that integration tests parse:
//   actor <id>: env_steps_sent=<n> chunks_sent=<n> chunks_rejected=<n>
//   reconnects=<n> versions=<n>
// Exit status: 0 after a signal or an idle exit, 1 on a fatal error, 2 for
// bad flags. Progress and errors are log lines (common/log.h) on stderr;
// flag errors and the usage text stay plain stderr text for the user.
//
// TLS (common/grpc_security.h): with --tls-ca the actor verifies the learner
// and the coordinator against that CA (their certificates must name the
// host of the address dialled: --learner, --coordinator, or the learner's
// advertised address); --tls-cert/--tls-key add a client certificate for
// servers under mutual TLS. A server the actor cannot verify, or that
// refuses it, is retried like an unreachable one ("... ended: UNAVAILABLE").
//
// Credentials (docs/security.md): the token from --token-file (mode 600) or
// $RISTRETTO_TOKEN. With --coordinator it is the actor's credential there (a
// coordinator with a token refuses FindLearner without it) and the learner
// is shown the actor ticket of each FindLearner answer instead; with
// --learner alone the token goes to the learner (a learner with a token
// refuses actors without it). --token VALUE is refused (argv is readable
// with ps).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "actor/actor.h"
#include "common/cert_identity.h"
#include "common/flags.h"
#include "common/grpc_process.h"
#include "common/grpc_security.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/secret_file.h"
#include "common/shutdown_signal.h"
#include "common/status_macros.h"
#include "common/tls_flags.h"
#include "learner/torch/torch_runtime.h"
#include "wire/learner_client.h"

// Each flag once: name, type, default and meaning.
ABSL_FLAG(std::string, learner, "", "learner address HOST:PORT");
ABSL_FLAG(std::string, coordinator, "",
          "coordinator address HOST:PORT: it names a learner before every "
          "connection (then --learner is optional)");
ABSL_FLAG(int64_t, envs, ristretto::actor::ActorOptions{}.num_envs,
          "env copies stepped together, in [1, 1048576]");
ABSL_FLAG(std::string, actor_id, "",
          "unique id of this actor (empty: the one its --tls-cert names, "
          "else <hostname>-<pid>)");
ABSL_FLAG(std::string, cache_dir, "",
          "dataset cache directory (empty: $RISTRETTO_CACHE, else "
          "~/.cache/ristretto/datasets)");
ABSL_FLAG(int64_t, seed, 0,
          "mixed into the env and noise seeds of every assignment (0: none)");
ABSL_FLAG(int64_t, max_inflight, ristretto::actor::ActorOptions{}.max_inflight,
          "chunks sent and not yet acknowledged, in [1, 1024]");
ABSL_FLAG(bool, exit_when_idle, false,
          "exit (status 0) once the learner's runs have finished and no new "
          "assignment arrives");
ABSL_FLAG(std::string, token_file, "",
          "file (mode 600) holding the token the coordinator (or, with "
          "--learner alone, the learner) asks of actors (or "
          "$RISTRETTO_TOKEN)");
ABSL_FLAG(std::optional<std::string>, token, std::nullopt,
          "refused: a token in argv is readable with ps; use --token-file or "
          "$RISTRETTO_TOKEN");
ABSL_FLAG(std::string, metrics_port, "0",
          "Prometheus metrics port, 'auto' for any free one (0: off)");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0",
          "address the metrics endpoint binds");

namespace ristretto::actor {
namespace {

constexpr char kUsage[] =
    "usage: ristretto-actor (--learner HOST:PORT | --coordinator HOST:PORT)\n"
    "         [--envs B (16)]\n"
    "         [--actor-id ID (hostname-pid)] [--cache-dir DIR]\n"
    "         [--seed N (0)] [--max-inflight N (4)] [--exit-when-idle]\n"
    "         [--metrics-port P|auto (0: off)] [--metrics-address A "
    "(0.0.0.0)]\n"
    "         [--tls-ca FILE [--tls-cert FILE --tls-key FILE (mutual "
    "TLS)]]\n"
    "         [--token-file FILE (mode 600; or $RISTRETTO_TOKEN)]\n";

struct Flags {
  ActorOptions options;
  // To learners and the coordinator: TLS from --tls-*, or plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // The coordinator's cluster token (FindLearner); empty: none.
  std::string token;
  std::string metrics_port;  // ParseMetricsPort syntax
  std::string metrics_address;
};

// The actor's options from the parsed flags, range-checked.
absl::StatusOr<Flags> FlagsFromCommandLine() {
  ActorOptions options;
  options.coordinator_address = absl::GetFlag(FLAGS_coordinator);
  options.learner_address = absl::GetFlag(FLAGS_learner);
  if (options.coordinator_address.empty() && options.learner_address.empty()) {
    return absl::InvalidArgumentError("missing required --learner");
  }
  const int64_t envs = absl::GetFlag(FLAGS_envs);
  options.actor_id = absl::GetFlag(FLAGS_actor_id);
  options.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  const int64_t seed = absl::GetFlag(FLAGS_seed);
  const int64_t inflight = absl::GetFlag(FLAGS_max_inflight);
  if (envs < 1 || envs > (1 << 20) || inflight < 1 || inflight > 1024) {
    return absl::InvalidArgumentError(
        "--envs must be in [1, 1048576] and --max-inflight in [1, 1024]");
  }
  options.num_envs = static_cast<int>(envs);
  options.seed = static_cast<uint64_t>(seed);
  options.max_inflight = static_cast<int>(inflight);
  options.exit_when_idle = absl::GetFlag(FLAGS_exit_when_idle);
  Flags flags;
  flags.options = options;
  const TlsFiles tls = TlsFilesFromFlags();
  ASSIGN_OR_RETURN(flags.credentials, MakeChannelCredentials(tls));
  // A client certificate that names its holder decides the actor id (the
  // coordinator admits no other).
  ASSIGN_OR_RETURN(
      flags.options.actor_id,
      ResolveIdFromCertificate(auth::Role::kActor, flags.options.actor_id,
                               tls.cert_file, "--actor-id"));
  ASSIGN_OR_RETURN(
      flags.token,
      ResolveToken(absl::GetFlag(FLAGS_token).has_value(),
                   absl::GetFlag(FLAGS_token_file), std::getenv(kTokenEnv)));
  flags.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  RETURN_IF_ERROR(ParseMetricsPort(flags.metrics_port).status());
  flags.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  return flags;
}

int Main(int argc, char** argv) {
  log::Init(argv[0]);
  HoldGrpcUntilExit();
  if (const absl::Status s = InstallShutdownHandlers(); !s.ok()) {
    RLOG(ERROR) << "ristretto-actor: " << s.ToString();
    return 1;
  }

  if (const std::optional<int> exit_code =
          HandleProcessCommandLine("ristretto-actor", kUsage, argc, argv)) {
    return *exit_code;
  }
  // Allocator, OpenBLAS and LibTorch threads (common/runtime_policy.h),
  // before gRPC or LibTorch start threads (after --help: it logs a line).
  learner::ApplyProcessRuntimePolicy(ProcessRole::kActor);
  absl::StatusOr<Flags> flags = FlagsFromCommandLine();
  if (!flags.ok()) {
    std::fprintf(stderr, "ristretto-actor: %s (see --help)\n",
                 std::string(flags.status().message()).c_str());
    return 2;
  }
  // Declared before the actor: destroyed after it.
  absl::StatusOr<std::unique_ptr<MetricsServer>> metrics =
      StartMetricsServer(flags->metrics_port, flags->metrics_address, "actor");
  if (!metrics.ok()) {
    RLOG(ERROR) << "ristretto-actor: " << metrics.status().ToString();
    return 1;
  }
  if (*metrics != nullptr) flags->options.metrics = &(*metrics)->registry();
  // The gRPC clients Create() would make, secured by --tls-*.
  ActorClients clients;
  wire::GrpcLearnerClientOptions learner_client;
  learner_client.max_message_bytes = flags->options.max_message_bytes;
  learner_client.rpc_deadline = flags->options.rpc_deadline;
  learner_client.credentials = flags->credentials;
  // To learners: the token (--learner alone), or the actor ticket of the
  // last FindLearner answer (--coordinator; the cluster token stays with
  // the coordinator).
  const bool coordinated = !flags->options.coordinator_address.empty();
  auto bearer = std::make_shared<wire::LearnerCredential>(
      coordinated ? std::string() : flags->token);
  learner_client.bearer = bearer;
  clients.learners = wire::GrpcLearnerClientFactory(learner_client);
  if (coordinated) {
    clients.coordinator = wire::NewGrpcActorCoordinatorClient(
        flags->options.coordinator_address, absl::Seconds(5),
        flags->credentials, flags->token, bearer);
  }
  absl::StatusOr<std::unique_ptr<Actor>> created =
      Actor::Create(flags->options, std::move(clients));
  if (!created.ok()) {
    std::fprintf(stderr, "ristretto-actor: %s\n%s",
                 created.status().ToString().c_str(), kUsage);
    return 2;
  }
  Actor& actor = **created;
  const auto& o = actor.options();
  RLOG(INFO) << "actor " << actor.actor_id() << ": "
             << (o.coordinator_address.empty()
                     ? absl::StrCat("learner ", o.learner_address)
                     : absl::StrCat("learners found through the coordinator ",
                                    o.coordinator_address))
             << ", " << o.num_envs << " envs, cache " << o.cache_dir;

  absl::Status status;
  {
    // The first signal stops the actor cleanly, a second exits at once.
    SignalWatcher signals([&actor](int n) {
      if (n == 1) {
        RLOG(INFO) << "actor " << actor.actor_id()
                   << ": signal received; stopping";
        actor.Stop();
      } else {
        RLOG(WARNING) << "actor " << actor.actor_id()
                      << ": second signal; exiting now";
        std::_Exit(1);
      }
    });
    status = actor.Run();
  }

  std::printf(
      "actor %s: env_steps_sent=%lld chunks_sent=%lld chunks_rejected=%lld "
      "reconnects=%lld versions=%lld\n",
      actor.actor_id().c_str(), static_cast<long long>(actor.env_steps_sent()),
      static_cast<long long>(actor.chunks_sent()),
      static_cast<long long>(actor.chunks_rejected()),
      static_cast<long long>(actor.reconnects()),
      static_cast<long long>(actor.weight_versions_received()));
  std::fflush(stdout);
  if (!status.ok()) {
    RLOG(ERROR) << "actor " << actor.actor_id() << ": " << status.ToString();
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ristretto::actor

int main(int argc, char** argv) { return ristretto::actor::Main(argc, argv); }
