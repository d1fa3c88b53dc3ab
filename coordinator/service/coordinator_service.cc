#include "coordinator/service/coordinator_service.h"

#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/call_credentials.h"
#include "common/log.h"
#include "common/secret_file.h"
#include "common/text_util.h"
#include "wire/grpc_status.h"

namespace ristretto::coordinator {
namespace {

bool IsDenial(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnauthenticated ||
         s.code() == absl::StatusCode::kPermissionDenied;
}

// Under mutual TLS, binds `id` to the call's certificate `cert`: a
// certificate that names ids may use only its names of this `role` (and
// claims them); one that names none is held to trust on first use, or
// refused outright when `require_named`.
absl::Status BindToCertificate(auth::CertificateBindings& bindings,
                               const auth::PeerCertificate& cert,
                               auth::Role role, const std::string& id,
                               absl::string_view what, bool require_named) {
  if (cert.names.any) {
    return bindings.Claim(
        id, cert.sha256,
        role == auth::Role::kActor ? cert.names.actors : cert.names.learners,
        what);
  }
  if (require_named) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, " '", EscapeForMessage(id, 80),
        "': this client certificate names no ", auth::RoleName(role),
        " id, and the coordinator accepts only certificates that name "
        "their holder (--require-named-certificates)"));
  }
  return bindings.Bind(id, cert.sha256, absl::Now(), what);
}

}  // namespace

grpc::Status CoordinatorService::Finish(const char* method,
                                        const absl::Status& s) const {
  if (IsDenial(s)) {
    if (metrics_ != nullptr) {
      metrics_->CountDenied(method,
                            s.code() == absl::StatusCode::kUnauthenticated);
    }
    RLOG(WARNING) << "denied " << method << ": " << s.ToString();
  } else if (!s.ok() && s.code() != absl::StatusCode::kNotFound &&
             s.code() != absl::StatusCode::kFailedPrecondition) {
    // The expected "no such member/run" and "not in that state" are not
    // logged.
    RLOG(ERROR) << "call failed: " << s.ToString();
  }
  return wire::ToGrpcStatus(s);
}

template <typename Response>
grpc::Status CoordinatorService::Reply(const char* method,
                                       absl::StatusOr<Response> result,
                                       Response* out) const {
  if (!result.ok()) return Finish(method, result.status());
  *out = std::move(*result);
  return grpc::Status::OK;
}

absl::StatusOr<auth::Principal> CoordinatorService::Caller(
    const grpc::ServerContext& context) const {
  absl::StatusOr<std::string> secret = auth::CallBearerSecret(context);
  if (!secret.ok()) return secret.status();
  if (auth::ConstantTimeEquals(*secret, token_)) {
    return auth::Principal{auth::Role::kOperator, "operator"};
  }
  if (!learner_token_.empty() &&
      auth::ConstantTimeEquals(*secret, learner_token_)) {
    // Held by every learner host: it registers (RegisterLearner's token
    // field) and acts for no one, so one compromised learner cannot evict,
    // find or fetch for the others.
    return absl::PermissionDeniedError(
        "the learners' token only registers learners (in "
        "RegisterLearnerRequest.token); calls present the session secret "
        "the registration returned");
  }
  if (!actor_token_.empty() &&
      auth::ConstantTimeEquals(*secret, actor_token_)) {
    return auth::Principal{auth::Role::kActor, "actor"};
  }
  return registry_.AuthenticateSecret(*secret);
}

std::optional<grpc::Status> CoordinatorService::Refusal(
    const char* method, const absl::Status& authorized) const {
  if (authorized.ok()) return std::nullopt;
  return Finish(method, authorized);
}

std::optional<grpc::Status> CoordinatorService::RefuseUnlessMember(
    const grpc::ServerContext& context, const std::string& member_id,
    const char* method, bool operator_ok) {
  if (authenticating()) {
    absl::StatusOr<auth::Principal> caller = Caller(context);
    if (!caller.ok()) return Refusal(method, caller.status());
    if (operator_ok && caller->role == auth::Role::kOperator) {
      return std::nullopt;
    }
    if (std::optional<grpc::Status> refused =
            Refusal(method, auth::RequireLearner(*caller, member_id, method))) {
      return refused;
    }
  }
  return RefuseUnlessMembersCertificate(context, member_id, method);
}

std::optional<grpc::Status> CoordinatorService::RefuseUnlessRole(
    const grpc::ServerContext& context, std::initializer_list<auth::Role> roles,
    const char* method) const {
  if (!authenticating()) return std::nullopt;
  absl::StatusOr<auth::Principal> caller = Caller(context);
  if (!caller.ok()) return Refusal(method, caller.status());
  return Refusal(method, auth::RequireRole(*caller, roles, method));
}

