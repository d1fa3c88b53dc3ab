// The study-file parser. Every check returns at the first problem with a
// message that starts with the key path ("space.learning_rate: …").
#include "coordinator/core/study_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "env/features.h"
#include "yaml-cpp/yaml.h"

namespace ristretto::coordinator {
namespace {

// `path` is built from the file's keys: escaped and capped here. Values
// quoted in `what` go through Shown() at the call site.
absl::Status Error(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(
      path.empty() ? what
                   : absl::StrCat(EscapeForMessage(path, 160), ": ", what));
}

// A value from the file as it may appear in a message: non-printable bytes
// escaped, capped (a 50 MB name is never echoed whole).
std::string Shown(absl::string_view value) { return EscapeForMessage(value); }

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

// ---- scalars

absl::StatusOr<std::string> Text(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) return Error(path, "expected a single value");
  return n.Scalar();
}

// Numbers may group digits with underscores ("2_000_000").
std::string WithoutUnderscores(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  return s;
}

absl::StatusOr<double> Double(const YAML::Node& n, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, Text(n, path));
  double v = 0;
  if (!absl::SimpleAtod(WithoutUnderscores(s), &v) || !std::isfinite(v)) {
    return Error(path, absl::StrCat("'", Shown(s), "' is not a finite number"));
  }
  return v;
}

// Whole numbers: "4096", "2_000_000" or "2e6".
absl::StatusOr<int64_t> Int(const YAML::Node& n, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, Text(n, path));
  const std::string digits = WithoutUnderscores(s);
  int64_t v = 0;
  if (absl::SimpleAtoi(digits, &v)) return v;
  double d = 0;
  if (absl::SimpleAtod(digits, &d) && std::isfinite(d) && std::floor(d) == d &&
      std::fabs(d) < 9e18) {
    return static_cast<int64_t>(d);
  }
  return Error(path, absl::StrCat("'", Shown(s), "' is not a whole number"));
}

absl::StatusOr<int> SmallInt(const YAML::Node& n, const std::string& path) {
  ASSIGN_OR_RETURN(int64_t v, Int(n, path));
  if (v < -(1LL << 30) || v > (1LL << 30)) {
    return Error(path, absl::StrCat(v, " is out of range"));
  }
  return static_cast<int>(v);
}

absl::StatusOr<bool> Bool(const YAML::Node& n, const std::string& path) {
  ASSIGN_OR_RETURN(std::string s, Text(n, path));
  const std::string lower = absl::AsciiStrToLower(s);
  if (lower == "true") return true;
  if (lower == "false") return false;
  return Error(path, absl::StrCat("'", Shown(s), "' is not true or false"));
}

// ---- maps

// Checks that `n` is a map whose keys are distinct and all in `allowed`.
absl::Status CheckMap(const YAML::Node& n, const std::string& path,
                      const std::vector<std::string>& allowed) {
  if (!n.IsMap()) {
    return Error(path.empty() ? "study file" : path, "expected a map of keys");
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    ASSIGN_OR_RETURN(std::string key, Text(it->first, path));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Error(path, absl::StrCat("unknown key '", Shown(key), "'",
                                      path.empty() ? " at the top level" : "",
                                      " (expected one of: ",
                                      absl::StrJoin(allowed, ", "), ")"));
    }
    if (!seen.insert(key).second) {
      return Error(path, absl::StrCat("key '", Shown(key), "' appears twice"));
    }
  }
  return absl::OkStatus();
}

// The canonical text of `value` for the option behind parameter `info`:
// numbers reprinted (FormatDouble / whole numbers), booleans lower case.
// Text that is not a number of the option's type is returned as given, for
// ApplyParam to refuse with its own message.
std::string Canonical(const ParamInfo& info, const std::string& value) {
  if (info.type == OptionType::kBool) return absl::AsciiStrToLower(value);
  if (info.type == OptionType::kEnum) return value;
  const std::string digits = WithoutUnderscores(value);
  int64_t i = 0;
  if (info.type == OptionType::kInt && absl::SimpleAtoi(digits, &i)) {
    return absl::StrCat(i);
  }
  double v = 0;
  if (!absl::SimpleAtod(digits, &v) || !std::isfinite(v)) return value;
  if (info.type == OptionType::kDouble) return FormatDouble(v);
  if (std::floor(v) == v && std::fabs(v) < 9e18) {
    return absl::StrCat(static_cast<int64_t>(v));  // "2e6" for an int
  }
  return value;
}

// Applies `value` to default options to check the option accepts it.
absl::Status CheckValue(const std::string& path, const std::string& name,
                        const std::string& value) {
  learner::TrainerOptions o;
  absl::Status s = ApplyParam(name, value, &o);
  if (!s.ok()) return Error(path, std::string(s.message()));
  return absl::OkStatus();
}

// ---- sections

constexpr char kGivenDataset[] = "given";

bool IsGivenDataset(const YAML::Node& n) {
  return n.IsScalar() && n.Scalar() == kGivenDataset;
}

