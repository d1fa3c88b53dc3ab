// Who is calling: the credentials every ristretto RPC carries and how a
// server checks them, independent of gRPC (the gRPC glue reads the
// "authorization" metadata and hands its value to Authenticate).
//
// Roles:
//   kOperator  the study owner's tools (`ristretto study ...`, `up`) and the
//              registration of learners: the operator token (--token-file,
//              $RISTRETTO_TOKEN).
//   kLearner   one registered learner: a secret the coordinator issues at
//              registration, bound to that learner's member id, so a learner
//              can act only as itself (and, checked by the service, only on
//              runs leased to it).
//   kActor     one actor: a secret bound to the actor's id and the runs it
//              was assigned.
//
// A call presents "Bearer <secret>". Secrets are looked up by their SHA-256
// digest: the lookup's timing can depend only on the digest, which a caller
// cannot steer towards a stored one byte by byte, so it does not leak how
// much of a guessed secret was right. Plain secrets (the registration
// token) are compared with ConstantTimeEquals.
//
// Errors: a missing, malformed or unknown credential is kUnauthenticated; a
// known principal calling outside its role is kPermissionDenied. Messages
// never echo the presented secret.
//
// Actor tickets (coordinated mode): the coordinator gives every registered
// learner a random ticket key (RegisterLearnerResponse.ticket_key) and, when
// an actor asks FindLearner, answers the learner's address plus a ticket:
//   rt1.<hex actor id>.<hex learner member id>.<issued ms>.<expires ms>.<mac>
// or, when the actor called over mutual TLS, one bound to its client
// certificate (RFC 8705's certificate-bound tokens):
//   rt2.<hex actor id>.<hex learner member id>.<issued ms>.<expires ms>.
//       <hex SHA-256 of the client certificate (DER)>.<mac>
// where mac is the hex HMAC-SHA256, keyed with that learner's ticket key, of
// everything before the last '.'. The learner verifies it locally (no call to
// the coordinator) against its current and previous key (a re-registration
// rotates the key), in constant time, and the ticket names the only actor id
// the caller may use; an rt2 ticket is good only on a connection that
// presented that certificate (CheckTicketCertificate). Hex fields make the
// text printable and unambiguous.
//
// Thread-safety: TokenRegistry, TicketKeys and CertificateBindings are
// thread-safe; the free functions are pure.
#ifndef RISTRETTO_COMMON_AUTH_H_
#define RISTRETTO_COMMON_AUTH_H_

#include <cstdint>
#include <initializer_list>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ristretto::auth {

// The metadata key (gRPC lower-cases keys) and the scheme of its value.
inline constexpr char kMetadataKey[] = "authorization";
inline constexpr char kBearerPrefix[] = "Bearer ";

enum class Role { kOperator, kLearner, kActor };

// "operator", "learner" or "actor".
absl::string_view RoleName(Role role);

struct Principal {
  Role role = Role::kOperator;
  std::string id;  // member id (learner), actor id, or "operator"

  friend bool operator==(const Principal& a, const Principal& b) {
    return a.role == b.role && a.id == b.id;
  }
};

// True when a and b are equal; the time taken depends only on their lengths.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// The secret of a "Bearer <secret>" metadata value. kUnauthenticated when
// the value is empty, has another scheme, or the secret is empty or holds
// bytes outside printable ASCII.
absl::StatusOr<std::string> ParseBearer(absl::string_view metadata_value);

// "Bearer <secret>": what a client sends.
std::string BearerValue(absl::string_view secret);

// kOk when `principal` has one of `allowed`; otherwise kPermissionDenied
// naming the principal's role and id (escaped, capped) and `what`.
absl::Status RequireRole(const Principal& principal,
                         std::initializer_list<Role> allowed,
                         absl::string_view what);

// kOk when `principal` is the learner `member_id`, else kPermissionDenied.
absl::Status RequireLearner(const Principal& principal,
                            absl::string_view member_id,
                            absl::string_view what);

class TokenRegistry {
 public:
  // Shortest secret accepted by Add: 128 bits as hex.
  static constexpr size_t kMinSecretBytes = 32;

  TokenRegistry() = default;
  TokenRegistry(const TokenRegistry&) = delete;
  TokenRegistry& operator=(const TokenRegistry&) = delete;

  // Binds `secret` to `principal` (a secret already bound is re-bound).
  // kInvalidArgument when the secret is shorter than kMinSecretBytes or
  // holds non-printable bytes.
  absl::Status Add(absl::string_view secret, Principal principal)
      ABSL_LOCKS_EXCLUDED(mu_);

  // A fresh random secret (32 bytes from the OS, hex) bound to `principal`;
  // the principal's previous issued secrets stay valid until Revoke.
  absl::StatusOr<std::string> Issue(Principal principal)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets every secret bound to `principal`; returns how many.
  int Revoke(const Principal& principal) ABSL_LOCKS_EXCLUDED(mu_);

