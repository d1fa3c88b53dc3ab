#!/usr/bin/env bash
# Distributed speed (transport, then end to end), in one script run:
#  1. transport: bench/transport_bench (chunk ingestion over loopback gRPC
#     vs a raw TCP socket moving the same bytes, interleaved in each
#     process). glibc's allocator settings are per process, so the bench
#     runs ROUNDS (4) times with `--malloc default` (what the binaries do
#     without wire/grpc_options.h) and `--malloc chunks`
#     (TuneAllocatorForChunkTraffic()), alternating, each with --reps 3;
#     the summary gives medians over all repetitions per mode and variant
#     (ratio: median of the per-repetition ratios to raw_tcp in the same
#     repetition). Skip with TRANSPORT=0.
#  2. end to end: env steps/s consumed (trained) by ristretto-learner with
#     1 and 2 ristretto-actors against the single-process trainer
#     (`ristretto train`) on the same run settings, REPS (3) repetitions,
#     the three modes in rotated order in every repetition; medians. Skip
#     with E2E=0.
#
# Steps/s = env steps trained / wall seconds of the whole run: the trainer
# process from start to exit; the learner process from start to exit
# (actors start with it, as `ristretto up`, compose and Kubernetes start
# them, and connect once it listens; ACTOR_START=after starts them only
# once it listens, the protocol before 2026-11-28, which adds the actor's
# start-up to the learner's; they exit when it stops).
# Both include LibTorch start-up, the synthetic dataset and the final
# evaluation (+ the learner's checkpoint). Policy lag: the learner drops
# chunks older than max_policy_lag (4) versions, so every trained step had
# lag <= 4; the script reports the dropped steps, the chunks rejected as
# stale on arrival with their lag (from the actors' logs) and the versions.
#
# Run settings (both sides): synthetic market 4,000 rows × 7 assets × 98
# features, lookback 1 (obs 106), policy and value MLPs 2×512, 4 epochs,
# minibatch 1024, 1,024 env steps per update (trainer: 8 envs × 128 steps;
# learner: --samples-per-update 1024, each actor 8 envs × 128 steps per
# chunk), episodes of 1,024 steps, BUDGET (20,480) env steps, seed = rep.
# OpenBLAS keeps its default threads; LibTorch's pool is 1 (--threads 1).
#
# Usage: scripts/bench_distributed.sh   (after scripts/build.sh)
#        REPS=3 BUDGET=20480 ROUNDS=4 TRANSPORT=1 E2E=1 BUILD_DIR=build
#        ACTOR_START=with|after (see above)
#        LEARNER_FLAGS="--queue 1" ACTOR_FLAGS="--max-inflight 1" (extra
#        flags for every learner / actor, e.g. to compare settings); KEEP=1
#        keeps the logs of every run (the folder is printed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
ACTOR_START=${ACTOR_START:-with}
case "$ACTOR_START" in
  with|after) ;;
  *) echo "bench_distributed.sh: ACTOR_START is 'with' or 'after'" >&2; exit 2 ;;
