// Small, fast, seedable random generators (SplitMix64 and xoshiro256**)
// used wherever a result must be reproducible from a seed across platforms:
// synthetic markets, env start rows, samplers. Standard <random>
// distributions are implementation-defined, so we derive our own.
// Not thread-safe; each thread or env copy owns its generator.
#ifndef RISTRETTO_COMMON_RNG_H_
#define RISTRETTO_COMMON_RNG_H_

#include <array>
#include <cmath>
#include <cstdint>

namespace ristretto {

// SplitMix64: used to expand one seed into well-mixed state words.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// xoshiro256** by Blackman and Vigna; period 2^256 − 1.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { Seed(seed); }

  void Seed(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t& word : s_) word = SplitMix64(sm);
  }

  // Returns 64 uniformly random bits.
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Returns a double uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Returns an integer uniform in [0, n); n > 0. Lemire's multiply-shift
  // (bias below 2^-64·n, negligible for our n).
  uint64_t UniformInt(uint64_t n) {
    __extension__ using Uint128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<Uint128>(Next()) * n) >> 64);
  }

  // Returns a standard normal deviate (Box–Muller, one value per call).
  double Normal() {
    double u1 = Uniform();
    while (u1 <= 0.0) u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // The full generator state, for checkpoints: set_state(state()) resumes
  // the exact sequence.
  std::array<uint64_t, 4> state() const { return {s_[0], s_[1], s_[2], s_[3]}; }
  void set_state(const std::array<uint64_t, 4>& s) {
    for (int i = 0; i < 4; ++i) s_[i] = s[i];
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_RNG_H_
