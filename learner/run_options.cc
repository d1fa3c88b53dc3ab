#include "learner/run_options.h"

#include <cmath>
#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/text_util.h"

namespace ristretto::learner {
namespace {

// How one schema option is stored in TrainerOptions. Every value travels as
// a double: numbers as themselves, kBool as 1/0, kChoice as the index into
// the schema's choices (the enums list their values in that order).
struct Accessor {
  std::string_view name;
  std::function<void(TrainerOptions*, double)> set;
  std::function<double(const TrainerOptions&)> get;
};

template <typename T>
Accessor Field(std::string_view name, T TrainerOptions::*part,
               double (*get)(const T&), void (*set)(T*, double)) {
  return Accessor{
      name, [part, set](TrainerOptions* o, double v) { set(&(o->*part), v); },
      [part, get](const TrainerOptions& o) { return get(o.*part); }};
}

// One line per plain field: FIELD(name, part, member).
#define RISTRETTO_FIELD(name, part, member)              \
  Field<decltype(TrainerOptions::part)>(                 \
      name, &TrainerOptions::part,                       \
      [](const decltype(TrainerOptions::part)& p) {      \
        return static_cast<double>(p.member);            \
      },                                                 \
      [](decltype(TrainerOptions::part)* p, double v) {  \
        p->member = static_cast<decltype(p->member)>(v); \
      })
#define RISTRETTO_TOP(name, member)                                           \
  Accessor {                                                                  \
    name,                                                                     \
        [](TrainerOptions* o, double v) {                                     \
          o->member = static_cast<decltype(o->member)>(v);                    \
        },                                                                    \
        [](const TrainerOptions& o) { return static_cast<double>(o.member); } \
  }

// norm = 2^-k.
Accessor NormExp(std::string_view name, double env::EnvOptions::*member) {
  return Accessor{
      name,
      [member](TrainerOptions* o, double k) {
        o->env.*member = std::pow(2.0, -k);
      },
      [member](const TrainerOptions& o) { return -std::log2(o.env.*member); }};
}

std::vector<Accessor> BuildAccessors() {
  return {
      // ---- PPO
      RISTRETTO_FIELD("learning_rate", ppo, learning_rate),
      RISTRETTO_FIELD("lr_schedule", ppo, lr_schedule),
      RISTRETTO_FIELD("batch_size", ppo, minibatch_size),
      RISTRETTO_TOP("rollout_steps", rollout_steps),
      RISTRETTO_TOP("num_envs", num_envs),
      Accessor{"gamma",
               [](TrainerOptions* o, double x) {
                 o->ppo.gamma = x;
                 o->env.gamma = x;
               },
               [](const TrainerOptions& o) { return o.ppo.gamma; }},
      RISTRETTO_FIELD("gae_lambda", ppo, gae_lambda),
      RISTRETTO_FIELD("bootstrap_truncation", ppo, bootstrap_truncation),
      RISTRETTO_FIELD("clip_ratio", ppo, clip_ratio),
      RISTRETTO_FIELD("value_loss", ppo, value_loss),
      RISTRETTO_FIELD("value_clip", ppo, value_clip),
      RISTRETTO_FIELD("value_coef", ppo, value_coef),
      RISTRETTO_FIELD("entropy_coef", ppo, entropy_coef),
      RISTRETTO_FIELD("normalize_advantages", ppo, normalize_advantages),
      RISTRETTO_FIELD("epochs", ppo, epochs),
      RISTRETTO_FIELD("sample_with_replacement", ppo, sample_with_replacement),
      RISTRETTO_FIELD("max_grad_norm", ppo, max_grad_norm),
      RISTRETTO_FIELD("adam_eps", ppo, adam_eps),
      RISTRETTO_FIELD("max_policy_lag", ppo, max_policy_lag),
      RISTRETTO_FIELD("cpu_threads", ppo, cpu_threads),
      // ---- networks
      Accessor{"width",
               [](TrainerOptions* o, double x) {
                 for (int& w : o->network.policy_hidden) {
                   w = static_cast<int>(x);
                 }
                 for (int& w : o->network.value_hidden) {
                   w = static_cast<int>(x);
                 }
               },
               [](const TrainerOptions& o) {
                 return o.network.policy_hidden.empty()
                            ? 0.0
                            : static_cast<double>(
                                  o.network.policy_hidden.front());
               }},
      Accessor{"layers",
               [](TrainerOptions* o, double x) {
                 for (std::vector<int>* h :
                      {&o->network.policy_hidden, &o->network.value_hidden}) {
                   const int fill =
                       h->empty() ? static_cast<int>(OptionDefault("width"))
                                  : h->back();
                   h->resize(static_cast<size_t>(x), fill);
                 }
               },
               [](const TrainerOptions& o) {
                 return static_cast<double>(o.network.policy_hidden.size());
               }},
      RISTRETTO_FIELD("activation", network, activation),
      RISTRETTO_FIELD("log_std_init", network, log_std_init),
      RISTRETTO_FIELD("log_prob", network, log_prob),
      RISTRETTO_FIELD("normalize_observations", network,
                      normalize_observations),
      RISTRETTO_FIELD("obs_clip", network, obs_clip),
      // ---- env
      RISTRETTO_FIELD("lookback", env, lookback),
      RISTRETTO_FIELD("initial_capital", env, initial_capital),
      RISTRETTO_FIELD("buy_fee", env, buy_fee),
      RISTRETTO_FIELD("sell_fee", env, sell_fee),
      RISTRETTO_FIELD("slippage_bps", env, slippage_bps),
      RISTRETTO_FIELD("max_volume_share", env, max_volume_share),
      RISTRETTO_FIELD("buy_safety", env, buy_safety),
      NormExp("norm_cash_exp", &env::EnvOptions::norm_cash),
      NormExp("norm_stocks_exp", &env::EnvOptions::norm_stocks),
      NormExp("norm_tech_exp", &env::EnvOptions::norm_tech),
      NormExp("norm_reward_exp", &env::EnvOptions::norm_reward),
      RISTRETTO_FIELD("action_model", env, action_model),
      RISTRETTO_FIELD("weight_logit_scale", env, weight_logit_scale),
      RISTRETTO_FIELD("rebalance_band", env, rebalance_band),
      RISTRETTO_FIELD("rebalance_rate", env, rebalance_rate),
      RISTRETTO_FIELD("decision_bars", env, decision_bars),
      RISTRETTO_FIELD("position_observation", env, position_observation),
      RISTRETTO_FIELD("min_notional", env, min_notional),
      RISTRETTO_FIELD("norm_action", env, norm_action),
      RISTRETTO_FIELD("time_decay_floor", env, time_decay_floor),
      RISTRETTO_FIELD("min_cash_reserve", env, min_cash_reserve),
      RISTRETTO_FIELD("concentration_penalty", env, concentration_penalty),
      RISTRETTO_FIELD("trailing_stop_pct", env, trailing_stop_pct),
      RISTRETTO_FIELD("cooldown_trim_bars", env, cooldown_trim_bars),
      RISTRETTO_FIELD("trim_fraction", env, trim_fraction),
      RISTRETTO_FIELD("reward_mode", env, reward_mode),
      RISTRETTO_FIELD("reward_scale", env, reward_scale),
      RISTRETTO_FIELD("turnover_penalty", env, turnover_penalty),
      RISTRETTO_FIELD("dsr_eta", env, dsr_eta),
      RISTRETTO_FIELD("terminal_reward", env, terminal_reward),
      // ---- run
      RISTRETTO_TOP("budget", budget_env_steps),
      RISTRETTO_TOP("episode_steps", episode_steps),
      RISTRETTO_TOP("seed", seed),
  };
}

#undef RISTRETTO_FIELD
#undef RISTRETTO_TOP

const Accessor* FindAccessor(absl::string_view name) {
  static const std::vector<Accessor>* accessors =
      new std::vector<Accessor>(BuildAccessors());
  for (const Accessor& a : *accessors) {
    if (absl::string_view(a.name.data(), a.name.size()) == name) return &a;
  }
  return nullptr;
}

absl::string_view View(std::string_view s) { return {s.data(), s.size()}; }

constexpr std::string_view kListFlags[] = {"policy-hidden", "value-hidden"};

absl::StatusOr<std::vector<int>> ParseWidthList(const std::string& flag,
                                                const std::string& text) {
  std::vector<int> widths;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int w = 0;
    if (!absl::SimpleAtoi(part, &w) || w < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, ": bad layer width '", part, "' in '", text, "'"));
    }
    widths.push_back(w);
  }
  return widths;
}

}  // namespace

