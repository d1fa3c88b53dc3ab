// Tensor codec: plain arrays <-> ristretto.v1.Tensor (dtype + shape + raw
// little-endian bytes). Decoding validates dtype, shape and byte count
// against what the caller expects and names the field in every error.
// Thread-compatible (pure functions).
#ifndef RISTRETTO_COMMON_TENSOR_CODEC_H_
#define RISTRETTO_COMMON_TENSOR_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/ristretto.pb.h"

namespace ristretto {

// Wildcard for one dimension of an expected shape.
inline constexpr int64_t kAnyDim = -1;

// Writes `values` (row-major, product(shape) elements) into `out`.
void EncodeFloat32(absl::Span<const float> values,
                   absl::Span<const int64_t> shape, v1::Tensor* out);
void EncodeUint8(absl::Span<const uint8_t> values,
                 absl::Span<const int64_t> shape, v1::Tensor* out);

// Decodes a tensor whose shape must match `expected` (kAnyDim matches any
// size; the decoded shape is written to `shape` if non-null). Errors
// (kInvalidArgument, message starts with `name`): wrong dtype, wrong rank,
// a dimension that differs or is negative, more than `max_elements`
// elements, or a byte count that is not product(shape) × sizeof(dtype).
absl::StatusOr<std::vector<float>> DecodeFloat32(
    const v1::Tensor& tensor, absl::Span<const int64_t> expected,
    const std::string& name, int64_t max_elements,
    std::vector<int64_t>* shape = nullptr);
absl::StatusOr<std::vector<uint8_t>> DecodeUint8(
    const v1::Tensor& tensor, absl::Span<const int64_t> expected,
    const std::string& name, int64_t max_elements,
    std::vector<int64_t>* shape = nullptr);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_TENSOR_CODEC_H_