absl::StatusOr<DatasetSpec> ParseDataset(const YAML::Node& n) {
  const std::string path = "dataset";
  if (IsGivenDataset(n)) {
    return Error(path,
                 "'given' names the dataset given to `ristretto up --csv-dir "
                 "DIR` or `--dataset FILE`; this command was given none (give "
                 "dataset.id or dataset.synthetic)");
  }
  RETURN_IF_ERROR(CheckMap(n, path, {"id", "synthetic"}));
  DatasetSpec d;
  if (n["id"] && n["synthetic"]) {
    return Error(path, "give either id or synthetic, not both");
  }
  if (n["id"]) {
    ASSIGN_OR_RETURN(d.id, Text(n["id"], "dataset.id"));
    const bool hex = d.id.size() == 64 &&
                     std::all_of(d.id.begin(), d.id.end(), [](unsigned char c) {
                       return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
                     });
    if (!hex) {
      return Error("dataset.id", absl::StrCat("'", Shown(d.id),
                                              "' is not a dataset id (64 "
                                              "lower-case hex digits)"));
    }
    return d;
  }
  if (!n["synthetic"]) {
    return Error(path,
                 "missing dataset (give dataset.id or dataset.synthetic)");
  }
  const YAML::Node s = n["synthetic"];
  const std::string sp = "dataset.synthetic";
  d.synthetic = true;
  if (!s.IsNull()) {
    RETURN_IF_ERROR(CheckMap(
        s, sp,
        {"rows", "assets", "seed", "predictability", "signal_bars", "interval",
         "trend_strength", "regime_bars", "crash_probability", "correlation",
         "garch_alpha", "garch_beta", "tail_dof", "features"}));
    if (s["rows"]) {
      ASSIGN_OR_RETURN(d.rows, Int(s["rows"], sp + ".rows"));
    }
    if (s["assets"]) {
      ASSIGN_OR_RETURN(d.assets, SmallInt(s["assets"], sp + ".assets"));
    }
    if (s["seed"]) {
      ASSIGN_OR_RETURN(int64_t seed, Int(s["seed"], sp + ".seed"));
      d.seed = static_cast<uint64_t>(seed);
    }
    if (s["predictability"]) {
      ASSIGN_OR_RETURN(d.predictability,
                       Double(s["predictability"], sp + ".predictability"));
    }
    if (s["signal_bars"]) {
      ASSIGN_OR_RETURN(d.signal_bars,
                       Double(s["signal_bars"], sp + ".signal_bars"));
    }
    struct DoubleKey {
      const char* key;
      double* value;
    };
    for (const DoubleKey& k :
         {DoubleKey{"trend_strength", &d.trend_strength},
          DoubleKey{"regime_bars", &d.regime_bars},
          DoubleKey{"crash_probability", &d.crash_probability},
          DoubleKey{"correlation", &d.correlation},
          DoubleKey{"garch_alpha", &d.garch_alpha},
          DoubleKey{"garch_beta", &d.garch_beta}}) {
      if (s[k.key]) {
        ASSIGN_OR_RETURN(*k.value, Double(s[k.key], sp + "." + k.key));
      }
    }
    if (s["tail_dof"]) {
      ASSIGN_OR_RETURN(d.tail_dof, SmallInt(s["tail_dof"], sp + ".tail_dof"));
    }
    if (s["features"]) {
      ASSIGN_OR_RETURN(std::string text, Text(s["features"], sp + ".features"));
      absl::StatusOr<env::FeatureSet> set = env::ParseFeatureSet(text);
      if (!set.ok()) {
        return Error(sp + ".features", std::string(set.status().message()));
      }
      d.feature_set = *set;
    }
    if (s["interval"]) {
      ASSIGN_OR_RETURN(std::string text, Text(s["interval"], sp + ".interval"));
      absl::StatusOr<int64_t> seconds = env::ParseInterval(text);
      if (!seconds.ok()) {
        return Error(sp + ".interval", std::string(seconds.status().message()));
      }
      d.interval_seconds = *seconds;
    }
  }
  if (d.rows < 100) {
    return Error(sp + ".rows", absl::StrCat(d.rows, " must be >= 100"));
  }
  // The generator's own range check, named as the study spells it.
  if (std::optional<env::SyntheticOptionProblem> bad =
          env::FindSyntheticOptionProblem(SyntheticOptions(d))) {
    return Error(absl::StrCat(sp, ".", bad->key), bad->problem);
  }
  return d;
}

absl::StatusOr<LockboxSpec> ParseLockbox(const YAML::Node& n) {
  const std::string path = "lockbox";
  if (!n.IsMap()) {
    return Error(path,
                 "expected {share: F} or {bars: N} (and embargo_bars, refits)");
  }
  RETURN_IF_ERROR(
      CheckMap(n, path, {"share", "bars", "embargo_bars", "refits"}));
  LockboxSpec l;
  if (n["share"] && n["bars"]) {
    return Error(path, "give either share or bars, not both");
  }
  if (n["share"]) {
    ASSIGN_OR_RETURN(l.share, Double(n["share"], "lockbox.share"));
    if (!(l.share > 0 && l.share <= 0.5)) {
      return Error("lockbox.share",
                   absl::StrCat(l.share,
                                " is outside (0, 0.5] (the lockbox cannot be "
                                "turned off: every study keeps one)"));
    }
  }
  if (n["bars"]) {
    ASSIGN_OR_RETURN(l.bars, Int(n["bars"], "lockbox.bars"));
    if (l.bars < 1) {
      return Error("lockbox.bars", absl::StrCat(l.bars, " must be > 0"));
    }
  }
  if (n["embargo_bars"]) {
    ASSIGN_OR_RETURN(l.embargo_bars,
                     Int(n["embargo_bars"], "lockbox.embargo_bars"));
    if (l.embargo_bars < 0) {
      return Error("lockbox.embargo_bars",
                   absl::StrCat(l.embargo_bars, " must be >= 0"));
    }
  }
  if (n["refits"]) {
    int64_t refits = 0;
    ASSIGN_OR_RETURN(refits, Int(n["refits"], "lockbox.refits"));
    if (refits < 1 || refits > kMaxRefits) {
      return Error("lockbox.refits",
                   absl::StrCat(refits, " is outside [1, ", kMaxRefits, "]"));
    }
    l.refits = static_cast<int>(refits);
  }
  return l;
}

