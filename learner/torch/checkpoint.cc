#include "learner/torch/checkpoint.h"

#include <fcntl.h>
#include <torch/script.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/atomic_file.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "learner/evaluation.h"
#include "learner/torch/actor_critic.h"
#include "learner/torch/ppo.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

namespace fs = std::filesystem;

// `s` with "what: " before its message, same code.
absl::Status Annotated(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

constexpr char kLatest[] = "LATEST";
constexpr char kBest[] = "best";
// A previous best/ moved aside while the new one is renamed into place
// (only where the file system cannot exchange two directories atomically).
constexpr char kBestOld[] = ".best.old";
constexpr char kBestTmpPrefix[] = ".best.tmp-";
constexpr char kEvaluationFile[] = "evaluation.json";

absl::Status WriteFileAtomically(const fs::path& path,
                                 const std::string& content) {
  return ristretto::WriteFileAtomically(path.string(), content);
}

// LibTorch's serialisation into memory: its file writer throws from
// ~PyTorchStreamWriter when the disk is full (std::terminate), so it never
// gets a path; ristretto's own writer puts the bytes on disk.
template <typename Value>
std::string TorchBytes(const Value& value) {
  std::ostringstream out(std::ios::binary);
  torch::save(value, out);
  return std::move(out).str();
}

std::string StateToJson(const CheckpointState& s) {
  nlohmann::json j;
  j["env_steps"] = s.env_steps;
  j["policy_version"] = s.policy_version;
  j["samples_consumed"] = s.samples_consumed;
  j["updates"] = s.updates;
  j["last_score"] = s.last_score;
  j["shuffle_rng"] = s.shuffle_rng;
  j["noise_rng"] = s.noise_rng;
  return j.dump(2);
}

absl::StatusOr<CheckpointState> StateFromJson(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError("state.json is not a JSON object");
  }
  CheckpointState s;
  try {
    s.env_steps = j.at("env_steps").get<int64_t>();
    s.policy_version = j.at("policy_version").get<int64_t>();
    s.samples_consumed = j.at("samples_consumed").get<int64_t>();
    s.updates = j.at("updates").get<int64_t>();
    s.last_score = j.at("last_score").get<double>();
    if (j.contains("shuffle_rng") && j.contains("noise_rng")) {
      s.shuffle_rng = j.at("shuffle_rng").get<std::array<uint64_t, 4>>();
      s.noise_rng = j.at("noise_rng").get<std::array<uint64_t, 4>>();
      s.has_rng_state = true;
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat("state.json: ", e.what()));
  }
  return s;
}

}  // namespace

std::string RunDirectory(const std::string& root, const std::string& study_id,
                         const std::string& trial_id, int fold) {
  return (fs::path(root) / study_id / trial_id / absl::StrCat("fold-", fold))
      .string();
}

absl::StatusOr<std::string> SaveCheckpoint(const std::string& run_dir,
                                           const PolicyContract& contract,
                                           PpoLearner& learner,
                                           const CheckpointState& given,
                                           int keep) {
  CheckpointState state = given;
  state.shuffle_rng = learner.shuffle_state();
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", run_dir, ": ", ec.message()));
  }
  const std::string name = absl::StrFormat("step-%012d", state.env_steps);
  const fs::path final_dir = fs::path(run_dir) / name;
  const fs::path tmp_dir =
      fs::path(run_dir) / absl::StrCat(".tmp-", name, "-", getpid());
  fs::remove_all(tmp_dir, ec);
  fs::create_directories(tmp_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", tmp_dir.string(), ": ", ec.message()));
  }
  std::string model_bytes;
  std::string optimizer_bytes;
  try {
    model_bytes = TorchBytes(learner.model());
    optimizer_bytes = TorchBytes(learner.optimizer());
  } catch (const c10::Error& e) {
    fs::remove_all(tmp_dir, ec);
    return absl::InternalError(
        absl::StrCat("saving checkpoint: ", e.what_without_backtrace()));
  }
  // Every file written and fsynced in the temporary directory, which is
  // renamed into place only when whole; the previous checkpoint and LATEST
  // stay as they are until then.
  const std::string contract_json = contract.ToJson();
  const std::string state_json = StateToJson(state);
  for (const auto& [file, content] :
       {std::pair<const char*, const std::string*>{"model.pt", &model_bytes},
        {"optimizer.pt", &optimizer_bytes},
        {"contract.json", &contract_json},
        {"state.json", &state_json}}) {
    absl::Status s = WriteFileDurably((tmp_dir / file).string(), *content);
    if (s.ok()) continue;
    fs::remove_all(tmp_dir, ec);
    return Annotated(s, "saving checkpoint");
  }
  if (absl::Status s = SyncDirectory(tmp_dir.string()); !s.ok()) {
    fs::remove_all(tmp_dir, ec);
    return Annotated(s, "saving checkpoint");
  }
  fs::remove_all(final_dir, ec);  // a re-save of the same step replaces it
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) {
    fs::remove_all(tmp_dir, ec);
    return absl::InternalError(absl::StrCat("cannot move checkpoint into ",
                                            final_dir.string(), ": ",
                                            ec.message()));
  }
  absl::Status latest =
      WriteFileAtomically(fs::path(run_dir) / kLatest, name + "\n");
  if (!latest.ok()) return latest;
  // Prune old checkpoints (names sort by step thanks to zero padding).
  // Pruning is best effort: an unreadable directory keeps every checkpoint
  // (error codes, never exceptions: this runs on a run's training thread).
  std::vector<fs::path> checkpoints;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    std::error_code dir_ec;
    if (it->is_directory(dir_ec) && n.rfind("step-", 0) == 0) {
      checkpoints.push_back(it->path());
    }
  }
  std::sort(checkpoints.begin(), checkpoints.end());
  const size_t keep_n = static_cast<size_t>(std::max(keep, 1));
  for (size_t i = 0; i + keep_n < checkpoints.size(); ++i) {
    if (checkpoints[i] != final_dir) fs::remove_all(checkpoints[i], ec);
  }
  return final_dir.string();
}

