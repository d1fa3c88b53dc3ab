#!/usr/bin/env bash
# Learner throughput with many runs on one device: one ristretto-learner
# hosting N runs (N in RUNS, default "1 4 16"), fed by M ristretto-actors on
# the machine's CPU cores (M = max(N, cores - 2) unless ACTORS is set; the
# learner gives each actor the run with the fewest actors). For each N it
# prints:
#   samples/s     env steps trained by all runs / learner wall seconds
#   env steps/s   env steps the actors sent / learner wall seconds
#   dropped       share of the received env steps dropped as stale
#   update ms     mean wall time of one update (the learner's
#                 ristretto_learner_update_seconds, summed over runs)
#   GPU busy      the learner's ristretto_learner_gpu_busy_ratio (device
#                 work bracketed by the learner) and NVML's utilisation
#                 sampled by nvidia-smi every 0.5 s (mean); "n/a" on CPU
#
# LibTorch: when `python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'`
# works and that torch sees CUDA, the script configures and builds
# ristretto-learner and ristretto-actor against that LibTorch in
# GPU_BUILD_DIR (build-gpu) and runs the learner with --device cuda.
# Otherwise it uses the existing CPU build (BUILD_DIR, default build) and
# --device cpu.
#
# --quick: the CPU smoke run for CI (registered as a ctest, label
# bench_smoke): RUNS="1 2", a small budget and net; it checks that every
# run trained and that every number was printed, in well under 2 minutes.
#
# Usage: scripts/bench_gpu.sh [--quick]
#        RUNS="1 4 16" ACTORS=M BUDGET=N (env steps per run) ENVS=8
#        BUILD_DIR=build GPU_BUILD_DIR=build-gpu DEVICE=cpu|cuda (force)
#        KEEP=1 (keep the logs; the folder is printed)
#        STALL_S=120 (a learner fed nothing for that long stops the run)
# Exit status: 0 if every run finished with its budget trained, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = --quick ] && quick=1

cores=$(nproc)
B=${BUILD_DIR:-build}
device=${DEVICE:-}
if [ "$quick" = 1 ]; then
  RUNS=${RUNS:-"1 2"}
  BUDGET=${BUDGET:-4096}
  HIDDEN=${HIDDEN:-"64,64"}
else
  RUNS=${RUNS:-"1 4 16"}
  BUDGET=${BUDGET:-102400}
  HIDDEN=${HIDDEN:-"512,512"}
fi
ENVS=${ENVS:-8}

# A CUDA LibTorch from PyTorch, when there is one.
if [ "$quick" = 0 ] && [ -z "$device" ]; then
  if prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) &&
    [ "$(python3 -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null)" = 1 ]; then
    GB=${GPU_BUILD_DIR:-build-gpu}
    echo "== CUDA LibTorch at $prefix: building into $GB"
    cmake -S . -B "$GB" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" -DRISTRETTO_BUILD_TESTS=OFF \
      -DRISTRETTO_BUILD_BENCH=OFF >/dev/null
    cmake --build "$GB" --target ristretto-learner ristretto-actor
    B=$GB
    device=cuda
  fi
