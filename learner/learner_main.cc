// ristretto-learner: hosts K runs on one device and serves actors over
// gRPC. Until the coordinator (issue 5) assigns runs, the runs come from
// the command line: K runs of the same dataset with seeds seed..seed+K−1.
//
// Prints "listening on HOST:PORT" once serving; on SIGTERM/SIGINT (or, with
// --exit-when-done, once every run has reached its budget) it stops
// accepting, checkpoints every run and prints one summary line per run.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cli/args.h"
#include "cli/run_flags.h"
#include "common/status_macros.h"
#include "env/dataset.h"
#include "grpcpp/grpcpp.h"
#include "learner/service/learner_service.h"
#include "learner/service/run_host.h"
#include "learner/torch/checkpoint.h"

namespace ristretto::learner {
namespace {

// Self-pipe: the handler only writes one byte (async-signal-safe); a
// watcher thread turns it into a notification. Libraries (OpenBLAS, gRPC)
// start threads before main, so masking + sigwait would not catch them all.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int /*sig*/) {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
}

absl::Status Main(int argc, char** argv) {
  if (pipe(g_signal_pipe) != 0) return absl::InternalError("pipe() failed");
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  ASSIGN_OR_RETURN(cli::Args args,
                   cli::Args::Parse(argc, argv, 1, {"exit-when-done"}));
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
                                   "threads"}));

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
  ASSIGN_OR_RETURN(base.ppo.device, args.String("device", "cpu"));
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

  ASSIGN_OR_RETURN(int64_t num_runs, args.Int("runs", 1));
  ASSIGN_OR_RETURN(int64_t seed, args.Int("seed", 1));
  ASSIGN_OR_RETURN(int64_t samples, args.Int("samples-per-update", 1024));
  ASSIGN_OR_RETURN(int64_t queue, args.Int("queue", 8));
  std::vector<std::unique_ptr<RunHost>> hosts;
  std::vector<RunHost*> runs;
  for (int64_t k = 0; k < num_runs; ++k) {
    RunSpec spec;
    spec.run_id = absl::StrCat("run-", k);
    spec.trainer = base;
    spec.trainer.seed = static_cast<uint64_t>(seed + k);
    spec.trainer.run_dir = RunDirectory(run_root, "local", spec.run_id, 0);
    spec.samples_per_update = samples;
    spec.queue_capacity = static_cast<int>(queue);
    ASSIGN_OR_RETURN(std::unique_ptr<RunHost> host,
                     RunHost::Create(spec, market));
    runs.push_back(host.get());
    hosts.push_back(std::move(host));
  }

  LearnerServiceOptions service_options;
  service_options.dataset_path = dataset_path;
  service_options.dataset_id = dataset_id;
  service_options.episode_steps = static_cast<int>(base.episode_steps);
  ASSIGN_OR_RETURN(int64_t rollout, args.Int("rollout", 128));
  service_options.rollout_steps = static_cast<int>(rollout);
  LearnerService service(runs, service_options);

  ASSIGN_OR_RETURN(std::string address, args.String("address", "127.0.0.1"));
  ASSIGN_OR_RETURN(int64_t port, args.Int("port", 0));
  ASSIGN_OR_RETURN(int64_t max_mb, args.Int("max-message-mb", 64));
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(address, ":", port),
                           grpc::InsecureServerCredentials(), &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_mb << 20));
  builder.SetMaxSendMessageSize(static_cast<int>(max_mb << 20));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ":", port));
  }
  std::printf("listening on %s:%d\n", address.c_str(), bound_port);
  std::fflush(stdout);

  absl::Notification stop;
  std::thread signal_thread([&stop] {
    char byte = 0;
    while (read(g_signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    if (!stop.HasBeenNotified()) stop.Notify();
  });
  const bool exit_when_done = args.Has("exit-when-done");
  while (!stop.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
    if (!exit_when_done) continue;
    bool all = true;
    for (RunHost* run : runs) all = all && run->counters().finished;
    if (all) break;
  }
  // Let finished runs' Stop messages reach the actors, then shut down.
  for (auto& host : hosts) host->Stop();
  // Streams end when their actors half-close after the Stop message (so
  // chunks in flight are still counted); give them time, then cancel.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!stop.HasBeenNotified()) OnSignal(0);  // wake the watcher to join it
  signal_thread.join();
  for (RunHost* run : runs) {
    const RunCounters c = run->counters();
    std::printf(
        "learner: run %s version=%lld received=%lld trained=%lld dropped=%lld "
        "rejected=%lld finished=%d score=%.4f\n",
        run->run_id().c_str(), static_cast<long long>(c.policy_version),
        static_cast<long long>(c.env_steps_received),
        static_cast<long long>(c.env_steps_trained),
        static_cast<long long>(c.env_steps_dropped),
        static_cast<long long>(c.chunks_rejected), c.finished ? 1 : 0,
        c.last_score);
  }
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
