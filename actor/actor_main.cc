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
// bad flags.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "actor/actor.h"
#include "cli/args.h"
#include "common/grpc_process.h"
#include "common/metrics.h"
#include "common/shutdown_signal.h"
#include "common/status_macros.h"
#include "wire/grpc_options.h"

namespace ristretto::actor {
namespace {

constexpr char kUsage[] =
    "usage: ristretto-actor (--learner HOST:PORT | --coordinator HOST:PORT)\n"
    "         [--envs B (16)]\n"
    "         [--actor-id ID (hostname-pid)] [--cache-dir DIR]\n"
    "         [--seed N (0)] [--max-inflight N (4)] [--exit-when-idle]\n"
    "         [--metrics-port P|auto (0: off)] [--metrics-address A "
    "(0.0.0.0)]\n";

struct Flags {
  ActorOptions options;
  std::string metrics_port;  // ParseMetricsPort syntax
  std::string metrics_address;
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  ASSIGN_OR_RETURN(cli::Args args,
                   cli::Args::Parse(argc, argv, 1, {"exit-when-idle", "help"}));
  RETURN_IF_ERROR(
      args.CheckKnown({"learner", "coordinator", "envs", "actor-id",
                       "cache-dir", "seed", "max-inflight", "exit-when-idle",
                       "help", "metrics-port", "metrics-address"}));
  if (args.Has("help")) return absl::CancelledError("help");
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", args.positional().front(), "'"));
  }
  ActorOptions options;
  ASSIGN_OR_RETURN(options.coordinator_address, args.String("coordinator", ""));
  if (options.coordinator_address.empty()) {
    ASSIGN_OR_RETURN(options.learner_address, args.RequiredString("learner"));
  } else {
    ASSIGN_OR_RETURN(options.learner_address, args.String("learner", ""));
  }
  ASSIGN_OR_RETURN(int64_t envs, args.Int("envs", options.num_envs));
  ASSIGN_OR_RETURN(options.actor_id, args.String("actor-id", ""));
  ASSIGN_OR_RETURN(options.cache_dir, args.String("cache-dir", ""));
  ASSIGN_OR_RETURN(int64_t seed, args.Int("seed", 0));
  ASSIGN_OR_RETURN(int64_t inflight,
                   args.Int("max-inflight", options.max_inflight));
  if (envs < 1 || envs > (1 << 20) || inflight < 1 || inflight > 1024) {
    return absl::InvalidArgumentError(
        "--envs must be in [1, 1048576] and --max-inflight in [1, 1024]");
  }
  options.num_envs = static_cast<int>(envs);
  options.seed = static_cast<uint64_t>(seed);
  options.max_inflight = static_cast<int>(inflight);
  options.exit_when_idle = args.Has("exit-when-idle");
  Flags flags;
  flags.options = options;
  ASSIGN_OR_RETURN(flags.metrics_port, args.String("metrics-port", "0"));
  RETURN_IF_ERROR(ParseMetricsPort(flags.metrics_port).status());
  ASSIGN_OR_RETURN(flags.metrics_address,
                   args.String("metrics-address", "0.0.0.0"));
  return flags;
}

int Main(int argc, char** argv) {
  wire::TuneAllocatorForChunkTraffic();  // before gRPC starts threads
  HoldGrpcUntilExit();
  if (const absl::Status s = InstallShutdownHandlers(); !s.ok()) {
    std::fprintf(stderr, "ristretto-actor: %s\n", s.ToString().c_str());
    return 1;
  }

  absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok() && flags.status().code() == absl::StatusCode::kCancelled) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!flags.ok()) {
    std::fprintf(stderr, "ristretto-actor: %s\n%s",
                 flags.status().ToString().c_str(), kUsage);
    return 2;
  }
  // Declared before the actor: destroyed after it.
  absl::StatusOr<std::unique_ptr<MetricsServer>> metrics =
      StartMetricsServer(flags->metrics_port, flags->metrics_address, "actor");
  if (!metrics.ok()) {
    std::fprintf(stderr, "ristretto-actor: %s\n",
                 metrics.status().ToString().c_str());
    return 1;
  }
  if (*metrics != nullptr) flags->options.metrics = &(*metrics)->registry();
  absl::StatusOr<std::unique_ptr<Actor>> created =
      Actor::Create(flags->options);
  if (!created.ok()) {
    std::fprintf(stderr, "ristretto-actor: %s\n%s",
                 created.status().ToString().c_str(), kUsage);
    return 2;
  }
  Actor& actor = **created;
  std::fprintf(stderr, "actor %s: learner %s, %d envs, cache %s\n",
               actor.actor_id().c_str(),
               actor.options().learner_address.c_str(),
               actor.options().num_envs, actor.options().cache_dir.c_str());

  absl::Status status;
  {
    // The first signal stops the actor cleanly, a second exits at once.
    SignalWatcher signals([&actor](int n) {
      if (n == 1) {
        std::fprintf(stderr, "actor %s: signal received; stopping\n",
                     actor.actor_id().c_str());
        actor.Stop();
      } else {
        std::fprintf(stderr, "actor %s: second signal; exiting now\n",
                     actor.actor_id().c_str());
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
    std::fprintf(stderr, "actor %s: %s\n", actor.actor_id().c_str(),
                 status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ristretto::actor

int main(int argc, char** argv) { return ristretto::actor::Main(argc, argv); }