absl::Status SetRunOption(absl::string_view name, absl::string_view value,
                          TrainerOptions* o) {
  const OptionSpec* spec =
      FindOption(std::string_view(name.data(), name.size()));
  const Accessor* access = FindAccessor(name);
  if (spec == nullptr || access == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown run option '", name, "'"));
  }
  // Values come from study files and command lines: echoed escaped.
  const std::string shown = EscapeForMessage(value);
  double v = 0;
  if (spec->type == OptionType::kBool || spec->type == OptionType::kChoice) {
    const std::vector<std::string_view> choices = OptionChoices(*spec);
    size_t i = 0;
    while (i < choices.size() && View(choices[i]) != value) ++i;
    if (i == choices.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " = '", shown, "' is not one of ",
          absl::StrReplaceAll(View(spec->choices), {{"|", ", "}})));
    }
    // kBool: "true" is choice 0 and stored as 1.
    v = spec->type == OptionType::kBool ? (i == 0 ? 1 : 0)
                                        : static_cast<double>(i);
  } else {
    if (spec->type == OptionType::kInt) {
      int64_t i = 0;
      if (!absl::SimpleAtoi(value, &i)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " = '", shown, "' is not a whole number"));
      }
      v = static_cast<double>(i);
    } else if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " = '", shown, "' is not a finite number"));
    }
    if (!InOptionRange(*spec, v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " = ", shown, " is outside ", OptionRangeText(*spec)));
    }
  }
  access->set(o, v);
  return absl::OkStatus();
}

