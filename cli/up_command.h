// `ristretto up`: the whole stack on one workstation without Docker — a
// private PostgreSQL cluster in the data directory, the coordinator, one
// learner and N actors — runs a study to the end, prints the leaderboard and
// exports the best policy. Ctrl-C (or SIGTERM) stops everything cleanly:
// actors, then the learner (checkpoints and hands its runs back), then the
// coordinator, then PostgreSQL; running `up` again resumes the study.
#ifndef RISTRETTO_CLI_UP_COMMAND_H_
#define RISTRETTO_CLI_UP_COMMAND_H_

#include <cstdint>

namespace ristretto::coordinator {
struct StudyConfig;
}  // namespace ristretto::coordinator

namespace ristretto::cli {

// argv[first..] are the flags. Returns the process exit code.
int RunUpCommand(int argc, char** argv, int first);

// `up`'s default env copies per actor for `actors` actors sharing `slots`
// runs of `config`: the most (at most 16) whose chunks are trained within
// max_policy_lag versions, so that no chunk arrives stale
// (docs/performance.md, "Stale samples in ristretto up").
int64_t ActorEnvsForStudy(const coordinator::StudyConfig& config,
                          int64_t actors, int64_t slots);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_UP_COMMAND_H_
