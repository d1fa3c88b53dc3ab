#include "common/flags.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/text_util.h"

namespace ristretto {
namespace {

// What a value of `flag`'s type looks like, for the error message.
// The command-line spelling of a flag: dashes for the identifier's underscores.
std::string DisplayName(absl::string_view name) {
  return absl::StrReplaceAll(name, {{"_", "-"}});
}

const char* ExpectedValue(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "true or false";
  if (flag.IsOfType<int64_t>() || flag.IsOfType<int32_t>() ||
      flag.IsOfType<uint64_t>() || flag.IsOfType<uint32_t>() ||
      flag.IsOfType<std::optional<int64_t>>()) {
    return "an integer";
  }
  if (flag.IsOfType<double>() || flag.IsOfType<float>() ||
      flag.IsOfType<std::optional<double>>()) {
    return "a finite number";
  }
  return "a valid value";
}

bool IsFloating(const absl::CommandLineFlag& flag) {
  return flag.IsOfType<double>() || flag.IsOfType<float>() ||
         flag.IsOfType<std::optional<double>>();
}

absl::Status BadValue(const absl::CommandLineFlag& flag,
                      absl::string_view value, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--", DisplayName(flag.Name()), " expects ", ExpectedValue(flag),
      ", got '", EscapeForMessage(value), "'",
      reason.empty() ? "" : absl::StrCat(" (", EscapeForMessage(reason), ")")));
}

// Sets `flag` from `value`; Abseil's parser decides what the type accepts,
// and a floating-point flag must also be finite (Abseil takes "nan", "inf").
absl::Status SetFlag(absl::CommandLineFlag& flag, absl::string_view value) {
  if (IsFloating(flag) && !value.empty()) {
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
      return BadValue(flag, value, "");
    }
  }
  std::string error;
  if (!flag.ParseFrom(value, &error)) {
    // Abseil's message repeats the value and the underscore name before
    // "; " and the type's own reason (if any): keep only the reason.
    const size_t reason = error.find("; ");
    return BadValue(flag, value,
                    reason == std::string::npos
                        ? absl::string_view()
                        : absl::string_view(error).substr(reason + 2));
  }
  return absl::OkStatus();
}

}  // namespace

bool AnyFlag(const absl::CommandLineFlag& /*flag*/) { return true; }

FlagFilter FlagsDefinedIn(std::vector<std::string> files) {
  return [files = std::move(files)](const absl::CommandLineFlag& flag) {
    const std::string defined_in = flag.Filename();
    for (const std::string& file : files) {
      if (defined_in == file ||
          absl::EndsWith(defined_in, absl::StrCat("/", file))) {
        return true;
      }
    }
    return false;
  };
}

absl::StatusOr<ParsedCommandLine> ParseFlags(
    int argc, char** argv, int first, const FlagFilter& accepted,
    const std::set<std::string>& pass_through) {
  ParsedCommandLine out;
  // The registered, accepted flag called `name`, or nullptr.
  auto find = [&accepted](absl::string_view name) -> absl::CommandLineFlag* {
    absl::CommandLineFlag* flag =
        absl::FindCommandLineFlag(absl::StrReplaceAll(name, {{"-", "_"}}));
    if (flag == nullptr || flag->IsRetired() || !accepted(*flag)) {
      return nullptr;
    }
    return flag;
  };
  bool flags_ended = false;
  for (int i = first; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (!flags_ended && arg == "--") {
      flags_ended = true;
      continue;
    }
    if (flags_ended || arg.size() <= 2 || !absl::StartsWith(arg, "--")) {
      out.positional.emplace_back(arg);
      continue;
    }
    absl::string_view name = arg.substr(2);
    std::optional<absl::string_view> value;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (!value.has_value() && name == "help") {
      out.help = true;
      continue;
    }
    if (!value.has_value() && name == "helpfull") {
      out.help_full = true;
      continue;
    }
    absl::CommandLineFlag* flag = find(name);
    if (flag == nullptr && !value.has_value() && absl::StartsWith(name, "no")) {
      // --noNAME and --no-NAME clear the bool flag NAME.
      absl::string_view base = name.substr(2);
      if (absl::StartsWith(base, "-") || absl::StartsWith(base, "_")) {
        base.remove_prefix(1);
      }
      absl::CommandLineFlag* negated = find(base);
      if (negated != nullptr && negated->IsOfType<bool>()) {
        if (absl::Status s = SetFlag(*negated, "false"); !s.ok()) return s;
        out.given.emplace(negated->Name());
        continue;
      }
    }
    if (flag == nullptr && pass_through.count(std::string(name)) != 0) {
      if (!value.has_value()) {
        if (i + 1 >= argc) {
          return absl::InvalidArgumentError(absl::StrCat(
              "option --", EscapeForMessage(name), " needs a value"));
        }
        value = argv[++i];
      }
      out.passed_through[std::string(name)] = std::string(*value);
      continue;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option --", EscapeForMessage(name)));
    }
    if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "option --", EscapeForMessage(name), " needs a value"));
      }
    }
    if (absl::Status s = SetFlag(*flag, *value); !s.ok()) return s;
    out.given.emplace(flag->Name());
  }
  return out;
}

std::string FlagsHelp(absl::string_view usage, const FlagFilter& shown) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!flag->IsRetired() && shown(*flag)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const absl::CommandLineFlag* a, const absl::CommandLineFlag* b) {
              return a->Name() < b->Name();
            });
  std::string text(usage);
  if (!flags.empty()) absl::StrAppend(&text, "\nflags:\n");
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string default_value = flag->DefaultValue();
    absl::StrAppend(&text, "  --", DisplayName(flag->Name()), " (default: ",
                    default_value.empty() ? "unset" : default_value, ")\n",
                    "      ", flag->Help(), "\n");
  }
  return text;
}

std::optional<int> HandleProcessCommandLine(
    absl::string_view program, absl::string_view usage, int argc, char** argv,
    const std::set<std::string>& pass_through,
    std::map<std::string, std::string>* passed_through) {
  absl::StatusOr<ParsedCommandLine> parsed =
      ParseFlags(argc, argv, 1, AnyFlag, pass_through);
  absl::Status error = parsed.status();
  if (error.ok() && !parsed->positional.empty()) {
    error = absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '",
                     EscapeForMessage(parsed->positional.front()), "'"));
  }
  if (!error.ok()) {
    std::fprintf(stderr, "%.*s: %.*s (see --help)\n",
                 static_cast<int>(program.size()), program.data(),
                 static_cast<int>(error.message().size()),
                 error.message().data());
    return 2;
  }
  if (parsed->help || parsed->help_full) {
    const std::string text = FlagsHelp(usage, AnyFlag);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return 0;
  }
  if (passed_through != nullptr) {
    *passed_through = std::move(parsed->passed_through);
  }
  return std::nullopt;
}

}  // namespace ristretto
