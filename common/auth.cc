#include "common/auth.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/secret_file.h"
#include "common/sha256.h"
#include "common/text_util.h"

namespace ristretto::auth {
namespace {

bool PrintableAscii(absl::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte > 0x7e) return false;
  }
  return true;
}

std::string DigestHex(absl::string_view secret) {
  return Sha256::ToHex(Sha256::Hash(secret));
}

std::string Describe(const Principal& principal) {
  return absl::StrCat(RoleName(principal.role), " '",
                      EscapeForMessage(principal.id), "'");
}

// Lower-case hex of an even length, as BytesToHexString writes it.
bool IsLowerHex(absl::string_view text) {
  if (text.size() % 2 != 0) return false;
  for (const char c : text) {
    if (!absl::ascii_isdigit(c) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

absl::Status CheckTicketId(absl::string_view id, absl::string_view what) {
  if (id.empty() || id.size() > kMaxTicketIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ticket's ", what, " must be 1 to ", kMaxTicketIdBytes,
                     " bytes, got ", id.size()));
  }
  return absl::OkStatus();
}

constexpr char kTicketVersion[] = "rt1";
// rt2: one more field, the hex SHA-256 of the actor's client certificate.
constexpr char kBoundTicketVersion[] = "rt2";
constexpr size_t kMacHexChars = 64;
constexpr size_t kCertHashHexChars = 64;

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kLearner:
      return "learner";
    case Role::kActor:
      return "actor";
    case Role::kOperator:
      break;
  }
  return "operator";
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ParseBearer(absl::string_view metadata_value) {
  if (metadata_value.empty()) {
    return absl::UnauthenticatedError("no credentials: the call carries no '" +
                                      std::string(kMetadataKey) + "' metadata");
  }
  if (!absl::StartsWith(metadata_value, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "malformed credentials: expected 'Bearer <token>'");
  }
  const absl::string_view secret =
      metadata_value.substr(sizeof(kBearerPrefix) - 1);
  if (secret.empty() || !PrintableAscii(secret)) {
    return absl::UnauthenticatedError(
        "malformed credentials: the token is empty or not printable ASCII");
  }
  return std::string(secret);
}

std::string BearerValue(absl::string_view secret) {
  return absl::StrCat(kBearerPrefix, secret);
}

absl::Status RequireRole(const Principal& principal,
                         std::initializer_list<Role> allowed,
                         absl::string_view what) {
  for (const Role role : allowed) {
    if (principal.role == role) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Describe(principal), " may not ", what));
}

absl::Status RequireLearner(const Principal& principal,
                            absl::string_view member_id,
                            absl::string_view what) {
  if (principal.role == Role::kLearner && principal.id == member_id) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Describe(principal), " may not ", what, " as learner '",
                   EscapeForMessage(member_id), "'"));
}

absl::Status TokenRegistry::Add(absl::string_view secret, Principal principal) {
  if (secret.size() < kMinSecretBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a token must be at least ", kMinSecretBytes,
                     " characters, got ", secret.size()));
  }
  if (!PrintableAscii(secret)) {
    return absl::InvalidArgumentError(
        "a token must be printable ASCII without spaces");
  }
  const std::string digest = DigestHex(secret);
  absl::MutexLock lock(&mu_);
  by_digest_[digest] = std::move(principal);
  return absl::OkStatus();
}

absl::StatusOr<std::string> TokenRegistry::Issue(Principal principal) {
  absl::StatusOr<std::string> secret = GenerateToken();
  if (!secret.ok()) return secret.status();
  absl::Status added = Add(*secret, std::move(principal));
  if (!added.ok()) return added;
  return secret;
}

