// RunHost: one run inside a learner process — its PpoLearner, a bounded
// ingest queue, a training thread, the published weight versions and the
// run's evaluation and checkpoints. Many RunHosts share one device.
// Thread-safe: Ingest/Subscribe/status may be called from any gRPC thread;
// the training thread is owned (started and joined) by the RunHost.
// Shutdown order: Stop() (or RequestStop()) closes the queue and cancels
// the update in progress at its next minibatch boundary (rolled back, so
// weights and optimiser state stay one consistent version); the thread then
// writes a checkpoint without evaluating and exits; Stop() and the
// destructor join it. Chunks still queued are dropped (counted).
#ifndef RISTRETTO_LEARNER_SERVICE_RUN_HOST_H_
#define RISTRETTO_LEARNER_SERVICE_RUN_HOST_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "env/market_data.h"
#include "grpcpp/support/byte_buffer.h"
#include "learner/chunk_limits.h"
#include "learner/contract.h"
#include "learner/evaluation.h"
#include "learner/run_options.h"
#include "learner/torch/update_stats.h"
#include "learner/trajectory.h"
#include "proto/ristretto.pb.h"

namespace ristretto::learner {

class LearnerMetrics;
class RunMetrics;
// The run's torch state lives behind this pointer (learner/torch/ppo.h is
// included by run_host.cc only), so the service headers stay torch-free.
class PpoLearner;

struct RunSpec {
  std::string run_id;
  // Env, network and PPO options, budget, seed, train/validation domains,
  // eval interval, run_dir (checkpoints, resume), dataset id, features.
  TrainerOptions trainer;
  // Env steps accumulated before each PPO update.
  int64_t samples_per_update = 1024;
  // Chunks the ingest queue holds before actors are held back.
  int queue_capacity = 2;
  // Called on the training thread after every evaluation on the validation
  // slice (at each eval interval and at the end of the budget), with the
  // score set to the study objective's value (trainer.objective).
  std::function<void(const EvaluationResult&)> on_evaluation;
  // Prometheus series of the run (learner_metrics.h); not owned, must
  // outlive the RunHost. Null: no metrics.
  LearnerMetrics* metrics = nullptr;
  // Labels of the run's validation score: study name, trial number, fold.
  std::string study = "local";
  int64_t trial = 0;
  int fold = 0;
};

// Host memory a run is expected to need at most, in bytes: parameters,
// gradients and Adam moments of both networks, the serialised weights
// (current and one in flight), the ingest queue at capacity with chunks of
// `max_chunk_samples` env steps, and the update batch with its derived
// tensors. The market data is shared by the process and not included.
int64_t EstimateRunBytes(const RunSpec& spec, int obs_size, int action_size,
                         int64_t max_chunk_samples);

// The ChunkAck credit behind RunHost::ActorCredits, as a pure function.
// A chunk made now at the newest version v is trained after the batch in
// training (whose update makes v + 1) and after every step ahead of it: the
// ingest queue (`queue_capacity` chunks) and the chunks `actors` actors have
// unacknowledged. Each `samples_per_update` steps ahead is one more version,
// so it stays within `max_policy_lag` while those steps are at most
// (max_policy_lag − 1) · samples_per_update. Returns the per-actor credit
// that keeps them there, clamped to [1, max_credits] (one chunk in flight
// is always allowed: fewer would stop the run).
int PolicyLagCredits(int max_policy_lag, int64_t samples_per_update,
                     int queue_capacity, int64_t chunk_steps, int64_t actors,
                     int max_credits);

// Whether a run absorbs its actors' chunks without any arriving stale: with
// one chunk in flight per actor (`actor_steps`: the sum of their chunk
// lengths, the newcomer's included) behind a full ingest queue of chunks
// of `chunk_steps`, a chunk made now is trained within max_policy_lag
// versions (the bound PolicyLagCredits sizes credit by, at credit 1).
// LearnerService assigns an actor only to a run that absorbs it; more
// actors on a run would only make stale chunks, which it drops.
bool PolicyLagAbsorbs(int max_policy_lag, int64_t samples_per_update,
                      int queue_capacity, int64_t chunk_steps,
                      int64_t actor_steps);

// A chunk a run holds (in its batch in assembly, its ingest queue or
// parked), as HeldUpdatesFreshSteps sees it.
struct HeldChunk {
  int64_t policy_version = 0;
  int64_t samples = 0;
};

// Env steps the held chunks will train, counting only the complete updates
// they form and only the chunks still within the lag when trained. The
// training thread takes the chunks in this order (FIFO) into a batch and
// updates once the batch holds `samples_per_update` steps; the update made
// at version v trains the chunks acted at v - max_policy_lag or later,
// drops the older ones (stale), and makes version v + 1 — or none when
// every chunk was stale. `policy_version` is the version the first of
// these updates starts at. A trailing batch short of samples_per_update
// trains nothing until more chunks come and is not counted. Exact unless
// an update is rolled back (diverged) or cancelled.
int64_t HeldUpdatesFreshSteps(const std::vector<HeldChunk>& held,
                              int64_t policy_version, int max_policy_lag,
                              int64_t samples_per_update);

// Counters of one run; env steps are counted per env copy.
struct RunCounters {
  int64_t policy_version = 0;
  int64_t env_steps_received = 0;  // accepted by Ingest
  int64_t env_steps_trained = 0;   // consumed by updates
  int64_t env_steps_dropped = 0;   // stale, or left over when finished
  int64_t chunks_rejected = 0;
  int64_t updates = 0;
  // Updates that diverged (non-finite loss or weights) and were rolled back
  // (PpoLearner::Update's kAborted); their samples count as dropped — or,
  // when an actor was cut off for it, only that actor's, and the update
  // made without them counts in `updates` too.
  int64_t updates_rolled_back = 0;
  // Actors cut off from the run: an update with their chunks diverged and
  // the same update without them did not (RunHost::CutOff).
  int64_t actors_cut_off = 0;
  bool finished = false;
  double last_score = 0.0;
  // Where the training thread's time went, in seconds: waiting for chunks
  // (an idle learner: the actors are the bottleneck), updating, publishing
  // the new weights (serialising them for the actors), evaluating and
  // checkpointing.
  double waiting_seconds = 0.0;
  double updating_seconds = 0.0;
  double publishing_seconds = 0.0;
  double evaluating_seconds = 0.0;
};

// A run fails after this many diverged updates in a row (each one rolled
// back): one poisoned batch is survivable, a stream of them is not.
inline constexpr int kMaxConsecutiveDivergedUpdates = 3;

class RunHost {
 public:
  // Builds the learner, resumes from spec.trainer.run_dir's checkpoint if
  // one exists (and re-reads the run's best evaluation from
  // <run_dir>/best/evaluation.json), publishes version 0 (or the resumed
  // version) and starts the training thread. Errors: kInvalidArgument for
  // an unknown objective or domains that break the lockbox (CheckLockbox),
  // before anything is built; as PpoLearner::Create and LoadCheckpoint.
  static absl::StatusOr<std::unique_ptr<RunHost>> Create(
      const RunSpec& spec, std::shared_ptr<const env::MarketData> market);
  ~RunHost();

