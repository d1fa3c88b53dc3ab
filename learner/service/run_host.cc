#include "learner/service/run_host.h"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "learner/objective.h"
#include "learner/service/learner_metrics.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/ppo.h"
#include "learner/torch/trainer.h"
#include "wire/chunk_wire.h"

namespace ristretto::learner {
namespace {

// Device work is bracketed on the host clock. On a GPU the end first waits
// for the device, so the interval covers the kernels, not only their
// launches (the update's own .item() calls usually have already).
void BeginDeviceWork(RunMetrics* metrics) { metrics->busy().Begin(); }

void EndDeviceWork(const torch::Device& device, RunMetrics* metrics) {
  if (device.is_cuda()) {
    try {
      torch::cuda::synchronize(device.index());
    } catch (const c10::Error&) {
      // Telemetry only: the update's own status reports device failures.
    }
  }
  metrics->busy().End();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RunHost>> RunHost::Create(
    const RunSpec& spec, std::shared_ptr<const env::MarketData> market) {
  if (spec.run_id.empty()) return absl::InvalidArgumentError("run_id is empty");
  if (spec.samples_per_update < 1 || spec.queue_capacity < 1) {
    return absl::InvalidArgumentError(
        "samples_per_update and queue_capacity must be >= 1");
  }
  RETURN_IF_ERROR(
      Annotate(CheckLockbox(spec.trainer), absl::StrCat("run ", spec.run_id)));
  const std::string objective = spec.trainer.objective.empty()
                                    ? kDefaultObjective
                                    : spec.trainer.objective;
  RETURN_IF_ERROR(CheckObjective(objective));
  std::unique_ptr<RunHost> host(new RunHost(spec, std::move(market)));
  host->objective_ = objective;
  if (spec.metrics != nullptr) {
    host->metrics_ = spec.metrics->ForRun(RunLabels{spec.run_id, spec.study,
                                                    absl::StrCat(spec.trial),
                                                    absl::StrCat(spec.fold)});
  }
  const TrainerOptions& o = spec.trainer;
  std::vector<std::string> symbols;
  for (const env::AssetMeta& a : host->market_->assets) {
    symbols.push_back(a.symbol);
  }
  host->contract_ = PolicyContract::Make(o.env, o.network, std::move(symbols),
                                         o.feature_names, o.dataset_id);
  host->contract_.interval_seconds = host->market_->interval_seconds;
  const int64_t D = 1 + host->market_->num_assets +
                    host->market_->num_features * o.env.lookback;
  if (host->contract_.obs_size != D) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run ", spec.run_id, ": feature_names give an observation of ",
        host->contract_.obs_size, " values but the market gives ", D));
  }
  // The bounds every chunk of the run must respect: derived once from the
  // contract and the market the actors play (learner/chunk_limits.h).
  absl::StatusOr<ChunkValueBounds> bounds =
      DeriveChunkValueBounds(host->contract_, *host->market_, o.episode_steps);
  RETURN_IF_ERROR(Annotate(bounds.status(), absl::StrCat("run ", spec.run_id)));
  RLOG(INFO) << "run " << spec.run_id << ": chunk value bounds "
             << DescribeChunkValueBounds(*bounds, host->market_->num_assets);
  host->chunk_bounds_ =
      std::make_shared<const ChunkValueBounds>(*std::move(bounds));
  // A served run depends on when its actors' chunks arrive, so it is never
  // reproduced bit for bit: OpenBLAS's thread count is chosen per gradient
  // step for speed (PpoOptions::fixed_blas_threads).
  PpoOptions ppo = o.ppo;
  ppo.fixed_blas_threads = false;
  ASSIGN_OR_RETURN(
      host->learner_,
      PpoLearner::Create(host->contract_.obs_size, host->contract_.action_size,
                         o.network, ppo, o.budget_env_steps, o.seed));
  CheckpointState state;
  if (!o.run_dir.empty() && o.resume) {
    absl::StatusOr<std::string> latest = LatestCheckpoint(o.run_dir);
    if (latest.ok()) {
      ASSIGN_OR_RETURN(state, LoadCheckpoint(*latest, host->contract_,
                                             host->learner_.get()));
    } else if (latest.status().code() != absl::StatusCode::kNotFound) {
      return latest.status();
    }
  }
  std::optional<EvaluationResult> best;
  if (!o.run_dir.empty()) {
    if (o.resume) {
      absl::StatusOr<EvaluationResult> read = ReadBestEvaluation(o.run_dir);
      if (read.ok()) {
        best = *read;
      } else if (read.status().code() != absl::StatusCode::kNotFound) {
        // The next evaluation replaces it.
        RLOG(WARNING) << "run " << spec.run_id << ": ignoring the best policy: "
                      << read.status().message();
      }
    } else {
      RETURN_IF_ERROR(RemoveBestPolicy(o.run_dir));
    }
  }
  {
    absl::MutexLock lock(&host->mu_);
    if (best.has_value()) {
      host->best_evaluation_ = best;
      host->best_policy_dir_ = BestPolicyDirectory(o.run_dir);
    }
    host->counters_.policy_version = host->learner_->version();
    host->counters_.env_steps_trained = state.env_steps;
    host->counters_.updates = state.updates;
    host->counters_.last_score = state.last_score;
    host->counters_.finished = state.env_steps >= o.budget_env_steps;
  }
  if (host->metrics_ != nullptr) {
    host->metrics_->SetWeightVersion(host->learner_->version());
    host->metrics_->SetQueueDepth(0);
  }
  // The next point of the evaluation grid (every eval_every_env_steps, as
  // an uninterrupted run has it): a checkpoint written at a stop is not
  // on the grid and carries no evaluation.
  host->next_eval_ = o.eval_every_env_steps > 0
                         ? (state.env_steps / o.eval_every_env_steps + 1) *
                               o.eval_every_env_steps
                         : state.env_steps + o.budget_env_steps;
  host->learner_->set_cancel_check(
      [h = host.get()] { return h->cancel_.load(std::memory_order_relaxed); });
  RETURN_IF_ERROR(host->Publish());
  host->thread_ = std::thread([h = host.get()] { h->TrainLoop(); });
  return host;
}

