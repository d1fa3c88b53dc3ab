#include "learner/contract.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "env/geometry.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

using Json = nlohmann::json;
// Written with insertion order kept, so the file reads in contract order.
using OrderedJson = nlohmann::ordered_json;

std::string RewardModeName(env::RewardMode m) {
  switch (m) {
    case env::RewardMode::kShaped:
      return "shaped";
    case env::RewardMode::kLogReturn:
      return "log_return";
    case env::RewardMode::kDifferentialSharpe:
      return "differential_sharpe";
  }
  return "unknown";
}

std::string TerminalRewardName(env::TerminalReward m) {
  switch (m) {
    case env::TerminalReward::kStep:
      return "step";
    case env::TerminalReward::kDiscountedSum:
      return "discounted_sum";
  }
  return "unknown";
}

// Every EnvOptions field in declaration order. These names are the JSON keys
// and the field names of mismatch messages, so writing, reading and
// comparing cannot drift apart.
template <typename Env, typename Visitor>
void VisitEnv(Env& e, Visitor& v) {
  v("lookback", e.lookback);
  v("initial_capital", e.initial_capital);
  v("buy_fee", e.buy_fee);
  v("sell_fee", e.sell_fee);
  v("slippage_bps", e.slippage_bps);
  v("max_volume_share", e.max_volume_share);
  v("buy_safety", e.buy_safety);
  v("norm_cash", e.norm_cash);
  v("norm_stocks", e.norm_stocks);
  v("norm_tech", e.norm_tech);
  v("norm_reward", e.norm_reward);
  v("action_model", e.action_model);
  v("weight_logit_scale", e.weight_logit_scale);
  v("rebalance_band", e.rebalance_band);
  v("rebalance_rate", e.rebalance_rate);
  v("decision_bars", e.decision_bars);
  v("position_observation", e.position_observation);
  v("min_notional", e.min_notional);
  v("norm_action", e.norm_action);
  v("time_decay_floor", e.time_decay_floor);
  v("min_cash_reserve", e.min_cash_reserve);
  v("concentration_penalty", e.concentration_penalty);
  v("trailing_stop_pct", e.trailing_stop_pct);
  v("cooldown_trim_bars", e.cooldown_trim_bars);
  v("trim_fraction", e.trim_fraction);
  v("gamma", e.gamma);
  v("action_clip", e.action_clip);
  v("reward_mode", e.reward_mode);
  v("reward_scale", e.reward_scale);
  v("turnover_penalty", e.turnover_penalty);
  v("dsr_eta", e.dsr_eta);
  v("terminal_reward", e.terminal_reward);
}

// Every NetworkOptions field in declaration order.
template <typename Net, typename Visitor>
void VisitNetwork(Net& n, Visitor& v) {
  v("policy_hidden", n.policy_hidden);
  v("value_hidden", n.value_hidden);
  v("activation", n.activation);
  v("log_std_init", n.log_std_init);
  v("log_prob", n.log_prob);
  v("normalize_observations", n.normalize_observations);
  v("obs_clip", n.obs_clip);
}

class JsonWriter {
 public:
  explicit JsonWriter(OrderedJson* obj) : obj_(obj) {}

  void operator()(const char* name, int v) { (*obj_)[name] = v; }
  void operator()(const char* name, double v) { (*obj_)[name] = v; }
  void operator()(const char* name, bool v) { (*obj_)[name] = v; }
  void operator()(const char* name, const std::vector<int>& v) {
    (*obj_)[name] = v;
  }
  void operator()(const char* name, env::RewardMode v) {
    (*obj_)[name] = RewardModeName(v);
  }
  void operator()(const char* name, env::TerminalReward v) {
    (*obj_)[name] = TerminalRewardName(v);
  }
  void operator()(const char* name, env::ActionModel v) {
    (*obj_)[name] = env::ActionModelName(v);
  }
  void operator()(const char* name, env::PositionObservation v) {
    (*obj_)[name] = env::PositionObservationName(v);
  }
  void operator()(const char* name, Activation v) {
    (*obj_)[name] = ActivationName(v);
  }
  void operator()(const char* name, LogProbMode v) {
    (*obj_)[name] = LogProbModeName(v);
  }