absl::StatusOr<CvSpec> ParseCv(const YAML::Node& n) {
  const std::string path = "cv";
  if (!n.IsMap() || !n["scheme"]) {
    return Error(path, "needs a scheme (holdout, walk_forward, cpcv or kfold)");
  }
  CvSpec cv;
  ASSIGN_OR_RETURN(cv.scheme, Text(n["scheme"], "cv.scheme"));
  std::vector<std::string> keys;
  if (cv.scheme == "holdout") {
    keys = {"scheme", "validation_fraction", "embargo_bars"};
  } else if (cv.scheme == "walk_forward") {
    keys = {"scheme", "train_bars", "test_bars", "step_bars", "max_folds"};
  } else if (cv.scheme == "cpcv") {
    keys = {"scheme", "groups", "test_groups", "embargo_bars", "max_folds"};
  } else if (cv.scheme == "kfold") {
    keys = {"scheme", "folds", "embargo_bars", "max_folds"};
  } else {
    return Error("cv.scheme",
                 absl::StrCat("unknown scheme '", cv.scheme,
                              "' (expected holdout, walk_forward, cpcv or "
                              "kfold)"));
  }
  RETURN_IF_ERROR(CheckMap(n, path, keys));
  auto i64 = [&](const char* key, int64_t* out) -> absl::Status {
    if (!n[key]) return absl::OkStatus();
    ASSIGN_OR_RETURN(*out, Int(n[key], Join(path, key)));
    return absl::OkStatus();
  };
  auto i32 = [&](const char* key, int* out) -> absl::Status {
    if (!n[key]) return absl::OkStatus();
    ASSIGN_OR_RETURN(*out, SmallInt(n[key], Join(path, key)));
    return absl::OkStatus();
  };
  if (n["validation_fraction"]) {
    ASSIGN_OR_RETURN(cv.validation_fraction, Double(n["validation_fraction"],
                                                    "cv.validation_fraction"));
  }
  RETURN_IF_ERROR(i64("train_bars", &cv.train_bars));
  RETURN_IF_ERROR(i64("test_bars", &cv.test_bars));
  RETURN_IF_ERROR(i64("step_bars", &cv.step_bars));
  RETURN_IF_ERROR(i64("embargo_bars", &cv.embargo_bars));
  RETURN_IF_ERROR(i32("groups", &cv.groups));
  RETURN_IF_ERROR(i32("test_groups", &cv.test_groups));
  RETURN_IF_ERROR(i32("folds", &cv.folds));
  RETURN_IF_ERROR(i32("max_folds", &cv.max_folds));

  if (cv.embargo_bars < 0) {
    return Error("cv.embargo_bars",
                 absl::StrCat(cv.embargo_bars, " must be >= 0"));
  }
  if (cv.max_folds < 0) {
    return Error("cv.max_folds", absl::StrCat(cv.max_folds, " must be >= 0"));
  }
  if (cv.scheme == "holdout" &&
      !(cv.validation_fraction > 0 && cv.validation_fraction < 1)) {
    return Error("cv.validation_fraction",
                 absl::StrCat(cv.validation_fraction, " is outside (0, 1)"));
  }
  if (cv.scheme == "walk_forward") {
    if (cv.train_bars <= 0) {
      return Error("cv.train_bars",
                   absl::StrCat(cv.train_bars,
                                " must be > 0 (walk_forward needs train_bars "
                                "and test_bars)"));
    }
    if (cv.test_bars <= 0) {
      return Error("cv.test_bars",
                   absl::StrCat(cv.test_bars,
                                " must be > 0 (walk_forward needs train_bars "
                                "and test_bars)"));
    }
    if (cv.step_bars < 0) {
      return Error("cv.step_bars",
                   absl::StrCat(cv.step_bars, " must be >= 0 (0 = test_bars)"));
    }
  }
  if (cv.scheme == "cpcv") {
    if (cv.groups < 2) {
      return Error("cv.groups", absl::StrCat(cv.groups, " must be >= 2"));
    }
    if (cv.test_groups < 1 || cv.test_groups >= cv.groups) {
      return Error("cv.test_groups",
                   absl::StrCat(cv.test_groups,
                                " must be in [1, groups = ", cv.groups, ")"));
    }
  }
  if (cv.scheme == "kfold" && cv.folds < 2) {
    return Error("cv.folds", absl::StrCat(cv.folds, " must be >= 2"));
  }
  return cv;
}

