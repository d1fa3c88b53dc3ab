#include "learner/torch/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "env/vector_env.h"
#include "learner/objective.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/checkpoint.h"
#include "learner/torch/ppo.h"
#include "learner/trajectory.h"

namespace ristretto::learner {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

absl::StatusOr<EvaluationResult> EvaluatePolicy(
    ActorCritic& model, const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options,
    const std::vector<env::Domain>& domains) {
  const torch::Device device = model->parameters().front().device();
  const int D = model->obs_size();
  const int A = model->action_size();
  ActionFunction decide = [&](const float* obs, int copies, float* actions) {
    torch::NoGradGuard no_grad;
    const torch::Tensor x =
        torch::from_blob(const_cast<float*>(obs), {copies, D}, torch::kFloat32)
            .to(device);
    const torch::Tensor a =
        torch::tanh(model->PolicyMean(x)).to(torch::kCPU).contiguous();
    std::memcpy(actions, a.data_ptr<float>(),
                sizeof(float) * static_cast<size_t>(copies) * A);
  };
  try {
    return EvaluateActions(market, env_options, domains, decide);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("evaluating the policy: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<TrainResult> Train(std::shared_ptr<const env::MarketData> market,
                                  const TrainerOptions& options,
                                  const TrainProgress& progress) {
  const auto start = Clock::now();
  if (options.num_envs < 1 || options.rollout_steps < 1 ||
      options.budget_env_steps < 1) {
    return absl::InvalidArgumentError(
        "num_envs, rollout_steps and budget_env_steps must be >= 1");
  }
  RETURN_IF_ERROR(CheckLockbox(options));
  const std::string objective =
      options.objective.empty() ? kDefaultObjective : options.objective;
  RETURN_IF_ERROR(CheckObjective(objective));
  env::VectorEnvOptions vopts;
  vopts.env = options.env;
  vopts.num_copies = options.num_envs;
  vopts.mode = env::EpisodeMode::kTrain;
  vopts.episode_steps = options.episode_steps;
  vopts.domains = options.train_domains;
  vopts.seed = options.seed;
  ASSIGN_OR_RETURN(std::unique_ptr<env::VectorEnv> vec,
                   env::VectorEnv::Create(market, vopts));
  const int B = vec->num_copies();
  const int D = vec->observation_size();
  const int A = vec->num_assets();
  const int T = options.rollout_steps;

  TrainResult result;
  std::vector<std::string> symbols;
  for (const env::AssetMeta& a : market->assets) symbols.push_back(a.symbol);
  result.contract =
      PolicyContract::Make(options.env, options.network, std::move(symbols),
                           options.feature_names, options.dataset_id);
  result.contract.interval_seconds = market->interval_seconds;
  if (result.contract.obs_size != D) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature_names give an observation of ",
                     result.contract.obs_size, " values but the market gives ",
                     D, " (", market->num_features, " feature columns)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PpoLearner> learner,
                   PpoLearner::Create(D, A, options.network, options.ppo,
                                      options.budget_env_steps, options.seed));
  CheckpointState state;
  if (!options.run_dir.empty() && options.resume) {
    absl::StatusOr<std::string> latest = LatestCheckpoint(options.run_dir);
    if (latest.ok()) {
      ASSIGN_OR_RETURN(state,
                       LoadCheckpoint(*latest, result.contract, learner.get()));
      result.last_checkpoint = *latest;
    } else if (latest.status().code() != absl::StatusCode::kNotFound) {
      return latest.status();
    }
  }
  if (!options.run_dir.empty()) {
    if (options.resume) {
      absl::StatusOr<EvaluationResult> best =
          ReadBestEvaluation(options.run_dir);
      if (best.ok()) {
        result.best_evaluation = *best;
        result.best_policy_dir = BestPolicyDirectory(options.run_dir);
      } else if (best.status().code() != absl::StatusCode::kNotFound) {
        // The next evaluation replaces it.
        RLOG(WARNING) << "ignoring the best policy: "
                      << best.status().message();
      }
    } else {
      RETURN_IF_ERROR(RemoveBestPolicy(options.run_dir));
    }
  }
  if (state.env_steps > 0) {
    // A resumed run draws new episode starts rather than replaying the
    // first run's sequence from the beginning.
    vopts.seed = options.seed ^ (0x2545f4914f6cdd1dULL *
                                 static_cast<uint64_t>(state.env_steps));
    ASSIGN_OR_RETURN(vec, env::VectorEnv::Create(market, vopts));
  }
  result.env_steps = state.env_steps;
  result.updates = state.updates;
  result.policy_version = learner->version();

  // Actions are sampled with our own seeded generator (the env steps and
  // the noise are reproducible on any LibTorch version).
  Rng noise_rng(options.seed ^ 0xa5a5a5a5ULL);
  if (state.has_rng_state) noise_rng.set_state(state.noise_rng);
  std::vector<float> noise(static_cast<size_t>(B) * A);
  std::vector<float> actions(static_cast<size_t>(B) * A);
  std::vector<float> final_obs(static_cast<size_t>(B) * D);
  TrajectoryChunk chunk;
  chunk.run_id = "local";
  chunk.actor_id = "trainer";
  chunk.steps = T;
  chunk.copies = B;
  chunk.obs_size = D;
  chunk.action_size = A;
  chunk.obs.resize(static_cast<size_t>(T + 1) * B * D);
  chunk.actions.resize(static_cast<size_t>(T) * B * A);
  chunk.log_probs.resize(static_cast<size_t>(T) * B);
  chunk.rewards.resize(static_cast<size_t>(T) * B);
  chunk.dones.resize(static_cast<size_t>(T) * B);
  vec->Reset(chunk.obs.data());

  const torch::Device device = learner->device();
  ActorCritic& model = learner->model();
  int64_t next_eval = options.eval_every_env_steps > 0
                          ? state.env_steps + options.eval_every_env_steps
                          : options.budget_env_steps;
  auto evaluate_and_checkpoint = [&]() -> absl::Status {
    if (!options.validation_domains.empty()) {
      const auto t0 = Clock::now();
      ASSIGN_OR_RETURN(EvaluationResult eval,
                       EvaluatePolicy(model, market, options.env,
                                      options.validation_domains));
      eval.at_env_steps = result.env_steps;
      eval.score = ObjectiveValue(objective, eval);
      result.evaluations.push_back(eval);
      state.last_score = eval.score;
      const bool have_best = result.best_evaluation.has_value();
      if (IsBetterScore(eval.score, have_best,
                        have_best ? result.best_evaluation->score : 0.0)) {
        if (!options.run_dir.empty()) {
          RETURN_IF_ERROR(SaveBestPolicy(options.run_dir, model,
                                         result.contract, eval, objective));
          result.best_policy_dir = BestPolicyDirectory(options.run_dir);
        } else {
          std::ostringstream bytes;
          torch::save(model, bytes);
          result.best_model_state = bytes.str();
        }
        result.best_evaluation = eval;
      }
      result.eval_seconds += Seconds(t0);
    }
    if (!options.run_dir.empty()) {
      state.env_steps = result.env_steps;
      state.policy_version = learner->version();
      state.samples_consumed = learner->samples_consumed();
      state.updates = result.updates;
      state.noise_rng = noise_rng.state();
      state.has_rng_state = true;
      ASSIGN_OR_RETURN(
          result.last_checkpoint,
          SaveCheckpoint(options.run_dir, result.contract, *learner, state));
    }
    return absl::OkStatus();
  };

  try {
    while (result.env_steps < options.budget_env_steps) {
      // Rollout: T steps of B copies with the current policy.
      const auto t0 = Clock::now();
      chunk.policy_version = learner->version();
      chunk.final_obs.clear();
      for (int t = 0; t < T; ++t) {
        for (float& z : noise) z = static_cast<float>(noise_rng.Normal());
        float* obs_t = chunk.obs.data() + static_cast<size_t>(t) * B * D;
        const torch::Tensor x =
            torch::from_blob(obs_t, {B, D}, torch::kFloat32).to(device);
        const torch::Tensor z =
            torch::from_blob(noise.data(), {B, A}, torch::kFloat32).to(device);
        const PolicySample s = SampleActions(model, x, z, false);
        std::memcpy(chunk.actions.data() + static_cast<size_t>(t) * B * A,
                    s.u.data_ptr<float>(), sizeof(float) * B * A);
        std::memcpy(chunk.log_probs.data() + static_cast<size_t>(t) * B,
                    s.log_prob.data_ptr<float>(), sizeof(float) * B);
        std::memcpy(actions.data(), s.action.data_ptr<float>(),
                    sizeof(float) * B * A);
        env::StepOutput out;
        out.obs = obs_t + static_cast<size_t>(B) * D;
        out.reward = chunk.rewards.data() + static_cast<size_t>(t) * B;
        out.done = chunk.dones.data() + static_cast<size_t>(t) * B;
        out.final_obs = final_obs.data();
        RETURN_IF_ERROR(vec->Step(actions.data(), out));
        for (int b = 0; b < B; ++b) {
          if (out.done[b]) {
            chunk.final_obs.insert(chunk.final_obs.end(),
                                   final_obs.begin() + int64_t{b} * D,
                                   final_obs.begin() + int64_t{b + 1} * D);
          }
        }
      }
      result.rollout_seconds += Seconds(t0);
      result.env_steps += int64_t{T} * B;

      const auto t1 = Clock::now();
      absl::StatusOr<UpdateStats> update = learner->Update({chunk});
      if (!update.ok()) return update.status();
      result.update_seconds += Seconds(t1);
      result.last_update = *update;
      ++result.updates;
      result.policy_version = learner->version();
      // The next rollout continues from the bootstrap observation.
      std::memcpy(chunk.obs.data(),
                  chunk.obs.data() + static_cast<size_t>(T) * B * D,
                  sizeof(float) * B * D);

      const bool finished = result.env_steps >= options.budget_env_steps;
      if (finished || result.env_steps >= next_eval) {
        RETURN_IF_ERROR(evaluate_and_checkpoint());
        while (next_eval <= result.env_steps) {
          next_eval += options.eval_every_env_steps > 0
                           ? options.eval_every_env_steps
                           : options.budget_env_steps;
        }
      }
      if (progress && !progress(result, *update)) break;
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("training failed: ", e.what_without_backtrace()));
  }
  result.total_seconds = Seconds(start);
  result.learner = std::move(learner);
  return result;
}

absl::StatusOr<std::optional<EvaluationResult>> ExportBestPolicy(
    const TrainResult& result, const std::string& out_dir) {
  namespace fs = std::filesystem;
  if (!result.best_policy_dir.empty() && result.best_evaluation.has_value()) {
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    for (const char* name : {"policy.pt", "contract.json", "evaluation.json"}) {
      if (!ec) {
        fs::copy_file(fs::path(result.best_policy_dir) / name,
                      fs::path(out_dir) / name,
                      fs::copy_options::overwrite_existing, ec);
      }
    }
    if (ec) {
      return absl::InternalError(absl::StrCat("copying the best policy from ",
                                              result.best_policy_dir, " to ",
                                              out_dir, ": ", ec.message()));
    }
    return result.best_evaluation;
  }
  if (result.learner == nullptr) {
    return absl::FailedPreconditionError("the run has no trained learner");
  }
  ActorCritic& trained = result.learner->model();
  if (!result.best_model_state.empty() && result.best_evaluation.has_value()) {
    try {
      ActorCritic best(trained->obs_size(), trained->action_size(),
                       trained->options());
      std::istringstream bytes(result.best_model_state);
      torch::load(best, bytes, torch::Device(torch::kCPU));
      RETURN_IF_ERROR(ExportPolicy(best, result.contract, out_dir));
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("restoring the best policy: ",
                                              e.what_without_backtrace()));
    }
    return result.best_evaluation;
  }
  RETURN_IF_ERROR(ExportPolicy(trained, result.contract, out_dir));
  return std::optional<EvaluationResult>();
}

}  // namespace ristretto::learner
