// The `ristretto` command: dataset import/info/synth/ls, env
// replay/bench/demo, train, backtest, study
// create/start/stop/ls/show/best/export, up.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/backtest_command.h"
#include "cli/env_commands.h"
#include "cli/study_commands.h"
#include "cli/train_command.h"
#include "cli/up_command.h"
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
    "                 study, prints the leaderboard, exports the best)\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "train") == 0) {
    return ristretto::cli::RunTrainCommand(argc, argv, 2);
  }
  if (argc >= 2 && std::strcmp(argv[1], "backtest") == 0) {
    return ristretto::cli::RunBacktestCommand(argc, argv, 2);
  }
  if (argc >= 2 && std::strcmp(argv[1], "up") == 0) {
    return ristretto::cli::RunUpCommand(argc, argv, 2);
  }
  if (argc < 3 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string group = argv[1];
  if (group == "env") return ristretto::cli::RunEnvCommand(argc, argv, 2);
  if (group == "dataset")
    return ristretto::cli::RunDatasetCommandWithStore(argc, argv, 2);
  if (group == "study") return ristretto::cli::RunStudyCommand(argc, argv, 2);
  std::fprintf(stderr, "ristretto: unknown command group '%s'\n\n%s",
               ristretto::EscapeForMessage(group).c_str(), kUsage);
  return 2;
}
