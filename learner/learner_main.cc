// ristretto-learner: hosts runs on one device and serves actors over gRPC.
// With --coordinator HOST:PORT it registers --slots and leases runs from the
// coordinator (CoordinatorAgent); without, the runs come from the command
// line: K runs of the same dataset with seeds seed..seed+K−1.
// Every run's memory estimate is admitted against --memory-mb (default: half
// the machine's RAM); on CUDA, --gpu-memory-fraction caps LibTorch's caching
// allocator.
//
// With --metrics-port P (or 'auto') it serves Prometheus metrics on
// --metrics-address:P (docs/metrics.md), GPU telemetry included, and prints
// "metrics on HOST:PORT".
//
// Prints "listening on HOST:PORT" once serving; on SIGTERM/SIGINT (or, with
// --exit-when-done, once every run has reached its budget) it stops
// accepting, checkpoints every run and prints one summary line per run.
//
// The registration token comes from --token-file (mode 600) or
// $RISTRETTO_TOKEN, never from argv (every local user reads it with ps):
// --token VALUE is refused.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/args.h"
#include "cli/run_flags.h"
#include "common/gpu_metrics.h"
#include "common/grpc_process.h"
#include "common/metrics.h"
#include "common/secret_file.h"
#include "common/shutdown_signal.h"
#include "common/status_macros.h"
#include "env/dataset.h"
#include "grpcpp/grpcpp.h"
#include "learner/service/coordinator_agent.h"
#include "learner/service/learner_metrics.h"
#include "learner/service/learner_service.h"
#include "learner/service/run_host.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/device_memory.h"
#include "wire/grpc_options.h"

namespace ristretto::learner {
namespace {

constexpr char kUsage[] =
    "usage: ristretto-learner [--address A (127.0.0.1)] [--port P (0: any)]\n"
    "    [--device cpu|cuda[:N] (cpu)] [--threads N (1)] [--memory-mb MB]\n"
    "    [--gpu-memory-fraction F] [--max-message-mb MB (64)]\n"
    "    [--run-dir DIR (/tmp/ristretto-learner)] [--queue N (2)]\n"
    "    [--metrics-port P|auto (0: off)] [--metrics-address A (0.0.0.0)]\n"
    "  leasing runs from a coordinator:\n"
    "    --coordinator HOST:PORT [--slots N (2)] [--member-id ID]\n"
    "    [--advertise HOST:PORT] [--cache-dir DIR]\n"
    "    [--token-file FILE (mode 600; or $RISTRETTO_TOKEN)]\n"
    "  or runs from the command line:\n"
    "    [--runs K (1)] [--seed N (1)] [--budget STEPS (100000)]\n"
    "    [--dataset FILE | --synthetic-rows N --synthetic-assets N\n"
    "     --synthetic-seed N --predictability X] [--samples-per-update N]\n"
    "    [--rollout N (128)] [--episode N (1024)] [--policy-hidden W,W]\n"
    "    [--lr X] [--epochs N] [--minibatch N] [--lookback N]\n"
    "    [--validation-share X (0.5)] [--eval-every N] [--norm-action X]\n"
    "    [--buy-fee X] [--sell-fee X] [--reward MODE] [--gamma X]\n"
    "    [--lambda X] [--max-policy-lag N] [--exit-when-done]\n";

struct Listening {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // HOST:PORT actually bound
};

// Starts the gRPC server (--address, --port; 0 = any free port) and prints
// "listening on HOST:PORT".
absl::StatusOr<Listening> Listen(const cli::Args& args, grpc::Service* service,
                                 int64_t max_message_bytes) {
  ASSIGN_OR_RETURN(std::string address, args.String("address", "127.0.0.1"));
  ASSIGN_OR_RETURN(int64_t port, args.Int("port", 0));
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(address, ":", port),
                           grpc::InsecureServerCredentials(), &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(max_message_bytes));
  builder.RegisterService(service);
  Listening out;
  out.server = builder.BuildAndStart();
  if (out.server == nullptr || bound_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ":", port));
  }
  out.address = absl::StrCat(address, ":", bound_port);
  std::printf("listening on %s\n", out.address.c_str());
  std::fflush(stdout);
  return out;
}

