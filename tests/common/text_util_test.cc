#include "common/text_util.h"

#include <string>

#include "gtest/gtest.h"

namespace ristretto {
namespace {

TEST(EscapeForMessageTest, KeepsPrintableAsciiAndEscapesEverythingElse) {
  EXPECT_EQ(EscapeForMessage("BTC-USD 1.5"), "BTC-USD 1.5");
  EXPECT_EQ(EscapeForMessage(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeForMessage("line\nnext\r\t"), "line\\x0anext\\x0d\\x09");
  EXPECT_EQ(EscapeForMessage("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(EscapeForMessage("caf\xc3\xa9"), "caf\\xc3\\xa9");
  EXPECT_EQ(EscapeForMessage("\xff\x7f"), "\\xff\\x7f");
  // A literal backslash is doubled so "\x00" in the input cannot pass for
  // an escaped NUL.
  EXPECT_EQ(EscapeForMessage("a\\x00"), "a\\\\x00");
}

TEST(EscapeForMessageTest, CapsLongTextAndNamesItsSize) {
  const std::string huge(50 << 20, 'n');
  const std::string out = EscapeForMessage(huge);
  EXPECT_EQ(out, std::string(kMessageTextCap, 'n') + "...(52428800 bytes)");
  EXPECT_EQ(EscapeForMessage("abcdef", 4), "abcd...(6 bytes)");
  // Exactly at the cap: nothing is cut.
  EXPECT_EQ(EscapeForMessage("abcd", 4), "abcd");
  // 0: no cap.
  EXPECT_EQ(EscapeForMessage(std::string(500, 'x'), 0).size(), 500u);
}

TEST(EscapeForMessageTest, NeverCutsInsideAnEscape) {
  // "ab" then \x01 (4 characters) would end at 6 > 5: cut before it.
  EXPECT_EQ(EscapeForMessage("ab\x01z", 5), "ab...(4 bytes)");
}

TEST(FindInvalidUtf8Test, AcceptsWellFormedText) {
  EXPECT_EQ(FindInvalidUtf8(""), absl::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("name: ppo-1\n"), absl::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            absl::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("\xf4\x8f\xbf\xbf"), absl::string_view::npos);
}

TEST(FindInvalidUtf8Test, ReportsTheOffsetOfTheFirstBadByte) {
  EXPECT_EQ(FindInvalidUtf8("abc\xff"), 3u);
  EXPECT_EQ(FindInvalidUtf8("ab\x80"), 2u);                 // lone continuation
  EXPECT_EQ(FindInvalidUtf8("x\xc3"), 1u);                  // truncated
  EXPECT_EQ(FindInvalidUtf8("x\xc3(y"), 1u);                // bad continuation
  EXPECT_EQ(FindInvalidUtf8("\xc0\xaf"), 0u);               // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("ok\xed\xa0\x80"), 2u);         // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xf4\x90\x80\x80"), 0u);       // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("\xc3\xa9\xe9t\xc3\xa9"), 2u);  // latin-1 'é'
}

TEST(CheckIdTextTest, RefusesLongIdsAndControlCharactersNamingTheField) {
  EXPECT_TRUE(CheckIdText("member_id", "learner-0").ok());
  EXPECT_TRUE(CheckIdText("member_id", std::string(kMaxIdBytes, 'x')).ok());
  EXPECT_TRUE(CheckIdText("device", "").ok());
  EXPECT_TRUE(CheckIdText("host", "caf\xc3\xa9").ok());  // UTF-8 is fine
  absl::Status s = CheckIdText("member_id", std::string(kMaxIdBytes + 1, 'x'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "member_id is 257 bytes (limit 256)");
  s = CheckIdText("actor_id", "a\r\nb", 2);
  EXPECT_EQ(s.message(), "actor_id is 4 bytes (limit 2)");
  s = CheckIdText("actor_id", "a\nb\x7f");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "actor_id 'a\\x0ab\\x7f' contains control characters");
}

}  // namespace
}  // namespace ristretto