int TokenRegistry::Revoke(const Principal& principal) {
  absl::MutexLock lock(&mu_);
  int removed = 0;
  for (auto it = by_digest_.begin(); it != by_digest_.end();) {
    if (it->second == principal) {
      by_digest_.erase(it++);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

absl::StatusOr<Principal> TokenRegistry::Authenticate(
    absl::string_view metadata_value) const {
  absl::StatusOr<std::string> secret = ParseBearer(metadata_value);
  if (!secret.ok()) return secret.status();
  return AuthenticateSecret(*secret);
}

absl::StatusOr<Principal> TokenRegistry::AuthenticateSecret(
    absl::string_view secret) const {
  const std::string digest = DigestHex(secret);
  absl::MutexLock lock(&mu_);
  // Keyed by the digest, which a caller cannot steer towards a stored one:
  // the lookup's timing says nothing about the secret (see the header).
  const auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) {
    return absl::UnauthenticatedError("unknown credentials");
  }
  return it->second;
}

size_t TokenRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return by_digest_.size();
}

std::string HmacSha256(absl::string_view key, absl::string_view message) {
  constexpr size_t kBlock = 64;
  std::string block(kBlock, '\0');
  if (key.size() > kBlock) {
    const Sha256::Digest hashed = Sha256::Hash(key);
    std::copy(hashed.begin(), hashed.end(), block.begin());
  } else {
    std::copy(key.begin(), key.end(), block.begin());
  }
  std::string inner_pad(kBlock, '\0');
  std::string outer_pad(kBlock, '\0');
  for (size_t i = 0; i < kBlock; ++i) {
    inner_pad[i] = static_cast<char>(block[i] ^ 0x36);
    outer_pad[i] = static_cast<char>(block[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.Update(inner_pad);
  inner.Update(message);
  const Sha256::Digest inner_digest = inner.Finish();
  Sha256 outer;
  outer.Update(outer_pad);
  outer.Update(inner_digest.data(), inner_digest.size());
  const Sha256::Digest mac = outer.Finish();
  return std::string(mac.begin(), mac.end());
}

absl::StatusOr<std::string> MintActorTicket(const ActorTicket& ticket,
                                            absl::string_view key) {
  if (key.empty()) {
    return absl::InvalidArgumentError("a ticket needs a key");
  }
  if (absl::Status s = CheckTicketId(ticket.actor_id, "actor id"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTicketId(ticket.learner_id, "learner id");
      !s.ok()) {
    return s;
  }
  if (ticket.expires_ms <= ticket.issued_ms) {
    return absl::InvalidArgumentError("a ticket must expire after its issue");
  }
  const bool bound = !ticket.cert_sha256.empty();
  if (bound && (ticket.cert_sha256.size() != kCertHashHexChars ||
                !IsLowerHex(ticket.cert_sha256))) {
    return absl::InvalidArgumentError(
        "a ticket's certificate hash must be 64 lower-case hex digits");
  }
  std::string body =
      absl::StrCat(bound ? kBoundTicketVersion : kTicketVersion, ".",
                   absl::BytesToHexString(ticket.actor_id), ".",
                   absl::BytesToHexString(ticket.learner_id), ".",
                   ticket.issued_ms, ".", ticket.expires_ms);
  // The certificate hash is covered by the MAC: changing it breaks the
  // ticket.
  if (bound) absl::StrAppend(&body, ".", ticket.cert_sha256);
  return absl::StrCat(body, ".", absl::BytesToHexString(HmacSha256(key, body)));
}

absl::StatusOr<ActorTicket> VerifyActorTicket(
    absl::string_view text, std::initializer_list<absl::string_view> keys,
    absl::string_view learner_id, absl::Time now) {
  const size_t last_dot = text.rfind('.');
  if (last_dot == absl::string_view::npos) {
    return absl::UnauthenticatedError("malformed ticket");
  }
  const absl::string_view body = text.substr(0, last_dot);
  const absl::string_view mac = text.substr(last_dot + 1);
  const std::vector<absl::string_view> fields = absl::StrSplit(body, '.');
  ActorTicket ticket;
  // The MAC's length is public (always 64 hex characters): checking it
  // first leaks nothing.
  // rt1: five fields; rt2: a sixth, the certificate hash.
  const bool bound = fields.size() == 6 && fields[0] == kBoundTicketVersion &&
                     fields[5].size() == kCertHashHexChars &&
                     IsLowerHex(fields[5]);
  const bool unbound = fields.size() == 5 && fields[0] == kTicketVersion;
  if ((!bound && !unbound) || mac.size() != kMacHexChars ||
      !IsLowerHex(fields[1]) || !IsLowerHex(fields[2]) ||
      fields[1].size() > 2 * kMaxTicketIdBytes ||
      fields[2].size() > 2 * kMaxTicketIdBytes ||
      !absl::SimpleAtoi(fields[3], &ticket.issued_ms) ||
      !absl::SimpleAtoi(fields[4], &ticket.expires_ms)) {
    return absl::UnauthenticatedError("malformed ticket");
  }
  bool matched = false;
  for (const absl::string_view key : keys) {
    if (key.empty()) continue;
    const std::string expected = absl::BytesToHexString(HmacSha256(key, body));
    // Every key is tried: which one matched does not show in the timing.
    matched = ConstantTimeEquals(expected, mac) || matched;
  }
  if (!matched) {
    return absl::UnauthenticatedError(
        "ticket not issued for this learner's key (forged, tampered with, or "
        "older than the learner's last two registrations)");
  }
  ticket.actor_id = absl::HexStringToBytes(fields[1]);
  ticket.learner_id = absl::HexStringToBytes(fields[2]);
  if (bound) ticket.cert_sha256 = std::string(fields[5]);
  if (ticket.learner_id != learner_id) {
    return absl::UnauthenticatedError(absl::StrCat(
        "ticket issued for learner '", EscapeForMessage(ticket.learner_id, 80),
        "', not '", EscapeForMessage(learner_id, 80), "'"));
  }
  const int64_t now_ms = absl::ToUnixMillis(now);
  const int64_t skew_ms = absl::ToInt64Milliseconds(kTicketClockSkew);
  if (now_ms > ticket.expires_ms + skew_ms) {
    return absl::UnauthenticatedError(
        absl::StrCat("ticket expired ", (now_ms - ticket.expires_ms) / 1000,
                     " s ago: ask the coordinator again (FindLearner)"));
  }
  if (now_ms < ticket.issued_ms - skew_ms) {
    return absl::UnauthenticatedError(
        "ticket issued in the future (clocks differ by more than the "
        "tolerated skew)");
  }
  return ticket;
}

absl::Status CheckTicketCertificate(
    const ActorTicket& ticket,
    const std::optional<std::string>& peer_cert_sha256) {
  if (ticket.cert_sha256.empty()) return absl::OkStatus();
  if (!peer_cert_sha256.has_value()) {
    return absl::PermissionDeniedError(
        "ticket bound to a client certificate, but this connection presented "
        "none: the coordinator runs mutual TLS, so the learner must too "
        "(--tls-ca) to check the binding");
  }
  if (!ConstantTimeEquals(ticket.cert_sha256, *peer_cert_sha256)) {
    return absl::PermissionDeniedError(
        "ticket bound to another client certificate (it was issued to another "
        "actor host)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CertificateSha256(absl::string_view pem) {
  constexpr absl::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  constexpr absl::string_view kEnd = "-----END CERTIFICATE-----";
  const size_t begin = pem.find(kBegin);
  const size_t end = begin == absl::string_view::npos
                         ? absl::string_view::npos
                         : pem.find(kEnd, begin + kBegin.size());
  if (end == absl::string_view::npos) {
    return absl::InvalidArgumentError("no PEM certificate block");
  }
  std::string base64;
  for (const char c :
       pem.substr(begin + kBegin.size(), end - begin - kBegin.size())) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) base64 += c;
  }
  std::string der;
  // A DER certificate is a SEQUENCE (tag 0x30).
  if (!absl::Base64Unescape(base64, &der) || der.empty() ||
      static_cast<unsigned char>(der[0]) != 0x30) {
    return absl::InvalidArgumentError(
        "the PEM certificate block is not base64 of a DER certificate");
  }
  return DigestHex(der);
}

namespace {

bool UnreservedInUri(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// The percent-decoded `text`; nullopt on a malformed escape.
std::optional<std::string> PercentDecode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      return std::nullopt;
    }
    out += absl::HexStringToBytes(text.substr(i + 1, 2));
    i += 2;
  }
  return out;
}

}  // namespace

CertificateNames ParseCertificateNames(const std::vector<std::string>& uris) {
  CertificateNames names;
  for (const std::string& uri : uris) {
    if (!absl::StartsWithIgnoreCase(uri, "urn:ristretto:")) continue;
    names.any = true;
    std::vector<std::string>* kind = nullptr;
    absl::string_view id;
    if (absl::StartsWith(uri, kActorNamePrefix)) {
      kind = &names.actors;
      id = absl::string_view(uri).substr(sizeof(kActorNamePrefix) - 1);
    } else if (absl::StartsWith(uri, kLearnerNamePrefix)) {
      kind = &names.learners;
      id = absl::string_view(uri).substr(sizeof(kLearnerNamePrefix) - 1);
    } else {
      continue;  // an unknown kind names nothing usable
    }
    std::optional<std::string> decoded = PercentDecode(id);
    if (!decoded.has_value() || decoded->empty()) continue;
    kind->push_back(*std::move(decoded));
  }
  return names;
}

std::string QuotedIds(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) {
    if (out.size() > 160) {
      absl::StrAppend(&out, ", ...");
      break;
    }
    absl::StrAppend(&out, out.empty() ? "'" : ", '", EscapeForMessage(id, 80),
                    "'");
  }
  return out;
}

std::string CertificateNameUri(Role role, absl::string_view id) {
  std::string out;
  switch (role) {
    case Role::kActor:
      out = kActorNamePrefix;
      break;
    case Role::kLearner:
      out = kLearnerNamePrefix;
      break;
    case Role::kOperator:
      return "";
  }
  for (const char c : id) {
    if (UnreservedInUri(c)) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "%",
                      absl::AsciiStrToUpper(
                          absl::BytesToHexString(absl::string_view(&c, 1))));
    }
  }
  return out;
}

