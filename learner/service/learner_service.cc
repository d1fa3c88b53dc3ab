#include "learner/service/learner_service.h"

#include <atomic>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/call_credentials.h"
#include "common/log.h"
#include "common/text_util.h"
#include "learner/service/learner_metrics.h"
#include "wire/chunk_wire.h"
#include "wire/grpc_status.h"

namespace ristretto::learner {
namespace {

// An outgoing message, serialised (weights: once per version, shared by
// every stream).
using MessagePtr = std::shared_ptr<const grpc::ByteBuffer>;

MessagePtr Serialised(const v1::LearnerMessage& message) {
  return std::make_shared<const grpc::ByteBuffer>(
      wire::SerializeToByteBuffer(message));
}

MessagePtr AckMessage(int64_t sequence, absl::StatusCode code,
                      absl::string_view message, int credits) {
  v1::LearnerMessage m;
  v1::ChunkAck* ack = m.mutable_ack();
  ack->set_sequence(sequence);
  ack->set_code(static_cast<int>(code));
  ack->set_message(std::string(message));
  ack->set_credits(credits);
  return Serialised(m);
}

MessagePtr StopMessage(const std::string& reason, bool run_finished) {
  v1::LearnerMessage m;
  m.mutable_stop()->set_reason(reason);
  m.mutable_stop()->set_run_finished(run_finished);
  return Serialised(m);
}

// An ActorStream on gRPC's callback API: reads the actor's messages as raw
// buffers (chunk_wire.h: decoded in place, one copy) and writes serialised
// LearnerMessages. Deletes itself when the call is done.
class ActorReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      private ActorTransport {
 public:
  ActorReactor(LearnerService* service, auth::Principal caller)
      : stream_(service, this, std::move(caller)) {
    stream_.Start();
  }

  void OnReadDone(bool ok) override { stream_.OnReadDone(ok); }
  void OnWriteDone(bool ok) override { stream_.OnWriteDone(ok); }
  void OnCancel() override { stream_.OnCancel(); }
  void OnDone() override {
    stream_.OnDone();
    delete this;
  }

 private:
  void RequestRead(grpc::ByteBuffer* into) override { StartRead(into); }
  void Write(const grpc::ByteBuffer* message) override { StartWrite(message); }
  void End(const grpc::Status& status) override { Finish(status); }

  ActorStream stream_;
};

// An Act call refused before its first read: ends with `status`.
class DeniedActReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit DeniedActReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// A FetchDataset call refused before its first write: ends with `status`.
class DeniedDatasetReactor final
    : public grpc::ServerWriteReactor<v1::DatasetPiece> {
 public:
  explicit DeniedDatasetReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// Streams the dataset file in 1 MiB pieces.
class DatasetReactor final : public grpc::ServerWriteReactor<v1::DatasetPiece> {
 public:
  // `path` empty: the dataset is not served here (NOT_FOUND).
  DatasetReactor(const std::string& path,
                 const v1::FetchDatasetRequest& request) {
    if (path.empty()) {
      Finish(grpc::Status(
          grpc::StatusCode::NOT_FOUND,
          absl::StrCat("dataset '", EscapeForMessage(request.dataset_id()),
                       "' is not served here")));
      return;
    }
    in_.open(path, std::ios::binary | std::ios::ate);
    if (!in_) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                          "cannot open the dataset file"));
      return;
    }
    total_ = static_cast<int64_t>(in_.tellg());
    in_.seekg(0);
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (offset_ >= total_ && sent_any_) {
      Finish(grpc::Status::OK);
      return;
    }
    constexpr int64_t kPiece = 1 << 20;
    const int64_t n = std::min(kPiece, total_ - offset_);
    std::string data(static_cast<size_t>(n), '\0');
    in_.read(data.data(), n);
    piece_.set_data(std::move(data));
    piece_.set_offset(offset_);
    piece_.set_total_size(total_);
    offset_ += n;
    piece_.set_last(offset_ >= total_);
    sent_any_ = true;
    StartWrite(&piece_);
  }

  std::ifstream in_;
  int64_t total_ = 0;
  int64_t offset_ = 0;
  bool sent_any_ = false;
  v1::DatasetPiece piece_;
};

}  // namespace

