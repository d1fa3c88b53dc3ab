#include "learner/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "env/dataset.h"
#include "env/geometry.h"
#include "env/metrics.h"
#include "env/vector_env.h"
#include "nlohmann/json.hpp"

namespace ristretto::learner {
namespace {

absl::Status TraceOverflow(int domain) {
  return absl::InternalError(
      absl::StrCat("evaluation trace: domain ", domain,
                   " played more bars than its rows allow"));
}

}  // namespace

absl::StatusOr<EvaluationResult> EvaluateActions(
    const std::shared_ptr<const env::MarketData>& market,
    const env::EnvOptions& env_options, const std::vector<env::Domain>& domains,
    const ActionFunction& decide, EvaluationTrace* trace) {
  if (domains.empty()) {
    return absl::InvalidArgumentError("evaluation needs at least one domain");
  }
  env::VectorEnvOptions options;
  options.env = env_options;
  options.num_copies = static_cast<int>(domains.size());
  options.mode = env::EpisodeMode::kManual;
  ASSIGN_OR_RETURN(std::unique_ptr<env::VectorEnv> vec,
                   env::VectorEnv::Create(market, options));
  const int B = vec->num_copies();
  const int D = vec->observation_size();
  const int n = vec->num_assets();
  std::vector<float> obs(static_cast<size_t>(B) * D);
  std::vector<float> actions(static_cast<size_t>(B) * n, 0.0f);
  std::vector<std::vector<double>> values(B);
  std::vector<int64_t> first_row(B), last_row(B);
  // Holdings before the step, traded value per copy, and the exposure sum.
  std::vector<float> holdings(static_cast<size_t>(B) * n, 0.0f);
  std::vector<double> traded(B, 0.0);
  double exposure_sum = 0;
  // The trace: domain b's bars start at bar_begin[b]; next_bar[b] is where
  // its next bar goes. A domain of S rows has S − 2L + 1 bars.
  std::vector<size_t> bar_begin(B + 1, 0), next_bar(B, 0);
  if (trace != nullptr) {
    for (int b = 0; b < B; ++b) {
      const int64_t bars = std::max<int64_t>(
          env::BarsInRows(domains[b].size(), env_options.lookback), 0);
      bar_begin[b + 1] = bar_begin[b] + static_cast<size_t>(bars);
      next_bar[b] = bar_begin[b];
    }
    const size_t total = bar_begin[B];
    trace->num_assets = n;
    trace->domain.assign(total, 0);
    trace->row.assign(total, 0);
    trace->value.assign(total, 0.0);
    trace->cash.assign(total, 0.0);
    trace->holdings.assign(total * static_cast<size_t>(n), 0.0f);
    trace->buy_and_hold.assign(total, 0.0);
  }
  // Records copy b's account at market row `row` (value `value`); false if
  // the domain has more bars than foreseen (the caller reports it).
  auto record = [&](int b, int64_t row, double value) {
    if (trace == nullptr) return true;
    const size_t k = next_bar[b];
    if (k >= bar_begin[b + 1]) return false;
    ++next_bar[b];
    trace->domain[k] = b;
    trace->row[k] = row;
    trace->value[k] = value;
    trace->cash[k] = vec->cash(b);
    float* h = trace->holdings.data() + k * static_cast<size_t>(n);
    for (int i = 0; i < n; ++i) h[i] = vec->holding(b, i);
    return true;
  };
  // Copy b's account marked at row `row` with its current cash and
  // holdings, summed as the env sums it (so the step's last bar gives
  // total_asset exactly).
  const double* price = market->price.data();
  auto mark = [&](int b, int64_t row) {
    const double* p = price + row * n;
    double stock_value = 0.0;
    for (int i = 0; i < n; ++i) {
      stock_value += static_cast<double>(vec->holding(b, i)) * p[i];
    }
    return vec->cash(b) + stock_value;
  };
  // The row each copy's next step starts after.
  std::vector<int64_t> row_before(B, 0);
  for (int b = 0; b < B; ++b) {
    RETURN_IF_ERROR(
        Annotate(vec->ResetCopy(b, domains[b].begin, domains[b].size(),
                                obs.data() + static_cast<size_t>(b) * D),
                 absl::StrCat("validation domain ", b)));
    values[b].push_back(vec->total_asset(b));
    first_row[b] = vec->row(b);
    row_before[b] = vec->row(b);
    if (!record(b, vec->row(b), vec->total_asset(b))) return TraceOverflow(b);
    for (int i = 0; i < n; ++i) {
      holdings[static_cast<size_t>(b) * n + i] = vec->holding(b, i);
    }
  }
  // Copies finish at different times; a finished copy is parked on a
  // one-step slice at its domain start and its steps are not recorded.
  std::vector<uint8_t> finished(B, 0);
  std::vector<uint8_t> done(B, 0);
  int remaining = B;
  env::StepOutput out{obs.data(), nullptr, done.data(), nullptr};
  EvaluationResult result;
  while (remaining > 0) {
    decide(obs.data(), B, actions.data());
    RETURN_IF_ERROR(vec->Step(actions.data(), out));
    for (int b = 0; b < B; ++b) {
      if (finished[b]) continue;
      // Every bar the step spans (env option decision_bars): the account
      // traded at the first and was held, untouched, to the last.
      const int64_t first = row_before[b] + 1, last = vec->row(b);
      for (int64_t row = first; row <= last; ++row) {
        const double value = row == last ? vec->total_asset(b) : mark(b, row);
        values[b].push_back(value);
        ++result.steps;
        if (!record(b, row, value)) return TraceOverflow(b);
        if (value > 0) exposure_sum += 1.0 - vec->cash(b) / value;
      }
      row_before[b] = last;
      // Trades of this step happened at the prices of its first row.
      const double* p = price + first * n;
      float* hold = holdings.data() + static_cast<size_t>(b) * n;
      for (int i = 0; i < n; ++i) {
        const float now = vec->holding(b, i);
        traded[b] +=
            std::fabs(static_cast<double>(now) - static_cast<double>(hold[i])) *
            p[i];
        hold[i] = now;
      }
      if (done[b]) {
        finished[b] = 1;
        --remaining;
        last_row[b] = vec->row(b);
        const env::EpisodeInfo& info = vec->last_episode(b);
        result.trades += info.buy_trades + info.sell_trades;
        result.fees += info.buy_fees + info.sell_fees;
      }
    }
    for (int b = 0; b < B && remaining > 0; ++b) {
      if (finished[b] && vec->done(b)) {
        const int64_t rows = 2 * env_options.lookback + 1;
        RETURN_IF_ERROR(
            vec->ResetCopy(b, domains[b].begin, rows,
                           obs.data() + static_cast<size_t>(b) * D));
      }
    }
  }
  const double bpy = env::BarsPerYear(market->interval_seconds);
  // The benchmark's account per domain, on the rows the policy played.
  std::vector<std::vector<double>> bench_values(B);
  const double all_steps =
      static_cast<double>(std::max<int64_t>(result.steps, 1));
  for (int b = 0; b < B; ++b) {
    const std::vector<double>& v = values[b];
    bench_values[b] =
        env::BuyAndHoldAccount(market->price, n, first_row[b], last_row[b] + 1,
                               env_options.initial_capital, env_options.buy_fee,
                               env_options.slippage_bps);
    if (trace != nullptr) {
      if (next_bar[b] != bar_begin[b + 1] ||
          bench_values[b].size() != bar_begin[b + 1] - bar_begin[b]) {
        return absl::InternalError(
            absl::StrCat("evaluation trace: domain ", b, " played ",
                         next_bar[b] - bar_begin[b], " bars, expected ",
                         bar_begin[b + 1] - bar_begin[b]));
      }
      std::copy(bench_values[b].begin(), bench_values[b].end(),
                trace->buy_and_hold.begin() +
                    static_cast<std::ptrdiff_t>(bar_begin[b]));
    }
    const double weight =
        static_cast<double>(v.empty() ? 0 : v.size() - 1) / all_steps;
    result.turnover += traded[b] / env_options.initial_capital * weight;
  }
  // Sharpe and Sortino over every bar of every domain (the bars their
  // standard error counts); the other summaries are means over domains
  // weighted by their steps (env::SummarizeDomains).
  env::DomainsSummary bot = env::SummarizeDomains(values, bpy);
  const env::DomainsSummary bench = env::SummarizeDomains(bench_values, bpy);
  result.log_returns = std::move(bot.log_returns);
  result.sharpe = bot.sharpe;
  result.sortino = bot.sortino;
  result.calmar = bot.calmar;
  result.total_return = bot.total_return;
  result.max_drawdown = bot.max_drawdown;
  result.benchmark_sharpe = bench.sharpe;
  result.benchmark_return = bench.total_return;
  result.exposure =
      result.steps > 0 ? exposure_sum / static_cast<double>(result.steps) : 0;
  result.score = result.sharpe - result.benchmark_sharpe;
  return result;
}

absl::Status CombineEqualCapital(const std::vector<EvaluationResult>& results,
                                 const std::vector<EvaluationTrace>& traces,
                                 double bars_per_year, EvaluationResult* result,
                                 EvaluationTrace* trace) {
  if (results.empty() || results.size() != traces.size()) {
    return absl::InvalidArgumentError(
        "combining policies needs one result and one trace per policy");
  }
  const EvaluationTrace& first = traces.front();
  for (size_t k = 1; k < traces.size(); ++k) {
    if (traces[k].row != first.row || traces[k].domain != first.domain ||
        traces[k].num_assets != first.num_assets) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy ", k, " was played on other bars than policy 0"));
    }
  }
  *result = results.front();
  *trace = first;
  if (results.size() == 1) return absl::OkStatus();
  const double k = static_cast<double>(results.size());
  for (size_t b = 0; b < trace->bars(); ++b) {
    double value = 0, cash = 0;
    for (const EvaluationTrace& t : traces) {
      value += t.value[b];
      cash += t.cash[b];
    }
    trace->value[b] = value / k;
    trace->cash[b] = cash / k;
  }
  for (size_t i = 0; i < trace->holdings.size(); ++i) {
    double held = 0;
    for (const EvaluationTrace& t : traces) held += t.holdings[i];
    trace->holdings[i] = static_cast<float>(held / k);
  }
  // Per domain, the combined value series; exposure over every step (the
  // bars after each domain's first).
  std::vector<std::vector<double>> values;
  double exposure_sum = 0;
  int64_t steps = 0;
  for (size_t b = 0; b < trace->bars(); ++b) {
    const bool first_bar = b == 0 || trace->domain[b] != trace->domain[b - 1];
    if (first_bar) {
      values.emplace_back();
    } else {
      if (trace->value[b] > 0) {
        exposure_sum += 1.0 - trace->cash[b] / trace->value[b];
      }
      ++steps;
    }
    values.back().push_back(trace->value[b]);
  }
  env::DomainsSummary s = env::SummarizeDomains(values, bars_per_year);
  result->sharpe = s.sharpe;
  result->sortino = s.sortino;
  result->calmar = s.calmar;
  result->total_return = s.total_return;
  result->max_drawdown = s.max_drawdown;
  result->log_returns = std::move(s.log_returns);
  result->exposure =
      steps > 0 ? exposure_sum / static_cast<double>(steps) : 0.0;
  result->turnover = 0;
  result->fees = 0;
  result->trades = 0;
  for (const EvaluationResult& r : results) {
    result->turnover += r.turnover / k;
    result->fees += r.fees / k;
    result->trades += r.trades;
  }
  result->score = result->sharpe - result->benchmark_sharpe;
  return absl::OkStatus();
}

