#include "common/tensor_codec.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TensorCodecTest, Float32RoundTripKeepsValuesAndShapeBitForBit) {
  const std::vector<float> values = {1.5f, -0.0f, 3e-38f, 1e30f, -2.25f, 7.0f};
  v1::Tensor t;
  EncodeFloat32(values, {2, 3}, &t);
  EXPECT_EQ(t.dtype(), v1::Tensor::FLOAT32);
  EXPECT_THAT(t.shape(), ElementsAre(2, 3));
  EXPECT_EQ(t.data().size(), 24u);
  std::vector<int64_t> shape;
  auto decoded = DecodeFloat32(t, {kAnyDim, 3}, "x", 100, &shape);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_THAT(shape, ElementsAre(2, 3));
  ASSERT_EQ(decoded->size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::signbit((*decoded)[i]), std::signbit(values[i]));
    EXPECT_EQ((*decoded)[i], values[i]);
  }
}

TEST(TensorCodecTest, BytesAreLittleEndianIeee754) {
  v1::Tensor t;
  EncodeFloat32(std::vector<float>{1.0f}, {1}, &t);
  // 1.0f = 0x3f800000, little-endian.
  EXPECT_EQ(t.data(), std::string("\x00\x00\x80\x3f", 4));
}

TEST(TensorCodecTest, Uint8RoundTrip) {
  v1::Tensor t;
  EncodeUint8(std::vector<uint8_t>{0, 1, 1, 0}, {2, 2}, &t);
  auto decoded = DecodeUint8(t, {2, 2}, "dones", 100);
  ASSERT_TRUE(decoded.ok());
  EXPECT_THAT(*decoded, ElementsAre(0, 1, 1, 0));
}

TEST(TensorCodecTest, WrongDtypeIsInvalidArgumentNamingTheField) {
  v1::Tensor t;
  EncodeUint8(std::vector<uint8_t>{1}, {1}, &t);
  auto decoded = DecodeFloat32(t, {1}, "chunk.rewards", 100);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(decoded.status().message(),
            "chunk.rewards: dtype is uint8, expected float32");
}

TEST(TensorCodecTest, ShapeMismatchesAreRejectedWithBothShapes) {
  v1::Tensor t;
  EncodeFloat32(std::vector<float>(6, 0.0f), {2, 3}, &t);
  auto rank = DecodeFloat32(t, {6}, "x", 100);
  EXPECT_EQ(rank.status().message(),
            "x: shape [2, 3] has rank 2, expected [6]");
  auto dim = DecodeFloat32(t, {kAnyDim, 4}, "x", 100);
  EXPECT_EQ(dim.status().message(), "x: shape [2, 3], expected [*, 4]");
}

TEST(TensorCodecTest, ByteCountMustMatchTheShape) {
  v1::Tensor t;
  EncodeFloat32(std::vector<float>(6, 0.0f), {2, 3}, &t);
  t.mutable_data()->pop_back();
  auto decoded = DecodeFloat32(t, {2, 3}, "x", 100);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(decoded.status().message()),
              HasSubstr("23 data bytes for shape [2, 3], expected 24"));
}

TEST(TensorCodecTest, NegativeAndOversizedShapesAreRejectedWithoutAllocating) {
  v1::Tensor t;
  t.set_dtype(v1::Tensor::FLOAT32);
  t.add_shape(-2);
  t.add_shape(3);
  EXPECT_EQ(DecodeFloat32(t, {kAnyDim, 3}, "x", 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::Tensor huge;
  huge.set_dtype(v1::Tensor::FLOAT32);
  huge.add_shape(int64_t{1} << 40);
  huge.add_shape(int64_t{1} << 40);
  auto decoded = DecodeFloat32(huge, {kAnyDim, kAnyDim}, "x", 1000);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(decoded.status().message()),
              HasSubstr("exceeds the limit of 1000 elements"));
}

TEST(TensorCodecTest, CheckTensorReturnsTheCountAndTheDecodersErrors) {
  v1::Tensor t;
  EncodeFloat32(std::vector<float>(6, 1.0f), {2, 3}, &t);
  std::vector<int64_t> shape;
  auto count =
      CheckTensor(t, v1::Tensor::FLOAT32, {kAnyDim, 3}, "x", 100, &shape);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 6);
  EXPECT_THAT(shape, ElementsAre(2, 3));
  EXPECT_EQ(
      CheckTensor(t, v1::Tensor::UINT8, {2, 3}, "x", 100).status().message(),
      "x: dtype is float32, expected uint8");
  EXPECT_EQ(CheckTensor(t, v1::Tensor::FLOAT32, {kAnyDim, 4}, "x", 100)
                .status()
                .message(),
            "x: shape [2, 3], expected [*, 4]");
  EXPECT_THAT(std::string(CheckTensor(t, v1::Tensor::FLOAT32, {2, 3}, "x", 5)
                              .status()
                              .message()),
              HasSubstr("exceeds the limit of 5 elements"));
  t.mutable_data()->push_back('\0');
  EXPECT_EQ(
      CheckTensor(t, v1::Tensor::FLOAT32, {2, 3}, "x", 100).status().message(),
      "x: 25 data bytes for shape [2, 3], expected 24");
}

std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

TEST(TensorCodecTest, AppendFloat32AppendsAfterExistingValuesBitForBit) {
  const std::vector<float> values = {-0.0f, 1e-45f, 3.4e38f, -2.5f};
  std::vector<float> out = {7.0f};
  EXPECT_EQ(AppendFloat32(Bytes(values), /*finite_only=*/true, &out), -1);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0], 7.0f);
  EXPECT_EQ(Bytes(std::vector<float>(out.begin() + 1, out.end())),
            Bytes(values));
  EXPECT_EQ(AppendFloat32("", true, &out), -1);
  EXPECT_EQ(out.size(), 5u);
}

