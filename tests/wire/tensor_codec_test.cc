#include "common/tensor_codec.h"

#include <cmath>
#include <cstdint>
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

}  // namespace
}  // namespace ristretto
