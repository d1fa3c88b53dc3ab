#include "cli/env_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/command_line.h"
#include "cli/common_flags.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "env/csv_import.h"
#include "env/dataset.h"
#include "env/features.h"
#include "env/geometry.h"
#include "env/golden_replay.h"
#include "env/market_data.h"
#include "env/metrics.h"
#include "env/synthetic.h"
#include "env/vector_env.h"

// env bench.
ABSL_FLAG(int64_t, features, 98, "features per asset of the bench market");
ABSL_FLAG(double, seconds, 3.0, "how long to step the envs");

namespace ristretto::cli {
namespace {

using env::Dataset;

constexpr char kEnvUsage[] =
    "usage: ristretto env <command> [options]\n"
    "  replay CASE_DIR [--copies 1]   replay a golden case, compare traces\n"
    "  bench [--assets 7] [--features 98] [--lookback 1] [--copies 1024]\n"
    "        [--seconds 3] [--rows 20000] [--seed 1]   env steps per second\n"
    "  demo [--seed 7] [--rows 6000] [--lookback 2]   fixed policies on a\n"
    "        synthetic market\n"
    "ristretto env COMMAND --help lists a command's flags.\n";

Command EnvReplayCommand() {
  return {"env replay",
          "usage: ristretto env replay CASE_DIR [--copies 1]\n"
          "Replays a golden env case (params.json, expected.csv) in --copies "
          "env copies and\ncompares every step; exit status 1 when a trace "
          "differs.\n",
          FlagsOf(FLAGS_copies), /*max_positional=*/1};
}

Command EnvBenchCommand() {
  return {"env bench",
          "usage: ristretto env bench [--assets 7] [--features 98] "
          "[--lookback 1]\n"
          "           [--copies 1024] [--seconds 3] [--rows 20000] "
          "[--seed 1]\n"
          "Steps a vector env with random actions and prints env steps per "
          "second.\n",
          FlagsOf(FLAGS_assets, FLAGS_features, FLAGS_lookback, FLAGS_copies,
                  FLAGS_seconds, FLAGS_rows, FLAGS_seed)};
}

Command EnvDemoCommand() {
  return {"env demo",
          "usage: ristretto env demo [--seed 7] [--rows 6000] [--lookback 2]\n"
          "Plays three fixed policies over the held-out slice of a synthetic "
          "market\nand prints their metrics next to equal-weight buy and "
          "hold.\n",
          FlagsOf(FLAGS_seed, FLAGS_rows, FLAGS_lookback)};
}

// ---- env -------------------------------------------------------------------

absl::StatusOr<bool> EnvReplay(const ParsedCommandLine& parsed) {
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ristretto env replay CASE_DIR [--copies B]");
  }
  const int64_t copies = absl::GetFlag(FLAGS_copies).value_or(1);
  if (copies < 1 || copies > 4096) {
    return absl::InvalidArgumentError("--copies must be in [1, 4096]");
  }
  ASSIGN_OR_RETURN(env::GoldenCase golden,
                   env::LoadGoldenCase(parsed.positional[0]));
  ASSIGN_OR_RETURN(env::ReplayReport report,
                   env::ReplayGoldenCase(golden, static_cast<int>(copies)));
  std::fputs(env::FormatReplayReport(report).c_str(), stdout);
  return report.passed();
}

absl::Status EnvBench() {
  const int64_t assets = absl::GetFlag(FLAGS_assets).value_or(7);
  const int64_t features = absl::GetFlag(FLAGS_features);
  const int64_t lookback = absl::GetFlag(FLAGS_lookback).value_or(1);
  const int64_t copies = absl::GetFlag(FLAGS_copies).value_or(1024);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int64_t rows = absl::GetFlag(FLAGS_rows).value_or(20000);
  const int64_t seed = absl::GetFlag(FLAGS_seed).value_or(1);
  if (copies < 1 || copies > (1 << 20) || seconds <= 0 || lookback < 1) {
    return absl::InvalidArgumentError(
        "--copies must be in [1, 2^20], --seconds > 0, --lookback >= 1");
  }
  ASSIGN_OR_RETURN(auto market, env::GenerateBenchmarkMarket(
                                    static_cast<int>(assets), features, rows,
                                    static_cast<uint64_t>(seed)));
  env::VectorEnvOptions options;
  options.env.lookback = static_cast<int>(lookback);
  options.num_copies = static_cast<int>(copies);
  options.mode = env::EpisodeMode::kTrain;
  options.episode_steps =
      std::min<int64_t>(1000, env::StepsInRows(rows, lookback));
  options.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(auto vec, env::VectorEnv::Create(market, options));
  const size_t D = static_cast<size_t>(vec->observation_size());
  std::vector<float> obs(static_cast<size_t>(copies) * D);
  std::vector<float> reward(copies);
  std::vector<uint8_t> done(copies);
  // A ring of pre-drawn random action batches, so the timed loop measures
  // the env, not the random number generator.
  constexpr int kBatches = 16;
  const size_t batch = static_cast<size_t>(copies) * assets;
  std::vector<float> actions(kBatches * batch);
  Rng rng(static_cast<uint64_t>(seed));
  for (float& a : actions) a = static_cast<float>(2.0 * rng.Uniform() - 1.0);
  vec->Reset(obs.data());
  env::StepOutput out{obs.data(), reward.data(), done.data(), nullptr};
  std::printf(
      "env bench: assets=%lld features=%lld lookback=%lld copies=%lld "
      "obs_size=%zu rows=%lld\n",
      static_cast<long long>(assets), static_cast<long long>(features),
      static_cast<long long>(lookback), static_cast<long long>(copies), D,
      static_cast<long long>(rows));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  int64_t iterations = 0;
  auto now = start;
  while (now < deadline) {
    for (int k = 0; k < kBatches; ++k) {
      RETURN_IF_ERROR(vec->Step(actions.data() + k * batch, out));
    }
    iterations += kBatches;
    now = Clock::now();
  }
  const double elapsed = std::chrono::duration<double>(now - start).count();
  const double steps = static_cast<double>(iterations) * copies;
  std::printf("steps=%.0f seconds=%.3f\n", steps, elapsed);
  std::printf("env_steps_per_second=%.0f\n", steps / elapsed);
  return absl::OkStatus();
}

// Plays three fixed policies over a held-out slice of a synthetic market and
// prints their metrics next to equal-weight buy-and-hold.
absl::Status EnvDemo() {
  env::SyntheticMarketOptions o;
  o.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed).value_or(7));
  o.num_rows = absl::GetFlag(FLAGS_rows).value_or(6000);
  const int64_t lookback = absl::GetFlag(FLAGS_lookback).value_or(2);
  ASSIGN_OR_RETURN(Dataset dataset, env::GenerateSyntheticDataset(o));
  ASSIGN_OR_RETURN(auto market, env::MarketData::FromDataset(dataset));
  const int64_t T = market->num_rows;
  const int64_t split = T * 7 / 10;
  const env::Domain validation{split, T};
  std::printf("synthetic market: %d assets x %lld rows (%s bars), id %.16s\n",
              dataset.num_assets(), static_cast<long long>(T),
              env::FormatInterval(dataset.interval_seconds).c_str(),
              dataset.ComputeId().c_str());
  std::printf(
      "validation slice: rows [%lld, %lld), %s .. %s\n",
      static_cast<long long>(validation.begin),
      static_cast<long long>(validation.end),
      env::FormatTimestamp(dataset.timestamps[validation.begin]).c_str(),
      env::FormatTimestamp(dataset.timestamps[validation.end - 1]).c_str());

  const char* kPolicies[] = {"all cash", "random", "momentum"};
  constexpr int kCopies = 3;
  env::VectorEnvOptions options;
  options.env.lookback = static_cast<int>(lookback);
  options.num_copies = kCopies;
  options.mode = env::EpisodeMode::kEvaluate;
  options.domains = {validation};
  options.auto_reset = false;
  ASSIGN_OR_RETURN(auto vec, env::VectorEnv::Create(market, options));
  const int n = vec->num_assets();
  std::vector<float> obs(kCopies * vec->observation_size());
  std::vector<float> actions(kCopies * n);
  std::vector<uint8_t> done(kCopies);
  std::vector<std::vector<double>> values(kCopies);
  vec->Reset(obs.data());
  for (int b = 0; b < kCopies; ++b) values[b].push_back(vec->total_asset(b));
  const int64_t first_row = vec->row(0);
  Rng rng(o.seed);
  env::StepOutput out{obs.data(), nullptr, done.data(), nullptr};
  const auto start = std::chrono::steady_clock::now();
  while (!vec->done(0)) {
    const int64_t row = vec->row(0);
    for (int i = 0; i < n; ++i) {
      // All cash: no order (shares), or a zero target weight (weights).
      actions[0 * n + i] =
          options.env.action_model == env::ActionModel::kWeights
              ? -static_cast<float>(options.env.action_clip)
              : 0.0f;
      actions[1 * n + i] = static_cast<float>(2.0 * rng.Uniform() - 1.0);
      const double p = market->price[row * n + i];
      const double prev = market->price[(row - 1) * n + i];
      actions[2 * n + i] = p > prev ? 1.0f : -1.0f;
    }
    RETURN_IF_ERROR(vec->Step(actions.data(), out));
    for (int b = 0; b < kCopies; ++b) values[b].push_back(vec->total_asset(b));
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const int64_t last_row = vec->row(0);
  const double bpy = env::BarsPerYear(dataset.interval_seconds);
  std::vector<double> bench = env::BuyAndHoldAccount(
      market->price, n, first_row, last_row + 1, options.env.initial_capital,
      options.env.buy_fee, options.env.slippage_bps);
  std::printf("episode: %zu steps in %.2f ms\n\n", values[0].size() - 1,
              elapsed * 1e3);
  std::printf("%-22s %10s %9s %8s %8s %8s %8s %6s %6s %8s\n", "policy", "final",
              "return%", "sharpe", "sortino", "max_dd%", "calmar", "buys",
              "sells", "fees");
  auto row_out = [&](const char* name, const std::vector<double>& v,
                     const env::EpisodeInfo* info) {
    const env::PerformanceSummary s = env::Summarize(v, bpy);
    std::printf(
        "%-22s %10.2f %9.2f %8.3f %8.3f %8.2f %8.3f %6s %6s %8s\n", name,
        v.back(), 100 * s.total_return, s.sharpe, s.sortino,
        100 * s.max_drawdown, s.calmar,
        info ? absl::StrCat(info->buy_trades).c_str() : "-",
        info ? absl::StrCat(info->sell_trades).c_str() : "-",
        info ? absl::StrFormat("%.2f", info->buy_fees + info->sell_fees).c_str()
             : "-");
  };
  for (int b = 0; b < kCopies; ++b) {
    row_out(kPolicies[b], values[b], &vec->last_episode(b));
  }
  row_out("equal-weight buy&hold", bench, nullptr);
  return absl::OkStatus();
}

}  // namespace

int RunEnvCommand(int argc, char** argv, int first) {
  std::string verb;
  if (const std::optional<int> exit_code =
          GroupVerb(argc, argv, first, kEnvUsage, &verb)) {
    return *exit_code;
  }
  std::optional<Command> command;
  if (verb == "replay") command = EnvReplayCommand();
  if (verb == "bench") command = EnvBenchCommand();
  if (verb == "demo") command = EnvDemoCommand();
  if (!command.has_value()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unknown env command '", EscapeForMessage(verb),
                     "' (replay, bench, demo)")));
  }
  ParsedCommandLine parsed;
  if (const std::optional<int> exit_code =
          ParseCommand(*command, argc, argv, first + 1, &parsed)) {
    return *exit_code;
  }
  if (verb == "replay") {
    absl::StatusOr<bool> passed = EnvReplay(parsed);
    if (!passed.ok()) return Fail(passed.status());
    return *passed ? 0 : 1;
  }
  const absl::Status status = verb == "bench" ? EnvBench() : EnvDemo();
  return status.ok() ? 0 : Fail(status);
}

}  // namespace ristretto::cli