RunHost::RunHost(const RunSpec& spec,
                 std::shared_ptr<const env::MarketData> market)
    : spec_(spec), market_(std::move(market)) {}

RunHost::~RunHost() { Stop(); }

absl::Status RunHost::Ingest(TrajectoryChunk chunk,
                             std::function<void()> on_space) {
  std::vector<Listener> to_stop;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = IngestLocked(std::move(chunk), std::move(on_space));
    // Queued or parked: the run may now hold enough for its budget.
    if (status.ok() || absl::IsUnavailable(status)) {
      to_stop = StopActorsIfCovered();
    }
  }
  // Outside mu_: a listener may call back into the run (budget_reached).
  for (const Listener& l : to_stop) l(nullptr);
  return status;
}

absl::Status RunHost::IngestLocked(TrajectoryChunk chunk,
                                   std::function<void()> on_space) {
  if (!chunk.actor_id.empty()) {
    auto cut = cut_off_.find(chunk.actor_id);
    if (cut != cut_off_.end()) {
      ++counters_.chunks_rejected;
      if (metrics_ != nullptr) metrics_->Rejected(RejectReason::kCutOff);
      return cut->second;
    }
  }
  if (counters_.finished || stopping_ || budget_reached_) {
    // Well-formed steps that arrive after the end, or once the run holds
    // enough for its budget, are received and dropped.
    counters_.env_steps_received += chunk.num_samples();
    counters_.env_steps_dropped += chunk.num_samples();
    if (metrics_ != nullptr) {
      metrics_->AddDropped(chunk.num_samples());
      metrics_->Rejected(RejectReason::kFinished);
    }
    return absl::FailedPreconditionError(
        absl::StrCat("run ", spec_.run_id, " has finished"));
  }
  if (chunk.policy_version > counters_.policy_version) {
    ++counters_.chunks_rejected;
    if (metrics_ != nullptr) metrics_->Rejected(RejectReason::kFuture);
    return absl::InvalidArgumentError(
        absl::StrCat("chunk policy version ", chunk.policy_version,
                     " is newer than the run's ", counters_.policy_version));
  }
  if (counters_.policy_version - chunk.policy_version >
      spec_.trainer.ppo.max_policy_lag) {
    // Well-formed but stale: received and dropped (counted like the stale
    // chunks the update itself drops).
    counters_.env_steps_received += chunk.num_samples();
    counters_.env_steps_dropped += chunk.num_samples();
    if (metrics_ != nullptr) {
      metrics_->AddDropped(chunk.num_samples());
      metrics_->Rejected(RejectReason::kStale);
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "chunk policy version ", chunk.policy_version,
        " is stale: the run is at ", counters_.policy_version,
        " and max_policy_lag is ", spec_.trainer.ppo.max_policy_lag));
  }
  counters_.env_steps_received += chunk.num_samples();
  if (metrics_ != nullptr) {
    metrics_->ObservePolicyLag(counters_.policy_version - chunk.policy_version);
  }
  if (static_cast<int>(queue_.size()) < spec_.queue_capacity) {
    queue_.push_back(std::move(chunk));
    ExportQueueDepth();
    return absl::OkStatus();
  }
  parked_.emplace_back(std::move(chunk), std::move(on_space));
  ExportQueueDepth();
  return absl::UnavailableError("ingest queue full; chunk parked");
}