absl::StatusOr<SamplerSpec> ParseSampler(const YAML::Node& n) {
  const std::string path = "sampler";
  RETURN_IF_ERROR(CheckMap(
      n, path,
      {"type", "seed", "startup_trials", "multivariate", "candidates"}));
  SamplerSpec s;
  if (n["type"]) {
    ASSIGN_OR_RETURN(s.type, Text(n["type"], "sampler.type"));
  }
  if (s.type != "random" && s.type != "tpe") {
    return Error("sampler.type", absl::StrCat("unknown sampler '", s.type,
                                              "' (expected random or tpe)"));
  }
  if (s.type == "random" &&
      (n["startup_trials"] || n["multivariate"] || n["candidates"])) {
    return Error(path,
                 "startup_trials, multivariate and candidates apply to tpe "
                 "only");
  }
  if (n["seed"]) {
    ASSIGN_OR_RETURN(int64_t seed, Int(n["seed"], "sampler.seed"));
    s.seed = static_cast<uint64_t>(seed);
  }
  if (n["startup_trials"]) {
    ASSIGN_OR_RETURN(s.startup_trials,
                     SmallInt(n["startup_trials"], "sampler.startup_trials"));
    if (s.startup_trials < 0) {
      return Error("sampler.startup_trials",
                   absl::StrCat(s.startup_trials, " must be >= 0"));
    }
  }
  if (n["multivariate"]) {
    ASSIGN_OR_RETURN(s.multivariate,
                     Bool(n["multivariate"], "sampler.multivariate"));
  }
  if (n["candidates"]) {
    ASSIGN_OR_RETURN(s.candidates,
                     SmallInt(n["candidates"], "sampler.candidates"));
    if (s.candidates < 1) {
      return Error("sampler.candidates",
                   absl::StrCat(s.candidates, " must be >= 1"));
    }
  }
  return s;
}

absl::StatusOr<PrunerSpec> ParsePruner(const YAML::Node& n,
                                       int64_t eval_every) {
  const std::string path = "pruner";
  if (!n.IsMap()) return Error(path, "expected a map of keys");
  PrunerSpec p;
  if (n["type"]) {
    ASSIGN_OR_RETURN(p.type, Text(n["type"], "pruner.type"));
  }
  std::vector<std::string> keys;
  if (p.type == "none") {
    keys = {"type"};
  } else if (p.type == "median") {
    keys = {"type", "warmup_steps", "min_trials"};
  } else if (p.type == "asha") {
    keys = {"type", "warmup_steps", "min_trials", "reduction_factor",
            "min_resource"};
  } else {
    return Error("pruner.type",
                 absl::StrCat("unknown pruner '", p.type,
                              "' (expected none, median or asha)"));
  }
  RETURN_IF_ERROR(CheckMap(n, path, keys));
  if (n["warmup_steps"]) {
    ASSIGN_OR_RETURN(p.warmup_steps,
                     Int(n["warmup_steps"], "pruner.warmup_steps"));
    if (p.warmup_steps < 0) {
      return Error("pruner.warmup_steps",
                   absl::StrCat(p.warmup_steps, " must be >= 0"));
    }
  }
  if (n["min_trials"]) {
    ASSIGN_OR_RETURN(p.min_trials,
                     SmallInt(n["min_trials"], "pruner.min_trials"));
    if (p.min_trials < 1) {
      return Error("pruner.min_trials",
                   absl::StrCat(p.min_trials, " must be >= 1"));
    }
  }
  if (n["reduction_factor"]) {
    ASSIGN_OR_RETURN(p.reduction_factor,
                     Double(n["reduction_factor"], "pruner.reduction_factor"));
    if (!(p.reduction_factor > 1)) {
      return Error("pruner.reduction_factor",
                   absl::StrCat(p.reduction_factor, " must be > 1"));
    }
  }
  if (n["min_resource"]) {
    ASSIGN_OR_RETURN(p.min_resource,
                     Int(n["min_resource"], "pruner.min_resource"));
    if (p.min_resource <= 0) {
      return Error("pruner.min_resource",
                   absl::StrCat(p.min_resource, " must be > 0"));
    }
  }
  if (p.type != "none" && eval_every <= 0) {
    return Error(path, absl::StrCat("the ", p.type,
                                    " pruner needs intermediate scores: set "
                                    "eval_every_env_steps > 0"));
  }
  if (p.type == "asha" && p.min_resource == 0) p.min_resource = eval_every;
  return p;
}

absl::StatusOr<Params> ParseFixed(const YAML::Node& n) {
  if (!n.IsMap()) return Error("fixed", "expected a map of parameter: value");
  Params fixed;
  for (auto it = n.begin(); it != n.end(); ++it) {
    ASSIGN_OR_RETURN(std::string name, Text(it->first, "fixed"));
    const std::string path = Join("fixed", name);
    const ParamInfo* info = FindParam(name);
    if (info == nullptr) {
      return Error("fixed", std::string(UnknownParamError(name).message()));
    }
    if (fixed.count(name) != 0) return Error(path, "appears twice");
    ASSIGN_OR_RETURN(std::string value, Text(it->second, path));
    value = Canonical(*info, value);
    RETURN_IF_ERROR(CheckValue(path, name, value));
    fixed[name] = value;
  }
  return fixed;
}

