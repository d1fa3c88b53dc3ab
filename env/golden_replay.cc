#include "env/golden_replay.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "env/geometry.h"
#include "env/vector_env.h"
#include "nlohmann/json.hpp"

namespace ristretto::env {
namespace {

// Reads a CSV of doubles into rows. `skip_header` drops the first line.
absl::StatusOr<std::vector<std::vector<double>>> ReadNumericCsv(
    const std::string& path, bool skip_header) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<std::vector<double>> rows;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (skip_header && line_no == 1) continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<double> row;
    const char* p = line.c_str();
    while (true) {
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(p, &end);
      if (end == p) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_no, ": field ", row.size() + 1,
                         " is not a number"));
      }
      row.push_back(v);
      p = end;
      if (*p == ',') {
        ++p;
      } else if (*p == '\0') {
        break;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_no, ": unexpected character '",
                         std::string(1, *p), "' after field ", row.size()));
      }
    }
    if (!rows.empty() && row.size() != rows.front().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": ", row.size(),
                       " fields, previous rows have ", rows.front().size()));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no data rows"));
  }
  return rows;
}

absl::StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object"));
  }
  return json;
}

absl::Status Number(const nlohmann::json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("params.json: missing numeric key '", key, "'"));
  }
  *out = it->get<double>();
  return absl::OkStatus();
}

// Tracks the worst error of one quantity.
class ErrorTracker {
 public:
  explicit ErrorTracker(std::string name) { e_.name = std::move(name); }
  void Add(int64_t step, double actual, double expected) {
    const double err = std::fabs(actual - expected);
    const double allowed =
        std::max(kGoldenRelTol * std::fabs(expected), kGoldenAbsTol);
    const double ratio = std::isnan(actual) ? HUGE_VAL : err / allowed;
    e_.max_abs_error =
        std::max(e_.max_abs_error, std::isnan(err) ? HUGE_VAL : err);
    e_.max_tolerance_ratio = std::max(e_.max_tolerance_ratio, ratio);
    if (ratio > 1.0) {
      if (e_.failures == 0) e_.first_failing_step = step;
      ++e_.failures;
    }
  }
  const QuantityError& result() const { return e_; }

 private:
  QuantityError e_;
};

}  // namespace