// Shared by a stream and the callbacks that may outlive it (weight
// listeners, ingest resumptions): OnDone clears `stream` under `mu` before
// the stream may be destroyed.
struct ActorStream::Link {
  absl::Mutex mu;
  ActorStream* stream ABSL_GUARDED_BY(mu) = nullptr;
};

ActorStream::ActorStream(LearnerService* service, ActorTransport* transport,
                         auth::Principal caller)
    : service_(service),
      transport_(transport),
      caller_(std::move(caller)),
      link_(std::make_shared<Link>()) {
  absl::MutexLock lock(&link_->mu);
  link_->stream = this;
}

ActorStream::~ActorStream() {
  if (!done_) OnDone();
}

void ActorStream::Start() {
  absl::MutexLock lock(&mu_);
  transport_->RequestRead(&in_);
}

void ActorStream::OnReadDone(bool ok) {
  if (!ok) {  // the actor half-closed or the call ended
    FinishWhenDrained(grpc::Status::OK);
    return;
  }
  const absl::Status parsed = wire::ParseActorMessage(in_, &frame_);
  if (!parsed.ok()) {
    if (frame_.chunk.sequence >= 0) {  // a chunk: reject it, go on
      Reject(frame_.chunk.sequence, parsed.code(), parsed.message(),
             RejectReason::kMalformed);
      frame_.slices.clear();
      ContinueReading();
      return;
    }
    // Nothing to acknowledge it with: end the call with the reason.
    service_->CountRejected(RejectReason::kProtocol);
    FinishWhenDrained(wire::ToGrpcStatus(parsed));
    return;
  }
  if (frame_.kind == wire::ActorFrame::Kind::kHello) {
    HandleHello();
    ContinueReading();
  } else if (frame_.kind == wire::ActorFrame::Kind::kChunk) {
    HandleChunk();  // continues reading when the chunk is queued
  } else {
    Reject(-1, absl::StatusCode::kInvalidArgument, "empty ActorMessage",
           RejectReason::kProtocol);
    ContinueReading();
  }
}

void ActorStream::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  outbox_.pop_front();
  if (!ok) broken_ = true;
  if (!outbox_.empty() && !broken_) {
    transport_->Write(outbox_.front().get());
    return;
  }
  writing_ = false;
  if (finish_requested_ && !finished_) {
    finished_ = true;
    transport_->End(finish_status_);
  }
}

void ActorStream::OnCancel() { FinishWhenDrained(grpc::Status::CANCELLED); }

void ActorStream::OnDone() {
  done_ = true;
  {
    absl::MutexLock lock(&link_->mu);
    link_->stream = nullptr;
  }
  if (run_ != nullptr) {
    run_->Unsubscribe(listener_);
    service_->ReleaseRun(run_.get(), env_copies_);
    run_ = nullptr;
  }
}

void ActorStream::OnWeights(const WeightsPtr& weights) {
  if (weights == nullptr) {
    // Keep reading until the actor half-closes: chunks already in flight
    // are still received (and counted as dropped), so the actors' sent
    // steps equal the learner's trained + dropped steps exactly. Sent
    // once (a stopped run announces it at Stop() and again at the end).
    {
      absl::MutexLock lock(&mu_);
      if (stop_sent_) return;
      stop_sent_ = true;
    }
    const bool finished = run_->budget_reached();
    Send(StopMessage(finished ? "run finished" : "learner shutting down",
                     finished));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (weights->version <= sent_version_) return;
    sent_version_ = weights->version;
  }
  // The aliasing constructor: shares the published buffer, no copy.
  Send(MessagePtr(weights, &weights->message));
}

void ActorStream::OnQueued(int64_t sequence) {
  Send(AckMessage(sequence, absl::StatusCode::kOk, "", Credits()));
  ContinueReading();
}

// The credit for the next ack: sized by the run for this actor's chunks
// (RunHost::ActorCredits), at most options().credits; that value until the
// first chunk has been decoded.
int ActorStream::Credits() const {
  const int64_t steps = chunk_steps_.load(std::memory_order_relaxed);
  const int cap = service_->options().credits;
  if (run_ == nullptr || steps <= 0) return cap;
  return run_->ActorCredits(steps, cap);
}

