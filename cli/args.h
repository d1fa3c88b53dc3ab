// Minimal command-line parsing for the `ristretto` subcommands: positional
// arguments plus `--name value` / `--name=value` / `--flag` options, with
// typed getters that return clear errors. Only *_main.cc files use it.
// Not thread-safe.
#ifndef RISTRETTO_CLI_ARGS_H_
#define RISTRETTO_CLI_ARGS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ristretto::cli {

class Args {
 public:
  // Parses argv[first..argc). Options named in `boolean_flags` take no value;
  // neither does --help, on every command (so `--help` alone is never
  // "missing its value": callers check Has("help") before anything else).
  // Errors: kInvalidArgument for an option missing its value.
  static absl::StatusOr<Args> Parse(int argc, char** argv, int first,
                                    const std::set<std::string>& boolean_flags);

  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(const std::string& name) const;

  // Typed getters; `fallback` when absent. kInvalidArgument if malformed.
  absl::StatusOr<std::string> String(const std::string& name,
                                     const std::string& fallback) const;
  absl::StatusOr<std::string> RequiredString(const std::string& name) const;
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback) const;
  absl::StatusOr<double> Double(const std::string& name, double fallback) const;

  // kInvalidArgument naming the first option not in `known` (typos must not
  // be silently ignored).
  absl::Status CheckKnown(const std::set<std::string>& known) const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string> options_;
};

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_ARGS_H_
