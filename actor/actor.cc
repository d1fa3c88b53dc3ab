#include "actor/actor.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actor/actor_metrics.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "env/dataset.h"
#include "env/market_data.h"
#include "env/vector_env.h"
#include "learner/torch/actor_critic.h"
#include "learner/trajectory.h"
#include "proto/coordinator.pb.h"
#include "wire/dataset_cache.h"
#include "wire/learner_client.h"

namespace ristretto::actor {
namespace {

// Chunk buffers for the rollout. A written chunk stays referenced by
// gRPC's slices until it is on the wire (EncodeChunkMessage aliases its
// arrays instead of copying them), so the rollout fills another buffer
// meanwhile; a released buffer comes back here with its capacity. The
// mutex orders gRPC's last read of a buffer before its reuse.
class ChunkPool : public std::enable_shared_from_this<ChunkPool> {
 public:
  std::shared_ptr<learner::TrajectoryChunk> Acquire() {
    std::unique_ptr<learner::TrajectoryChunk> chunk;
    {
      absl::MutexLock lock(&mu_);
      if (!free_.empty()) {
        chunk = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (chunk == nullptr) chunk = std::make_unique<learner::TrajectoryChunk>();
    std::weak_ptr<ChunkPool> pool = weak_from_this();
    return std::shared_ptr<learner::TrajectoryChunk>(
        chunk.release(), [pool](learner::TrajectoryChunk* c) {
          std::unique_ptr<learner::TrajectoryChunk> owned(c);
          if (std::shared_ptr<ChunkPool> p = pool.lock()) {
            p->Release(std::move(owned));
          }
        });
  }

 private:
  void Release(std::unique_ptr<learner::TrajectoryChunk> chunk) {
    absl::MutexLock lock(&mu_);
    // More than the in-flight window plus the one being filled is never
    // needed for long; keep a few.
    if (free_.size() < 8) free_.push_back(std::move(chunk));
  }

  absl::Mutex mu_;
  std::vector<std::unique_ptr<learner::TrajectoryChunk>> free_
      ABSL_GUARDED_BY(mu_);
};

// Gives `chunk` the run, actor and sizes of `like`, with arrays of the
// right sizes (no-ops for a recycled buffer of the same run).
void ShapeLike(const learner::TrajectoryChunk& like,
               learner::TrajectoryChunk* chunk) {
  const size_t T = like.steps, B = like.copies, D = like.obs_size,
               A = like.action_size;
  chunk->run_id = like.run_id;
  chunk->actor_id = like.actor_id;
  chunk->steps = like.steps;
  chunk->copies = like.copies;
  chunk->obs_size = like.obs_size;
  chunk->action_size = like.action_size;
  chunk->obs.resize((T + 1) * B * D);
  chunk->actions.resize(T * B * A);
  chunk->log_probs.resize(T * B);
  chunk->rewards.resize(T * B);
  chunk->dones.resize(T * B);
  chunk->final_obs.clear();
}

// FNV-1a: stable across platforms and different from the std::hash the
// learner may already have mixed into the assignment seed (the two must not
// cancel out).
uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') {
    return "localhost";
  }
  return buf;
}

bool IsHexId(const std::string& id) {
  if (id.size() != 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// Errors that retrying cannot fix: the learner and this actor disagree on
// the contract, the env or the file format.
bool IsFatal(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument ||
         s.code() == absl::StatusCode::kFailedPrecondition ||
         s.code() == absl::StatusCode::kUnimplemented;
}

std::string Millis(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Milliseconds(d), " ms");
}

}  // namespace

// One decoded weight version. The module is only run by the rollout thread
// once adopted (the reader thread builds it and never touches it again).
struct Actor::Policy {
  std::string run_id;
  int64_t version = -1;
  learner::ActorCritic model{nullptr};
};

struct Actor::Rollout {
  v1::RunAssignment assignment;  // the applied one
  std::string assignment_bytes;  // its serialisation, to spot a re-send
  int64_t applied_gen = 0;
  // The market of the last dataset used (kept across runs).
  std::string market_id;
  std::shared_ptr<const env::MarketData> market;
  std::unique_ptr<env::VectorEnv> env;
  std::shared_ptr<Policy> policy;
  // Inference for `policy` at this env's batch size (rebuilt when either
  // changes): no tensor allocated per step.
  std::shared_ptr<Policy> sampler_policy;
  std::unique_ptr<learner::PolicySampler> sampler;
  Rng noise_rng;