namespace {

nlohmann::json Number(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

}  // namespace

std::string EvaluationToJson(const EvaluationResult& e,
                             const std::string& objective) {
  nlohmann::json j = {
      {"sharpe", Number(e.sharpe)},
      {"sortino", Number(e.sortino)},
      {"max_drawdown", Number(e.max_drawdown)},
      {"calmar", Number(e.calmar)},
      {"total_return", Number(e.total_return)},
      {"benchmark_sharpe", Number(e.benchmark_sharpe)},
      {"benchmark_return", Number(e.benchmark_return)},
      {"score", Number(e.score)},
      {"steps", e.steps},
      {"trades", e.trades},
      {"fees", Number(e.fees)},
      {"at_env_steps", e.at_env_steps},
      {"turnover", Number(e.turnover)},
      {"exposure", Number(e.exposure)},
  };
  if (!objective.empty()) j["objective"] = objective;
  // One field per line, the (long) log returns last on one line.
  nlohmann::json log_returns = nlohmann::json::array();
  for (double r : e.log_returns) log_returns.push_back(Number(r));
  std::string text = j.dump(1);
  text.resize(text.size() - 2);  // "\n}"
  absl::StrAppend(&text, ",\n \"log_returns\": ", log_returns.dump(), "\n}\n");
  return text;
}

absl::StatusOr<SplitResult> CombineShares(
    absl::Span<const ShareResult> shares,
    absl::Span<const int64_t> domain_steps, double bars_per_year) {
  if (shares.empty()) return absl::InvalidArgumentError("no share to combine");
  int64_t bars = 0;
  for (const int64_t n : domain_steps) {
    if (n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("a domain has ", n, " steps"));
    }
    bars += n;
  }
  std::vector<absl::Span<const double>> returns;
  returns.reserve(shares.size());
  for (size_t k = 0; k < shares.size(); ++k) {
    if (static_cast<int64_t>(shares[k].log_returns.size()) != bars) {
      return absl::InvalidArgumentError(
          absl::StrCat("share ", k, " has ", shares[k].log_returns.size(),
                       " bars, expected ", bars));
    }
    returns.push_back(shares[k].log_returns);
  }
  SplitResult out;
  out.summary = env::SummarizeDomains(
      env::EqualCapitalValues(returns, domain_steps), bars_per_year);
  const double k = static_cast<double>(shares.size());
  double env_steps = 0;
  for (const ShareResult& s : shares) {
    out.turnover += s.turnover / k;
    out.fees += s.fees / k;
    out.exposure += s.exposure / k;
    out.trades += s.trades;
    env_steps += static_cast<double>(s.env_steps) / k;
  }
  out.env_steps = std::llround(env_steps);
  return out;
}

