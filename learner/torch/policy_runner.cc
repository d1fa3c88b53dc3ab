#include "learner/torch/policy_runner.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ristretto::learner {

struct TorchScriptPolicy::Impl {
  torch::jit::Module module;
  // Reused between calls: the argument list (one input tensor).
  std::vector<torch::jit::IValue> inputs;
};

namespace {

std::string ShapeText(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t d = 0; d < t.dim(); ++d) {
    absl::StrAppend(&text, d > 0 ? ", " : "", t.size(d));
  }
  return text + "]";
}

// LibTorch messages run over many lines (tracebacks); errors here are one.
std::string FirstLine(const char* what) {
  std::string text(what);
  return text.substr(0, text.find('\n'));
}

}  // namespace

TorchScriptPolicy::TorchScriptPolicy(std::unique_ptr<Impl> impl, int obs_size,
                                     int action_size)
    : impl_(std::move(impl)), obs_size_(obs_size), action_size_(action_size) {}

TorchScriptPolicy::~TorchScriptPolicy() = default;

absl::StatusOr<std::unique_ptr<TorchScriptPolicy>> TorchScriptPolicy::Load(
    const std::string& path, int obs_size, int action_size) {
  if (obs_size < 1 || action_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy sizes must be >= 1, got obs ", obs_size,
                     " and actions ", action_size));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat("no policy file ", path));
  }
  auto impl = std::make_unique<Impl>();
  try {
    impl->module = torch::jit::load(path, torch::kCPU);
    impl->module.eval();
  } catch (const c10::Error& e) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a TorchScript module: ",
                     FirstLine(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a TorchScript module: ", FirstLine(e.what())));
  }
  impl->inputs.reserve(1);
  std::unique_ptr<TorchScriptPolicy> policy(
      new TorchScriptPolicy(std::move(impl), obs_size, action_size));
  // One trial pass, so a policy of another shape is refused before any
  // backtest starts rather than as NaN actions later.
  std::vector<float> obs(static_cast<size_t>(obs_size), 0.0f);
  std::vector<float> actions(static_cast<size_t>(action_size), 0.0f);
  policy->Act(obs.data(), 1, actions.data());
  if (!policy->status_.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", policy->status_.message()));
  }
  for (float a : actions) {
    if (!std::isfinite(a)) {
      return absl::DataLossError(
          absl::StrCat(path,
                       ": the policy returns a non-finite action for a "
                       "zero observation"));
    }
  }
  policy->forward_calls_ = 0;
  policy->forward_seconds_ = 0;
  return policy;
}

void TorchScriptPolicy::Act(const float* obs, int copies, float* actions) {
  const size_t out_size = static_cast<size_t>(copies) * action_size_;
  const auto start = std::chrono::steady_clock::now();
  bool ok = false;
  try {
    c10::InferenceMode inference;
    // The observation buffer is only read: the module's first op makes a
    // new tensor, so wrapping it without a copy is safe.
    impl_->inputs.clear();
    impl_->inputs.emplace_back(torch::from_blob(
        const_cast<float*>(obs), {copies, obs_size_}, torch::kFloat32));
    const torch::Tensor out = impl_->module.forward(impl_->inputs).toTensor();
    impl_->inputs.clear();
    if (out.dim() != 2 || out.size(0) != copies ||
        out.size(1) != action_size_ || out.scalar_type() != torch::kFloat32) {
      if (status_.ok()) {
        status_ = absl::DataLossError(absl::StrCat(
            "the policy maps [", copies, ", ", obs_size_, "] to ",
            ShapeText(out), " ", c10::toString(out.scalar_type()),
            ", expected [", copies, ", ", action_size_, "] Float"));
      }
    } else {
      const torch::Tensor dense = out.contiguous();
      std::memcpy(actions, dense.data_ptr<float>(), sizeof(float) * out_size);
      ok = true;
    }
  } catch (const c10::Error& e) {
    Fail(e.what_without_backtrace());
  } catch (const std::exception& e) {
    // The TorchScript interpreter rethrows a failing op as a
    // std::runtime_error carrying the script's traceback.
    Fail(e.what());
  }
  if (!ok) {
    std::fill(actions, actions + out_size,
              std::numeric_limits<float>::quiet_NaN());
  }
  forward_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ++forward_calls_;
}

void TorchScriptPolicy::Fail(const char* what) {
  impl_->inputs.clear();
  if (!status_.ok()) return;
  // A script error starts with its traceback; the op and the shapes are
  // on the RuntimeError line.
  const char* error = std::strstr(what, "RuntimeError: ");
  status_ = absl::DataLossError(
      absl::StrCat("the policy's forward pass failed: ",
                   FirstLine(error != nullptr ? error : what)));
}

void TorchScriptPolicy::SetCpuThreads(int threads) {
  if (threads >= 1) torch::set_num_threads(threads);
}

ActionFunction TorchScriptPolicy::AsActionFunction() {
  return [this](const float* obs, int copies, float* actions) {
    Act(obs, copies, actions);
  };
}

}  // namespace ristretto::learner