  // Acts with no policy until new weights come; the sampler's goes too, so
  // its model can be reused for them (Actor::ReusablePolicy).
  void DropPolicy() {
    policy.reset();
    sampler.reset();
    sampler_policy.reset();
  }
  // The chunk being filled (obs row 0 = the envs' current obs), from
  // `pool`.
  std::shared_ptr<ChunkPool> pool = std::make_shared<ChunkPool>();
  std::shared_ptr<learner::TrajectoryChunk> chunk;
  std::vector<float> noise, actions, final_obs;
};

std::string DefaultCacheDir() {
  const char* cache = std::getenv("RISTRETTO_CACHE");
  if (cache != nullptr && cache[0] != '\0') return cache;
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr && home[0] != '\0' ? home : ".",
                      "/.cache/ristretto/datasets");
}

absl::StatusOr<std::unique_ptr<Actor>> Actor::Create(
    const ActorOptions& options) {
  return Create(options, ActorClients());
}

absl::StatusOr<std::unique_ptr<Actor>> Actor::Create(
    const ActorOptions& options, ActorClients clients) {
  if (options.learner_address.empty() && options.coordinator_address.empty()) {
    return absl::InvalidArgumentError(
        "give a learner address or a coordinator address");
  }
  if (options.num_envs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_envs is ", options.num_envs, "; it must be >= 1"));
  }
  if (options.max_inflight < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_inflight is ", options.max_inflight, "; it must be >= 1"));
  }
  if (options.max_message_bytes < 1 ||
      options.initial_backoff <= absl::ZeroDuration() ||
      options.max_backoff < options.initial_backoff ||
      options.drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "max_message_bytes must be >= 1, 0 < initial_backoff <= "
        "max_backoff and drain_timeout >= 0");
  }
  ActorOptions filled = options;
  if (filled.actor_id.empty()) {
    filled.actor_id = absl::StrCat(Hostname(), "-", getpid());
  }
  if (filled.cache_dir.empty()) filled.cache_dir = DefaultCacheDir();
  // One intra-op thread: the actor's parallelism is its env copies and its
  // processes, and small MLP forwards lose to thread hand-offs.
  static std::once_flag torch_threads;
  std::call_once(torch_threads, [] { torch::set_num_threads(1); });
  if (!clients.learners) {
    wire::GrpcLearnerClientOptions grpc_options;
    grpc_options.max_message_bytes = filled.max_message_bytes;
    grpc_options.rpc_deadline = filled.rpc_deadline;
    clients.learners = wire::GrpcLearnerClientFactory(grpc_options);
  }
  if (clients.coordinator == nullptr && !filled.coordinator_address.empty()) {
    clients.coordinator = wire::NewGrpcActorCoordinatorClient(
        filled.coordinator_address, absl::Seconds(5));
  }
  std::unique_ptr<Actor> actor(new Actor(filled, std::move(clients)));
  if (filled.metrics != nullptr) {
    actor->metrics_ =
        std::make_unique<ActorMetrics>(*filled.metrics, filled.actor_id);
  }
  return actor;
}

Actor::Actor(const ActorOptions& options, ActorClients clients)
    : options_(options),
      host_(Hostname()),
      learner_factory_(std::move(clients.learners)),
      coordinator_(std::move(clients.coordinator)),
      rollout_(std::make_unique<Rollout>()) {
  window_ = options_.max_inflight;
}

std::string Actor::LearnerAddress() const {
  absl::MutexLock lock(&mu_);
  return current_learner_.empty() ? options_.learner_address : current_learner_;
}

void Actor::ResolveLearner() {
  if (coordinator_ == nullptr) return;
  v1::FindLearnerRequest request;
  request.set_actor_id(options_.actor_id);
  const absl::StatusOr<v1::FindLearnerResponse> response =
      coordinator_->FindLearner(request);
  if (!response.ok()) {
    // Said on every attempt (the reconnect back-off paces them): a refusal
    // (a wrong token, a client certificate that names another actor id)
    // is a set-up error the operator must see, not a silent retry.
    RLOG(WARNING) << "actor " << options_.actor_id
                  << ": the coordinator found no learner: "
                  << response.status().ToString();
    return;
  }
  if (response->learner_address().empty()) return;
  absl::MutexLock lock(&mu_);
  if (response->learner_address() != current_learner_) {
    current_learner_ = response->learner_address();
    RLOG(INFO) << "actor " << options_.actor_id << ": joining learner "
               << current_learner_;
  }
}

Actor::~Actor() { Stop(); }

void Actor::SetCurrentVersion(int64_t version) {
  current_version_.store(version);
  if (metrics_ != nullptr) metrics_->SetPolicyVersion(version);
}

void Actor::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
  if (call_ != nullptr) call_->Cancel();
  if (fetch_ != nullptr) fetch_->Cancel();
  cv_.SignalAll();
}

std::map<int, int64_t> Actor::rejected_by_code() const {
  absl::MutexLock lock(&mu_);
  return rejected_by_code_;
}