  const std::string& run_id() const { return spec_.run_id; }
  const RunSpec& spec() const { return spec_; }
  const PolicyContract& contract() const { return contract_; }
  int obs_size() const { return contract_.obs_size; }
  int action_size() const { return contract_.action_size; }
  // The per-field value bounds of this run's chunks (DeriveChunkValueBounds
  // over its contract and market), for wire::ChunkLimits::values.
  const std::shared_ptr<const ChunkValueBounds>& chunk_bounds() const {
    return chunk_bounds_;
  }

  // Accepts a decoded chunk. OK: queued (`on_space` is not called).
  // kUnavailable: the queue is full; the chunk is parked and `on_space` is
  // called (from the training thread) once it has been queued — the caller
  // must not send more until then. kFailedPrecondition: the run has
  // finished or already holds enough for its budget (budget_reached), or
  // the chunk is older than max_policy_lag versions (either way its steps
  // are counted as received and dropped). kInvalidArgument: version from
  // the future (rejected). When the chunk accepted completes the data the
  // budget needs (HeldDataCoversBudget), the listeners are told the run
  // ended (nullptr) before Ingest returns, from the calling thread.
  absl::Status Ingest(TrajectoryChunk chunk, std::function<void()> on_space);

  // A published weight version as the LearnerMessage every stream sends,
  // serialised once (copies of a ByteBuffer share its slices).
  struct PublishedWeights {
    int64_t version = 0;
    grpc::ByteBuffer message;
  };
  // The newest weights (null before the first version).
  std::shared_ptr<const PublishedWeights> latest_weights() const;
  // Called with every newly published version and once when the run
  // finishes (with nullptr). Returns an id for Unsubscribe.
  using Listener = std::function<void(std::shared_ptr<const PublishedWeights>)>;
  int Subscribe(Listener listener);
  // The same, for the stream of actor `actor_id`: should that actor be cut
  // off from the run (below), `on_cut_off` is called once, with the
  // kPermissionDenied status that says why, from the training thread.
  using CutOffListener = std::function<void(const absl::Status&)>;
  int Subscribe(Listener listener, std::string actor_id,
                CutOffListener on_cut_off);
  void Unsubscribe(int id);

