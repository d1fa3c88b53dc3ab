#include "common/tensor_codec.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "The tensor wire format is little-endian; add byte swapping."
#endif

namespace ristretto {
namespace {

// One data copy: assign() reuses the string's capacity and does not
// zero-fill (set_data(ptr, n) would build a temporary std::string first and
// copy twice).
template <typename T>
void Encode(absl::Span<const T> values, absl::Span<const int64_t> shape,
            v1::Tensor::DType dtype, v1::Tensor* out) {
  out->set_dtype(dtype);
  out->clear_shape();
  out->mutable_shape()->Reserve(static_cast<int>(shape.size()));
  for (int64_t d : shape) out->add_shape(d);
  out->mutable_data()->assign(reinterpret_cast<const char*>(values.data()),
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

size_t DTypeSize(v1::Tensor::DType dtype) {
  switch (dtype) {
    case v1::Tensor::FLOAT64:
    case v1::Tensor::INT64:
      return 8;
    case v1::Tensor::UINT8:
      return 1;
    default:
      return 4;
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

// A random-access iterator that reads float32 values from little-endian
// bytes (memcpy per element, which compiles to plain loads): lets
// std::vector::insert copy wire bytes into uninitialised capacity without
// type-punning the string's storage.
class Float32Reader {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = float;
  using difference_type = std::ptrdiff_t;
  using pointer = const float*;
  using reference = float;

  explicit Float32Reader(const char* p) : p_(p) {}
  float operator*() const {
    float f;
    std::memcpy(&f, p_, sizeof(f));
    return f;
  }
  float operator[](difference_type n) const { return *(*this + n); }
  Float32Reader& operator++() {
    p_ += sizeof(float);
    return *this;
  }
  Float32Reader operator++(int) {
    Float32Reader r = *this;
    p_ += sizeof(float);
    return r;
  }
  Float32Reader& operator--() {
    p_ -= sizeof(float);
    return *this;
  }
  Float32Reader operator--(int) {
    Float32Reader r = *this;
    p_ -= sizeof(float);
    return r;
  }
  Float32Reader& operator+=(difference_type n) {
    p_ += n * static_cast<difference_type>(sizeof(float));
    return *this;
  }
  Float32Reader& operator-=(difference_type n) { return *this += -n; }
  Float32Reader operator+(difference_type n) const {
    Float32Reader r = *this;
    return r += n;
  }
  Float32Reader operator-(difference_type n) const {
    Float32Reader r = *this;
    return r -= n;
  }
  difference_type operator-(const Float32Reader& o) const {
    return (p_ - o.p_) / static_cast<difference_type>(sizeof(float));
  }
  bool operator==(const Float32Reader& o) const { return p_ == o.p_; }
  bool operator!=(const Float32Reader& o) const { return p_ != o.p_; }
  bool operator<(const Float32Reader& o) const { return p_ < o.p_; }
  bool operator>(const Float32Reader& o) const { return p_ > o.p_; }
  bool operator<=(const Float32Reader& o) const { return p_ <= o.p_; }
  bool operator>=(const Float32Reader& o) const { return p_ >= o.p_; }

 private:
  const char* p_;
};

// True if every value in v[0, n) has |x| <= max_abs: no NaN (it fails every
// comparison), no ±infinity (max_abs is finite). Branch-free so the
// compiler vectorises it.
bool AllWithin(const float* v, size_t n, float max_abs) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    bad |= static_cast<uint32_t>(!(std::fabs(v[i]) <= max_abs));
  }
  return bad == 0;
}

// Elements per copy-then-check block: 16 KiB, well inside L1.
constexpr size_t kFiniteBlock = 4096;

template <typename T>
absl::StatusOr<std::vector<T>> Decode(const v1::Tensor& tensor,
                                      v1::Tensor::DType dtype,
                                      absl::Span<const int64_t> expected,
                                      const std::string& name,
                                      int64_t max_elements,
                                      std::vector<int64_t>* shape_out) {
  absl::StatusOr<int64_t> count =
      CheckTensor(tensor, dtype, expected, name, max_elements, shape_out);
  if (!count.ok()) return count.status();
  std::vector<T> values;
  if constexpr (std::is_same_v<T, float>) {
    AppendFloat32(tensor.data(), /*finite_only=*/false, &values);
  } else {
    static_assert(sizeof(T) == 1);
    const auto* p = reinterpret_cast<const T*>(tensor.data().data());
    values.assign(p, p + *count);
  }
  return values;
}

}  // namespace

TensorView ViewOf(const v1::Tensor& tensor) {
  TensorView view;
  view.dtype = tensor.dtype();
  view.shape.assign(tensor.shape().begin(), tensor.shape().end());
  view.data.push_back(tensor.data());
  view.data_bytes = tensor.data().size();
  return view;
}

absl::StatusOr<int64_t> CheckTensor(const v1::Tensor& tensor,
                                    v1::Tensor::DType dtype,
                                    absl::Span<const int64_t> expected,
                                    absl::string_view name,
                                    int64_t max_elements,
                                    std::vector<int64_t>* shape_out) {
  return CheckTensor(ViewOf(tensor), dtype, expected, name, max_elements,
                     shape_out);
}

absl::StatusOr<int64_t> CheckTensor(const TensorView& tensor,
                                    v1::Tensor::DType dtype,
                                    absl::Span<const int64_t> expected,
                                    absl::string_view name,
                                    int64_t max_elements,
                                    std::vector<int64_t>* shape_out) {
  if (tensor.dtype != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": dtype is ", DTypeName(tensor.dtype),
                     ", expected ", DTypeName(dtype)));
  }
  const absl::Span<const int64_t> shape = tensor.shape;
  if (shape.size() != expected.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": shape ", ShapeString(shape), " has rank ",
                     shape.size(), ", expected ", ShapeString(expected)));
  }
  int64_t count = 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const int64_t dim = shape[i];
    if (dim < 0 || (expected[i] != kAnyDim && dim != expected[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape ", ShapeString(shape), ", expected ",
                       ShapeString(expected)));
    }
    if (dim != 0 && count > max_elements / dim) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": shape ", ShapeString(shape),
                       " exceeds the limit of ", max_elements, " elements"));
    }
    count *= dim;
  }
  if (count > max_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", count, " elements exceed the limit of ", max_elements));
  }
  const size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
  if (tensor.data_bytes != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", tensor.data_bytes, " data bytes for shape ",
                     ShapeString(shape), ", expected ", bytes));
  }
  if (shape_out != nullptr) shape_out->assign(shape.begin(), shape.end());
  return count;
}