 private:
  OrderedJson* obj_;
};

OrderedJson ToObject(const PolicyContract& c) {
  OrderedJson j = OrderedJson::object();
  j["contract_version"] = c.contract_version;
  j["obs_size"] = c.obs_size;
  j["action_size"] = c.action_size;
  j["lookback"] = c.lookback;
  j["asset_symbols"] = c.asset_symbols;
  j["feature_names"] = c.feature_names;
  j["dataset_id"] = c.dataset_id;
  j["interval_seconds"] = c.interval_seconds;
  OrderedJson env = OrderedJson::object();
  JsonWriter env_writer(&env);
  VisitEnv(c.env, env_writer);
  j["env"] = std::move(env);
  OrderedJson network = OrderedJson::object();
  JsonWriter network_writer(&network);
  VisitNetwork(c.network, network_writer);
  j["network"] = std::move(network);
  return j;
}

// Invalid UTF-8 in a symbol is replaced rather than thrown on.
std::string Dump(const OrderedJson& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

absl::Status WrongType(const std::string& path, const char* want,
                       const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat("contract JSON: field ", path, " must be ", want, ", got ",
                   got.dump(-1, ' ', false, Json::error_handler_t::replace)));
}

absl::Status Read(const Json& j, const std::string& path, int* out) {
  if (j.is_number_unsigned()) {
    const auto v = j.get<uint64_t>();
    if (v <= static_cast<uint64_t>(INT_MAX)) {
      *out = static_cast<int>(v);
      return absl::OkStatus();
    }
  } else if (j.is_number_integer()) {
    const auto v = j.get<int64_t>();
    if (v >= INT_MIN && v <= INT_MAX) {
      *out = static_cast<int>(v);
      return absl::OkStatus();
    }
  }
  return WrongType(path, "a 32-bit integer", j);
}

absl::Status Read(const Json& j, const std::string& path, int64_t* out) {
  if (j.is_number_unsigned()) {
    const auto v = j.get<uint64_t>();
    if (v <= static_cast<uint64_t>(INT64_MAX)) {
      *out = static_cast<int64_t>(v);
      return absl::OkStatus();
    }
  } else if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return absl::OkStatus();
  }
  return WrongType(path, "a 64-bit integer", j);
}

absl::Status Read(const Json& j, const std::string& path, double* out) {
  if (!j.is_number()) return WrongType(path, "a number", j);
  *out = j.get<double>();
  return absl::OkStatus();
}

absl::Status Read(const Json& j, const std::string& path, bool* out) {
  if (!j.is_boolean()) return WrongType(path, "true or false", j);
  *out = j.get<bool>();
  return absl::OkStatus();
}

absl::Status Read(const Json& j, const std::string& path, std::string* out) {
  if (!j.is_string()) return WrongType(path, "a string", j);
  *out = j.get<std::string>();
  return absl::OkStatus();
}

template <typename T>
absl::Status Read(const Json& j, const std::string& path, std::vector<T>* out) {
  if (!j.is_array()) return WrongType(path, "an array", j);
  out->assign(j.size(), T{});
  for (size_t i = 0; i < j.size(); ++i) {
    RETURN_IF_ERROR(Read(j[i], absl::StrCat(path, "[", i, "]"), &(*out)[i]));
  }
  return absl::OkStatus();
}

// Enums are stored by name and parsed with the public parsers.
template <typename Enum>
absl::Status ReadEnum(const Json& j, const std::string& path,
                      absl::Status (*parse)(const std::string&, Enum*),
                      Enum* out) {
  std::string name;
  RETURN_IF_ERROR(Read(j, path, &name));
  return Annotate(parse(name, out),
                  absl::StrCat("contract JSON: field ", path));
}