  // Cut-off actors. When an update diverges and its batch holds chunks of
  // two or more actors, the training thread rehearses it without each
  // actor's chunks in turn; when exactly one absence makes it train, the
  // update is made without that actor's chunks and the actor is cut off
  // (two or more such absences blame nobody): its queued and parked
  // chunks are dropped, its streams are told (CutOffListener), and from
  // then on Ingest refuses its chunks and IsCutOff answers true (the
  // learner refuses its Hello for this run). An update that diverges
  // without an actor to blame (one actor's data, or every retry diverges)
  // counts toward kMaxConsecutiveDivergedUpdates as before.
  bool IsCutOff(const std::string& actor_id) const;
  // Why `actor_id` is cut off (kPermissionDenied), or OK.
  absl::Status CutOffStatus(const std::string& actor_id) const;

  RunCounters counters() const;
  // Chunks of `chunk_steps` env steps each actor of this run may have
  // unacknowledged (the ChunkAck credit), between 1 and `max_credits`:
  // sized so that a chunk made now, behind the batch being trained, a full
  // ingest queue and every actor's unacknowledged chunks, is trained within
  // max_policy_lag versions (one version per samples_per_update steps).
  // More credit only makes chunks that arrive stale and are dropped. The
  // actors counted are the streams subscribed to the run.
  int ActorCredits(int64_t chunk_steps, int max_credits) const;
  // PolicyLagAbsorbs for this run: one more actor whose chunks are
  // `env_copies` × the run's rollout_steps, beside actors whose chunks
  // total `assigned_steps` env steps.
  bool AbsorbsActor(int64_t assigned_steps, int64_t env_copies) const;
  // Env steps of one chunk of an actor stepping `env_copies` copies.
  int64_t ChunkSteps(int64_t env_copies) const {
    return env_copies * spec_.trainer.rollout_steps;
  }
  // False once the run has finished or is stopping: no chunk can be trained.
  bool accepting() const;
  // True once the steps trained plus the fresh steps of the complete
  // updates the run holds (HeldUpdatesFreshSteps over the batch in
  // assembly or training, the queue and the parked chunks) reach the
  // budget: no more chunks are needed; the remaining updates and the final
  // evaluation and checkpoint may still be running (then `finished`
  // follows). Actors are told to stop at this point. Only chunks that
  // cannot turn stale before they are trained count, so this falls back to
  // false only when an update is rolled back (diverged): then the run
  // accepts actors again.
  bool budget_reached() const;
  // True while the run has stopped its actors (budget_reached) but has not
  // trained its budget yet and is not stopping: it may still fall short
  // and accept actors again. A learner asked for work meanwhile tells the
  // actor to ask again rather than that its runs have finished.
  bool may_reopen() const;
  // The newest evaluation (nullopt before the first one).
  std::optional<EvaluationResult> last_evaluation() const;
  // The evaluation with the best score so far (the study objective; the
  // first evaluation, then only strictly better ones), including one of an
  // earlier process re-read on resume. nullopt before any.
  std::optional<EvaluationResult> best_evaluation() const;
  // <run_dir>/best, where every new best evaluation saves the deterministic
  // policy (SaveBestPolicy: policy.pt, contract.json, evaluation.json);
  // empty while none has been saved (no evaluation yet, or no run_dir).
  std::string best_policy_dir() const;
  // OK, or why the run could not go on (evaluation or checkpoint failed,
  // or every update failed with a LibTorch error).
  absl::Status failure() const;
  // Stops training (idempotent): no more chunks; the update in progress is
  // abandoned at its next minibatch boundary and rolled back; checkpoint
  // (no evaluation); join.
  void Stop();
  // Stop() without the join: returns at once. Lets a process stop every
  // run at the same time, then join each (Stop) — the runs' checkpoints
  // are written in parallel instead of one after the other.
  void RequestStop();
  // Exports the deterministic policy (TorchScript + contract.json, see
  // ExportPolicy) to `out_dir`. Stops the run first if it is still training.
  absl::Status Export(const std::string& out_dir);
  // Evaluates the current policy on the validation slice now (stopping the
  // run first), e.g. for a run resumed from a checkpoint at its budget; it
  // becomes the best policy if it scores better.
  // Errors: kFailedPrecondition without validation domains; as
  // EvaluatePolicy and SaveBestPolicy.
  absl::StatusOr<EvaluationResult> EvaluateNow();
  // Blocks until the run has finished or `timeout_ms` passed.
  bool WaitFinished(int64_t timeout_ms);

