#include "wire/chunk_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"

namespace ristretto::wire {
namespace {

// The value at index `index` of a float tensor's byte ranges (a value may
// straddle two ranges).
float ValueAt(const TensorView& tensor, int64_t index) {
  char bytes[sizeof(float)];
  size_t skip = static_cast<size_t>(index) * sizeof(float), got = 0;
  for (absl::string_view p : tensor.data) {
    if (skip >= p.size()) {
      skip -= p.size();
      continue;
    }
    const size_t take = std::min(sizeof(float) - got, p.size() - skip);
    std::memcpy(bytes + got, p.data() + skip, take);
    got += take;
    skip = 0;
    if (got == sizeof(float)) break;
  }
  float value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

// Values checked per block: a block is range-checked right after it is
// copied, while it is still in cache (16 KiB, as AppendFloat32's blocks).
constexpr size_t kRangeBlockValues = 4096;

// Copies a float tensor's data (whose size CheckTensor has verified) into
// `out`, checking every value is finite and, with `ranges`, that value i
// lies in ranges[i % period] (the tensor's size is a multiple of
// `period`), else that it is within ±max_abs. The error wording is
// TrajectoryChunk::Validate()'s: "chunk FIELD[i] (WHERE) is VALUE", plus
// ", outside the run's bound" (the bound [LO, HI] in the payload
// kBoundPayload, not the message) or ", beyond the bound +-B" for a finite
// value out of bounds.
template <typename Where>
absl::Status CopyChecked(const TensorView& tensor, const char* field,
                         Where where, const learner::ValueRange* ranges,
                         size_t period, float max_abs,
                         std::vector<float>* out) {
  out->clear();
  auto error = [&](int64_t index, float value, const std::string& bound) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", field, "[", index, "] (", where(index), ") is ",
                     value, std::isfinite(value) ? bound : ""));
  };
  if (ranges == nullptr) {
    const int64_t bad =
        AppendFloat32(tensor.data, /*finite_only=*/true, out, max_abs);
    if (bad < 0) return absl::OkStatus();
    return error(bad, ValueAt(tensor, bad),
                 absl::StrCat(", beyond the bound +-", max_abs));
  }
  // The run's bound is not told to the sender (it would map the exact
  // limits for a poisoning stream); it travels as the status payload
  // kBoundPayload, which the learner logs.
  auto outside = [&](int64_t index, float value) {
    const learner::ValueRange& r = ranges[static_cast<size_t>(index) % period];
    absl::Status s = error(index, value, ", outside the run's bound");
    s.SetPayload(kBoundPayload,
                 absl::Cord(absl::StrCat("[", r.lo, ", ", r.hi, "]")));
    return s;
  };
  size_t total = 0;
  for (absl::string_view p : tensor.data) total += p.size();
  total /= sizeof(float);
  out->reserve(total);  // AppendFloat32 then never reallocates
  const size_t block = period * std::max<size_t>(1, kRangeBlockValues / period);
  // The ranges repeated over a block's rows, as two flat arrays: the
  // per-block test is then one loop that vectorises without a remainder
  // per row.
  std::vector<float> lo(std::min(block, total)), hi(lo.size());
  for (size_t k = 0; k < lo.size(); ++k) {
    lo[k] = ranges[k % period].lo;
    hi[k] = ranges[k % period].hi;
  }
  std::vector<absl::string_view> sub;
  size_t piece = 0, offset = 0;  // where the next block starts
  for (size_t done = 0; done < total;) {
    const size_t m = std::min(block, total - done);
    sub.clear();
    for (size_t need = m * sizeof(float); need > 0;) {
      const absl::string_view p = tensor.data[piece];
      const size_t take = std::min(need, p.size() - offset);
      if (take > 0) sub.push_back(p.substr(offset, take));
      need -= take;
      offset += take;
      if (offset == p.size()) {
        ++piece;
        offset = 0;
      }
    }
    const size_t base = out->size();
    AppendFloat32(sub, /*finite_only=*/false, out);
    // One test per value: NaN fails both comparisons, ±inf one of them.
    const float* v = out->data() + base;
    uint32_t beyond = 0;
    for (size_t k = 0; k < m; ++k) {
      beyond |= static_cast<uint32_t>(!(v[k] >= lo[k])) |
                static_cast<uint32_t>(!(v[k] <= hi[k]));
    }
    if (beyond != 0) {
      size_t k = 0;
      while (ranges[k % period].Contains(v[k])) ++k;
      return outside(static_cast<int64_t>(done + k), v[k]);
    }
    done += m;
  }
  return absl::OkStatus();
}

}  // namespace

