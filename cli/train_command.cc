#include "cli/train_command.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "common/blas_thread_tuner.h"
#include "common/runtime_policy.h"
#include "common/status_macros.h"
#include "env/cv_split.h"
#include "env/dataset.h"
#include "env/market_data.h"
#include "learner/run_flags.h"
#include "learner/run_options.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/torch_runtime.h"
#include "learner/torch/trainer.h"

// Besides these, `train` reads --dataset, --predictability, --out, --study
// and --export (cli/common_flags.cc) and the run-option flags of the schema
// (learner::RunFlagNames: --lr, --budget, --seed, ...).
ABSL_FLAG(int64_t, synthetic_rows, 8678,
          "bars of the synthetic market (without --dataset)");
ABSL_FLAG(int64_t, synthetic_assets,
          ristretto::learner::DatasetSource{}.synthetic_assets,
          "assets of the synthetic market");
ABSL_FLAG(int64_t, synthetic_seed,
          ristretto::learner::DatasetSource{}.synthetic_seed,
          "seed of the synthetic market");
ABSL_FLAG(double, validation_share, 0.5,
          "the share of the rows (the last ones) that validates, in (0, 1)");
ABSL_FLAG(int64_t, eval_every, 0,
          "evaluate every this many env steps (0: only at the end)");
ABSL_FLAG(std::string, trial, "trial-0",
          "the trial name in the run directory (with --out)");
ABSL_FLAG(int64_t, fold, 0,
          "the fold number in the run directory (with --out)");
ABSL_FLAG(std::string, device, ristretto::learner::PpoOptions{}.device,
          "where the networks train: cpu or cuda[:N]");
ABSL_FLAG(bool, quiet, false, "no line per update");
ABSL_FLAG(bool, reproducible, true,
          "gradient steps run OpenBLAS with its full thread count, so the "
          "same seed trains bit for bit the same on this CPU; false: the "
          "count (1 or full) is chosen per step by measuring, up to 2-5x "
          "faster updates on a busy machine, results then differ in the "
          "last bits between runs and drift apart");

