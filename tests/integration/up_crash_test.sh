#!/usr/bin/env bash
# `ristretto up` notices when a process it started dies.
# Mode "learner" (default): the learner is killed (-9) once an actor trains
# a run; up must then stop everything else it started (actors, coordinator,
# its PostgreSQL), exit non-zero and name the learner and its exit status,
# with the end of its log, rather than wait for a study that can no longer
# finish (it used to wait forever: it looked only at processes it had
# already reaped).
# Mode "actors": up runs two actors; the first killed is reported on
# up's stderr while the study goes on, the second ends up the same way as
# a dead learner ("every actor exited early").
# Mode "up": up itself is killed (-9). What it started stops with it (their
# parent-death signal), but its PostgreSQL, a daemon of pg_ctl, is left
# running on the data directory; the same command again must stop that
# orphan, resume the study and train, while a concurrent `up` on the same
# data directory is refused at once, naming the running one.
# Mode "pg": up's PostgreSQL is restarted (pg_ctl restart -m fast: every
# connection is cut) while the study trains. A lost connection is a
# transient error: up, the coordinator and the learner reconnect, and the
# study (the shipped small one, its own budget) ends with its verdict and
# up exits 0 (issue 35, item 2).
# Usage: up_crash_test.sh RISTRETTO_BINARY SMALL_STUDY_YAML [learner|actors|up|pg]
set -euo pipefail
ristretto=$1
small=$2
mode=${3:-learner}
case "$mode" in learner | up | pg) actors=1 ;; actors) actors=2 ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/ristretto-up-crash.XXXXXX)
chmod 755 "$work"
up_pid=

fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/up.log" ] && tail -n 30 "$work/up.log" >&2
  exit 1
}

# children_of PID: the direct children of PID (parent pid from /proc/*/stat;
# the first field after the parenthesised command name is the state, the
# next the parent).
children_of() {
  cat /proc/[0-9]*/stat 2>/dev/null |
    awk -v p="$1" '{ pid = $1; sub(/.*\) /, ""); if ($2 == p) print pid }'
}

# argv0 PID: the program a process runs (its first argument), "" if gone.
argv0() { tr '\0' '\n' 2>/dev/null < "/proc/$1/cmdline" | head -n 1 || true; }

cleanup() {
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    # up's own shutdown stops what it started.
    kill -TERM "$up_pid" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$up_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$up_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The shipped small study with a budget no trial reaches while the test
# watches: only the crash can end it. (Mode pg: its own budget; it ends.)
if [ "$mode" = pg ]; then
  # Two short trials and one refit are enough to finish a study; the test
  # is about the restart, not the edge (the shipped budget made it 264 s of
  # CI's time; this one takes about 35 s).
  sed -e 's/^name: .*/name: up-crash/' -e 's/^max_trials: .*/max_trials: 2/' \
      -e 's/^budget_env_steps: .*/budget_env_steps: 24576/' \
      -e 's/^eval_every_env_steps: .*/eval_every_env_steps: 8192/' \
      -e 's/warmup_steps: [0-9]*,/warmup_steps: 8192,/' \
      -e 's/^lockbox: {share: \([0-9.]*\), refits: [0-9]*}/lockbox: {share: \1, refits: 1}/' \
    "$small" > "$work/study.yaml"
  grep -q '^max_trials: 2$' "$work/study.yaml" &&
    grep -q '^budget_env_steps: 24576$' "$work/study.yaml" &&
    grep -q '^lockbox: {share: [0-9.]*, refits: 1}$' "$work/study.yaml" ||
    fail "could not reduce $small"
else
  sed -e 's/^name: .*/name: up-crash/' \
      -e 's/^budget_env_steps: .*/budget_env_steps: 100000000/' \
      "$small" > "$work/study.yaml"
  grep -q '^budget_env_steps: 100000000$' "$work/study.yaml" ||
    fail "could not raise the budget in $small"
fi

"$ristretto" up --study "$work/study.yaml" --data-dir "$work/data" \
  --actors "$actors" > "$work/up.log" 2>&1 &
up_pid=$!

# Every wait below shares one deadline, a guard against a hang only, well
# inside ctest's TIMEOUT (900 s) so that the EXIT trap still stops up.
deadline=$((SECONDS + 780))

# wait_for WHAT COMMAND...: polls COMMAND while up runs; fails naming WHAT
# if it never holds.
wait_for() {
  local what=$1
  shift
  while [ "$SECONDS" -lt "$deadline" ]; do
    "$@" && return 0
    kill -0 "$up_pid" 2>/dev/null || { "$@" && return 0; fail "ristretto up exited before $what"; }
    sleep 0.1
  done
  fail "no $what within the test's deadline"
}
up_said() { grep -Eq "$1" "$work/up.log"; }

# Wait (for events) until every actor trains a run, then find the learner
# and the actors among up's children.
logs=$work/data/logs
for ((i = 0; i < actors; ++i)); do
  wait_for "actor-$i assigned a run" grep -qs 'assigned run' "$logs/actor-$i.log"
done
learner=
actor_pids=()
started=()
for c in $(children_of "$up_pid"); do
  started+=("$c")
  case "$(argv0 "$c")" in */ristretto-learner | ristretto-learner) learner=$c ;; esac
  for ((i = 0; i < actors; ++i)); do
    case " $(tr '\0' ' ' 2>/dev/null < "/proc/$c/cmdline") " in
      *" --actor-id actor-$i "*) actor_pids[i]=$c ;;
    esac
  done