esac
REPS=${REPS:-3}
BUDGET=${BUDGET:-20480}
work=$(mktemp -d /tmp/ristretto-bench-distributed.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${TRANSPORT:-1}" != 0 ]; then
  ROUNDS=${ROUNDS:-4}
  echo "== transport: $B/bench/transport_bench --reps 3 --chunks 150" \
    "--malloc default|chunks, alternated, $ROUNDS rounds"
  for round in $(seq "$ROUNDS"); do
    modes="default chunks"
    [ $((round % 2)) = 0 ] && modes="chunks default"
    for mode in $modes; do
      echo "-- round $round, malloc $mode, load average $(cut -d' ' -f1-3 /proc/loadavg)"
      "$B/bench/transport_bench" --reps 3 --chunks 150 --malloc "$mode" |
        tee "$work/transport-$round-$mode.txt"
    done
  done
  # "KEY VALUE" lines -> median per KEY (KEY has no spaces).
  medians() { sort -k1,1 -k2,2g | awk '
    function flush() { if (n) printf "%s %s\n", key, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    $1 != key { flush(); key = $1; n = 0 }
    { v[++n] = $2 }
    END { flush() }'; }
  echo "== transport summary (medians over $ROUNDS processes x 3 repetitions per malloc mode)"
  for mode in default chunks; do
    cat "$work"/transport-*-"$mode".txt | awk -v m="$mode" '
      $1 == "rep" { print m "/" $3 "/MBps", $6; print m "/" $3 "/CPUms", $12;
                    print m "/" $3 "/ratio", $16 }
      $1 == "codec" { name = $0; sub(/^codec +/, "", name); sub(/ +[0-9.]+ ms\/chunk.*/, "", name);
                      gsub(/ /, "_", name); for (i = 1; i <= NF; ++i) if ($(i + 1) == "ms/chunk") print m "/codec/" name, $i }'
  done | medians | awk -F'[/ ]' '
    $2 == "codec" { printf "malloc %-8s codec %-22s %6.3f ms/chunk\n", $1, $3, $4; next }
    { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }; val[k, $3] = $4 }
    END { for (i = 1; i <= n; ++i) { split(order[i], a, " ");
            printf "malloc %-8s %-15s %8.1f MB/s %6.2f CPU ms/chunk  vs raw_tcp %.2f\n",
              a[1], a[2], val[order[i], "MBps"], val[order[i], "CPUms"], val[order[i], "ratio"] } }'
fi

[ "${E2E:-1}" = 0 ] && exit 0

COMMON=(--synthetic-rows 4000 --lookback 1 --policy-hidden "512,512" --epochs 4
  --minibatch 1024 --rollout 128 --episode 1024 --budget "$BUDGET"
  --validation-share 0.5 --threads 1)
now() { date +%s.%N; }

# run_trainer REP: appends steps/s to $work/trainer.txt; details on stdout.
run_trainer() {
  local rep=$1 t0 t1 out=$work/trainer-$1.out
  t0=$(now)
  # --reproducible=false: OpenBLAS's count chosen per step, as the learner
  # does (a fixed count would compare unlike with unlike under load).
  "$B/cli/ristretto" train "${COMMON[@]}" --envs 8 --seed "$rep" --quiet \
    --reproducible=false >"$out"
  t1=$(now)
  local internal
  internal=$(sed -n 's/^time: total \([0-9.]*\) s.*/\1/p' "$out")
  awk -v t0="$t0" -v t1="$t1" -v n="$BUDGET" -v rep="$rep" -v in_s="$internal" \
    'BEGIN { w = t1 - t0; printf "rep %d trainer   wall %6.2f s trained %d -> %6.0f steps/s (trainer'"'"'s own total %s s)\n", rep, w, n, n / w, in_s; printf "%.1f\n", n / w >> (ENVIRON["work"] "/trainer.txt") }'
}

# A TCP port on 127.0.0.1 nothing listens on (random in 20000-60999; the
# learner exits with an error if another process takes it first).
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 41000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

# run_distributed REP ACTORS: appends steps/s to $work/actors-ACTORS.txt;
# details on stdout.
run_distributed() {
  local rep=$1 n=$2 dir=$work/dist-$1-$2 t0 t1 addr=""
  mkdir -p "$dir"
  local port=0
  [ "$ACTOR_START" = with ] && port=$(free_port)
  t0=$(now)
  "$B/learner/ristretto-learner" --port "$port" --runs 1 "${COMMON[@]}" \
    --samples-per-update 1024 --seed "$rep" --run-dir "$dir/runs" \
    --exit-when-done ${LEARNER_FLAGS:-} >"$dir/learner.out" 2>"$dir/learner.err" &
  local learner=$!
  pids+=("$learner")
  if [ "$ACTOR_START" = with ]; then
    addr=127.0.0.1:$port
  else
    for _ in $(seq 600); do
      addr=$(sed -n 's/^listening on //p' "$dir/learner.out" 2>/dev/null || true)
      [ -n "$addr" ] && break
      sleep 0.05
    done
    [ -n "$addr" ] || { echo "learner did not start" >&2; cat "$dir/learner.err" >&2; exit 1; }
  fi
  local actors=()
  for k in $(seq "$n"); do
    "$B/actor/ristretto-actor" --learner "$addr" --envs 8 --actor-id "a$k" \
      --seed "$k" --cache-dir "$dir/cache-$k" --exit-when-idle ${ACTOR_FLAGS:-} \
      >"$dir/actor-$k.out" 2>"$dir/actor-$k.err" &
    actors+=("$!")
    pids+=("$!")
  done
  wait "$learner"
  t1=$(now)
  for a in "${actors[@]}"; do kill -TERM "$a" 2>/dev/null || true; done
  for a in "${actors[@]}"; do wait "$a" || true; done
  local summary sent lags
  summary=$(grep '^learner: run ' "$dir/learner.out")
  sent=$(cat "$dir"/actor-*.out | sed -n 's/.*env_steps_sent=\([0-9]*\).*/\1/p' |
    awk '{ s += $1 } END { print s + 0 }')
  # "chunk policy version V is stale: the run is at U" -> lag U - V.
  lags=$(cat "$dir"/actor-*.err |
    sed -n 's/.*policy version \([0-9]*\) is stale: the run is at \([0-9]*\).*/\1 \2/p' |
    awk '{ printf "%s%d", (NR > 1 ? "," : ""), $2 - $1 } END { if (NR == 0) printf "none" }')
  echo "$summary" | awk -v t0="$t0" -v t1="$t1" -v rep="$rep" -v n="$n" \
    -v sent="$sent" -v lags="$lags" '{
      for (i = 1; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
      w = t1 - t0
      printf "rep %d actors=%d wall %6.2f s trained %d -> %6.0f steps/s | versions %d, actors sent %d, learner received %d, dropped %d (%.0f%% of received), stale on arrival (lag): %s | learner waiting %s s, updating %s s, publishing %s s\n",
        rep, n, w, f["trained"], f["trained"] / w, f["version"], sent,
        f["received"], f["dropped"], 100 * f["dropped"] / f["received"], lags,
        f["waiting_s"], f["updating_s"], f["publishing_s"]
      printf "%.1f\n", f["trained"] / w >> (ENVIRON["work"] "/actors-" n ".txt")
    }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== end to end: budget $BUDGET env steps, 2x512, $REPS repetitions (rotated order)"
export work
for rep in $(seq "$REPS"); do
  for k in 0 1 2; do
    case $(((rep + k) % 3)) in
      0) run_trainer "$rep" ;;
      1) run_distributed "$rep" 1 ;;
      2) run_distributed "$rep" 2 ;;
    esac
  done
done
m_tr=$(median <"$work/trainer.txt")
m_d1=$(median <"$work/actors-1.txt")
m_d2=$(median <"$work/actors-2.txt")
ratio() { paste "$1" "$work/trainer.txt" | awk '{ print $1 / $2 }' | median | xargs printf "%.2f"; }
echo "median env steps/s consumed: trainer $m_tr; learner + 1 actor $m_d1" \
  "(x$(ratio "$work/actors-1.txt") of the trainer, median of per-rep ratios);" \
  "learner + 2 actors $m_d2 (x$(ratio "$work/actors-2.txt"))"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