TEST(TensorCodecTest, AppendFloat32ReusesCapacity) {
  std::vector<float> out;
  out.reserve(100);
  const float* storage = out.data();
  EXPECT_EQ(AppendFloat32(Bytes(std::vector<float>(100, 0.5f)), true, &out),
            -1);
  EXPECT_EQ(out.data(), storage);
  EXPECT_EQ(out, std::vector<float>(100, 0.5f));
}

TEST(TensorCodecTest, AppendFloat32StopsAtTheFirstNonFiniteValue) {
  // Every kind of non-finite value, early, in a later copy block (blocks
  // are 4096 values) and as the very last value.
  uint32_t negative_nan_bits = 0xffc00001U;
  float negative_nan;
  std::memcpy(&negative_nan, &negative_nan_bits, sizeof(negative_nan));
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::signaling_NaN(),
                              negative_nan,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
  for (float bad : bad_values) {
    for (size_t at : {size_t{0}, size_t{3}, size_t{4095}, size_t{4096},
                      size_t{9000}, size_t{9999}}) {
      std::vector<float> values(10000, 1.0f);
      values[at] = bad;
      if (at < 9999) values[9999] = bad;  // a second one after it
      std::vector<float> out;
      EXPECT_EQ(AppendFloat32(Bytes(values), true, &out),
                static_cast<int64_t>(at))
          << bad << " at " << at;
      EXPECT_EQ(out.size(), at);
      // Without the check every value is copied.
      std::vector<float> all;
      EXPECT_EQ(AppendFloat32(Bytes(values), false, &all), -1);
      ASSERT_EQ(all.size(), values.size());
      EXPECT_EQ(Bytes(all), Bytes(values));
    }
  }
}

TEST(TensorCodecTest, EncodeOverwritesAReusedTensor) {
  v1::Tensor t;
  EncodeFloat32(std::vector<float>(8, 1.0f), {2, 4}, &t);
  EncodeFloat32(std::vector<float>{2.0f, 3.0f}, {2}, &t);
  EXPECT_THAT(t.shape(), ElementsAre(2));
  auto decoded = DecodeFloat32(t, {2}, "x", 100);
  ASSERT_TRUE(decoded.ok());
  EXPECT_THAT(*decoded, ElementsAre(2.0f, 3.0f));
  EncodeUint8(std::vector<uint8_t>{}, {0}, &t);
  EXPECT_EQ(t.dtype(), v1::Tensor::UINT8);
  EXPECT_TRUE(t.data().empty());
}

TEST(TensorCodecTest, DecodeFloat32KeepsNonFiniteValues) {
  // Finiteness is the chunk codec's rule, not the tensor codec's.
  v1::Tensor t;
  EncodeFloat32(std::vector<float>{std::numeric_limits<float>::infinity()}, {1},
                &t);
  auto decoded = DecodeFloat32(t, {1}, "x", 100);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(std::isinf((*decoded)[0]));
}

TEST(TensorCodecTest, AppendFloat32OverPiecesHandlesValuesSplitAcrossThem) {
  std::vector<float> values(5000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * i - 7.0f;
  values[4321] = std::numeric_limits<float>::quiet_NaN();
  const std::string bytes = Bytes(values);
  // Cut at offsets that split floats (1, 3 and 4099 bytes into a value).
  const std::vector<absl::string_view> pieces = {
      absl::string_view(bytes).substr(0, 1),
      absl::string_view(bytes).substr(1, 10),
      absl::string_view(bytes).substr(11, 4099),
      absl::string_view(bytes).substr(4110)};
  std::vector<float> out = {42.0f};
  EXPECT_EQ(AppendFloat32(pieces, /*finite_only=*/true, &out), 4321);
  ASSERT_EQ(out.size(), 1u + 4321u);
  EXPECT_EQ(out[0], 42.0f);
  EXPECT_EQ(Bytes(std::vector<float>(out.begin() + 1, out.end())),
            Bytes(std::vector<float>(values.begin(), values.begin() + 4321)));
  std::vector<float> all;
  EXPECT_EQ(AppendFloat32(pieces, /*finite_only=*/false, &all), -1);
  EXPECT_EQ(Bytes(all), bytes);
  // A NaN that straddles two pieces is found at its index.
  std::vector<float> straddle;
  values[2] = std::numeric_limits<float>::infinity();  // bytes 8..11
  const std::string b2 = Bytes(values);
  const std::vector<absl::string_view> cut = {
      absl::string_view(b2).substr(0, 10), absl::string_view(b2).substr(10)};
  EXPECT_EQ(AppendFloat32(cut, true, &straddle), 2);
  EXPECT_EQ(straddle.size(), 2u);
}

TEST(TensorCodecTest, CheckTensorOnAViewMatchesTheProto) {
  v1::Tensor t;
  EncodeFloat32(std::vector<float>(6, 1.0f), {2, 3}, &t);
  TensorView v = ViewOf(t);
  EXPECT_EQ(v.data_bytes, 24u);
  EXPECT_EQ(*CheckTensor(v, v1::Tensor::FLOAT32, {2, 3}, "x", 100), 6);
  v.data_bytes = 20;
  EXPECT_EQ(
      CheckTensor(v, v1::Tensor::FLOAT32, {2, 3}, "x", 100).status().message(),
      "x: 20 data bytes for shape [2, 3], expected 24");
}

}  // namespace
}  // namespace ristretto
