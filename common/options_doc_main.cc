// ristretto-options-doc: prints the run-option table generated from
// common/options_schema.h, or rewrites it into a Markdown file between the
// marker lines (docs/study_format.md):
//
//   ristretto-options-doc                      # the table, on stdout
//   ristretto-options-doc --write FILE         # FILE with a fresh table
//
// --write writes FILE's new text to a hidden temporary file beside it and
// renames it into place, so a failure leaves FILE as it was. Exit codes:
// 0 done, 1 I/O error, 2 bad usage or markers.
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "common/file_util.h"
#include "common/options_schema.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: ristretto-options-doc [--write FILE]\n"
               "  prints the run-option table of common/options_schema.h, or "
               "replaces the\n  table between the marker lines of FILE\n");
  return 2;
}

int Write(const std::string& path) {
  absl::StatusOr<std::string> doc = ristretto::ReadFileToString(path);
  if (!doc.ok()) {
    std::fprintf(stderr, "ristretto-options-doc: %s\n",
                 std::string(doc.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::string> fresh =
      ristretto::WithGeneratedOptionsTable(*doc);
  if (!fresh.ok()) {
    std::fprintf(stderr, "ristretto-options-doc: %s: %s\n", path.c_str(),
                 std::string(fresh.status().message()).c_str());
    return 2;
  }
  if (*fresh == *doc) return 0;
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base =
      slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "." + base + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr;
  if (ok) {
    ok = std::fwrite(fresh->data(), 1, fresh->size(), f) == fresh->size();
    ok = (std::fclose(f) == 0) && ok;
  }
  ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    std::remove(tmp.c_str());
    std::fprintf(stderr, "ristretto-options-doc: cannot write %s\n",
                 path.c_str());
    return 1;
  }
  std::printf("updated the options table of %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::fputs(ristretto::OptionsMarkdownTable().c_str(), stdout);
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--write") return Write(argv[2]);
  return Usage();
}
