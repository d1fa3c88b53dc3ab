// What the rules earn on a synthetic trend market (issue 34, item 10 (a)):
// generates the built-in synthetic market with the structure options
// (trend strength and length, GARCH volatility clustering, Student-t
// tails), keeps the last 15 % of the rows as a lockbox, chooses each rule's
// parameter on the rows before it and plays it on the lockbox with the
// env's default costs, as a study's lockbox does (ComputeLockboxRules), and
// prints per seed the rules' and buy and hold's lockbox Sharpe, turnover
// and fees, and the excess kurtosis and squared-return autocorrelation
// (lag 1) of the first asset's bar returns.
//
// Usage: trend_market_sweep [--rows 8000] [--assets 3] [--interval 3600]
//          [--seeds 1,2,3] [--trend-strength 1] [--regime-bars 400]
//          [--garch-alpha 0] [--garch-beta 0] [--tail-dof 0]
//          [--crash-probability 0.08] [--volatility 0.008]
//          [--features indicators|portfolio]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "coordinator/core/rule_baselines.h"
#include "env/market_data.h"
#include "env/synthetic.h"
#include "learner/evaluation.h"

namespace {

namespace co = ristretto::coordinator;
namespace env = ristretto::env;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "trend_market_sweep: %s\n", what.c_str());
  std::exit(2);
}

double ParseDouble(const char* flag, const char* text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v)) Die(std::string("bad ") + flag);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  env::SyntheticMarketOptions o;
  o.num_rows = 8000;
  o.num_assets = 3;
  o.interval_seconds = 3600;
  std::vector<uint64_t> seeds = {1, 2, 3};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const char* v = argv[i + 1];
    if (f == "--rows") {
      o.num_rows = static_cast<int64_t>(ParseDouble("--rows", v));
    } else if (f == "--assets") {
      o.num_assets = static_cast<int>(ParseDouble("--assets", v));
    } else if (f == "--interval") {
      o.interval_seconds = static_cast<int64_t>(ParseDouble("--interval", v));
    } else if (f == "--seeds") {
      seeds.clear();
      for (absl::string_view s : absl::StrSplit(v, ',')) {
        uint64_t seed = 0;
        if (!absl::SimpleAtoi(s, &seed)) Die("bad --seeds");
        seeds.push_back(seed);
      }
    } else if (f == "--trend-strength") {
      o.trend_strength = ParseDouble("--trend-strength", v);
    } else if (f == "--regime-bars") {
      o.mean_regime_bars = ParseDouble("--regime-bars", v);
    } else if (f == "--garch-alpha") {
      o.garch_alpha = ParseDouble("--garch-alpha", v);
    } else if (f == "--garch-beta") {
      o.garch_beta = ParseDouble("--garch-beta", v);
    } else if (f == "--tail-dof") {
      o.tail_dof = static_cast<int>(ParseDouble("--tail-dof", v));
    } else if (f == "--crash-probability") {
      o.crash_probability = ParseDouble("--crash-probability", v);
    } else if (f == "--features") {
      auto set = env::ParseFeatureSet(v);
      if (!set.ok()) Die(set.status().ToString());
      o.feature_set = *set;
    } else if (f == "--volatility") {
      o.volatility = ParseDouble("--volatility", v);
    } else {
      Die("unknown flag " + f);
    }
  }
  std::printf(
      "seed  b&h        ew_rebal   momentum (N)            macd       "
      "mom_turn  mom_fees  kurt   acf_r2\n");
  for (uint64_t seed : seeds) {
    o.seed = seed;
    auto data = env::GenerateSyntheticDataset(o);
    if (!data.ok()) Die(data.status().ToString());
    // Excess kurtosis and lag-1 autocorrelation of squared returns of
    // asset 0's closes.
    const std::vector<double> close = data->ClosePrices();
    const int n = data->num_assets();
    std::vector<double> r;
    for (int64_t t = 1; t < data->num_rows(); ++t) {
      r.push_back(std::log(close[t * n] / close[(t - 1) * n]));
    }
    double m = 0;
    for (double x : r) m += x;
    m /= static_cast<double>(r.size());
    double m2 = 0, m4 = 0;
    for (double x : r) {
      m2 += (x - m) * (x - m);
      m4 += std::pow(x - m, 4);
    }
    m2 /= static_cast<double>(r.size());
    m4 /= static_cast<double>(r.size());
    double sq_mean = 0;
    for (double x : r) sq_mean += x * x;
    sq_mean /= static_cast<double>(r.size());
    double cov = 0, var = 0;
    for (size_t k = 0; k < r.size(); ++k) {
      const double a = r[k] * r[k] - sq_mean;
      var += a * a;
      if (k > 0) cov += a * (r[k - 1] * r[k - 1] - sq_mean);
    }
    auto market = env::MarketData::FromDataset(*data);
    if (!market.ok()) Die(market.status().ToString());
    const int64_t T = (*market)->num_rows;
    const int64_t lockbox_begin = T - static_cast<int64_t>(0.15 * T);
    const std::vector<env::Domain> lockbox = {env::Domain{lockbox_begin, T}};
    env::EnvOptions eo;
    auto rules = co::ComputeLockboxRules(*market, eo, lockbox);
    if (!rules.ok()) Die(rules.status().ToString());
    // Buy and hold: the benchmark of any rule's evaluation on those bars.
    auto ew = co::EvaluateRule(*market, eo, lockbox,
                               co::Rule::kEqualWeightRebalanced, 0);
    if (!ew.ok()) Die(ew.status().ToString());
    const auto& rr = *rules;
    std::printf(
        "%-5llu %-10.2f %-10.2f %-6.2f±%-4.2f %-12s %-10.2f %-9.1f "
        "%-9.2f %-6.2f %.3f\n",
        static_cast<unsigned long long>(seed), ew->benchmark_sharpe,
        rr[0].sharpe, rr[1].sharpe, rr[1].sharpe_se,
        rr[1].parameter.substr(0, 12).c_str(), rr[2].sharpe, rr[1].turnover,
        rr[1].fees, m4 / (m2 * m2) - 3.0, var > 0 ? cov / var : 0.0);
  }
  return 0;
}