done

# wait_up_exit: up must end by itself (10 minutes is only a hang guard);
# sets status to its exit status.
wait_up_exit() {
  while [ "$SECONDS" -lt "$deadline" ]; do kill -0 "$up_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$up_pid" 2>/dev/null; then
    fail "ristretto up still runs at the test's deadline after $1 was killed"
  fi
  status=0
  wait "$up_pid" || status=$?
  up_pid=
  [ "$status" -ne 0 ] || fail "ristretto up exited 0 after $1 was killed"
}

if [ "$mode" = pg ]; then
  pg_pid=$(head -n 1 "$work/data/pg/postmaster.pid")
  pg_ctl=$(ls /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)
  [ -x "$pg_ctl" ] || fail "no pg_ctl under /usr/lib/postgresql"
  as_owner=()
  # The server runs as the data directory's owner (postgres when up runs
  # as root).
  if [ "$(id -u)" = 0 ]; then as_owner=(runuser -u "$(stat -c %U "$work/data/pg")" --); fi
  # The restart must come mid-study, or the test proves nothing.
  up_said 'study up-crash is done' &&
    fail "the study ended before PostgreSQL could be restarted: raise its budget"
  echo "up ($up_pid) trains; restarting its PostgreSQL ($pg_pid)"
  "${as_owner[@]}" "$pg_ctl" restart -w -t 60 -m fast -D "$work/data/pg" \
    -l "$work/data/pg/postgresql.log" > "$work/pg_ctl.log" 2>&1 ||
    { cat "$work/pg_ctl.log" >&2; fail "pg_ctl restart failed"; }
  new_pg=$(head -n 1 "$work/data/pg/postmaster.pid")
  [ "$new_pg" != "$pg_pid" ] || fail "PostgreSQL was not restarted (pid $pg_pid)"
  # up must end by itself, with its verdict, exit status 0.
  while [ "$SECONDS" -lt "$deadline" ]; do kill -0 "$up_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$up_pid" 2>/dev/null && fail "ristretto up still runs at the test's deadline after PostgreSQL restarted"
  status=0
  wait "$up_pid" || status=$?
  up_pid=
  [ "$status" -eq 0 ] || fail "ristretto up exited $status after PostgreSQL restarted"
  up_said '^verdict: ' || fail "up did not end with its verdict"
  up_said 'study up-crash is done' || fail "the study did not finish"
