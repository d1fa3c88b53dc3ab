#include "learner/chunk_codec.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"

namespace ristretto::learner {

void ChunkToProto(const TrajectoryChunk& chunk, int64_t sequence,
                  v1::TrajectoryChunk* out) {
  const int64_t T = chunk.steps, B = chunk.copies, D = chunk.obs_size,
                A = chunk.action_size;
  out->set_run_id(chunk.run_id);
  out->set_actor_id(chunk.actor_id);
  out->clear_env_copy_ids();
  for (int b = 0; b < chunk.copies; ++b) out->add_env_copy_ids(b);
  out->set_policy_version(chunk.policy_version);
  out->set_sequence(sequence);
  EncodeFloat32(chunk.obs, {T + 1, B, D}, out->mutable_observations());
  EncodeFloat32(chunk.actions, {T, B, A}, out->mutable_actions());
  EncodeFloat32(chunk.log_probs, {T, B}, out->mutable_log_probs());
  EncodeFloat32(chunk.rewards, {T, B}, out->mutable_rewards());
  EncodeUint8(chunk.dones, {T, B}, out->mutable_dones());
  EncodeFloat32(chunk.final_obs, {chunk.num_dones(), D},
                out->mutable_final_observations());
}

absl::StatusOr<TrajectoryChunk> ChunkFromProto(const v1::TrajectoryChunk& p,
                                               int obs_size, int action_size,
                                               const ChunkLimits& limits) {
  if (p.run_id().empty()) {
    return absl::InvalidArgumentError("chunk: run_id is empty");
  }
  if (p.policy_version() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk: policy_version ", p.policy_version(), " is negative"));
  }
  const int64_t kMax = int64_t{limits.max_steps + 1} * limits.max_copies *
                       std::max(obs_size, action_size);
  std::vector<int64_t> shape;
  // The observation tensor fixes T and B for the rest.
  ASSIGN_OR_RETURN(std::vector<float> obs,
                   DecodeFloat32(p.observations(), {kAnyDim, kAnyDim, obs_size},
                                 "chunk.observations", kMax, &shape));
  const int64_t T = shape[0] - 1;
  const int64_t B = shape[1];
  if (T < 1 || T > limits.max_steps || B < 1 || B > limits.max_copies) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk.observations: ", T, " steps x ", B, " copies is outside [1, ",
        limits.max_steps, "] x [1, ", limits.max_copies, "]"));
  }
  TrajectoryChunk c;
  c.run_id = p.run_id();
  c.actor_id = p.actor_id();
  c.policy_version = p.policy_version();
  c.steps = static_cast<int>(T);
  c.copies = static_cast<int>(B);
  c.obs_size = obs_size;
  c.action_size = action_size;
  c.obs = std::move(obs);
  ASSIGN_OR_RETURN(c.actions, DecodeFloat32(p.actions(), {T, B, action_size},
                                            "chunk.actions", kMax));
  ASSIGN_OR_RETURN(c.log_probs, DecodeFloat32(p.log_probs(), {T, B},
                                              "chunk.log_probs", kMax));
  ASSIGN_OR_RETURN(c.rewards,
                   DecodeFloat32(p.rewards(), {T, B}, "chunk.rewards", kMax));
  ASSIGN_OR_RETURN(c.dones,
                   DecodeUint8(p.dones(), {T, B}, "chunk.dones", kMax));
  int64_t dones = 0;
  for (uint8_t d : c.dones) dones += d != 0;
  ASSIGN_OR_RETURN(c.final_obs,
                   DecodeFloat32(p.final_observations(), {dones, obs_size},
                                 "chunk.final_observations", kMax));
  RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace ristretto::learner
