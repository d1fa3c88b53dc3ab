// SHA-256 (FIPS 180-4) for content hashes: dataset ids, artifact hashes.
// Not thread-safe per object; independent objects may be used concurrently.
#ifndef RISTRETTO_COMMON_SHA256_H_
#define RISTRETTO_COMMON_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace ristretto {

// Incremental SHA-256: Update() any number of times, then Finish() once.
class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();

  // Feeds `size` bytes at `data`.
  void Update(const void* data, size_t size);
  void Update(absl::string_view bytes) { Update(bytes.data(), bytes.size()); }

  // Returns the digest. The object must not be used afterwards.
  Digest Finish();

  // One-shot helpers.
  static Digest Hash(absl::string_view bytes);
  static std::string ToHex(const Digest& digest);

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_SHA256_H_
