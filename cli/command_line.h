// The command line of one `ristretto` subcommand: which ABSL_FLAGs it
// accepts, its usage text, and the parsing step every subcommand shares
// (ristretto::ParseFlags with the subcommand's filter, --help, errors).
//
// The flags themselves are ABSL_FLAGs, each declared once (type, default,
// help) next to the code that reads it; a flag that several subcommands read
// lives in cli/common_flags.cc. Flags are process-global, so a subcommand's
// filter decides which of them its command line may set: `ristretto env
// bench --out x` is "unknown option --out", although `dataset synth` has an
// --out.
//
// Thread-safety: ParseCommand sets process-global flags; call it from the
// main thread before any other thread reads a flag.
#ifndef RISTRETTO_CLI_COMMAND_LINE_H_
#define RISTRETTO_CLI_COMMAND_LINE_H_

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "common/flags.h"

namespace ristretto::cli {

// The flags `flags` (ABSL_FLAG objects, e.g. FLAGS_db), matched by name.
// Compile-time checked: a flag that does not exist does not build.
template <typename... T>
FlagFilter FlagsOf(const absl::Flag<T>&... flags) {
  std::set<std::string> names = {
      std::string(absl::GetFlagReflectionHandle(flags).Name())...};
  return [names = std::move(names)](const absl::CommandLineFlag& flag) {
    return names.count(std::string(flag.Name())) != 0;
  };
}

// The flags that at least one of `filters` lets through.
FlagFilter AnyOf(std::vector<FlagFilter> filters);

// One subcommand of the tool.
struct Command {
  std::string name;       // "env bench": in messages and help
  std::string usage;      // "usage: ristretto env bench ...\n" (+ what it does)
  FlagFilter flags = {};  // the ABSL_FLAGs its command line may set
  // Positional arguments allowed (more are "unexpected argument 'X'"); the
  // command itself reports missing ones with its own usage line.
  size_t max_positional = 0;
  // Flags of another table, passed through unparsed (ParseFlags), and the
  // help text that describes them (appended to --help).
  std::set<std::string> pass_through = {};
  std::string pass_through_help = {};
};

// The parsing step of a subcommand: parses argv[first, argc) with
// `command.flags` accepted. Returns the exit status when the subcommand must
// end now:
//  * 0 after --help: CommandHelp(command) on stdout (--helpfull: every flag
//    of the tool);
//  * 2 after a bad command line (unknown or refused flag, malformed value,
//    a flag without its value, too many positional arguments): the one line
//    "ristretto NAME: MESSAGE (see ristretto NAME --help)" on stderr, the
//    offending text escaped.
// std::nullopt: the flags are set and `parsed` holds the positional
// arguments and the passed-through flags; run the command.
std::optional<int> ParseCommand(const Command& command, int argc, char** argv,
                                int first, ParsedCommandLine* parsed);

// `command.usage`, then its flags (FlagsHelp), then `pass_through_help`.
std::string CommandHelp(const Command& command);

// True for the words that ask for help instead of naming a command: "help",
// "--help", "-h", "--helpfull".
bool IsHelpWord(const std::string& word);

// The verb of a command group (`ristretto study VERB ...`) at argv[first].
// Without one, prints the group's `usage` on stderr and returns exit status
// 2; for a help word, prints it on stdout and returns 0; otherwise sets
// `*verb` and returns std::nullopt (go on).
std::optional<int> GroupVerb(int argc, char** argv, int first,
                             const char* usage, std::string* verb);

// The end of a command that failed with `status` (not OK): prints
// "ristretto COMMAND: MESSAGE" ("ristretto: MESSAGE" when `command` is
// empty) on stderr and returns the exit status, 2 for bad usage or input
// (kInvalidArgument), 1 otherwise.
int Fail(const absl::Status& status, const std::string& command = "");

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_COMMAND_LINE_H_
