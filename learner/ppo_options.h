// PpoOptions and NetworkOptions: every knob of the learner. Each field is
// read by the code (a study may only search parameters that are consumed).
// Defaults and valid ranges come from the run-options schema
// (common/options_schema.h); Validate() checks the schema's ranges.
// No torch here: the coordinator and CLI include this header.
#ifndef RISTRETTO_LEARNER_PPO_OPTIONS_H_
#define RISTRETTO_LEARNER_PPO_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/options_schema.h"

namespace ristretto::learner {

enum class Activation { kTanh, kRelu };
enum class ValueLoss { kMse, kSmoothL1 };
enum class LrSchedule { kConstant, kLinear };
enum class LogProbMode {
  kTanhCorrected,  // log N(u) − Σ log(1 − tanh(u)²): the correct density
  kUncorrected,    // log N(u) only: reproduces the original system
};
enum class AutocastMode { kOff, kBf16, kFp16 };  // GPU only

// The schema's default hidden layers: `layers` layers of `width` units.
std::vector<int> DefaultHiddenLayers();

struct NetworkOptions {
  // Hidden layer widths of the policy and of the value MLP (separate nets).
  // Empty = a single linear layer; at most the schema's `layers` maximum,
  // each width in the schema's `width` range.
  std::vector<int> policy_hidden = DefaultHiddenLayers();
  std::vector<int> value_hidden = DefaultHiddenLayers();
  Activation activation = static_cast<Activation>(OptionDefault("activation"));
  // Initial log standard deviation of the Gaussian before tanh.
  double log_std_init = OptionDefault("log_std_init");
  LogProbMode log_prob = static_cast<LogProbMode>(OptionDefault("log_prob"));
  // Normalise observations with running mean/variance (frozen into
  // checkpoints and exported policies).
  bool normalize_observations = OptionDefault("normalize_observations") != 0;
  // Observations are clipped to ±obs_clip after normalisation.
  double obs_clip = OptionDefault("obs_clip");

  absl::Status Validate() const;
};

// Enum fields take their schema default by index: the enums list their
// values in the schema's `choices` order (a test holds them equal).
struct PpoOptions {
  double learning_rate = OptionDefault("learning_rate");
  // linear: → 0 at budget
  LrSchedule lr_schedule =
      static_cast<LrSchedule>(OptionDefault("lr_schedule"));
  double gamma = OptionDefault("gamma");  // discount per env step
  // λ = 1 without bootstrap = original's return
  double gae_lambda = OptionDefault("gae_lambda");
  // Bootstrap V(final observation) where an episode was truncated (all env
  // episode ends are time limits); off reproduces the original.
  bool bootstrap_truncation = OptionDefault("bootstrap_truncation") != 0;
  double clip_ratio = OptionDefault("clip_ratio");  // ε of the surrogate
  ValueLoss value_loss = static_cast<ValueLoss>(OptionDefault("value_loss"));
  double value_clip = OptionDefault("value_clip");  // 0 = no value clipping
  double value_coef = OptionDefault("value_coef");
  double entropy_coef = OptionDefault("entropy_coef");
  bool normalize_advantages = OptionDefault("normalize_advantages") != 0;
  // Passes over each rollout.
  int epochs = static_cast<int>(OptionDefault("epochs"));
  // Samples per gradient step (capped at N); the study name is batch_size.
  int minibatch_size = static_cast<int>(OptionDefault("batch_size"));
  bool sample_with_replacement = OptionDefault("sample_with_replacement") != 0;
  double max_grad_norm = OptionDefault("max_grad_norm");  // 0 = no clipping
  double adam_eps = OptionDefault("adam_eps");
  // Chunks older than this many policy versions are dropped (and counted).
  int max_policy_lag = static_cast<int>(OptionDefault("max_policy_lag"));
  // Device: "cpu", "cuda", "cuda:1"; allow_tf32 and autocast apply on GPU.
  std::string device = "cpu";
  bool allow_tf32 = true;
  AutocastMode autocast = AutocastMode::kOff;
  // Threads for LibTorch intra-op parallelism on CPU (0 = leave as is).
  int cpu_threads = static_cast<int>(OptionDefault("cpu_threads"));
  // OpenBLAS's thread count in gradient steps on the CPU. true: fixed at
  // OpenBLAS's full count, so a run is reproduced bit for bit from its seed
  // on the same CPU and OpenBLAS (`ristretto train`'s default). false:
  // chosen per step by measuring (common/blas_thread_tuner.h) — 2–5x faster
  // updates on a busy machine, but OpenBLAS's sums depend on its thread
  // count, so two runs with one seed differ in the last bits from the first
  // step and then drift apart. The learner service sets false: its runs
  // depend on when actors' chunks arrive and are never bit-reproducible.
  // OpenBLAS's count is one per process: the guarantee holds while no other
  // PpoLearner in the process trains or infers at the same time (true of
  // `ristretto train`, one run at a time).
  bool fixed_blas_threads = true;

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
