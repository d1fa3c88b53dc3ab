#!/usr/bin/env bash
# Env speed: Google Benchmark of VectorEnv::Step (with its two baselines,
# measured in the same run) plus the CLI bench. Medians of 5 repetitions.
# Usage: scripts/bench_env.sh   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
"$B/bench/vector_env_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.3 \
  --benchmark_filter='median|.' 2>&1 | grep -E "Benchmark|----|_median"
for L in 1 5; do
  "$B/cli/ristretto" env bench --assets 7 --features 98 --lookback "$L" \
    --copies 1024 --seconds 3 | tail -1 | sed "s/^/lookback=$L /"
done
