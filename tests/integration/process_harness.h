// The harness the process-level tests share (real ristretto-coordinator,
// -learner and -actor processes on 127.0.0.1): the tiny study they run, the
// command lines of a coordinator and of the learners and actors that find
// work through it, the small stand-alone learner, and the waits and stops
// around them. Every wait is for an event; a timeout only catches a hang.
// Library ristretto_process_test_harness (tests/CMakeLists.txt); the
// binaries' paths come from each test (RISTRETTO_*_BINARY).
#ifndef RISTRETTO_TESTS_INTEGRATION_PROCESS_HARNESS_H_
#define RISTRETTO_TESTS_INTEGRATION_PROCESS_HARNESS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/process.h"

namespace ristretto::testing {

// A study small enough for a test: 1500 synthetic rows of 2 assets, one
// holdout fold (30 % validation), random sampling (seed 5), no pruner,
// 32×32 nets, the learning rate searched in [1e-4, 1e-3] (log).
struct TinyStudy {
  std::string name;
  int max_trials = 1;
  int concurrency = 1;
  int64_t budget_env_steps = 8192;
  int64_t eval_every_env_steps = 4096;
  // The synthetic market's predictability; nullopt: its default.
  std::optional<double> predictability;
  // Attempts per run; nullopt: the coordinator's default.
  std::optional<int> max_attempts = 2;
  // Also search gamma in [0.9, 0.99].
  bool search_gamma = false;
};

// The study's YAML (coordinator/core/study_config.h).
std::string TinyStudyYaml(const TinyStudy& study);

// ristretto-coordinator (`binary`) on the database `dsn`, its data under
// `data_dir`, on `port` ("0": a free one, announced as "listening on
// HOST:PORT"), scheduling every `tick_ms`; then `extra`.
std::vector<std::string> CoordinatorArgv(
    const std::string& binary, const std::string& dsn,
    const std::string& data_dir, const std::vector<std::string>& extra = {},
    const std::string& port = "0", const std::string& tick_ms = "200");

// ristretto-learner (`binary`) that registers with the coordinator at
// `coordinator`, on a free port, its runs under `run_dir`; then `extra`
// (e.g. --slots).
std::vector<std::string> CoordinatedLearnerArgv(
    const std::string& binary, const std::string& coordinator,
    const std::string& run_dir, const std::vector<std::string>& extra = {});

// ristretto-actor (`binary`) that finds its learner through the coordinator
// at `coordinator`, as `actor_id`, with `envs` env copies and its dataset
// cache in `cache_dir`; then `extra`.
std::vector<std::string> CoordinatedActorArgv(
    const std::string& binary, const std::string& coordinator,
    const std::string& actor_id, const std::string& cache_dir,
    const std::vector<std::string>& extra = {}, int envs = 8);

// The flags of a small stand-alone learner's runs (a ristretto-learner
// without --coordinator): 1200 synthetic rows of 3 assets, 32×32 nets,
// updates of 1024 samples (rollouts of 32, 2 epochs of minibatches of
// 512), episodes of 200 steps.
std::vector<std::string> SmallLearnerRunFlags();

// The word (e.g. a HOST:PORT) that follows `what` in the process's log
// once a line has it: WaitForLoggedWord(p, "metrics on ") for the address
// of "metrics on 127.0.0.1:9464". "" if none within `timeout`. `what` is
// plain text (a regular expression's special characters match
// themselves).
std::string WaitForLoggedWord(Process& process, const std::string& what,
                              std::chrono::milliseconds timeout);

// Calls `done` every `every` until it returns true (true) or `timeout`
// passes (false).
bool PollUntil(const std::function<bool()>& done,
               std::chrono::milliseconds timeout,
               std::chrono::milliseconds every);

// Freezes each actor process (SIGSTOP) as soon as its log says it has a
// run assignment ("assigned run") and lets them all go on (SIGCONT) once
// every one has, so that every actor takes part however fast the run is
// and however late an actor starts (on a fast machine one could otherwise
// arrive after the run, or the learner, had finished). False if some
// actor had no assignment within `timeout`; every held actor goes on
// either way.
bool HoldUntilAllAssigned(const std::vector<Process*>& actors,
                          std::chrono::milliseconds timeout);

// How a process took SIGTERM: its exit code (nullopt: still running after
// the wait) and the time from the signal to its exit.
struct Stopped {
  std::optional<int> exit_code;
  std::chrono::milliseconds took{0};
};
// Sends SIGTERM to `process` and waits for it (`timeout` at most).
Stopped Terminate(Process& process, std::chrono::milliseconds timeout);

// "NAME:\n<log>" for each named process that is not null, in order: the
// logs a failing test prints.
std::string LogsOf(
    const std::vector<std::pair<std::string, const Process*>>& processes);

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_INTEGRATION_PROCESS_HARNESS_H_
