// `ristretto dataset …`: the dataset files (dataset_file_commands.h) and, given
// a database (--db DSN or $RISTRETTO_DB), their registration with the
// coordinator's store (ops::RegisterDataset) and the list of registered
// datasets.
#ifndef RISTRETTO_CLI_DATASET_COMMANDS_H_
#define RISTRETTO_CLI_DATASET_COMMANDS_H_

namespace ristretto::cli {

// `ristretto dataset import|synth|info|ls`; argv[first] is the verb. `ls`
// lists the datasets registered in the store; `import` and `synth` given
// `--db DSN` (or `--data-dir DIR` with RISTRETTO_DB set) write their file
// (dataset_file_commands.h, RunDatasetFileCommand), then ops::RegisterDataset
// it. Exit status and errors as RunStudyCommand.
int RunDatasetCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_DATASET_COMMANDS_H_