absl::StatusOr<v1::LearnerStatus> Actor::GetLearnerStatus() {
  absl::StatusOr<v1::LearnerStatus> status =
      learner_factory_(LearnerAddress())->GetStatus();
  if (!status.ok()) return Annotate(status.status(), "GetStatus");
  return status;
}

void Actor::EndSession(SessionEnd end, absl::Status error) {
  absl::MutexLock lock(&mu_);
  if (session_end_ == SessionEnd::kNone) {
    session_end_ = end;
    session_error_ = std::move(error);
  }
  cv_.SignalAll();
}

absl::Status Actor::Run() {
  const std::string& id = options_.actor_id;
  absl::Duration backoff = options_.initial_backoff;
  for (bool first = true;; first = false) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return absl::OkStatus();
      if (options_.exit_when_idle && idle_since_.has_value() &&
          absl::Now() >= *idle_since_ + options_.idle_timeout) {
        RLOG(INFO) << "actor " << id << ": idle for "
                   << Millis(options_.idle_timeout) << "; exiting";
        return absl::OkStatus();
      }
    }
    if (!first) {
      reconnects_.fetch_add(1);
      if (metrics_ != nullptr) metrics_->CountReconnect();
    }
    const absl::Status final_status = RunSession();

    SessionEnd end;
    absl::Status error;
    bool assigned;
    std::optional<v1::Stop> stop_message;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return absl::OkStatus();
      end = session_end_;
      error = session_error_;
      assigned = session_assigned_;
      stop_message = learner_stop_;
    }
    // A session that got work resets the backoff, unless it failed on it
    // (a dataset the learner cannot serve must not be asked for 10×/s).
    if (assigned && end != SessionEnd::kError) {
      backoff = options_.initial_backoff;
    }
    bool retry_now = false;
    switch (end) {
      case SessionEnd::kIdle:
        RLOG(INFO) << "actor " << id << ": no assignment within "
                   << Millis(options_.idle_timeout)
                   << " of the run finishing; exiting";
        return absl::OkStatus();
      case SessionEnd::kError:
        if (IsFatal(error)) return error;
        RLOG(WARNING) << "actor " << id << ": " << error.ToString();
        break;
      case SessionEnd::kResync:
        RLOG(WARNING) << "actor " << id
                      << ": the learner rejected a chunk as invalid; "
                         "reconnecting to resynchronise weights";
        // Act again only with the weights the learner sends next.
        rollout_->DropPolicy();
        SetCurrentVersion(-1);
        retry_now = true;
        break;
      case SessionEnd::kLearnerStop:
        RLOG(INFO) << "actor " << id
                   << ": learner stop: " << stop_message->reason()
                   << (stop_message->run_finished() ? " (run finished)" : "");
        if (stop_message->run_finished()) {
          // Drop the finished run; keep the market for the next one.
          rollout_->env.reset();
          rollout_->DropPolicy();
          rollout_->assignment_bytes.clear();
          SetCurrentVersion(-1);
          // Ask for new work at once, but only after a run we worked on:
          // "no run" answers are retried with backoff.
          retry_now = assigned;
          // The learner is up and will have work soon (its next run is
          // being leased): poll at least every max_idle_poll.
          if (!assigned) backoff = std::min(backoff, options_.max_idle_poll);
        } else if (!assigned) {
          // Every run has --max-actors-per-run actors, a run is training
          // its last chunks, or the learner is shutting down: a run may
          // open or lose an actor any moment, so poll at least every
          // max_idle_poll rather than backing off to max_backoff.
          backoff = std::min(backoff, options_.max_idle_poll);
        }
        break;
      case SessionEnd::kStreamClosed:
      case SessionEnd::kNone:
        // The learner connected to (the coordinator's choice, if any).
        RLOG(WARNING) << "actor " << id << ": stream to " << LearnerAddress()
                      << " ended: " << final_status.ToString();
        if (options_.exit_when_idle && !assigned) {
          // It had said a run of its own was unfinished, and now does not
          // answer (it exited once that run finished): idle from here.
          absl::MutexLock lock(&mu_);
          if (awaiting_finish_ && !idle_since_.has_value()) {
            idle_since_ = absl::Now();
          }
        }
        break;
    }
    if (retry_now) continue;
    RLOG(INFO) << "actor " << id << ": reconnecting in " << Millis(backoff);
    {
      absl::MutexLock lock(&mu_);
      absl::Time wake = absl::Now() + backoff;
      if (options_.exit_when_idle && idle_since_.has_value()) {
        wake = std::min(wake, *idle_since_ + options_.idle_timeout);
      }
      while (!stop_ && absl::Now() < wake) cv_.WaitWithDeadline(&mu_, wake);
    }
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