std::optional<grpc::Status> CoordinatorService::RefuseUnlessMembersCertificate(
    const grpc::ServerContext& context, const std::string& member_id,
    const char* method) {
  absl::StatusOr<std::optional<auth::PeerCertificate>> cert =
      auth::CallPeerCertificate(context);
  if (!cert.ok()) return Finish(method, cert.status());
  if (!cert->has_value()) return std::nullopt;
  // Checked before it is remembered (the bindings hold up to 100 000 ids).
  if (absl::Status valid = CheckIdText("member_id", member_id); !valid.ok()) {
    return Finish(method, valid);
  }
  return Refusal(
      method,
      BindToCertificate(learner_certs_, **cert, auth::Role::kLearner, member_id,
                        "learner member id", require_named_certificates_));
}

grpc::Status CoordinatorService::RegisterLearner(
    grpc::ServerContext* context, const v1::RegisterLearnerRequest* request,
    v1::RegisterLearnerResponse* response) {
  constexpr char kMethod[] = "RegisterLearner";
  // The learners' token when there is one (the cluster token then no longer
  // registers: operators do not pose as learners), else the cluster token.
  const std::string& registration_token =
      learner_token_.empty() ? token_ : learner_token_;
  if (authenticating() &&
      !auth::ConstantTimeEquals(request->token(), registration_token)) {
    return Finish(kMethod,
                  absl::UnauthenticatedError("wrong registration token"));
  }
  // Trust on first use: while the member is live its id belongs to the
  // certificate that registered it, so another learner host cannot take
  // its incarnation (and so its leases) — checked before anything changes.
  if (std::optional<grpc::Status> refused = RefuseUnlessMembersCertificate(
          *context, request->member_id(), kMethod)) {
    return *refused;
  }
  absl::StatusOr<v1::RegisterLearnerResponse> registered =
      scheduler_->RegisterLearner(*request);
  if (!registered.ok()) return Finish(kMethod, registered.status());
  if (authenticating()) {
    // A new registration (a restarted learner, or one that lost its secret)
    // replaces the member's earlier secrets: only the newest is valid.
    const auth::Principal learner{auth::Role::kLearner, request->member_id()};
    absl::MutexLock lock(&register_mu_);
    registry_.Revoke(learner);
    absl::StatusOr<std::string> secret = registry_.Issue(learner);
    if (!secret.ok()) return Finish(kMethod, secret.status());
    registered->set_session_token(*std::move(secret));
    // A fresh ticket key per registration: tickets of the member's previous
    // registration stay valid at the learner (it keeps its previous key)
    // until they expire, older ones do not.
    absl::StatusOr<std::string> ticket_key = GenerateToken();
    if (!ticket_key.ok()) return Finish(kMethod, ticket_key.status());
    ticket_keys_[request->member_id()] = *ticket_key;
    registered->set_ticket_key(*std::move(ticket_key));
  }
  *response = *std::move(registered);
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::LeaseRun(grpc::ServerContext* context,
                                          const v1::LeaseRunRequest* request,
                                          v1::LeaseRunResponse* response) {
  constexpr char kMethod[] = "LeaseRun";
  // The member is live: its certificate binding is refreshed.
  if (std::optional<grpc::Status> refused =
          RefuseUnlessMember(*context, request->member_id(), kMethod)) {
    return *refused;
  }
  return Reply(kMethod, scheduler_->LeaseRun(*request), response);
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* context,
                                           const v1::HeartbeatRequest* request,
                                           v1::HeartbeatResponse* response) {
  constexpr char kMethod[] = "Heartbeat";
  if (std::optional<grpc::Status> refused =
          RefuseUnlessMember(*context, request->member_id(), kMethod)) {
    return *refused;
  }
  return Reply(kMethod, scheduler_->Heartbeat(*request), response);
}

grpc::Status CoordinatorService::ReportEvaluation(
    grpc::ServerContext* context, const v1::ReportEvaluationRequest* request,
    v1::ReportEvaluationResponse* response) {
  constexpr char kMethod[] = "ReportEvaluation";
  if (std::optional<grpc::Status> refused =
          RefuseUnlessMember(*context, request->member_id(), kMethod)) {
    return *refused;
  }
  return Reply(kMethod, scheduler_->ReportEvaluation(*request), response);
}

grpc::Status CoordinatorService::CompleteRun(
    grpc::ServerContext* context, const v1::CompleteRunRequest* request,
    v1::CompleteRunResponse* /*response*/) {
  constexpr char kMethod[] = "CompleteRun";
  if (std::optional<grpc::Status> refused =
          RefuseUnlessMember(*context, request->member_id(), kMethod)) {
    return *refused;
  }
  return Finish(kMethod, scheduler_->CompleteRun(*request));
}

grpc::Status CoordinatorService::FailRun(grpc::ServerContext* context,
                                         const v1::FailRunRequest* request,
                                         v1::FailRunResponse* /*response*/) {
  constexpr char kMethod[] = "FailRun";
  if (std::optional<grpc::Status> refused =
          RefuseUnlessMember(*context, request->member_id(), kMethod)) {
    return *refused;
  }
  return Finish(kMethod, scheduler_->FailRun(*request));
}

grpc::Status CoordinatorService::Release(grpc::ServerContext* context,
                                         const v1::ReleaseRequest* request,
                                         v1::ReleaseResponse* /*response*/) {
  constexpr char kMethod[] = "Release";
  if (std::optional<grpc::Status> refused =
          RefuseUnlessMember(*context, request->member_id(), kMethod,
                             /*operator_ok=*/true)) {
    return *refused;
  }
  const absl::Status released = scheduler_->Release(*request);
  if (released.ok()) {
    // Secrets and ticket keys change only under register_mu_, here and in
    // RegisterLearner, so a registration racing this release leaves either
    // both revoked (the learner registers again on its next call) or both
    // valid — never a secret without its ticket key. (The scheduler's
    // membership and the certificate binding are not part of that step: a
    // learner the scheduler forgot gets NOT_FOUND on LeaseRun and
    // registers again.)
    absl::MutexLock lock(&register_mu_);
    // A released member id is free: a learner with another certificate may
    // register it at once.
    learner_certs_.Forget(request->member_id());
    if (authenticating()) {
      // A released member registers again before its next call.
      registry_.Revoke(
          auth::Principal{auth::Role::kLearner, request->member_id()});
      ticket_keys_.erase(request->member_id());
    }
  }
  return Finish(kMethod, released);
}

int CoordinatorService::ForgetSilentLearners() {
  // Under register_mu_, like Release: a registration racing this either
  // comes after (fresh secret and key, heard from now) or is forgotten
  // whole (it registers again on its next call).
  absl::MutexLock lock(&register_mu_);
  const std::vector<std::string> forgotten = scheduler_->ForgetSilentLearners();
  for (const std::string& member_id : forgotten) {
    learner_certs_.Forget(member_id);
    if (authenticating()) {
      registry_.Revoke(auth::Principal{auth::Role::kLearner, member_id});
      ticket_keys_.erase(member_id);
    }
  }
  return static_cast<int>(forgotten.size());
}

grpc::Status CoordinatorService::FindLearner(
    grpc::ServerContext* context, const v1::FindLearnerRequest* request,
    v1::FindLearnerResponse* response) {
  constexpr char kMethod[] = "FindLearner";
  if (std::optional<grpc::Status> refused = RefuseUnlessRole(
          *context, {auth::Role::kOperator, auth::Role::kActor}, kMethod)) {
    return *refused;
  }
  // Under mutual TLS: the caller's client certificate.
  absl::StatusOr<std::optional<auth::PeerCertificate>> cert =
      auth::CallPeerCertificate(*context);
  if (!cert.ok()) return Finish(kMethod, cert.status());
  // The ticket, the binding and the member row name the actor: an id they
  // cannot carry is refused before anything is recorded.
  if (absl::Status valid =
          CheckIdText("actor_id", request->actor_id(), auth::kMaxTicketIdBytes);
      !valid.ok()) {
    return Finish(kMethod, valid);
  }
  const bool bind = cert->has_value() && !request->actor_id().empty();
  if (bind) {
    // The actor id belongs to the certificate that names it or, with no
    // names, to the one that first asked for it while its tickets may be
    // live; another host's certificate cannot take it (nor stream into its
    // runs, nor fetch its datasets).
    if (absl::Status bound = BindToCertificate(
            actor_certs_, **cert, auth::Role::kActor, request->actor_id(),
            "actor id", require_named_certificates_);
        !bound.ok()) {
      return Finish(kMethod, bound);
    }
  }
  // A dead learner's entry goes first: actors are sent to live ones only.
  ForgetSilentLearners();
  absl::StatusOr<v1::FindLearnerResponse> found =
      scheduler_->FindLearner(*request);
  // No actor id (an operator looking): the address only, no ticket.
  if (!found.ok() || !authenticating() || found->learner_address().empty() ||
      request->actor_id().empty()) {
    return Reply(kMethod, std::move(found), response);
  }
  std::string key;
  {
    absl::MutexLock lock(&register_mu_);
    const auto it = ticket_keys_.find(found->learner_member_id());
    if (it != ticket_keys_.end()) key = it->second;
  }
  if (key.empty()) {
    // Registered without a key (cannot happen with a token): no ticket,
    // the learner will refuse the actor and it asks again.
    RLOG(WARNING) << "FindLearner: no ticket key for learner '"
                  << EscapeForMessage(found->learner_member_id()) << "'";
    return Reply(kMethod, std::move(found), response);
  }
  auth::ActorTicket ticket;
  ticket.actor_id = request->actor_id();
  ticket.learner_id = found->learner_member_id();
  const absl::Time now = absl::Now();
  ticket.issued_ms = absl::ToUnixMillis(now);
  ticket.expires_ms = absl::ToUnixMillis(now + auth::kActorTicketTtl);
  // Bound to the certificate (rt2): good only on a connection from it.
  if (cert->has_value()) ticket.cert_sha256 = (*cert)->sha256;
  absl::StatusOr<std::string> minted = auth::MintActorTicket(ticket, key);
  if (!minted.ok()) return Finish(kMethod, minted.status());
  found->set_actor_ticket(*std::move(minted));
  return Reply(kMethod, std::move(found), response);
}

grpc::Status CoordinatorService::FetchDataset(
    grpc::ServerContext* context, const v1::FetchDatasetRequest* request,
    grpc::ServerWriter<v1::DatasetPiece>* writer) {
  constexpr char kMethod[] = "FetchDataset";
  // Operators (the cluster token): a dataset a running study trains on.
  // A learner (its session secret): only the dataset of a run leased to
  // it. Actors fetch from their learner (Learner.FetchDataset, with their
  // ticket), never here: the actors' token is refused.
  absl::StatusOr<std::string> path;
  if (!authenticating()) {
    // No token: under mutual TLS with --require-named-certificates only a
    // learner's certificate (one naming a member id) fetches; otherwise
    // anyone who reaches the port does (development mode).
    if (require_named_certificates_) {
      absl::StatusOr<std::optional<auth::PeerCertificate>> cert =
          auth::CallPeerCertificate(*context);
      if (!cert.ok()) return Finish(kMethod, cert.status());
      if (!cert->has_value() || (*cert)->names.learners.empty()) {
        return Finish(
            kMethod,
            absl::PermissionDeniedError(
                "FetchDataset: this client certificate names no learner, and "
                "the coordinator accepts only certificates that name their "
                "holder (--require-named-certificates)"));
      }
    }
    path = scheduler_->DatasetPath(request->dataset_id());
  } else {
    absl::StatusOr<auth::Principal> caller = Caller(*context);
    if (!caller.ok()) return Finish(kMethod, caller.status());
    switch (caller->role) {
      case auth::Role::kOperator:
        path = scheduler_->DatasetPath(request->dataset_id(),
                                       /*running_studies_only=*/true);
        break;
      case auth::Role::kLearner:
        // From the certificate the member is bound to only.
        if (std::optional<grpc::Status> refused =
                RefuseUnlessMembersCertificate(*context, caller->id, kMethod)) {
          return *refused;
        }
        path = scheduler_->DatasetPathForLearner(request->dataset_id(),
                                                 caller->id);
        break;
      case auth::Role::kActor:
        path = absl::PermissionDeniedError(
            "actors fetch datasets from their learner (Learner.FetchDataset "
            "with their ticket), not from the coordinator");
        break;
    }
  }
  if (!path.ok()) return Finish(kMethod, path.status());
  std::ifstream in(*path, std::ios::binary | std::ios::ate);
  if (!in) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "cannot open the dataset file " + *path);
  }
  const int64_t total = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  constexpr int64_t kPiece = 1 << 20;
  int64_t offset = 0;
  do {
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    const int64_t n = std::min(kPiece, total - offset);
    v1::DatasetPiece piece;
    std::string data(static_cast<size_t>(n), '\0');
    in.read(data.data(), n);
    piece.set_data(std::move(data));
    piece.set_offset(offset);
    piece.set_total_size(total);
    offset += n;
    piece.set_last(offset >= total);
    if (!writer->Write(piece)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
    }
  } while (offset < total);
  return grpc::Status::OK;
}

}  // namespace ristretto::coordinator
