#include "common/auth.h"

#include <string>

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

}  // namespace
}  // namespace ristretto::auth