void ActorStream::ContinueReading() {
  absl::MutexLock lock(&mu_);
  if (!finish_requested_) transport_->RequestRead(&in_);
}

void ActorStream::Send(MessagePtr message) {
  absl::MutexLock lock(&mu_);
  if (finish_requested_ || broken_) return;
  outbox_.push_back(std::move(message));
  if (!writing_) {
    writing_ = true;
    transport_->Write(outbox_.front().get());
  }
}

void ActorStream::FinishWhenDrained(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finish_requested_) return;
  finish_requested_ = true;
  finish_status_ = status;
  if (!writing_ && !finished_) {
    finished_ = true;
    transport_->End(status);
  }
}

// `reason`: why the service refused the chunk; null when the run did
// (RunHost::Ingest counts its own reasons).
void ActorStream::Reject(int64_t sequence, absl::StatusCode code,
                         absl::string_view message,
                         std::optional<RejectReason> reason) {
  service_->CountRejected(reason);
  Send(AckMessage(sequence, code, message, Credits()));
}

void ActorStream::HandleHello() {
  if (run_ != nullptr) {
    Reject(-1, absl::StatusCode::kFailedPrecondition, "duplicate Hello",
           RejectReason::kProtocol);
    return;
  }
  const v1::Hello& hello = frame_.hello;
  if (caller_.role == auth::Role::kActor && hello.actor_id() != caller_.id) {
    // A ticket names one actor: it cannot speak for another (whose run,
    // sequence numbers and dataset rights it would take over).
    FinishWhenDrained(service_->Deny(
        "Act", absl::PermissionDeniedError(absl::StrCat(
                   "the ticket of actor '", EscapeForMessage(caller_.id, 80),
                   "' may not say Hello as '",
                   EscapeForMessage(hello.actor_id(), 80), "'"))));
    return;
  }
  LearnerService::Refusal refusal = LearnerService::Refusal::kNone;
  env_copies_ = hello.env_copies();
  actor_id_ = hello.actor_id();
  run_ = service_->AssignRun(hello.want_run_id(), env_copies_, &refusal,
                             actor_id_);
  if (refusal == LearnerService::Refusal::kCutOff) {
    // Its chunks made an update diverge (RunHost::CutOff): its ticket no
    // longer admits it to that run, and no other run is open to it here.
    FinishWhenDrained(service_->Deny(
        "Act", absl::PermissionDeniedError(absl::StrCat(
                   "actor '", EscapeForMessage(actor_id_, 80),
                   "' is cut off from every run this learner hosts that "
                   "accepts actors: updates with its chunks diverged"))));
    return;
  }
  if (refusal == LearnerService::Refusal::kMaxActors) {
    Send(StopMessage(
        absl::StrCat("every run has its maximum of ",
                     service_->options().max_actors_per_run, " actors"),
        false));
    FinishWhenDrained(grpc::Status::OK);
    return;
  }
  if (run_ == nullptr) {
    // A run stopping short of its budget means the learner is shutting
    // down (to restart from its checkpoint): not "finished", or an actor
    // with --exit-when-idle quits before the learner is back, as
    // OnWeights tells the actors already connected.
    // Likewise while a run still trains the chunks it stopped its actors
    // on (RunHost::may_reopen): it may need more data yet.
    bool shutting_down = false, may_reopen = false;
    for (const std::shared_ptr<RunHost>& run : service_->runs()) {
      if (!run->accepting() && !run->budget_reached()) shutting_down = true;
      if (run->may_reopen()) may_reopen = true;
    }
    if (shutting_down || may_reopen) {
      Send(StopMessage(shutting_down ? "learner shutting down"
                                     : "a run is training its last chunks",
                       false));
      FinishWhenDrained(grpc::Status::OK);
      return;
    }
    Send(StopMessage("no run is accepting actors", true));
    FinishWhenDrained(grpc::Status::OK);
    return;
  }
  if (hello.want_run_id() == run_->run_id()) {
    // An actor can hold a version this learner never reached (it was
    // restarted from an older checkpoint): then it gets our newest.
    const int64_t ours = run_->counters().policy_version;
    absl::MutexLock lock(&mu_);
    sent_version_ = hello.have_version() <= ours ? hello.have_version() : -1;
  }
  if (caller_.role == auth::Role::kActor) {
    service_->NoteAssignment(caller_.id, run_->run_id());
  }
  const RunSpec& spec = run_->spec();
  v1::LearnerMessage assignment;
  v1::RunAssignment* a = assignment.mutable_assignment();
  a->set_run_id(spec.run_id);
  a->set_dataset_id(spec.trainer.dataset_id);
  a->set_contract_json(run_->contract().ToJson());
  const std::vector<env::Domain>& domains = spec.trainer.train_domains;
  for (const env::Domain& d : domains) {
    v1::Domain* out = a->add_train_domains();
    out->set_begin(d.begin);
    out->set_end(d.end);
  }
  a->set_episode_steps(spec.trainer.episode_steps);
  a->set_rollout_steps(spec.trainer.rollout_steps);
  a->set_seed(spec.trainer.seed ^ std::hash<std::string>()(hello.actor_id()));
  Send(Serialised(assignment));
  std::shared_ptr<Link> link = link_;
  listener_ = run_->Subscribe(
      [link](const WeightsPtr& weights) {
        absl::MutexLock lock(&link->mu);
        if (link->stream != nullptr) link->stream->OnWeights(weights);
      },
      actor_id_,
      [link](const absl::Status& why) {
        absl::MutexLock lock(&link->mu);
        if (link->stream != nullptr) {
          link->stream->FinishWhenDrained(wire::ToGrpcStatus(why));
        }
      });
  // Cut off between AssignRun and Subscribe: its watch came too late.
  if (const absl::Status cut = run_->CutOffStatus(actor_id_); !cut.ok()) {
    FinishWhenDrained(wire::ToGrpcStatus(cut));
    return;
  }
  OnWeights(run_->latest_weights());
  // A run that finished or was stopped (pruned, shut down) before this
  // stream subscribed never calls the listener again: stop the actor now
  // instead of letting it stream chunks that can only be refused.
  if (!run_->accepting()) OnWeights(nullptr);
}