absl::Status Actor::RunSession() {
  v1::Hello hello;
  {
    absl::MutexLock lock(&mu_);
    session_end_ = SessionEnd::kNone;
    session_error_ = absl::OkStatus();
    session_assigned_ = false;
    learner_stop_.reset();
    reader_done_ = false;
    rollout_done_ = false;
    unacked_.clear();
    window_ = options_.max_inflight;
    if (stop_) return absl::CancelledError("stopped");
    hello.set_actor_id(options_.actor_id);
    hello.set_env_copies(options_.num_envs);
    hello.set_host(host_);
    const bool rejoin = assignment_.has_value() && !idle_since_.has_value();
    hello.set_want_run_id(rejoin ? assignment_->run_id() : "");
    hello.set_have_version(rejoin ? have_version_ : -1);
  }
  ResolveLearner();
  learner_ = learner_factory_(LearnerAddress());
  const std::unique_ptr<wire::ActCall> call = learner_->Act();
  {
    absl::MutexLock lock(&mu_);
    // Stop() before the call was registered: cancel it here.
    if (stop_) call->Cancel();
    call_ = call.get();
  }
  if (call->WriteHello(hello)) {
    std::thread reader([this, &call] { ReaderLoop(call.get()); });
    std::thread rollout([this, &call] { RolloutLoop(call.get()); });
    bool drain = false;
    {
      absl::MutexLock lock(&mu_);
      while (session_end_ == SessionEnd::kNone && !stop_) {
        if (options_.exit_when_idle && idle_since_.has_value()) {
          const absl::Time deadline = *idle_since_ + options_.idle_timeout;
          if (absl::Now() >= deadline) {
            session_end_ = SessionEnd::kIdle;
            break;
          }
          cv_.WaitWithDeadline(&mu_, deadline);
        } else {
          cv_.Wait(&mu_);
        }
      }
      // Wake the rollout thread if it waits for work or credit, and abandon
      // a dataset fetch (the next session starts it again).
      cv_.SignalAll();
      if (fetch_ != nullptr) fetch_->Cancel();
      // A stream the learner closed keeps its status for Finish(), and one
      // it stopped is drained (chunks already written are still counted
      // there); any other end cancels the call (Stop() may still cancel it
      // later).
      drain = session_end_ == SessionEnd::kLearnerStop && !stop_;
      if (session_end_ != SessionEnd::kStreamClosed && !drain) {
        call->Cancel();
      }
    }
    if (drain) DrainSession(call.get());
    reader.join();
    rollout.join();
  } else {
    EndSession(SessionEnd::kStreamClosed, absl::OkStatus());
  }
  absl::Status status = call->Finish();
  absl::MutexLock lock(&mu_);
  call_ = nullptr;
  return status;
}

void Actor::DrainSession(wire::ActCall* call) {
  const absl::Time deadline = absl::Now() + options_.drain_timeout;
  absl::MutexLock lock(&mu_);
  while (!stop_ && !(reader_done_ && rollout_done_) && absl::Now() < deadline) {
    cv_.WaitWithDeadline(&mu_, deadline);
  }
  if (reader_done_ && rollout_done_) return;
  if (!stop_) {
    RLOG(WARNING) << "actor " << options_.actor_id
                  << ": the learner did not end the stream within "
                  << Millis(options_.drain_timeout)
                  << " of its stop; cancelling";
  }
  // Unblocks a Write held by flow control and the reader's Read.
  call->Cancel();
}

void Actor::ReaderLoop(wire::ActCall* call) {
  v1::LearnerMessage message;
  while (call->Read(&message)) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) break;
      if (session_end_ == SessionEnd::kLearnerStop) {
        // Draining after the learner's Stop: only the acks of chunks
        // written before it still matter.
        if (!message.has_ack()) continue;
      }
    }
    switch (message.kind_case()) {
      case v1::LearnerMessage::kAssignment:
        HandleAssignment(message.assignment());
        break;
      case v1::LearnerMessage::kWeights:
        HandleWeights(message.weights());
        break;
      case v1::LearnerMessage::kAck:
        HandleAck(message.ack());
        break;
      case v1::LearnerMessage::kStop:
        HandleStop(message.stop());
        break;
      case v1::LearnerMessage::KIND_NOT_SET:
        break;  // a newer learner's message kind: ignore
    }
    // Any end but the learner's Stop cancels the call: stop reading. After
    // a Stop, read on until the learner ends the call.
    absl::MutexLock lock(&mu_);
    if (stop_ || (session_end_ != SessionEnd::kNone &&
                  session_end_ != SessionEnd::kLearnerStop)) {
      break;
    }
  }
  absl::MutexLock lock(&mu_);
  if (session_end_ == SessionEnd::kNone) {
    session_end_ = SessionEnd::kStreamClosed;
  }
  reader_done_ = true;
  cv_.SignalAll();
}