absl::StatusOr<ParamSpec> ParseParam(const std::string& name,
                                     const YAML::Node& n) {
  const std::string path = Join("space", name);
  const ParamInfo* info = FindParam(name);
  if (info == nullptr) {
    return Error("space", std::string(UnknownParamError(name).message()));
  }
  if (!n.IsMap()) {
    return Error(path,
                 "expected {type, low, high, …} or {choices: […]} (a constant "
                 "belongs under fixed)");
  }
  RETURN_IF_ERROR(CheckMap(
      n, path, {"type", "low", "high", "log", "step", "choices", "when"}));
  ParamSpec p;
  p.name = name;
  std::string type;
  if (n["type"]) {
    ASSIGN_OR_RETURN(type, Text(n["type"], path + ".type"));
  } else if (n["choices"]) {
    type = "categorical";
  } else {
    return Error(path, "missing type (float, int or categorical)");
  }
  if (type == "float") {
    p.kind = ParamKind::kFloat;
  } else if (type == "int") {
    p.kind = ParamKind::kInt;
  } else if (type == "categorical") {
    p.kind = ParamKind::kCategorical;
  } else {
    return Error(path + ".type", absl::StrCat("unknown type '", type,
                                              "' (expected float, int or "
                                              "categorical)"));
  }
  // The kind must fit the option's C++ type.
  if ((info->type == OptionType::kBool || info->type == OptionType::kEnum) &&
      p.kind != ParamKind::kCategorical) {
    return Error(path, absl::StrCat(name, " takes one of ",
                                    absl::StrJoin(info->values, ", "),
                                    "; declare it as categorical"));
  }
  if (info->type == OptionType::kInt && p.kind == ParamKind::kFloat) {
    return Error(path, absl::StrCat(name,
                                    " is a whole number; declare it as int "
                                    "or categorical"));
  }

  if (p.kind == ParamKind::kCategorical) {
    for (const char* key : {"low", "high", "log", "step"}) {
      if (n[key]) {
        return Error(path, absl::StrCat("a categorical parameter takes "
                                        "choices, not ",
                                        key));
      }
    }
    if (!n["choices"] || !n["choices"].IsSequence() ||
        n["choices"].size() == 0) {
      return Error(path, "empty choices (give a non-empty list)");
    }
    for (size_t i = 0; i < n["choices"].size(); ++i) {
      const std::string cpath = absl::StrCat(path, ".choices[", i, "]");
      ASSIGN_OR_RETURN(std::string c, Text(n["choices"][i], cpath));
      c = Canonical(*info, c);
      RETURN_IF_ERROR(CheckValue(cpath, name, c));
      if (std::find(p.choices.begin(), p.choices.end(), c) != p.choices.end()) {
        return Error(path,
                     absl::StrCat("choice '", Shown(c), "' appears twice"));
      }
      p.choices.push_back(c);
    }
  } else {
    if (n["choices"]) {
      return Error(path, absl::StrCat("a ", type,
                                      " parameter takes low and high, not "
                                      "choices"));
    }
    if (!n["low"] || !n["high"]) {
      return Error(path, absl::StrCat("a ", type,
                                      " parameter needs low and "
                                      "high"));
    }
    ASSIGN_OR_RETURN(p.low, Double(n["low"], path + ".low"));
    ASSIGN_OR_RETURN(p.high, Double(n["high"], path + ".high"));
    if (n["log"]) {
      ASSIGN_OR_RETURN(p.log, Bool(n["log"], path + ".log"));
    }
    if (n["step"]) {
      ASSIGN_OR_RETURN(double step, Double(n["step"], path + ".step"));
      p.step = step;
    }
    const std::string range =
        absl::StrCat("[", FormatDouble(p.low), ", ", FormatDouble(p.high), "]");
    if (!(p.low < p.high)) {
      return Error(path, absl::StrCat("range ", range,
                                      " is empty or inverted (low must be < "
                                      "high; put a constant under fixed)"));
    }
    if (p.kind == ParamKind::kInt &&
        (std::floor(p.low) != p.low || std::floor(p.high) != p.high)) {
      return Error(
          path, absl::StrCat("int range ", range, " has a fractional bound"));
    }
    if (p.log && p.low <= 0) {
      return Error(path, absl::StrCat("log range ", range, " needs low > 0"));
    }
    // Structural checks of log/step (ValidateSpace phrases them).
    ParamSpec alone = p;
    absl::Status s = ValidateSpace({alone});
    if (!s.ok()) {
      std::string message(s.message());
      const std::string prefix = absl::StrCat("parameter ", name, ": ");
      if (message.rfind(prefix, 0) == 0)
        message = message.substr(prefix.size());
      return Error(path, message);
    }
    for (const char* key : {"low", "high"}) {
      const double v = std::string(key) == "low" ? p.low : p.high;
      RETURN_IF_ERROR(CheckValue(Join(path, key), name, FormatValue(p, v)));
    }
  }

  if (n["when"]) {
    const YAML::Node w = n["when"];
    const std::string wpath = path + ".when";
    if (!w.IsMap() || w.size() != 1) {
      return Error(wpath, "expected one entry: {parent: value or [values]}");
    }
    auto it = w.begin();
    ASSIGN_OR_RETURN(p.parent, Text(it->first, wpath));
    const ParamInfo* parent = FindParam(p.parent);
    std::vector<YAML::Node> values;
    if (it->second.IsSequence()) {
      for (size_t i = 0; i < it->second.size(); ++i) {
        values.push_back(it->second[i]);
      }
    } else {
      values.push_back(it->second);
    }
    for (const YAML::Node& v : values) {
      ASSIGN_OR_RETURN(std::string text, Text(v, Join(wpath, p.parent)));
      p.parent_values.push_back(parent == nullptr ? text
                                                  : Canonical(*parent, text));
    }
    if (p.parent_values.empty()) {
      return Error(wpath, absl::StrCat("no values given for ", p.parent));
    }
  }
  return p;
}

