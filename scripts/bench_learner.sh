#!/usr/bin/env bash
# Learner speed: PPO update throughput (ristretto vs a bare LibTorch loop,
# same run) and the single-process trainer on the original's CV-split
# workload (30k env steps, 2×512, minibatch 2048, 16 passes over rollouts of
# 1,024 steps, lookback 2, 7 assets × 98 features, T = 8,615, train 4,308
# rows), OpenBLAS's thread count chosen per step (--reproducible=false, as
# the learner service). Medians of 3. Usage: scripts/bench_learner.sh (after build).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
"$B/bench/ppo_update_bench" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true 2>&1 | grep -E "Benchmark|----|_median"
echo "trainer (3 runs):"
for i in 1 2 3; do
  "$B/cli/ristretto" train --budget 30000 --envs 8 --rollout 128 --epochs 16 \
    --minibatch 2048 --policy-hidden 512,512 --lookback 2 --seed "$i" \
    --synthetic-rows 8678 --validation-share 0.5 --quiet \
    --reproducible=false | grep -E "^time:"
done
