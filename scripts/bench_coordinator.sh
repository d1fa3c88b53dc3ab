#!/usr/bin/env bash
# Coordinator scheduling speed, in one script run:
#  1. operations per second: build/bench/coordinator_bench (Store and
#     Scheduler ask/report/complete paths against private PostgreSQL
#     servers, durable and unsafe_fast, with SELECT 1 as the same-run
#     baseline; BENCH_REPS interleaved repetitions of BENCH_TRIALS trials,
#     medians). Skip with OPS=0.
#  2. the default small study end to end, REPS (3) times:
#       ristretto up --study deploy/studies/small.yaml --data-dir <tmp>
#                    --actors 2 --envs 16
#     and from each run:
#     (a) slot handover: the time from a run's end to the next run's first
#         env step on the learner slot it freed. The logs carry no
#         timestamps, so the script timestamps their lines as they are
#         written (tail -F polling every 10 ms; accuracy checked against
#         the database: the coordinator's "leased" line vs leases.granted_at)
#         and reads the rest from PostgreSQL afterwards (the cluster in
#         <data-dir>/pg is started again on its Unix socket for psql):
#           end    leases.released_at of a run's first lease: the
#                  CompleteRun transaction (outcome done) or the
#                  PruneTrial transaction that cancelled it (the trial's
#                  finished_at, to the microsecond);
#           freed  the learner's "run <run> completed|pruned|stopped by the
#                  coordinator" line for the ended run (it has left
#                  RunHost::Stop / the CompleteRun RPC; the slot is free);
#           lease  leases.granted_at of the next run (LeaseRun);
#           host   the learner's "hosting <run>" line (RunHost built);
#           step   the first actor's "assigned run <run>" line; the actor
#                  steps its envs as soon as the run's version-0 weights
#                  arrive on the same stream, so this is the first env
#                  step less a few ms (a lower bound).
#         Slots are matched first in, first out: the k-th run end frees the
#         slot of the (k + S)-th lease, S = runs leased before any run ended
#         (the learner's slots, 2). Ends are classed by what they
#         ended: "trial complete" (the trial's last fold: its completion is
#         the same CompleteRun RPC, so this is "a trial's completion to the
#         next trial's first env step"), "fold done" (a trial's earlier
#         fold; the trial still runs) and "pruned" (the trial was pruned and
#         its leased runs cancelled). The last S ends of a study have no
#         successor. Also: the share of the slots' time (S x first lease to
#         last run end) spent in handovers (end to next first step).
#     (b) trials per hour, three ways: the final progress line of `up`
#         (finished trials / time since the first trial was created), the
#         database (trials / (last finished_at - first created_at)), and
#         the wall time of the whole `up` command (PostgreSQL initdb and
#         start, process start-up, leaderboard, export and shutdown
#         included).
#     Per run, then medians over the REPS runs.
#
# Usage: scripts/bench_coordinator.sh   (after scripts/build.sh and
#        ninja coordinator_bench)
#        REPS=3 BENCH_REPS=5 BENCH_TRIALS=100 OPS=1 BUILD_DIR=build
#        STUDY=deploy/studies/small.yaml KEEP=0 (1: keep the data dirs, the
#        timestamped logs *.stamped and analysis.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
REPS=${REPS:-3}
BENCH_REPS=${BENCH_REPS:-5}
BENCH_TRIALS=${BENCH_TRIALS:-100}
STUDY=${STUDY:-deploy/studies/small.yaml}
ACTORS=2
ENVS=16

for bin in "$B/cli/ristretto" "$B/coordinator/service/ristretto-coordinator" \
  "$B/learner/ristretto-learner" "$B/actor/ristretto-actor"; do
  [ -x "$bin" ] || { echo "missing $bin: run scripts/build.sh" >&2; exit 1; }
done
PG_BIN=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -1)
if [ "$(id -u)" = 0 ]; then AS_PG=(runuser -u postgres --); else AS_PG=(); fi

work=$(mktemp -d /tmp/ristretto-bench-coordinator.XXXXXX)
chmod 755 "$work"  # the server runs as "postgres" when we are root
pids=()
pg_dirs=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for d in "${pg_dirs[@]}"; do
    if [ -f "$d/postmaster.pid" ]; then
      "${AS_PG[@]}" "$PG_BIN/pg_ctl" stop -D "$d" -m fast >/dev/null 2>&1 || true
    fi
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); $("$PG_BIN/postgres" --version)"

if [ "${OPS:-1}" != 0 ]; then
  [ -x "$B/bench/coordinator_bench" ] ||
    { echo "missing $B/bench/coordinator_bench: ninja -C $B coordinator_bench" >&2; exit 1; }
  echo "== 1. operations: $B/bench/coordinator_bench --reps $BENCH_REPS" \
    "--trials $BENCH_TRIALS --study $STUDY"
  "$B/bench/coordinator_bench" --reps "$BENCH_REPS" --trials "$BENCH_TRIALS" \
    --study "$STUDY"