int64_t HeldUpdatesFreshSteps(const std::vector<HeldChunk>& held,
                              int64_t policy_version, int max_policy_lag,
                              int64_t samples_per_update) {
  int64_t covered = 0;
  int64_t version = policy_version;
  int64_t batch = 0, fresh = 0;
  for (const HeldChunk& c : held) {
    batch += c.samples;
    // PpoLearner::Update's rule, at the version this batch is trained at.
    if (version - c.policy_version <= max_policy_lag) fresh += c.samples;
    if (batch < samples_per_update) continue;
    covered += fresh;
    if (fresh > 0) ++version;  // an update of stale chunks only fails
    batch = 0;
    fresh = 0;
  }
  return covered;
}

bool RunHost::HeldDataCoversBudget() const {
  const int64_t budget = spec_.trainer.budget_env_steps;
  const int64_t trained = counters_.env_steps_trained;
  // Cheap bound first: everything held, stale or not, complete or not.
  int64_t all = batch_samples_;
  for (const TrajectoryChunk& c : queue_) all += c.num_samples();
  for (const auto& [c, cb] : parked_) all += c.num_samples();
  if (trained + all < budget) return false;
  std::vector<HeldChunk> held = batch_chunks_;
  held.reserve(held.size() + queue_.size() + parked_.size());
  for (const TrajectoryChunk& c : queue_) {
    held.push_back({c.policy_version, c.num_samples()});
  }
  for (const auto& [c, cb] : parked_) {
    held.push_back({c.policy_version, c.num_samples()});
  }
  return trained + HeldUpdatesFreshSteps(held, counters_.policy_version,
                                         spec_.trainer.ppo.max_policy_lag,
                                         spec_.samples_per_update) >=
         budget;
}

std::vector<RunHost::Listener> RunHost::StopActorsIfCovered() {
  std::vector<Listener> to_stop;
  if (budget_reached_ || stopping_ || counters_.finished ||
      !HeldDataCoversBudget()) {
    return to_stop;
  }
  budget_reached_ = true;
  for (const auto& [id, l] : listeners_) to_stop.push_back(l);
  return to_stop;
}

void RunHost::ExportQueueDepth() {
  if (metrics_ != nullptr) {
    metrics_->SetQueueDepth(
        static_cast<int64_t>(queue_.size() + parked_.size()));
  }
}

std::shared_ptr<const RunHost::PublishedWeights> RunHost::latest_weights()
    const {
  absl::MutexLock lock(&mu_);
  return weights_;
}

int RunHost::Subscribe(Listener listener) {
  absl::MutexLock lock(&mu_);
  listeners_.emplace_back(next_listener_, std::move(listener));
  return next_listener_++;
}

int RunHost::Subscribe(Listener listener, std::string actor_id,
                       CutOffListener on_cut_off) {
  absl::MutexLock lock(&mu_);
  listeners_.emplace_back(next_listener_, std::move(listener));
  if (on_cut_off) {
    cut_off_watches_.push_back(
        {next_listener_, std::move(actor_id), std::move(on_cut_off)});
  }
  return next_listener_++;
}

void RunHost::Unsubscribe(int id) {
  absl::MutexLock lock(&mu_);
  cut_off_watches_.erase(
      std::remove_if(cut_off_watches_.begin(), cut_off_watches_.end(),
                     [id](const CutOffWatch& w) { return w.id == id; }),
      cut_off_watches_.end());
  for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
    if (it->first == id) {
      listeners_.erase(it);
      return;
    }
  }
}

bool RunHost::IsCutOff(const std::string& actor_id) const {
  absl::MutexLock lock(&mu_);
  return cut_off_.count(actor_id) > 0;
}

absl::Status RunHost::CutOffStatus(const std::string& actor_id) const {
  absl::MutexLock lock(&mu_);
  auto it = cut_off_.find(actor_id);
  return it == cut_off_.end() ? absl::OkStatus() : it->second;
}