absl::Status CertificateBindings::Bind(absl::string_view id,
                                       absl::string_view cert_sha256,
                                       absl::Time now, absl::string_view what) {
  absl::MutexLock lock(&mu_);
  // A certificate named this id: another one never takes it by first use
  // (not after an idle spell, nor by flooding other ids to evict it).
  if (const auto named = claimed_.find(id);
      named != claimed_.end() && named->second != cert_sha256) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " '", EscapeForMessage(id, 80),
                     "' is named by another client certificate"));
  }
  const auto it = by_id_.find(id);
  if (it != by_id_.end() && it->second.cert_sha256 != cert_sha256 &&
      now - it->second.last_used < lifetime_) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " '", EscapeForMessage(id, 80),
                     "' is in use by another client certificate"));
  }
  // New, the same certificate again, or a lapsed binding taken over.
  Put(id, cert_sha256, now);
  return absl::OkStatus();
}

absl::Status CertificateBindings::Claim(absl::string_view id,
                                        absl::string_view cert_sha256,
                                        const std::vector<std::string>& named,
                                        absl::string_view what) {
  if (std::find(named.begin(), named.end(), id) == named.end()) {
    const std::string names = QuotedIds(named);
    return absl::PermissionDeniedError(
        absl::StrCat(what, " '", EscapeForMessage(id, 80),
                     "' is not named by this client certificate (it names ",
                     names.empty() ? absl::StrCat("no ", what) : names, ")"));
  }
  absl::MutexLock lock(&mu_);
  // Held apart from the first-use bindings, which it outranks: the
  // certificate that used the id first (naming nothing) is refused from now
  // on, by Bind.
  claimed_[std::string(id)] = std::string(cert_sha256);
  if (const auto it = by_id_.find(id); it != by_id_.end()) {
    lru_.erase(it->second.lru);
    by_id_.erase(it);
  }
  return absl::OkStatus();
}

