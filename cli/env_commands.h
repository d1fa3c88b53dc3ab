// `ristretto env ...` and `ristretto dataset ...` subcommands. Each returns
// the process exit status and prints errors to stderr.
#ifndef RISTRETTO_CLI_ENV_COMMANDS_H_
#define RISTRETTO_CLI_ENV_COMMANDS_H_

namespace ristretto::cli {

// argv[first] is the verb after the group ("replay", "import", ...).
int RunEnvCommand(int argc, char** argv, int first);
int RunDatasetCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_ENV_COMMANDS_H_