std::string RunHost::RetryWithoutEachActor(std::vector<TrajectoryChunk>* batch,
                                           absl::StatusOr<UpdateStats>* stats,
                                           int64_t* blamed_steps) {
  std::vector<std::string> actors;
  for (const TrajectoryChunk& c : *batch) {
    if (!c.actor_id.empty() &&
        std::find(actors.begin(), actors.end(), c.actor_id) == actors.end()) {
      actors.push_back(c.actor_id);
    }
  }
  // One actor's data alone: nothing would be left to train, and nothing
  // tells its data from the weights.
  if (actors.size() < 2) return "";
  // Runs `update` on the batch without `actor`'s chunks (moved out and
  // back, the batch's order restored: chunk order changes an update, so
  // every rehearsal and the kept update see the others' chunks in the
  // same order); `steps` gets their env steps.
  auto without = [batch](const std::string& actor, int64_t* steps,
                         const std::function<absl::StatusOr<UpdateStats>(
                             const std::vector<TrajectoryChunk>&)>& update) {
    std::vector<TrajectoryChunk> theirs, rest;
    std::vector<bool> is_theirs;
    is_theirs.reserve(batch->size());
    for (TrajectoryChunk& c : *batch) {
      is_theirs.push_back(c.actor_id == actor);
      (is_theirs.back() ? theirs : rest).push_back(std::move(c));
    }
    absl::StatusOr<UpdateStats> result = update(rest);
    *steps = 0;
    for (const TrajectoryChunk& c : theirs) *steps += c.num_samples();
    size_t next_theirs = 0, next_rest = 0;
    for (size_t i = 0; i < is_theirs.size(); ++i) {
      (*batch)[i] = is_theirs[i] ? std::move(theirs[next_theirs++])
                                 : std::move(rest[next_rest++]);
    }
    return result;
  };
  // Rehearse the update without each actor in turn (nothing is kept). Blame
  // only when exactly one absence makes it train: when two or more do (the
  // update only just diverged, or data diverges only when mixed), blaming
  // the first would let a poisoner get an honest actor cut off.
  std::string culprit;
  int trains = 0;
  for (const std::string& actor : actors) {
    if (cancel_.load(std::memory_order_relaxed)) return "";
    int64_t steps = 0;
    absl::StatusOr<UpdateStats> rehearsal =
        without(actor, &steps, [this](const std::vector<TrajectoryChunk>& c) {
          return learner_->Update(c, /*rehearse=*/true);
        });
    if (rehearsal.ok()) {
      culprit = actor;
      if (++trains > 1) return "";
    } else if (absl::IsCancelled(rehearsal.status())) {
      *stats = std::move(rehearsal);
      return "";
    }
    // Still diverges (kAborted), every chunk left is stale
    // (kFailedPrecondition) or a LibTorch error: no verdict on this actor.
  }
  if (trains != 1) return "";
  int64_t steps = 0;
  absl::StatusOr<UpdateStats> trained =
      without(culprit, &steps, [this](const std::vector<TrajectoryChunk>& c) {
        return learner_->Update(c);
      });
  if (absl::IsCancelled(trained.status())) {
    *stats = std::move(trained);
    return "";
  }
  if (!trained.ok()) return "";  // the divergence stands, unattributed
  *stats = std::move(trained);
  *blamed_steps = steps;
  return culprit;
}

void RunHost::CutOff(const std::string& actor_id, const absl::Status& why) {
  std::vector<CutOffListener> tell;
  std::vector<std::function<void()>> resumed;
  {
    absl::MutexLock lock(&mu_);
    cut_off_[actor_id] = why;
    ++counters_.actors_cut_off;
    int64_t dropped = 0;
    std::deque<TrajectoryChunk> queue;
    for (TrajectoryChunk& c : queue_) {
      if (c.actor_id == actor_id) {
        dropped += c.num_samples();
      } else {
        queue.push_back(std::move(c));
      }
    }
    queue_ = std::move(queue);
    std::deque<std::pair<TrajectoryChunk, std::function<void()>>> parked;
    for (auto& p : parked_) {
      if (p.first.actor_id == actor_id) {
        dropped += p.first.num_samples();
        // Its stream is being ended; the call only lets it go on reading.
        resumed.push_back(std::move(p.second));
      } else {
        parked.push_back(std::move(p));
      }
    }
    parked_ = std::move(parked);
    // Refill the queue from what is parked, as the training thread does:
    // it waits on the queue alone.
    while (static_cast<int>(queue_.size()) < spec_.queue_capacity &&
           !parked_.empty()) {
      queue_.push_back(std::move(parked_.front().first));
      resumed.push_back(std::move(parked_.front().second));
      parked_.pop_front();
    }
    counters_.env_steps_dropped += dropped;
    if (metrics_ != nullptr) metrics_->AddDropped(dropped);
    ExportQueueDepth();
    for (const CutOffWatch& w : cut_off_watches_) {
      if (w.actor_id == actor_id) tell.push_back(w.on_cut_off);
    }
  }
  for (const CutOffListener& l : tell) l(why);
  for (const std::function<void()>& r : resumed) {
    if (r) r();
  }
}

RunCounters RunHost::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

void RunHost::RequestStop() {
  std::vector<Listener> listeners;
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_ && !counters_.finished) {
      for (const auto& [id, l] : listeners_) listeners.push_back(l);
    }
    stopping_ = true;
    cancel_.store(true, std::memory_order_relaxed);
  }
  // Tell the actors at once (every chunk from now on is refused), not only
  // when the training thread has finished: otherwise they keep streaming
  // chunks that can only be dropped until then.
  for (const Listener& l : listeners) l(nullptr);
}

void RunHost::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

bool RunHost::WaitFinished(int64_t timeout_ms) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](RunCounters* c) { return c->finished; }, &counters_),
      absl::Milliseconds(timeout_ms));
}

