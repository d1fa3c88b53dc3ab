#include "cli/command_line.h"

#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/text_util.h"

namespace ristretto::cli {

FlagFilter AnyOf(std::vector<FlagFilter> filters) {
  return [filters = std::move(filters)](const absl::CommandLineFlag& flag) {
    for (const FlagFilter& f : filters) {
      if (f(flag)) return true;
    }
    return false;
  };
}

std::string CommandHelp(const Command& command) {
  std::string text = FlagsHelp(command.usage, command.flags);
  if (!command.pass_through_help.empty()) {
    absl::StrAppend(&text, "\n", command.pass_through_help);
  }
  return text;
}

bool IsHelpWord(const std::string& word) {
  return word == "help" || word == "--help" || word == "-h" ||
         word == "--helpfull";
}

std::optional<int> GroupVerb(int argc, char** argv, int first,
                             const char* usage, std::string* verb) {
  if (first >= argc) {
    std::fputs(usage, stderr);
    return 2;
  }
  *verb = argv[first];
  if (IsHelpWord(*verb)) {
    std::fputs(usage, stdout);
    return 0;
  }
  return std::nullopt;
}

int Fail(const absl::Status& status, const std::string& command) {
  std::fprintf(stderr, "ristretto%s%s: %s\n", command.empty() ? "" : " ",
               command.c_str(), std::string(status.message()).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

std::optional<int> ParseCommand(const Command& command, int argc, char** argv,
                                int first, ParsedCommandLine* parsed) {
  absl::StatusOr<ParsedCommandLine> result =
      ParseFlags(argc, argv, first, command.flags, command.pass_through);
  absl::Status error = result.status();
  if (error.ok() && result->positional.size() > command.max_positional) {
    error = absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '",
        EscapeForMessage(result->positional[command.max_positional]), "'"));
  }
  if (!error.ok()) {
    std::fprintf(stderr, "ristretto %s: %s (see ristretto %s --help)\n",
                 command.name.c_str(), std::string(error.message()).c_str(),
                 command.name.c_str());
    return 2;
  }
  if (result->help_full) {
    const std::string text = FlagsHelp(command.usage, AnyFlag);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return 0;
  }
  if (result->help) {
    const std::string text = CommandHelp(command);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return 0;
  }
  *parsed = *std::move(result);
  return std::nullopt;
}

}  // namespace ristretto::cli