absl::StatusOr<EvaluationResult> EvaluationFromJson(const std::string& json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError("evaluation is not a JSON object");
  }
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  auto number = [](const nlohmann::json& v) -> double {
    if (v.is_null()) return kNaN;
    return v.get<double>();
  };
  EvaluationResult e;
  try {
    for (const auto& [key, field] :
         std::initializer_list<std::pair<const char*, double*>>{
             {"sharpe", &e.sharpe},
             {"sortino", &e.sortino},
             {"max_drawdown", &e.max_drawdown},
             {"calmar", &e.calmar},
             {"total_return", &e.total_return},
             {"benchmark_sharpe", &e.benchmark_sharpe},
             {"benchmark_return", &e.benchmark_return},
             {"score", &e.score},
             {"fees", &e.fees},
             {"turnover", &e.turnover},
             {"exposure", &e.exposure}}) {
      if (j.contains(key)) *field = number(j.at(key));
    }
    for (const auto& [key, field] :
         std::initializer_list<std::pair<const char*, int64_t*>>{
             {"steps", &e.steps},
             {"trades", &e.trades},
             {"at_env_steps", &e.at_env_steps}}) {
      if (j.contains(key)) *field = j.at(key).get<int64_t>();
    }
    if (j.contains("log_returns")) {
      const nlohmann::json& r = j.at("log_returns");
      if (!r.is_array()) {
        return absl::DataLossError("evaluation: log_returns is not an array");
      }
      e.log_returns.reserve(r.size());
      for (const nlohmann::json& x : r) e.log_returns.push_back(number(x));
    }
  } catch (const nlohmann::json::exception& ex) {
    return absl::DataLossError(absl::StrCat("evaluation: ", ex.what()));
  }
  return e;
}

bool IsBetterScore(double score, bool have_best, double best_score) {
  if (!have_best) return true;
  if (std::isnan(score)) return false;
  return std::isnan(best_score) || score > best_score;
}

}  // namespace ristretto::learner
