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
// The token comes from --token-file (mode 600) or $RISTRETTO_TOKEN, never
// from argv (every local user reads it with ps): --token VALUE is refused.
// With --coordinator it is what the learner registers with (the learners'
// token when the coordinator has one, else the cluster token) and, as
// "authorization: Bearer <token>", it reads GetStatus only: coordinated
// actors present the tickets the coordinator minted, and the token, which
// every learner holds, admits no Act or FetchDataset (LearnerService,
// docs/security.md). Stand-alone, actors and operators present the token
// for every call. Without a token (and without mutual TLS) the learner
// binds only to loopback unless --allow-insecure-network.
//
// TLS (common/grpc_security.h): --tls-cert/--tls-key make the server TLS,
// and --tls-ca adds mutual TLS (actors must present a certificate it
// signed). With --coordinator the learner is also the coordinator's client:
// it verifies the coordinator against --tls-ca (required then) and presents
// --tls-cert/--tls-key if the coordinator asks for a client certificate.
// Actors dial --advertise (or the bound address): the certificate must name
// that host (DNS or IP SAN).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/blas_thread_tuner.h"
#include "common/cert_identity.h"
#include "common/flags.h"
#include "common/gpu_metrics.h"
#include "common/grpc_process.h"
#include "common/grpc_security.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/secret_file.h"
#include "common/shutdown_signal.h"
#include "common/status_macros.h"
#include "common/tls_flags.h"
#include "env/dataset.h"
#include "grpcpp/grpcpp.h"
#include "learner/run_flags.h"
#include "learner/run_options.h"
#include "learner/service/coordinator_agent.h"
#include "learner/service/learner_metrics.h"
#include "learner/service/learner_service.h"
#include "learner/service/run_host.h"
#include "learner/standalone_run.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/device_memory.h"
#include "learner/torch/torch_runtime.h"

// Each flag once: name, type, default and meaning.
// The process.
ABSL_FLAG(std::string, address, "127.0.0.1", "address the gRPC server binds");
ABSL_FLAG(int64_t, port, 0, "gRPC port (0: any free port)");
ABSL_FLAG(std::string, device, "cpu", "cpu, cuda or cuda:N");
ABSL_FLAG(std::optional<int64_t>, memory_mb, std::nullopt,
          "memory budget every run's estimate is admitted against, MiB "
          "(empty: half the machine's RAM)");
ABSL_FLAG(double, gpu_memory_fraction, 0,
          "cap of LibTorch's CUDA caching allocator, fraction of the device "
          "(0: no cap)");
ABSL_FLAG(int64_t, max_message_mb, 64,
          "largest gRPC message sent or received, MiB, in [1, 1024]");
ABSL_FLAG(std::string, run_dir, "/tmp/ristretto-learner",
          "where runs keep their checkpoints (and a synthetic dataset)");
ABSL_FLAG(int64_t, queue, 2, "trajectory chunks queued per run");
ABSL_FLAG(int64_t, max_actors_per_run,
          ristretto::learner::LearnerServiceOptions{}.max_actors_per_run,
          "most actors streaming into one run at once, >= 1 (more are told "
          "to come back later)");
ABSL_FLAG(std::string, metrics_port, "0",
          "Prometheus metrics port, 'auto' for any free one (0: off)");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0",
          "address the metrics endpoint binds");
// Leasing runs from a coordinator.
ABSL_FLAG(std::string, coordinator, "",
          "coordinator HOST:PORT to lease runs from (empty: the runs come "
          "from the flags below)");
ABSL_FLAG(int64_t, slots, 2, "runs leased at once, >= 1");
ABSL_FLAG(std::string, member_id, "",
          "id registered with the coordinator (empty: the one the client "
          "certificate shown to it names, else learner-HOST:PORT)");
ABSL_FLAG(std::string, advertise, "",
          "HOST:PORT actors are told to connect to (empty: the bound address)");
ABSL_FLAG(std::string, cache_dir, "",
          "dataset cache directory (empty: RUN_DIR/datasets)");
ABSL_FLAG(std::string, token_file, "",
          "file (mode 600) holding the token (or $RISTRETTO_TOKEN): with "
          "--coordinator the one it registers with (the learners' token), "
          "then only GetStatus here; stand-alone, what actors present");
ABSL_FLAG(std::optional<std::string>, token, std::nullopt,
          "refused: a token in argv is readable with ps; use --token-file or "
          "$RISTRETTO_TOKEN");