void ChunkToProto(const learner::TrajectoryChunk& chunk, int64_t sequence,
                  v1::TrajectoryChunk* out) {
  const int64_t T = chunk.steps, B = chunk.copies, D = chunk.obs_size,
                A = chunk.action_size;
  out->set_run_id(chunk.run_id);
  out->set_actor_id(chunk.actor_id);
  out->clear_env_copy_ids();
  out->mutable_env_copy_ids()->Reserve(chunk.copies);
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

ChunkView ViewOf(const v1::TrajectoryChunk& p) {
  ChunkView v;
  v.run_id = p.run_id();
  v.actor_id = p.actor_id();
  v.policy_version = p.policy_version();
  v.sequence = p.sequence();
  v.observations = ristretto::ViewOf(p.observations());
  v.actions = ristretto::ViewOf(p.actions());
  v.log_probs = ristretto::ViewOf(p.log_probs());
  v.rewards = ristretto::ViewOf(p.rewards());
  v.dones = ristretto::ViewOf(p.dones());
  v.final_observations = ristretto::ViewOf(p.final_observations());
  return v;
}

absl::Status ChunkFromProto(const v1::TrajectoryChunk& p, int obs_size,
                            int action_size, const ChunkLimits& limits,
                            learner::TrajectoryChunk* out) {
  return DecodeChunk(ViewOf(p), obs_size, action_size, limits, out);
}

absl::Status DecodeChunk(const ChunkView& p, int obs_size, int action_size,
                         const ChunkLimits& limits,
                         learner::TrajectoryChunk* out) {
  if (p.run_id.empty()) {
    return absl::InvalidArgumentError("chunk: run_id is empty");
  }
  if (p.policy_version < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk: policy_version ", p.policy_version, " is negative"));
  }
  // The run's sizes (TrajectoryChunk::Validate()'s wording).
  if (obs_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk obs_size = ", obs_size, " must be >= 1"));
  }
  if (action_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk action_size = ", action_size, " must be >= 1"));
  }
  if (limits.values != nullptr &&
      limits.values->obs.size() != static_cast<size_t>(obs_size)) {
    return absl::InternalError(absl::StrCat(
        "chunk bounds cover ", limits.values->obs.size(),
        " observation values but the run's obs_size is ", obs_size));
  }
  const int64_t kMax = int64_t{limits.max_steps + 1} * limits.max_copies *
                       std::max(obs_size, action_size);
  // 1. Every tensor's dtype, shape and byte count, before copying anything.
  //    The observation tensor fixes T and B for the rest.
  std::vector<int64_t> shape;
  RETURN_IF_ERROR(CheckTensor(p.observations, v1::Tensor::FLOAT32,
                              {kAnyDim, kAnyDim, obs_size},
                              "chunk.observations", kMax, &shape)
                      .status());
  const int64_t T = shape[0] - 1;
  const int64_t B = shape[1];
  if (T < 1 || T > limits.max_steps || B < 1 || B > limits.max_copies) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk.observations: ", T, " steps x ", B, " copies is outside [1, ",
        limits.max_steps, "] x [1, ", limits.max_copies, "]"));
  }
  RETURN_IF_ERROR(CheckTensor(p.actions, v1::Tensor::FLOAT32,
                              {T, B, action_size}, "chunk.actions", kMax)
                      .status());
  RETURN_IF_ERROR(CheckTensor(p.log_probs, v1::Tensor::FLOAT32, {T, B},
                              "chunk.log_probs", kMax)
                      .status());
  RETURN_IF_ERROR(
      CheckTensor(p.rewards, v1::Tensor::FLOAT32, {T, B}, "chunk.rewards", kMax)
          .status());
  RETURN_IF_ERROR(
      CheckTensor(p.dones, v1::Tensor::UINT8, {T, B}, "chunk.dones", kMax)
          .status());
  int64_t num_dones = 0;
  for (absl::string_view piece : p.dones.data) {
    num_dones += static_cast<int64_t>(piece.size()) -
                 std::count(piece.begin(), piece.end(), '\0');
  }
  RETURN_IF_ERROR(CheckTensor(p.final_observations, v1::Tensor::FLOAT32,
                              {num_dones, obs_size}, "chunk.final_observations",
                              kMax)
                      .status());
  // 2. Values: dones are 0 or 1, every float is finite (checked while it is
  //    copied). The wording is TrajectoryChunk::Validate()'s.
  int64_t at = 0;
  for (absl::string_view piece : p.dones.data) {
    for (char c : piece) {
      const auto d = static_cast<uint8_t>(c);
      if (d > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("chunk dones[", at, "] (step ", at / B, ", copy ",
                         at % B, ") is ", int{d}, ", not 0 or 1"));
      }
      ++at;
    }
  }
  out->run_id.assign(p.run_id.data(), p.run_id.size());
  out->actor_id.assign(p.actor_id.data(), p.actor_id.size());
  out->policy_version = p.policy_version;
  out->steps = static_cast<int>(T);
  out->copies = static_cast<int>(B);
  out->obs_size = obs_size;
  out->action_size = action_size;
  out->dones.clear();
  for (absl::string_view piece : p.dones.data) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(piece.data());
    out->dones.insert(out->dones.end(), bytes, bytes + piece.size());
  }
  auto step_copy = [B](int64_t i) {
    return absl::StrCat("step ", i / B, ", copy ", i % B);
  };
  auto step_copy_element = [B](int64_t width) {
    return [B, width](int64_t i) {
      const int64_t row = i / width;
      return absl::StrCat("step ", row / B, ", copy ", row % B, ", element ",
                          i % width);
    };
  };
  const float bound = limits.max_abs_value;
  const learner::ChunkValueBounds* v = limits.values.get();
  const auto d = static_cast<size_t>(obs_size);
  const learner::ValueRange* obs_ranges =
      v != nullptr ? v->obs.data() : nullptr;
  RETURN_IF_ERROR(CopyChecked(p.observations, "obs",
                              step_copy_element(obs_size), obs_ranges, d, bound,
                              &out->obs));
  RETURN_IF_ERROR(CopyChecked(
      p.actions, "actions", step_copy_element(action_size),
      v != nullptr ? &v->action : nullptr, 1, bound, &out->actions));
  RETURN_IF_ERROR(CopyChecked(p.log_probs, "log_probs", step_copy,
                              v != nullptr ? &v->log_prob : nullptr, 1, bound,
                              &out->log_probs));
  RETURN_IF_ERROR(CopyChecked(p.rewards, "rewards", step_copy,
                              v != nullptr ? &v->reward : nullptr, 1, bound,
                              &out->rewards));
  return CopyChecked(
      p.final_observations, "final_obs",
      [d](int64_t i) {
        return absl::StrCat("done ", static_cast<size_t>(i) / d, ", element ",
                            static_cast<size_t>(i) % d);
      },
      obs_ranges, d, bound, &out->final_obs);
}

absl::StatusOr<learner::TrajectoryChunk> ChunkFromProto(
    const v1::TrajectoryChunk& p, int obs_size, int action_size,
    const ChunkLimits& limits) {
  learner::TrajectoryChunk c;
  RETURN_IF_ERROR(ChunkFromProto(p, obs_size, action_size, limits, &c));
  return c;
}

}  // namespace ristretto::wire
