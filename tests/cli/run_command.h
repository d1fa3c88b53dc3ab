// Runs a shell command line for the CLI tests and captures its standard
// output (callers add "2>&1" to capture stderr too) and exit code.
// Thread-compatible.
#ifndef RISTRETTO_TESTS_CLI_RUN_COMMAND_H_
#define RISTRETTO_TESTS_CLI_RUN_COMMAND_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace ristretto::test_util {

struct CommandResult {
  int exit_code = -1;  // -1: could not start, or killed by a signal
  std::string output;  // what the command wrote to stdout
};

inline CommandResult RunCommand(const std::string& command_line) {
  CommandResult result;
  FILE* pipe = popen(command_line.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.output.append(buffer, got);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace ristretto::test_util

#endif  // RISTRETTO_TESTS_CLI_RUN_COMMAND_H_
