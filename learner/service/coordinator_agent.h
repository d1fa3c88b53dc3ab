// CoordinatorAgent: the learner's side of the coordinator protocol
// (proto/coordinator.proto). It registers the learner's capacity, leases
// runs while it has free slots and memory, builds each run (dataset fetched
// from the coordinator and cached by content id, TrainerOptions from the
// lease, checkpoints under the lease's checkpoint dir so a re-leased run
// resumes), adds it to the LearnerService so actors can join, heartbeats
// progress, reports every validation result (stopping the run when the
// coordinator prunes its trial), and on reaching the budget exports the
// policy and completes the run with its final metrics and artifacts. A run
// that cannot be built or trained is failed with the reason.
//
// Memory: every run's EstimateRunBytes is admitted against the process
// budget; a run that does not fit waits (lease kept alive) until others
// finish, and one larger than the whole budget is failed with a clear
// message — never an out-of-memory crash.
//
// Credentials: RegisterLearner carries the registration token; the session
// secret it returns is handed to the client, which presents it on every
// later call. A call answered kUnauthenticated (the coordinator restarted
// and forgot the secret, or another registration of this member id replaced
// it) makes the agent register again and repeat the call once.
//
// Threads: one agent thread (Start/Stop); RunHost evaluation callbacks only
// queue reports. Stop() checkpoints the hosted runs and gives their leases
// back so another learner resumes them at once.
#ifndef RISTRETTO_LEARNER_SERVICE_COORDINATOR_AGENT_H_
#define RISTRETTO_LEARNER_SERVICE_COORDINATOR_AGENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "env/market_data.h"
#include "learner/service/coordinator_client.h"
#include "learner/service/learner_service.h"
#include "learner/service/run_host.h"
#include "proto/coordinator.pb.h"

namespace ristretto::learner {

struct AgentOptions {
  std::string coordinator_address;  // HOST:PORT
  std::string member_id;            // stable learner id
  std::string advertise_address;    // HOST:PORT actors use to reach us
  std::string token;                // shared registration token
  int slots = 2;                    // runs hosted at once
  int64_t memory_budget_bytes = int64_t{8} << 30;
  std::string device = "cpu";  // overrides every run's ppo.device
  int cpu_threads = 1;         // overrides every run's ppo.cpu_threads
  std::string cache_dir;       // datasets fetched from the coordinator
  int64_t max_chunk_samples = 128 * 256;  // T·B of the largest chunk
  int queue_capacity = 2;
  absl::Duration rpc_deadline = absl::Seconds(10);
  absl::Duration poll_interval = absl::Milliseconds(200);
  // Series of the hosted runs (not owned; outlives the agent); null: none.
  LearnerMetrics* metrics = nullptr;
};

// Outcome of one run, for the learner's exit summary.
struct AgentRunSummary {
  std::string run_name;
  std::string outcome;  // "completed", "failed: …", "pruned", "released"
  RunCounters counters;
};

class CoordinatorAgent {
 public:
  // Talks to options.coordinator_address over gRPC.
  CoordinatorAgent(const AgentOptions& options, LearnerService* service);
  // Talks to the coordinator through `client` (a fake in unit tests);
  // options.coordinator_address only names it in log lines and
  // options.rpc_deadline is the client's business. `service` is not owned
  // and must outlive the agent.
  CoordinatorAgent(AgentOptions options, LearnerService* service,
                   std::unique_ptr<CoordinatorClient> client);
  ~CoordinatorAgent();  // Stop()

  void Start();
  // Idempotent: stops leasing, stops and checkpoints hosted runs, finishes
  // runs that reached their budget, releases the other leases, joins.
  void Stop();

  std::vector<AgentRunSummary> summaries() const;

 private:
  struct Hosted {
    v1::RunLease lease;
    std::shared_ptr<RunHost> host;  // null while waiting for memory
    TrainerOptions options;
    std::shared_ptr<const env::MarketData> market;
    int64_t bytes = 0;
    bool prune = false;
  };

  void Loop();
  bool Register();
  // call() (one coordinator call); if it is answered kUnauthenticated,
  // registers again and, once registered, returns a second call().
  template <typename Call>
  auto WithSession(const Call& call) -> decltype(call());
  void SendReports();
  void Reap(bool shutting_down);
  void HeartbeatOnce();
  void Admit();
  // Builds the run of `h` (dataset, options, RunHost); errors fail the run.
  absl::Status Build(Hosted& h);
  // The run's RunSpec from its lease and options (no callbacks).
  RunSpec SpecFor(const Hosted& h) const;
  void Fail(const Hosted& h, const std::string& reason);
  absl::StatusOr<std::shared_ptr<const env::MarketData>> Market(
      const std::string& dataset_id);
  int64_t BytesInUse() const;
  void Record(const Hosted& h, const std::string& outcome);

  const AgentOptions options_;
  // Random id of this process, sent with every registration: the
  // coordinator tells a restarted learner (same member id, new process)
  // from one that registers again after a coordinator restart.
  const std::string incarnation_;
  LearnerService* const service_;
  const std::unique_ptr<CoordinatorClient> client_;
  absl::Notification stop_;
  std::thread thread_;
  bool registered_ = false;  // agent thread only
  absl::Duration lease_ttl_ = absl::Seconds(30);
  std::map<int64_t, Hosted> runs_;  // agent thread only
  std::map<std::string, std::shared_ptr<const env::MarketData>> markets_;

  mutable absl::Mutex mu_;
  // (run id, evaluation) queued by training threads.
  std::vector<std::pair<int64_t, EvaluationResult>> reports_
      ABSL_GUARDED_BY(mu_);
  std::vector<AgentRunSummary> summaries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_COORDINATOR_AGENT_H_
