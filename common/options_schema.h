// The run-options schema: the one declaration of every option that shapes a
// run — its name, type, range or choices, default, unit, one-line doc, the
// component that reads it, whether a study may set it, and the process flag
// that sets it outside studies.
//
// Everything else derives from this table: the default member initializers
// of learner::PpoOptions, NetworkOptions and TrainerOptions; the range
// checks of their Validate() methods; the study parameter registry
// (coordinator/core/param_registry.h); the run flags of `ristretto train`
// and `ristretto-learner` (learner/run_options.h, ApplyRunFlags); and the
// parameter table of docs/study_format.md (OptionsMarkdownTable, checked by
// tests/common/options_schema_test.cc). env::EnvOptions keeps its own
// initializers (env/ sits below this layer's users) and a test holds them
// equal to the defaults here.
//
// Adding an option: one entry below, plus the field and the code that reads
// it, plus its accessor in learner/run_options.cc.
//
// Plain constexpr data and pure functions; thread-safe. No torch.
#ifndef RISTRETTO_COMMON_OPTIONS_SCHEMA_H_
#define RISTRETTO_COMMON_OPTIONS_SCHEMA_H_

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ristretto {

enum class OptionType {
  kFloat,   // a double; range [low, high] with open ends as flagged
  kInt,     // a whole number (int or int64_t field); range as kFloat
  kBool,    // "true" or "false"
  kChoice,  // one of `choices` (an enum field; enum order = choice order)
};

// The component that reads an option at run time.
enum class OptionReader {
  kEnv,          // the trading env (actors and the learner's evaluation)
  kPpo,          // the learner's PPO update and networks
  kRun,          // the run loop: budget, episodes, rollout sizes, seed
  kCoordinator,  // the coordinator only
};

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

struct OptionSpec {
  std::string_view name;  // study-file name, e.g. "learning_rate"
  OptionType type = OptionType::kFloat;
  OptionReader reader = OptionReader::kPpo;
  // The field(s) set, e.g. "ppo.minibatch_size" (documentation only).
  std::string_view target;
  // kFloat / kInt: the valid range; kUnbounded for no upper bound.
  double low = 0;
  double high = 0;
  bool low_open = false;
  bool high_open = false;
  // kChoice: the accepted values separated by '|', in enum order; kBool:
  // "true|false".
  std::string_view choices;
  // kFloat / kInt: the default; kBool: 1 or 0; kChoice: the index into
  // `choices` of the default.
  double default_value = 0;
  std::string_view unit;  // e.g. "env steps"; empty where dimensionless
  std::string_view doc;   // one line: meaning
  // True: a study may search it (`space`) or fix it (`fixed`). False: set
  // only by process flags (e.g. the seed, which studies derive per run).
  bool searchable = true;
  // The flag of `ristretto train` / `ristretto-learner` that sets it (without
  // "--"); empty = no flag.
  std::string_view flag;
  // The option is read only when the option `read_when` (kChoice or kBool)
  // has one of `read_when_values` ('|'-separated); empty = always read.
  std::string_view read_when;
  std::string_view read_when_values;
  std::string_view read_when_reason;  // e.g. "only the shaped reward uses it"

  constexpr OptionSpec Unit(std::string_view u) const {
    OptionSpec s = *this;
    s.unit = u;
    return s;
  }
  constexpr OptionSpec Flag(std::string_view f) const {
    OptionSpec s = *this;
    s.flag = f;
    return s;
  }
  constexpr OptionSpec NotSearchable() const {
    OptionSpec s = *this;
    s.searchable = false;
    return s;
  }
  constexpr OptionSpec ReadWhen(std::string_view gate, std::string_view values,
                                std::string_view reason) const {
    OptionSpec s = *this;
    s.read_when = gate;
    s.read_when_values = values;
    s.read_when_reason = reason;
    return s;
  }
};

namespace options_schema_internal {

struct Range {
  double low, high;
  bool low_open, high_open;
};
constexpr Range Closed(double lo, double hi) { return {lo, hi, false, false}; }
constexpr Range OpenLow(double lo, double hi) { return {lo, hi, true, false}; }
constexpr Range OpenHigh(double lo, double hi) { return {lo, hi, false, true}; }
constexpr Range Open(double lo, double hi) { return {lo, hi, true, true}; }

constexpr OptionSpec Numeric(OptionType type, std::string_view name,
                             OptionReader reader, std::string_view target,
                             double def, Range r, std::string_view doc) {
  OptionSpec s;
  s.name = name;
  s.type = type;
  s.reader = reader;
  s.target = target;
  s.default_value = def;
  s.low = r.low;
  s.high = r.high;
  s.low_open = r.low_open;
  s.high_open = r.high_open;
  s.doc = doc;
  return s;
}
constexpr OptionSpec Float(std::string_view name, OptionReader reader,
                           std::string_view target, double def, Range r,
                           std::string_view doc) {
  return Numeric(OptionType::kFloat, name, reader, target, def, r, doc);
}
constexpr OptionSpec Int(std::string_view name, OptionReader reader,
                         std::string_view target, double def, Range r,
                         std::string_view doc) {
  return Numeric(OptionType::kInt, name, reader, target, def, r, doc);
}
constexpr OptionSpec Bool(std::string_view name, OptionReader reader,
                          std::string_view target, bool def,
                          std::string_view doc) {
  OptionSpec s;
  s.name = name;
  s.type = OptionType::kBool;
  s.reader = reader;
  s.target = target;
  s.choices = "true|false";
  s.default_value = def ? 1 : 0;
  s.doc = doc;
  return s;
}
constexpr OptionSpec Choice(std::string_view name, OptionReader reader,
                            std::string_view target, std::string_view choices,
                            int default_index, std::string_view doc) {
  OptionSpec s;
  s.name = name;
  s.type = OptionType::kChoice;
  s.reader = reader;
  s.target = target;
  s.choices = choices;
  s.default_value = default_index;
  s.doc = doc;
  return s;
}

constexpr OptionReader kEnv = OptionReader::kEnv;
constexpr OptionReader kPpo = OptionReader::kPpo;
constexpr OptionReader kRun = OptionReader::kRun;
constexpr double kInf = kUnbounded;

// THE table, in the documented order (PPO, networks, env, run).
inline constexpr OptionSpec kTable[] = {
    // ---- PPO
    Float("learning_rate", kPpo, "ppo.learning_rate", 3e-4, OpenLow(0, 1),
          "Adam step size")
        .Flag("lr"),
    Choice("lr_schedule", kPpo, "ppo.lr_schedule", "constant|linear", 0,
           "constant, or linear decay to 0 at the budget")
        .Flag("lr-schedule"),
    Int("batch_size", kPpo, "ppo.minibatch_size", 2048, Closed(1, 1 << 24),
        "samples per gradient step (capped at the rollout size)")
        .Unit("samples")
        .Flag("minibatch"),
    Int("rollout_steps", kRun, "rollout_steps", 128, Closed(1, 1 << 20),
        "steps per env copy per rollout chunk (T); in a study also the "
        "actors' chunk length")
        .Unit("env steps")
        .Flag("rollout"),
    Int("num_envs", kRun, "num_envs", 8, Closed(1, 1 << 16),
        "env copies of `ristretto train` (B); in a study the learner updates "
        "every num_envs × rollout_steps samples, whatever copies the actors "
        "step (their own --envs)")
        .Flag("envs"),
    Float("gamma", kPpo, "ppo.gamma, env.gamma", 0.99, Closed(0, 1),
          "discount per env step (also the env's discounted-sum reward)")
        .Flag("gamma"),
    Float("gae_lambda", kPpo, "ppo.gae_lambda", 0.95, Closed(0, 1),
          "GAE lambda (1 without bootstrap = Monte-Carlo return)")
        .Flag("lambda"),
    Bool("bootstrap_truncation", kPpo, "ppo.bootstrap_truncation", true,
         "bootstrap V(final obs) at truncated episode ends"),
    Float("clip_ratio", kPpo, "ppo.clip_ratio", 0.2, Open(0, 1),
          "epsilon of the clipped surrogate")
        .Flag("clip"),
    Choice("value_loss", kPpo, "ppo.value_loss", "mse|smooth_l1", 0,
           "value loss"),
    Float("value_clip", kPpo, "ppo.value_clip", 0, Closed(0, kInf),
          "value clipping range (0 = off)"),
    Float("value_coef", kPpo, "ppo.value_coef", 0.5, Closed(0, kInf),
          "weight of the value loss"),
    Float("entropy_coef", kPpo, "ppo.entropy_coef", 0, Closed(0, kInf),
          "weight of the entropy bonus")
        .Flag("entropy"),
    Bool("normalize_advantages", kPpo, "ppo.normalize_advantages", true,
         "normalise advantages per minibatch"),
    Int("epochs", kPpo, "ppo.epochs", 10, Closed(1, 1000),
        "passes over each rollout")
        .Flag("epochs"),
    Bool("sample_with_replacement", kPpo, "ppo.sample_with_replacement", false,
         "draw minibatches with replacement"),
    Float("max_grad_norm", kPpo, "ppo.max_grad_norm", 0.5, Closed(0, kInf),
          "gradient-norm clip (0 = off)")
        .Flag("max-grad-norm"),
    Float("adam_eps", kPpo, "ppo.adam_eps", 1e-5, OpenLow(0, kInf),
          "Adam epsilon"),
    Int("max_policy_lag", kPpo, "ppo.max_policy_lag", 4, Closed(0, 1000),
        "chunks older than this many policy versions are dropped")
        .Unit("policy versions")
        .Flag("max-policy-lag"),
    Int("cpu_threads", kPpo, "ppo.cpu_threads", 1, Closed(0, kInf),
        "LibTorch intra-op threads on CPU (0 = leave as is); a property of "
        "the learner process, not of a study")
        .NotSearchable()
        .Flag("threads"),
    // ---- networks
    Int("width", kPpo, "network.policy_hidden[*], network.value_hidden[*]", 512,
        Closed(1, 65536), "units of every hidden layer of both nets")
        .Unit("units"),
    Int("layers", kPpo,
        "network.policy_hidden.size(), network.value_hidden.size()", 2,
        Closed(1, 16), "hidden layers of both nets"),
    Choice("activation", kPpo, "network.activation", "tanh|relu", 0,
           "hidden-layer activation"),
    Float("log_std_init", kPpo, "network.log_std_init", -0.5, Closed(-20, 2),
          "initial log std of the Gaussian before tanh"),
    Choice("log_prob", kPpo, "network.log_prob", "tanh_corrected|uncorrected",
           0, "tanh_corrected density, or uncorrected (the original's)")
        .Flag("log-prob"),
    Bool("normalize_observations", kPpo, "network.normalize_observations", true,
         "running mean/variance observation normalisation"),
    Float("obs_clip", kPpo, "network.obs_clip", 10, OpenLow(0, kInf),
          "clip of normalised observations")
        .ReadWhen("normalize_observations", "true",
                  "observations are clipped only after normalisation"),
    // ---- env
    Int("lookback", kEnv, "env.lookback", 1, Closed(1, 4096),
        "feature rows in the observation")
        .Unit("rows")
        .Flag("lookback"),
    Float("initial_capital", kEnv, "env.initial_capital", 500, OpenLow(0, kInf),
          "starting cash")
        .Unit("quote currency"),
    Float("buy_fee", kEnv, "env.buy_fee", 0.0025, OpenHigh(0, 1),
          "proportional buy fee (0.0025 = 0.25 %)")
        .Unit("fraction")
        .Flag("buy-fee"),
    Float("sell_fee", kEnv, "env.sell_fee", 0.0025, OpenHigh(0, 1),
          "proportional sell fee")
        .Unit("fraction")
        .Flag("sell-fee"),
    Float("slippage_bps", kEnv, "env.slippage_bps", 5, OpenHigh(0, 1000),
          "slippage: buys fill at close*(1+s), sells at close*(1-s), s = "
          "bps/10^4 (set it in fixed; searching it would favour the cheapest "
          "value)")
        .Unit("basis points"),
    Float("max_volume_share", kEnv, "env.max_volume_share", 0, Closed(0, 1),
          "cap on the quantity traded per asset and bar as a share of the "
          "bar's volume, 0 = no cap (needs volumes; set it in fixed)")
        .Unit("fraction"),
    Float("buy_safety", kEnv, "env.buy_safety", 0.99, OpenLow(0, 1),
          "fraction of the affordable quantity bought")
        .Unit("fraction"),
    Float("norm_cash_exp", kEnv, "env.norm_cash", 11, Closed(-64, 64),
          "k sets env.norm_cash = 2^-k")
        .Unit("log2")
        .ReadWhen("position_observation", "holdings",
                  "only the holdings observation uses it"),
    Float("norm_stocks_exp", kEnv, "env.norm_stocks", 8, Closed(-64, 64),
          "k sets env.norm_stocks = 2^-k")
        .Unit("log2")
        .ReadWhen("position_observation", "holdings",
                  "only the holdings observation uses it"),
    Float("norm_tech_exp", kEnv, "env.norm_tech", 14, Closed(-64, 64),
          "k sets env.norm_tech = 2^-k")
        .Unit("log2"),
    Float("norm_reward_exp", kEnv, "env.norm_reward", 9, Closed(-64, 64),
          "k sets env.norm_reward = 2^-k")
        .Unit("log2")
        .ReadWhen("reward_mode", "shaped", "only the shaped reward uses it"),
    Choice("action_model", kEnv, "env.action_model", "shares|weights", 1,
           "weights: the action is the target portfolio, softmax(k*a, 0) over "
           "the assets and cash, traded outside a no-trade band; shares: the "
           "original's coin quantities (docs/env_actions.md)")
        .Flag("action-model"),
    Float("weight_logit_scale", kEnv, "env.weight_logit_scale", 5,
          OpenLow(0, 1000),
          "k of the target weights softmax(k*a, 0): actions in [-1, 1] span "
          "logits in [-k, k] against the cash logit 0")
        .ReadWhen("action_model", "weights",
                  "only the target-weight action model uses it"),
    Float("rebalance_band", kEnv, "env.rebalance_band", 0.02, OpenHigh(0, 1),
          "no-trade band: an asset is traded only when its weight is off its "
          "target by more than this (set it in fixed)")
        .Unit("fraction of the portfolio")
        .ReadWhen("action_model", "weights",
                  "only the target-weight action model uses it"),
    Float("rebalance_rate", kEnv, "env.rebalance_rate", 1, OpenLow(0, 1),
          "share of an asset's gap to its target traded in one bar (1 = all "
          "of it; below 1 the position follows a flickering target like a "
          "moving average)")
        .Unit("fraction of the gap")
        .ReadWhen("action_model", "weights",
                  "only the target-weight action model uses it"),
    Int("decision_bars", kEnv, "env.decision_bars", 1, Closed(1, 10000),
        "bars per decision: the policy acts every this many bars and the "
        "portfolio is held untouched in between (1 = every bar; 24 on hourly "
        "bars = once a day; needs no trailing stop and no forced trim)")
        .Unit("bars"),
    Choice("position_observation", kEnv, "env.position_observation",
           "holdings|weights", 1,
           "what the observation says about the account: weights (the cash "
           "and asset shares of its value) or holdings (the original's "
           "cash*norm_cash and coins*norm_stocks)"),
    Float("min_notional", kEnv, "env.min_notional", 5, Closed(0, kInf),
          "smallest order traded, at the close (smaller orders are skipped)")
        .Unit("quote currency"),
    Float("norm_action", kEnv, "env.norm_action", 1, OpenLow(0, kInf),
          "position sizing: action 1 trades 1/norm_action of the initial "
          "capital per asset and bar (the original's 100 moves at most ~1 % "
          "per bar)")
        .Flag("norm-action")
        .ReadWhen("action_model", "shares",
                  "only the shares action model uses it"),
    Float("time_decay_floor", kEnv, "env.time_decay_floor", 0, Closed(0, 1),
          "floor of the reward's linear time decay")
        .ReadWhen("reward_mode", "shaped", "only the shaped reward uses it"),
    Float("min_cash_reserve", kEnv, "env.min_cash_reserve", 0, OpenHigh(0, 1),
          "cash kept back from buys, fraction of initial capital")
        .Unit("fraction"),
    Float("concentration_penalty", kEnv, "env.concentration_penalty", 0,
          Closed(0, kInf), "weight of the concentration/diversification terms")
        .ReadWhen("reward_mode", "shaped", "only the shaped reward uses it"),
    Float("trailing_stop_pct", kEnv, "env.trailing_stop_pct", 0, OpenHigh(0, 1),
          "trailing stop below the high-water mark (0 = off)")
        .Unit("fraction"),
    Int("cooldown_trim_bars", kEnv, "env.cooldown_trim_bars", 0,
        Closed(0, 1 << 30),
        "bars held without a sell before a forced trim; 0 = never (the "
        "original's 48 penalised holding)")
        .Unit("bars"),
    Float("trim_fraction", kEnv, "env.trim_fraction", 0.05, OpenLow(0, 1),
          "fraction of a holding sold by a forced trim")
        .Unit("fraction"),
    Choice("reward_mode", kEnv, "env.reward_mode",
           "shaped|log_return|differential_sharpe", 1,
           "log_return: log(V'/V) net of every cost; differential_sharpe: "
           "Moody & Saffell's; shaped: the original's (docs/env_actions.md)")
        .Flag("reward"),
    Float("reward_scale", kEnv, "env.reward_scale", 1, OpenLow(0, kInf),
          "multiplier of the log-return and differential-Sharpe rewards")
        .ReadWhen("reward_mode", "log_return|differential_sharpe",
                  "the shaped reward does not use it"),
    Float("turnover_penalty", kEnv, "env.turnover_penalty", 0, Closed(0, kInf),
          "lambda: each step's return is reduced by lambda * notional traded "
          "/ value before trading, beyond the fees paid")
        .ReadWhen("reward_mode", "log_return|differential_sharpe",
                  "the shaped reward does not use it"),
    Float("dsr_eta", kEnv, "env.dsr_eta", 0.01, Open(0, 1),
          "rate of the differential Sharpe ratio's moving averages")
        .ReadWhen("reward_mode", "differential_sharpe",
                  "only the differential_sharpe reward uses it"),
    Choice("terminal_reward", kEnv, "env.terminal_reward",
           "step|discounted_sum", 0,
           "step, or discounted_sum on the done step (the original's)"),
    // ---- run
    Int("budget", kRun, "budget_env_steps", 100000, Closed(1, 1e15),
        "env steps per run (overrides the study's budget_env_steps)")
        .Unit("env steps")
        .Flag("budget"),
    Int("episode_steps", kRun, "episode_steps", 1024, Closed(1, 1e12),
        "steps per training episode")
        .Unit("env steps")
        .Flag("episode"),
    Int("seed", kRun, "seed", 1, Closed(0, 9007199254740992.0),
        "the run's random seed (a study derives one per run from its sampler "
        "seed)")
        .NotSearchable()
        .Flag("seed"),
};

}  // namespace options_schema_internal

// Every run option, in the documented order (PPO, networks, env, run).
inline constexpr const auto& kOptionSchema = options_schema_internal::kTable;

// Returns the entry named `name`, or nullptr.
constexpr const OptionSpec* FindOption(std::string_view name) {
  for (const OptionSpec& s : kOptionSchema) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Reports an unknown option name on stderr and aborts (a programming error,
// never user input). Not constexpr, so reaching it while constant-evaluating
// is a compile error.
[[noreturn]] void DieUnknownRunOption(std::string_view name);

// The default of `name` (OptionSpec::default_value), for the struct
// initializers that derive from the schema. An unknown name is a programming
// error: a compile error where constant-evaluated, an abort otherwise (no
// exception, so no main() has one escaping).
constexpr double OptionDefault(std::string_view name) {
  const OptionSpec* s = FindOption(name);
  if (s == nullptr) DieUnknownRunOption(name);
  return s->default_value;
}

// The values of a kChoice or kBool option, in order; empty otherwise.
std::vector<std::string_view> OptionChoices(const OptionSpec& spec);

// The default as study-file text: "0.0003", "2048", "true", "constant".
std::string OptionDefaultText(const OptionSpec& spec);

// The shortest decimal text that reads back to exactly `v` ("0.0003",
// "16777216", "1e-05"); "inf"/"-inf"/"nan" for non-finite values.
std::string FormatOptionNumber(double v);

// "(0, 1]", "[0, inf]": the range of a kFloat or kInt option.
std::string OptionRangeText(const OptionSpec& spec);

// True when `v` is finite and inside the range of `spec` (kFloat / kInt).
bool InOptionRange(const OptionSpec& spec, double v);

// OK when InOptionRange(spec, v); otherwise kInvalidArgument
// "<component> option <field> = <v> is outside <range>", or, for a range
// without an upper bound, "... must be >= <low> and finite" (kFloat) /
// "... must be >= <low>" (kInt). `field` is the C++ field the caller
// validates (e.g. "minibatch_size" for batch_size).
absl::Status CheckOptionRange(absl::string_view component,
                              absl::string_view field, const OptionSpec& spec,
                              double v);

// The Markdown table of every option (docs/study_format.md, "Parameters"),
// one row per entry of kOptionSchema, ending with a newline.
std::string OptionsMarkdownTable();

// The marker lines around the generated table in docs/study_format.md.
inline constexpr std::string_view kOptionsTableBegin =
    "<!-- BEGIN options table, generated from common/options_schema.h by "
    "ristretto-options-doc -->";
inline constexpr std::string_view kOptionsTableEnd =
    "<!-- END options table -->";

// Returns `doc` with the lines between the kOptionsTableBegin and
// kOptionsTableEnd lines replaced by OptionsMarkdownTable(). Errors
// (kInvalidArgument): a marker missing, given twice, or out of order.
absl::StatusOr<std::string> WithGeneratedOptionsTable(absl::string_view doc);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_OPTIONS_SCHEMA_H_
