// TorchScriptPolicy: an exported policy (policy.pt written by ExportPolicy
// in learner/torch/checkpoint.h: obs [B, D] float32 → actions [B, A] in
// [−1, 1]) loaded with torch::jit::load and run on the CPU as an
// ActionFunction for EvaluateActions (learner/evaluation.h). This header
// has no torch so the CLI can use it cheaply; LibTorch stays in the .cc.
// Not thread-safe: one instance per thread (it reuses its input and output
// buffers between calls).
#ifndef RISTRETTO_LEARNER_TORCH_POLICY_RUNNER_H_
#define RISTRETTO_LEARNER_TORCH_POLICY_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "learner/evaluation.h"

namespace ristretto::learner {

class TorchScriptPolicy {
 public:
  // Loads `path` and checks it once on a zero observation: it must map
  // [1, obs_size] float32 to [1, action_size] finite values.
  // Errors: kNotFound if the file does not exist; kDataLoss if it is not a
  // TorchScript module or does not have that shape (the message names the
  // shape found and the one expected); kInvalidArgument for sizes < 1.
  static absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> Load(
      const std::string& path, int obs_size, int action_size);

  // Sets LibTorch's intra-op CPU threads for the whole process (>= 1). A
  // backtest passes one observation per domain, too little work to share.
  static void SetCpuThreads(int threads);

  ~TorchScriptPolicy();
  TorchScriptPolicy(const TorchScriptPolicy&) = delete;
  TorchScriptPolicy& operator=(const TorchScriptPolicy&) = delete;

  int obs_size() const { return obs_size_; }
  int action_size() const { return action_size_; }

  // Writes the actions [copies × action_size] for `obs` [copies × obs_size]
  // under inference mode. On a LibTorch error or a result of the wrong
  // shape it writes NaN actions (the env then refuses the step) and keeps
  // the first error for status().
  void Act(const float* obs, int copies, float* actions);

  // Act as an ActionFunction; `this` must outlive it.
  ActionFunction AsActionFunction();

  // The first error Act met; OK if none.
  const absl::Status& status() const { return status_; }

  // Forward passes so far and the wall time spent in them (the module call,
  // the copy in and the copy out), in seconds.
  int64_t forward_calls() const { return forward_calls_; }
  double forward_seconds() const { return forward_seconds_; }

 private:
  struct Impl;  // the module and the reused buffers (torch types)
  // Keeps the first forward-pass error (its first line) in status_.
  void Fail(const char* what);
  TorchScriptPolicy(std::unique_ptr<Impl> impl, int obs_size, int action_size);

  std::unique_ptr<Impl> impl_;
  const int obs_size_;
  const int action_size_;
  absl::Status status_;
  int64_t forward_calls_ = 0;
  double forward_seconds_ = 0;
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_TORCH_POLICY_RUNNER_H_
