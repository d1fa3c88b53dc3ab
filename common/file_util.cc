#include "common/file_util.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ristretto {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace ristretto