ABSL_FLAG(bool, allow_insecure_network, false,
          "serve on a non-loopback --address with no token and no mutual "
          "TLS: anyone who reaches the port may call (development only)");
// The learner's client side towards the coordinator (common/tls_flags.h):
// --tls-* are its server's files; these override them for the coordinator.
ABSL_FLAG(std::string, coordinator_tls_ca, "",
          "PEM CA certificate the coordinator's certificate is verified "
          "against (default: --tls-ca)");
ABSL_FLAG(std::string, coordinator_tls_cert, "",
          "PEM client certificate shown to a coordinator under mutual TLS, "
          "with --coordinator-tls-key (default: --tls-cert)");
ABSL_FLAG(std::string, coordinator_tls_key, "",
          "PEM private key of --coordinator-tls-cert, mode 600 (default: "
          "--tls-key)");
// Runs from the command line (without --coordinator). The run options
// themselves (--lr, --epochs, --policy-hidden, --budget, --seed, --threads,
// ...) are not ABSL_FLAGs: they are the run-options schema's flags, passed
// through to learner::RunOptionsFromFlags like `ristretto train`'s, with the
// schema's names, defaults and ranges (StandaloneRunsFromFlags).
ABSL_FLAG(int64_t, runs, 1, "runs K, seeded seed..seed+K-1");
ABSL_FLAG(std::string, dataset, "",
          "dataset file (empty: a synthetic market from --synthetic-*)");
ABSL_FLAG(int64_t, synthetic_rows, 4000, "rows of the synthetic market");
ABSL_FLAG(int64_t, synthetic_assets,
          ristretto::learner::DatasetSource{}.synthetic_assets,
          "assets of the synthetic market");
ABSL_FLAG(int64_t, synthetic_seed,
          ristretto::learner::DatasetSource{}.synthetic_seed,
          "seed of the synthetic market");
ABSL_FLAG(double, predictability,
          ristretto::learner::DatasetSource{}.predictability,
          "how predictable the synthetic market's returns are (0: not)");
ABSL_FLAG(std::optional<int64_t>, samples_per_update, std::nullopt,
          "env steps per PPO update (empty: --envs x --rollout, as a "
          "study's run)");
ABSL_FLAG(double, validation_share, 0.5,
          "share of the rows (the last ones) that validates");
ABSL_FLAG(int64_t, eval_every, 0,
          "env steps between evaluations (0: only at the end)");
ABSL_FLAG(bool, exit_when_done, false,
          "exit once every run has reached its budget");