absl::StatusOr<std::string> GetRunOption(absl::string_view name,
                                         const TrainerOptions& o) {
  const OptionSpec* spec =
      FindOption(std::string_view(name.data(), name.size()));
  const Accessor* access = FindAccessor(name);
  if (spec == nullptr || access == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown run option '", name, "'"));
  }
  const double v = access->get(o);
  switch (spec->type) {
    case OptionType::kBool:
      return std::string(v != 0 ? "true" : "false");
    case OptionType::kChoice: {
      const std::vector<std::string_view> choices = OptionChoices(*spec);
      const size_t i = static_cast<size_t>(v);
      return i < choices.size() ? std::string(choices[i]) : std::string("?");
    }
    case OptionType::kInt:
      return absl::StrCat(static_cast<int64_t>(v));
    case OptionType::kFloat:
      break;
  }
  return FormatOptionNumber(v);
}

std::vector<std::string> RunFlagNames() {
  std::vector<std::string> names;
  for (const OptionSpec& s : kOptionSchema) {
    if (!s.flag.empty()) names.emplace_back(s.flag);
  }
  for (std::string_view f : kListFlags) names.emplace_back(f);
  return names;
}

std::string RunFlagsHelp() {
  std::string out;
  for (const OptionSpec& s : kOptionSchema) {
    if (s.flag.empty()) continue;
    const std::string range =
        s.type == OptionType::kBool || s.type == OptionType::kChoice
            ? absl::StrCat("one of ",
                           absl::StrReplaceAll(View(s.choices), {{"|", ", "}}))
            : absl::StrCat("in ", OptionRangeText(s));
    absl::StrAppend(&out, "  --", View(s.flag),
                    " (default: ", OptionDefaultText(s), ", ", range,
                    s.unit.empty() ? "" : ", ", View(s.unit), ")\n      ",
                    View(s.doc), " [", View(s.name), "]\n");
  }
  const TrainerOptions defaults;
  absl::StrAppend(&out, "  --", View(kListFlags[0]), " (default: ",
                  absl::StrJoin(defaults.network.policy_hidden, ","),
                  ")\n      hidden layer widths of the policy network, and "
                  "of the value network without --",
                  View(kListFlags[1]), "\n");
  absl::StrAppend(&out, "  --", View(kListFlags[1]), " (default: --",
                  View(kListFlags[0]),
                  ")\n      hidden layer widths of the value network\n");
  return out;
}

