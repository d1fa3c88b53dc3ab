// The `ristretto` command: dataset import/info/synth, env replay/bench/demo.
// Later issues add train, study and up.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/env_commands.h"
#include "cli/train_command.h"

namespace {

constexpr char kUsage[] =
    "usage: ristretto <group> <command> [options]\n"
    "\n"
    "  dataset import --csv-dir DIR --interval 5m --out FILE\n"
    "                 [--max-ffill N] [--on-long-gap split|fail]\n"
    "                 [--min-qty FILE] [--min-domain-rows N]\n"
    "  dataset synth  --out FILE [--assets 7] [--rows 10000] [--interval 30m]\n"
    "                 [--seed 1] [--predictability 0]\n"
    "  dataset info   FILE\n"
    "  env replay     CASE_DIR [--copies 1]\n"
    "  env bench      [--assets 7] [--features 98] [--lookback 1]\n"
    "                 [--copies 1024] [--seconds 3] [--rows 20000]\n"
    "  env demo       [--seed 7] [--rows 6000] [--lookback 2]\n"
    "  train          [--dataset FILE | --synthetic-rows N --synthetic-seed S\n"
    "                 --predictability P] [--budget 30000] [--seed 1]\n"
    "                 [--envs 8] [--rollout 128] [--policy-hidden 512,512]\n"
    "                 [--lr 3e-4] [--epochs 16] [--minibatch 2048]\n"
    "                 [--lookback 2] [--eval-every N] [--out DIR --study S\n"
    "                 --trial T --fold K] [--export DIR] [--device cpu]\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "train") == 0) {
    return ristretto::cli::RunTrainCommand(argc, argv, 2);
  }
  if (argc < 3 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string group = argv[1];
  if (group == "env") return ristretto::cli::RunEnvCommand(argc, argv, 2);
  if (group == "dataset")
    return ristretto::cli::RunDatasetCommand(argc, argv, 2);
  std::fprintf(stderr, "ristretto: unknown command group '%s'\n\n%s",
               group.c_str(), kUsage);
  return 2;
}