void Actor::HandleAssignment(const v1::RunAssignment& a) {
  absl::Status problem;
  if (a.run_id().empty() || !IsHexId(a.dataset_id()) || a.rollout_steps() < 1 ||
      a.episode_steps() < 1) {
    problem = absl::InvalidArgumentError(absl::StrCat(
        "assignment: run_id '", a.run_id(), "', dataset_id '", a.dataset_id(),
        "' (64 hex digits), rollout_steps ", a.rollout_steps(),
        " and episode_steps ", a.episode_steps(), " must all be set"));
  }
  absl::StatusOr<learner::PolicyContract> contract =
      learner::PolicyContract::FromJson(a.contract_json());
  if (problem.ok() && !contract.ok()) {
    problem = Annotate(
        contract.status(),
        absl::StrCat("assignment of run ", a.run_id(), ": contract_json"));
  }
  if (!problem.ok()) {
    EndSession(SessionEnd::kError, problem);
    return;
  }
  RLOG(INFO) << "actor " << options_.actor_id << ": assigned run " << a.run_id()
             << " (dataset " << a.dataset_id().substr(0, 12)
             << ", T=" << a.rollout_steps() << ", B=" << options_.num_envs
             << ", obs=" << contract->obs_size
             << ", actions=" << contract->action_size << ")";
  absl::MutexLock lock(&mu_);
  if (!assignment_.has_value() || assignment_->run_id() != a.run_id()) {
    pending_policy_.reset();
    have_version_ = -1;
    last_resync_version_ = -2;
  }
  assignment_ = a;
  contract_ = *std::move(contract);
  ++assignment_gen_;
  session_assigned_ = true;
  idle_since_.reset();
  awaiting_finish_ = false;
  cv_.SignalAll();
}

void Actor::HandleWeights(const v1::WeightVersion& w) {
  learner::PolicyContract contract;
  {
    absl::MutexLock lock(&mu_);
    if (!assignment_.has_value() || assignment_->run_id() != w.run_id()) {
      return;  // weights of a run we no longer (or not yet) work on
    }
    if (w.version() <= have_version_) return;  // already held
    contract = *contract_;
  }
  std::shared_ptr<Policy> policy;
  try {
    policy = ReusablePolicy(contract);
    policy->run_id = w.run_id();
    policy->version = w.version();
    std::istringstream in(w.state());
    // The learner saves its weights from the device it trains on; the
    // actor's policy runs on the CPU, whatever LibTorch it was built with
    // (a CUDA build would otherwise put them on the GPU, a CPU build fail).
    torch::load(policy->model, in, torch::Device(torch::kCPU));
    policy->model->eval();
  } catch (const std::exception& e) {
    // c10::Error included: the weights do not fit the contract's network.
    // A half-loaded model is not reused.
    {
      absl::MutexLock lock(&policy_pool_mu_);
      policy_pool_.clear();
    }
    EndSession(SessionEnd::kError,
               absl::FailedPreconditionError(absl::StrCat(
                   "weights of run ", w.run_id(), " version ", w.version(),
                   " do not load into the contract's network: ", e.what())));
    return;
  }
  weight_versions_received_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  if (assignment_.has_value() && assignment_->run_id() == w.run_id() &&
      w.version() > have_version_) {
    pending_policy_ = std::move(policy);
    have_version_ = w.version();
    cv_.SignalAll();
  }
}

std::shared_ptr<Actor::Policy> Actor::ReusablePolicy(
    const learner::PolicyContract& contract) {
  const std::string key = contract.ToJson();
  absl::MutexLock lock(&policy_pool_mu_);
  if (key != policy_pool_contract_) {
    policy_pool_.clear();
    policy_pool_contract_ = key;
  }
  for (const std::shared_ptr<Policy>& p : policy_pool_) {
    // Held by the pool alone (the Policy, and its model, which a sampler
    // holds too): no other thread can get hold of it, so it is ours.
    if (p.use_count() == 1 && p->model.ptr().use_count() == 1) {
      // use_count() is a relaxed load: order the last user's reads of the
      // weights (it released its reference with acq_rel) before we
      // overwrite them.
      std::atomic_thread_fence(std::memory_order_acquire);
      return p;
    }
  }
  auto policy = std::make_shared<Policy>();
  policy->model = learner::ActorCritic(contract.obs_size, contract.action_size,
                                       contract.network);
  policy_pool_.push_back(policy);
  return policy;
}

