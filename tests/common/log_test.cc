#include "common/log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/log_lines.h"

namespace ristretto::log {
namespace {

using ::ristretto::tests::FindLogLine;
using ::ristretto::tests::ParseLogLine;
using ::ristretto::tests::ParseLogLines;
using ::testing::HasSubstr;

std::string Capture(void (*write)()) {
  testing::internal::CaptureStderr();
  write();
  return testing::internal::GetCapturedStderr();
}

TEST(LogTest, WritesOneParsableLinePerMessageWithSeverityFileAndLine) {
  Init("log_test");
  const int line = __LINE__ + 2;
  const std::string out = Capture([] {
    RLOG(INFO) << "listening on "
               << "127.0.0.1:" << 5000;
    RLOG(WARNING) << "lag " << 2.5;
    RLOG(ERROR) << "failed";
  });
  const auto lines = ParseLogLines(out);
  ASSERT_EQ(lines.size(), 3u) << out;
  EXPECT_EQ(lines[0].severity, 'I');
  EXPECT_EQ(lines[0].message, "listening on 127.0.0.1:5000");
  EXPECT_EQ(lines[0].file, "log_test.cc");
  EXPECT_EQ(lines[0].line, line);
  EXPECT_EQ(lines[1].severity, 'W');
  EXPECT_EQ(lines[1].message, "lag 2.5");
  EXPECT_EQ(lines[2].severity, 'E');
  // The year is in the prefix: "yyyymmdd hh:mm:ss.uuuuuu".
  EXPECT_EQ(lines[0].timestamp.substr(0, 2), "20");
  EXPECT_EQ(lines[0].timestamp.size(), 24u);
}

TEST(LogTest, ControlBytesCannotSplitOrForgeALine) {
  const std::string out = Capture([] {
    RLOG(INFO)
        << "name=evil\nE20260101 00:00:00.000000 1 x.cc:1] forged\r\x1b[2J";
  });
  const auto lines = ParseLogLines(out);
  ASSERT_EQ(lines.size(), 1u) << out;
  EXPECT_EQ(lines[0].severity, 'I');
  EXPECT_THAT(lines[0].message, HasSubstr("name=evil\\x0aE2026"));
  EXPECT_THAT(lines[0].message, HasSubstr("forged\\x0d\\x1b[2J"));
}

TEST(LogTest, LongMessagesAreCutAndSayHowLongTheyWere) {
  const std::string out =
      Capture([] { RLOG(INFO) << std::string(100000, 'a'); });
  const auto line = FindLogLine(out, "...(100000 bytes)", 'I');
  ASSERT_TRUE(line.has_value()) << out.substr(0, 200);
  EXPECT_LT(line->message.size(), kMaxMessageBytes + 32);
}

TEST(LogTest, SanitizeKeepsPrintableAndUtf8Text) {
  EXPECT_EQ(SanitizeMessage("a\\b c"), "a\\b c");
  EXPECT_EQ(SanitizeMessage("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(SanitizeMessage(std::string("x\0y", 3)), "x\\x00y");
}

TEST(LogLinesTest, OtherLinesAreNotLogLines) {
  EXPECT_FALSE(ParseLogLine("listening on 127.0.0.1:1").has_value());
  EXPECT_FALSE(
      ParseLogLine("I1127 10:20:30.123456 1 a.cc:2] no year").has_value());
  const auto line =
      ParseLogLine("W20261127 10:20:30.123456 42 run_host.cc:17] lag 3");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->file, "run_host.cc");
  EXPECT_EQ(line->line, 17);
  EXPECT_EQ(line->message, "lag 3");
}

TEST(LogLinesTest, ListeningAddressFromALogLineOrAPlainLine) {
  using ::ristretto::tests::ListeningAddress;
  EXPECT_EQ(ListeningAddress("x\nI20261127 10:20:30.123456 1 main.cc:5] "
                             "listening on 127.0.0.1:5000\n"),
            "127.0.0.1:5000");
  EXPECT_EQ(ListeningAddress("listening on [::1]:7 (plaintext)\n"), "[::1]:7");
  EXPECT_EQ(ListeningAddress("I20261127 10:20:30.123456 1 a.cc:1] not "
                             "listening on 1.2.3.4:5\n"),
            "");
  EXPECT_EQ(ListeningAddress(""), "");
}

}  // namespace
}  // namespace ristretto::log