absl::StatusOr<std::string> LatestCheckpoint(const std::string& run_dir) {
  absl::StatusOr<std::string> name =
      ReadFileToString((fs::path(run_dir) / kLatest).string());
  if (!name.ok()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in ", run_dir));
  }
  std::string n = *name;
  while (!n.empty() && (n.back() == '\n' || n.back() == '\r')) n.pop_back();
  const fs::path dir = fs::path(run_dir) / n;
  std::error_code ec;
  if (n.empty() || !fs::is_directory(dir, ec)) {
    return absl::DataLossError(absl::StrCat(run_dir, "/LATEST names '", n,
                                            "' which is not a checkpoint"));
  }
  return dir.string();
}

absl::StatusOr<PolicyContract> ReadCheckpointContract(
    const std::string& checkpoint_dir) {
  absl::StatusOr<std::string> text =
      ReadFileToString((fs::path(checkpoint_dir) / "contract.json").string());
  if (!text.ok()) return text.status();
  return PolicyContract::FromJson(*text);
}

absl::StatusOr<CheckpointState> LoadCheckpoint(
    const std::string& checkpoint_dir, const PolicyContract& expected,
    PpoLearner* learner, bool check_dataset) {
  absl::StatusOr<PolicyContract> found = ReadCheckpointContract(checkpoint_dir);
  if (!found.ok()) return found.status();
  if (absl::Status s = CheckContract(expected, *found, check_dataset);
      !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat(checkpoint_dir, ": ", s.message()));
  }
  absl::StatusOr<std::string> state_text =
      ReadFileToString((fs::path(checkpoint_dir) / "state.json").string());
  if (!state_text.ok()) return state_text.status();
  absl::StatusOr<CheckpointState> state = StateFromJson(*state_text);
  if (!state.ok()) return state.status();
  try {
    torch::load(learner->model(),
                (fs::path(checkpoint_dir) / "model.pt").string(),
                learner->device());
    torch::load(learner->optimizer(),
                (fs::path(checkpoint_dir) / "optimizer.pt").string(),
                learner->device());
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat("loading ", checkpoint_dir, ": ",
                                            e.what_without_backtrace()));
  }
  learner->set_counters(state->policy_version, state->samples_consumed);
  if (state->has_rng_state) learner->set_shuffle_state(state->shuffle_rng);
  return state;
}

absl::Status ExportPolicy(ActorCritic& model, const PolicyContract& contract,
                          const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", out_dir, ": ", ec.message()));
  }
  std::string policy_bytes;
  try {
    torch::NoGradGuard no_grad;
    torch::jit::Module m("RistrettoPolicy");
    const bool normalize = model->options().normalize_observations;
    auto cpu_float = [](const torch::Tensor& t) {
      return t.detach().to(torch::kCPU, torch::kFloat32).clone();
    };
    m.register_buffer("obs_mean", cpu_float(model->obs_mean()));
    m.register_buffer("obs_inv_std",
                      cpu_float(torch::rsqrt(model->obs_var() + 1e-8)));
    std::string body = "def forward(self, obs: Tensor) -> Tensor:\n";
    if (normalize) {
      absl::StrAppendFormat(&body,
                            "    x = torch.clamp((obs - self.obs_mean) * "
                            "self.obs_inv_std, %.17g, %.17g)\n",
                            -model->options().obs_clip,
                            model->options().obs_clip);
    } else {
      body += "    x = obs\n";
    }
    const auto& layers = model->policy_layers();
    const char* activation =
        model->options().activation == Activation::kTanh ? "tanh" : "relu";
    for (size_t i = 0; i < layers.size(); ++i) {
      m.register_parameter(absl::StrCat("w", i), cpu_float(layers[i]->weight),
                           false);
      m.register_parameter(absl::StrCat("b", i), cpu_float(layers[i]->bias),
                           false);
      absl::StrAppendFormat(
          &body, "    x = torch.addmm(self.b%d, x, self.w%d.t())\n", i, i);
      if (i + 1 < layers.size()) {
        absl::StrAppendFormat(&body, "    x = torch.%s(x)\n", activation);
      }
    }
    body += "    return torch.tanh(x)\n";
    m.define(body);
    std::ostringstream bytes(std::ios::binary);
    m.save(bytes);
    policy_bytes = std::move(bytes).str();
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("exporting the policy: ", e.what_without_backtrace()));
  }
  RETURN_IF_ERROR(Annotated(
      WriteFileAtomically(fs::path(out_dir) / "policy.pt", policy_bytes),
      "exporting the policy"));
  return WriteFileAtomically(fs::path(out_dir) / "contract.json",
                             contract.ToJson());
}

