#include "cli/run_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "env/synthetic.h"

namespace ristretto::cli {

absl::StatusOr<std::vector<int>> ParseWidths(const std::string& text) {
  std::vector<int> widths;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int w = 0;
    if (!absl::SimpleAtoi(part, &w) || w < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad layer width '", part, "' in '", text, "'"));
    }
    widths.push_back(w);
  }
  return widths;
}

absl::StatusOr<env::Dataset> DatasetFromArgs(const Args& args,
                                             int64_t default_rows,
                                             std::string* path) {
  if (args.Has("dataset")) {
    ASSIGN_OR_RETURN(std::string file, args.RequiredString("dataset"));
    if (path != nullptr) *path = file;
    return env::ReadDataset(file);
  }
  if (path != nullptr) path->clear();
  env::SyntheticMarketOptions synth;
  ASSIGN_OR_RETURN(synth.num_rows, args.Int("synthetic-rows", default_rows));
  ASSIGN_OR_RETURN(int64_t assets, args.Int("synthetic-assets", 7));
  synth.num_assets = static_cast<int>(assets);
  ASSIGN_OR_RETURN(int64_t seed, args.Int("synthetic-seed", 1));
  synth.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(synth.predictability, args.Double("predictability", 0.0));
  return env::GenerateSyntheticDataset(synth);
}

}  // namespace ristretto::cli
