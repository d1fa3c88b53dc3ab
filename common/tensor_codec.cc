#include "common/tensor_codec.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "The tensor wire format is little-endian; add byte swapping."
#endif

namespace ristretto {
namespace {

template <typename T>
void Encode(absl::Span<const T> values, absl::Span<const int64_t> shape,
            v1::Tensor::DType dtype, v1::Tensor* out) {
  out->set_dtype(dtype);
  out->clear_shape();
  for (int64_t d : shape) out->add_shape(d);
  out->set_data(reinterpret_cast<const char*>(values.data()),
                values.size() * sizeof(T));
}

const char* DTypeName(int dtype) {
  switch (dtype) {
    case v1::Tensor::FLOAT32:
      return "float32";
    case v1::Tensor::FLOAT64:
      return "float64";
    case v1::Tensor::INT64:
      return "int64";
    case v1::Tensor::UINT8:
      return "uint8";
    default:
      return "unspecified";
  }
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  std::vector<std::string> parts;
  parts.reserve(shape.size());
  for (int64_t d : shape) {
    parts.push_back(d == kAnyDim ? std::string("*") : absl::StrCat(d));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

template <typename T>
absl::StatusOr<std::vector<T>> Decode(const v1::Tensor& tensor,
                                      v1::Tensor::DType dtype,
                                      absl::Span<const int64_t> expected,
                                      const std::string& name,
                                      int64_t max_elements,
                                      std::vector<int64_t>* shape_out) {
  if (tensor.dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": dtype is ", DTypeName(tensor.dtype()),
                     ", expected ", DTypeName(dtype)));
  }
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (shape.size() != expected.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": shape ", ShapeString(shape), " has rank ",
                     shape.size(), ", expected ", ShapeString(expected)));
  }
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || (expected[i] != kAnyDim && shape[i] != expected[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape ", ShapeString(shape), ", expected ",
                       ShapeString(expected)));
    }
    if (shape[i] != 0 && count > max_elements / shape[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape ", ShapeString(shape),
                       " exceeds the limit of ", max_elements, " elements"));
    }
    count *= shape[i];
  }
  if (count > max_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", count, " elements exceed the limit of ", max_elements));
  }
  const size_t bytes = static_cast<size_t>(count) * sizeof(T);
  if (tensor.data().size() != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", tensor.data().size(), " data bytes for shape ",
                     ShapeString(shape), ", expected ", bytes));
  }
  std::vector<T> values(static_cast<size_t>(count));
  if (bytes > 0) std::memcpy(values.data(), tensor.data().data(), bytes);
  if (shape_out != nullptr) *shape_out = std::move(shape);
  return values;
}

}  // namespace

void EncodeFloat32(absl::Span<const float> values,
                   absl::Span<const int64_t> shape, v1::Tensor* out) {
  Encode(values, shape, v1::Tensor::FLOAT32, out);
}

void EncodeUint8(absl::Span<const uint8_t> values,
                 absl::Span<const int64_t> shape, v1::Tensor* out) {
  Encode(values, shape, v1::Tensor::UINT8, out);
}

absl::StatusOr<std::vector<float>> DecodeFloat32(
    const v1::Tensor& tensor, absl::Span<const int64_t> expected,
    const std::string& name, int64_t max_elements,
    std::vector<int64_t>* shape) {
  return Decode<float>(tensor, v1::Tensor::FLOAT32, expected, name,
                       max_elements, shape);
}

absl::StatusOr<std::vector<uint8_t>> DecodeUint8(
    const v1::Tensor& tensor, absl::Span<const int64_t> expected,
    const std::string& name, int64_t max_elements,
    std::vector<int64_t>* shape) {
  return Decode<uint8_t>(tensor, v1::Tensor::UINT8, expected, name,
                         max_elements, shape);
}

}  // namespace ristretto