absl::Status RunHost::Publish() {
  v1::LearnerMessage message;
  v1::WeightVersion* w = message.mutable_weights();
  w->set_run_id(spec_.run_id);
  w->set_version(learner_->version());
  try {
    std::ostringstream bytes;
    torch::save(learner_->model(), bytes);
    w->set_state(bytes.str());
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("serialising weights: ", e.what_without_backtrace()));
  }
  {
    absl::MutexLock lock(&mu_);
    w->set_env_steps(counters_.env_steps_trained);
  }
  auto published = std::make_shared<PublishedWeights>();
  published->version = w->version();
  published->message = wire::SerializeToByteBuffer(message);
  std::vector<Listener> listeners;
  {
    absl::MutexLock lock(&mu_);
    weights_ = published;
    for (const auto& [id, l] : listeners_) listeners.push_back(l);
  }
  for (const Listener& l : listeners) l(published);
  return absl::OkStatus();
}

absl::Status RunHost::EvaluateAndCheckpoint(bool evaluate) {
  const TrainerOptions& o = spec_.trainer;
  CheckpointState state;
  {
    absl::MutexLock lock(&mu_);
    state.env_steps = counters_.env_steps_trained;
    state.updates = counters_.updates;
    state.last_score = counters_.last_score;
  }
  absl::Status kept;
  if (evaluate && !o.validation_domains.empty()) {
    ASSIGN_OR_RETURN(EvaluationResult eval,
                     EvaluatePolicy(learner_->model(), market_, o.env,
                                    o.validation_domains));
    eval.score = ObjectiveValue(objective_, eval);
    state.last_score = eval.score;
    eval.at_env_steps = state.env_steps;
    if (metrics_ != nullptr) metrics_->SetValidationScore(eval.score);
    {
      absl::MutexLock lock(&mu_);
      counters_.last_score = eval.score;
      last_evaluation_ = eval;
    }
    // Saved before the checkpoint: a crash in between leaves a best/ that
    // the resumed run keeps (it is a policy this run really trained).
    kept = Annotate(KeepIfBest(eval), "saving the best policy");
    if (spec_.on_evaluation) spec_.on_evaluation(eval);
  }
  if (o.run_dir.empty()) return kept;
  state.policy_version = learner_->version();
  state.samples_consumed = learner_->samples_consumed();
  RETURN_IF_ERROR(
      SaveCheckpoint(o.run_dir, contract_, *learner_, state).status());
  return kept;
}

absl::Status RunHost::KeepIfBest(const EvaluationResult& eval) {
  {
    absl::MutexLock lock(&mu_);
    const bool have = best_evaluation_.has_value();
    if (!IsBetterScore(eval.score, have,
                       have ? best_evaluation_->score : 0.0)) {
      return absl::OkStatus();
    }
  }
  const TrainerOptions& o = spec_.trainer;
  std::string dir;
  if (!o.run_dir.empty()) {
    RETURN_IF_ERROR(SaveBestPolicy(o.run_dir, learner_->model(), contract_,
                                   eval, objective_));
    dir = BestPolicyDirectory(o.run_dir);
  }
  absl::MutexLock lock(&mu_);
  best_evaluation_ = eval;
  best_policy_dir_ = dir;
  return absl::OkStatus();
}