absl::Status Read(const Json& j, const std::string& path,
                  env::RewardMode* out) {
  return ReadEnum(j, path, &env::ParseRewardMode, out);
}
absl::Status Read(const Json& j, const std::string& path,
                  env::TerminalReward* out) {
  return ReadEnum(j, path, &env::ParseTerminalReward, out);
}
absl::Status Read(const Json& j, const std::string& path,
                  env::ActionModel* out) {
  return ReadEnum(j, path, &env::ParseActionModel, out);
}
absl::Status Read(const Json& j, const std::string& path,
                  env::PositionObservation* out) {
  return ReadEnum(j, path, &env::ParsePositionObservation, out);
}
absl::Status Read(const Json& j, const std::string& path, Activation* out) {
  return ReadEnum(j, path, &ParseActivation, out);
}
absl::Status Read(const Json& j, const std::string& path, LogProbMode* out) {
  return ReadEnum(j, path, &ParseLogProbMode, out);
}

// Fields added after contract version 1 without a version bump: a contract
// written before them lacks the key and reads as 0 (policies trained before
// execution costs existed paid no slippage and had no volume cap; an
// interval of 0 means "not recorded").
bool ReadsAsZeroWhenMissing(const std::string& path) {
  return path == "env.slippage_bps" || path == "env.max_volume_share" ||
         path == "interval_seconds";
}

// Fields added with the target-weight action model (issue 34): a contract
// written before them traded coin quantities (action_model shares, the
// enum's 0), had no minimum notional and no turnover penalty (0), and the
// weights-only options were not read (their defaults).
bool ReadsAsLegacyWhenMissing(const std::string& path) {
  return path == "env.action_model" || path == "env.min_notional" ||
         path == "env.turnover_penalty" || path == "env.position_observation";
}
bool ReadsAsDefaultWhenMissing(const std::string& path) {
  return path == "env.weight_logit_scale" || path == "env.rebalance_band" ||
         path == "env.rebalance_rate" || path == "env.dsr_eta" ||
         path == "env.decision_bars";
}

// Reads named fields of one JSON object; keeps the first error.
class JsonReader {
 public:
  JsonReader(const Json& obj, std::string prefix)
      : obj_(obj), prefix_(std::move(prefix)) {}

  template <typename T>
  void operator()(const char* name, T& out) {
    if (!status_.ok()) return;
    const std::string path = prefix_ + name;
    const auto it = obj_.find(name);
    if (it == obj_.end() &&
        (ReadsAsZeroWhenMissing(path) || ReadsAsLegacyWhenMissing(path))) {
      out = T{};
      return;
    }
    if (it == obj_.end() && ReadsAsDefaultWhenMissing(path)) return;
    if (it == obj_.end()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("contract JSON: missing field ", path));
      return;
    }
    status_ = Read(*it, path, &out);
  }

  const absl::Status& status() const { return status_; }

 private:
  const Json& obj_;
  const std::string prefix_;
  absl::Status status_;
};

absl::Status ReadObject(const Json& parent, const char* name,
                        const Json** out) {
  const auto it = parent.find(name);
  if (it == parent.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("contract JSON: missing field ", name));
  }
  if (!it->is_object()) return WrongType(name, "an object", *it);
  *out = &*it;
  return absl::OkStatus();
}

