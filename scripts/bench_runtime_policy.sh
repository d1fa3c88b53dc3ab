#!/usr/bin/env bash
# The runtime policy (common/runtime_policy.h) A/B, in one script run:
# bench/ppo_update_bench (ristretto's PPO update and the bare LibTorch loop
# doing the same maths, 2x512, minibatch 2048) with the bench role's policy
# on and with RISTRETTO_RUNTIME_POLICY=off (glibc's, OpenBLAS's and
# LibTorch's defaults), alternating per process for ROUNDS (5) rounds, the
# order swapped every round. Prints the median samples/s of each variant
# and mode, the on/off ratio (median of per-round ratios) and, under the
# policy, ristretto's update against the bare loop (median of per-round
# ratios; the issue's target is >= 0.95). Wall-clock numbers: take them on
# a quiet machine (the load average is printed before and after).
#
# Usage: scripts/bench_runtime_policy.sh
#        ROUNDS=5 MIN_TIME=1 WIDTH=512 BUILD_DIR=build
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-5}
MIN_TIME=${MIN_TIME:-1}
WIDTH=${WIDTH:-512}
bench=$B/bench/ppo_update_bench
[ -x "$bench" ] || { echo "no $bench (build it first)" >&2; exit 1; }
work=$(mktemp -d /tmp/ristretto-bench-policy.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
# run MODE ROUND: "VARIANT SAMPLES_PER_S" lines into $work/MODE-ROUND.txt.
run() {
  local env=()
  [ "$1" = off ] && env=(RISTRETTO_RUNTIME_POLICY=off)
  env "${env[@]}" "$bench" --benchmark_filter="/width:$WIDTH/" \
    --benchmark_min_time="$MIN_TIME" --benchmark_format=csv 2>/dev/null |
    awk -F, '/^"BM_/ { name = $1; gsub(/"/, "", name); sub(/\/.*/, "", name);
      sub(/^BM_/, "", name); print name, $7 }' >"$work/$1-$2.txt"
}
for round in $(seq "$ROUNDS"); do
  modes="off on"
  [ $((round % 2)) = 0 ] && modes="on off"
  for mode in $modes; do run "$mode" "$round"; done
  echo "round $round: $(paste -d' ' "$work/off-$round.txt" "$work/on-$round.txt" |
    awk '{ printf "%s off %.0f on %.0f samples/s; ", $1, $2, $4 }')"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for v in BareLibTorchPpoUpdate RistrettoPpoUpdate; do
  off=$(cat "$work"/off-*.txt | awk -v v="$v" '$1 == v { print $2 }' | median)
  on=$(cat "$work"/on-*.txt | awk -v v="$v" '$1 == v { print $2 }' | median)
  ratio=$(for r in $(seq "$ROUNDS"); do
    paste -d' ' "$work/off-$r.txt" "$work/on-$r.txt" | awk -v v="$v" '$1 == v { print $4 / $2 }'
  done | median)
  printf '%-22s policy off %8.0f samples/s, on %8.0f samples/s: on/off x%.3f (median of per-round ratios)\n' \
    "$v" "$off" "$on" "$ratio"
done
for mode in on off; do
  r=$(for f in "$work"/"$mode"-*.txt; do
    awk '{ s[$1] = $2 } END { print s["RistrettoPpoUpdate"] / s["BareLibTorchPpoUpdate"] }' "$f"
  done | median)
  printf 'policy %-3s ristretto/bare x%.3f (median of per-round ratios)\n' "$mode" "$r"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