void ActorStream::HandleChunk() {
  const wire::ChunkView& view = frame_.chunk;
  const int64_t sequence = view.sequence;
  if (run_ == nullptr) {
    Reject(sequence, absl::StatusCode::kFailedPrecondition,
           "send Hello before chunks", RejectReason::kProtocol);
    ContinueReading();
    return;
  }
  // A sequence going backwards (or repeated) is a replay or a confused
  // client: its acks could not be told apart.
  const absl::Status order = wire::CheckChunkSequence(last_sequence_, sequence);
  if (!order.ok()) {
    frame_.slices.clear();
    in_.Clear();
    Reject(sequence, order.code(), order.message(), RejectReason::kProtocol);
    ContinueReading();
    return;
  }
  last_sequence_ = sequence;
  if (view.run_id != run_->run_id()) {
    Reject(
        sequence, absl::StatusCode::kNotFound,
        absl::StrCat("unknown run '", EscapeForMessage(view.run_id),
                     "' (this stream is assigned to '", run_->run_id(), "')"),
        RejectReason::kUnknownRun);
    ContinueReading();
    return;
  }
  // A chunk speaks for the actor of this stream's Hello: another id would
  // put its data (and a diverged update's blame) on another actor.
  if (!view.actor_id.empty() && view.actor_id != actor_id_) {
    Reject(sequence, absl::StatusCode::kInvalidArgument,
           absl::StrCat("chunk.actor_id '", EscapeForMessage(view.actor_id, 80),
                        "' is not this stream's actor '",
                        EscapeForMessage(actor_id_, 80), "' (its Hello)"),
           RejectReason::kProtocol);
    ContinueReading();
    return;
  }
  TrajectoryChunk chunk;
  // The service's size limits with the run's own value bounds.
  wire::ChunkLimits limits = service_->options().limits;
  limits.values = run_->chunk_bounds();
  const absl::Status decoded = wire::DecodeChunk(
      view, run_->obs_size(), run_->action_size(), limits, &chunk);
  // The received buffers are no longer needed: drop both references to
  // them (frame and in_), or a parked chunk would pin them until the
  // next read.
  frame_.slices.clear();
  in_.Clear();
  if (decoded.ok()) {
    chunk.actor_id = actor_id_;
    chunk_steps_.store(chunk.num_samples(), std::memory_order_relaxed);
  }
  if (!decoded.ok()) {
    // The sender learns the field, index and value; the bound it missed
    // is for the operator (the first few refusals of a stream).
    if (const auto bound = decoded.GetPayload(wire::kBoundPayload);
        bound.has_value() && bound_refusals_logged_ < kBoundRefusalsLogged) {
      ++bound_refusals_logged_;
      RLOG(WARNING) << "actor '" << EscapeForMessage(actor_id_, 80)
                    << "': " << decoded.message() << " " << std::string(*bound)
                    << " (chunk refused)";
    }
    Reject(sequence, decoded.code(), decoded.message(),
           RejectReason::kMalformed);
    ContinueReading();
    return;
  }
  std::shared_ptr<Link> link = link_;
  const absl::Status status = run_->Ingest(std::move(chunk), [link, sequence] {
    absl::MutexLock lock(&link->mu);
    if (link->stream != nullptr) link->stream->OnQueued(sequence);
  });
  if (status.ok()) {
    Send(AckMessage(sequence, absl::StatusCode::kOk, "", Credits()));
    ContinueReading();
  } else if (absl::IsPermissionDenied(status)) {
    // The run has cut this actor off: answered, and the stream ended.
    Reject(sequence, status.code(), status.message(), std::nullopt);
    FinishWhenDrained(wire::ToGrpcStatus(status));
  } else if (status.code() != absl::StatusCode::kUnavailable) {
    Reject(sequence, status.code(), status.message(), std::nullopt);
    ContinueReading();
  }
  // kUnavailable: parked; OnQueued acknowledges and resumes reading.
}