void RunHost::TrainLoop() {
  const TrainerOptions& o = spec_.trainer;
  std::vector<TrajectoryChunk> batch;
  int64_t batch_samples = 0;
  int diverged_in_a_row = 0;  // consecutive rolled-back updates
  // Runs under mu_ (absl::Condition evaluates it with the lock held).
  auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return !queue_.empty() || stopping_ || counters_.finished;
  };
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  while (true) {
    std::function<void()> resumed;
    {
      const Clock::time_point waiting = Clock::now();
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&ready));
      counters_.waiting_seconds += seconds_since(waiting);
      // Stopping: what is queued is dropped (counted below), not trained,
      // so a stop costs at most one minibatch and a checkpoint.
      if (counters_.finished || stopping_) break;
      if (queue_.empty()) continue;
      batch_chunks_.push_back(
          {queue_.front().policy_version, queue_.front().num_samples()});
      batch_samples_ += queue_.front().num_samples();
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      if (!parked_.empty()) {
        queue_.push_back(std::move(parked_.front().first));
        resumed = std::move(parked_.front().second);
        parked_.pop_front();
      }
      ExportQueueDepth();
    }
    if (resumed) resumed();
    batch_samples += batch.back().num_samples();
    if (batch_samples < spec_.samples_per_update) continue;

    // The actors were told to stop as soon as the steps trained plus the
    // fresh steps of the complete updates the run holds (this batch, the
    // queue, the parked chunks) reached the budget — by the Ingest that
    // queued the last chunk needed (StopActorsIfCovered) — so they do not
    // make chunks that only the end could drop. Only chunks still within
    // max_policy_lag when their update comes count there, so the held data
    // cannot fall short through staleness. Each update still trains
    // exactly one update's worth, like `ristretto train` (parity): what is
    // left queued or parked at the end is dropped, counted. (Folding it
    // into the last update made it 2-3 times the others and changed what
    // the distributed learning test learned.) Should the run fall short
    // after all (a rolled-back update), it accepts actors again below.

    const Clock::time_point started = Clock::now();
    if (metrics_ != nullptr) BeginDeviceWork(metrics_.get());
    absl::StatusOr<UpdateStats> stats = learner_->Update(batch);
    // The update's own time (the histogram's), without any retries below.
    const double update_seconds = seconds_since(started);
    // A diverged update of several actors' data: rehearsed without each
    // actor in turn; the one whose absence alone makes it train is cut off.
    std::string blamed;
    int64_t blamed_steps = 0;
    absl::Status diverged;
    if (absl::IsAborted(stats.status())) {
      diverged = stats.status();
      blamed = RetryWithoutEachActor(&batch, &stats, &blamed_steps);
    }
    if (metrics_ != nullptr) EndDeviceWork(learner_->device(), metrics_.get());
    int64_t trained = 0, dropped = 0;
    if (stats.ok()) {
      trained = stats->samples_trained;
      dropped = stats->samples_dropped + blamed_steps;
    } else {
      // kFailedPrecondition: every chunk was stale; kCancelled: stopping
      // (rolled back). Anything else is a LibTorch error (shapes were
      // validated on ingest). Either way the batch is dropped, counted, and
      // the run keeps serving (or stops).
      dropped = batch_samples;
    }
    const bool cancelled = absl::IsCancelled(stats.status());
    if (cancelled) {
      RLOG(INFO) << "run " << spec_.run_id << ": stopping; the update in "
                 << "progress was abandoned after " << update_seconds
                 << " s and rolled back (" << batch_samples
                 << " env steps dropped)";
    }
    batch.clear();
    batch_samples = 0;
    if (!blamed.empty()) {
      const absl::Status why = absl::PermissionDeniedError(absl::StrCat(
          "actor '", EscapeForMessage(blamed, 80), "' is cut off from run ",
          spec_.run_id,
          ": an update with its chunks diverged and the same update without "
          "them did not"));
      RLOG(WARNING) << "run " << spec_.run_id << ": " << why.message() << " ("
                    << diverged.message() << "); " << blamed_steps
                    << " env steps of its chunks dropped";
      if (metrics_ != nullptr) metrics_->RolledBack();
      {
        absl::MutexLock lock(&mu_);
        ++counters_.updates_rolled_back;
      }
      CutOff(blamed, why);
    }
    bool finished = false;
    std::vector<Listener> to_stop;
    {
      absl::MutexLock lock(&mu_);
      counters_.env_steps_trained += trained;
      counters_.env_steps_dropped += dropped;
      counters_.updating_seconds += update_seconds;
      batch_chunks_.clear();
      batch_samples_ = 0;
      if (stats.ok()) ++counters_.updates;
      counters_.policy_version = learner_->version();
      finished = counters_.env_steps_trained >= o.budget_env_steps;
      if (!finished && budget_reached_ &&
          (stopping_ || !HeldDataCoversBudget())) {
        // This update was rolled back and what the run still holds no
        // longer covers the budget, or a stop cancelled it. Unless
        // stopping, the run needs more data: its actors were told it had
        // finished; they ask for work again (an actor is told to ask again
        // while may_reopen) and are assigned to it once more.
        budget_reached_ = false;
        if (!stopping_) {
          RLOG(INFO) << "run " << spec_.run_id << ": at "
                     << counters_.env_steps_trained << " of "
                     << o.budget_env_steps
                     << " env steps after the last update; accepting actors "
                        "again";
        }
      }
      if (finished && !budget_reached_) {
        // From here every chunk is refused: stop the actors now rather
        // than after the final evaluation and checkpoint, during which
        // they would only produce chunks to be dropped.
        budget_reached_ = true;
        for (const auto& [id, l] : listeners_) to_stop.push_back(l);
      }
    }
    for (const Listener& l : to_stop) l(nullptr);
    if (metrics_ != nullptr) {
      metrics_->AddTrained(trained);
      metrics_->AddDropped(dropped);
      metrics_->SetWeightVersion(learner_->version());
      if (stats.ok()) {
        metrics_->Updated(update_seconds, stats->policy_loss, stats->value_loss,
                          stats->entropy, stats->approx_kl);
      }
    }
    if (stats.ok()) {
      const Clock::time_point publishing = Clock::now();
      (void)Publish();
      const double publish_seconds = seconds_since(publishing);
      absl::MutexLock lock(&mu_);
      counters_.publishing_seconds += publish_seconds;
    }
    const int64_t steps = counters().env_steps_trained;
    if (stats.ok()) {
      diverged_in_a_row = 0;
    } else if (stats.status().code() == absl::StatusCode::kAborted) {
      // Diverged and rolled back: the weights are still the last good
      // version. Fail the run only when it keeps happening.
      ++diverged_in_a_row;
      RLOG(WARNING) << "run " << spec_.run_id << ": "
                    << stats.status().message() << " (" << diverged_in_a_row
                    << " in a row)";
      if (metrics_ != nullptr) metrics_->RolledBack();
      absl::MutexLock lock(&mu_);
      ++counters_.updates_rolled_back;
      if (diverged_in_a_row >= kMaxConsecutiveDivergedUpdates) {
        failure_ =
            Annotate(stats.status(),
                     absl::StrCat("training diverged ", diverged_in_a_row,
                                  " updates in a row; last one"));
      }
    } else if (stats.status().code() != absl::StatusCode::kFailedPrecondition &&
               !cancelled) {
      absl::MutexLock lock(&mu_);
      failure_ = Annotate(stats.status(), "PPO update failed");
    }
    // A stop skips the evaluation (the checkpoint after the loop keeps the
    // training); a run that reached its budget still gets its final one.
    if (finished || (steps >= next_eval_ && !cancel_.load())) {
      const Clock::time_point evaluating = Clock::now();
      absl::Status evaluated = EvaluateAndCheckpoint();
      const double evaluate_seconds = seconds_since(evaluating);
      {
        absl::MutexLock lock(&mu_);
        counters_.evaluating_seconds += evaluate_seconds;
      }
      if (!evaluated.ok()) {
        absl::MutexLock lock(&mu_);
        failure_ = Annotate(evaluated, "evaluation or checkpoint failed");
      }
      while (next_eval_ <= steps) {
        next_eval_ += o.eval_every_env_steps > 0 ? o.eval_every_env_steps
                                                 : o.budget_env_steps;
      }
    }
    if (finished) break;
  }
  bool finished_now = false;
  {
    absl::MutexLock lock(&mu_);
    finished_now = counters_.env_steps_trained >= o.budget_env_steps;
  }
  // Stopped before the budget: keep what was trained, without evaluating
  // (a stop must be prompt; the resumed run evaluates at the next point of
  // its grid). The final update and evaluation already checkpointed a
  // finished run.
  if (!finished_now) {
    absl::Status evaluated = EvaluateAndCheckpoint(/*evaluate=*/false);
    if (!evaluated.ok()) {
      absl::MutexLock lock(&mu_);
      failure_ = Annotate(evaluated, "final checkpoint failed");
    }
  }
  // Finished or stopping: whatever is still queued or parked will not be
  // trained; count it as dropped so received = trained + dropped.
  std::vector<std::function<void()>> to_resume;
  std::vector<Listener> listeners;
  {
    absl::MutexLock lock(&mu_);
    int64_t left = batch_samples_;
    batch_chunks_.clear();
    batch_samples_ = 0;
    for (const TrajectoryChunk& c : queue_) left += c.num_samples();
    for (const auto& [c, cb] : parked_) {
      left += c.num_samples();
      to_resume.push_back(cb);
    }
    queue_.clear();
    parked_.clear();
    counters_.env_steps_dropped += left;
    ExportQueueDepth();
    if (metrics_ != nullptr) metrics_->AddDropped(left);
    if (counters_.env_steps_trained >= o.budget_env_steps) {
      counters_.finished = true;
    }
    for (const auto& [id, l] : listeners_) listeners.push_back(l);
  }
  for (auto& cb : to_resume) cb();
  for (const Listener& l : listeners) l(nullptr);
}