void Actor::HandleAck(const v1::ChunkAck& ack) {
  absl::MutexLock lock(&mu_);
  // credits = chunks we may have unacknowledged; 0 (unset) keeps the window
  // (a zero window could never reopen: acks only answer chunks).
  if (ack.credits() > 0) window_ = std::min(ack.credits(), 1024);
  auto it = unacked_.find(ack.sequence());
  if (it == unacked_.end()) {
    // Not one of our chunks (e.g. sequence -1: a rejected Hello).
    if (ack.code() != 0) {
      RLOG(WARNING) << "actor " << options_.actor_id << ": learner error "
                    << ack.code() << ": " << ack.message();
    }
    return;
  }
  const int64_t version = it->second;
  unacked_.erase(it);
  cv_.SignalAll();
  if (ack.code() == 0) {
    chunks_acked_ok_.fetch_add(1);
    return;
  }
  chunks_rejected_.fetch_add(1);
  if (metrics_ != nullptr) metrics_->CountRejected(ack.code());
  const int64_t n = ++rejected_by_code_[ack.code()];
  if (n <= 3) {
    RLOG(WARNING) << "actor " << options_.actor_id << ": chunk "
                  << ack.sequence() << " rejected (code " << ack.code()
                  << "): " << ack.message();
  }
  // INVALID_ARGUMENT for a chunk of the newest version we hold means that
  // version is from the learner's future: it restarted from an older
  // checkpoint and, told our have_version, sends nothing older. Re-register
  // without a version, once per version (a real encoding bug must not loop
  // forever). Chunks of versions we already replaced are ignored.
  if (ack.code() == static_cast<int>(absl::StatusCode::kInvalidArgument) &&
      version == have_version_ && version != last_resync_version_ &&
      session_end_ == SessionEnd::kNone) {
    last_resync_version_ = version;
    have_version_ = -1;
    pending_policy_.reset();
    session_end_ = SessionEnd::kResync;
  }
}

void Actor::HandleStop(const v1::Stop& stop) {
  absl::MutexLock lock(&mu_);
  learner_stop_ = stop;
  if (stop.run_finished()) {
    if (!idle_since_.has_value()) idle_since_ = absl::Now();
    awaiting_finish_ = false;
    pending_policy_.reset();
    have_version_ = -1;
  } else if (idle_since_.has_value()) {
    // Asked for work after our run finished, the learner says it still has
    // a run that has not: one that stopped its actors early trains the
    // chunks it holds and may need more (a rolled-back update), or it is
    // shutting down to restart. Not idle while it keeps saying so: the
    // idle clock waits for "finished" again, or for the learner to stop
    // answering (Run), and the next Hello asks for the run we worked on.
    idle_since_.reset();
    awaiting_finish_ = true;
  }
  if (session_end_ == SessionEnd::kNone)
    session_end_ = SessionEnd::kLearnerStop;
  cv_.SignalAll();
}

void Actor::RolloutLoop(wire::ActCall* call) {
  absl::Status status;
  try {
    status = RolloutChunks(call);
  } catch (const std::exception& e) {
    // LibTorch (c10::Error) or allocation failures: retry from scratch.
    status = absl::InternalError(absl::StrCat("rollout: ", e.what()));
  }
  if (!status.ok()) EndSession(SessionEnd::kError, status);
  bool half_close = false;
  {
    absl::MutexLock lock(&mu_);
    half_close = session_end_ == SessionEnd::kLearnerStop && !stop_;
  }
  // The learner stopped us: no more chunks. Half-closing tells it that it
  // has read every chunk we wrote; it then ends the call (DrainSession).
  // This thread is the stream's only writer, so nothing races the close.
  if (half_close) call->WritesDone();
  absl::MutexLock lock(&mu_);
  rollout_done_ = true;
  cv_.SignalAll();
}