// The configuration's value of parameter `name` when it is not searched:
// fixed, else the default. `is_default` tells which.
std::string ConfiguredValue(const Params& fixed, const std::string& name,
                            bool* is_default) {
  auto it = fixed.find(name);
  *is_default = it == fixed.end();
  if (!*is_default) return it->second;
  return GetParam(name, learner::TrainerOptions()).value();
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Rejects a fixed or searched parameter whose option is not read in this
// configuration (ParamInfo::read_when).
absl::Status CheckUsed(const StudyConfig& study) {
  std::map<std::string, const ParamSpec*> searched;
  for (const ParamSpec& p : study.space) searched[p.name] = &p;
  auto check = [&](const std::string& name,
                   const ParamSpec* spec) -> absl::Status {
    const ParamInfo& info = *FindParam(name);
    if (info.read_when.empty()) return absl::OkStatus();
    const std::string path = Join(spec != nullptr ? "space" : "fixed", name);
    const std::string& gate = info.read_when;
    const std::string wanted = absl::StrJoin(info.read_when_values, ", ");
    auto gate_it = searched.find(gate);
    if (gate_it == searched.end()) {
      bool is_default = false;
      const std::string value = ConfiguredValue(study.fixed, gate, &is_default);
      if (Contains(info.read_when_values, value)) return absl::OkStatus();
      return Error(path, absl::StrCat(name, " is unused because ", gate, " is ",
                                      value, is_default ? " (the default)" : "",
                                      ": ", info.read_when_reason));
    }
    const ParamSpec& g = *gate_it->second;
    if (spec == nullptr) {
      for (const std::string& c : g.choices) {
        if (Contains(info.read_when_values, c)) return absl::OkStatus();
      }
      return Error(
          path, absl::StrCat(name, " is unused because ", gate, " never takes ",
                             wanted, ": ", info.read_when_reason));
    }
    bool ok = spec->parent == gate && !spec->parent_values.empty();
    for (const std::string& v : spec->parent_values) {
      ok = ok && Contains(info.read_when_values, v);
    }
    if (ok) return absl::OkStatus();
    return Error(path, absl::StrCat(name, " is unused when ", gate, " is not ",
                                    wanted, " (", info.read_when_reason,
                                    "); make it "
                                    "conditional: when: {",
                                    gate, ": [", wanted, "]}"));
  };
  for (const auto& [name, value] : study.fixed) {
    RETURN_IF_ERROR(check(name, nullptr));
  }
  for (const ParamSpec& p : study.space) RETURN_IF_ERROR(check(p.name, &p));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStudyName(const std::string& s) {
  const bool ok =
      !s.empty() && s.size() <= kMaxStudyNameBytes && s[0] != '.' &&
      std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.';
      });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "study name '", Shown(s), "' (", s.size(), " bytes) must be 1-",
      kMaxStudyNameBytes,
      " letters, digits, '-', '_' or '.', not starting with '.' (it names "
      "a directory)"));
}

