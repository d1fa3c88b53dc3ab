#include "coordinator/core/param_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/text_util.h"
#include "coordinator/core/search_space.h"

namespace ristretto::coordinator {
namespace {

using learner::TrainerOptions;

constexpr double kInf = HUGE_VAL;

// One registry entry: its public description plus how to read and write it.
// Numeric entries store through set_num/get_num after a range check; kBool
// and kEnum entries through set_text/get_text after a membership check.
struct Entry {
  ParamInfo info;
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  std::function<void(TrainerOptions*, double)> set_num;
  std::function<double(const TrainerOptions&)> get_num;
  std::function<void(TrainerOptions*, const std::string&)> set_text;
  std::function<std::string(const TrainerOptions&)> get_text;
};

Entry Num(OptionType type, std::string name, std::string target,
          std::string doc, double lo, double hi, bool lo_open, bool hi_open,
          std::function<void(TrainerOptions*, double)> set,
          std::function<double(const TrainerOptions&)> get) {
  Entry e;
  e.info.name = std::move(name);
  e.info.type = type;
  e.info.target = std::move(target);
  e.info.doc = std::move(doc);
  e.lo = lo;
  e.hi = hi;
  e.lo_open = lo_open;
  e.hi_open = hi_open;
  e.set_num = std::move(set);
  e.get_num = std::move(get);
  return e;
}

Entry Text(OptionType type, std::string name, std::string target,
           std::string doc, std::vector<std::string> values,
           std::function<void(TrainerOptions*, const std::string&)> set,
           std::function<std::string(const TrainerOptions&)> get) {
  Entry e;
  e.info.name = std::move(name);
  e.info.type = type;
  e.info.target = std::move(target);
  e.info.doc = std::move(doc);
  e.info.values = std::move(values);
  e.set_text = std::move(set);
  e.get_text = std::move(get);
  return e;
}

Entry ReadWhen(Entry e, std::string param, std::vector<std::string> values,
               std::string reason) {
  e.info.read_when = std::move(param);
  e.info.read_when_values = std::move(values);
  e.info.read_when_reason = std::move(reason);
  return e;
}

// Field accessors, so the table below stays one line of intent per entry.
#define RISTRETTO_DOUBLE_FIELD(field)                \
  [](TrainerOptions* o, double v) { o->field = v; }, \
      [](const TrainerOptions& o) { return static_cast<double>(o.field); }
#define RISTRETTO_INT_FIELD(field, type)                                \
  [](TrainerOptions* o, double v) { o->field = static_cast<type>(v); }, \
      [](const TrainerOptions& o) { return static_cast<double>(o.field); }
#define RISTRETTO_BOOL_FIELD(field)                                        \
  [](TrainerOptions* o, const std::string& v) { o->field = v == "true"; }, \
      [](const TrainerOptions& o) {                                        \
        return std::string(o.field ? "true" : "false");                    \
      }

// norm = 2^-k.
Entry NormExp(const char* name, const char* field,
              double env::EnvOptions::*member) {
  return Num(
      OptionType::kDouble, name, absl::StrCat("env.", field),
      absl::StrCat("k sets env.", field, " = 2^-k"), -64, 64, false, false,
      [member](TrainerOptions* o, double k) {
        o->env.*member = std::pow(2.0, -k);
      },
      [member](const TrainerOptions& o) { return -std::log2(o.env.*member); });
}

std::vector<Entry> BuildEntries() {
  const std::vector<std::string> kBool = {"true", "false"};
  std::vector<Entry> entries;
  // ---- PPO
  entries.push_back(Num(OptionType::kDouble, "learning_rate",
                        "ppo.learning_rate", "Adam step size", 0, 1, true,
                        false, RISTRETTO_DOUBLE_FIELD(ppo.learning_rate)));
  entries.push_back(Text(
      OptionType::kEnum, "lr_schedule", "ppo.lr_schedule",
      "constant, or linear decay to 0 at the budget", {"constant", "linear"},
      [](TrainerOptions* o, const std::string& s) {
        (void)learner::ParseLrSchedule(s, &o->ppo.lr_schedule);
      },
      [](const TrainerOptions& o) {
        return std::string(o.ppo.lr_schedule == learner::LrSchedule::kConstant
                               ? "constant"
                               : "linear");
      }));
  entries.push_back(
      Num(OptionType::kInt, "batch_size", "ppo.minibatch_size",
          "samples per gradient step (capped at the rollout size)", 1, 1 << 24,
          false, false, RISTRETTO_INT_FIELD(ppo.minibatch_size, int)));
  entries.push_back(Num(OptionType::kInt, "rollout_steps", "rollout_steps",
                        "steps per env copy per rollout chunk (T)", 1, 1 << 20,
                        false, false, RISTRETTO_INT_FIELD(rollout_steps, int)));
  entries.push_back(Num(OptionType::kInt, "num_envs", "num_envs",
                        "env copies of the single-process trainer (distributed "
                        "actors bring their own --envs)",
                        1, 1 << 16, false, false,
                        RISTRETTO_INT_FIELD(num_envs, int)));
  entries.push_back(Num(
      OptionType::kDouble, "gamma", "ppo.gamma, env.gamma",
      "discount per env step (also the env's discounted-sum reward)", 0, 1,
      false, false,
      [](TrainerOptions* o, double x) {
        o->ppo.gamma = x;
        o->env.gamma = x;
      },
      [](const TrainerOptions& o) { return o.ppo.gamma; }));
  entries.push_back(Num(OptionType::kDouble, "gae_lambda", "ppo.gae_lambda",
                        "GAE lambda (1 without bootstrap = Monte-Carlo return)",
                        0, 1, false, false,
                        RISTRETTO_DOUBLE_FIELD(ppo.gae_lambda)));
  entries.push_back(Text(
      OptionType::kBool, "bootstrap_truncation", "ppo.bootstrap_truncation",
      "bootstrap V(final obs) at truncated episode ends", kBool,
      RISTRETTO_BOOL_FIELD(ppo.bootstrap_truncation)));
  entries.push_back(Num(OptionType::kDouble, "clip_ratio", "ppo.clip_ratio",
                        "epsilon of the clipped surrogate", 0, 1, true, true,
                        RISTRETTO_DOUBLE_FIELD(ppo.clip_ratio)));
  entries.push_back(Text(
      OptionType::kEnum, "value_loss", "ppo.value_loss", "value loss",
      {"mse", "smooth_l1"},
      [](TrainerOptions* o, const std::string& s) {
        (void)learner::ParseValueLoss(s, &o->ppo.value_loss);
      },
      [](const TrainerOptions& o) {
        return std::string(
            o.ppo.value_loss == learner::ValueLoss::kMse ? "mse" : "smooth_l1");
      }));
  entries.push_back(Num(OptionType::kDouble, "value_clip", "ppo.value_clip",
                        "value clipping range (0 = off)", 0, kInf, false, false,
                        RISTRETTO_DOUBLE_FIELD(ppo.value_clip)));
  entries.push_back(Num(OptionType::kDouble, "value_coef", "ppo.value_coef",
                        "weight of the value loss", 0, kInf, false, false,
                        RISTRETTO_DOUBLE_FIELD(ppo.value_coef)));
  entries.push_back(Num(OptionType::kDouble, "entropy_coef", "ppo.entropy_coef",
                        "weight of the entropy bonus", 0, kInf, false, false,
                        RISTRETTO_DOUBLE_FIELD(ppo.entropy_coef)));
  entries.push_back(Text(OptionType::kBool, "normalize_advantages",
                         "ppo.normalize_advantages",
                         "normalise advantages per minibatch", kBool,
                         RISTRETTO_BOOL_FIELD(ppo.normalize_advantages)));
  entries.push_back(Num(OptionType::kInt, "epochs", "ppo.epochs",
                        "passes over each rollout", 1, 1000, false, false,
                        RISTRETTO_INT_FIELD(ppo.epochs, int)));
  entries.push_back(Text(OptionType::kBool, "sample_with_replacement",
                         "ppo.sample_with_replacement",
                         "draw minibatches with replacement", kBool,
                         RISTRETTO_BOOL_FIELD(ppo.sample_with_replacement)));
  entries.push_back(Num(OptionType::kDouble, "max_grad_norm",
                        "ppo.max_grad_norm", "gradient-norm clip (0 = off)", 0,
                        kInf, false, false,
                        RISTRETTO_DOUBLE_FIELD(ppo.max_grad_norm)));
  entries.push_back(Num(OptionType::kDouble, "adam_eps", "ppo.adam_eps",
                        "Adam epsilon", 0, kInf, true, false,
                        RISTRETTO_DOUBLE_FIELD(ppo.adam_eps)));
  entries.push_back(
      Num(OptionType::kInt, "max_policy_lag", "ppo.max_policy_lag",
          "chunks older than this many policy versions are dropped", 0, 1000,
          false, false, RISTRETTO_INT_FIELD(ppo.max_policy_lag, int)));
  // ---- networks
  entries.push_back(Num(
      OptionType::kInt, "width",
      "network.policy_hidden[*], network.value_hidden[*]",
      "units of every hidden layer of both nets", 1, 65536, false, false,
      [](TrainerOptions* o, double x) {
        for (int& w : o->network.policy_hidden) w = static_cast<int>(x);
        for (int& w : o->network.value_hidden) w = static_cast<int>(x);
      },
      [](const TrainerOptions& o) {
        return o.network.policy_hidden.empty()
                   ? 0.0
                   : static_cast<double>(o.network.policy_hidden.front());
      }));
  entries.push_back(Num(
      OptionType::kInt, "layers",
      "network.policy_hidden.size(), network.value_hidden.size()",
      "hidden layers of both nets", 1, 16, false, false,
      [](TrainerOptions* o, double x) {
        for (std::vector<int>* h :
             {&o->network.policy_hidden, &o->network.value_hidden}) {
          const int fill = h->empty() ? 512 : h->back();
          h->resize(static_cast<size_t>(x), fill);
        }
      },
      [](const TrainerOptions& o) {
        return static_cast<double>(o.network.policy_hidden.size());
      }));
  entries.push_back(Text(
      OptionType::kEnum, "activation", "network.activation",
      "hidden-layer activation", {"tanh", "relu"},
      [](TrainerOptions* o, const std::string& s) {
        (void)learner::ParseActivation(s, &o->network.activation);
      },
      [](const TrainerOptions& o) {
        return learner::ActivationName(o.network.activation);
      }));
  entries.push_back(
      Num(OptionType::kDouble, "log_std_init", "network.log_std_init",
          "initial log std of the Gaussian before tanh", -20, 2, false, false,
          RISTRETTO_DOUBLE_FIELD(network.log_std_init)));
  entries.push_back(Text(
      OptionType::kEnum, "log_prob", "network.log_prob",
      "tanh_corrected density, or uncorrected (the original's)",
      {"tanh_corrected", "uncorrected"},
      [](TrainerOptions* o, const std::string& s) {
        (void)learner::ParseLogProbMode(s, &o->network.log_prob);
      },
      [](const TrainerOptions& o) {
        return learner::LogProbModeName(o.network.log_prob);
      }));
  entries.push_back(Text(OptionType::kBool, "normalize_observations",
                         "network.normalize_observations",
                         "running mean/variance observation normalisation",
                         kBool,
                         RISTRETTO_BOOL_FIELD(network.normalize_observations)));
  entries.push_back(
      ReadWhen(Num(OptionType::kDouble, "obs_clip", "network.obs_clip",
                   "clip of normalised observations", 0, kInf, true, false,
                   RISTRETTO_DOUBLE_FIELD(network.obs_clip)),
               "normalize_observations", {"true"},
               "observations are clipped only after normalisation"));
  // ---- env
  entries.push_back(Num(OptionType::kInt, "lookback", "env.lookback",
                        "feature rows in the observation", 1, 4096, false,
                        false, RISTRETTO_INT_FIELD(env.lookback, int)));
  entries.push_back(Num(OptionType::kDouble, "initial_capital",
                        "env.initial_capital", "starting cash, quote currency",
                        0, kInf, true, false,
                        RISTRETTO_DOUBLE_FIELD(env.initial_capital)));
  entries.push_back(Num(OptionType::kDouble, "buy_fee", "env.buy_fee",
                        "proportional buy fee (0.0025 = 0.25 %)", 0, 1, false,
                        true, RISTRETTO_DOUBLE_FIELD(env.buy_fee)));
  entries.push_back(Num(OptionType::kDouble, "sell_fee", "env.sell_fee",
                        "proportional sell fee", 0, 1, false, true,
                        RISTRETTO_DOUBLE_FIELD(env.sell_fee)));
  // Costs are market facts: searchable like the fees, but a search would
  // simply favour the cheapest value, so studies set them in `fixed`.
  entries.push_back(Num(
      OptionType::kDouble, "slippage_bps", "env.slippage_bps",
      "slippage in basis points: buys fill at close*(1+s), sells at "
      "close*(1-s), s = bps/10^4 (set it in fixed; searching it would favour "
      "the cheapest value)",
      0, 1000, false, true, RISTRETTO_DOUBLE_FIELD(env.slippage_bps)));
  entries.push_back(Num(
      OptionType::kDouble, "max_volume_share", "env.max_volume_share",
      "cap on the quantity traded per asset and bar as a share of the bar's "
      "volume, 0 = no cap (needs volumes; set it in fixed)",
      0, 1, false, false, RISTRETTO_DOUBLE_FIELD(env.max_volume_share)));
  entries.push_back(Num(OptionType::kDouble, "buy_safety", "env.buy_safety",
                        "fraction of the affordable quantity bought", 0, 1,
                        true, false, RISTRETTO_DOUBLE_FIELD(env.buy_safety)));
  entries.push_back(
      NormExp("norm_cash_exp", "norm_cash", &env::EnvOptions::norm_cash));
  entries.push_back(
      NormExp("norm_stocks_exp", "norm_stocks", &env::EnvOptions::norm_stocks));
  entries.push_back(
      NormExp("norm_tech_exp", "norm_tech", &env::EnvOptions::norm_tech));
  const std::string kShapedOnly = "only the shaped reward uses it";
  entries.push_back(ReadWhen(
      NormExp("norm_reward_exp", "norm_reward", &env::EnvOptions::norm_reward),
      "reward_mode", {"shaped"}, kShapedOnly));
  entries.push_back(Num(OptionType::kDouble, "norm_action", "env.norm_action",
                        "action scale divisor", 0, kInf, true, false,
                        RISTRETTO_DOUBLE_FIELD(env.norm_action)));
  entries.push_back(ReadWhen(
      Num(OptionType::kDouble, "time_decay_floor", "env.time_decay_floor",
          "floor of the reward's linear time decay", 0, 1, false, false,
          RISTRETTO_DOUBLE_FIELD(env.time_decay_floor)),
      "reward_mode", {"shaped"}, kShapedOnly));
  entries.push_back(
      Num(OptionType::kDouble, "min_cash_reserve", "env.min_cash_reserve",
          "cash kept back from buys, fraction of initial capital", 0, 1, false,
          true, RISTRETTO_DOUBLE_FIELD(env.min_cash_reserve)));
  entries.push_back(ReadWhen(
      Num(OptionType::kDouble, "concentration_penalty",
          "env.concentration_penalty",
          "weight of the concentration/diversification terms", 0, kInf, false,
          false, RISTRETTO_DOUBLE_FIELD(env.concentration_penalty)),
      "reward_mode", {"shaped"}, kShapedOnly));
  entries.push_back(
      Num(OptionType::kDouble, "trailing_stop_pct", "env.trailing_stop_pct",
          "trailing stop below the high-water mark (0 = off)", 0, 1, false,
          true, RISTRETTO_DOUBLE_FIELD(env.trailing_stop_pct)));
  entries.push_back(
      Num(OptionType::kInt, "cooldown_trim_bars", "env.cooldown_trim_bars",
          "bars held without a sell before a forced trim", 1, 1 << 30, false,
          false, RISTRETTO_INT_FIELD(env.cooldown_trim_bars, int)));
  entries.push_back(
      Num(OptionType::kDouble, "trim_fraction", "env.trim_fraction",
          "fraction of a holding sold by a forced trim", 0, 1, true, false,
          RISTRETTO_DOUBLE_FIELD(env.trim_fraction)));
  entries.push_back(Text(
      OptionType::kEnum, "reward_mode", "env.reward_mode",
      "shaped (the original's) or log_return", {"shaped", "log_return"},
      [](TrainerOptions* o, const std::string& s) {
        (void)env::ParseRewardMode(s, &o->env.reward_mode);
      },
      [](const TrainerOptions& o) {
        return std::string(o.env.reward_mode == env::RewardMode::kShaped
                               ? "shaped"
                               : "log_return");
      }));
  entries.push_back(ReadWhen(
      Num(OptionType::kDouble, "reward_scale", "env.reward_scale",
          "multiplier of the log-return reward", 0, kInf, true, false,
          RISTRETTO_DOUBLE_FIELD(env.reward_scale)),
      "reward_mode", {"log_return"}, "only the log_return reward uses it"));
  entries.push_back(Text(
      OptionType::kEnum, "terminal_reward", "env.terminal_reward",
      "step, or discounted_sum on the done step (the original's)",
      {"step", "discounted_sum"},
      [](TrainerOptions* o, const std::string& s) {
        (void)env::ParseTerminalReward(s, &o->env.terminal_reward);
      },
      [](const TrainerOptions& o) {
        return std::string(o.env.terminal_reward == env::TerminalReward::kStep
                               ? "step"
                               : "discounted_sum");
      }));
  // ---- run
  entries.push_back(
      Num(OptionType::kInt, "budget", "budget_env_steps",
          "env steps per run (overrides the study's budget_env_steps)", 1, 1e15,
          false, false, RISTRETTO_INT_FIELD(budget_env_steps, int64_t)));
  entries.push_back(Num(OptionType::kInt, "episode_steps", "episode_steps",
                        "steps per training episode", 1, 1e12, false, false,
                        RISTRETTO_INT_FIELD(episode_steps, int64_t)));
  return entries;
}

#undef RISTRETTO_DOUBLE_FIELD
#undef RISTRETTO_INT_FIELD
#undef RISTRETTO_BOOL_FIELD

const std::vector<Entry>& Entries() {
  static const std::vector<Entry>* entries =
      new std::vector<Entry>(BuildEntries());
  return *entries;
}

const Entry* FindEntry(const std::string& name) {
  for (const Entry& e : Entries()) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

std::string RangeText(const Entry& e) {
  auto bound = [](double b) { return b == kInf ? "inf" : FormatDouble(b); };
  return absl::StrCat(e.lo_open ? "(" : "[", bound(e.lo), ", ", bound(e.hi),
                      e.hi_open ? ")" : "]");
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<ParamInfo>& AllParams() {
  static const std::vector<ParamInfo>* infos = [] {
    auto* out = new std::vector<ParamInfo>;
    for (const Entry& e : Entries()) out->push_back(e.info);
    return out;
  }();
  return *infos;
}

const ParamInfo* FindParam(const std::string& name) {
  const Entry* e = FindEntry(name);
  return e == nullptr ? nullptr : &e->info;
}

absl::Status UnknownParamError(const std::string& name) {
  std::string best;
  size_t best_distance = 3;  // suggest only close names
  for (const Entry& e : Entries()) {
    // A long name is not a typo of a short one: skip the quadratic distance.
    if (name.size() > 64) break;
    const size_t d = EditDistance(name, e.info.name);
    if (d < best_distance) {
      best_distance = d;
      best = e.info.name;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown parameter '", EscapeForMessage(name), "'",
      best.empty() ? "" : absl::StrCat(" (did you mean '", best, "'?)")));
}

absl::Status ApplyParam(const std::string& name, const std::string& value,
                        learner::TrainerOptions* o) {
  const Entry* e = FindEntry(name);
  if (e == nullptr) return UnknownParamError(name);
  const ParamInfo& info = e->info;
  if (info.type == OptionType::kBool || info.type == OptionType::kEnum) {
    if (std::find(info.values.begin(), info.values.end(), value) ==
        info.values.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", name, " = '", value, "' is not one of ",
                       absl::StrJoin(info.values, ", ")));
    }
    e->set_text(o, value);
    return absl::OkStatus();
  }
  double v = 0;
  if (info.type == OptionType::kInt) {
    int64_t i = 0;
    if (!absl::SimpleAtoi(value, &i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", name, " = '", value, "' is not a whole number"));
    }
    v = static_cast<double>(i);
  } else if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter ", name, " = '", value, "' is not a finite number"));
  }
  const bool ok = (e->lo_open ? v > e->lo : v >= e->lo) &&
                  (e->hi_open ? v < e->hi : v <= e->hi);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter ", name, " = ", value, " is outside ", RangeText(*e)));
  }
  e->set_num(o, v);
  return absl::OkStatus();
}

absl::StatusOr<std::string> GetParam(const std::string& name,
                                     const learner::TrainerOptions& o) {
  const Entry* e = FindEntry(name);
  if (e == nullptr) return UnknownParamError(name);
  if (e->get_text) return e->get_text(o);
  const double v = e->get_num(o);
  if (e->info.type == OptionType::kInt) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return FormatDouble(v);
}

}  // namespace ristretto::coordinator