absl::Status RunHost::Export(const std::string& out_dir) {
  Stop();  // the training thread has exited: learner_ is ours again
  return ExportPolicy(learner_->model(), contract_, out_dir);
}

int PolicyLagCredits(int max_policy_lag, int64_t samples_per_update,
                     int queue_capacity, int64_t chunk_steps, int64_t actors,
                     int max_credits) {
  const int64_t cap = std::max(1, max_credits);
  if (chunk_steps <= 0) return static_cast<int>(cap);
  const int64_t room =
      int64_t{std::max(0, max_policy_lag - 1)} * samples_per_update -
      int64_t{std::max(0, queue_capacity)} * chunk_steps;
  const int64_t per_actor = room / (std::max<int64_t>(1, actors) * chunk_steps);
  return static_cast<int>(std::clamp<int64_t>(per_actor, 1, cap));
}

bool PolicyLagAbsorbs(int max_policy_lag, int64_t samples_per_update,
                      int queue_capacity, int64_t chunk_steps,
                      int64_t actor_steps) {
  return int64_t{std::max(0, queue_capacity)} * chunk_steps + actor_steps <=
         int64_t{std::max(0, max_policy_lag - 1)} * samples_per_update;
}

bool RunHost::AbsorbsActor(int64_t assigned_steps, int64_t env_copies) const {
  const int64_t chunk = ChunkSteps(env_copies);
  return PolicyLagAbsorbs(spec_.trainer.ppo.max_policy_lag,
                          spec_.samples_per_update, spec_.queue_capacity, chunk,
                          assigned_steps + chunk);
}

