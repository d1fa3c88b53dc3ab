// Tensor codec: plain arrays <-> ristretto.v1.Tensor (dtype + shape + raw
// little-endian bytes). Decoding validates dtype, shape and byte count
// against what the caller expects and names the field in every error.
// Thread-compatible (pure functions).
//
// Decoding is on the learner's ingest path (~3.8 MB per chunk), so
// the decoders never value-initialise their output before copying into it,
// and the float32 path can check finiteness while the data is in cache
// (AppendFloat32, below) instead of in a second pass.
#ifndef RISTRETTO_COMMON_TENSOR_CODEC_H_
#define RISTRETTO_COMMON_TENSOR_CODEC_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/ristretto.pb.h"

namespace ristretto {

// Wildcard for one dimension of an expected shape.
inline constexpr int64_t kAnyDim = -1;

// Writes `values` (row-major, product(shape) elements) into `out`, with one
// copy of the data (the capacity of `out`'s data string is reused).
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

// A tensor as it arrived, before any copy: its header fields and its data
// as one or more byte ranges in order (a message received as several
// network buffers; a float may straddle two ranges). Views only: the
// caller keeps the bytes alive.
struct TensorView {
  int dtype = v1::Tensor::DTYPE_UNSPECIFIED;  // as sent (may be unknown)
  absl::InlinedVector<int64_t, 4> shape;
  absl::InlinedVector<absl::string_view, 1> data;
  size_t data_bytes = 0;  // total size of `data`
};

// A view of a parsed proto's tensor (one range: the data string).
TensorView ViewOf(const v1::Tensor& tensor);

// The checks of the decoders above without the copy: returns the element
// count of `tensor` (its data is then exactly count × sizeof(dtype) bytes)
// or the same errors, worded the same way.
absl::StatusOr<int64_t> CheckTensor(const v1::Tensor& tensor,
                                    v1::Tensor::DType dtype,
                                    absl::Span<const int64_t> expected,
                                    absl::string_view name,
                                    int64_t max_elements,
                                    std::vector<int64_t>* shape = nullptr);
absl::StatusOr<int64_t> CheckTensor(const TensorView& tensor,
                                    v1::Tensor::DType dtype,
                                    absl::Span<const int64_t> expected,
                                    absl::string_view name,
                                    int64_t max_elements,
                                    std::vector<int64_t>* shape = nullptr);

// Appends the little-endian float32 values in `bytes` (size a multiple of
// 4) to `out`, reusing its capacity and without value-initialising the new
// elements first. With `finite_only`, stops at the first NaN, ±infinity or
// value beyond ±`max_abs` (a finite bound; the default admits every finite
// float) and returns its index in `bytes` (`out` then holds the values
// before it, after its old contents); returns -1 when every value was
// appended. The check runs on each cache-sized block right after it is
// copied.
int64_t AppendFloat32(absl::string_view bytes, bool finite_only,
                      std::vector<float>* out,
                      float max_abs = std::numeric_limits<float>::max());

// The same over byte ranges in order whose total size is a multiple of 4
// (a value may straddle two ranges); the index returned counts values
// from the start of the first range.
int64_t AppendFloat32(absl::Span<const absl::string_view> pieces,
                      bool finite_only, std::vector<float>* out,
                      float max_abs = std::numeric_limits<float>::max());

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_TENSOR_CODEC_H_
