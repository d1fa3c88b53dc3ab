// TempDir: a fresh directory under gtest's temporary directory (mkdtemp),
// removed with everything in it when the object goes. For tests that
// write real files and check what is left behind (Entries()).
#ifndef RISTRETTO_TESTS_COMMON_TEMP_DIR_H_
#define RISTRETTO_TESTS_COMMON_TEMP_DIR_H_

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"

namespace ristretto::tests {

class TempDir {
 public:
  // `prefix` names the directory (prefix + 6 random characters).
  explicit TempDir(const std::string& prefix) {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/') pattern += '/';
    pattern += prefix + "XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    const char* made = mkdtemp(buf.data());
    EXPECT_NE(made, nullptr) << "mkdtemp failed for " << pattern;
    if (made != nullptr) dir_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return dir_; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Names of the directory's entries, sorted.
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string dir_;
};

}  // namespace ristretto::tests

#endif  // RISTRETTO_TESTS_COMMON_TEMP_DIR_H_
