#include "learner/run_options_json.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

using Json = nlohmann::json;

// ---- reading: every object is read through a table of named fields, so an
// unknown name is caught in one place.

using Reader = std::function<absl::Status(const Json&, const std::string&)>;
using Fields = std::map<std::string, Reader>;

absl::Status TypeError(const std::string& path, const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat("field '", path, "' must be ", what));
}

absl::Status ReadObject(const Json& j, const std::string& path,
                        const Fields& fields) {
  if (!j.is_object()) {
    return TypeError(path.empty() ? "(top level)" : path, "an object");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string field_path =
        path.empty() ? it.key() : absl::StrCat(path, ".", it.key());
    auto f = fields.find(it.key());
    if (f == fields.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown field '", field_path, "'"));
    }
    RETURN_IF_ERROR(f->second(it.value(), field_path));
  }
  return absl::OkStatus();
}

Reader Double(double* out) {
  return [out](const Json& j, const std::string& path) {
    if (!j.is_number()) return TypeError(path, "a number");
    *out = j.get<double>();
    return absl::OkStatus();
  };
}

// Any integer type; the JSON value must be an integer within its range.
template <typename Int>
Reader Integer(Int* out) {
  return [out](const Json& j, const std::string& path) {
    constexpr Int kMin = std::numeric_limits<Int>::min();
    constexpr Int kMax = std::numeric_limits<Int>::max();
    auto range = [&] {
      return absl::InvalidArgumentError(
          absl::StrCat("field '", path, "' = ", j.dump(), " is outside [", kMin,
                       ", ", kMax, "]"));
    };
    if (j.is_number_unsigned()) {
      const uint64_t v = j.get<uint64_t>();
      if (v > static_cast<uint64_t>(kMax)) return range();
      *out = static_cast<Int>(v);
    } else if (j.is_number_integer()) {
      // Only negative values arrive here (non-negative ones are unsigned).
      const int64_t v = j.get<int64_t>();
      if constexpr (std::is_unsigned_v<Int>) {
        return range();
      } else {
        if (v < static_cast<int64_t>(kMin)) return range();
        *out = static_cast<Int>(v);
      }
    } else {
      return TypeError(path, "an integer");
    }
    return absl::OkStatus();
  };
}

Reader Bool(bool* out) {
  return [out](const Json& j, const std::string& path) {
    if (!j.is_boolean()) return TypeError(path, "true or false");
    *out = j.get<bool>();
    return absl::OkStatus();
  };
}

Reader String(std::string* out) {
  return [out](const Json& j, const std::string& path) {
    if (!j.is_string()) return TypeError(path, "a string");
    *out = j.get<std::string>();
    return absl::OkStatus();
  };
}

// An enum through its parser (which names the accepted spellings).
template <typename E>
Reader Enum(E* out, absl::Status (*parse)(const std::string&, E*)) {
  return [out, parse](const Json& j, const std::string& path) {
    if (!j.is_string()) return TypeError(path, "a string");
    return Annotate(parse(j.get<std::string>(), out),
                    absl::StrCat("field '", path, "'"));
  };
}

Reader IntList(std::vector<int>* out) {
  return [out](const Json& j, const std::string& path) {
    if (!j.is_array()) return TypeError(path, "an array of integers");
    std::vector<int> v(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      RETURN_IF_ERROR(Integer(&v[i])(j[i], absl::StrCat(path, "[", i, "]")));
    }
    *out = std::move(v);
    return absl::OkStatus();
  };
}

Reader StringList(std::vector<std::string>* out) {
  return [out](const Json& j, const std::string& path) {
    if (!j.is_array()) return TypeError(path, "an array of strings");
    std::vector<std::string> v(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      RETURN_IF_ERROR(String(&v[i])(j[i], absl::StrCat(path, "[", i, "]")));
    }
    *out = std::move(v);
    return absl::OkStatus();
  };
}

Reader Domains(std::vector<env::Domain>* out) {
  return [out](const Json& j, const std::string& path) {
    if (!j.is_array()) return TypeError(path, "an array of [begin, end]");
    std::vector<env::Domain> v(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string item = absl::StrCat(path, "[", i, "]");
      if (!j[i].is_array() || j[i].size() != 2) {
        return TypeError(item, "a pair [begin, end]");
      }
      RETURN_IF_ERROR(Integer(&v[i].begin)(j[i][0], item + "[0]"));
      RETURN_IF_ERROR(Integer(&v[i].end)(j[i][1], item + "[1]"));
    }
    *out = std::move(v);
    return absl::OkStatus();
  };
}

