// PpoOptions and NetworkOptions: every knob of the learner. Each field is
// read by the code (a study may only search parameters that are consumed).
// No torch here: the coordinator and CLI include this header.
#ifndef RISTRETTO_LEARNER_PPO_OPTIONS_H_
#define RISTRETTO_LEARNER_PPO_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ristretto::learner {

enum class Activation { kTanh, kRelu };
enum class ValueLoss { kMse, kSmoothL1 };
enum class LrSchedule { kConstant, kLinear };
enum class LogProbMode {
  kTanhCorrected,  // log N(u) − Σ log(1 − tanh(u)²): the correct density
  kUncorrected,    // log N(u) only: reproduces the original system
};
enum class AutocastMode { kOff, kBf16, kFp16 };  // GPU only

struct NetworkOptions {
  // Hidden layer widths of the policy and of the value MLP (separate nets).
  std::vector<int> policy_hidden = {512, 512};
  std::vector<int> value_hidden = {512, 512};
  Activation activation = Activation::kTanh;
  // Initial log standard deviation of the Gaussian before tanh.
  double log_std_init = -0.5;
  LogProbMode log_prob = LogProbMode::kTanhCorrected;
  // Normalise observations with running mean/variance (frozen into
  // checkpoints and exported policies).
  bool normalize_observations = true;
  // Observations are clipped to ±obs_clip after normalisation.
  double obs_clip = 10.0;

  absl::Status Validate() const;
};

struct PpoOptions {
  double learning_rate = 3e-4;
  LrSchedule lr_schedule = LrSchedule::kConstant;  // linear: → 0 at budget
  double gamma = 0.99;                             // discount per env step
  double gae_lambda = 0.95;  // λ = 1 without bootstrap = original's return
  // Bootstrap V(final observation) where an episode was truncated (all env
  // episode ends are time limits); off reproduces the original.
  bool bootstrap_truncation = true;
  double clip_ratio = 0.2;  // ε of the clipped surrogate
  ValueLoss value_loss = ValueLoss::kMse;
  double value_clip = 0.0;  // 0 = no value clipping
  double value_coef = 0.5;
  double entropy_coef = 0.0;
  bool normalize_advantages = true;
  int epochs = 10;            // passes over each rollout
  int minibatch_size = 2048;  // samples per gradient step (capped at N)
  bool sample_with_replacement = false;
  double max_grad_norm = 0.5;  // 0 = no clipping
  double adam_eps = 1e-5;
  // Chunks older than this many policy versions are dropped (and counted).
  int max_policy_lag = 4;
  // Device: "cpu", "cuda", "cuda:1"; allow_tf32 and autocast apply on GPU.
  std::string device = "cpu";
  bool allow_tf32 = true;
  AutocastMode autocast = AutocastMode::kOff;
  // Threads for LibTorch intra-op parallelism on CPU (0 = leave as is).
  int cpu_threads = 1;

  absl::Status Validate() const;
};

// Parsers for the enum names used in study files and flags.
absl::Status ParseActivation(const std::string& s, Activation* out);
absl::Status ParseValueLoss(const std::string& s, ValueLoss* out);
absl::Status ParseLrSchedule(const std::string& s, LrSchedule* out);
absl::Status ParseLogProbMode(const std::string& s, LogProbMode* out);
absl::Status ParseAutocastMode(const std::string& s, AutocastMode* out);
std::string ActivationName(Activation a);
std::string LogProbModeName(LogProbMode m);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_PPO_OPTIONS_H_