absl::Status Actor::RolloutChunks(wire::ActCall* call) {
  Rollout& r = *rollout_;
  const int B = options_.num_envs;
  while (true) {
    // Wait for a new assignment to apply, or an env with weights.
    std::optional<v1::RunAssignment> todo;
    learner::PolicyContract contract;
    int64_t gen = 0;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const bool new_weights =
            pending_policy_ != nullptr &&
            pending_policy_->run_id == r.assignment.run_id();
        // A rollout also waits for credit first: the chunk is then made
        // with the newest weights that arrive meanwhile and sent at once,
        // instead of aging while it waits (a chunk made before the wait
        // is a version or two older when trained, and more often beyond
        // max_policy_lag).
        // No chunk before this session's assignment: on a rejoin the
        // learner may answer with another run (the old one full or gone),
        // and a chunk of the old run would only be refused (NOT_FOUND).
        return stop_ || session_end_ != SessionEnd::kNone ||
               assignment_gen_ != r.applied_gen ||
               (session_assigned_ && r.env != nullptr &&
                (r.policy != nullptr || new_weights) &&
                static_cast<int>(unacked_.size()) < window_);
      };
      while (!ready()) cv_.Wait(&mu_);
      if (stop_ || session_end_ != SessionEnd::kNone) return absl::OkStatus();
      if (assignment_gen_ != r.applied_gen) {
        todo = *assignment_;
        contract = *contract_;
        gen = assignment_gen_;
      } else if (pending_policy_ != nullptr &&
                 pending_policy_->run_id == r.assignment.run_id()) {
        // Chunk boundary: the only place the acting policy changes.
        r.policy = std::move(pending_policy_);
        pending_policy_.reset();
      }
    }
    if (todo.has_value()) {
      RETURN_IF_ERROR(ApplyAssignment(*todo, contract));
      r.applied_gen = gen;
      continue;
    }
    if (r.policy == nullptr) continue;  // weights of another run pending
    SetCurrentVersion(r.policy->version);

    // T steps × B copies with one policy version (as the trainer's rollout).
    learner::TrajectoryChunk& chunk = *r.chunk;
    const int T = chunk.steps, D = chunk.obs_size, A = chunk.action_size;
    chunk.policy_version = r.policy->version;
    chunk.final_obs.clear();
    int t = 0;
    {
      torch::NoGradGuard no_grad;
      for (; t < T; ++t) {
        {
          absl::MutexLock lock(&mu_);
          if (stop_ || session_end_ != SessionEnd::kNone) break;
        }
        for (float& z : r.noise) z = static_cast<float>(r.noise_rng.Normal());
        float* obs_t = chunk.obs.data() + static_cast<size_t>(t) * B * D;
        if (r.sampler == nullptr || r.sampler_policy != r.policy ||
            r.sampler->batch() != B) {
          r.sampler =
              std::make_unique<learner::PolicySampler>(r.policy->model, B);
          r.sampler_policy = r.policy;
        }
        const auto inference_start = std::chrono::steady_clock::now();
        // u and log π straight into the chunk, the actions for the env.
        r.sampler->Sample(obs_t, r.noise.data(), /*deterministic=*/false,
                          chunk.actions.data() + static_cast<size_t>(t) * B * A,
                          r.actions.data(),
                          chunk.log_probs.data() + static_cast<size_t>(t) * B);
        if (metrics_ != nullptr) {
          metrics_->ObserveInference(
              std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            inference_start)
                  .count());
        }
        env::StepOutput out;
        out.obs = obs_t + static_cast<size_t>(B) * D;
        out.reward = chunk.rewards.data() + static_cast<size_t>(t) * B;
        out.done = chunk.dones.data() + static_cast<size_t>(t) * B;
        out.final_obs = r.final_obs.data();
        const absl::Status step = r.env->Step(r.actions.data(), out);
        if (!step.ok()) {
          // NaN actions from diverged weights: retry with fresh weights.
          return absl::AbortedError(absl::StrCat("env step: ", step.message()));
        }
        if (metrics_ != nullptr) metrics_->AddEnvSteps(B);
        for (int b = 0; b < B; ++b) {
          if (out.done[b]) {
            chunk.final_obs.insert(chunk.final_obs.end(),
                                   r.final_obs.begin() + int64_t{b} * D,
                                   r.final_obs.begin() + int64_t{b + 1} * D);
          }
        }
      }
    }
    // The next chunk starts from the envs' current observation (row t) in
    // another buffer: this one is sent as it is (or, when abandoned
    // partway, dropped; the envs carry on).
    std::shared_ptr<learner::TrajectoryChunk> sent = std::move(r.chunk);
    r.chunk = r.pool->Acquire();
    ShapeLike(*sent, r.chunk.get());
    std::memcpy(r.chunk->obs.data(),
                sent->obs.data() + static_cast<size_t>(t) * B * D,
                sizeof(float) * B * D);
    if (t < T) return absl::OkStatus();

    {
      absl::MutexLock lock(&mu_);
      while (!stop_ && session_end_ == SessionEnd::kNone &&
             static_cast<int>(unacked_.size()) >= window_) {
        cv_.Wait(&mu_);
      }
      if (stop_ || session_end_ != SessionEnd::kNone) return absl::OkStatus();
      unacked_[next_sequence_] = sent->policy_version;
    }
    if (!call->WriteChunk(std::move(sent), next_sequence_)) {
      // The call is over. The reader ends the session once it has drained
      // what the learner sent before (possibly a Stop that says why).
      return absl::OkStatus();
    }
    ++next_sequence_;
    chunks_sent_.fetch_add(1);
    if (metrics_ != nullptr) metrics_->CountChunkSent();
    env_steps_sent_.fetch_add(int64_t{T} * B);
  }
}