fi

# stamp OUT: prefixes every stdin line with the epoch time it was read.
stamp() {
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$1"
}

# median: of the numbers on stdin ("-" if none).
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "-"; exit }
    if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2];
    else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo
echo "== 2. end to end: $B/cli/ristretto up --study $STUDY --actors $ACTORS" \
  "--envs $ENVS, $REPS runs"
for class in trial_complete fold_done pruned; do
  for col in 7 8 9 10 11; do : >"$work/$class.$col"; done
done
for rep in $(seq "$REPS"); do
  dir=$work/up-$rep
  mkdir -p "$dir/logs"
  chmod 755 "$dir"
  logs=(coordinator learner)
  for i in $(seq 0 $((ACTORS - 1))); do logs+=("actor-$i"); done
  tails=()
  for name in "${logs[@]}"; do
    tail -n +1 -F -s 0.01 "$dir/logs/$name.log" 2>/dev/null \
      > >(stamp "$dir/$name.stamped") &
    tails+=($!)
    pids+=($!)
  done
  echo "-- run $rep: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  t0=$EPOCHREALTIME
  "$B/cli/ristretto" up --study "$STUDY" --data-dir "$dir" --actors "$ACTORS" \
    --envs "$ENVS" >"$dir/up.out" 2>&1 || { cat "$dir/up.out"; exit 1; }
  t1=$EPOCHREALTIME
  sleep 0.1  # let tail read the last lines
  for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
  progress=$(grep 'trials/h' "$dir/up.out" | tail -1)
  echo "   $progress"
  up_rate=$(sed -n 's/.*| \([0-9.]*\) trials\/h.*/\1/p' <<<"$progress")

  # Events from the stamped logs: TSV "epoch kind trial fold".
  awk '
    {
      kind = ""
      if (match($0, /assigned run [^ ]*\/trial-[0-9]+\/fold-[0-9]+/)) kind = "step"
      else if (match($0, /\] hosting [^ ]*\/trial-[0-9]+\/fold-[0-9]+/)) kind = "host"
      else if (match($0, /\] leased [^ ]*\/trial-[0-9]+\/fold-[0-9]+/)) kind = "leased"
      else if (match($0, /\] run [^ ]*\/trial-[0-9]+\/fold-[0-9]+ (completed|pruned|stopped|released|dropped|failed)/)) kind = "freed"
      if (kind == "") next
      s = substr($0, RSTART, RLENGTH)
      match(s, /trial-[0-9]+\/fold-[0-9]+/)
      split(substr(s, RSTART + 6, RLENGTH - 6), tf, "/fold-")
      printf "%s\t%s\t%s\t%s\n", $1, kind, tf[1], tf[2]
    }' "$dir"/*.stamped >"$dir/events.tsv"

  # Start the study's PostgreSQL again (Unix socket only) and ask it.
  pg=$dir/pg
  pg_dirs+=("$pg")
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" start -w -D "$pg" -l "$pg/bench-analysis.log" \
    -o "-k '$pg' -p 5432 -c listen_addresses=''" >/dev/null
  psql -X -q -h "$pg" -p 5432 -U postgres -d ristretto -v ON_ERROR_STOP=1 \
    -At -F $'\t' >"$dir/analysis.txt" <<SQL
CREATE TEMP TABLE ev (ts float8, kind text, trial int, fold int);
\copy ev FROM '$dir/events.tsv'
CREATE TEMP TABLE r AS
SELECT t.number AS trial, ru.fold, ru.id, t.state AS trial_state,
       extract(epoch FROM l.granted_at)::float8 AS granted,
       extract(epoch FROM l.released_at)::float8 AS released, l.outcome,
       (SELECT min(ts) FROM ev WHERE kind = 'freed' AND ev.trial = t.number
          AND ev.fold = ru.fold) AS freed,
       (SELECT min(ts) FROM ev WHERE kind = 'host' AND ev.trial = t.number
          AND ev.fold = ru.fold) AS host,
       (SELECT min(ts) FROM ev WHERE kind = 'step' AND ev.trial = t.number
          AND ev.fold = ru.fold) AS step,
       (SELECT min(ts) FROM ev WHERE kind = 'leased' AND ev.trial = t.number
          AND ev.fold = ru.fold) AS leased_line
FROM runs ru JOIN trials t ON t.id = ru.trial_id
JOIN leases l ON l.run_id = ru.id AND l.attempt = 1;
-- S: runs leased before the first run ended (a slot is taken at lease).
CREATE TEMP TABLE s AS
SELECT count(*) AS slots FROM r WHERE granted < (SELECT min(released) FROM r);
CREATE TEMP TABLE ends AS
SELECT r.*, row_number() OVER (ORDER BY released, id) AS k,
       CASE WHEN outcome = 'cancelled' THEN 'pruned'
            WHEN trial_state = 'complete' AND released = (SELECT max(released)
                   FROM r r2 WHERE r2.trial = r.trial) THEN 'trial_complete'
            ELSE 'fold_done' END AS class
