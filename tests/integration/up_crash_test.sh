#!/usr/bin/env bash
# `ristretto up` notices when a process it started dies. The learner is
# killed (-9) once an actor trains a run; up must then stop everything else
# it started (actors, coordinator, its PostgreSQL), exit non-zero and name
# the learner and its exit status, with the end of its log, rather than
# wait for a study that can no longer finish (it used to wait forever: it
# looked only at processes it had already reaped).
# Usage: up_crash_test.sh RISTRETTO_BINARY SMALL_STUDY_YAML
set -euo pipefail
ristretto=$1
small=$2
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
argv0() { tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | head -n 1 || true; }

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
# watches: only the crash can end it.
sed -e 's/^name: .*/name: up-crash/' \
    -e 's/^budget_env_steps: .*/budget_env_steps: 100000000/' \
    "$small" > "$work/study.yaml"
grep -q '^budget_env_steps: 100000000$' "$work/study.yaml" ||
  fail "could not raise the budget in $small"

"$ristretto" up --study "$work/study.yaml" --data-dir "$work/data" \
  --actors 1 > "$work/up.log" 2>&1 &
up_pid=$!

# Wait (for events, up to 10 minutes in all as a guard against a hang)
# until an actor trains a run, then find the learner among up's children.
logs=$work/data/logs
for _ in $(seq 6000); do
  grep -qs 'assigned run' "$logs"/actor-0.log && break
  kill -0 "$up_pid" 2>/dev/null || fail "ristretto up exited before an actor trained"
  sleep 0.1
done
grep -qs 'assigned run' "$logs"/actor-0.log || fail "no actor was assigned a run"
learner=
started=()
for c in $(children_of "$up_pid"); do
  started+=("$c")
  case "$(argv0 "$c")" in */ristretto-learner | ristretto-learner) learner=$c ;; esac
done
[ -n "$learner" ] || fail "no ristretto-learner among up's children (${started[*]})"
echo "up ($up_pid) started ${#started[@]} processes; killing the learner ($learner)"
kill -KILL "$learner"

# up must end by itself (status != 0); 10 minutes is only a hang guard.
for _ in $(seq 6000); do kill -0 "$up_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$up_pid" 2>/dev/null; then
  fail "ristretto up still waits 10 minutes after its learner was killed"
fi
status=0
wait "$up_pid" || status=$?
up_pid=
[ "$status" -ne 0 ] || fail "ristretto up exited 0 after its learner was killed"
grep -q 'the learner exited early (status 137)' "$work/up.log" ||
  fail "up's error does not name the learner and its status (137)"
grep -q 'learner.log, which ends:' "$work/up.log" ||
  fail "up's error does not show the end of the learner's log"
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
echo "PASS: up exited $status: $(grep -m1 'exited early' "$work/up.log")"