 private:
  RunHost(const RunSpec& spec, std::shared_ptr<const env::MarketData> market);
  void TrainLoop();
  absl::Status Publish();  // serialises the current weights
  // Evaluates (unless `evaluate` is false or there is no validation slice)
  // and checkpoints.
  absl::Status EvaluateAndCheckpoint(bool evaluate = true);
  // If `eval` (scored by the objective) beats the best so far, saves the
  // current policy to <run_dir>/best and records it as the best. Training
  // thread (or after Stop).
  absl::Status KeepIfBest(const EvaluationResult& eval);
  // Queue depth for the metrics (queued + parked chunks).
  void ExportQueueDepth() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ingest under mu_.
  absl::Status IngestLocked(TrajectoryChunk chunk,
                            std::function<void()> on_space)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether env_steps_trained plus HeldUpdatesFreshSteps of the chunks
  // held (batch_chunks_, queue, parked, in that order) reach the budget.
  bool HeldDataCoversBudget() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first time the held data covers the budget (not stopping or
  // finished): sets budget_reached_ and returns the listeners to tell the
  // run ended, to be called after mu_ is released. Otherwise empty.
  std::vector<Listener> StopActorsIfCovered()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a diverged update (`*stats` kAborted) of a batch from two or more
  // actors: rehearses it without each actor's chunks in turn (training
  // thread; PpoLearner::Update with rehearse, nothing kept). When exactly
  // one absence makes it train, the update is made without that actor's
  // chunks, `*stats` becomes its result and the actor's id is returned,
  // with the env steps of its chunks in `*blamed_steps`. Otherwise "" and
  // `*stats` unchanged (still the divergence), or kCancelled on a stop.
  std::string RetryWithoutEachActor(std::vector<TrajectoryChunk>* batch,
                                    absl::StatusOr<UpdateStats>* stats,
                                    int64_t* blamed_steps);
  // Records `actor_id` as cut off (`why`), drops its queued and parked
  // chunks (counted as dropped) and tells its streams. Training thread,
  // without mu_ held.
  void CutOff(const std::string& actor_id, const absl::Status& why);

  const RunSpec spec_;
  // Null when spec_.metrics is; otherwise set by Create before any thread.
  std::shared_ptr<RunMetrics> metrics_;
  const std::shared_ptr<const env::MarketData> market_;
  PolicyContract contract_;
  // Set by Create before any thread; immutable.
  std::shared_ptr<const ChunkValueBounds> chunk_bounds_;
  // Used only by the training thread once it runs (and by Create before).
  std::unique_ptr<PpoLearner> learner_;
  int64_t next_eval_ = 0;
  std::string objective_;  // spec_.trainer.objective, or the default

  mutable absl::Mutex mu_;
  std::deque<TrajectoryChunk> queue_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<TrajectoryChunk, std::function<void()>>> parked_
      ABSL_GUARDED_BY(mu_);
  // Policy version and env steps of each chunk the training thread has
  // taken from the queue into the batch it assembles or trains (cleared
  // after each update), and their total.
  std::vector<HeldChunk> batch_chunks_ ABSL_GUARDED_BY(mu_);
  int64_t batch_samples_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const PublishedWeights> weights_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<int, Listener>> listeners_ ABSL_GUARDED_BY(mu_);
  struct CutOffWatch {
    int id = 0;  // the listener's
    std::string actor_id;
    CutOffListener on_cut_off;
  };
  std::vector<CutOffWatch> cut_off_watches_ ABSL_GUARDED_BY(mu_);
  // Actor id -> why it is cut off (kPermissionDenied).
  std::map<std::string, absl::Status> cut_off_ ABSL_GUARDED_BY(mu_);
  int next_listener_ ABSL_GUARDED_BY(mu_) = 0;
  RunCounters counters_ ABSL_GUARDED_BY(mu_);
  std::optional<EvaluationResult> last_evaluation_ ABSL_GUARDED_BY(mu_);
  std::optional<EvaluationResult> best_evaluation_ ABSL_GUARDED_BY(mu_);
  std::string best_policy_dir_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool budget_reached_ ABSL_GUARDED_BY(mu_) = false;
  // Set once ActorCredits has warned that the actors exceed the lag budget.
  mutable std::atomic<bool> lag_warned_{false};
  // Raised by RequestStop; the PpoLearner reads it at minibatch boundaries.
  std::atomic<bool> cancel_{false};
  std::thread thread_;
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_SERVICE_RUN_HOST_H_