  // The principal of a "Bearer <secret>" metadata value; kUnauthenticated
  // when absent, malformed or unknown.
  absl::StatusOr<Principal> Authenticate(absl::string_view metadata_value) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The principal of `secret`, already taken out of its metadata value
  // (ParseBearer); kUnauthenticated when unknown.
  absl::StatusOr<Principal> AuthenticateSecret(absl::string_view secret) const
      ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  // hex SHA-256 of the secret -> principal.
  absl::flat_hash_map<std::string, Principal> by_digest_ ABSL_GUARDED_BY(mu_);
};

// HMAC-SHA256 (RFC 2104) of `message` under `key`: 32 raw bytes.
std::string HmacSha256(absl::string_view key, absl::string_view message);

// What a ticket says: which actor may call which learner, and when.
struct ActorTicket {
  std::string actor_id;
  std::string learner_id;  // the learner's member id
  int64_t issued_ms = 0;   // Unix time
  int64_t expires_ms = 0;  // Unix time; refused after it (plus the skew)
  // Lower-case hex SHA-256 of the DER client certificate the ticket is bound
  // to (an rt2 ticket); empty: bound to none (rt1, minted without mutual TLS).
  std::string cert_sha256;
};

// How long a ticket minted by the coordinator is valid. An actor asks
// FindLearner (and gets a fresh ticket) before every connection; the
// learner checks the ticket when a call starts, so an Act stream outlives
// its ticket.
inline constexpr absl::Duration kActorTicketTtl = absl::Minutes(15);
// Clock difference between coordinator and learner hosts tolerated on both
// ends of a ticket's validity.
inline constexpr absl::Duration kTicketClockSkew = absl::Minutes(1);
// Longest actor or learner id a ticket carries (bytes before hex).
inline constexpr size_t kMaxTicketIdBytes = 256;

// The ticket text for `ticket`, MACed with `key`: rt2 when it carries a
// certificate hash, else rt1. kInvalidArgument for an empty key, an empty or
// over-long id, expires_ms <= issued_ms, or a cert_sha256 that is not 64
// lower-case hex digits.
absl::StatusOr<std::string> MintActorTicket(const ActorTicket& ticket,
                                            absl::string_view key);

// The ticket `text` says, when its MAC matches one of `keys` (each is
// compared, in constant time, whether or not an earlier one matched), it
// names `learner_id` and `now` lies in [issued - skew, expires + skew].
// kUnauthenticated otherwise (malformed, wrong MAC, another learner,
// expired, not yet valid); messages never echo the ticket or its MAC.
absl::StatusOr<ActorTicket> VerifyActorTicket(
    absl::string_view text, std::initializer_list<absl::string_view> keys,
    absl::string_view learner_id, absl::Time now);

// kOk when `ticket` may be used on a connection whose verified client
// certificate has SHA-256 `peer_cert_sha256` (hex; nullopt: the connection
// presented none, e.g. the server does not run mutual TLS): always for an
// unbound (rt1) ticket; for a bound one only with that very certificate.
// kPermissionDenied otherwise (the ticket is genuine, used from the wrong
// place).
absl::Status CheckTicketCertificate(
    const ActorTicket& ticket,
    const std::optional<std::string>& peer_cert_sha256);

// Lower-case hex SHA-256 of the certificate in `pem` (the first
// "-----BEGIN CERTIFICATE-----" block), hashed as DER (the base64 between
// the armour lines, decoded): the same bytes however the PEM text is
// wrapped, and what `openssl x509 -outform DER | sha256sum` prints.
// kInvalidArgument when there is no such block or it is not base64 of a DER
// SEQUENCE.
absl::StatusOr<std::string> CertificateSha256(absl::string_view pem);

// Ids a client certificate names for its holder: URI subject alternative
// names
//   urn:ristretto:actor:<actor id>      urn:ristretto:learner:<member id>
// with the id percent-encoded (bytes outside A-Z a-z 0-9 - . _ ~ as %XX).
// A certificate that names ids may use only those (in that role); one that
// names none is bound by trust on first use (CertificateBindings::Bind).
// The CA that issues a named certificate is what says which host is which
// actor or learner, as SPIFFE ids do.
struct CertificateNames {
  std::vector<std::string> actors;
  std::vector<std::string> learners;
  // True when any URI had the urn:ristretto: prefix, including one that
  // names nothing usable (an unknown kind, bad percent-encoding, an empty
  // id): such a certificate is held to its names, which then admit nothing.
  bool any = false;
};
inline constexpr char kActorNamePrefix[] = "urn:ristretto:actor:";
inline constexpr char kLearnerNamePrefix[] = "urn:ristretto:learner:";

