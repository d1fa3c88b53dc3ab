// Scheduler: the coordinator's brain. It turns running studies into trials
// (sampler), trials into runs (one per CV fold), leases runs to learners,
// takes their reports (pruner, fold metrics, trial score) and recovers from
// failures (lease expiry, restarts). All state lives in PostgreSQL through
// Store; the scheduler keeps only caches (parsed study files, samplers,
// pruners, dataset files) that it rebuilds after a restart, so a restarted
// coordinator resumes every study with nothing lost or duplicated.
//
// Thread-safe: every public method takes one mutex (coordinator operations
// are short database transactions; one connection serves them in order).
#ifndef RISTRETTO_COORDINATOR_SERVICE_SCHEDULER_H_
#define RISTRETTO_COORDINATOR_SERVICE_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/core/study_config.h"
#include "coordinator/service/coordinator_metrics.h"
#include "coordinator/store/store.h"
#include "proto/coordinator.pb.h"

namespace ristretto::coordinator {

struct SchedulerOptions {
  std::string data_dir;  // datasets/<id>.rds, runs/<study>/trial-N/fold-K
  absl::Duration lease_ttl = absl::Seconds(30);
  // Prometheus series (not owned; must outlive the scheduler); null: none.
  // With metrics, every Tick also counts each study's trials by state.
  CoordinatorMetrics* metrics = nullptr;
  // A run its learner reports failed (FailRun: disk full, permission
  // denied, ...) is tried again while it has attempts left (the study's
  // max_attempts), after retry_backoff × 2^(attempts − 1), at most
  // max_retry_backoff; the learner that failed it waits twice as long, so
  // another free learner takes it first. Its last attempt fails the trial
  // with the learner's reason.
  absl::Duration retry_backoff = absl::Seconds(5);
  absl::Duration max_retry_backoff = absl::Minutes(5);
  // The most learner member ids live at once (called within a lease
  // lifetime). A registration under a new id beyond it is refused
  // (kResourceExhausted), so a holder of the learners' token cannot flood
  // the coordinator with ids; a learner that stops frees its place a lease
  // lifetime after its last call. Re-registering a live id always works.
  int64_t max_learners = 256;
  // Members (learners, actors) not heard from for this long, that never
  // held a lease, are deleted from the store's `members` (and learners
  // from the scheduler's memory), checked about once a minute
  // (Store::ForgetMembers), so a flood of ids leaves no rows behind.
  // Members that held a lease stay: the lease history names them. Must
  // exceed lease_ttl; zero or less: never.
  absl::Duration member_retention = absl::Hours(1);
  // The scheduler's clock (lease expiry, back-off); empty: absl::Now.
  // Tests pass a fake one.
  std::function<absl::Time()> clock;
};

// Counters for logs and metrics.
struct SchedulerCounters {
  int64_t trials_created = 0;
  int64_t runs_leased = 0;
  int64_t leases_expired = 0;
  int64_t runs_completed = 0;
  int64_t trials_completed = 0;
  int64_t trials_pruned = 0;
  int64_t trials_failed = 0;
  // Failed runs queued again to back off (FailRun with attempts left).
  int64_t runs_retried = 0;
};

class Scheduler {
 public:
  Scheduler(std::unique_ptr<Store> store, SchedulerOptions options);

  // One scheduling pass: expire leases, finish trials whose runs are all
  // done, fail trials that cannot go on, start trials up to each running
  // study's concurrency, mark studies done. Called periodically.
  absl::Status Tick();

