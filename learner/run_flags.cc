#include "learner/run_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "env/synthetic.h"

namespace ristretto::learner {

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

absl::StatusOr<env::Dataset> LoadDataset(const DatasetSource& source) {
  if (!source.file.empty()) return env::ReadDataset(source.file);
  env::SyntheticMarketOptions synth;
  synth.num_rows = source.synthetic_rows;
  synth.num_assets = static_cast<int>(source.synthetic_assets);
  synth.seed = static_cast<uint64_t>(source.synthetic_seed);
  synth.predictability = source.predictability;
  return env::GenerateSyntheticDataset(synth);
}

}  // namespace ristretto::learner