absl::StatusOr<GoldenCase> LoadGoldenCase(const std::string& dir) {
  GoldenCase c;
  c.name = dir.substr(dir.find_last_of('/') == std::string::npos
                          ? 0
                          : dir.find_last_of('/') + 1);
  absl::StatusOr<nlohmann::json> params = ReadJson(dir + "/params.json");
  if (!params.ok()) return params.status();
  EnvOptions& o = c.options;
  double lookback = 0;
  struct Key {
    const char* name;
    double* out;
  };
  const Key keys[] = {
      {"lookback", &lookback},
      {"norm_cash", &o.norm_cash},
      {"norm_stocks", &o.norm_stocks},
      {"norm_tech", &o.norm_tech},
      {"norm_reward", &o.norm_reward},
      {"norm_action", &o.norm_action},
      {"time_decay_floor", &o.time_decay_floor},
      {"min_cash_reserve", &o.min_cash_reserve},
      {"concentration_penalty", &o.concentration_penalty},
      {"trailing_stop_pct", &o.trailing_stop_pct},
      {"initial_capital", &o.initial_capital},
      {"buy_cost_pct", &o.buy_fee},
      {"sell_cost_pct", &o.sell_fee},
      {"gamma", &o.gamma},
  };
  for (const Key& k : keys) {
    if (absl::Status s = Number(*params, k.name, k.out); !s.ok()) return s;
  }
  o.lookback = static_cast<int>(lookback);
  // The golden traces record the original's terminal reward.
  o.terminal_reward = TerminalReward::kDiscountedSum;
  o.reward_mode = RewardMode::kShaped;
  // The original's action model, forced trim and order sizes.
  o.action_model = ActionModel::kShares;
  o.position_observation = PositionObservation::kHoldings;
  o.cooldown_trim_bars = 48;
  o.trim_fraction = 0.05;
  o.min_notional = 0.0;
  // The original filled every trade at the close with no volume limit.
  o.slippage_bps = 0.0;
  o.max_volume_share = 0.0;
  auto min_qty = params->find("min_qty");
  if (min_qty == params->end() || !min_qty->is_array()) {
    return absl::InvalidArgumentError("params.json: missing array 'min_qty'");
  }

  absl::StatusOr<std::vector<std::vector<double>>> price =
      ReadNumericCsv(dir + "/price.csv", false);
  if (!price.ok()) return price.status();
  absl::StatusOr<std::vector<std::vector<double>>> tech =
      ReadNumericCsv(dir + "/tech.csv", false);
  if (!tech.ok()) return tech.status();
  absl::StatusOr<std::vector<std::vector<double>>> actions =
      ReadNumericCsv(dir + "/actions.csv", false);
  if (!actions.ok()) return actions.status();
  absl::StatusOr<std::vector<std::vector<double>>> initial =
      ReadNumericCsv(dir + "/initial_state.csv", false);
  if (!initial.ok()) return initial.status();
  absl::StatusOr<std::vector<std::vector<double>>> expected =
      ReadNumericCsv(dir + "/expected.csv", true);
  if (!expected.ok()) return expected.status();

  const int64_t T = static_cast<int64_t>(price->size());
  const int n = static_cast<int>(price->front().size());
  const int64_t F = static_cast<int64_t>(tech->front().size());
  if (static_cast<int64_t>(tech->size()) != T) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": tech.csv has ", tech->size(), " rows, price.csv ", T));
  }
  if (static_cast<int>(min_qty->size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": min_qty has ", min_qty->size(), " entries for ", n, " assets"));
  }
  auto market = std::make_shared<MarketData>();
  market->num_rows = T;
  market->num_assets = n;
  market->num_features = F;
  market->interval_seconds = 1800;
  market->domains = {Domain{0, T}};
  for (int i = 0; i < n; ++i) {
    // The golden min_qty is bound by column; the columns here are the
    // symbols, so binding by symbol is the same thing.
    market->assets.push_back(
        AssetMeta{absl::StrCat("asset_", i), (*min_qty)[i].get<double>()});
  }
  for (const auto& row : *price) {
    market->price.insert(market->price.end(), row.begin(), row.end());
  }
  for (const auto& row : *tech) {
    market->tech.insert(market->tech.end(), row.begin(), row.end());
  }
  c.market = std::move(market);

  c.steps = static_cast<int64_t>(actions->size());
  c.obs_size = static_cast<int>(ObservationSize(n, F, o.lookback));
  if (static_cast<int>(actions->front().size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": actions.csv has ", actions->front().size(),
                     " columns for ", n, " assets"));
  }
  if (static_cast<int64_t>(expected->size()) != c.steps ||
      static_cast<int>(expected->front().size()) != 5 + n + c.obs_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": expected.csv is ", expected->size(), " x ",
                     expected->front().size(), ", wanted ", c.steps, " x ",
                     5 + n + c.obs_size));
  }
  if (static_cast<int>(initial->front().size()) != c.obs_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": initial_state.csv has ", initial->front().size(),
                     " values, state size is ", c.obs_size));
  }
  for (const auto& row : *actions) {
    for (double a : row) c.actions.push_back(static_cast<float>(a));
  }
  for (double v : initial->front())
    c.initial_obs.push_back(static_cast<float>(v));
  for (const auto& row : *expected) {
    c.reward.push_back(row[1]);
    c.done.push_back(static_cast<int>(row[2]));
    c.cash.push_back(row[3]);
    c.total_asset.push_back(row[4]);
    c.holdings.insert(c.holdings.end(), row.begin() + 5, row.begin() + 5 + n);
    c.obs.insert(c.obs.end(), row.begin() + 5 + n, row.end());
  }
  return c;
}