FROM r;
CREATE TEMP TABLE starts AS
SELECT r.*, row_number() OVER (ORDER BY granted, id) AS k FROM r;
-- handover: class, ended trial/fold, next trial/fold, then ms after the end:
-- learner freed the slot, lease granted, hosted, first step; lease - freed.
SELECT 'handover', e.class, e.trial, e.fold, st.trial, st.fold,
       round((e.freed - e.released) * 1000)::int,
       round((st.granted - e.released) * 1000)::int,
       round((st.host - e.released) * 1000)::int,
       round((st.step - e.released) * 1000)::int,
       round((st.granted - e.freed) * 1000)::int
FROM ends e JOIN starts st ON st.k = e.k + (SELECT slots FROM s)
ORDER BY e.k;
-- Share of the slots' time spent between a run's end and the next run's
-- first env step, from the first lease to the last run end.
SELECT 'idle', round(sum(st.step - e.released)::numeric, 2),
       round((max(e.released) - (SELECT min(granted) FROM r))::numeric, 2),
       round((100 * sum(st.step - e.released) / ((SELECT slots FROM s) *
         (max(e.released) - (SELECT min(granted) FROM r))))::numeric, 1)
FROM ends e JOIN starts st ON st.k = e.k + (SELECT slots FROM s);
SELECT 'stampcheck', round(((leased_line - granted) * 1000)::numeric, 1)
FROM r WHERE leased_line IS NOT NULL;
SELECT 'slots', slots FROM s;
SELECT 'db_rate', count(*),
       count(*) * 3600.0 / extract(epoch FROM max(finished_at) - min(created_at))
FROM trials;
SELECT 'states', string_agg(state || '=' || c, ' ') FROM
  (SELECT state, count(*) AS c FROM trials GROUP BY state ORDER BY state) x;
SQL
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" stop -D "$pg" -m fast >/dev/null

  a=$dir/analysis.txt
  field() { awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $c != "" { print $c }' "$a"; }
  ntrials=$(field db_rate 2)
  db_rate=$(field db_rate 3 | awk '{ printf "%.1f", $1 }')
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  wall_rate=$(awk -v n="$ntrials" -v w="$wall" 'BEGIN { printf "%.1f", n * 3600 / w }')
  echo "   trials: $(field states 2) ($ntrials); learner slots S = $(field slots 2)"
  echo "   trials/h: up's progress line $up_rate, database $db_rate," \
    "wall of the whole up command $wall_rate ($wall s)"
  echo "   stamp accuracy: coordinator 'leased' line - leases.granted_at:" \
    "median $(field stampcheck 2 | median) ms, max $(field stampcheck 2 | sort -g | tail -1) ms"
  echo "   slot idle in handovers: $(field idle 2) s of $(field slots 2) slots x" \
    "$(field idle 3) s = $(field idle 4) %"
  field idle 4 >>"$work/idle"
  echo "   slot handovers, ms after the run's end: freed (learner), lease, host," \
    "first env step; lease - freed"
  awk -F'\t' '$1 == "handover" {
    printf "     %-14s trial %s fold %s -> trial %s fold %s: %6s %6s %6s %6s; %6s\n",
      $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$a"
  for class in trial_complete fold_done pruned; do
    for col in 7 8 9 10 11; do
      awk -F'\t' -v c="$class" -v col="$col" \
        '$1 == "handover" && $2 == c && $col != "" { print $col }' "$a" \
        >>"$work/$class.$col"
    done
  done
  echo "$up_rate" >>"$work/up_rate"
  echo "$db_rate" >>"$work/db_rate"
  echo "$wall_rate" >>"$work/wall_rate"
  echo "$wall" >>"$work/wall"
done

echo
echo "== medians over $REPS runs"
echo "trials/h: up's progress line $(median <"$work/up_rate")," \
  "database $(median <"$work/db_rate"), whole up command $(median <"$work/wall_rate")" \
  "(wall $(median <"$work/wall") s)"
echo "slot time idle in handovers (first lease to last run end): $(median <"$work/idle") %"
echo "slot handover, ms after the run's end (medians over every handover of every"
echo "run; n = handovers): learner freed the slot / lease granted / run hosted /"
echo "first env step; lease - freed"
for class in trial_complete fold_done pruned; do
  echo "  $class (n=$(wc -l <"$work/$class.10")):" \
    "$(median <"$work/$class.7") / $(median <"$work/$class.8") /" \
    "$(median <"$work/$class.9") / $(median <"$work/$class.10");" \
    "$(median <"$work/$class.11")"
done
