#include "cli/train_command.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "common/status_macros.h"
#include "env/cv_split.h"
#include "env/dataset.h"
#include "env/market_data.h"
#include "learner/run_flags.h"
#include "learner/run_options.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/trainer.h"

namespace ristretto::cli {
namespace {

void PrintEvaluation(const char* label, const learner::EvaluationResult& e) {
  std::printf(
      "%-10s sharpe %7.3f  (buy&hold %7.3f, score %+7.3f)  return %+7.2f%% "
      "(buy&hold %+7.2f%%)  max_dd %5.2f%%  trades %lld  fees %.2f  "
      "turnover %.2f  exposure %4.1f%%\n",
      label, e.sharpe, e.benchmark_sharpe, e.score, 100 * e.total_return,
      100 * e.benchmark_return, 100 * e.max_drawdown,
      static_cast<long long>(e.trades), e.fees, e.turnover, 100 * e.exposure);
}

absl::Status Train(const Args& args) {
  // The run-option flags (--lr, --epochs, --lookback, ...) and their
  // defaults are the run-options schema's (learner::RunOptionsFromFlags), the
  // same as the stand-alone learner's and a study's runs.
  std::set<std::string> known = {"dataset",
                                 "synthetic-rows",
                                 "synthetic-assets",
                                 "synthetic-seed",
                                 "predictability",
                                 "validation-share",
                                 "eval-every",
                                 "out",
                                 "study",
                                 "trial",
                                 "fold",
                                 "export",
                                 "device",
                                 "quiet"};
  for (const std::string& flag : learner::RunFlagNames()) known.insert(flag);
  RETURN_IF_ERROR(args.CheckKnown(known));
  learner::DatasetSource source;
  if (args.Has("dataset")) {
    ASSIGN_OR_RETURN(source.file, args.RequiredString("dataset"));
  }
  ASSIGN_OR_RETURN(source.synthetic_rows, args.Int("synthetic-rows", 8678));
  ASSIGN_OR_RETURN(source.synthetic_assets,
                   args.Int("synthetic-assets", source.synthetic_assets));
  ASSIGN_OR_RETURN(source.synthetic_seed,
                   args.Int("synthetic-seed", source.synthetic_seed));
  ASSIGN_OR_RETURN(source.predictability,
                   args.Double("predictability", source.predictability));
  ASSIGN_OR_RETURN(env::Dataset dataset, learner::LoadDataset(source));
  ASSIGN_OR_RETURN(auto market, env::MarketData::FromDataset(dataset));

  std::map<std::string, std::string> run_flags;
  for (const std::string& flag : learner::RunFlagNames()) {
    if (!args.Has(flag)) continue;
    ASSIGN_OR_RETURN(run_flags[flag], args.RequiredString(flag));
  }
  ASSIGN_OR_RETURN(learner::TrainerOptions o,
                   learner::RunOptionsFromFlags(run_flags));
  ASSIGN_OR_RETURN(o.ppo.device, args.String("device", o.ppo.device));
  ASSIGN_OR_RETURN(o.eval_every_env_steps, args.Int("eval-every", 0));
  o.dataset_id = dataset.ComputeId();
  o.feature_names = dataset.feature_names;

  ASSIGN_OR_RETURN(double validation_share,
                   args.Double("validation-share", 0.5));
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

  ASSIGN_OR_RETURN(std::string out, args.String("out", ""));
  if (!out.empty()) {
    ASSIGN_OR_RETURN(std::string study, args.String("study", "local"));
    ASSIGN_OR_RETURN(std::string trial, args.String("trial", "trial-0"));
    ASSIGN_OR_RETURN(int64_t fold, args.Int("fold", 0));
    o.run_dir =
        learner::RunDirectory(out, study, trial, static_cast<int>(fold));
  }
  const bool quiet = args.Has("quiet");
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
  if (!result.last_checkpoint.empty()) {
    std::printf("checkpoint: %s\n", result.last_checkpoint.c_str());
  }
  ASSIGN_OR_RETURN(std::string export_dir, args.String("export", ""));
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
  absl::StatusOr<Args> args = Args::Parse(argc, argv, first, {"quiet"});
  if (!args.ok()) {
    std::fprintf(stderr, "ristretto: %s\n",
                 std::string(args.status().message()).c_str());
    return 2;
  }
  absl::Status status = Train(*args);
  if (!status.ok()) {
    std::fprintf(stderr, "ristretto train: %s\n",
                 std::string(status.message()).c_str());
    return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace ristretto::cli
