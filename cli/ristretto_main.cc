// The `ristretto` command: dataset import/info/synth/ls, env
// replay/bench/demo, train, backtest, study
// create/start/stop/ls/show/best/export, up.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/backtest_command.h"
#include "cli/command_line.h"
#include "cli/dataset_commands.h"
#include "cli/env_commands.h"
#include "cli/study_commands.h"
#include "cli/train_command.h"
#include "cli/up_command.h"
#include "common/log.h"
#include "common/text_util.h"

namespace {

constexpr char kUsage[] =
    "usage: ristretto <group> <command> [options]\n"
    "\n"
    "  dataset import --csv-dir DIR --interval 5m --out FILE\n"
    "                 [--max-ffill 3] [--on-long-gap split|fail]\n"
    "                 [--min-qty FILE] [--min-domain-rows N]\n"
    "                 [--db DSN --data-dir DIR]   (also registers it)\n"
    "  dataset synth  --out FILE [--assets 7] [--rows 10000] [--interval 30m]\n"
    "                 [--seed 1] [--predictability 0]\n"
    "  dataset info   FILE\n"
    "  dataset ls     [--db DSN]\n"
    "  env replay     CASE_DIR [--copies 1]\n"
    "  env bench      [--assets 7] [--features 98] [--lookback 1]\n"
    "                 [--copies 1024] [--seconds 3] [--rows 20000]\n"
    "  env demo       [--seed 7] [--rows 6000] [--lookback 2]\n"
    "  train          [--dataset FILE | --synthetic-rows N --synthetic-seed S\n"
    "                 --predictability P] [--budget 100000] [--seed 1]\n"
    "                 [--envs 8] [--rollout 128] [--policy-hidden 512,512]\n"
    "                 [--lr 3e-4] [--epochs 10] [--minibatch 2048]\n"
    "                 [--lookback 1] [--eval-every N] [--out DIR --study S\n"
    "                 --trial T --fold K] [--export DIR] [--device cpu]\n"
    "  backtest       POLICY_DIR --dataset FILE [--from TS] [--to TS]\n"
    "                 [--out backtest] [--random-seeds 20] [--slippage-bps X]\n"
    "                 [--max-volume-share Y] [--threads 1]\n"
    "  study create   FILE [--name NAME]\n"
    "  study start    NAME [--wait]\n"
    "  study stop     NAME\n"
    "  study ls | show NAME | best NAME | export NAME --out DIR\n"
    "  study report   NAME --out DIR   (DIR/report.html: charts, statistics)\n"
    "                 (study and dataset ls take --db DSN or $RISTRETTO_DB,\n"
    "                 a libpq connection string)\n"
    "  up             [--study deploy/studies/small.yaml] [--data-dir DIR]\n"
    "                 [--actors 2] [--envs 16] [--slots N] [--export DIR]\n"
    "                 [--csv-dir DIR --interval 5m (+ import flags) |\n"
    "                 --dataset FILE]   (your own data: imported, registered\n"
    "                 and run by a study with `dataset: given`; without\n"
    "                 --study a built-in one)\n"
    "                 (PostgreSQL + coordinator + learner + actors; runs the\n"
    "                 study, prints the leaderboard, exports the best)\n"
    "\n"
    "ristretto GROUP COMMAND --help (or ristretto help GROUP COMMAND) lists "
    "a\ncommand's flags; ristretto GROUP --help its commands.\n";

// `ristretto help help` (or `help --help`).
constexpr char kHelpUsage[] =
    "usage: ristretto help [GROUP [COMMAND]]\n"
    "Prints the usage of the tool, of a GROUP's commands, or of one COMMAND "
    "with\nits flags (the same as ristretto GROUP COMMAND --help).\n";

// Runs the command argv[1] (argc >= 2).
int Dispatch(int argc, char** argv) {
  const std::string command = argv[1];
  if (command == "train") return ristretto::cli::RunTrainCommand(argc, argv, 2);
  if (command == "backtest") {
    return ristretto::cli::RunBacktestCommand(argc, argv, 2);
  }
  if (command == "up") return ristretto::cli::RunUpCommand(argc, argv, 2);
  if (command == "env") return ristretto::cli::RunEnvCommand(argc, argv, 2);
  if (command == "dataset") {
    return ristretto::cli::RunDatasetCommand(argc, argv, 2);
  }
  if (command == "study") return ristretto::cli::RunStudyCommand(argc, argv, 2);
  std::fprintf(stderr,
               "ristretto: unknown command group '%s' (see ristretto "
               "--help)\n",
               ristretto::EscapeForMessage(command).c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ristretto::log::Init(argv[0]);
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (ristretto::cli::IsHelpWord(command)) {
    if (command != "help" || argc == 2) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (ristretto::cli::IsHelpWord(argv[2])) {
      std::fputs(kHelpUsage, stdout);
      return 0;
    }
    // `ristretto help COMMAND...` is `ristretto COMMAND... --help`.
    std::vector<char*> args(argv, argv + argc);
    args.erase(args.begin() + 1);
    char help[] = "--help";
    args.push_back(help);
    return Dispatch(static_cast<int>(args.size()), args.data());
  }
  return Dispatch(argc, argv);
}