absl::StatusOr<PolicyContract> FromObject(const Json& j) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        "contract JSON: the top level must be an object");
  }
  PolicyContract c;
  JsonReader top(j, "");
  // The version first: a newer file may have fields this build lacks.
  top("contract_version", c.contract_version);
  RETURN_IF_ERROR(top.status());
  if (c.contract_version > kContractVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "contract_version ", c.contract_version,
        " is newer than this build supports (", kContractVersion, ")"));
  }
  if (c.contract_version < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("contract JSON: contract_version ", c.contract_version,
                     " must be >= 1"));
  }
  top("obs_size", c.obs_size);
  top("action_size", c.action_size);
  top("lookback", c.lookback);
  top("asset_symbols", c.asset_symbols);
  top("feature_names", c.feature_names);
  top("dataset_id", c.dataset_id);
  top("interval_seconds", c.interval_seconds);
  RETURN_IF_ERROR(top.status());
  if (c.interval_seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("contract JSON: interval_seconds ", c.interval_seconds,
                     " must be >= 0"));
  }

  const Json* env = nullptr;
  RETURN_IF_ERROR(ReadObject(j, "env", &env));
  JsonReader env_reader(*env, "env.");
  VisitEnv(c.env, env_reader);
  RETURN_IF_ERROR(env_reader.status());

  const Json* network = nullptr;
  RETURN_IF_ERROR(ReadObject(j, "network", &network));
  JsonReader network_reader(*network, "network.");
  VisitNetwork(c.network, network_reader);
  RETURN_IF_ERROR(network_reader.status());
  return c;
}

absl::Status Mismatch(const std::string& field, const OrderedJson& found,
                      const OrderedJson& expected) {
  return absl::FailedPreconditionError(
      absl::StrCat("contract mismatch: ", field, " is ", Dump(found, -1),
                   " in the checkpoint but ", Dump(expected, -1), " here"));
}

absl::Status CompareField(const std::string& field, const OrderedJson& found,
                          const OrderedJson& expected) {
  if (found == expected) return absl::OkStatus();
  return Mismatch(field, found, expected);
}

// Names the first differing index; a list that only differs in length is
// shown whole.
absl::Status CompareList(const std::string& field, const OrderedJson& found,
                         const OrderedJson& expected) {
  const size_t common = std::min(found.size(), expected.size());
  for (size_t i = 0; i < common; ++i) {
    if (found[i] != expected[i]) {
      return Mismatch(absl::StrCat(field, "[", i, "]"), found[i], expected[i]);
    }
  }
  return CompareField(field, found, expected);
}

// Compares every key of `expected` (an object written by ToObject) in order.
absl::Status CompareObject(const std::string& prefix, const OrderedJson& found,
                           const OrderedJson& expected) {
  for (const auto& item : expected.items()) {
    RETURN_IF_ERROR(
        CompareField(prefix + item.key(), found.at(item.key()), item.value()));
  }
  return absl::OkStatus();
}

}  // namespace

PolicyContract PolicyContract::Make(const env::EnvOptions& env_options,
                                    const NetworkOptions& network,
                                    std::vector<std::string> asset_symbols,
                                    std::vector<std::string> feature_names,
                                    std::string dataset_id) {
  PolicyContract c;
  const int n = static_cast<int>(asset_symbols.size());
  const int features_per_row = n * static_cast<int>(feature_names.size());
  c.contract_version = kContractVersion;
  c.lookback = env_options.lookback;
  c.obs_size =
      static_cast<int>(env::ObservationSize(n, features_per_row, c.lookback));
  c.action_size = n;
  c.asset_symbols = std::move(asset_symbols);
  c.feature_names = std::move(feature_names);
  c.dataset_id = std::move(dataset_id);
  c.env = env_options;
  c.network = network;
  return c;
}

std::string PolicyContract::ToJson() const {
  return Dump(ToObject(*this), 2) + "\n";
}

absl::StatusOr<PolicyContract> PolicyContract::FromJson(
    const std::string& json) {
  // nlohmann reports errors by exception; they stop here.
  try {
    return FromObject(Json::parse(json));
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("contract JSON is malformed: ", e.what()));
  }
}