void CertificateBindings::Put(absl::string_view id,
                              absl::string_view cert_sha256, absl::Time now) {
  const auto it = by_id_.find(id);
  if (it != by_id_.end()) {
    Binding& binding = it->second;
    binding.cert_sha256 = std::string(cert_sha256);
    binding.last_used = now;
    lru_.splice(lru_.begin(), lru_, binding.lru);
    return;
  }
  lru_.emplace_front(id);
  by_id_.emplace(std::string(id),
                 Binding{std::string(cert_sha256), now, lru_.begin()});
  // Lapsed bindings at the cold end go first, then, over capacity, the
  // least recently used live one.
  while (!lru_.empty() &&
         (by_id_.size() > capacity_ ||
          now - by_id_.find(lru_.back())->second.last_used >= lifetime_)) {
    by_id_.erase(lru_.back());
    lru_.pop_back();
  }
}

void CertificateBindings::Forget(absl::string_view id) {
  absl::MutexLock lock(&mu_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  lru_.erase(it->second.lru);
  by_id_.erase(it);
}

size_t CertificateBindings::size() const {
  absl::MutexLock lock(&mu_);
  return by_id_.size() + claimed_.size();
}

void TicketKeys::Rotate(absl::string_view learner_id, absl::string_view key) {
  if (key.empty()) return;
  absl::MutexLock lock(&mu_);
  learner_id_ = std::string(learner_id);
  if (key == current_) return;
  previous_ = std::move(current_);
  current_ = std::string(key);
}

bool TicketKeys::has_key() const {
  absl::MutexLock lock(&mu_);
  return !current_.empty();
}

absl::StatusOr<ActorTicket> TicketKeys::Verify(absl::string_view text,
                                               absl::Time now) const {
  absl::MutexLock lock(&mu_);
  if (current_.empty()) {
    return absl::UnauthenticatedError(
        "this learner has no ticket key yet (not registered)");
  }
  return VerifyActorTicket(text, {current_, previous_}, learner_id_, now);
}

}  // namespace ristretto::auth