namespace ristretto::learner {
namespace {

constexpr char kUsage[] =
    "usage: ristretto-learner [--address A (127.0.0.1)] [--port P (0: any)]\n"
    "    [--device cpu|cuda[:N] (cpu)] [--threads N (1)] [--memory-mb MB]\n"
    "    [--gpu-memory-fraction F] [--max-message-mb MB (64)]\n"
    "    [--run-dir DIR (/tmp/ristretto-learner)] [--queue N (2)]\n"
    "    [--metrics-port P|auto (0: off)] [--metrics-address A (0.0.0.0)]\n"
    "    [--tls-cert FILE --tls-key FILE [--tls-ca FILE (mutual TLS; with\n"
    "     --coordinator also the CA that signed the coordinator's)]]\n"
    "    [--token-file FILE (mode 600; or $RISTRETTO_TOKEN)]\n"
    "    [--allow-insecure-network (no token, no mTLS, not loopback)]\n"
    "  leasing runs from a coordinator:\n"
    "    --coordinator HOST:PORT [--slots N (2)] [--member-id ID]\n"
    "    [--advertise HOST:PORT] [--cache-dir DIR]\n"
    "  or runs from the command line:\n"
    "    [--runs K (1)] [--dataset FILE | --synthetic-rows N\n"
    "     --synthetic-assets N --synthetic-seed N --predictability X]\n"
    "    [--samples-per-update N (--envs x --rollout)]\n"
    "    [--validation-share X (0.5)] [--eval-every N] [--exit-when-done]\n"
    "    [run options: --lr X --epochs N --policy-hidden W,W --budget N\n"
    "     --seed N ... (listed below), as `ristretto train`]\n";

struct Listening {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // HOST:PORT actually bound
};

// The process's gRPC credentials from --tls-cert, --tls-key, --tls-ca.
struct Security {
  std::shared_ptr<grpc::ServerCredentials> server;
  // To the coordinator (null without --coordinator).
  std::shared_ptr<grpc::ChannelCredentials> coordinator;
  // --member-id, or the one the client certificate shown to the
  // coordinator names ("" : learner-<address>).
  std::string member_id;
};

// Starts the gRPC server (--address, --port; 0 = any free port) with
// `credentials` and prints "listening on HOST:PORT".
absl::StatusOr<Listening> Listen(
    grpc::Service* service, int64_t max_message_bytes,
    const std::shared_ptr<grpc::ServerCredentials>& credentials) {
  const std::string address = absl::GetFlag(FLAGS_address);
  const int64_t port = absl::GetFlag(FLAGS_port);
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(address, ":", port), credentials,
                           &bound_port);
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
// chunks in flight are still counted); give them 2 s, then cancel: the
// runs are checkpointed by then, and the whole SIGTERM path must fit the
// learner's 10 s deadline (learner/README.md, "Shutdown") on a loaded host.
void ShutDown(grpc::Server* server) {
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

// How many gradient steps (all runs together) ran OpenBLAS with one thread
// and how many in all (common/blas_thread_tuner.h); nothing when the tuner
// is off or nothing trained.
void PrintBlasThreads() {
  const BlasThreadTuner& blas = BlasThreadTuner::Process();
  if (!blas.active() || blas.steps() == 0) return;
  std::printf("learner: blas_single_thread_steps=%lld blas_steps=%lld\n",
              static_cast<long long>(blas.single_thread_steps()),
              static_cast<long long>(blas.steps()));
}

void PrintRun(const std::string& run_id, const RunCounters& c,
              const std::string& outcome) {
  std::printf(
      "learner: run %s version=%lld received=%lld trained=%lld dropped=%lld "
      "rejected=%lld finished=%d score=%.4f waiting_s=%.2f updating_s=%.2f "
      "publishing_s=%.2f evaluating_s=%.2f%s%s\n",
      run_id.c_str(), static_cast<long long>(c.policy_version),
      static_cast<long long>(c.env_steps_received),
      static_cast<long long>(c.env_steps_trained),
      static_cast<long long>(c.env_steps_dropped),
      static_cast<long long>(c.chunks_rejected), c.finished ? 1 : 0,
      c.last_score, c.waiting_seconds, c.updating_seconds, c.publishing_seconds,
      c.evaluating_seconds,
      outcome.empty() ? "" : " outcome=", outcome.c_str());
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
absl::Status ServeCoordinated(const std::string& token, int64_t budget_bytes,
                              int64_t max_message_bytes, int cpu_threads,
                              LearnerMetrics* metrics,
                              const Security& security) {
  const int64_t slots = absl::GetFlag(FLAGS_slots);
  if (slots < 1) return absl::InvalidArgumentError("--slots must be >= 1");
  LearnerServiceOptions service_options;
  service_options.metrics = metrics;
  service_options.max_actors_per_run =
      static_cast<int>(absl::GetFlag(FLAGS_max_actors_per_run));
  service_options.token = token;
  // Every learner registers with this token: it is no actor credential
  // here (actors present tickets), or one learner's host could stream into
  // every other learner's runs.
  service_options.token_admits_actors = false;
  LearnerService service({}, service_options);
  ASSIGN_OR_RETURN(Listening listening,
                   Listen(&service, max_message_bytes, security.server));
  AgentOptions options;
  options.coordinator_address = absl::GetFlag(FLAGS_coordinator);
  options.advertise_address = absl::GetFlag(FLAGS_advertise);
  if (options.advertise_address.empty()) {
    options.advertise_address = listening.address;
  }
  options.member_id = security.member_id;
  if (options.member_id.empty()) {
    options.member_id = absl::StrCat("learner-", listening.address);
  }
  options.token = token;
  options.slots = static_cast<int>(slots);
  options.memory_budget_bytes = budget_bytes;
  options.device = absl::GetFlag(FLAGS_device);
  options.cpu_threads = cpu_threads;
  options.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  if (options.cache_dir.empty()) {
    options.cache_dir = absl::GetFlag(FLAGS_run_dir) + "/datasets";
  }
  // Chunks are bounded by the message cap; assume the smallest observation.
  options.max_chunk_samples = MaxChunkSamples(max_message_bytes, 8, 1);
  options.queue_capacity = static_cast<int>(absl::GetFlag(FLAGS_queue));
  options.metrics = metrics;
  CoordinatorAgent agent(
      options, &service,
      NewGrpcCoordinatorClient(options.coordinator_address,
                               options.rpc_deadline, security.coordinator));
  agent.Start();
  WaitForStop([] { return false; });
  RLOG(INFO) << "stopping: updates in progress are abandoned, every run "
                "checkpoints and is completed or handed back";
  agent.Stop();  // checkpoints, completes or releases every run
  RLOG(INFO) << "runs checkpointed; closing the actor streams (2 s at most)";
  ShutDown(listening.server.get());
  for (const AgentRunSummary& r : agent.summaries()) {
    PrintRun(r.run_name, r.counters, r.outcome);
  }
  std::printf("learner: wire_rejected=%lld\n",
              static_cast<long long>(service.chunks_rejected()));
  PrintBlasThreads();
  return absl::OkStatus();
}

// The --help text: the process flags' usage, then every run-option flag
// with the schema's default, range and meaning.
std::string Usage() {
  return absl::StrCat(kUsage, "\nrun options (the run-options schema's):\n",
                      RunFlagsHelp(), "\nprocess flags:\n");
}

// The stand-alone learner's flags that shape its runs.
StandaloneFlags StandaloneFlagsGiven(
    const std::map<std::string, std::string>& run_flags) {
  StandaloneFlags flags;
  flags.run_flags = run_flags;
  flags.samples_per_update = absl::GetFlag(FLAGS_samples_per_update);
  flags.validation_share = absl::GetFlag(FLAGS_validation_share);
  flags.eval_every = absl::GetFlag(FLAGS_eval_every);
  flags.device = absl::GetFlag(FLAGS_device);
  return flags;
}

// The run-option flags, and without --coordinator the other flags that
// shape the runs, checked before anything starts (a bad one is a
// command-line error, exit 2, with nothing created or logged): valid for the
// schema, and with --coordinator only --threads (the coordinator's studies
// describe the runs).
absl::Status CheckRunFlags(
    const std::map<std::string, std::string>& run_flags) {
  if (!absl::GetFlag(FLAGS_coordinator).empty()) {
    for (const auto& [flag, value] : run_flags) {
      if (flag != "threads") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", flag,
            " sets a run option; with --coordinator the runs come from the "
            "coordinator's studies (only --threads applies)"));
      }
    }
    return RunOptionsFromFlags(run_flags).status();
  }
  return CheckStandaloneFlags(StandaloneFlagsGiven(run_flags));
}

// Runs the learner with the parsed flags; `run_flags` are the run-option
// flags given (passed through, unparsed).
absl::Status Main(const std::map<std::string, std::string>& run_flags) {
  // Allocator, OpenBLAS and LibTorch threads (common/runtime_policy.h),
  // before gRPC or LibTorch start threads.
  ApplyProcessRuntimePolicy(ProcessRole::kLearner);
  HoldGrpcUntilExit();
  RETURN_IF_ERROR(InstallShutdownHandlers());

  // Before anything starts: a refused secret or a bad certificate leaves
  // nothing behind.
  ASSIGN_OR_RETURN(
      const std::string token,
      ResolveToken(absl::GetFlag(FLAGS_token).has_value(),
                   absl::GetFlag(FLAGS_token_file), std::getenv(kTokenEnv)));
  const TlsFiles tls = TlsFilesFromFlags();
  Security security;
  ASSIGN_OR_RETURN(security.server, MakeServerCredentials(tls));
  if (!absl::GetFlag(FLAGS_coordinator).empty()) {
    // The learner is also the coordinator's client: --coordinator-tls-*,
    // each defaulting to the server's file.
    ASSIGN_OR_RETURN(const TlsFiles towards_coordinator,
                     CoordinatorClientTlsFiles(
                         tls, {absl::GetFlag(FLAGS_coordinator_tls_cert),
                               absl::GetFlag(FLAGS_coordinator_tls_key),
                               absl::GetFlag(FLAGS_coordinator_tls_ca)}));
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(towards_coordinator);
    if (!credentials.ok()) {
      // Its messages name --tls-*: say which side the files are for.
      return absl::Status(
          credentials.status().code(),
          absl::StrCat("TLS towards the coordinator (--coordinator-tls-*, "
                       "each defaulting to its --tls-* file): ",
                       credentials.status().message()));
    }
    security.coordinator = *std::move(credentials);
    // A client certificate that names its holder decides the member id
    // (the coordinator admits no other).
    ASSIGN_OR_RETURN(security.member_id,
                     ResolveIdFromCertificate(
                         auth::Role::kLearner, absl::GetFlag(FLAGS_member_id),
                         towards_coordinator.cert_file, "--member-id"));
  } else if (!absl::GetFlag(FLAGS_coordinator_tls_ca).empty() ||
             !absl::GetFlag(FLAGS_coordinator_tls_cert).empty() ||
             !absl::GetFlag(FLAGS_coordinator_tls_key).empty()) {
    return absl::InvalidArgumentError(
        "--coordinator-tls-* need --coordinator (they are the learner's "
        "credentials towards it)");
  }
  // What protects the server, logged once. With a token every call is
  // authenticated (LearnerService: the token, or actor tickets once
  // registered), as with mutual TLS; without either the learner binds only
  // to loopback unless --allow-insecure-network.
  ASSIGN_OR_RETURN(
      const std::string exposure,
      CheckExposure(absl::GetFlag(FLAGS_address), !tls.cert_file.empty(),
                    !token.empty() || MutualTlsFromFlags(),
                    absl::GetFlag(FLAGS_allow_insecure_network)));
  RLOG(INFO) << "security: " << exposure;
  std::optional<int64_t> memory_mb = absl::GetFlag(FLAGS_memory_mb);
  if (!memory_mb.has_value()) {
    ASSIGN_OR_RETURN(const int64_t half_of_ram, DefaultMemoryMb());
    memory_mb = half_of_ram;
  }
  if (*memory_mb < 1) {
    return absl::InvalidArgumentError("--memory-mb must be >= 1");
  }
  const int64_t budget_bytes = *memory_mb << 20;
  const int64_t max_mb = absl::GetFlag(FLAGS_max_message_mb);
  if (max_mb < 1 || max_mb > 1024) {
    return absl::InvalidArgumentError("--max-message-mb must be in [1, 1024]");
  }
  const int64_t max_message_bytes = max_mb << 20;
  const int64_t max_actors = absl::GetFlag(FLAGS_max_actors_per_run);
  if (max_actors < 1 || max_actors > 100000) {
    return absl::InvalidArgumentError(
        "--max-actors-per-run must be in [1, 100000]");
  }
  const std::string device = absl::GetFlag(FLAGS_device);
  RETURN_IF_ERROR(
      CapDeviceMemory(device, absl::GetFlag(FLAGS_gpu_memory_fraction)));

  // Metrics first, so every run exports from its start. Declared before
  // the runs, the service and the agent: destroyed after them.
  ASSIGN_OR_RETURN(
      std::unique_ptr<MetricsServer> metrics_server,
      StartMetricsServer(absl::GetFlag(FLAGS_metrics_port),
                         absl::GetFlag(FLAGS_metrics_address), "learner"));
  std::unique_ptr<LearnerMetrics> metrics;
  if (metrics_server != nullptr) {
    metrics = std::make_unique<LearnerMetrics>(metrics_server.get());
    std::shared_ptr<const GpuMonitor> gpu =
        GpuMonitor::Open(GpuMonitorOptions{});
    if (gpu->source() == GpuMonitor::kNone) {
      RLOG(WARNING) << "no GPU telemetry (neither NVML nor ROCm SMI could "
                       "be loaded)";
    } else {
      RLOG(INFO) << "GPU telemetry from " << gpu->source() << ": "
                 << gpu->detail();
    }
    metrics_server->AddCollectable(MakeGpuCollector(gpu));
  }
  if (!absl::GetFlag(FLAGS_coordinator).empty()) {
    ASSIGN_OR_RETURN(const TrainerOptions process,
                     RunOptionsFromFlags(run_flags));
    return ServeCoordinated(token, budget_bytes, max_message_bytes,
                            process.ppo.cpu_threads, metrics.get(), security);
  }

  // Dataset: a file, or a synthetic market written next to the runs so
  // actors can fetch it by id.
  const std::string run_root = absl::GetFlag(FLAGS_run_dir);
  DatasetSource source;
  source.file = absl::GetFlag(FLAGS_dataset);
  source.synthetic_rows = absl::GetFlag(FLAGS_synthetic_rows);
  source.synthetic_assets = absl::GetFlag(FLAGS_synthetic_assets);
  source.synthetic_seed = absl::GetFlag(FLAGS_synthetic_seed);
  source.predictability = absl::GetFlag(FLAGS_predictability);
  std::string dataset_path = source.file;
  ASSIGN_OR_RETURN(env::Dataset dataset, LoadDataset(source));
  if (dataset_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(run_root, ec);
    dataset_path = run_root + "/dataset.rds";
    RETURN_IF_ERROR(env::WriteDataset(dataset, dataset_path));
  }
  const std::string dataset_id = dataset.ComputeId();
  ASSIGN_OR_RETURN(auto market, env::MarketData::FromDataset(dataset));

  ASSIGN_OR_RETURN(
      const StandaloneRuns shared,
      StandaloneRunsFromFlags(
          StandaloneFlagsGiven(run_flags),
          StandaloneData{market->num_rows, dataset_id, dataset.feature_names}));
  const int64_t num_runs = absl::GetFlag(FLAGS_runs);
  const int64_t queue = absl::GetFlag(FLAGS_queue);
  std::vector<std::shared_ptr<RunHost>> runs;
  int64_t bytes_in_use = 0;
  for (int64_t k = 0; k < num_runs; ++k) {
    RunSpec spec;
    spec.run_id = absl::StrCat("run-", k);
    spec.trainer = StandaloneRunOptions(shared, k);
    spec.trainer.run_dir = RunDirectory(run_root, "local", spec.run_id, 0);
    spec.samples_per_update = shared.samples_per_update;
    spec.queue_capacity = static_cast<int>(queue);
    spec.metrics = metrics.get();
    spec.study = "local";
    spec.trial = k;
    spec.fold = 0;
    const int obs_size = 1 + market->num_assets +
                         market->num_features * shared.trainer.env.lookback;
    const int64_t bytes = EstimateRunBytes(
        spec, obs_size, market->num_assets,
        MaxChunkSamples(max_message_bytes, obs_size, market->num_assets));
    if (bytes_in_use + bytes > budget_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("run ", spec.run_id, " needs about ", bytes >> 20,
                       " MiB; the memory budget is ", *memory_mb, " MiB with ",
                       bytes_in_use >> 20, " MiB taken by ", k,
                       " run(s) (raise --memory-mb or host fewer --runs)"));
    }
    bytes_in_use += bytes;
    ASSIGN_OR_RETURN(std::unique_ptr<RunHost> host,
                     RunHost::Create(spec, market));
    runs.push_back(std::move(host));
  }
  RLOG(INFO) << num_runs << " run(s), ~" << (bytes_in_use >> 20) << " MiB of "
             << *memory_mb << " MiB budget";

