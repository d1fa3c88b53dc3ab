// `ristretto train`: one run end to end in a single process.
#ifndef RISTRETTO_CLI_TRAIN_COMMAND_H_
#define RISTRETTO_CLI_TRAIN_COMMAND_H_

namespace ristretto::cli {

// argv[first] is the first option after "train".
int RunTrainCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_TRAIN_COMMAND_H_
