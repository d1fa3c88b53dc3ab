#include "tests/integration/process_harness.h"

#include <cctype>
#include <csignal>
#include <thread>

#include "absl/strings/str_cat.h"

namespace ristretto::testing {

std::string TinyStudyYaml(const TinyStudy& study) {
  std::string yaml = absl::StrCat("name: ", study.name,
                                  "\ndataset:\n"
                                  "  synthetic: {rows: 1500, assets: 2, "
                                  "seed: 3");
  if (study.predictability.has_value()) {
    absl::StrAppend(&yaml, ", predictability: ", *study.predictability);
  }
  absl::StrAppend(&yaml,
                  "}\n"
                  "cv: {scheme: holdout, validation_fraction: 0.3}\n"
                  "budget_env_steps: ",
                  study.budget_env_steps,
                  "\neval_every_env_steps: ", study.eval_every_env_steps,
                  "\nsampler: {type: random, seed: 5}\n"
                  "pruner: {type: none}\n"
                  "concurrency: ",
                  study.concurrency, "\nmax_trials: ", study.max_trials, "\n");
  if (study.max_attempts.has_value()) {
    absl::StrAppend(&yaml, "max_attempts: ", *study.max_attempts, "\n");
  }
  absl::StrAppend(&yaml,
                  "fixed: {width: 32, layers: 2, batch_size: 256, "
                  "rollout_steps: 32, num_envs: 8, epochs: 2,\n"
                  "        episode_steps: 256}\n"
                  "space:\n"
                  "  learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, "
                  "log: true}\n");
  if (study.search_gamma) {
    absl::StrAppend(&yaml, "  gamma: {type: float, low: 0.9, high: 0.99}\n");
  }
  return yaml;
}

std::vector<std::string> CoordinatorArgv(const std::string& binary,
                                         const std::string& dsn,
                                         const std::string& data_dir,
                                         const std::vector<std::string>& extra,
                                         const std::string& port,
                                         const std::string& tick_ms) {
  std::vector<std::string> argv = {binary,   "--db",      dsn,
                                   "--port", port,        "--data-dir",
                                   data_dir, "--tick-ms", tick_ms};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::vector<std::string> CoordinatedLearnerArgv(
    const std::string& binary, const std::string& coordinator,
    const std::string& run_dir, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {
      binary, "--coordinator", coordinator, "--port",
      "0",    "--run-dir",     run_dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::vector<std::string> CoordinatedActorArgv(
    const std::string& binary, const std::string& coordinator,
    const std::string& actor_id, const std::string& cache_dir,
    const std::vector<std::string>& extra, int envs) {
  std::vector<std::string> argv = {binary,   "--coordinator",    coordinator,
                                   "--envs", absl::StrCat(envs), "--actor-id",
                                   actor_id, "--cache-dir",      cache_dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::vector<std::string> SmallLearnerRunFlags() {
  return {"--synthetic-rows",
          "1200",
          "--synthetic-assets",
          "3",
          "--policy-hidden",
          "32,32",
          "--samples-per-update",
          "1024",
          "--rollout",
          "32",
          "--episode",
          "200",
          "--epochs",
          "2",
          "--minibatch",
          "512"};
}

std::string WaitForLoggedWord(Process& process, const std::string& what,
                              std::chrono::milliseconds timeout) {
  if (!process.WaitForLog(what, timeout)) return "";
  const std::string log = process.Log();
  const size_t at = log.find(what);
  if (at == std::string::npos) return "";
  const size_t begin = at + what.size();
  size_t stop = begin;
  while (stop < log.size() &&
         !std::isspace(static_cast<unsigned char>(log[stop]))) {
    ++stop;
  }
  return log.substr(begin, stop - begin);
}

bool PollUntil(const std::function<bool()>& done,
               std::chrono::milliseconds timeout,
               std::chrono::milliseconds every) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

bool HoldUntilAllAssigned(const std::vector<Process*>& actors,
                          std::chrono::milliseconds timeout) {
  std::vector<bool> held(actors.size(), false);
  const bool all = PollUntil(
      [&] {
        bool every = true;
        for (size_t i = 0; i < actors.size(); ++i) {
          if (!held[i] &&
              actors[i]->Log().find("assigned run") != std::string::npos) {
            actors[i]->Signal(SIGSTOP);
            held[i] = true;
          }
          every = every && held[i];
        }
        return every;
      },
      timeout, std::chrono::milliseconds(10));
  for (size_t i = 0; i < actors.size(); ++i) {
    if (held[i]) actors[i]->Signal(SIGCONT);
  }
  return all;
}

Stopped Terminate(Process& process, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  process.Signal(SIGTERM);
  Stopped stopped;
  stopped.exit_code = process.Wait(timeout);
  stopped.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return stopped;
}

std::string LogsOf(
    const std::vector<std::pair<std::string, const Process*>>& processes) {
  std::string out;
  for (const auto& [name, process] : processes) {
    if (process != nullptr) absl::StrAppend(&out, name, ":\n", process->Log());
  }
  return out;
}

}  // namespace ristretto::testing
