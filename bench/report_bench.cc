// Study report benchmark: how long `ristretto study report` takes
// for a 200-trial study, against a real PostgreSQL (plain main; prints every
// repetition, then medians).
//
// Setup (untimed): a private PgCluster (unsafe_fast) in a fresh temporary
// directory; the shipped small study (deploy/studies/small.yaml: synthetic
// 6000 × 2 assets, 2 walk-forward folds of 1200 validation bars, lockbox
// 15 %, 3 searched parameters) with max_trials raised to --trials. Every
// trial goes through the Store as the coordinator drives it: CreateTrial
// with the fold configs BuildRunOptions makes for random parameters,
// LeaseRun, ReportIntermediate at 50,000 and 100,000 env steps, then either
// CompleteRun of both folds with fold metrics carrying 1,192 per-bar
// validation returns each and CompleteTrial, or (one in five) PruneTrial
// after the first report. Each complete trial then gets its final run
// (AddFinalRun with BuildFinalRunOptions, LeaseRun, CompleteFinalRun with
// the lockbox's per-bar returns). The study is marked done and its
// statistics stored (ComputeStudyResult + PutStudyResult), as the
// coordinator does when a study ends.
//
// Timed, --reps repetitions, interleaved:
//   load      report::LoadStudyReport (every query, statistics from the
//             stored result, the dataset regenerated and buy & hold rebuilt
//             on the best trial's 2 folds and lockbox)
//   render    report::RenderStudyReportHtml of that data
//   write     report::WriteStudyReport: what `ristretto study report` does
//             after connecting (load + render + atomic write)
//   compute   coordinator::ComputeStudyResult: the statistics of a study
//             that is not done yet (DSR, PBO over every complete trial),
//             which `study report` then computes on the fly
//
// Usage: report_bench [--trials 200] [--reps 7] [--study FILE] [--seed 1]
//                     [--copy-report FILE]  (keeps the last report.html)
//                     [--cli build/cli/ristretto]  (also times the command:
//                     process start, connection, report; --reps times)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/file_util.h"
#include "common/runtime_policy.h"
#include "coordinator/core/search_space.h"
#include "coordinator/core/statistics.h"
#include "coordinator/core/study_config.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/pg_cluster.h"
#include "coordinator/store/store.h"
#include "coordinator/store/study_result.h"
#include "env/geometry.h"
#include "env/synthetic.h"
#include "learner/run_config_codec.h"
#include "report/study_report.h"
#include "report/study_report_store.h"

namespace {

namespace fs = std::filesystem;
namespace co = ristretto::coordinator;

template <typename T>
T Check(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "report_bench: %s: %s\n", what,
                 std::string(v.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(v);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "report_bench: %s: %s\n", what,
                 std::string(s.message()).c_str());
    std::exit(1);
  }
}

