// Command lines of the ristretto process binaries, parsed into the
// ABSL_FLAGs linked into the binary (each flag declared once, with its
// type, default and help, next to the code that reads it).
//
// Why not absl::ParseCommandLine (Abseil 20220623): it exits the process
// itself (status 1, also after --help), echoes an unknown flag's name raw
// (an escape sequence in argv repaints the terminal), accepts stray
// positional arguments, and cannot restrict a command line to a subset of
// the registered flags. This parser uses Abseil's public reflection API
// (absl::FindCommandLineFlag, CommandLineFlag::ParseFrom) for the typed
// parsing, and returns errors as absl::Status so that every binary keeps its
// conventions: usage on stdout and exit 0 for --help, a one-line message
// naming the flag and exit 2 for a bad command line.
//
// Names: C++ identifiers cannot hold a dash, so ABSL_FLAG(int64_t, tick_ms,
// ...) is the flag --tick-ms on the command line (--tick_ms is accepted
// too), and messages and help write it with dashes.
//
// Accepted forms: --name=value, --name value, and for bool flags --name
// (true), --noname or --no-name (false) and --name=true|false (a bool flag
// never takes the next argument). "--" ends the flags: everything after it is
// positional. A double flag must be finite.
//
// Thread-safety: parsing sets process-global flags; call it from main()
// before any thread reads a flag. FlagsHelp and FlagsDefinedIn are
// thread-safe.
#ifndef RISTRETTO_COMMON_FLAGS_H_
#define RISTRETTO_COMMON_FLAGS_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ristretto {

// Which registered flags a command line may set (and FlagsHelp lists).
using FlagFilter = std::function<bool(const absl::CommandLineFlag&)>;

// Every flag registered in the process.
bool AnyFlag(const absl::CommandLineFlag& flag);

// The flags defined (ABSL_FLAG) in a source file whose path ends with one of
// `files` at a '/' boundary, e.g. {"actor/actor_main.cc"}: a binary with
// several commands gives each command the flags of its own files.
FlagFilter FlagsDefinedIn(std::vector<std::string> files);

struct ParsedCommandLine {
  bool help = false;       // --help: the caller prints FlagsHelp(accepted)
  bool help_full = false;  // --helpfull: FlagsHelp(AnyFlag)
  std::vector<std::string> positional;  // in order
  // The pass-through flags given (name without "--" -> text, the last one
  // wins), unparsed.
  std::map<std::string, std::string> passed_through;
  // The registered flags the command line set, by their registered names
  // ("tick_ms"), those given an empty value (--name=) included: what tells
  // an empty text given from a flag not given.
  std::set<std::string> given;
};

// Parses argv[first, argc) into the registered flags that `accepted` lets
// through; the first error stops parsing (flags set before it stay set).
// Errors, all kInvalidArgument with a one-line message naming the flag with
// its value escaped (EscapeForMessage):
//   "unknown option --NAME"  (not registered, retired, or not accepted)
//   "option --NAME needs a value"  (a non-bool flag last on the line)
//   "--NAME expects an integer|a finite number|true or false, got 'V'"
//     (Abseil's own reason appended where it gives one).
// --help and --helpfull set the fields above and parsing goes on, so a help
// request with a bad flag still reports the bad flag.
//
// `pass_through` names flags (as written, without "--") that are not
// ABSL_FLAGs but another table's, e.g. the run-options schema's
// (learner::RunFlagNames(), validated by learner::RunOptionsFromFlags): they
// take a value like a non-bool flag and land in `passed_through`. A
// registered ABSL_FLAG of the same name wins.
absl::StatusOr<ParsedCommandLine> ParseFlags(
    int argc, char** argv, int first, const FlagFilter& accepted,
    const std::set<std::string>& pass_through = {});

// `usage` (ends with a newline) followed by one entry per flag `shown`
// (retired flags skipped), sorted by name:
//   "  --name (default: VALUE, or unset)\n      help\n".
std::string FlagsHelp(absl::string_view usage, const FlagFilter& shown);

// The command-line step of a process binary's main(): parses
// argv[1, argc) with every registered flag accepted and no positional
// argument allowed. Returns the exit status when the process must end now:
// 0 after printing the help text (`usage` then the flags) to stdout for
// --help/--helpfull, 2 after printing the one line "PROGRAM: MESSAGE (see
// --help)" to stderr for a bad command line. std::nullopt: the flags are set,
// go on.
// `pass_through` and `passed_through` (may be null when `pass_through` is
// empty): as ParseFlags.
std::optional<int> HandleProcessCommandLine(
    absl::string_view program, absl::string_view usage, int argc, char** argv,
    const std::set<std::string>& pass_through = {},
    std::map<std::string, std::string>* passed_through = nullptr);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_FLAGS_H_