Reader EnvReader(env::EnvOptions* e) {
  return [e](const Json& j, const std::string& path) {
    // The old writer predates these options: its runs traded coin
    // quantities with no minimum notional, and it always wrote the trim.
    e->action_model = env::ActionModel::kShares;
    e->position_observation = env::PositionObservation::kHoldings;
    e->min_notional = 0.0;
    return ReadObject(
        j, path,
        Fields{
            {"lookback", Integer(&e->lookback)},
            {"initial_capital", Double(&e->initial_capital)},
            {"buy_fee", Double(&e->buy_fee)},
            {"sell_fee", Double(&e->sell_fee)},
            {"slippage_bps", Double(&e->slippage_bps)},
            {"max_volume_share", Double(&e->max_volume_share)},
            {"buy_safety", Double(&e->buy_safety)},
            {"norm_cash", Double(&e->norm_cash)},
            {"norm_stocks", Double(&e->norm_stocks)},
            {"norm_tech", Double(&e->norm_tech)},
            {"norm_reward", Double(&e->norm_reward)},
            {"norm_action", Double(&e->norm_action)},
            {"time_decay_floor", Double(&e->time_decay_floor)},
            {"min_cash_reserve", Double(&e->min_cash_reserve)},
            {"concentration_penalty", Double(&e->concentration_penalty)},
            {"trailing_stop_pct", Double(&e->trailing_stop_pct)},
            {"cooldown_trim_bars", Integer(&e->cooldown_trim_bars)},
            {"trim_fraction", Double(&e->trim_fraction)},
            {"gamma", Double(&e->gamma)},
            {"action_clip", Double(&e->action_clip)},
            {"reward_mode", Enum(&e->reward_mode, &env::ParseRewardMode)},
            {"reward_scale", Double(&e->reward_scale)},
            {"terminal_reward",
             Enum(&e->terminal_reward, &env::ParseTerminalReward)},
        });
  };
}

Reader NetworkReader(NetworkOptions* n) {
  return [n](const Json& j, const std::string& path) {
    return ReadObject(
        j, path,
        Fields{
            {"policy_hidden", IntList(&n->policy_hidden)},
            {"value_hidden", IntList(&n->value_hidden)},
            {"activation", Enum(&n->activation, &ParseActivation)},
            {"log_std_init", Double(&n->log_std_init)},
            {"log_prob", Enum(&n->log_prob, &ParseLogProbMode)},
            {"normalize_observations", Bool(&n->normalize_observations)},
            {"obs_clip", Double(&n->obs_clip)},
        });
  };
}

Reader PpoReader(PpoOptions* p) {
  return [p](const Json& j, const std::string& path) {
    return ReadObject(
        j, path,
        Fields{
            {"learning_rate", Double(&p->learning_rate)},
            {"lr_schedule", Enum(&p->lr_schedule, &ParseLrSchedule)},
            {"gamma", Double(&p->gamma)},
            {"gae_lambda", Double(&p->gae_lambda)},
            {"bootstrap_truncation", Bool(&p->bootstrap_truncation)},
            {"clip_ratio", Double(&p->clip_ratio)},
            {"value_loss", Enum(&p->value_loss, &ParseValueLoss)},
            {"value_clip", Double(&p->value_clip)},
            {"value_coef", Double(&p->value_coef)},
            {"entropy_coef", Double(&p->entropy_coef)},
            {"normalize_advantages", Bool(&p->normalize_advantages)},
            {"epochs", Integer(&p->epochs)},
            {"minibatch_size", Integer(&p->minibatch_size)},
            {"sample_with_replacement", Bool(&p->sample_with_replacement)},
            {"max_grad_norm", Double(&p->max_grad_norm)},
            {"adam_eps", Double(&p->adam_eps)},
            {"max_policy_lag", Integer(&p->max_policy_lag)},
            {"device", String(&p->device)},
            {"allow_tf32", Bool(&p->allow_tf32)},
            {"autocast", Enum(&p->autocast, &ParseAutocastMode)},
            {"cpu_threads", Integer(&p->cpu_threads)},
        });
  };
}

}  // namespace

absl::StatusOr<TrainerOptions> TrainerOptionsFromLegacyJson(
    const std::string& json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError("run options are not valid JSON");
  }
  TrainerOptions o;
  RETURN_IF_ERROR(
      ReadObject(j, "",
                 Fields{
                     {"env", EnvReader(&o.env)},
                     {"network", NetworkReader(&o.network)},
                     {"ppo", PpoReader(&o.ppo)},
                     {"num_envs", Integer(&o.num_envs)},
                     {"rollout_steps", Integer(&o.rollout_steps)},
                     {"episode_steps", Integer(&o.episode_steps)},
                     {"budget_env_steps", Integer(&o.budget_env_steps)},
                     {"seed", Integer(&o.seed)},
                     {"train_domains", Domains(&o.train_domains)},
                     {"validation_domains", Domains(&o.validation_domains)},
                     {"eval_every_env_steps", Integer(&o.eval_every_env_steps)},
                     {"run_dir", String(&o.run_dir)},
                     {"resume", Bool(&o.resume)},
                     {"dataset_id", String(&o.dataset_id)},
                     {"feature_names", StringList(&o.feature_names)},
                     {"objective", String(&o.objective)},
                     {"lockbox_begin", Integer(&o.lockbox_begin)},
                     {"lockbox_guard", Integer(&o.lockbox_guard)},
                     {"final_evaluation", Bool(&o.final_evaluation)},
                 }));
  return o;
}

}  // namespace ristretto::learner