grpc::ServerWriteReactor<v1::DatasetPiece>* ServeDatasetFile(
    const std::string& path, const v1::FetchDatasetRequest& request) {
  return new DatasetReactor(path, request);
}

LearnerService::LearnerService(std::vector<std::shared_ptr<RunHost>> runs,
                               LearnerServiceOptions options)
    : options_(std::move(options)), runs_(std::move(runs)) {
  if (!options_.dataset_id.empty()) {
    datasets_[options_.dataset_id] = options_.dataset_path;
  }
  absl::MutexLock lock(&mu_);
  ExportRunsHosted();
}

void LearnerService::CountRejected(std::optional<RejectReason> reason) {
  chunks_rejected_.fetch_add(1);
  if (reason.has_value() && options_.metrics != nullptr) {
    options_.metrics->CountRejected(*reason);
  }
}

void LearnerService::ExportRunsHosted() {
  if (options_.metrics != nullptr) {
    options_.metrics->SetRunsHosted(static_cast<int>(runs_.size()));
  }
}

void LearnerService::SetTicketKey(const std::string& member_id,
                                  const std::string& key) {
  ticket_keys_.Rotate(member_id, key);
}

bool LearnerService::authenticating() const {
  return !options_.token.empty() || ticket_keys_.has_key();
}

absl::StatusOr<auth::Principal> LearnerService::Authenticate(
    const grpc::ServerContextBase& context) const {
  const auth::Principal kOperator{auth::Role::kOperator, "operator"};
  if (!authenticating()) return kOperator;
  absl::StatusOr<std::string> secret = auth::CallBearerSecret(context);
  if (!secret.ok()) return secret.status();
  if (!options_.token.empty() &&
      auth::ConstantTimeEquals(*secret, options_.token)) {
    return kOperator;
  }
  if (!ticket_keys_.has_key()) {
    return absl::UnauthenticatedError("unknown credentials");
  }
  absl::StatusOr<auth::ActorTicket> ticket =
      ticket_keys_.Verify(*secret, absl::Now());
  if (!ticket.ok()) return ticket.status();
  // A ticket bound to the actor's client certificate works only from it
  // (copied or sniffed, it is useless elsewhere).
  std::optional<std::string> peer_cert;
  if (!ticket->cert_sha256.empty()) {
    absl::StatusOr<std::optional<auth::PeerCertificate>> cert =
        auth::CallPeerCertificate(context);
    if (!cert.ok()) return cert.status();
    if (cert->has_value()) peer_cert = std::move((*cert)->sha256);
  }
  if (absl::Status bound = auth::CheckTicketCertificate(*ticket, peer_cert);
      !bound.ok()) {
    return bound;
  }
  return auth::Principal{auth::Role::kActor, std::move(ticket->actor_id)};
}