elif [ "$mode" = up ]; then
  pg_pid=$(head -n 1 "$work/data/pg/postmaster.pid")
  echo "up ($up_pid) started ${#started[@]} processes and PostgreSQL ($pg_pid); killing up itself"
  kill -KILL "$up_pid"
  wait "$up_pid" 2>/dev/null || true
  up_pid=
  # alive PID: runs and is not a zombie (a stopped orphan may linger as one
  # until init reaps it).
  alive() {
    local state
    state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null || true)
    [ -n "$state" ] && [ "$state" != Z ]
  }
  # Its PostgreSQL, a daemon of pg_ctl, is left running (its processes get
  # SIGTERM from their parent-death signal and are stopping).
  alive "$pg_pid" || fail "expected the PostgreSQL of the killed up ($pg_pid) to be left running"
  # The same command again, at once (its processes may still be stopping:
  # up waits for them, as they hold its lock on the data directory), stops
  # the orphaned PostgreSQL, resumes, trains. (The first run's actor log is
  # moved aside, so that only the second run's can say the actor trained.)
  mv "$logs/actor-0.log" "$work/actor-0.first-run.log"
  "$ristretto" up --study "$work/study.yaml" --data-dir "$work/data" \
    --actors "$actors" > "$work/up.log" 2>&1 &
  up_pid=$!
  wait_for "the orphaned PostgreSQL stopped" up_said 'was left running by an earlier process; stopping it'
  wait_for "the study resumed" up_said 'resuming study up-crash'
  wait_for "actor-0 trained again" grep -qs 'assigned run' "$logs/actor-0.log"
  alive "$pg_pid" && fail "the orphaned PostgreSQL ($pg_pid) still runs"
  for p in "${started[@]}"; do
    alive "$p" && fail "process $p that the killed up started still runs"
  done
  # A second `up` on the same data directory is refused before it touches
  # anything, naming the one running.
  second=0
  second_out=$("$ristretto" up --study "$work/study.yaml" --data-dir "$work/data" \
    --actors "$actors" 2>&1) || second=$?
  [ "$second" -ne 0 ] || fail "a second up on the same data directory exited 0"
  grep -qF "another \`ristretto up\` (pid $up_pid) is running on $work/data" <<<"$second_out" ||
    fail "a second up was not refused naming the first: $second_out"
  kill -0 "$up_pid" 2>/dev/null || fail "the second up disturbed the running one"
  wait_for "actor-0 still training" grep -qs 'assigned run' "$logs/actor-0.log"
  # Stopped as a user would (SIGTERM): it stops what it started.
  kill -TERM "$up_pid"
  while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$up_pid" 2>/dev/null; do sleep 0.1; done
  kill -0 "$up_pid" 2>/dev/null && fail "ristretto up still runs at the deadline after SIGTERM"
  status=0
  wait "$up_pid" || status=$?
  up_pid=
  up_said 'up: shutting down' || fail "up did not shut down on SIGTERM"
elif [ "$mode" = learner ]; then
  [ -n "$learner" ] || fail "no ristretto-learner among up's children (${started[*]})"
  echo "up ($up_pid) started ${#started[@]} processes; killing the learner ($learner)"
  kill -KILL "$learner"
  wait_up_exit "its learner"
  up_said 'the learner exited early \(status 137\)' ||
    fail "up's error does not name the learner and its status (137)"
  up_said 'learner.log, which ends:' ||
    fail "up's error does not show the end of the learner's log"
else
  for ((i = 0; i < actors; ++i)); do
    [ -n "${actor_pids[i]:-}" ] || fail "no actor-$i among up's children (${started[*]})"
  done
  echo "up ($up_pid) started ${#started[@]} processes; killing actor-0 (${actor_pids[0]})"
  kill -KILL "${actor_pids[0]}"
  wait_for "a report of actor-0's exit" up_said \
    'up: actor-0 exited \(status 137\); 1 of 2 actors left; see .*actor-0\.log, which ends:'
  # The study goes on with the other actor: up is not shutting down. (That
  # it still supervised is proven below: it reports actor-1's kill -9 as
  # such, where a shutting-down up would have stopped actor-1 itself.)
  kill -0 "$up_pid" 2>/dev/null || fail "ristretto up ended when one of two actors died"
  up_said 'exited early|up: shutting down' &&
    fail "up called the study over with an actor left"
  echo "killing actor-1 (${actor_pids[1]})"
  kill -KILL "${actor_pids[1]}"
  wait_up_exit "its last actor"
  up_said 'up: actor-1 exited \(status 137\); 0 of 2 actors left' ||
    fail "up did not report actor-1's exit"
  up_said 'every actor exited early, so the study cannot go on \(run the same command again to resume it\); the last to exit was .*actor-1\.log, which ends:' ||
    fail "up's error does not say every actor exited, with the last one's log"
fi
# Nothing up started is left: no process (but a zombie) names the study's
# data directory (the coordinator, actors and PostgreSQL all do) or is one
# of up's children.
for f in /proc/[0-9]*/cmdline; do
  pid=${f#/proc/}
  pid=${pid%/cmdline}
  [ "$pid" = $$ ] && continue
  state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null || true)
  [ -n "$state" ] && [ "$state" != Z ] || continue
  cmd=$(tr '\0' ' ' < "$f" 2>/dev/null || true)
  case " ${started[*]} " in *" $pid "*) fail "process $pid ($cmd) that up started still runs" ;; esac
  case "$cmd" in *"$work/data"*) fail "process $pid ($cmd) still runs on the study's data" ;; esac
done
echo "PASS ($mode): up exited $status; it said:"
grep -E '^up: |exited early' "$work/up.log" || true
