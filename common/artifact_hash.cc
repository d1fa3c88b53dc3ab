#include "common/artifact_hash.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ristretto {

namespace fs = std::filesystem;

absl::Status HashFile(const std::string& path, Sha256* hash) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash->Update(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> PolicyArtifactSha256(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  Sha256 hash;
  if (fs::is_directory(status)) {
    for (const char* name : {"contract.json", "policy.pt"}) {
      RETURN_IF_ERROR(HashFile((fs::path(path) / name).string(), &hash));
    }
  } else if (fs::is_regular_file(status)) {
    RETURN_IF_ERROR(HashFile(path, &hash));
  } else {
    return absl::NotFoundError(
        absl::StrCat("artifact ", path, " does not exist"));
  }
  return Sha256::ToHex(hash.Finish());
}

absl::StatusOr<std::string> CheckpointSha256(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) names.push_back(entry.path().filename());
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot list ", dir, ": ", ec.message()));
  }
  std::sort(names.begin(), names.end());
  Sha256 hash;
  for (const std::string& name : names) {
    hash.Update(name);
    hash.Update(absl::string_view("\0", 1));
    RETURN_IF_ERROR(HashFile((fs::path(dir) / name).string(), &hash));
  }
  return Sha256::ToHex(hash.Finish());
}

}  // namespace ristretto