namespace {

absl::StatusOr<StudyConfig> Parse(const YAML::Node& root) {
  RETURN_IF_ERROR(CheckMap(
      root, "",
      {"name", "dataset", "cv", "budget_env_steps", "eval_every_env_steps",
       "objective", "lockbox", "sampler", "pruner", "concurrency", "max_trials",
       "max_attempts", "fixed", "space"}));
  StudyConfig study;
  if (!root["name"]) return Error("", "missing name");
  ASSIGN_OR_RETURN(study.name, Text(root["name"], "name"));
  if (absl::Status named = CheckStudyName(study.name); !named.ok()) {
    return Error("name", std::string(named.message()));
  }
  if (!root["dataset"]) {
    return Error("", "missing dataset (give dataset.id or dataset.synthetic)");
  }
  ASSIGN_OR_RETURN(study.dataset, ParseDataset(root["dataset"]));
  if (root["cv"]) {
    ASSIGN_OR_RETURN(study.cv, ParseCv(root["cv"]));
  }
  if (!root["budget_env_steps"]) return Error("", "missing budget_env_steps");
  ASSIGN_OR_RETURN(study.budget_env_steps,
                   Int(root["budget_env_steps"], "budget_env_steps"));
  if (study.budget_env_steps <= 0 ||
      study.budget_env_steps > kMaxStudyEnvSteps) {
    return Error("budget_env_steps",
                 absl::StrCat(study.budget_env_steps, " must be in [1, ",
                              kMaxStudyEnvSteps, "]"));
  }
  if (root["eval_every_env_steps"]) {
    ASSIGN_OR_RETURN(study.eval_every_env_steps,
                     Int(root["eval_every_env_steps"], "eval_every_env_steps"));
    if (study.eval_every_env_steps < 0 ||
        study.eval_every_env_steps > kMaxStudyEnvSteps) {
      return Error("eval_every_env_steps",
                   absl::StrCat(study.eval_every_env_steps, " must be in [0, ",
                                kMaxStudyEnvSteps, "] (0 = only at the end)"));
    }
  }
  if (root["objective"]) {
    ASSIGN_OR_RETURN(study.objective, Text(root["objective"], "objective"));
    absl::Status known = learner::CheckObjective(study.objective);
    if (!known.ok()) return Error("objective", std::string(known.message()));
  }
  if (root["lockbox"]) {
    ASSIGN_OR_RETURN(study.lockbox, ParseLockbox(root["lockbox"]));
  }
  if (root["sampler"]) {
    ASSIGN_OR_RETURN(study.sampler, ParseSampler(root["sampler"]));
  }
  if (root["pruner"]) {
    ASSIGN_OR_RETURN(study.pruner,
                     ParsePruner(root["pruner"], study.eval_every_env_steps));
  }
  struct Bounded {
    const char* key;
    int* field;
    int max;
  };
  for (const Bounded& k :
       {Bounded{"concurrency", &study.concurrency, kMaxStudyConcurrency},
        Bounded{"max_trials", &study.max_trials, kMaxStudyTrials},
        Bounded{"max_attempts", &study.max_attempts, kMaxStudyAttempts}}) {
    if (!root[k.key]) continue;
    ASSIGN_OR_RETURN(int64_t v, Int(root[k.key], k.key));
    if (v < 1 || v > k.max) {
      return Error(k.key, absl::StrCat(v, " must be in [1, ", k.max, "]"));
    }
    *k.field = static_cast<int>(v);
  }
  if (root["fixed"] && !root["fixed"].IsNull()) {
    ASSIGN_OR_RETURN(study.fixed, ParseFixed(root["fixed"]));
  }
  if (root["space"] && !root["space"].IsNull()) {
    const YAML::Node space = root["space"];
    if (!space.IsMap()) {
      return Error("space", "expected a map of parameter: {type, …}");
    }
    std::set<std::string> seen;
    for (auto it = space.begin(); it != space.end(); ++it) {
      ASSIGN_OR_RETURN(std::string name, Text(it->first, "space"));
      if (!seen.insert(name).second) {
        return Error(Join("space", name), "appears twice");
      }
      ASSIGN_OR_RETURN(ParamSpec p, ParseParam(name, it->second));
      if (study.fixed.count(name) != 0) {
        return Error(Join("space", name),
                     absl::StrCat(name, " is both fixed and searched"));
      }
      study.space.push_back(std::move(p));
    }
  }
  // Conditions: parents known, categorical, values among their choices.
  absl::Status s = ValidateSpace(study.space);
  if (!s.ok()) return Error("space", std::string(s.message()));
  RETURN_IF_ERROR(CheckUsed(study));
  // CPCV and k-fold train on rows after a test block too, and the features
  // of the first of them are computed from bars inside it: unless the file
  // says otherwise, embargo (and purge) those rows.
  if ((study.cv.scheme == "cpcv" || study.cv.scheme == "kfold") &&
      !root["cv"]["embargo_bars"]) {
    study.cv.embargo_bars =
        study.dataset.synthetic
            ? env::FeatureWarmupRows(study.dataset.feature_set)
            : DefaultEmbargoBars();
  }
  // The synthetic market's size is known here: check the lockbox and the
  // folds fit (the feature warm-up takes a few more rows; BuildRunOptions
  // checks again on the real row count).
  if (study.dataset.synthetic) {
    absl::StatusOr<LockboxLayout> layout =
        MakeLockboxLayout(study.lockbox, study.cv, study.dataset.rows);
    if (!layout.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(layout.status().message(),
                                                     " (the synthetic dataset "
                                                     "has ",
                                                     study.dataset.rows,
                                                     " rows)"));
    }
    absl::Status folds = MakeFolds(study.cv, layout->guard).status();
    if (!folds.ok()) {
      return Error("cv",
                   absl::StrCat(folds.message(),
                                " (the synthetic "
                                "dataset has ",
                                study.dataset.rows, " rows, ", layout->guard,
                                " before the lockbox and its embargo)"));
    }
  }
  return study;
}

// `text` with its top-level `dataset: given` line (or, without a dataset
// key, a new last line) set to `dataset: {id: ID}`, keeping every comment;
// "" when the layout is not one this line edit understands.
std::string EditDatasetLine(const std::string& text, const std::string& id,
                            bool present) {
  const std::string line = absl::StrCat("dataset: {id: ", id, "}");
  if (!present) {
    return absl::StrCat(text, text.empty() || text.back() == '\n' ? "" : "\n",
                        line, "  # the dataset given to ristretto up\n");
  }
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    absl::string_view l(text.data() + begin, end - begin);
    if (absl::ConsumePrefix(&l, "dataset:")) {
      const size_t hash = l.find('#');
      absl::string_view value = absl::StripAsciiWhitespace(l.substr(0, hash));
      if (value == kGivenDataset || value == "\"given\"" ||
          value == "'given'") {
        const std::string comment = hash == absl::string_view::npos
                                        ? "  # given to ristretto up"
                                        : absl::StrCat("  ", l.substr(hash));
        return absl::StrCat(text.substr(0, begin), line, comment,
                            text.substr(end));
      }
      return "";
    }
    begin = end + 1;
  }
  return "";
}

}  // namespace

int64_t DefaultEmbargoBars() { return env::FeatureWarmupRows(); }

