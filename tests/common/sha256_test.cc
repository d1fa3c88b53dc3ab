#include "common/sha256.h"

#include <string>

#include "common/rng.h"
#include "gtest/gtest.h"

namespace ristretto {
namespace {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256Test, MatchesNistVectors) {
  EXPECT_EQ(Sha256::ToHex(Sha256::Hash("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::ToHex(Sha256::Hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::ToHex(Sha256::Hash(
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::ToHex(Sha256::Hash(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalUpdatesEqualOneShot) {
  const std::string text(1000, 'x');
  Sha256 h;
  for (size_t i = 0; i < text.size(); i += 7) {
    h.Update(text.data() + i, std::min<size_t>(7, text.size() - i));
  }
  EXPECT_EQ(h.Finish(), Sha256::Hash(text));
}

TEST(RngTest, SameSeedGivesSameSequenceAndDifferentSeedsDiffer) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    EXPECT_NE(x, c.Next());
  }
}

TEST(RngTest, UniformIntStaysInRangeAndCoversIt) {
  Rng rng(1);
  int counts[5] = {0, 0, 0, 0, 0};
  for (int i = 0; i < 5000; ++i) {
    const uint64_t v = rng.UniformInt(5);
    ASSERT_LT(v, 5u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_GT(c, 850);  // expected 1000 each
}

TEST(RngTest, NormalHasUnitMomentsWithinSamplingError) {
  Rng rng(3);
  double sum = 0, sum2 = 0;
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) {
    const double x = rng.Normal();
    sum += x;
    sum2 += x * x;
  }
  EXPECT_NEAR(sum / kN, 0.0, 0.01);  // ~4.5 standard errors
  EXPECT_NEAR(sum2 / kN, 1.0, 0.015);
}

}  // namespace
}  // namespace ristretto