grpc::Status LearnerService::Deny(const char* method,
                                  const absl::Status& status) {
  const bool unauthenticated =
      status.code() == absl::StatusCode::kUnauthenticated;
  if (options_.metrics != nullptr) {
    options_.metrics->CountDenied(method, unauthenticated);
  }
  RLOG(WARNING) << "denied " << method << ": " << status.ToString();
  return wire::ToGrpcStatus(status);
}

void LearnerService::NoteAssignment(const std::string& actor_id,
                                    const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  actor_runs_[actor_id].insert(run_id);
}

absl::Status LearnerService::MayActAsActor(const auth::Principal& caller,
                                           absl::string_view method) const {
  // Development mode (no token, no key) also answers the operator: no
  // credential is checked there.
  if (caller.role != auth::Role::kOperator || options_.token_admits_actors ||
      options_.token.empty()) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      method,
      ": this learner is coordinated, its token (the one learners register "
      "with) is no actor credential; actors present the ticket the "
      "coordinator's FindLearner gave them"));
}

absl::Status LearnerService::MayFetch(const auth::Principal& caller,
                                      const std::string& dataset_id) const {
  if (caller.role == auth::Role::kOperator) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  const auto assigned = actor_runs_.find(caller.id);
  if (assigned != actor_runs_.end()) {
    for (const std::shared_ptr<RunHost>& run : runs_) {
      if (assigned->second.count(run->run_id()) > 0 &&
          run->spec().trainer.dataset_id == dataset_id) {
        return absl::OkStatus();
      }
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("actor '", EscapeForMessage(caller.id, 80),
                   "' was assigned no run of this learner on dataset '",
                   EscapeForMessage(dataset_id, 80), "'"));
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
LearnerService::Act(grpc::CallbackServerContext* context) {
  absl::StatusOr<auth::Principal> caller = Authenticate(*context);
  absl::Status allowed = caller.status();
  if (allowed.ok()) allowed = MayActAsActor(*caller, "Act");
  if (!allowed.ok()) {
    return new DeniedActReactor(Deny("Act", allowed));
  }
  return new ActorReactor(this, *std::move(caller));
}

grpc::ServerWriteReactor<v1::DatasetPiece>* LearnerService::FetchDataset(
    grpc::CallbackServerContext* context,
    const v1::FetchDatasetRequest* request) {
  absl::StatusOr<auth::Principal> caller = Authenticate(*context);
  absl::Status allowed = caller.status();
  if (allowed.ok()) allowed = MayActAsActor(*caller, "FetchDataset");
  if (allowed.ok()) allowed = MayFetch(*caller, request->dataset_id());
  if (!allowed.ok()) {
    return new DeniedDatasetReactor(Deny("FetchDataset", allowed));
  }
  std::string path;
  {
    absl::MutexLock lock(&mu_);
    auto it = datasets_.find(request->dataset_id());
    if (it != datasets_.end()) path = it->second;
  }
  return ServeDatasetFile(path, *request);
}

grpc::ServerUnaryReactor* LearnerService::GetStatus(
    grpc::CallbackServerContext* context, const v1::StatusRequest* /*request*/,
    v1::LearnerStatus* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<auth::Principal> caller = Authenticate(*context);
  absl::Status allowed = caller.status();
  if (allowed.ok()) {
    allowed = auth::RequireRole(*caller, {auth::Role::kOperator}, "GetStatus");
  }
  if (!allowed.ok()) {
    reactor->Finish(Deny("GetStatus", allowed));
    return reactor;
  }
  for (const std::shared_ptr<RunHost>& run : runs()) {
    const RunCounters c = run->counters();
    v1::RunStatus* s = response->add_runs();
    s->set_run_id(run->run_id());
    s->set_policy_version(c.policy_version);
    s->set_env_steps_trained(c.env_steps_trained);
    s->set_env_steps_dropped(c.env_steps_dropped);
    s->set_env_steps_received(c.env_steps_received);
    s->set_budget_env_steps(run->spec().trainer.budget_env_steps);
    s->set_actors(ActorsOn(run->run_id()));
    s->set_finished(c.finished);
  }
  response->set_chunks_rejected(chunks_rejected());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void LearnerService::AddRun(std::shared_ptr<RunHost> run) {
  absl::MutexLock lock(&mu_);
  runs_.push_back(std::move(run));
  ExportRunsHosted();
}

void LearnerService::RemoveRun(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  for (auto it = runs_.begin(); it != runs_.end(); ++it) {
    if ((*it)->run_id() == run_id) {
      runs_.erase(it);
      ExportRunsHosted();
      // Its actors lose their right to its dataset.
      for (auto a = actor_runs_.begin(); a != actor_runs_.end();) {
        a->second.erase(run_id);
        a = a->second.empty() ? actor_runs_.erase(a) : std::next(a);
      }
      return;
    }
  }
}

void LearnerService::AddDataset(const std::string& id,
                                const std::string& path) {
  absl::MutexLock lock(&mu_);
  datasets_[id] = path;
}

std::vector<std::shared_ptr<RunHost>> LearnerService::runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

std::shared_ptr<RunHost> LearnerService::AssignRun(
    const std::string& want_run_id, int64_t env_copies, Refusal* refusal,
    const std::string& actor_id) {
  absl::MutexLock lock(&mu_);
  // The run with the fewest actors among those that absorb one more within
  // their max_policy_lag (a run without actors absorbs any), `want_run_id`
  // first; when none does, the run with the fewest actors all the same: an
  // actor waiting for room costs more than the few chunks of its that go
  // stale (ristretto up, small study, 2 actors, quiet 2-core box: 163 s
  // with actors waiting, 125-137 s without, 1.25 % vs 2.4 % of env steps
  // dropped).
  std::shared_ptr<RunHost> best, fallback;
  bool any_full = false, any_cut_off = false;
  auto fewer =
      [&](const std::shared_ptr<RunHost>& a, const std::shared_ptr<RunHost>& b)
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return b == nullptr || actors_[a->run_id()] < actors_[b->run_id()];
          };
  for (const std::shared_ptr<RunHost>& run : runs_) {
    if (!run->accepting()) continue;
    if (!actor_id.empty() && run->IsCutOff(actor_id)) {
      any_cut_off = true;
      continue;
    }
    const int actors = actors_[run->run_id()];
    if (actors >= options_.max_actors_per_run) {
      any_full = true;
      continue;
    }
    if (actors > 0 && env_copies > 0 &&
        !run->AbsorbsActor(actor_steps_[run->run_id()], env_copies)) {
      if (fewer(run, fallback)) fallback = run;
      continue;
    }
    if (run->run_id() == want_run_id) {
      best = run;
      break;
    }
    if (fewer(run, best)) best = run;
  }
  if (best == nullptr) best = fallback;
  if (best != nullptr) {
    ++actors_[best->run_id()];
    if (env_copies > 0) {
      actor_steps_[best->run_id()] += best->ChunkSteps(env_copies);
    }
  }
  if (refusal != nullptr) {
    if (best != nullptr) {
      *refusal = Refusal::kNone;
    } else if (any_full) {
      *refusal = Refusal::kMaxActors;
    } else if (any_cut_off) {
      *refusal = Refusal::kCutOff;
    } else {
      *refusal = Refusal::kNoRun;
    }
  }
  return best;
}

void LearnerService::ReleaseRun(RunHost* run, int64_t env_copies) {
  absl::MutexLock lock(&mu_);
  --actors_[run->run_id()];
  if (env_copies > 0) {
    actor_steps_[run->run_id()] -= run->ChunkSteps(env_copies);
  }
}

std::shared_ptr<RunHost> LearnerService::FindRun(
    const std::string& run_id) const {
  absl::MutexLock lock(&mu_);
  for (const std::shared_ptr<RunHost>& run : runs_) {
    if (run->run_id() == run_id) return run;
  }
  return nullptr;
}

int LearnerService::ActorsOn(const std::string& run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = actors_.find(run_id);
  return it == actors_.end() ? 0 : it->second;
}

}  // namespace ristretto::learner