absl::StatusOr<std::string> BindStudyDataset(const std::string& yaml_text,
                                             const std::string& dataset_id) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("study file is not valid YAML: line ", e.mark.line + 1,
                     ", column ", e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsMap()) {
    return Error("", "a study file is a map of keys (name, dataset, …)");
  }
  const YAML::Node dataset = root["dataset"];
  if (dataset && dataset.IsMap()) {
    if (dataset["synthetic"]) {
      return Error("dataset.synthetic",
                   absl::StrCat("the study asks for the synthetic market but "
                                "was given dataset ",
                                dataset_id,
                                "; write `dataset: given` (or leave the "
                                "dataset out) to run it on the given data"));
    }
    if (dataset["id"] && dataset["id"].IsScalar()) {
      if (dataset["id"].Scalar() == dataset_id) return yaml_text;
      return Error(
          "dataset.id",
          absl::StrCat("the study names dataset ",
                       Shown(dataset["id"].Scalar()), " but was given dataset ",
                       dataset_id,
                       " (another file or import options); write `dataset: "
                       "given` (or leave the dataset out) to use the given "
                       "one"));
    }
  }
  if (dataset && !IsGivenDataset(dataset)) {
    return yaml_text;  // malformed: ParseStudyConfig names the problem
  }
  std::string bound =
      EditDatasetLine(yaml_text, dataset_id, dataset.IsDefined());
  bool ok = !bound.empty();
  if (ok) {
    try {
      const YAML::Node check = YAML::Load(bound);
      ok = check["dataset"] && check["dataset"].IsMap() &&
           check["dataset"]["id"] &&
           check["dataset"]["id"].as<std::string>() == dataset_id;
    } catch (const YAML::Exception&) {
      ok = false;
    }
  }
  if (!ok) {
    // A layout the line edit does not handle (flow style, …): re-emit the
    // document; comments are lost.
    YAML::Node id_map(YAML::NodeType::Map);
    id_map["id"] = dataset_id;
    root["dataset"] = id_map;
    YAML::Emitter emitter;
    emitter << root;
    bound = absl::StrCat(emitter.c_str(), "\n");
  }
  return bound;
}

absl::Status CheckStudyFitsDataset(const StudyConfig& study,
                                   const DatasetInfo& data) {
  ASSIGN_OR_RETURN(const std::vector<int> order, SampleOrder(study.space));
  for (const bool high : {false, true}) {
    Params corner;
    for (const int k : order) {
      const ParamSpec& spec = study.space[static_cast<size_t>(k)];
      if (!IsActive(spec, corner)) continue;
      if (spec.kind == ParamKind::kCategorical) {
        corner[spec.name] = high ? spec.choices.back() : spec.choices.front();
      } else {
        corner[spec.name] = FormatValue(spec, high ? spec.high : spec.low);
      }
    }
    absl::Status s = BuildRunOptions(study, corner, data).status();
    if (s.ok()) {
      s = BuildFinalRunOptions(study, corner, data, study.budget_env_steps)
              .status();
    }
    if (!s.ok()) {
      if (corner.empty()) return s;
      std::vector<std::string> text;
      for (const auto& [name, value] : corner) {
        text.push_back(absl::StrCat(name, "=", value));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          s.message(), " (at the ", high ? "upper" : "lower",
          " corner of the search space: ", absl::StrJoin(text, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

env::SyntheticMarketOptions SyntheticOptions(const DatasetSpec& spec) {
  env::SyntheticMarketOptions o;
  o.num_assets = spec.assets;
  o.num_rows = spec.rows;
  o.seed = spec.seed;
  o.predictability = spec.predictability;
  o.signal_bars = spec.signal_bars;
  o.interval_seconds = spec.interval_seconds;
  o.trend_strength = spec.trend_strength;
  o.mean_regime_bars = spec.regime_bars;
  o.crash_probability = spec.crash_probability;
  o.correlation = spec.correlation;
  o.garch_alpha = spec.garch_alpha;
  o.garch_beta = spec.garch_beta;
  o.tail_dof = spec.tail_dof;
  o.feature_set = spec.feature_set;
  return o;
}

absl::Status CheckStudyText(absl::string_view text) {
  if (text.size() > kMaxStudyFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("study file is ", text.size(), " bytes; the limit is ",
                     kMaxStudyFileBytes, " (1 MiB)"));
  }
  const size_t bad = FindInvalidUtf8(text);
  if (bad != absl::string_view::npos) {
    const int64_t line = std::count(text.begin(), text.begin() + bad, '\n') + 1;
    return absl::InvalidArgumentError(absl::StrCat(
        "study file is not UTF-8: byte offset ", bad, " (line ", line, ") is ",
        EscapeForMessage(text.substr(bad, 1)), "; save the file as UTF-8"));
  }
  if (text.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "study file contains a NUL byte at byte offset ", text.find('\0')));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadStudyFile(const std::string& path) {
  const std::string shown = EscapeForMessage(path, 200);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open ", shown, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxStudyFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, ": study file is ", st.st_size,
                     " bytes; the limit is ", kMaxStudyFileBytes, " (1 MiB)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("cannot open ", shown));
  // One byte more than the limit: a file that grew since stat() is caught.
  std::string text(kMaxStudyFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", shown));
  }
  absl::Status ok = CheckStudyText(text);
  if (!ok.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(shown, ": ", ok.message()));
  }
  return text;
}

absl::StatusOr<StudyConfig> ParseStudyConfig(const std::string& yaml_text) {
  RETURN_IF_ERROR(CheckStudyText(yaml_text));
  YAML::Node root;
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(yaml_text);
    if (documents.size() > 1) {
      const YAML::Mark mark = documents[1].Mark();
      return absl::InvalidArgumentError(absl::StrCat(
          "study file holds ", documents.size(), " YAML documents",
          mark.is_null() || mark.line < 0
              ? std::string()
              : absl::StrCat(" (the second starts at line ", mark.line + 1,
                             ")"),
          "; a study file is one document: remove the extra '---'"));
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("study file is not valid YAML: line ", e.mark.line + 1,
                     ", column ", e.mark.column + 1, ": ", e.msg));
  }
  // yaml-cpp throws on conversions we do not use; anything it still throws
  // is a malformed document.
  try {
    return Parse(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("study file: ", e.msg, " (line ", e.mark.line + 1, ")"));
  }
}

}  // namespace ristretto::coordinator