  LearnerServiceOptions service_options;
  service_options.max_actors_per_run =
      static_cast<int>(absl::GetFlag(FLAGS_max_actors_per_run));
  service_options.dataset_path = dataset_path;
  service_options.dataset_id = dataset_id;
  service_options.metrics = metrics.get();
  service_options.token = token;
  LearnerService service(runs, service_options);

  ASSIGN_OR_RETURN(Listening listening,
                   Listen(&service, max_message_bytes, security.server));
  const bool exit_when_done = absl::GetFlag(FLAGS_exit_when_done);
  WaitForStop([&] {
    if (!exit_when_done) return false;
    bool all = true;
    for (const auto& run : runs) all = all && run->counters().finished;
    return all;
  });
  // Let finished runs' Stop messages reach the actors, then shut down.
  // Every run is told first, so their checkpoints are written in parallel.
  RLOG(INFO) << "stopping " << runs.size()
             << " run(s): updates in progress are abandoned, every run "
                "checkpoints";
  for (auto& host : runs) host->RequestStop();
  for (auto& host : runs) host->Stop();
  RLOG(INFO) << "runs checkpointed; closing the actor streams (2 s at most)";
  ShutDown(listening.server.get());
  for (const auto& run : runs) PrintRun(run->run_id(), run->counters(), "");
  std::printf("learner: wire_rejected=%lld\n",
              static_cast<long long>(service.chunks_rejected()));
  PrintBlasThreads();
  return absl::OkStatus();
}

}  // namespace
}  // namespace ristretto::learner

int main(int argc, char** argv) {
  ristretto::log::Init(argv[0]);
  const std::vector<std::string> names = ristretto::learner::RunFlagNames();
  const std::set<std::string> run_flag_names(names.begin(), names.end());
  std::map<std::string, std::string> run_flags;
  if (const std::optional<int> exit_code = ristretto::HandleProcessCommandLine(
          "ristretto-learner", ristretto::learner::Usage(), argc, argv,
          run_flag_names, &run_flags)) {
    return *exit_code;
  }
  if (const absl::Status s = ristretto::learner::CheckRunFlags(run_flags);
      !s.ok()) {
    std::fprintf(stderr, "ristretto-learner: %s (see --help)\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  absl::Status s = ristretto::learner::Main(run_flags);
  if (!s.ok()) {
    RLOG(ERROR) << s.message();
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
