// `ristretto env replay|bench|demo`: golden replays, the env's speed and a
// demo of fixed policies. Returns the process exit status and prints
// errors to stderr.
#ifndef RISTRETTO_CLI_ENV_COMMANDS_H_
#define RISTRETTO_CLI_ENV_COMMANDS_H_

namespace ristretto::cli {

// `ristretto env replay|bench|demo`; argv[first] is the verb.
int RunEnvCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_ENV_COMMANDS_H_