namespace {

// Finishes or undoes a replacement of best/ that a crash interrupted, and
// removes temporary directories left behind.
void RecoverBest(const fs::path& run_dir) {
  std::error_code ec;
  const fs::path best = run_dir / kBest;
  const fs::path old = run_dir / kBestOld;
  if (fs::exists(old, ec)) {
    if (fs::exists(best, ec)) {
      fs::remove_all(old, ec);  // the new best/ is complete
    } else {
      fs::rename(old, best, ec);  // the new one never arrived: keep the old
    }
  }
  std::vector<fs::path> leftovers;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    if (entry.path().filename().string().rfind(kBestTmpPrefix, 0) == 0) {
      leftovers.push_back(entry.path());
    }
  }
  for (const fs::path& p : leftovers) fs::remove_all(p, ec);
}

// Swaps directory `from` into `to` (which exists). After success `from`
// holds the old contents and may be deleted.
bool ExchangeDirectories(const fs::path& from, const fs::path& to) {
#if defined(RENAME_EXCHANGE)
  return renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                   RENAME_EXCHANGE) == 0;
#else
  (void)from;
  (void)to;
  return false;
#endif
}

}  // namespace

std::string BestPolicyDirectory(const std::string& run_dir) {
  return (fs::path(run_dir) / kBest).string();
}

absl::Status SaveBestPolicy(const std::string& run_dir, ActorCritic& model,
                            const PolicyContract& contract,
                            const EvaluationResult& eval,
                            const std::string& objective) {
  const fs::path dir(run_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", run_dir, ": ", ec.message()));
  }
  RecoverBest(dir);
  const fs::path tmp = dir / absl::StrCat(kBestTmpPrefix, getpid());
  fs::remove_all(tmp, ec);
  absl::Status written = ExportPolicy(model, contract, tmp.string());
  if (written.ok()) {
    written = WriteFileAtomically(tmp / kEvaluationFile,
                                  EvaluationToJson(eval, objective));
  }
  if (!written.ok()) {
    fs::remove_all(tmp, ec);
    return written;
  }
  const fs::path best = dir / kBest;
  const fs::path old = dir / kBestOld;
  if (!fs::exists(best, ec)) {
    fs::rename(tmp, best, ec);
  } else if (ExchangeDirectories(tmp, best)) {
    ec.clear();  // tmp now holds the previous best
  } else {
    // Two renames; RecoverBest completes or undoes them after a crash.
    fs::rename(best, old, ec);
    if (!ec) {
      fs::rename(tmp, best, ec);
      if (ec) {
        std::error_code back;
        fs::rename(old, best, back);
      }
    }
    if (!ec) fs::remove_all(old, ec);
    ec.clear();
  }
  if (ec) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    return absl::InternalError(absl::StrCat("cannot move the best policy into ",
                                            best.string(), ": ", ec.message()));
  }
  fs::remove_all(tmp, ec);
  return absl::OkStatus();
}

absl::StatusOr<EvaluationResult> ReadBestEvaluation(
    const std::string& run_dir) {
  const fs::path dir(run_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("no best policy in ", run_dir));
  }
  RecoverBest(dir);
  const fs::path file = dir / kBest / kEvaluationFile;
  if (!fs::exists(file, ec)) {
    return absl::NotFoundError(absl::StrCat("no best policy in ", run_dir));
  }
  absl::StatusOr<std::string> text = ReadFileToString(file.string());
  if (!text.ok()) {
    return absl::DataLossError(absl::StrCat("cannot read ", file.string()));
  }
  absl::StatusOr<EvaluationResult> eval = EvaluationFromJson(*text);
  if (!eval.ok()) {
    return absl::DataLossError(
        absl::StrCat(file.string(), ": ", eval.status().message()));
  }
  return eval;
}

absl::Status RemoveBestPolicy(const std::string& run_dir) {
  const fs::path dir(run_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::OkStatus();
  RecoverBest(dir);
  fs::remove_all(dir / kBest, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(
        "cannot remove ", (dir / kBest).string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace ristretto::learner
