#include "cli/args.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/text_util.h"

namespace ristretto::cli {

absl::StatusOr<Args> Args::Parse(int argc, char** argv, int first,
                                 const std::set<std::string>& boolean_flags) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      std::string name = arg.substr(2);
      std::string value;
      const size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (boolean_flags.count(name) != 0 || name == "help") {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "option --", EscapeForMessage(name), " needs a value"));
      }
      args.options_[name] = value;
    } else {
      args.positional_.push_back(arg);
    }
  }
  return args;
}

bool Args::Has(const std::string& name) const {
  return options_.count(name) != 0;
}

absl::StatusOr<std::string> Args::String(const std::string& name,
                                         const std::string& fallback) const {
  auto it = options_.find(name);
  return it == options_.end() ? fallback : it->second;
}

absl::StatusOr<std::string> Args::RequiredString(
    const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end() || it->second.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing required --", name));
  }
  return it->second;
}

absl::StatusOr<int64_t> Args::Int(const std::string& name,
                                  int64_t fallback) const {
  auto it = options_.find(name);
  if (it == options_.end()) return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(it->second, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " expects an integer, got '",
                     EscapeForMessage(it->second), "'"));
  }
  return v;
}

absl::StatusOr<double> Args::Double(const std::string& name,
                                    double fallback) const {
  auto it = options_.find(name);
  if (it == options_.end()) return fallback;
  double v = 0;
  if (!absl::SimpleAtod(it->second, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " expects a finite number, got '",
                     EscapeForMessage(it->second), "'"));
  }
  return v;
}

absl::Status Args::CheckKnown(const std::set<std::string>& known) const {
  for (const auto& [name, value] : options_) {
    if (known.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option --", EscapeForMessage(name)));
    }
  }
  return absl::OkStatus();
}

}  // namespace ristretto::cli