absl::Status Actor::ApplyAssignment(const v1::RunAssignment& a,
                                    const learner::PolicyContract& contract) {
  Rollout& r = *rollout_;
  std::string bytes = a.SerializeAsString();
  if (r.env != nullptr && bytes == r.assignment_bytes) {
    return absl::OkStatus();  // the same run came back: keep env and policy
  }
  const bool same_run = r.env != nullptr && r.assignment.run_id() == a.run_id();
  r.env.reset();
  r.assignment_bytes.clear();
  if (!same_run) {
    r.DropPolicy();
    SetCurrentVersion(-1);
  }
  const std::string context = absl::StrCat("run ", a.run_id());
  if (r.market == nullptr || r.market_id != a.dataset_id()) {
    r.market.reset();
    ASSIGN_OR_RETURN(env::Dataset dataset, EnsureDataset(a.dataset_id()));
    absl::StatusOr<std::shared_ptr<const env::MarketData>> market =
        env::MarketData::FromDataset(dataset);
    if (!market.ok()) return Annotate(market.status(), context);
    r.market = *std::move(market);
    r.market_id = a.dataset_id();
  }
  if (static_cast<int>(r.market->assets.size()) !=
      static_cast<int>(contract.asset_symbols.size())) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, ": the contract has ",
                     contract.asset_symbols.size(), " assets but dataset ",
                     a.dataset_id(), " has ", r.market->assets.size()));
  }
  for (size_t i = 0; i < contract.asset_symbols.size(); ++i) {
    if (r.market->assets[i].symbol != contract.asset_symbols[i]) {
      return absl::FailedPreconditionError(
          absl::StrCat(context, ": asset ", i, " is ",
                       contract.asset_symbols[i], " in the contract but ",
                       r.market->assets[i].symbol, " in the dataset"));
    }
  }

  const uint64_t seed = a.seed() ^ Fnv1a(options_.actor_id) ^
                        (options_.seed * 0x9e3779b97f4a7c15ULL);
  env::VectorEnvOptions vopts;
  vopts.env = contract.env;
  vopts.num_copies = options_.num_envs;
  vopts.mode = env::EpisodeMode::kTrain;
  vopts.episode_steps = a.episode_steps();
  for (const v1::Domain& d : a.train_domains()) {
    vopts.domains.push_back(env::Domain{d.begin(), d.end()});
  }
  vopts.seed = seed;
  absl::StatusOr<std::unique_ptr<env::VectorEnv>> env =
      env::VectorEnv::Create(r.market, vopts);
  if (!env.ok()) return Annotate(env.status(), context);
  if ((*env)->observation_size() != contract.obs_size ||
      (*env)->action_size() != contract.action_size) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, ": the env gives observations of ",
                     (*env)->observation_size(), " and actions of ",
                     (*env)->action_size(), " values but the contract says ",
                     contract.obs_size, " and ", contract.action_size));
  }
  r.env = *std::move(env);

  const int T = a.rollout_steps(), B = options_.num_envs;
  const int D = contract.obs_size, A = contract.action_size;
  if (r.chunk == nullptr) r.chunk = r.pool->Acquire();
  learner::TrajectoryChunk& chunk = *r.chunk;
  chunk.run_id = a.run_id();
  chunk.actor_id = options_.actor_id;
  chunk.steps = T;
  chunk.copies = B;
  chunk.obs_size = D;
  chunk.action_size = A;
  chunk.obs.assign(static_cast<size_t>(T + 1) * B * D, 0.0f);
  chunk.actions.assign(static_cast<size_t>(T) * B * A, 0.0f);
  chunk.log_probs.assign(static_cast<size_t>(T) * B, 0.0f);
  chunk.rewards.assign(static_cast<size_t>(T) * B, 0.0f);
  chunk.dones.assign(static_cast<size_t>(T) * B, 0);
  chunk.final_obs.clear();
  r.noise.assign(static_cast<size_t>(B) * A, 0.0f);
  r.actions.assign(static_cast<size_t>(B) * A, 0.0f);
  r.final_obs.assign(static_cast<size_t>(B) * D, 0.0f);
  r.noise_rng.Seed(seed ^ 0xa5a5a5a5ULL);
  r.env->Reset(chunk.obs.data());
  r.assignment = a;
  r.assignment_bytes = std::move(bytes);
  return absl::OkStatus();
}

absl::StatusOr<env::Dataset> Actor::EnsureDataset(const std::string& id) {
  RLOG(INFO) << "actor " << options_.actor_id << ": dataset " << id
             << " (cache " << options_.cache_dir << ")";
  return wire::LoadOrFetchDataset(
      options_.cache_dir, id,
      [this, &id](const std::string& path) { return FetchDataset(id, path); });
}

absl::Status Actor::FetchDataset(const std::string& id,
                                 const std::string& path) {
  const std::unique_ptr<wire::DatasetFetch> fetch = learner_->FetchDataset(id);
  {
    absl::MutexLock lock(&mu_);
    if (stop_ || session_end_ != SessionEnd::kNone) {
      return absl::UnavailableError("the session ended before the fetch");
    }
    fetch_ = fetch.get();
  }
  absl::Status status = fetch->Receive(path);
  {
    absl::MutexLock lock(&mu_);
    fetch_ = nullptr;
  }
  return status;
}

}  // namespace ristretto::actor