// Blocks until SIGTERM/SIGINT or until `done()` (polled every 100 ms).
void WaitForStop(const std::function<bool()>& done) {
  SignalWatcher signals;
  while (!signals.WaitForSignal(absl::Milliseconds(100))) {
    if (done()) break;
  }
}

// Streams end when their actors half-close after the Stop message (so
// chunks in flight are still counted); give them time, then cancel.
void ShutDown(grpc::Server* server) {
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

void PrintRun(const std::string& run_id, const RunCounters& c,
              const std::string& outcome) {
  std::printf(
      "learner: run %s version=%lld received=%lld trained=%lld dropped=%lld "
      "rejected=%lld finished=%d score=%.4f%s%s\n",
      run_id.c_str(), static_cast<long long>(c.policy_version),
      static_cast<long long>(c.env_steps_received),
      static_cast<long long>(c.env_steps_trained),
      static_cast<long long>(c.env_steps_dropped),
      static_cast<long long>(c.chunks_rejected), c.finished ? 1 : 0,
      c.last_score, outcome.empty() ? "" : " outcome=", outcome.c_str());
}

// Half of the machine's physical memory, in MiB.
absl::StatusOr<int64_t> DefaultMemoryMb() {
  const int64_t pages = sysconf(_SC_PHYS_PAGES);
  const int64_t page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) {
    return absl::InternalError("cannot read the machine's memory size");
  }
  return static_cast<int64_t>(pages) * page_size / 2 >> 20;
}

// The largest chunk a message of `max_message_bytes` can carry, in env steps.
int64_t MaxChunkSamples(int64_t max_message_bytes, int obs_size,
                        int action_size) {
  return max_message_bytes / ((obs_size + 2 * int64_t{action_size} + 4) * 4);
}

// Coordinator mode: lease runs from --coordinator until SIGTERM.
absl::Status ServeCoordinated(const cli::Args& args, const std::string& token,
                              int64_t budget_bytes, int64_t max_message_bytes,
                              LearnerMetrics* metrics) {
  LearnerServiceOptions service_options;
  service_options.metrics = metrics;
  LearnerService service({}, service_options);
  ASSIGN_OR_RETURN(Listening listening,
                   Listen(args, &service, max_message_bytes));
  AgentOptions options;
  ASSIGN_OR_RETURN(options.coordinator_address, args.String("coordinator", ""));
  ASSIGN_OR_RETURN(options.advertise_address,
                   args.String("advertise", listening.address));
  ASSIGN_OR_RETURN(
      options.member_id,
      args.String("member-id", absl::StrCat("learner-", listening.address)));
  options.token = token;
  ASSIGN_OR_RETURN(int64_t slots, args.Int("slots", 2));
  if (slots < 1) return absl::InvalidArgumentError("--slots must be >= 1");
  options.slots = static_cast<int>(slots);
  options.memory_budget_bytes = budget_bytes;
  ASSIGN_OR_RETURN(options.device, args.String("device", "cpu"));
  ASSIGN_OR_RETURN(int64_t threads, args.Int("threads", 1));
  options.cpu_threads = static_cast<int>(threads);
  ASSIGN_OR_RETURN(std::string run_root,
                   args.String("run-dir", "/tmp/ristretto-learner"));
  ASSIGN_OR_RETURN(options.cache_dir,
                   args.String("cache-dir", run_root + "/datasets"));
  // Chunks are bounded by the message cap; assume the smallest observation.
  options.max_chunk_samples = MaxChunkSamples(max_message_bytes, 8, 1);
  ASSIGN_OR_RETURN(int64_t queue, args.Int("queue", 2));
  options.queue_capacity = static_cast<int>(queue);
  options.metrics = metrics;
  CoordinatorAgent agent(options, &service);
  agent.Start();
  WaitForStop([] { return false; });
  agent.Stop();  // checkpoints, completes or releases every run
  ShutDown(listening.server.get());
  for (const AgentRunSummary& r : agent.summaries()) {
    PrintRun(r.run_name, r.counters, r.outcome);
  }
  std::printf("learner: wire_rejected=%lld\n",
              static_cast<long long>(service.chunks_rejected()));
  return absl::OkStatus();
}

