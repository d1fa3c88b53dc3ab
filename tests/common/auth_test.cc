#include "common/auth.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::auth {
namespace {

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
  EXPECT_FALSE(MintActorTicket(TicketFor("a1", "l"), "").ok());
  EXPECT_FALSE(MintActorTicket(TicketFor("", "l"), kKey).ok());
  EXPECT_FALSE(
      MintActorTicket(TicketFor(std::string(kMaxTicketIdBytes + 1, 'a'), "l"),
                      kKey)
          .ok());
  ActorTicket backwards = TicketFor("a1", "l");
  backwards.expires_ms = backwards.issued_ms;
  EXPECT_FALSE(MintActorTicket(backwards, kKey).ok());
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