bool ReplayReport::passed() const {
  for (const QuantityError& q : quantities) {
    if (!q.passed()) return false;
  }
  return !quantities.empty();
}

absl::StatusOr<ReplayReport> ReplayGoldenCase(const GoldenCase& golden,
                                              int copies) {
  VectorEnvOptions options;
  options.env = golden.options;
  options.num_copies = copies;
  options.mode = EpisodeMode::kManual;
  absl::StatusOr<std::unique_ptr<VectorEnv>> created =
      VectorEnv::Create(golden.market, options);
  if (!created.ok()) return created.status();
  VectorEnv& env = **created;
  const int n = env.num_assets();
  const int D = env.observation_size();
  if (D != golden.obs_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "env observation size ", D, " != golden state size ", golden.obs_size));
  }
  std::vector<float> obs(static_cast<size_t>(copies) * D);
  std::vector<float> actions(static_cast<size_t>(copies) * n);
  std::vector<uint8_t> done(copies);
  ErrorTracker initial("initial_state"), reward("reward"), done_err("done"),
      cash("cash"), total("total_asset"), holdings("holdings"), state("state");
  for (int b = 0; b < copies; ++b) {
    absl::Status s =
        env.ResetCopy(b, 0, golden.market->num_rows, obs.data() + b * D);
    if (!s.ok()) return s;
    for (int k = 0; k < D; ++k) {
      initial.Add(0, obs[b * D + k], golden.initial_obs[k]);
    }
  }
  StepOutput out;
  out.obs = obs.data();
  out.done = done.data();
  for (int64_t s = 0; s < golden.steps; ++s) {
    for (int b = 0; b < copies; ++b) {
      std::copy(golden.actions.begin() + s * n,
                golden.actions.begin() + (s + 1) * n,
                actions.begin() + static_cast<size_t>(b) * n);
    }
    absl::Status st = env.Step(actions.data(), out);
    if (!st.ok()) return Annotate(st, absl::StrCat("step ", s));
    for (int b = 0; b < copies; ++b) {
      reward.Add(s, env.reward(b), golden.reward[s]);
      done_err.Add(s, done[b], golden.done[s]);
      cash.Add(s, env.cash(b), golden.cash[s]);
      total.Add(s, env.total_asset(b), golden.total_asset[s]);
      for (int i = 0; i < n; ++i) {
        holdings.Add(s, env.holding(b, i), golden.holdings[s * n + i]);
      }
      for (int k = 0; k < D; ++k) {
        state.Add(s, obs[static_cast<size_t>(b) * D + k],
                  golden.obs[s * D + k]);
      }
    }
  }
  ReplayReport report;
  report.case_name = golden.name;
  report.copies = copies;
  report.steps = golden.steps;
  for (const ErrorTracker* t :
       {&initial, &reward, &done_err, &cash, &total, &holdings, &state}) {
    report.quantities.push_back(t->result());
  }
  return report;
}

std::string FormatReplayReport(const ReplayReport& report) {
  std::string s =
      absl::StrFormat("case %s: %d steps x %d copies\n", report.case_name,
                      report.steps, report.copies);
  absl::StrAppendFormat(&s, "  %-14s %14s %14s %9s %s\n", "quantity",
                        "max_abs_err", "max_err/tol", "failures", "first_fail");
  for (const QuantityError& q : report.quantities) {
    absl::StrAppendFormat(&s, "  %-14s %14.6g %14.6g %9d %s\n", q.name,
                          q.max_abs_error, q.max_tolerance_ratio, q.failures,
                          q.first_failing_step < 0
                              ? std::string("-")
                              : absl::StrCat("step ", q.first_failing_step));
  }
  absl::StrAppend(&s, report.passed() ? "PASS" : "FAIL", "\n");
  return s;
}

}  // namespace ristretto::env