absl::Status CheckContract(const PolicyContract& expected,
                           const PolicyContract& found, bool check_dataset) {
  const OrderedJson e = ToObject(expected);
  const OrderedJson f = ToObject(found);
  for (const char* field :
       {"contract_version", "obs_size", "action_size", "lookback"}) {
    RETURN_IF_ERROR(CompareField(field, f.at(field), e.at(field)));
  }
  RETURN_IF_ERROR(CompareList("asset_symbols", f.at("asset_symbols"),
                              e.at("asset_symbols")));
  RETURN_IF_ERROR(CompareList("feature_names", f.at("feature_names"),
                              e.at("feature_names")));
  if (check_dataset) {
    RETURN_IF_ERROR(
        CompareField("dataset_id", f.at("dataset_id"), e.at("dataset_id")));
  }
  // 0 is "not recorded" (contracts written before the field existed): no
  // evidence either way, so only two recorded intervals are compared.
  if (expected.interval_seconds != 0 && found.interval_seconds != 0) {
    RETURN_IF_ERROR(CompareField("interval_seconds", f.at("interval_seconds"),
                                 e.at("interval_seconds")));
  }
  RETURN_IF_ERROR(CompareObject("env.", f.at("env"), e.at("env")));
  return CompareObject("network.", f.at("network"), e.at("network"));
}

namespace {

absl::Status MarketMismatch(const std::string& field, const OrderedJson& policy,
                            const OrderedJson& market) {
  return absl::FailedPreconditionError(absl::StrCat(
      "contract mismatch: ", field, " is ", Dump(policy, -1),
      " in the policy's contract but ", Dump(market, -1), " in the dataset"));
}

absl::Status CompareMarketList(const std::string& field,
                               const std::vector<std::string>& policy,
                               const std::vector<std::string>& market) {
  const size_t common = std::min(policy.size(), market.size());
  for (size_t i = 0; i < common; ++i) {
    if (policy[i] != market[i]) {
      return MarketMismatch(absl::StrCat(field, "[", i, "]"), policy[i],
                            market[i]);
    }
  }
  if (policy.size() != market.size()) {
    return MarketMismatch(field, policy, market);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckContractForMarket(
    const PolicyContract& contract,
    const std::vector<std::string>& asset_symbols,
    const std::vector<std::string>& feature_names, int64_t interval_seconds,
    std::string* warning) {
  if (warning != nullptr) warning->clear();
  // The contract's own fields must agree before it is compared with data.
  if (contract.lookback != contract.env.lookback) {
    return absl::FailedPreconditionError(absl::StrCat(
        "contract is inconsistent: lookback is ", contract.lookback,
        " but env.lookback is ", contract.env.lookback));
  }
  RETURN_IF_ERROR(CompareMarketList("asset_symbols", contract.asset_symbols,
                                    asset_symbols));
  RETURN_IF_ERROR(CompareMarketList("feature_names", contract.feature_names,
                                    feature_names));
  const int64_t n = static_cast<int64_t>(asset_symbols.size());
  if (contract.action_size != n) {
    return MarketMismatch("action_size", contract.action_size, n);
  }
  const int64_t obs = env::ObservationSize(
      n, n * static_cast<int64_t>(feature_names.size()), contract.lookback);
  if (contract.obs_size != obs) {
    return absl::FailedPreconditionError(
        absl::StrCat("contract mismatch: obs_size is ", contract.obs_size,
                     " in the policy's contract but the dataset gives ", obs,
                     " (1 + ", n, " assets + ", n, " × ", feature_names.size(),
                     " features × lookback ", contract.lookback, ")"));
  }
  if (contract.interval_seconds == 0) {
    if (warning != nullptr) {
      *warning = absl::StrCat(
          "the policy's contract does not record its bar interval (written "
          "before interval_seconds existed); the dataset's ",
          interval_seconds, " s bars are assumed to match");
    }
  } else if (contract.interval_seconds != interval_seconds) {
    return MarketMismatch("interval_seconds", contract.interval_seconds,
                          interval_seconds);
  }
  return absl::OkStatus();
}

}  // namespace ristretto::learner
