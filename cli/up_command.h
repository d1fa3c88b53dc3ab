// `ristretto up`: the whole stack on one workstation without Docker — a
// private PostgreSQL cluster in the data directory, the coordinator, one
// learner and N actors — runs a study to the end, prints the leaderboard and
// exports the best policy. Ctrl-C (or SIGTERM) stops everything cleanly:
// actors, then the learner (checkpoints and hands its runs back), then the
// coordinator, then PostgreSQL; running `up` again resumes the study.
// Flags and printing only: the stack is ops::LocalStack (ops/local_stack.h).
#ifndef RISTRETTO_CLI_UP_COMMAND_H_
#define RISTRETTO_CLI_UP_COMMAND_H_

namespace ristretto::cli {

// argv[first..] are the flags. Returns the process exit code.
int RunUpCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_UP_COMMAND_H_