  // --- learner RPCs ---
  // Callers are authenticated by CoordinatorService (the registration
  // token, then session secrets), not here.
  // ReportEvaluation, CompleteRun and FailRun refuse a run leased to
  // another member than request.member_id with kPermissionDenied, and one
  // leased to nobody with kFailedPrecondition, before anything is stored;
  // Heartbeat extends only the member's own leases and answers the
  // others in stop_run_ids; Release gives back only the member's leases.
  absl::StatusOr<v1::RegisterLearnerResponse> RegisterLearner(
      const v1::RegisterLearnerRequest& request);
  absl::StatusOr<v1::LeaseRunResponse> LeaseRun(
      const v1::LeaseRunRequest& request);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request);
  absl::StatusOr<v1::ReportEvaluationResponse> ReportEvaluation(
      const v1::ReportEvaluationRequest& request);
  absl::Status CompleteRun(const v1::CompleteRunRequest& request);
  // With attempts left the run is queued again, backing off (see
  // SchedulerOptions::retry_backoff); its last attempt fails the trial.
  absl::Status FailRun(const v1::FailRunRequest& request);
  absl::Status Release(const v1::ReleaseRequest& request);
  // Forgets every learner not heard from (RegisterLearner, LeaseRun,
  // Heartbeat) for a lease lifetime: its leases have expired, so it holds
  // nothing, and actors are no longer sent to its address. Returns their
  // member ids (the service drops their secrets and ticket keys). A
  // forgotten learner that is still alive gets kNotFound on its next
  // LeaseRun or Heartbeat and registers again.
  std::vector<std::string> ForgetSilentLearners();
  // --- actor RPCs ---
  // `request.actor_id` is checked by the caller (CoordinatorService:
  // CheckIdText before any binding or ticket); an actor naming a learner's
  // member id is kPermissionDenied. Learners take turns; one not heard from
  // for a lease lifetime is skipped (no address when none is left).
  absl::StatusOr<v1::FindLearnerResponse> FindLearner(
      const v1::FindLearnerRequest& request);
  // The dataset file to serve for `id` (kNotFound if unknown). With
  // `running_studies_only`, kPermissionDenied unless a running study trains
  // on it (authenticated callers get only what the work in progress needs).
  absl::StatusOr<std::string> DatasetPath(const std::string& id,
                                          bool running_studies_only = false);
  // The dataset file for `id` when a run leased to learner `member_id` now
  // trains on it: kNotFound if the dataset is unknown, kPermissionDenied
  // when none of the member's leased runs uses it (a learner fetches only
  // what its own runs need). Read from the store: a lease granted by
  // LeaseRun is visible here as soon as LeaseRun has returned, and so are
  // leases granted before a coordinator restart (a slower scan of the
  // running studies' open trials finds them).
  absl::StatusOr<std::string> DatasetPathForLearner(
      const std::string& id, const std::string& member_id);

  SchedulerCounters counters() const;
  // How long a lease lives without a heartbeat (SchedulerOptions).
  absl::Duration lease_ttl() const { return options_.lease_ttl; }

 private:
  struct StudyCache {
    StudyConfig config;
    std::unique_ptr<Sampler> sampler;
    std::unique_ptr<Pruner> pruner;
    DatasetInfo dataset;
    // The market, for the lockbox run's baselines (buy and hold, cash, random).
    std::shared_ptr<const env::MarketData> market;
    // Complete trials whose final (lockbox) run is known to be queued.
    std::set<int64_t> final_queued;
    // The study's intermediate values, read from the store once (at the
    // first report after a start) and then kept up to date by the reports
    // this coordinator records: a report costs O(1) round trips instead of
    // reading the whole study each time. `index`: (run, step) -> position,
    // as the store keeps one value per run and step.
    bool intermediates_loaded = false;
    std::vector<IntermediateValue> intermediates;
    std::map<std::pair<int64_t, int64_t>, size_t> intermediate_index;
  };