fi
device=${device:-cpu}
for bin in "$B/learner/ristretto-learner" "$B/actor/ristretto-actor"; do
  [ -x "$bin" ] || { echo "no $bin (build it first: scripts/build.sh)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/ristretto-bench-gpu.XXXXXX)
[ "${KEEP:-0}" = 1 ] && echo "logs in $work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

gpu=n/a
command -v nvidia-smi >/dev/null 2>&1 &&
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
echo "machine: $cores cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
  "GPU ${gpu:-n/a}, device $device, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs: 2 MLPs $HIDDEN, $ENVS envs x 128 steps per chunk and per update," \
  "budget $BUDGET env steps per run, synthetic 4,000 rows, lookback 1"

now() { date +%s.%N; }
# GET http://ADDR/metrics to stdout: curl when there is one, else bash's
# /dev/tcp (CUDA images often have no curl, and a curl that cannot load its
# libraries, say under the dependency bundle's LD_LIBRARY_PATH, is none).
# A sandbox's http_proxy must
# not catch a loopback address: curl is told to use none.
fetch_metrics() {
  if curl --version >/dev/null 2>&1; then
    curl -sSf --noproxy '*' --max-time 5 "http://$1/metrics"
    return
  fi
  local host=${1%:*} port=${1##*:}
  exec 3<>"/dev/tcp/$host/$port" || return 1
  printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3
  timeout 5 cat <&3 | tr -d '\r' | sed '1,/^$/d'
  local rc=${PIPESTATUS[0]}
  exec 3<&-
  return "$rc"
}
# Sum of a Prometheus series over its labels: metric NAME FILE.
metric() { awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2; f = 1 } END { if (f) print s; else print "" }' "$2"; }

status=0
printf '%-5s %-6s %10s %12s %9s %10s %14s\n' runs actors samples/s "env steps/s" dropped "update ms" "GPU busy"
for n in $RUNS; do
  m=${ACTORS:-$((cores - 2 > n ? cores - 2 : n))}
  dir=$work/runs-$n
  mkdir -p "$dir"
  t0=$(now)
  "$B/learner/ristretto-learner" --port 0 --runs "$n" --device "$device" \
    --synthetic-rows 4000 --lookback 1 --policy-hidden "$HIDDEN" \
    --envs "$ENVS" --rollout 128 --budget "$BUDGET" --validation-share 0.5 \
    --threads 1 --run-dir "$dir/runs" --metrics-port auto \
    --metrics-address 127.0.0.1 --exit-when-done >"$dir/learner.out" 2>"$dir/learner.err" &
  learner=$!
  pids+=("$learner")
  addr="" maddr=""
  for _ in $(seq 1200); do
    addr=$(sed -n 's/^listening on //p' "$dir/learner.out" 2>/dev/null || true)
    maddr=$(cat "$dir/learner.out" "$dir/learner.err" 2>/dev/null |
      sed -n 's/.*metrics on \([^ ]*\).*/\1/p' | head -1)
    [ -n "$addr" ] && [ -n "$maddr" ] && break
    kill -0 "$learner" 2>/dev/null || break
    sleep 0.05
  done
  if [ -z "$addr" ]; then
    echo "learner did not start" >&2
    cat "$dir/learner.err" >&2
    exit 1
  fi
  actors=()
  for k in $(seq "$m"); do
    "$B/actor/ristretto-actor" --learner "$addr" --envs "$ENVS" --actor-id "a$k" \
      --seed "$k" --cache-dir "$dir/cache-$k" --exit-when-idle \
      >"$dir/actor-$k.out" 2>"$dir/actor-$k.err" &
    actors+=("$!")
    pids+=("$!")
  done
  # While the learner runs: its metrics (the last scrape is kept) and NVML.
  smi=""
  if [ "$device" != cpu ] && command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits \
      -lms 500 >"$dir/smi.txt" 2>/dev/null &
    smi=$!
    pids+=("$smi")
  fi
  # A learner that has trained and dropped nothing after STALL_S seconds
  # (default 120) is not fed: the actors' last errors say why, and the
  # benchmark stops rather than wait for a budget that never comes.
  stall_s=${STALL_S:-120}
  while kill -0 "$learner" 2>/dev/null; do
    if [ -n "$maddr" ] && fetch_metrics "$maddr" >"$dir/scrape.tmp" 2>"$dir/scrape.err" &&
      [ -s "$dir/scrape.tmp" ]; then
      mv "$dir/scrape.tmp" "$dir/scrape.txt"
    fi
    if [ -s "$dir/scrape.txt" ] &&
      awk -v t0="$t0" -v now="$(now)" -v s="$stall_s" 'BEGIN { exit !(now - t0 > s) }'; then
      fed=$( { metric ristretto_learner_samples_trained_total "$dir/scrape.txt"
               metric ristretto_learner_samples_dropped_total "$dir/scrape.txt"; } 2>/dev/null |
             awk '{ s += $1 } END { print s + 0 }')
      if [ "$fed" = 0 ]; then
        echo "N=$n: no env step reached the learner in ${stall_s} s" >&2
        if [ -f "$dir/actor-1.err" ]; then
          echo "actor a1's last lines:" >&2
          tail -3 "$dir/actor-1.err" | cut -c1-400 >&2
        fi
        kill -TERM "$learner" 2>/dev/null || true
        status=1
        break
      fi
    fi
    sleep 0.5
  done
  rc=0
  wait "$learner" || rc=$?
  t1=$(now)
  [ -n "$smi" ] && { kill "$smi" 2>/dev/null || true; wait "$smi" 2>/dev/null || true; }
  for a in "${actors[@]}"; do kill -TERM "$a" 2>/dev/null || true; done
  for a in "${actors[@]}"; do wait "$a" 2>/dev/null || true; done
  [ -f "$dir/scrape.txt" ] || : >"$dir/scrape.txt"
  trained=$(grep '^learner: run ' "$dir/learner.out" | sed -n 's/.* trained=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  received=$(grep '^learner: run ' "$dir/learner.out" | sed -n 's/.* received=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  dropped=$(grep '^learner: run ' "$dir/learner.out" | sed -n 's/.* dropped=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  finished=$(grep -c '^learner: run .* finished=1' "$dir/learner.out" || true)
  sent=$(cat "$dir"/actor-*.out | sed -n 's/.*env_steps_sent=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  usum=$(metric ristretto_learner_update_seconds_sum "$dir/scrape.txt")
  ucount=$(metric ristretto_learner_update_seconds_count "$dir/scrape.txt")
  busy=$(metric ristretto_learner_gpu_busy_ratio "$dir/scrape.txt")
  smi_mean=""
  [ -s "$dir/smi.txt" ] && smi_mean=$(awk '{ s += $1; n++ } END { if (n) printf "%.0f%%", s / n }' "$dir/smi.txt")
  awk -v n="$n" -v m="$m" -v t0="$t0" -v t1="$t1" -v tr="$trained" -v se="$sent" \
    -v rc_="$received" -v dr="$dropped" -v us="$usum" -v uc="$ucount" -v busy="$busy" \
    -v dev="$device" -v smi="$smi_mean" 'BEGIN {
      w = t1 - t0
      upd = (uc != "" && uc > 0) ? sprintf("%.1f", 1000 * us / uc) : "n/a"
      g = "n/a"
      if (dev != "cpu") g = sprintf("%s/%s", (busy == "" ? "n/a" : sprintf("%.0f%%", 100 * busy)), (smi == "" ? "n/a" : smi))
      printf "%-5d %-6d %10.0f %12.0f %8.1f%% %10s %14s\n", n, m, tr / w, se / w,
        (rc_ > 0 ? 100 * dr / rc_ : 0), upd, g
    }'
  if [ ! -s "$dir/scrape.txt" ]; then
    echo "N=$n: the learner's metrics at ${maddr:-(no address)} were never read:" \
      "$(tail -1 "$dir/scrape.err" 2>/dev/null | cut -c1-300)" >&2
  fi
  if [ "$rc" != 0 ] || [ "$finished" != "$n" ] || [ "$trained" -lt $((n * BUDGET)) ]; then
    echo "N=$n: learner exit $rc, $finished of $n runs finished, $trained env steps trained" >&2
    tail -5 "$dir/learner.err" >&2
    status=1
  fi
done
echo "(GPU busy: learner's own ratio / NVML mean; wall time includes start-up," \
  "the final evaluation and checkpoints; load average at the end" \
  "$(cut -d' ' -f1-3 /proc/loadavg))"
exit "$status"