int RunHost::ActorCredits(int64_t chunk_steps, int max_credits) const {
  int64_t actors = 0;
  {
    absl::MutexLock lock(&mu_);
    actors = static_cast<int64_t>(listeners_.size());
  }
  const int lag = spec_.trainer.ppo.max_policy_lag;
  const int64_t spu = spec_.samples_per_update;
  const int64_t queued = int64_t{spec_.queue_capacity} * chunk_steps;
  // Even one chunk per actor is more than the lag allows: some chunks will
  // arrive stale whatever the credit. Say once what would fit.
  if (chunk_steps > 0 && actors > 0 && lag > 1 &&
      int64_t{lag - 1} * spu < queued + actors * chunk_steps &&
      !lag_warned_.exchange(true)) {
    const int64_t needed =
        (queued + actors * chunk_steps + lag - 2) / int64_t{lag - 1};
    RLOG(WARNING) << "run " << spec_.run_id << ": " << actors
                  << " actors with chunks of " << chunk_steps
                  << " steps and a queue of " << spec_.queue_capacity
                  << " chunks are more than max_policy_lag " << lag
                  << " allows with " << spu
                  << " steps per update; chunks will be dropped as stale "
                     "(raise the samples per update to "
                  << needed
                  << " or more: --samples-per-update of a stand-alone "
                     "learner, num_envs x rollout_steps of a study's run; or "
                     "lower --queue or the chunk length)";
  }
  return PolicyLagCredits(lag, spu, spec_.queue_capacity, chunk_steps, actors,
                          max_credits);
}

bool RunHost::accepting() const {
  absl::MutexLock lock(&mu_);
  return !counters_.finished && !stopping_ && !budget_reached_;
}

bool RunHost::budget_reached() const {
  absl::MutexLock lock(&mu_);
  return budget_reached_ || counters_.finished;
}

bool RunHost::may_reopen() const {
  absl::MutexLock lock(&mu_);
  return budget_reached_ && !stopping_ && !counters_.finished &&
         counters_.env_steps_trained < spec_.trainer.budget_env_steps;
}

absl::StatusOr<EvaluationResult> RunHost::EvaluateNow() {
  Stop();
  const TrainerOptions& o = spec_.trainer;
  if (o.validation_domains.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", spec_.run_id, " has no validation slice"));
  }
  ASSIGN_OR_RETURN(
      EvaluationResult eval,
      EvaluatePolicy(learner_->model(), market_, o.env, o.validation_domains));
  eval.at_env_steps = counters().env_steps_trained;
  eval.score = ObjectiveValue(objective_, eval);
  if (metrics_ != nullptr) metrics_->SetValidationScore(eval.score);
  {
    absl::MutexLock lock(&mu_);
    last_evaluation_ = eval;
    counters_.last_score = eval.score;
  }
  RETURN_IF_ERROR(Annotate(KeepIfBest(eval), "saving the best policy"));
  return eval;
}

std::optional<EvaluationResult> RunHost::last_evaluation() const {
  absl::MutexLock lock(&mu_);
  return last_evaluation_;
}

std::optional<EvaluationResult> RunHost::best_evaluation() const {
  absl::MutexLock lock(&mu_);
  return best_evaluation_;
}

std::string RunHost::best_policy_dir() const {
  absl::MutexLock lock(&mu_);
  return best_policy_dir_;
}

absl::Status RunHost::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

int64_t EstimateRunBytes(const RunSpec& spec, int obs_size, int action_size,
                         int64_t max_chunk_samples) {
  const NetworkOptions& n = spec.trainer.network;
  auto mlp = [](int in, const std::vector<int>& hidden, int out) {
    int64_t params = 0;
    int64_t prev = in;
    for (int h : hidden) {
      params += prev * h + h;
      prev = h;
    }
    return params + prev * out + out;
  };
  const int64_t params = mlp(obs_size, n.policy_hidden, action_size) +
                         mlp(obs_size, n.value_hidden, 1) + action_size +
                         2 * static_cast<int64_t>(obs_size);  // log-std, norm
  constexpr int64_t kFloat = 4;
  // weights + gradients + Adam m and v; serialised weights, current + next.
  const int64_t model = params * kFloat * (4 + 2);
  // One env step of a chunk: obs, bootstrap share, action, log-prob,
  // reward, done, truncated, value/advantage/return in the update.
  const int64_t per_sample = (obs_size + 2 * action_size + 8) * kFloat;
  const int64_t queue = (spec.queue_capacity + 1) *
                        std::max<int64_t>(max_chunk_samples, 1) * per_sample;
  // The update batch, its tensor copy and the minibatch activations.
  int64_t widest = 1;
  for (int h : n.policy_hidden) widest = std::max<int64_t>(widest, h);
  for (int h : n.value_hidden) widest = std::max<int64_t>(widest, h);
  const int64_t batch =
      spec.samples_per_update * per_sample * 3 +
      int64_t{spec.trainer.ppo.minibatch_size} * widest * kFloat * 8;
  return model + queue + batch;
}

}  // namespace ristretto::learner
