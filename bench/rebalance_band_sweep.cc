// What the no-trade band costs and saves (issue 34, docs/env_actions.md):
// plays the equal-weight target (every action +1, the weights model's
// "fully invested, equally") through the env with its default costs for a
// list of bands, over every domain of a data set, and prints per band the
// annualised return, Sharpe, fees + slippage and turnover per year, the
// trade count, and how far the portfolio drifts from its target (mean and
// 95th percentile over bars of max_i |w_i − 1/n|).
//
// Usage: rebalance_band_sweep (--csv-dir DIR --interval-seconds S |
//          --synthetic-rows N [--synthetic-assets 2]
//          [--synthetic-predictability P]) [--bands
//          0,0.01,...]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "env/csv_import.h"
#include "env/features.h"
#include "env/market_data.h"
#include "env/synthetic.h"
#include "env/vector_env.h"

namespace {

using ristretto::env::Domain;
using ristretto::env::EpisodeMode;
using ristretto::env::MarketData;
using ristretto::env::StepOutput;
using ristretto::env::VectorEnv;
using ristretto::env::VectorEnvOptions;

struct Row {
  double band, ann_return, sharpe, cost_per_year, turnover_per_year;
  int64_t trades;
  double drift_mean, drift_p95;
};

Row Sweep(const std::shared_ptr<const MarketData>& m, double band) {
  VectorEnvOptions o;
  o.mode = EpisodeMode::kManual;
  o.env.rebalance_band = band;
  Row row{band, 0, 0, 0, 0, 0, 0, 0};
  const int n = m->num_assets;
  std::vector<double> rets, drift;
  double costs = 0, traded = 0, bars = 0;
  for (const Domain& d : m->domains) {
    if (d.size() < 3) continue;
    auto env = VectorEnv::Create(m, o);
    if (!env.ok()) {
      std::fprintf(stderr, "%s\n", env.status().ToString().c_str());
      std::exit(1);
    }
    std::vector<float> obs((*env)->observation_size());
    if (!(*env)->ResetCopy(0, d.begin, d.size(), obs.data()).ok()) continue;
    const std::vector<float> all_in(static_cast<size_t>(n), 1.0f);
    double v = (*env)->total_asset(0);
    while (!(*env)->done(0)) {
      if (!(*env)->Step(all_in.data(), StepOutput{obs.data()}).ok()) break;
      const double v2 = (*env)->total_asset(0);
      rets.push_back(std::log(v2 / v));
      v = v2;
      const double* p = m->price.data() + (*env)->row(0) * n;
      double worst = 0;
      for (int i = 0; i < n; ++i) {
        const double w = (*env)->holding(0, i) * p[i] / v2;
        worst = std::max(worst, std::fabs(w - 1.0 / n));
      }
      drift.push_back(worst);
    }
    const auto& info = (*env)->last_episode(0);
    costs += (info.buy_fees + info.sell_fees + info.slippage) /
             o.env.initial_capital;
    traded += info.traded_notional / o.env.initial_capital;
    row.trades += info.buy_trades + info.sell_trades;
  }
  bars = static_cast<double>(rets.size());
  const double per_year = 365.25 * 86400.0 / m->interval_seconds;
  double mean = 0, var = 0;
  for (double r : rets) mean += r;
  mean /= bars;
  for (double r : rets) var += (r - mean) * (r - mean);
  var /= std::max(1.0, bars - 1);
  row.ann_return = std::exp(mean * per_year) - 1;
  row.sharpe = var > 0 ? mean / std::sqrt(var) * std::sqrt(per_year) : 0;
  row.cost_per_year = costs / (bars / per_year);
  row.turnover_per_year = traded / (bars / per_year);
  std::sort(drift.begin(), drift.end());
  double s = 0;
  for (double x : drift) s += x;
  row.drift_mean = s / static_cast<double>(drift.size());
  row.drift_p95 = drift[static_cast<size_t>(0.95 * (drift.size() - 1))];
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv_dir;
  int64_t interval = 3600, synth_rows = 0;
  double predictability = 0;
  std::vector<double> bands = {0, 0.005, 0.01, 0.02, 0.05, 0.1};
  int assets = 2;
  for (int k = 1; k + 1 < argc; k += 2) {
    const std::string flag = argv[k], value = argv[k + 1];
    bool ok = true;
    if (flag == "--csv-dir") {
      csv_dir = value;
    } else if (flag == "--interval-seconds") {
      ok = absl::SimpleAtoi(value, &interval);
    } else if (flag == "--synthetic-rows") {
      ok = absl::SimpleAtoi(value, &synth_rows);
    } else if (flag == "--synthetic-assets") {
      ok = absl::SimpleAtoi(value, &assets);
    } else if (flag == "--synthetic-predictability") {
      ok = absl::SimpleAtod(value, &predictability);
    } else if (flag == "--bands") {
      bands.clear();
      for (absl::string_view b : absl::StrSplit(value, ',')) {
        double x = 0;
        ok = ok && absl::SimpleAtod(b, &x);
        bands.push_back(x);
      }
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad flag %s %s\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  absl::StatusOr<ristretto::env::Dataset> dataset;
  if (!csv_dir.empty()) {
    ristretto::env::CsvImportOptions io;
    io.csv_dir = csv_dir;
    io.interval_seconds = interval;
    ristretto::env::CsvImportReport report;
    dataset = ristretto::env::ImportCsvDirectory(io, &report);
    if (dataset.ok()) {
      const absl::Status s = ristretto::env::ComputeFeatures(&*dataset);
      if (!s.ok()) dataset = s;
    }
  } else {
    // The demo's market (deploy/studies/small.yaml) by default.
    ristretto::env::SyntheticMarketOptions so;
    so.num_assets = assets;
    so.num_rows = synth_rows > 0 ? synth_rows : 6000;
    so.seed = 7;
    so.predictability = predictability;
    so.signal_bars = 10;
    dataset = ristretto::env::GenerateSyntheticDataset(so);
  }
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 1;
  }
  auto market = MarketData::FromDataset(*dataset);
  if (!market.ok()) {
    std::fprintf(stderr, "%s\n", market.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "band\tann_return\tsharpe\tcost_pct_per_year\tturnover_per_year\t"
      "trades\tdrift_mean\tdrift_p95\n");
  for (double band : bands) {
    const Row r = Sweep(*market, band);
    std::printf("%.3f\t%+.2f%%\t%.3f\t%.2f%%\t%.2f\t%lld\t%.4f\t%.4f\n", r.band,
                100 * r.ann_return, r.sharpe, 100 * r.cost_per_year,
                r.turnover_per_year, static_cast<long long>(r.trades),
                r.drift_mean, r.drift_p95);
  }
  return 0;
}