absl::Status Main(int argc, char** argv) {
  wire::TuneAllocatorForChunkTraffic();  // before gRPC starts threads
  HoldGrpcUntilExit();
  RETURN_IF_ERROR(InstallShutdownHandlers());

  ASSIGN_OR_RETURN(cli::Args args,
                   cli::Args::Parse(argc, argv, 1, {"exit-when-done"}));
  if (args.Has("help")) {
    std::fputs(kUsage, stdout);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(args.CheckKnown({"address",
                                   "port",
                                   "runs",
                                   "dataset",
                                   "synthetic-rows",
                                   "synthetic-assets",
                                   "synthetic-seed",
                                   "predictability",
                                   "budget",
                                   "samples-per-update",
                                   "rollout",
                                   "episode",
                                   "policy-hidden",
                                   "lr",
                                   "epochs",
                                   "minibatch",
                                   "lookback",
                                   "run-dir",
                                   "validation-share",
                                   "eval-every",
                                   "max-message-mb",
                                   "norm-action",
                                   "buy-fee",
                                   "sell-fee",
                                   "reward",
                                   "gamma",
                                   "lambda",
                                   "seed",
                                   "exit-when-done",
                                   "queue",
                                   "max-policy-lag",
                                   "device",
                                   "threads",
                                   "coordinator",
                                   "slots",
                                   "member-id",
                                   "advertise",
                                   "token",
                                   "token-file",
                                   "cache-dir",
                                   "memory-mb",
                                   "gpu-memory-fraction",
                                   "metrics-port",
                                   "metrics-address"}));
  // Before anything starts: a refused secret leaves nothing behind.
  ASSIGN_OR_RETURN(const std::string token_file, args.String("token-file", ""));
  ASSIGN_OR_RETURN(
      const std::string token,
      ResolveToken(args.Has("token"), token_file, std::getenv(kTokenEnv)));
  ASSIGN_OR_RETURN(int64_t default_mb, DefaultMemoryMb());
  ASSIGN_OR_RETURN(int64_t memory_mb, args.Int("memory-mb", default_mb));
  if (memory_mb < 1) {
    return absl::InvalidArgumentError("--memory-mb must be >= 1");
  }
  const int64_t budget_bytes = memory_mb << 20;
  ASSIGN_OR_RETURN(int64_t max_mb, args.Int("max-message-mb", 64));
  if (max_mb < 1 || max_mb > 1024) {
    return absl::InvalidArgumentError("--max-message-mb must be in [1, 1024]");
  }
  const int64_t max_message_bytes = max_mb << 20;
  ASSIGN_OR_RETURN(double gpu_fraction, args.Double("gpu-memory-fraction", 0));
  ASSIGN_OR_RETURN(std::string device, args.String("device", "cpu"));
  RETURN_IF_ERROR(CapDeviceMemory(device, gpu_fraction));

  // Metrics first, so every run exports from its start. Declared before
  // the runs, the service and the agent: destroyed after them.
  ASSIGN_OR_RETURN(std::string metrics_port, args.String("metrics-port", "0"));
  ASSIGN_OR_RETURN(std::string metrics_address,
                   args.String("metrics-address", "0.0.0.0"));
  ASSIGN_OR_RETURN(
      std::unique_ptr<MetricsServer> metrics_server,
      StartMetricsServer(metrics_port, metrics_address, "learner"));
  std::unique_ptr<LearnerMetrics> metrics;
  if (metrics_server != nullptr) {
    metrics = std::make_unique<LearnerMetrics>(metrics_server.get());
    std::shared_ptr<const GpuMonitor> gpu =
        GpuMonitor::Open(GpuMonitorOptions{});
    if (gpu->source() == GpuMonitor::kNone) {
      std::fprintf(stderr,
                   "learner: no GPU telemetry (neither NVML nor ROCm SMI "
                   "could be loaded)\n");
    } else {
      std::fprintf(stderr, "learner: GPU telemetry from %s: %s\n",
                   gpu->source().c_str(), gpu->detail().c_str());
    }
    metrics_server->AddCollectable(MakeGpuCollector(gpu));
  }
  if (args.Has("coordinator")) {
    return ServeCoordinated(args, token, budget_bytes, max_message_bytes,
                            metrics.get());
  }

  // Dataset: a file, or a synthetic market written next to the runs so
  // actors can fetch it by id.
  ASSIGN_OR_RETURN(std::string run_root,
                   args.String("run-dir", "/tmp/ristretto-learner"));
  std::string dataset_path;
  ASSIGN_OR_RETURN(env::Dataset dataset,
                   cli::DatasetFromArgs(args, 4000, &dataset_path));
  if (dataset_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(run_root, ec);
    dataset_path = run_root + "/dataset.rds";
    RETURN_IF_ERROR(env::WriteDataset(dataset, dataset_path));
  }
  const std::string dataset_id = dataset.ComputeId();
  ASSIGN_OR_RETURN(auto market, env::MarketData::FromDataset(dataset));

  TrainerOptions base;
  ASSIGN_OR_RETURN(int64_t lookback, args.Int("lookback", 1));
  base.env.lookback = static_cast<int>(lookback);
  ASSIGN_OR_RETURN(base.env.norm_action,
                   args.Double("norm-action", base.env.norm_action));
  ASSIGN_OR_RETURN(base.env.buy_fee, args.Double("buy-fee", base.env.buy_fee));
  ASSIGN_OR_RETURN(base.env.sell_fee,
                   args.Double("sell-fee", base.env.sell_fee));
  ASSIGN_OR_RETURN(std::string reward, args.String("reward", "shaped"));
  RETURN_IF_ERROR(env::ParseRewardMode(reward, &base.env.reward_mode));
  ASSIGN_OR_RETURN(std::string hidden, args.String("policy-hidden", "64,64"));
  ASSIGN_OR_RETURN(base.network.policy_hidden, cli::ParseWidths(hidden));
  base.network.value_hidden = base.network.policy_hidden;
  ASSIGN_OR_RETURN(base.ppo.learning_rate, args.Double("lr", 3e-4));
  ASSIGN_OR_RETURN(int64_t epochs, args.Int("epochs", 4));
  base.ppo.epochs = static_cast<int>(epochs);
  ASSIGN_OR_RETURN(int64_t minibatch, args.Int("minibatch", 1024));
  base.ppo.minibatch_size = static_cast<int>(minibatch);
  ASSIGN_OR_RETURN(base.ppo.gamma, args.Double("gamma", base.ppo.gamma));
  ASSIGN_OR_RETURN(base.ppo.gae_lambda,
                   args.Double("lambda", base.ppo.gae_lambda));
  ASSIGN_OR_RETURN(int64_t lag,
                   args.Int("max-policy-lag", base.ppo.max_policy_lag));
  base.ppo.max_policy_lag = static_cast<int>(lag);
  base.ppo.device = device;
  ASSIGN_OR_RETURN(int64_t threads, args.Int("threads", 1));
  base.ppo.cpu_threads = static_cast<int>(threads);
  ASSIGN_OR_RETURN(base.budget_env_steps, args.Int("budget", 100000));
  ASSIGN_OR_RETURN(base.episode_steps, args.Int("episode", 1024));
  ASSIGN_OR_RETURN(base.eval_every_env_steps, args.Int("eval-every", 0));
  base.dataset_id = dataset_id;
  base.feature_names = dataset.feature_names;
  ASSIGN_OR_RETURN(double share, args.Double("validation-share", 0.5));
  const int64_t T = market->num_rows;
  const int64_t split = T - static_cast<int64_t>(share * T);
  base.train_domains = {env::Domain{0, split}};
  base.validation_domains = {env::Domain{split, T}};

  ASSIGN_OR_RETURN(int64_t rollout, args.Int("rollout", 128));
  base.rollout_steps = static_cast<int>(rollout);
  ASSIGN_OR_RETURN(int64_t num_runs, args.Int("runs", 1));
  ASSIGN_OR_RETURN(int64_t seed, args.Int("seed", 1));
  ASSIGN_OR_RETURN(int64_t samples, args.Int("samples-per-update", 1024));
  ASSIGN_OR_RETURN(int64_t queue, args.Int("queue", 2));
  std::vector<std::shared_ptr<RunHost>> runs;
  int64_t bytes_in_use = 0;
  for (int64_t k = 0; k < num_runs; ++k) {
    RunSpec spec;
    spec.run_id = absl::StrCat("run-", k);
    spec.trainer = base;
    spec.trainer.seed = static_cast<uint64_t>(seed + k);
    spec.trainer.run_dir = RunDirectory(run_root, "local", spec.run_id, 0);
    spec.samples_per_update = samples;
    spec.queue_capacity = static_cast<int>(queue);
    spec.metrics = metrics.get();
    spec.study = "local";
    spec.trial = k;
    spec.fold = 0;
    const int obs_size =
        1 + market->num_assets + market->num_features * base.env.lookback;
    const int64_t bytes = EstimateRunBytes(
        spec, obs_size, market->num_assets,
        MaxChunkSamples(max_message_bytes, obs_size, market->num_assets));
    if (bytes_in_use + bytes > budget_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("run ", spec.run_id, " needs about ", bytes >> 20,
                       " MiB; the memory budget is ", memory_mb, " MiB with ",
                       bytes_in_use >> 20, " MiB taken by ", k,
                       " run(s) (raise --memory-mb or host fewer --runs)"));
    }
    bytes_in_use += bytes;
    ASSIGN_OR_RETURN(std::unique_ptr<RunHost> host,
                     RunHost::Create(spec, market));
    runs.push_back(std::move(host));
  }
  std::fprintf(stderr, "learner: %lld run(s), ~%lld MiB of %lld MiB budget\n",
               static_cast<long long>(num_runs),
               static_cast<long long>(bytes_in_use >> 20),
               static_cast<long long>(memory_mb));

  LearnerServiceOptions service_options;
  service_options.dataset_path = dataset_path;
  service_options.dataset_id = dataset_id;
  service_options.metrics = metrics.get();
  LearnerService service(runs, service_options);

  ASSIGN_OR_RETURN(Listening listening,
                   Listen(args, &service, max_message_bytes));
  const bool exit_when_done = args.Has("exit-when-done");
  WaitForStop([&] {
    if (!exit_when_done) return false;
    bool all = true;
    for (const auto& run : runs) all = all && run->counters().finished;
    return all;
  });
  // Let finished runs' Stop messages reach the actors, then shut down.
  for (auto& host : runs) host->Stop();
  ShutDown(listening.server.get());
  for (const auto& run : runs) PrintRun(run->run_id(), run->counters(), "");
  std::printf("learner: wire_rejected=%lld\n",
              static_cast<long long>(service.chunks_rejected()));
  return absl::OkStatus();
}

}  // namespace
}  // namespace ristretto::learner

int main(int argc, char** argv) {
  absl::Status s = ristretto::learner::Main(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "ristretto-learner: %s\n",
                 std::string(s.message()).c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
