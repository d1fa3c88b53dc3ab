// CoordinatorService: the coordinator's gRPC surface (sync API; every call
// is a short database transaction). Thin: proto → Scheduler → proto, with
// absl status codes mapped to gRPC codes (kUnavailable when PostgreSQL is
// away, so clients retry).
//
// Authentication (docs/security.md), when constructed with a token (the
// cluster token: --token-file / $RISTRETTO_TOKEN, held by operators):
//   RegisterLearner  request.token must equal the learners' token, or the
//                    cluster token when there is none (constant-time); the
//                    reply carries a fresh session secret bound to the
//                    member id (the member's older secrets are revoked).
//                    Under mutual TLS the member id is bound to the
//                    caller's client certificate while the member is live
//                    (registered, or a LeaseRun/Heartbeat, within the lease
//                    lifetime; until Release): another certificate
//                    registering it, or calling with its session secret,
//                    is PERMISSION_DENIED.
//   LeaseRun, Heartbeat, ReportEvaluation, CompleteRun, FailRun
//                    "authorization: Bearer <session secret>" of the learner
//                    named by request.member_id; the scheduler then refuses
//                    runs not leased to that member (PERMISSION_DENIED).
//   Release          the member's session secret, or the cluster token (an
//                    operator evicting a learner). A learner that stops
//                    calling is forgotten a lease lifetime after its last
//                    registration, LeaseRun or Heartbeat, as if released
//                    (ForgetSilentLearners).
//   FindLearner      "Bearer <cluster token>" (actors, operators) or
//                    "Bearer <actor token>" (actors only); the reply
//                    also carries an actor ticket for request.actor_id at
//                    the learner named, MACed with that learner's ticket key
//                    (a random key per registration, handed to the learner
//                    in RegisterLearnerResponse.ticket_key; common/auth.h).
//                    Under mutual TLS the actor id is bound to the caller's
//                    client certificate: one that names actor ids
//                    (urn:ristretto:actor:ID, auth::CertificateNames) may
//                    ask only for those; one that names nothing holds an id
//                    by trust on first use, for as long as its tickets may
//                    be live (another certificate asking for it is
//                    PERMISSION_DENIED); and the ticket carries the
//                    certificate's hash (rt2), so it works only from that
//                    certificate. Learner member ids are bound the same way
//                    (urn:ristretto:learner:ID) at RegisterLearner, LeaseRun
//                    and Heartbeat.
//   FetchDataset     the cluster token: datasets of running studies; a
//                    learner's session secret: only the dataset of a run
//                    leased to that learner. Actors fetch from their
//                    learner: the actor token is PERMISSION_DENIED.
// The actor token (optional, --actor-token-file / $RISTRETTO_ACTOR_TOKEN)
// is what actor machines hold instead of the cluster token: it finds
// learners, and nothing else (it cannot register a learner, lease, report,
// release or fetch: UNAUTHENTICATED / PERMISSION_DENIED), so a compromised
// actor host cannot pose as a learner or an operator.
// The learners' token (optional, --learner-token-file /
// $RISTRETTO_LEARNER_TOKEN) is what learner machines hold instead of the
// cluster token: it registers learners and nothing else (as a Bearer on any
// other call: PERMISSION_DENIED), and the cluster token no longer registers,
// so a compromised learner host can neither evict, find nor fetch for the
// other learners, nor pose as an operator.
// No or an unknown credential, or a wrong registration token: UNAUTHENTICATED;
// a known caller acting as another member, on another member's run or
// outside its role: PERMISSION_DENIED. Both are counted
// (ristretto_coordinator_rpc_denied_total) and logged as warnings.
// Without a token nothing is authenticated (development mode, loopback).
//
// Session secrets live in this process's memory: after a restart learners
// get UNAUTHENTICATED and register again.
// Thread-safe (the Scheduler serialises state changes; the registry locks).
#ifndef RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_SERVICE_H_
#define RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_SERVICE_H_

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "coordinator/service/coordinator_metrics.h"
#include "coordinator/service/scheduler.h"
#include "proto/coordinator.grpc.pb.h"

namespace ristretto::coordinator {

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  // `token`: the cluster token (empty: development mode, no call is
  // authenticated). `metrics` (may be null, not owned) counts denials.
  // `actor_token`: the actors' token (empty: actors use the cluster token;
  // ignored without a cluster token; must differ from it).
  // `learner_token`: the learners' token (empty: learners register with the
  // cluster token; ignored without a cluster token; must differ from both).
  // `require_named_certificates`: under mutual TLS, an actor or learner
  // call whose client certificate names no id of its role (URI SAN
  // urn:ristretto:ROLE:ID) is refused instead of held to trust on first use
  // (`ristretto up` gives every process such a certificate).
  explicit CoordinatorService(Scheduler* scheduler, std::string token = "",
                              CoordinatorMetrics* metrics = nullptr,
                              std::string actor_token = "",
                              std::string learner_token = "",
                              bool require_named_certificates = false)
      : scheduler_(scheduler),
        token_(std::move(token)),
        actor_token_(std::move(actor_token)),
        learner_token_(std::move(learner_token)),
        require_named_certificates_(require_named_certificates),
        metrics_(metrics),
        learner_certs_(kMaxBoundMemberIds, scheduler->lease_ttl()) {}

  // True when calls are authenticated (a token was given).
  bool authenticating() const { return !token_.empty(); }