namespace ristretto::cli {
namespace {

constexpr char kTrainUsage[] =
    "usage: ristretto train [--dataset FILE | --synthetic-rows N "
    "--synthetic-seed S\n"
    "           --predictability P] [--budget 100000] [--seed 1] [--envs 8]\n"
    "           [--rollout 128] [--policy-hidden 512,512] [--lr 3e-4] "
    "[--epochs 10]\n"
    "           [--minibatch 2048] [--lookback 1] [--eval-every N]\n"
    "           [--out DIR --study S --trial T --fold K] [--export DIR] "
    "[--device cpu]\n"
    "           [--reproducible=false]\n"
    "One run end to end in this process: vector env, PPO, validation on the "
    "last\n--validation-share of the rows, checkpoints under --out, the best "
    "policy exported\nto --export.\n";

void PrintEvaluation(const char* label, const learner::EvaluationResult& e) {
  std::printf(
      "%-10s sharpe %7.3f  (buy&hold %7.3f, score %+7.3f)  return %+7.2f%% "
      "(buy&hold %+7.2f%%)  max_dd %5.2f%%  trades %lld  fees %.2f  "
      "turnover %.2f  exposure %4.1f%%\n",
      label, e.sharpe, e.benchmark_sharpe, e.score, 100 * e.total_return,
      100 * e.benchmark_return, 100 * e.max_drawdown,
      static_cast<long long>(e.trades), e.fees, e.turnover, 100 * e.exposure);
}

absl::Status Train(const ParsedCommandLine& parsed) {
  learner::DatasetSource source;
  source.file = absl::GetFlag(FLAGS_dataset);
  source.synthetic_rows = absl::GetFlag(FLAGS_synthetic_rows);
  source.synthetic_assets = absl::GetFlag(FLAGS_synthetic_assets);
  source.synthetic_seed = absl::GetFlag(FLAGS_synthetic_seed);
  source.predictability = absl::GetFlag(FLAGS_predictability);
  ASSIGN_OR_RETURN(env::Dataset dataset, learner::LoadDataset(source));
  ASSIGN_OR_RETURN(auto market, env::MarketData::FromDataset(dataset));

  // The run-option flags (--lr, --epochs, --lookback, ...) and their
  // defaults are the run-options schema's (learner::RunOptionsFromFlags), the
  // same as the stand-alone learner's and a study's runs.
  ASSIGN_OR_RETURN(learner::TrainerOptions o,
                   learner::RunOptionsFromFlags(parsed.passed_through));
  o.ppo.device = absl::GetFlag(FLAGS_device);
  o.ppo.fixed_blas_threads = absl::GetFlag(FLAGS_reproducible);
  o.eval_every_env_steps = absl::GetFlag(FLAGS_eval_every);
  o.dataset_id = dataset.ComputeId();
  o.feature_names = dataset.feature_names;

  const double validation_share = absl::GetFlag(FLAGS_validation_share);
  if (!(validation_share > 0 && validation_share < 1)) {
    return absl::InvalidArgumentError("--validation-share must be in (0, 1)");
  }
  // Training rows first, the last validation_share of the rows validates;
  // every piece inside one of the dataset's contiguous domains (an imported
  // dataset has gaps), and a split that cannot work is refused here, before
  // anything trains.
  const int64_t T = market->num_rows;
  const int64_t lookback_rows = 2 * static_cast<int64_t>(o.env.lookback);
  if (o.episode_steps < 1 || o.env.lookback < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--episode (", o.episode_steps, ") and --lookback (",
                     o.env.lookback, ") must be >= 1"));
  }
  absl::StatusOr<env::DomainHoldout> holdout = env::SplitHoldoutByDomains(
      T, market->domains, validation_share, /*embargo_bars=*/0,
      o.episode_steps + lookback_rows, lookback_rows + 1);
  if (!holdout.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot split ", T, " rows (", market->domains.size(),
                     " domains) with --validation-share ", validation_share,
                     ", --episode ", o.episode_steps, ", --lookback ",
                     o.env.lookback, ": ", holdout.status().message()));
  }
  const int64_t split = holdout->split;
  o.train_domains = holdout->fold.train;
  o.validation_domains = holdout->fold.test;
  auto describe = [](const std::vector<env::Domain>& pieces, int64_t dropped) {
    int64_t rows = 0;
    for (const env::Domain& d : pieces) rows += d.size();
    std::string text = absl::StrCat(rows, " rows in ", pieces.size(), " piece",
                                    pieces.size() == 1 ? "" : "s");
    if (dropped > 0) {
      absl::StrAppend(&text, " (", dropped,
                      " rows in pieces too short left out)");
    }
    return text;
  };
  std::printf(
      "split: %zu domains; train %s; validation %s\n", market->domains.size(),
      describe(o.train_domains, holdout->train_rows_dropped).c_str(),
      describe(o.validation_domains, holdout->test_rows_dropped).c_str());

  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    std::string study = absl::GetFlag(FLAGS_study);
    if (study.empty()) study = "local";
    o.run_dir =
        learner::RunDirectory(out, study, absl::GetFlag(FLAGS_trial),
                              static_cast<int>(absl::GetFlag(FLAGS_fold)));
  }
  const bool quiet = absl::GetFlag(FLAGS_quiet);
  std::printf(
      "train: %d assets x %lld rows, training before row %lld, validation "
      "from it, obs %lld, budget %lld env steps, %d envs x %d steps per "
      "update\n",
      market->num_assets, static_cast<long long>(T),
      static_cast<long long>(split),
      static_cast<long long>(1 + market->num_assets) +
          static_cast<long long>(market->num_features) * o.env.lookback,
      static_cast<long long>(o.budget_env_steps), o.num_envs, o.rollout_steps);
  learner::TrainProgress progress = [quiet](const learner::TrainResult& r,
                                            const learner::UpdateStats& u) {
    if (!quiet) {
      std::printf(
          "  steps %8lld  v%-4lld  policy %+.4f  value %.4f  "
          "entropy %+.3f  kl %.4f  clip %.2f\n",
          static_cast<long long>(r.env_steps),
          static_cast<long long>(u.policy_version), u.policy_loss, u.value_loss,
          u.entropy, u.approx_kl, u.clip_fraction);
    }
    return true;
  };
  ASSIGN_OR_RETURN(learner::TrainResult result,
                   learner::Train(market, o, progress));
  for (const learner::EvaluationResult& e : result.evaluations) {
    PrintEvaluation(absl::StrCat("eval@", e.at_env_steps).c_str(), e);
  }
  std::printf(
      "time: total %.2f s = rollout %.2f s + update %.2f s + eval %.2f s "
      "(+ %.2f s setup)\n",
      result.total_seconds, result.rollout_seconds, result.update_seconds,
      result.eval_seconds,
      result.total_seconds - result.rollout_seconds - result.update_seconds -
          result.eval_seconds);
  if (const BlasThreadTuner& blas = BlasThreadTuner::Process();
      blas.active() && o.ppo.device == "cpu") {
    if (o.ppo.fixed_blas_threads) {
      std::printf(
          "blas: gradient steps ran with %d OpenBLAS threads (fixed: "
          "reproducible from the seed; --reproducible=false chooses 1 or %d "
          "per step by measuring, faster on a busy machine)\n",
          blas.max_threads(), blas.max_threads());
    } else if (blas.steps() > 0) {
      std::printf(
          "blas: %lld of %lld gradient steps ran with 1 OpenBLAS thread, the "
          "rest with %d (chosen per step by measuring; %s=off keeps %d)\n",
          static_cast<long long>(blas.single_thread_steps()),
          static_cast<long long>(blas.steps()), blas.max_threads(),
          BlasThreadTuner::kEnv, blas.max_threads());
    }
  }
  if (!result.last_checkpoint.empty()) {
    std::printf("checkpoint: %s\n", result.last_checkpoint.c_str());
  }
  const std::string export_dir = absl::GetFlag(FLAGS_export);
  if (result.best_evaluation.has_value()) {
    const learner::EvaluationResult& best = *result.best_evaluation;
    std::printf("best: eval@%lld, score %+.3f%s%s\n",
                static_cast<long long>(best.at_env_steps), best.score,
                result.best_policy_dir.empty() ? "" : ", policy ",
                result.best_policy_dir.c_str());
  }
  if (!export_dir.empty()) {
    ASSIGN_OR_RETURN(std::optional<learner::EvaluationResult> exported,
                     learner::ExportBestPolicy(result, export_dir));
    if (exported.has_value()) {
      std::printf(
          "exported the best policy (evaluated at step %lld, score %+.3f): "
          "%s/policy.pt (TorchScript) + contract.json\n",
          static_cast<long long>(exported->at_env_steps), exported->score,
          export_dir.c_str());
    } else {
      std::printf(
          "exported the final policy (no evaluation, step %lld): "
          "%s/policy.pt (TorchScript) + contract.json\n",
          static_cast<long long>(result.env_steps), export_dir.c_str());
    }
  }
  return absl::OkStatus();
}

}  // namespace

int RunTrainCommand(int argc, char** argv, int first) {
  const std::vector<std::string> run_flags = learner::RunFlagNames();
  const Command command{
      "train",
      kTrainUsage,
      AnyOf({FlagsDefinedIn({"cli/train_command.cc"}),
             FlagsOf(FLAGS_dataset, FLAGS_predictability, FLAGS_out,
                     FLAGS_study, FLAGS_export)}),
      /*max_positional=*/0,
      std::set<std::string>(run_flags.begin(), run_flags.end()),
      absl::StrCat("run options (the run-options schema, as ristretto-learner "
                   "and a study's runs):\n",
                   learner::RunFlagsHelp())};
  ParsedCommandLine parsed;
  if (const std::optional<int> exit_code =
          ParseCommand(command, argc, argv, first, &parsed)) {
    return *exit_code;
  }
  // The trainer's allocator, OpenBLAS and LibTorch threads
  // (common/runtime_policy.h) before anything allocates or starts threads.
  learner::ApplyTorchRuntimePolicy(RuntimePolicyFor(ProcessRole::kTrainer));
  const absl::Status status = Train(parsed);
  return status.ok() ? 0 : Fail(status, "train");
}

}  // namespace ristretto::cli
