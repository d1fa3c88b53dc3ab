// The local stack `ristretto up` runs on one machine (issue 36, the
// application layer): the data directory's lock, the study it runs (the
// file given, or the built-in study sized to the given data), a private
// PostgreSQL, fresh secrets and certificates, the coordinator, a learner and
// N actors, and their supervision. cli/up_command.cc reads the flags, drives
// a LocalStack, waits for the study (WaitForStudy) and prints the results.
//
// Progress lines ("up: ...") go to the FILE* each call takes; a process that
// exits early is reported on stderr with the end of its log.
#ifndef RISTRETTO_OPS_LOCAL_STACK_H_
#define RISTRETTO_OPS_LOCAL_STACK_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/subprocess.h"
#include "coordinator/core/study_config.h"
#include "coordinator/store/pg_cluster.h"
#include "coordinator/store/store.h"
#include "env/dataset.h"

namespace ristretto::ops {

// `up`'s default env copies per actor for `actors` actors sharing `slots`
// runs of `config`: the most (at most 16) whose chunks are trained within
// max_policy_lag versions, so that no chunk arrives stale
// (docs/performance.md, "Stale samples in ristretto up").
int64_t ActorEnvsForStudy(const coordinator::StudyConfig& config,
                          int64_t actors, int64_t slots);

// `up`'s hold on its data directory: an exclusive flock on DATA_DIR/up.lock,
// with the holder's pid written in it for the message a second `up` gets.
// The descriptor is inherited by the processes `up` starts (not by
// PostgreSQL's tools, which close it), so the lock lasts until `up` and all
// of them are gone, however they end: after a kill -9 of `up` its
// processes get SIGTERM (their parent-death signal) and may still be
// writing checkpoints for seconds. A second `up` is refused while the
// holder lives; when the pid in the file is gone (only its processes hold
// the lock) it waits up to a minute for them to stop (saying so on
// `progress`). Returns the descriptor to close when done.
absl::StatusOr<int> LockDataDir(const std::string& data_dir,
                                std::FILE* progress);

// A dataset given to `up` (--csv-dir, imported, or --dataset): the file to
// register is `file`; `temporary` says whether `up` wrote it (it is removed
// once registered).
struct GivenData {
  env::Dataset dataset;
  std::string id;
  std::string file;
  bool temporary = false;
};

// The study `up` runs.
struct UpStudy {
  std::string file;  // where its text came from (named in messages)
  std::string text;  // as stored: bound to the given dataset, if any
  coordinator::StudyConfig config;
};

// `text` read from `study_file`; with data given and no study file, the
// built-in study sized to the data, written to DATA_DIR/default-study.yaml
// (said on `progress`). Bound to the given dataset (`dataset: given`),
// parsed, and checked against the data's domains, so that whatever cannot
// work on them is refused before anything starts. kInvalidArgument names
// the file.
absl::StatusOr<UpStudy> PrepareUpStudy(std::string study_file, std::string text,
                                       const std::optional<GivenData>& given,
                                       const std::string& data_dir,
                                       std::FILE* progress);

struct LocalStackOptions {
  std::string data_dir;  // absolute; holds pg/, logs/, tls/, the tokens
  int64_t actors = 2;
  int64_t slots = 1;      // runs the learner trains at once
  int64_t envs = 1;       // env copies per actor
  std::string bin_dir;    // where the binaries are ("": beside this one,
                          // the build tree, $PATH)
  bool insecure = false;  // plaintext gRPC between the processes
};

// What ended a wait early, if a process did.
enum class StackExit { kNone, kCoordinator, kLearner, kEveryActor };

// "the coordinator", "the learner", "every actor" ("nothing" for kNone).
const char* StackExitText(StackExit e);

class LocalStack {
 public:
  // Finds the coordinator, learner and actor binaries, then starts
  // PostgreSQL in DATA_DIR/pg (a server an `up` killed with -9 left there
  // is stopped first: the caller holds LockDataDir) and connects to it.
  static absl::StatusOr<std::unique_ptr<LocalStack>> Start(
      LocalStackOptions options, std::FILE* progress);

  LocalStack(const LocalStack&) = delete;
  LocalStack& operator=(const LocalStack&) = delete;
  // Whatever is still running is stopped (the processes by their
  // destructors, then PostgreSQL).
  ~LocalStack();

  coordinator::Store& store() { return *store_; }

  // Registers the given dataset (as `dataset import --db --data-dir`; an
  // import `up` wrote is removed once copied), then creates the study or
  // resumes it (kAlreadyExists when a study of that name holds another
  // file) and sets it running unless it is done.
  absl::Status OpenStudy(std::optional<GivenData>* given, const UpStudy& study);

  // Fresh tokens as mode-600 files (never in argv), mutual TLS with a
  // throw-away CA in DATA_DIR/tls (a client certificate per process, naming
  // it) unless insecure, then the coordinator, the learner and the actors,
  // logging to DATA_DIR/logs (the previous run's logs kept as NAME.log.1).
  absl::Status StartProcesses();

  // Reaps exited processes: an actor that exited is reported on stderr
  // once (the study goes on, slower); returns what ended the stack.
  StackExit CheckProcesses();

  // SIGTERM to every actor at once, then the learner (which checkpoints
  // and hands its runs back), then the coordinator; SIGKILL after a grace.
  void StopProcesses();

  // After StopProcesses: the error for `exited` (the process, its status
  // and the end of its log), OK for kNone.
  absl::Status ExitError(StackExit exited) const;

  // Closes the store and stops PostgreSQL.
  absl::Status StopDatabase();

 private:
  explicit LocalStack(LocalStackOptions options, std::FILE* progress);

  LocalStackOptions options_;
  std::FILE* progress_;
  std::string coordinator_bin_, learner_bin_, actor_bin_;
  std::unique_ptr<coordinator::PgCluster> pg_;
  std::unique_ptr<coordinator::Store> store_;
  std::unique_ptr<Subprocess> coordinator_;
  std::unique_ptr<Subprocess> learner_;
  std::vector<std::unique_ptr<Subprocess>> actors_;
  std::vector<bool> actor_gone_;
  Subprocess* last_actor_gone_ = nullptr;
};

}  // namespace ristretto::ops

#endif  // RISTRETTO_OPS_LOCAL_STACK_H_