absl::Status ApplyRunFlags(const std::map<std::string, std::string>& flags,
                           TrainerOptions* o) {
  TrainerOptions out = *o;
  for (const auto& [flag, value] : flags) {
    if (flag == kListFlags[0] || flag == kListFlags[1]) continue;
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : kOptionSchema) {
      if (!s.flag.empty() && View(s.flag) == flag) spec = &s;
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " is not a run option flag"));
    }
    // Malformed text reads like every other flag error of the ristretto
    // tool (common/flags.h); the value is echoed escaped and capped.
    const std::string shown = EscapeForMessage(value);
    int64_t whole = 0;
    double number = 0;
    if (spec->type == OptionType::kInt && !absl::SimpleAtoi(value, &whole)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " expects an integer, got '", shown, "'"));
    }
    if (spec->type == OptionType::kFloat &&
        (!absl::SimpleAtod(value, &number) || !std::isfinite(number))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " expects a finite number, got '", shown, "'"));
    }
    absl::Status s = SetRunOption(View(spec->name), value, &out);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": ", s.message()));
    }
  }
  const auto policy = flags.find(std::string(kListFlags[0]));
  const auto value = flags.find(std::string(kListFlags[1]));
  if (policy != flags.end()) {
    absl::StatusOr<std::vector<int>> w =
        ParseWidthList(policy->first, policy->second);
    if (!w.ok()) return w.status();
    out.network.policy_hidden = *w;
    // One list for both nets unless --value-hidden says otherwise.
    out.network.value_hidden = *w;
  }
  if (value != flags.end()) {
    absl::StatusOr<std::vector<int>> w =
        ParseWidthList(value->first, value->second);
    if (!w.ok()) return w.status();
    out.network.value_hidden = *w;
  }
  *o = std::move(out);
  return absl::OkStatus();
}

absl::StatusOr<TrainerOptions> RunOptionsFromFlags(
    const std::map<std::string, std::string>& flags) {
  TrainerOptions o;
  absl::Status s = ApplyRunFlags(flags, &o);
  if (s.ok()) s = o.env.Validate();
  if (s.ok()) s = o.network.Validate();
  if (s.ok()) s = o.ppo.Validate();
  if (!s.ok()) return s;
  return o;
}

absl::Status CheckLockbox(const TrainerOptions& o) {
  if (o.lockbox_begin < 0) {
    if (o.final_evaluation) {
      return absl::InvalidArgumentError(
          "a final evaluation run needs the study's lockbox (lockbox_begin)");
    }
    return absl::OkStatus();
  }
  if (o.lockbox_guard < 0 || o.lockbox_guard > o.lockbox_begin) {
    return absl::InvalidArgumentError(
        absl::StrCat("lockbox_guard = ", o.lockbox_guard,
                     " must be in [0, lockbox_begin = ", o.lockbox_begin, "]"));
  }
  for (size_t i = 0; i < o.train_domains.size(); ++i) {
    const env::Domain& d = o.train_domains[i];
    if (d.end > o.lockbox_guard) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train domain ", i, " [", d.begin, ", ", d.end,
          ") reaches the lockbox (rows >= ", o.lockbox_guard,
          " are reserved for the final evaluation, embargo included)"));
    }
  }
  if (o.train_domains.empty()) {
    return absl::InvalidArgumentError(
        "a study run must name its train domains (all rows would include the "
        "lockbox)");
  }
  for (size_t i = 0; i < o.validation_domains.size(); ++i) {
    const env::Domain& d = o.validation_domains[i];
    if (o.final_evaluation) {
      if (d.begin < o.lockbox_begin) {
        return absl::InvalidArgumentError(absl::StrCat(
            "final evaluation domain ", i, " [", d.begin, ", ", d.end,
            ") starts before the lockbox (row ", o.lockbox_begin, ")"));
      }
    } else if (d.end > o.lockbox_guard) {
      return absl::InvalidArgumentError(
          absl::StrCat("validation domain ", i, " [", d.begin, ", ", d.end,
                       ") reaches the lockbox (rows >= ", o.lockbox_guard,
                       "): only a trial's final evaluation may read it"));
    }
  }
  if (o.final_evaluation && o.eval_every_env_steps != 0) {
    return absl::InvalidArgumentError(
        "a final evaluation run evaluates once, at the end "
        "(eval_every_env_steps must be 0)");
  }
  return absl::OkStatus();
}

}  // namespace ristretto::learner
