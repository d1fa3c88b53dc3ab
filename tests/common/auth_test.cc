#include "common/auth.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::auth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kOperatorSecret(40, 'o');

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(
      ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(ParseBearerTest, AcceptsOnlyBearerWithAPrintableToken) {
  EXPECT_EQ(*ParseBearer("Bearer abc"), "abc");
  EXPECT_EQ(ParseBearer("").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ParseBearer("Basic abc").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ParseBearer("Bearer ").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ParseBearer("Bearer a b").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ParseBearer("Bearer a\nb").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(BearerValue("xyz"), "Bearer xyz");
}

TEST(TokenRegistryTest, AuthenticatesKnownSecretsOnly) {
  TokenRegistry registry;
  ASSERT_TRUE(
      registry.Add(kOperatorSecret, {Role::kOperator, "operator"}).ok());
  const auto op = registry.Authenticate(BearerValue(kOperatorSecret));
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->role, Role::kOperator);

  const auto wrong = registry.Authenticate(BearerValue(std::string(40, 'x')));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnauthenticated);
  // A prefix of a valid secret is not valid.
  const auto prefix =
      registry.Authenticate(BearerValue(kOperatorSecret.substr(0, 39)));
  EXPECT_EQ(prefix.status().code(), absl::StatusCode::kUnauthenticated);
  // The message never echoes the secret.
  EXPECT_THAT(std::string(wrong.status().message()), Not(HasSubstr("xxxx")));
}