// The names among `uris` (the certificate's URI SANs; others are ignored).
CertificateNames ParseCertificateNames(const std::vector<std::string>& uris);

// "'a', 'b'" for messages: each id escaped and capped at 80 bytes, the
// list cut with ", ..." once past 160 bytes; "" for none.
std::string QuotedIds(const std::vector<std::string>& ids);

// "urn:ristretto:actor:<id>" (kActor) or "urn:ristretto:learner:<id>"
// (kLearner), the id percent-encoded; kOperator is not a certificate name
// (returns "").
std::string CertificateNameUri(Role role, absl::string_view id);

// Trust on first use of ids by client certificate: an id (an actor id, a
// learner's member id) belongs to the first certificate that used it, for
// as long as that certificate keeps using it (a binding not used for
// `lifetime` lapses and the id is free again). At most `capacity` such ids
// are remembered; beyond that the least recently used binding is forgotten
// (the id is then free: a caller able to use `capacity` fresh ids can
// release others' — the bound is what keeps memory finite).
// An id a certificate claimed by naming it (Claim) is different: it never
// lapses, is never evicted or forgotten, and a certificate that names
// nothing is refused it for the life of this object (only a certificate
// naming it can take it over). Their number is bounded by what the CA
// issued, not by what callers ask.
class CertificateBindings {
 public:
  CertificateBindings(size_t capacity, absl::Duration lifetime)
      : capacity_(capacity), lifetime_(lifetime) {}
  CertificateBindings(const CertificateBindings&) = delete;
  CertificateBindings& operator=(const CertificateBindings&) = delete;

  // Binds `id` to `cert_sha256` (or refreshes its binding) at `now`.
  // kPermissionDenied, naming `what` and the id (escaped, capped), when `id`
  // is bound to another certificate and was used within `lifetime`, or was
  // claimed by another certificate that names it.
  absl::Status Bind(absl::string_view id, absl::string_view cert_sha256,
                    absl::Time now, absl::string_view what)
      ABSL_LOCKS_EXCLUDED(mu_);
  // For a certificate that names ids (CertificateNames): kPermissionDenied
  // naming `what`, the id and (capped) the names when `id` is not among
  // `named`; otherwise claims `id` for `cert_sha256` whatever held it (a
  // name the CA issued outranks a first use by a certificate that names
  // nothing, which from then on is refused by Bind, and an earlier claim).
  absl::Status Claim(absl::string_view id, absl::string_view cert_sha256,
                     const std::vector<std::string>& named,
                     absl::string_view what) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets `id`'s first-use binding (a learner released); a claim by a
  // certificate that names it stays.
  void Forget(absl::string_view id) ABSL_LOCKS_EXCLUDED(mu_);
  // Ids remembered (claimed, and bound by first use: live or lapsed, not
  // yet evicted).
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Binds `id` to `cert_sha256` at `now` (new or replaced), evicting
  // lapsed and, over capacity, least recently used bindings.
  void Put(absl::string_view id, absl::string_view cert_sha256, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Binding {
    std::string cert_sha256;
    absl::Time last_used;
    std::list<std::string>::iterator lru;  // its place in lru_
  };
  const size_t capacity_;
  const absl::Duration lifetime_;
  mutable absl::Mutex mu_;
  // Ids bound by first use, most recently used first.
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Binding> by_id_ ABSL_GUARDED_BY(mu_);
  // Ids claimed by a certificate naming them -> that certificate's hash.
  absl::flat_hash_map<std::string, std::string> claimed_ ABSL_GUARDED_BY(mu_);
};

// A learner's ticket keys: the current one and the one before it (tickets
// minted before a re-registration stay valid until they expire; older keys
// are forgotten).
class TicketKeys {
 public:
  TicketKeys() = default;
  TicketKeys(const TicketKeys&) = delete;
  TicketKeys& operator=(const TicketKeys&) = delete;

  // Makes `key` current for tickets naming `learner_id`; the current key
  // becomes the previous one (unless it is the same key). An empty key is
  // ignored.
  void Rotate(absl::string_view learner_id, absl::string_view key)
      ABSL_LOCKS_EXCLUDED(mu_);
  // True once a key was given.
  bool has_key() const ABSL_LOCKS_EXCLUDED(mu_);
  // VerifyActorTicket against the current and previous key;
  // kUnauthenticated when no key was given yet.
  absl::StatusOr<ActorTicket> Verify(absl::string_view text,
                                     absl::Time now) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::string learner_id_ ABSL_GUARDED_BY(mu_);
  std::string current_ ABSL_GUARDED_BY(mu_);
  std::string previous_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::auth

#endif  // RISTRETTO_COMMON_AUTH_H_