int64_t AppendFloat32(absl::string_view bytes, bool finite_only,
                      std::vector<float>* out, float max_abs) {
  const size_t n = bytes.size() / sizeof(float);
  const size_t base = out->size();
  out->reserve(base + n);
  const size_t block = finite_only ? kFiniteBlock : n;
  for (size_t i = 0; i < n; i += block) {
    const size_t m = std::min(block, n - i);
    const char* src = bytes.data() + i * sizeof(float);
    out->insert(out->end(), Float32Reader(src),
                Float32Reader(src + m * sizeof(float)));
    if (finite_only && !AllWithin(out->data() + base + i, m, max_abs)) {
      const float* copied = out->data() + base + i;
      size_t j = 0;
      while (std::fabs(copied[j]) <= max_abs) ++j;
      out->resize(base + i + j);
      return static_cast<int64_t>(i + j);
    }
  }
  return -1;
}

int64_t AppendFloat32(absl::Span<const absl::string_view> pieces,
                      bool finite_only, std::vector<float>* out,
                      float max_abs) {
  size_t total = 0;
  for (absl::string_view p : pieces) total += p.size();
  out->reserve(out->size() + total / sizeof(float));
  int64_t done = 0;           // values appended so far
  char carry[sizeof(float)];  // the start of a value split across ranges
  size_t carried = 0;
  for (absl::string_view p : pieces) {
    if (carried > 0) {
      const size_t take = std::min(sizeof(float) - carried, p.size());
      std::memcpy(carry + carried, p.data(), take);
      carried += take;
      p.remove_prefix(take);
      if (carried < sizeof(float)) continue;
      float value;
      std::memcpy(&value, carry, sizeof(value));
      if (finite_only && !(std::fabs(value) <= max_abs)) return done;
      out->push_back(value);
      ++done;
      carried = 0;
    }
    const size_t whole = p.size() / sizeof(float) * sizeof(float);
    const int64_t bad =
        AppendFloat32(p.substr(0, whole), finite_only, out, max_abs);
    if (bad >= 0) return done + bad;
    done += static_cast<int64_t>(whole / sizeof(float));
    carried = p.size() - whole;
    std::memcpy(carry, p.data() + whole, carried);
  }
  return -1;
}

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