TEST(TokenRegistryTest, RefusesShortOrNonPrintableSecrets) {
  TokenRegistry registry;
  EXPECT_EQ(registry.Add("short", {Role::kOperator, "operator"}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      registry.Add(std::string(40, 'a') + "\x01", {Role::kActor, "a"}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.size(), 0u);
}

TEST(TokenRegistryTest, IssuedSecretsAreDistinctBoundAndRevocable) {
  TokenRegistry registry;
  const Principal learner{Role::kLearner, "learner-a"};
  const auto first = registry.Issue(learner);
  const auto second = registry.Issue({Role::kLearner, "learner-b"});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(*first, *second);
  EXPECT_GE(first->size(), TokenRegistry::kMinSecretBytes);
  const auto who = registry.Authenticate(BearerValue(*first));
  ASSERT_TRUE(who.ok());
  EXPECT_EQ(*who, learner);

  EXPECT_EQ(registry.Revoke(learner), 1);
  EXPECT_EQ(registry.Authenticate(BearerValue(*first)).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(registry.Authenticate(BearerValue(*second)).ok());
}

TEST(RequireTest, RolesAndMemberIdsArePermissionChecks) {
  const Principal learner{Role::kLearner, "learner-a"};
  EXPECT_TRUE(
      RequireRole(learner, {Role::kLearner, Role::kOperator}, "lease").ok());
  const absl::Status denied =
      RequireRole(learner, {Role::kOperator}, "stop a study");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.message()),
              HasSubstr("learner 'learner-a' may not stop a study"));

  EXPECT_TRUE(RequireLearner(learner, "learner-a", "heartbeat").ok());
  const absl::Status other = RequireLearner(learner, "learner-b", "heartbeat");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(
      RequireLearner({Role::kActor, "learner-a"}, "learner-a", "x").code(),
      absl::StatusCode::kPermissionDenied);
  // Hostile ids are escaped in messages.
  const absl::Status escaped =
      RequireRole({Role::kActor, "a\nb"}, {Role::kOperator}, "x");
  EXPECT_THAT(std::string(escaped.message()), HasSubstr("a\\x0ab"));
}

// RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
TEST(HmacSha256Test, MatchesRfc4231) {
  EXPECT_EQ(
      absl::BytesToHexString(HmacSha256(std::string(20, '\x0b'), "Hi There")),
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(absl::BytesToHexString(
                HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(absl::BytesToHexString(HmacSha256(
                std::string(131, '\xaa'),
                "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOtherKey = "fedcba9876543210fedcba9876543210";
const absl::Time kNow = absl::FromUnixMillis(1'800'000'000'000);

ActorTicket TicketFor(const std::string& actor, const std::string& learner) {
  ActorTicket t;
  t.actor_id = actor;
  t.learner_id = learner;
  t.issued_ms = absl::ToUnixMillis(kNow);
  t.expires_ms = absl::ToUnixMillis(kNow + kActorTicketTtl);
  return t;
}

std::string Mint(const ActorTicket& t, const std::string& key = kKey) {
  absl::StatusOr<std::string> text = MintActorTicket(t, key);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

TEST(ActorTicketTest, AValidTicketNamesItsActorAndLearner) {
  const std::string text = Mint(TicketFor("actor 7\n", "learner-1"));
  // Printable ASCII: it travels as a Bearer credential.
  EXPECT_TRUE(ParseBearer(BearerValue(text)).ok());
  absl::StatusOr<ActorTicket> t =
      VerifyActorTicket(text, {kKey}, "learner-1", kNow);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->actor_id, "actor 7\n");
  EXPECT_EQ(t->learner_id, "learner-1");
  EXPECT_EQ(t->expires_ms - t->issued_ms,
            absl::ToInt64Milliseconds(kActorTicketTtl));
}

TEST(ActorTicketTest, EveryTamperedFieldIsRefused) {
  const std::string text = Mint(TicketFor("a1", "learner-1"));
  const std::vector<std::string> fields = absl::StrSplit(text, '.');
  ASSERT_EQ(fields.size(), 6u);
  // Another valid ticket's fields spliced in one at a time: the MAC of the
  // original no longer matches.
  ActorTicket earlier = TicketFor("a2", "learner-2");
  earlier.issued_ms -= 1000;
  const std::string other_text = Mint(earlier, kOtherKey);
  ActorTicket later = TicketFor("a1", "learner-1");
  later.expires_ms += 1;
  const std::vector<std::string> other = absl::StrSplit(other_text, '.');
  const std::vector<std::string> longer = absl::StrSplit(Mint(later), '.');
  for (size_t i = 1; i < 6; ++i) {
    std::vector<std::string> tampered = fields;
    tampered[i] = i == 4 ? longer[4] : other[i];
    const absl::StatusOr<ActorTicket> t = VerifyActorTicket(
        absl::StrJoin(tampered, "."), {kKey}, "learner-1", kNow);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kUnauthenticated)
        << "field " << i;
  }
  // A flipped MAC character, a truncated MAC, no MAC, garbage.
  std::string flipped = text;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  for (const std::string& bad :
       {flipped, text.substr(0, text.size() - 2),
        text.substr(0, text.rfind('.')), std::string("rt1"), std::string(),
        "rt2" + text.substr(3)}) {
    const absl::StatusOr<ActorTicket> t =
        VerifyActorTicket(bad, {kKey}, "learner-1", kNow);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kUnauthenticated) << bad;
    // The message never echoes the presented MAC.
    EXPECT_THAT(std::string(t.status().message()),
                Not(HasSubstr(fields[5].substr(0, 16))));
  }
}

TEST(ActorTicketTest, AWrongKeyOrAnotherLearnerIsRefused) {
  const std::string text = Mint(TicketFor("a1", "learner-1"));
  EXPECT_EQ(
      VerifyActorTicket(text, {kOtherKey}, "learner-1", kNow).status().code(),
      absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(VerifyActorTicket(text, {}, "learner-1", kNow).status().code(),
            absl::StatusCode::kUnauthenticated);
  // The right key, but the ticket names another learner.
  EXPECT_EQ(VerifyActorTicket(text, {kKey}, "learner-2", kNow).status().code(),
            absl::StatusCode::kUnauthenticated);
  // Any one of the keys given.
  EXPECT_TRUE(
      VerifyActorTicket(text, {kOtherKey, kKey}, "learner-1", kNow).ok());
}

TEST(ActorTicketTest, ExpiredAndFutureTicketsAreRefusedBeyondTheSkew) {
  const std::string text = Mint(TicketFor("a1", "learner-1"));
  const absl::Time expiry = kNow + kActorTicketTtl;
  EXPECT_TRUE(
      VerifyActorTicket(text, {kKey}, "learner-1", expiry + kTicketClockSkew)
          .ok());
  const absl::StatusOr<ActorTicket> expired =
      VerifyActorTicket(text, {kKey}, "learner-1",
                        expiry + kTicketClockSkew + absl::Milliseconds(1));
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(expired.status().message()), HasSubstr("expired"));
  EXPECT_TRUE(
      VerifyActorTicket(text, {kKey}, "learner-1", kNow - kTicketClockSkew)
          .ok());
  EXPECT_EQ(VerifyActorTicket(text, {kKey}, "learner-1",
                              kNow - kTicketClockSkew - absl::Milliseconds(1))
                .status()
                .code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(ActorTicketTest, MintRefusesWhatItCannotCarry) {
  const absl::StatusOr<std::string> keyless =
      MintActorTicket(TicketFor("a1", "l"), "");
  EXPECT_FALSE(keyless.ok());
  EXPECT_EQ(keyless.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(keyless.status().message()), HasSubstr("key"));
  const absl::StatusOr<std::string> no_actor =
      MintActorTicket(TicketFor("", "l"), kKey);
  EXPECT_FALSE(no_actor.ok());
  EXPECT_EQ(no_actor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_actor.status().message()), HasSubstr("actor id"));
  const absl::StatusOr<std::string> long_actor = MintActorTicket(
      TicketFor(std::string(kMaxTicketIdBytes + 1, 'a'), "l"), kKey);
  EXPECT_FALSE(long_actor.ok());
  EXPECT_EQ(long_actor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(long_actor.status().message()),
              HasSubstr("actor id"));
  ActorTicket backwards = TicketFor("a1", "l");
  backwards.expires_ms = backwards.issued_ms;
  const absl::StatusOr<std::string> reversed = MintActorTicket(backwards, kKey);
  EXPECT_FALSE(reversed.ok());
  EXPECT_EQ(reversed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(reversed.status().message()), HasSubstr("expire"));
}

// A client certificate made by scripts/make_dev_certs.sh --client actor-a,
// and its hash as `openssl x509 -outform DER | sha256sum` prints it.
constexpr char kCertPem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBvjCCAWOgAwIBAgIUAuYnGWON2F/RZ1kH6wzRS2hZb3wwCgYIKoZIzj0EAwIw\n"
    "IzEhMB8GA1UEAwwYcmlzdHJldHRvIGRldmVsb3BtZW50IENBMB4XDTI2MTEyODAw\n"
    "NDk0NVoXDTI5MDMwMjAwNDk0NVowIzEhMB8GA1UEAwwYcmlzdHJldHRvIGNsaWVu\n"
    "dCBhY3Rvci1hMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEF4XhCCmh5dgR/Ad8\n"
    "tF1RMfquUO3V8pSNuT+NThIhYqTwCQ9Q7NCJju9c3S5m8aa+yjuHkqLKgf1VJYG0\n"
    "jMlo3aN1MHMwDAYDVR0TAQH/BAIwADAOBgNVHQ8BAf8EBAMCBaAwEwYDVR0lBAww\n"
    "CgYIKwYBBQUHAwIwHQYDVR0OBBYEFDNFnIlcXPvwwXl00JnoutoMDJvvMB8GA1Ud\n"
    "IwQYMBaAFFZLKLjREko4q6xKi/TNrLWpnxhfMAoGCCqGSM49BAMCA0kAMEYCIQCO\n"
    "hluYeSz3hL99wOACfs6NjrcIGvGBa28Yhy4MknmFfQIhAOI4wc+Xx/H7e6rsUehp\n"
    "HtDFuBa2bKrAZRk3czmZ8E6n\n"
    "-----END CERTIFICATE-----\n";
constexpr char kCertSha256[] =
    "b5f8f7989c39b5633f3808c932fa2cd521d0f09dda3ff94e96d7c5a2e374caa2";
const std::string kOtherCert(64, 'c');

TEST(CertificateSha256Test, HashesTheDerLikeOpenssl) {
  absl::StatusOr<std::string> hash = CertificateSha256(kCertPem);
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(*hash, kCertSha256);
  // Wrapped differently (CRLF, no final newline): the same DER.
  std::string crlf = absl::StrReplaceAll(kCertPem, {{"\n", "\r\n"}});
  crlf.pop_back();
  EXPECT_EQ(CertificateSha256(crlf).value_or(""), kCertSha256);
  EXPECT_EQ(CertificateSha256("no certificate").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CertificateSha256("-----BEGIN CERTIFICATE-----\n!!\n"
                              "-----END CERTIFICATE-----\n")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ActorTicketTest, ABoundTicketCarriesItsCertificateUnderTheMac) {
  ActorTicket bound = TicketFor("a1", "learner-1");
  bound.cert_sha256 = kCertSha256;
  const std::string text = Mint(bound);
  EXPECT_EQ(text.substr(0, 4), "rt2.");
  absl::StatusOr<ActorTicket> t =
      VerifyActorTicket(text, {kKey}, "learner-1", kNow);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->actor_id, "a1");
  EXPECT_EQ(t->cert_sha256, kCertSha256);
  // Another certificate's hash in its place: the MAC no longer matches.
  std::vector<std::string> fields = absl::StrSplit(text, '.');
  ASSERT_EQ(fields.size(), 7u);
  fields[5] = kOtherCert;
  EXPECT_EQ(
      VerifyActorTicket(absl::StrJoin(fields, "."), {kKey}, "learner-1", kNow)
          .status()
          .code(),
      absl::StatusCode::kUnauthenticated);
  // Dropping the field (posing as rt1) or relabelling the version: refused.
  fields = absl::StrSplit(text, '.');
  std::vector<std::string> unbound = fields;
  unbound.erase(unbound.begin() + 5);
  unbound[0] = "rt1";
  EXPECT_EQ(
      VerifyActorTicket(absl::StrJoin(unbound, "."), {kKey}, "learner-1", kNow)
          .status()
          .code(),
      absl::StatusCode::kUnauthenticated);
  fields[0] = "rt1";
  const absl::StatusOr<ActorTicket> relabelled =
      VerifyActorTicket(absl::StrJoin(fields, "."), {kKey}, "learner-1", kNow);
  EXPECT_FALSE(relabelled.ok());
  EXPECT_EQ(relabelled.status().code(), absl::StatusCode::kUnauthenticated);
  // rt1 tickets (minted without mutual TLS) still verify, unbound.
  absl::StatusOr<ActorTicket> old = VerifyActorTicket(
      Mint(TicketFor("a1", "learner-1")), {kKey}, "learner-1", kNow);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->cert_sha256.empty());
  // Only a 64-digit lower-case hex hash is minted.
  for (const std::string& bad :
       {std::string(63, 'a'), std::string(64, 'A'), std::string(64, 'g')}) {
    bound.cert_sha256 = bad;
    const absl::StatusOr<std::string> minted = MintActorTicket(bound, kKey);
    EXPECT_FALSE(minted.ok()) << bad;
    EXPECT_EQ(minted.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(std::string(minted.status().message()),
                HasSubstr("certificate hash"))
        << bad;
  }
}

TEST(CheckTicketCertificateTest, ABoundTicketWorksOnlyFromItsCertificate) {
  ActorTicket bound = TicketFor("a1", "learner-1");
  bound.cert_sha256 = kCertSha256;
  EXPECT_TRUE(CheckTicketCertificate(bound, std::string(kCertSha256)).ok());
  const absl::Status other = CheckTicketCertificate(bound, kOtherCert);
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(other.message()),
              HasSubstr("ticket bound to another client certificate"));
  const absl::Status none = CheckTicketCertificate(bound, std::nullopt);
  EXPECT_EQ(none.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(none.message()), HasSubstr("mutual TLS"));
  // An unbound ticket: from anywhere.
  const ActorTicket unbound = TicketFor("a1", "learner-1");
  EXPECT_TRUE(CheckTicketCertificate(unbound, std::nullopt).ok());
  EXPECT_TRUE(CheckTicketCertificate(unbound, kOtherCert).ok());
}

TEST(CertificateBindingsTest, FirstCertificateKeepsTheIdWhileItUsesIt) {
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  CertificateBindings bindings(/*capacity=*/10, absl::Minutes(16));
  EXPECT_TRUE(bindings.Bind("x", a, kNow, "actor id").ok());
  const absl::Status taken = bindings.Bind("x", b, kNow, "actor id");
  EXPECT_EQ(taken.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(
      std::string(taken.message()),
      HasSubstr("actor id 'x' is in use by another client certificate"));
  // The same certificate again (an actor restarting on its host).
  EXPECT_TRUE(bindings.Bind("x", a, kNow + absl::Minutes(10), "actor id").ok());
  EXPECT_TRUE(bindings.Bind("y", b, kNow, "actor id").ok());
  // Each use extends the binding: 16 minutes after the last one, not after
  // the first.
  EXPECT_FALSE(
      bindings.Bind("x", b, kNow + absl::Minutes(25), "actor id").ok());
  EXPECT_TRUE(bindings.Bind("x", b, kNow + absl::Minutes(26), "actor id").ok());
  // Now it is b's.
  EXPECT_FALSE(
      bindings.Bind("x", a, kNow + absl::Minutes(27), "actor id").ok());
  bindings.Forget("x");
  EXPECT_TRUE(bindings.Bind("x", a, kNow + absl::Minutes(27), "actor id").ok());
  // Ids in messages are escaped and capped.
  EXPECT_TRUE(bindings.Bind(std::string(300, '\n'), a, kNow, "actor id").ok());
  const std::string message(
      bindings.Bind(std::string(300, '\n'), b, kNow, "actor id").message());
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  EXPECT_LT(message.size(), 200u);
}

TEST(CertificateBindingsTest, BoundedLeastRecentlyUsedFirst) {
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  CertificateBindings bindings(/*capacity=*/3, absl::Minutes(16));
  for (const char* id : {"1", "2", "3"}) {
    ASSERT_TRUE(bindings.Bind(id, a, kNow, "actor id").ok());
  }
  ASSERT_TRUE(bindings.Bind("1", a, kNow, "actor id").ok());  // "2" is coldest
  ASSERT_TRUE(bindings.Bind("4", a, kNow, "actor id").ok());
  EXPECT_EQ(bindings.size(), 3u);
  EXPECT_TRUE(bindings.Bind("2", b, kNow, "actor id").ok());  // forgotten
  const absl::Status one = bindings.Bind("1", b, kNow, "actor id");
  EXPECT_FALSE(one.ok());
  EXPECT_EQ(one.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(one.message()), HasSubstr("actor id '1'"));
  const absl::Status four = bindings.Bind("4", b, kNow, "actor id");
  EXPECT_FALSE(four.ok());
  EXPECT_EQ(four.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(four.message()), HasSubstr("actor id '4'"));
  // Lapsed bindings at the cold end are dropped when a new id comes.
  ASSERT_TRUE(bindings.Bind("5", a, kNow + absl::Minutes(17), "actor id").ok());
  EXPECT_EQ(bindings.size(), 1u);
}

TEST(CertificateBindingsTest, ANamedCertificateClaimsOnlyItsNames) {
  const std::string a(64, 'a');
  const std::string named(64, 'n');
  CertificateBindings bindings(/*capacity=*/10, absl::Minutes(16));
  // An unnamed certificate used "x" first; the certificate naming x takes
  // it over, and from then on the unnamed one is refused.
  ASSERT_TRUE(bindings.Bind("x", a, kNow, "actor id").ok());
  EXPECT_TRUE(bindings.Claim("x", named, {"x", "z"}, "actor id").ok());
  EXPECT_EQ(bindings.Bind("x", a, kNow, "actor id").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(bindings.size(), 1u);
  // An id it does not name: refused, naming the names, nothing bound.
  const absl::Status other = bindings.Claim("y", named, {"x", "z"}, "actor id");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(std::string(other.message()),
            "actor id 'y' is not named by this client certificate (it names "
            "'x', 'z')");
  EXPECT_EQ(bindings.size(), 1u);
  EXPECT_EQ(std::string(bindings.Claim("y", named, {}, "actor id").message()),
            "actor id 'y' is not named by this client certificate (it names no "
            "actor id)");
  // Many or hostile names: escaped and capped.
  const std::vector<std::string> many(50, std::string(70, '\n'));
  const std::string message(
      bindings.Claim("y", named, many, "actor id").message());
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  EXPECT_LT(message.size(), 600u);
  EXPECT_THAT(message, HasSubstr(", ...)"));
}

// An id a certificate claimed by naming it is not trust on first use: a
// certificate that names nothing is refused it however long it sits idle,
// however many other ids are bound to push it out, and after a Forget; a
// certificate naming it takes it over.
TEST(CertificateBindingsTest, ANamedIdNeverLapsesNorIsEvicted) {
  const std::string named(64, 'n');
  const std::string unnamed(64, 'u');
  const std::string renewed(64, 'r');
  CertificateBindings bindings(/*capacity=*/3, absl::Minutes(16));
  ASSERT_TRUE(bindings.Claim("x", named, {"x"}, "actor id").ok());
  const absl::Status taken =
      bindings.Bind("x", unnamed, kNow + absl::Hours(24 * 365), "actor id");
  EXPECT_EQ(taken.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(std::string(taken.message()),
            "actor id 'x' is named by another client certificate");
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(
        bindings.Bind(absl::StrCat("flood-", i), unnamed, kNow, "actor id")
            .ok());
  }
  EXPECT_EQ(bindings.size(), 4u);  // 3 first-use bindings + the claim
  const absl::Status flooded = bindings.Bind("x", unnamed, kNow, "actor id");
  EXPECT_FALSE(flooded.ok());
  EXPECT_EQ(flooded.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(flooded.message()), HasSubstr("actor id 'x'"));
  bindings.Forget("x");
  const absl::Status forgotten = bindings.Bind("x", unnamed, kNow, "actor id");
  EXPECT_FALSE(forgotten.ok());
  EXPECT_EQ(forgotten.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(forgotten.message()), HasSubstr("actor id 'x'"));
  // Its own certificate, even by first use, and a renewed one naming it.
  EXPECT_TRUE(bindings.Bind("x", named, kNow, "actor id").ok());
  EXPECT_TRUE(bindings.Claim("x", renewed, {"x"}, "actor id").ok());
  const absl::Status superseded = bindings.Bind("x", named, kNow, "actor id");
  EXPECT_FALSE(superseded.ok());
  EXPECT_EQ(superseded.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(superseded.message()), HasSubstr("actor id 'x'"));
}

TEST(CertificateNamesTest, ParsesRistrettoUrisPercentDecodedAndIgnoresOthers) {
  const CertificateNames names = ParseCertificateNames(
      {"spiffe://example.org/x", "urn:ristretto:actor:actor-0",
       "urn:ristretto:learner:learner-127.0.0.1%3A50051",
       "urn:ristretto:actor:a%20b%2c"});
  EXPECT_TRUE(names.any);
  EXPECT_THAT(names.actors, ElementsAre("actor-0", "a b,"));
  EXPECT_THAT(names.learners, ElementsAre("learner-127.0.0.1:50051"));
  // Nothing of ours: no names, trust on first use applies.
  EXPECT_FALSE(ParseCertificateNames({"https://x", "urn:other:actor:a"}).any);
  EXPECT_FALSE(ParseCertificateNames({}).any);
  // Ours but unusable (unknown kind, bad escapes, empty): held to names
  // that admit nothing.
  for (const char* bad :
       {"urn:ristretto:operator:x", "urn:ristretto:actor:%zz",
        "urn:ristretto:actor:a%2", "urn:ristretto:actor:", "URN:RISTRETTO:x"}) {
    const CertificateNames held = ParseCertificateNames({bad});
    EXPECT_TRUE(held.any) << bad;
    EXPECT_TRUE(held.actors.empty()) << bad;
    EXPECT_TRUE(held.learners.empty()) << bad;
  }
}

TEST(CertificateNamesTest, NameUrisRoundTrip) {
  EXPECT_EQ(CertificateNameUri(Role::kActor, "actor-0"),
            "urn:ristretto:actor:actor-0");
  EXPECT_EQ(CertificateNameUri(Role::kLearner, "learner-10.0.0.1:50051"),
            "urn:ristretto:learner:learner-10.0.0.1%3A50051");
  EXPECT_EQ(CertificateNameUri(Role::kOperator, "x"), "");
  const std::string odd = std::string("a b,%/\xff\0z", 9);
  const std::string uri = CertificateNameUri(Role::kActor, odd);
  for (const char c : uri) {
    EXPECT_TRUE(absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                std::string("-._~:%").find(c) != std::string::npos)
        << uri;
  }
  EXPECT_THAT(ParseCertificateNames({uri}).actors, ElementsAre(odd));
}

TEST(TicketKeysTest, TheCurrentAndThePreviousKeyAreAcceptedNotOlder) {
  TicketKeys keys;
  const std::string t0 = Mint(TicketFor("a1", "learner-1"), "key-0");
  EXPECT_FALSE(keys.has_key());
  EXPECT_EQ(keys.Verify(t0, kNow).status().code(),
            absl::StatusCode::kUnauthenticated);
  keys.Rotate("learner-1", "key-0");
  EXPECT_TRUE(keys.Verify(t0, kNow).ok());
  keys.Rotate("learner-1", "key-1");  // re-registered
  const std::string t1 = Mint(TicketFor("a1", "learner-1"), "key-1");
  EXPECT_TRUE(keys.Verify(t0, kNow).ok());
  EXPECT_TRUE(keys.Verify(t1, kNow).ok());
  keys.Rotate("learner-1", "key-1");  // the same key again: no rotation
  EXPECT_TRUE(keys.Verify(t0, kNow).ok());
  keys.Rotate("learner-1", "key-2");
  EXPECT_EQ(keys.Verify(t0, kNow).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(keys.Verify(t1, kNow).ok());
}

}  // namespace
}  // namespace ristretto::auth