  // Forgets learners not heard from for a lease lifetime
  // (Scheduler::ForgetSilentLearners) with their session secrets, ticket
  // keys and certificate bindings, so that a learner that died without
  // Release leaves nothing behind; one still alive gets UNAUTHENTICATED
  // (or NOT_FOUND without a token) and registers again. Called before
  // every FindLearner and by the coordinator's scheduling loop. Returns how
  // many were forgotten.
  int ForgetSilentLearners() ABSL_LOCKS_EXCLUDED(register_mu_);

  grpc::Status RegisterLearner(grpc::ServerContext* context,
                               const v1::RegisterLearnerRequest* request,
                               v1::RegisterLearnerResponse* response) override;
  grpc::Status LeaseRun(grpc::ServerContext* context,
                        const v1::LeaseRunRequest* request,
                        v1::LeaseRunResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status ReportEvaluation(
      grpc::ServerContext* context, const v1::ReportEvaluationRequest* request,
      v1::ReportEvaluationResponse* response) override;
  grpc::Status CompleteRun(grpc::ServerContext* context,
                           const v1::CompleteRunRequest* request,
                           v1::CompleteRunResponse* response) override;
  grpc::Status FailRun(grpc::ServerContext* context,
                       const v1::FailRunRequest* request,
                       v1::FailRunResponse* response) override;
  grpc::Status Release(grpc::ServerContext* context,
                       const v1::ReleaseRequest* request,
                       v1::ReleaseResponse* response) override;
  grpc::Status FindLearner(grpc::ServerContext* context,
                           const v1::FindLearnerRequest* request,
                           v1::FindLearnerResponse* response) override;
  grpc::Status FetchDataset(
      grpc::ServerContext* context, const v1::FetchDatasetRequest* request,
      grpc::ServerWriter<v1::DatasetPiece>* writer) override;

 private:
  // The caller named by the call's "authorization" metadata: the operator
  // for the cluster token, an actor for the actor token, else the
  // registry's principal. kUnauthenticated when absent, repeated, malformed
  // or unknown; kPermissionDenied for the learners' token (it only
  // registers).
  absl::StatusOr<auth::Principal> Caller(
      const grpc::ServerContext& context) const;
  // The authorization every call but RegisterLearner starts with: nullopt
  // when the call may go ahead (always in development mode), otherwise the
  // call's reply, the refusal counted and logged (Finish).
  // RefuseUnlessMember: the caller must be learner `member_id` (or, with
  // `operator_ok`, the operator) and, under mutual TLS, call from the
  // certificate the member is bound to (RefuseUnlessMembersCertificate):
  // a session secret copied to another host is refused there on every
  // call, and without a token (mutual TLS alone) a learner's certificate
  // acts only for its own member id.
  std::optional<grpc::Status> RefuseUnlessMember(
      const grpc::ServerContext& context, const std::string& member_id,
      const char* method, bool operator_ok = false);
  // RefuseUnlessRole: the caller must hold one of `roles`.
  std::optional<grpc::Status> RefuseUnlessRole(
      const grpc::ServerContext& context,
      std::initializer_list<auth::Role> roles, const char* method) const;
  // nullopt when `authorized` is OK, else Finish(method, authorized).
  std::optional<grpc::Status> Refusal(const char* method,
                                      const absl::Status& authorized) const;
  // Under mutual TLS: binds (or refreshes) `member_id` to the call's client
  // certificate; nullopt when that may go ahead (no certificate, or the
  // member's own), else the counted refusal.
  std::optional<grpc::Status> RefuseUnlessMembersCertificate(
      const grpc::ServerContext& context, const std::string& member_id,
      const char* method);
  // The reply for `s`: denials counted and logged, other failures logged
  // as before.
  grpc::Status Finish(const char* method, const absl::Status& s) const;
  template <typename Response>
  grpc::Status Reply(const char* method, absl::StatusOr<Response> result,
                     Response* out) const;

  Scheduler* const scheduler_;
  const std::string token_;
  const std::string actor_token_;
  const std::string learner_token_;
  const bool require_named_certificates_;
  CoordinatorMetrics* const metrics_;
  // Learners' session secrets.
  auth::TokenRegistry registry_;
  // Serialises revoke-then-issue of one registration; guards the learners'
  // ticket keys.
  mutable absl::Mutex register_mu_;
  // Member id -> the ticket key of its newest registration.
  absl::flat_hash_map<std::string, std::string> ticket_keys_
      ABSL_GUARDED_BY(register_mu_);
  // Under mutual TLS: actor id -> the client certificate that uses it. A
  // binding lapses a ticket lifetime plus the clock skew after its last
  // FindLearner (no learner accepts its last ticket then); at most
  // kMaxBoundActorIds are kept.
  static constexpr size_t kMaxBoundActorIds = 100000;
  auth::CertificateBindings actor_certs_{
      kMaxBoundActorIds, auth::kActorTicketTtl + auth::kTicketClockSkew};
  // Under mutual TLS: member id -> the client certificate that registered
  // it. Lapses a lease lifetime after the member's last registration,
  // LeaseRun or Heartbeat (its leases have expired by then); forgotten at
  // Release.
  static constexpr size_t kMaxBoundMemberIds = 100000;
  auth::CertificateBindings learner_certs_;
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_SERVICE_COORDINATOR_SERVICE_H_