// Per-bar log returns with a given annualised-ish drift (noise 1 %).
std::vector<double> Returns(std::mt19937_64& rng, size_t n, double drift) {
  std::normal_distribution<double> noise(drift, 0.01);
  std::vector<double> r(n);
  for (double& x : r) x = noise(rng);
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double TimeMs(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  ristretto::ApplyRuntimePolicy(
      ristretto::RuntimePolicyFor(ristretto::ProcessRole::kBench));
  int trials = 200, reps = 7;
  std::string copy_report;  // where to keep the last report.html
  std::string cli;          // the ristretto binary, to time the command too
  uint64_t seed = 1;
  std::string study_file =
      std::string(RISTRETTO_SOURCE_DIR) + "/deploy/studies/small.yaml";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--trials") == 0) trials = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--study") == 0) study_file = argv[i + 1];
    if (std::strcmp(argv[i], "--copy-report") == 0) copy_report = argv[i + 1];
    if (std::strcmp(argv[i], "--cli") == 0) cli = argv[i + 1];
    if (std::strcmp(argv[i], "--seed") == 0) {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    }
  }
  const fs::path tmp = fs::temp_directory_path() /
                       absl::StrCat("ristretto-report-bench-", getpid());
  fs::create_directories(tmp);
  co::PgClusterOptions pg_options;
  pg_options.data_dir = (tmp / "pg").string();
  pg_options.unsafe_fast = true;
  std::unique_ptr<co::PgCluster> pg =
      Check(co::PgCluster::Start(pg_options), "starting PostgreSQL");
  std::unique_ptr<co::Store> store =
      Check(co::Store::Connect(pg->dsn()), "connecting");
  Check(store->Migrate(), "migrating");

  std::string text = Check(ristretto::ReadFileToString(study_file), "study");
  text = absl::StrReplaceAll(
      text, {{"name: small", "name: bench-report"},
             {"max_trials: 6", absl::StrCat("max_trials: ", trials)}});
  const co::StudyConfig config =
      Check(co::ParseStudyConfig(text), "parsing the study");
  const ristretto::env::Dataset dataset =
      Check(ristretto::env::GenerateSyntheticDataset(
                co::SyntheticOptions(config.dataset)),
            "generating the market");
  co::DatasetInfo info;
  info.id = dataset.ComputeId();
  info.num_rows = dataset.num_rows();
  info.domains = dataset.domains;
  info.feature_names = dataset.feature_names;
  const co::StudyRow study =
      Check(store->CreateStudy(config.name, text), "creating the study");
  Check(store->SetStudyState(study.id, co::StudyState::kRunning), "starting");

  // ---- fill (untimed)
  const auto fill_start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const std::string member = "bench-learner";
  int complete = 0, pruned = 0, lockbox = 0;
  std::vector<int64_t> complete_ids;
  for (int t = 0; t < trials; ++t) {
    co::Params params;
    std::vector<co::ParamRow> rows;
    for (const co::ParamSpec& p : config.space) {
      double v = p.log ? std::exp(std::log(p.low) +
                                  u(rng) * (std::log(p.high) - std::log(p.low)))
                       : p.low + u(rng) * (p.high - p.low);
      if (p.step.has_value()) {
        v = p.low + std::round((v - p.low) / *p.step) * *p.step;
      }
      params[p.name] = co::FormatValue(p, v);
      rows.push_back({p.name, params[p.name]});
    }
    const std::vector<ristretto::learner::TrainerOptions> fold_options =
        Check(co::BuildRunOptions(config, params, info), "fold options");
    std::vector<std::string> configs;
    configs.reserve(fold_options.size());
    for (const auto& o : fold_options) {
      configs.push_back(
          Check(ristretto::learner::TrainerOptionsToConfigJson(o), "config"));
    }
    const co::TrialRow trial = Check(
        store->CreateTrial(study.id, rows, configs, (tmp / "runs").string()),
        "CreateTrial");
    // The score depends on the learning rate (so importance has something
    // to find) plus noise.
    const double lr = std::log10(std::stod(params["learning_rate"]));
    const double quality = -(lr + 3) * (lr + 3) * 4 + u(rng);
    const bool prune = t % 5 == 4;
    std::vector<co::RunRow> leased;
    for (size_t k = 0; k < configs.size(); ++k) {
      std::optional<co::RunRow> run =
          Check(store->LeaseRun(member, absl::Minutes(10)), "LeaseRun");
      if (!run.has_value()) {
        std::fprintf(stderr, "report_bench: no run to lease\n");
        return 1;
      }
      leased.push_back(*run);
    }
    for (const co::RunRow& run : leased) {
      Check(store->ReportIntermediate(run.id, member, 50000,
                                      quality - 1 + u(rng)),
            "ReportIntermediate");
      if (prune) break;
      Check(store->ReportIntermediate(run.id, member, 100000, quality + u(rng)),
            "ReportIntermediate");
    }
    if (prune) {
      Check(store->PruneTrial(trial.id), "PruneTrial");
      ++pruned;
      continue;
    }
    double score = 0;
    for (const co::RunRow& run : leased) {
      co::FoldMetrics m;
      m.fold = run.fold;
      m.log_returns = Returns(rng, 1192, 0.0002 * quality + 0.001);
      const co::SharpeStats st = co::ReturnStats(m.log_returns);
      m.sharpe = co::AnnualiseSharpe(st.sharpe, 17532);
      m.score = m.sharpe;
      m.benchmark_sharpe = 1.0;
      m.env_steps = 100000;
      score += m.score / static_cast<double>(leased.size());
      Check(store->CompleteRun(run.id, member, m, {}), "CompleteRun");
    }
    Check(store->CompleteTrial(trial.id, score), "CompleteTrial");
    ++complete;
    complete_ids.push_back(trial.id);
    // Its final run on the lockbox.
    const ristretto::learner::TrainerOptions final_options = Check(
        co::BuildFinalRunOptions(config, params, info, 100000), "final run");
    Check(
        store->AddFinalRun(
            trial.id,
            Check(ristretto::learner::TrainerOptionsToConfigJson(final_options),
                  "final config"),
            (tmp / "runs").string()),
        "AddFinalRun");
    std::optional<co::RunRow> final_run =
        Check(store->LeaseRun(member, absl::Minutes(10)), "LeaseRun final");
    if (!final_run.has_value() || final_run->fold != co::kLockboxFold) {
      std::fprintf(stderr, "report_bench: the final run was not leased\n");
      return 1;
    }
    // As many returns as the env plays on the lockbox domains (S − 2L + 1
    // values of a domain of S rows: S − 2L returns).
    int64_t bars = 0;
    for (const auto& d : final_options.validation_domains) {
      bars += ristretto::env::StepsInRows(d.size(), final_options.env.lookback);
    }
    co::LockboxRow row;
    row.policy.fold = co::kLockboxFold;
    row.policy.log_returns =
        Returns(rng, static_cast<size_t>(bars), 0.0001 * quality + 0.001);
    row.bars = bars;
    row.policy.sharpe = co::AnnualiseSharpe(
        co::ReturnStats(row.policy.log_returns).sharpe, 17532);
    row.sharpe_se = co::AnnualisedSharpeError(row.policy.log_returns, 17532);
    row.bh_sharpe = 1.0;
    row.bh_sharpe_se = 4.0;
    row.random_seeds = 20;
    Check(store->CompleteFinalRun(final_run->id, member, row, {}),
          "CompleteFinalRun");
    ++lockbox;
  }
  Check(store->SetStudyState(study.id, co::StudyState::kDone), "done");
  const co::StudyRow done =
      Check(store->GetStudyById(study.id), "reading the study");
  const co::StudyStatistics stats =
      Check(co::ComputeStudyResult(*store, done), "statistics");
  Check(store->PutStudyResult(study.id, co::StudyStatisticsToJson(stats)),
        "PutStudyResult");
  std::printf(
      "filled %d trials (%d complete with a lockbox run: %d, %d pruned) in "
      "%.1f s; verdict: %s\n",
      trials, complete, lockbox, pruned,
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    fill_start)
          .count(),
      stats.verdict.c_str());

  // ---- timed
  std::vector<double> load_ms, render_ms, write_ms, compute_ms;
  size_t html_bytes = 0;
  const std::string out_dir = (tmp / "out").string();
  for (int r = 0; r < reps; ++r) {
    ristretto::report::StudyReportData data;
    load_ms.push_back(TimeMs([&] {
      data = Check(ristretto::report::LoadStudyReport(*store, config.name),
                   "LoadStudyReport");
    }));
    std::string html;
    render_ms.push_back(
        TimeMs([&] { html = ristretto::report::RenderStudyReportHtml(data); }));
    html_bytes = html.size();
    write_ms.push_back(TimeMs([&] {
      Check(ristretto::report::WriteStudyReport(*store, config.name, out_dir),
            "WriteStudyReport");
    }));
    compute_ms.push_back(TimeMs(
        [&] { Check(co::ComputeStudyResult(*store, done), "compute"); }));
    std::printf(
        "rep %d: load %.1f ms, render %.1f ms, write (load + render + "
        "write) %.1f ms, compute statistics %.1f ms\n",
        r + 1, load_ms.back(), render_ms.back(), write_ms.back(),
        compute_ms.back());
    std::fflush(stdout);
  }
  // The whole command as a user runs it: process start, connection,
  // migration check, report (the study's statistics are stored: it is done).
  std::vector<double> cli_ms;
  if (!cli.empty()) {
    const std::string command = absl::StrCat(
        cli, " study report ", config.name, " --out '",
        (tmp / "cli-out").string(), "' --db '", pg->dsn(), "' > /dev/null");
    for (int r = 0; r < reps; ++r) {
      int rc = 0;
      cli_ms.push_back(TimeMs([&] { rc = std::system(command.c_str()); }));
      if (rc != 0) {
        std::fprintf(stderr, "report_bench: '%s' failed\n", command.c_str());
        return 1;
      }
      std::printf("rep %d: ristretto study report %.1f ms\n", r + 1,
                  cli_ms.back());
    }
    std::printf("median of %d: ristretto study report %.1f ms\n", reps,
                Median(cli_ms));
  }
  std::printf(
      "median of %d: load %.1f ms, render %.1f ms, write %.1f ms, compute "
      "statistics %.1f ms; report.html %.1f KiB\n",
      reps, Median(load_ms), Median(render_ms), Median(write_ms),
      Median(compute_ms), static_cast<double>(html_bytes) / 1024);
  std::error_code ec;
  if (!copy_report.empty()) {
    fs::copy_file(fs::path(out_dir) / "report.html", copy_report,
                  fs::copy_options::overwrite_existing, ec);
    std::printf("report copied to %s%s\n", copy_report.c_str(),
                ec ? (" FAILED: " + ec.message()).c_str() : "");
  }
  store.reset();
  Check(pg->Stop(), "stopping PostgreSQL");
  fs::remove_all(tmp, ec);
  return 0;
}
