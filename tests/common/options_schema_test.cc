// The run-options schema (common/options_schema.h): the table is well formed
// and docs/study_format.md holds exactly the table generated from it.
#include "common/options_schema.h"

#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/file_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto {
namespace {

using ::testing::HasSubstr;

// The repository root, from this file's path (CMake compiles it by its
// absolute path: <root>/tests/common/options_schema_test.cc).
std::string SourceRoot() {
  const std::string file = __FILE__;
  return file.substr(0, file.rfind("/tests/common/"));
}

TEST(OptionsSchemaTest, StudyFormatDocHoldsTheGeneratedTable) {
  const std::string path = SourceRoot() + "/docs/study_format.md";
  absl::StatusOr<std::string> doc = ReadFileToString(path);
  ASSERT_TRUE(doc.ok()) << doc.status();
  absl::StatusOr<std::string> fresh = WithGeneratedOptionsTable(*doc);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_TRUE(*fresh == *doc)
      << "docs/study_format.md's option table is stale (common/"
         "options_schema.h changed). Regenerate it with\n"
         "  cmake --build build --target ristretto-options-doc && "
         "build/common/ristretto-options-doc --write docs/study_format.md";
}

TEST(OptionsSchemaTest, NamesAndFlagsAreUniqueAndDefaultsValid) {
  std::set<std::string_view> names;
  std::set<std::string_view> flags;
  for (const OptionSpec& s : kOptionSchema) {
    SCOPED_TRACE(std::string(s.name));
    EXPECT_TRUE(names.insert(s.name).second);
    if (!s.flag.empty()) {
      EXPECT_TRUE(flags.insert(s.flag).second);
    }
    EXPECT_FALSE(s.doc.empty());
    EXPECT_FALSE(s.target.empty());
    switch (s.type) {
      case OptionType::kFloat:
      case OptionType::kInt:
        EXPECT_TRUE(s.low < s.high);
        EXPECT_TRUE(InOptionRange(s, s.default_value))
            << s.default_value << " outside " << OptionRangeText(s);
        break;
      case OptionType::kBool:
        EXPECT_EQ(s.choices, "true|false");
        break;
      case OptionType::kChoice:
        EXPECT_LT(s.default_value, OptionChoices(s).size());
        EXPECT_GE(OptionChoices(s).size(), 2u);
        break;
    }
  }
}

TEST(OptionsSchemaTest, ReadWhenGatesAreChoicesWithThoseValues) {
  for (const OptionSpec& s : kOptionSchema) {
    if (s.read_when.empty()) continue;
    SCOPED_TRACE(std::string(s.name));
    const OptionSpec* gate = FindOption(s.read_when);
    ASSERT_NE(gate, nullptr);
    EXPECT_TRUE(gate->type == OptionType::kChoice ||
                gate->type == OptionType::kBool);
    EXPECT_NE(gate->choices.find(s.read_when_values), std::string_view::npos);
    EXPECT_FALSE(s.read_when_reason.empty());
  }
}

TEST(OptionsSchemaTest, OptionDefaultIsConstantEvaluated) {
  // A misspelt name in a struct initializer fails to compile where the
  // default is constant-evaluated; here the value itself.
  static_assert(OptionDefault("learning_rate") == 3e-4);
  static_assert(OptionDefault("epochs") == 10);
  EXPECT_EQ(FindOption("no_such_option"), nullptr);
}

TEST(OptionsSchemaTest, RangeMessagesNameFieldValueAndRange) {
  const OptionSpec& lr = *FindOption("learning_rate");
  EXPECT_TRUE(CheckOptionRange("ppo", "learning_rate", lr, 1).ok());
  EXPECT_EQ(CheckOptionRange("ppo", "learning_rate", lr, 0).message(),
            "ppo option learning_rate = 0 is outside (0, 1]");
  EXPECT_EQ(
      CheckOptionRange("ppo", "adam_eps", *FindOption("adam_eps"), 0).message(),
      "ppo option adam_eps = 0 must be > 0 and finite");
  EXPECT_EQ(
      CheckOptionRange("ppo", "cpu_threads", *FindOption("cpu_threads"), -1)
          .message(),
      "ppo option cpu_threads = -1 must be >= 0");
  EXPECT_FALSE(InOptionRange(*FindOption("value_coef"), kUnbounded));
}

TEST(OptionsSchemaTest, DefaultTextAndNumbers) {
  EXPECT_EQ(OptionDefaultText(*FindOption("learning_rate")), "0.0003");
  EXPECT_EQ(OptionDefaultText(*FindOption("adam_eps")), "1e-05");
  EXPECT_EQ(OptionDefaultText(*FindOption("batch_size")), "2048");
  EXPECT_EQ(OptionDefaultText(*FindOption("lr_schedule")), "constant");
  EXPECT_EQ(OptionDefaultText(*FindOption("sample_with_replacement")), "false");
  EXPECT_EQ(FormatOptionNumber(1e15), "1000000000000000");
  EXPECT_EQ(FormatOptionNumber(kUnbounded), "inf");
}

TEST(OptionsSchemaTest, GeneratedSectionNeedsBothMarkersInOrder) {
  const std::string begin(kOptionsTableBegin);
  const std::string end(kOptionsTableEnd);
  absl::StatusOr<std::string> ok =
      WithGeneratedOptionsTable("intro\n" + begin + "\nold\n" + end + "\nx\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok,
            "intro\n" + begin + "\n" + OptionsMarkdownTable() + end + "\nx\n");
  const absl::StatusOr<std::string> none =
      WithGeneratedOptionsTable("no markers\n");
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("marker line '" + begin + "' is missing"));
  const absl::StatusOr<std::string> reversed =
      WithGeneratedOptionsTable(end + "\n" + begin + "\n");
  EXPECT_FALSE(reversed.ok());
  EXPECT_EQ(reversed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(reversed.status().message()),
              HasSubstr("comes before its BEGIN marker"));
  const absl::StatusOr<std::string> twice =
      WithGeneratedOptionsTable(begin + "\n" + begin + "\n" + end + "\n");
  EXPECT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.status().message()),
              HasSubstr("marker line '" + begin + "' appears twice"));
}

TEST(OptionsSchemaTest, TableHasOneRowPerOption) {
  const std::string table = OptionsMarkdownTable();
  size_t rows = 0;
  for (char c : table) rows += c == '\n' ? 1 : 0;
  EXPECT_EQ(rows, std::size(kOptionSchema) + 2);  // header and rule
  EXPECT_NE(table.find("| `learning_rate` | float | (0, 1] | 0.0003 |"),
            std::string::npos);
}

}  // namespace
}  // namespace ristretto