  // Parses the study (once) and resolves its dataset: a synthetic one is
  // generated into data_dir and registered; an id must be registered.
  absl::StatusOr<StudyCache*> Study(const StudyRow& row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AdvanceStudy(const StudyRow& row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Completes the trial if every run is done (score from fold metrics).
  absl::Status MaybeCompleteTrial(int64_t trial_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the final run of a complete trial (idempotent): trained on every
  // pre-lockbox row for as many env steps as its folds' best checkpoints
  // had on average, evaluated once on the lockbox.
  absl::Status QueueFinalRun(StudyCache* study, const TrialRow& trial)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Completes a final run: baselines on the same rows, standard errors,
  // lockbox_results.
  absl::Status CompleteFinalRun(const RunRow& run,
                                const v1::CompleteRunRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OkStatus, and the member marked as heard from now, when `member_id` is
  // a registered learner; else kNotFound (it registers again).
  absl::Status TouchMember(const std::string& member_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a learner last heard from at `last_call` is within a lease
  // lifetime of it.
  bool Live(absl::Time last_call) const {
    return Now() - last_call <= options_.lease_ttl;
  }
  absl::Time Now() const {
    return options_.clock ? options_.clock() : absl::Now();
  }
  // The study's lease attempts per run (its file's max_attempts; the
  // default when the file does not parse), cached in max_attempts_.
  absl::StatusOr<int> MaxAttempts(int64_t study_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OkStatus when `run` is leased to `member_id`; kPermissionDenied when
  // leased to another member, else kFailedPrecondition.
  static absl::Status CheckLeasedTo(const RunRow& run,
                                    const std::string& member_id,
                                    const char* what);
  // Exports every study's trial counts (metrics only). Studies that are done
  // are counted once more after they finish, then no longer queried.
  absl::Status ExportTrialCounts(const std::vector<StudyRow>& studies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // One timed Store call: `Db(DbOp::kLeaseRun)->LeaseRun(...)` observes the
  // call's latency under op "LeaseRun" when the full expression ends.
  class TimedStore {
   public:
    TimedStore(Store* store, CoordinatorMetrics* metrics, DbOp op)
        : store_(store), metrics_(metrics), op_(op), start_(absl::Now()) {}
    ~TimedStore() {
      if (metrics_ != nullptr) {
        metrics_->ObserveDbLatency(op_,
                                   absl::ToDoubleSeconds(absl::Now() - start_));
      }
    }
    TimedStore(const TimedStore&) = delete;
    TimedStore& operator=(const TimedStore&) = delete;
    Store* operator->() const { return store_; }

   private:
    Store* const store_;
    CoordinatorMetrics* const metrics_;
    const DbOp op_;
    const absl::Time start_;
  };
  TimedStore Db(DbOp op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return TimedStore(store_.get(), options_.metrics, op);
  }

  const SchedulerOptions options_;
  mutable absl::Mutex mu_;
  std::unique_ptr<Store> store_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::unique_ptr<StudyCache>> studies_ ABSL_GUARDED_BY(mu_);
  // Studies whose file cannot be run (reason logged once).
  std::map<int64_t, std::string> broken_ ABSL_GUARDED_BY(mu_);
  // Each study's lease attempts per run (its file's max_attempts), parsed
  // once; a study whose file does not parse gets the default (3).
  std::map<int64_t, int> max_attempts_ ABSL_GUARDED_BY(mu_);
  // Registered learners: member id → where actors reach it, and when it
  // last called (RegisterLearner, LeaseRun, Heartbeat).
  struct Learner {
    std::string address;
    absl::Time last_call;
    // Its last LeaseRun or Heartbeat (work, not just a registration).
    absl::Time last_work = absl::InfinitePast();
  };
  std::map<std::string, Learner> learners_ ABSL_GUARDED_BY(mu_);
  // Member id → ids of runs LeaseRun granted it (newest kMaxRememberedLeases
  // per member): where DatasetPathForLearner looks first. Only a hint: each
  // is checked against the store, and a miss falls back to a scan.
  std::map<std::string, std::set<int64_t>> leased_runs_ ABSL_GUARDED_BY(mu_);
  int64_t next_learner_ ABSL_GUARDED_BY(mu_) = 0;
  // When Tick last forgot members (member_retention).
  absl::Time last_forget_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  SchedulerCounters counters_ ABSL_GUARDED_BY(mu_);
  // Done studies whose final trial counts have been exported.
  std::set<int64_t> counted_done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_SERVICE_SCHEDULER_H_
