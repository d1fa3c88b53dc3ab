#!/usr/bin/env bash
# A user's own exchange data in one command, end to end
# with real processes (`ristretto up`: a private PostgreSQL, the
# coordinator, a learner, actors) and real files.
#   up:      a directory of exchange-like 5-minute CSVs (random-walk OHLCV,
#            scattered 1-3 bar holes where nothing traded, one 40-bar
#            outage) runs with `ristretto up --csv-dir … --interval 5m
#            --study` to the end: the default import forward-fills the
#            holes (reported per asset), splits at the outage, registers
#            the dataset, prints the leaderboard and exports a policy;
#            `up --dataset` with the registered file resumes that study.
#            While the first `up` runs, the argv of every process it started
#            (coordinator, learner, actor, PostgreSQL) is read from
#            /proc/PID/cmdline: no token, password or private-key content
#            may appear; the coordinator and the learner run with mutual
#            TLS (--tls-cert/--tls-key/--tls-ca), the learner and the
#            actors present client certificates, and every key file `up`
#            made is mode 600. The resumed `up` runs with --insecure
#            (plaintext, with a warning).
#   train:   `ristretto train --dataset` on the imported file trains and
#            evaluates without the "not inside one contiguous market
#            domain" failure (its validation rows span the outage).
#   refused: data whose domains are all shorter than an episode, a study
#            naming another dataset, and `train` on the short data are each
#            refused with a clear message before anything trains (no
#            PostgreSQL is started, nothing is written).
# Usage: own_data_test.sh RISTRETTO_BINARY [up|train|refused|all]
set -euo pipefail
ristretto=$1
parts=${2:-all}
work=$(mktemp -d /tmp/ristretto-own-data.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

# write_csvs DIR BARS OUTAGE_AT OUTAGE_BARS HOLE_EVERY: one SYMBOL.csv per
# pair, BTC-quoted, 5-minute bars from 2024-03-01 00:00 UTC. Each pair is a
# seeded geometric random walk; roughly one bar in HOLE_EVERY is missing
# (one to three in a row: no trade in that interval), and every pair misses
# OUTAGE_BARS bars from bar OUTAGE_AT on (an exchange outage). HOLE_EVERY 0:
# instead, a 5-bar hole every 200 bars (every domain, less the feature
# warm-up, shorter than an episode).
write_csvs() {
  local dir=$1 bars=$2 outage_at=$3 outage_bars=$4 hole_every=$5
  mkdir -p "$dir"
  local seed=11
  for pair in ETHBTC LTCBTC XRPBTC ADABTC; do
    seed=$((seed + 17))
    awk -v bars="$bars" -v seed="$seed" -v oat="$outage_at" \
        -v olen="$outage_bars" -v every="$hole_every" '
      BEGIN {
        srand(seed)
        t0 = 1709251200  # 2024-03-01T00:00:00Z
        price = 0.01 + rand() * 0.05
        print "timestamp,open,high,low,close,volume"
        hole_end = 0  # first bar after the current hole
        for (k = 0; k < bars; k++) {
          # the walk moves even while no bar is written
          step = (rand() - 0.5) * 0.004
          open = price
          price = price * exp(step)
          if (k >= oat && k < oat + olen) continue
          if (every == 0) { if (k % 200 >= 195) continue }
          else if (k < hole_end) continue
          else if (k > hole_end && k < bars - 4 && rand() < 1.0 / every) {
            # 1-3 bars missing, then at least one real bar
            hole_end = k + 1 + int(rand() * 3)
            continue
          }
          high = (open > price ? open : price) * (1 + rand() * 0.001)
          low = (open < price ? open : price) * (1 - rand() * 0.001)
          printf "%d,%.8f,%.8f,%.8f,%.8f,%.4f\n", t0 + 300 * k, open, high, low, price, 10 + rand() * 90
        }
      }' > "$dir/$pair.csv"
  done
}

# A tiny study on whatever dataset `up` is given: 2 trials x 1 holdout fold
# x 4096 env steps with 32x32 nets, then one refit per complete trial.
tiny_study() {  # FILE NAME [DATASET_LINE]
  cat > "$1" <<EOF
name: $2
${3:-dataset: given}
cv: {scheme: holdout, validation_fraction: 0.25}
lockbox: {share: 0.15}
budget_env_steps: 4096
sampler: {type: random, seed: 1}
concurrency: 2
max_trials: 2
max_attempts: 1
fixed:
  width: 32
  layers: 2
  batch_size: 256
  rollout_steps: 32
  epochs: 2
  episode_steps: 256
  lookback: 2
space:
  learning_rate: {type: float, low: 5.0e-4, high: 3.0e-3, log: true}
EOF
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Expects the command to exit non-zero with MESSAGE (a fixed string) on
# stderr; prints the message line for the log.
expect_refused() {  # LOG MESSAGE command...
  local log=$1 message=$2
  shift 2
  if "$@" > "$log" 2>&1; then
    tail -n 20 "$log" >&2
    fail "accepted: $*"
  fi
  grep -qF -- "$message" "$log" || {
    tail -n 20 "$log" >&2
    fail "no '$message' in the output of: $*"
  }
  grep -F -- "$message" "$log" | head -n 1 | sed 's/^/  refused: /' >&2
}

# tree_of PID...: those pids and every process below them (from the parent
# pid in /proc/*/stat; field 1 is the pid, the first field after the
# parenthesised command name is the state, the next the parent).
tree_of() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '
    { pid = $1; sub(/.*\) /, ""); parent[pid] = $2 }
    END {
      n = split(roots, r, " ")
      for (i = 1; i <= n; i++) keep[r[i]] = 1
      do {
        changed = 0
        for (p in parent)
          if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 }
      } while (changed)
      for (p in keep) print p
    }'
}

# watch_argv UP_PID DATA_DIR OUT: until UP_PID exits, reads the argv
# (/proc/PID/cmdline) of every process `up` started (its children and the
# PostgreSQL postmaster with its backends) every 0.2 s. Writes the program
# names seen to OUT.names, each distinct argv to OUT.argv, and every argv
# that carries the run's token (from DATA_DIR/token), a line of a private
# key `up` wrote (DATA_DIR/tls/*.key), PEM text, "--token" or "password" to
# OUT.leaks.
watch_argv() {
  local up_pid=$1 data=$2 out=$3 token="" actor_token="" learner_token="" keys="" roots pm pid cmd name line
  : > "$out.names"
  : > "$out.argv"
  : > "$out.leaks"
  while kill -0 "$up_pid" 2>/dev/null; do
    if [ -z "$token" ] && [ -s "$data/token" ]; then token=$(cat "$data/token"); fi
    if [ -z "$actor_token" ] && [ -s "$data/actor-token" ]; then
      actor_token=$(cat "$data/actor-token")
    fi
    if [ -z "$learner_token" ] && [ -s "$data/learner-token" ]; then
      learner_token=$(cat "$data/learner-token")
    fi
    if [ -z "$keys" ] && [ -s "$data/tls/client.key" ]; then
      # The base64 lines of every key (not the BEGIN/END lines).
      keys=$(grep -hv -- '-----' "$data"/tls/*.key 2>/dev/null || true)
    fi
    roots=$up_pid
    pm=$(head -n 1 "$data/pg/postmaster.pid" 2>/dev/null || true)
    if [[ $pm =~ ^[0-9]+$ ]]; then roots="$roots $pm"; fi
    for pid in $(tree_of $roots); do
      cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline") || continue
      [ -n "$cmd" ] || continue
      name=${cmd%% *}
      name=${name##*/}
      echo "$name" >> "$out.names"
      grep -qxF -- "$cmd" "$out.argv" || echo "$cmd" >> "$out.argv"
      if { [ -n "$token" ] && [[ $cmd == *"$token"* ]]; } ||
         { [ -n "$actor_token" ] && [[ $cmd == *"$actor_token"* ]]; } ||
         { [ -n "$learner_token" ] && [[ $cmd == *"$learner_token"* ]]; } ||
         grep -qiE -- '--token([ =]|$)|password|-----BEGIN|PRIVATE KEY' <<< "$cmd"; then
        echo "$cmd" >> "$out.leaks"
      fi
      while IFS= read -r line; do
        if [ -n "$line" ] && [[ $cmd == *"$line"* ]]; then
          echo "$cmd" >> "$out.leaks"
        fi
      done <<< "$keys"
    done
    sleep 0.2
  done
}

csv=$work/csv
write_csvs "$csv" 3000 1800 40 25

if [[ $parts == all || $parts == up ]]; then
  tiny_study "$work/tiny.yaml" own-data
  log=$work/up.log
  start=$SECONDS
  "$ristretto" up --csv-dir "$csv" --interval 5m --study "$work/tiny.yaml" \
    --data-dir "$work/data" --actors 1 --envs 8 > "$log" 2>&1 &
  up_pid=$!
  # While it runs, no process `up` started shows a secret
  # in its argv (every local user can read /proc/PID/cmdline).
  watch_argv "$up_pid" "$work/data" "$work/argv"
  if ! wait "$up_pid"; then
    tail -n 60 "$log" >&2
    fail "ristretto up --csv-dir exited non-zero"
  fi
  echo "up --csv-dir: $((SECONDS - start)) s" >&2
  if [ -s "$work/argv.leaks" ]; then
    fail "a secret in argv: $(head -n 3 "$work/argv.leaks")"
  fi
  for name in ristretto-coordinator ristretto-learner ristretto-actor postgres; do
    grep -qx -- "$name" "$work/argv.names" ||
      fail "never saw $name running (saw: $(sort -u "$work/argv.names" | tr '\n' ' '))"
  done
  echo "  [up] argv of $(sort -u "$work/argv.names" | tr '\n' ' ')carries no secret" >&2
  # TLS out of the box: both servers under mutual TLS, every client with a
  # client certificate and the CA (paths only: the files are checked below).
  argv_of() { grep -E "^[^ ]*/$1 " "$work/argv.argv" | head -n 1; }
  for name in ristretto-coordinator ristretto-learner ristretto-actor; do
    cmd=$(argv_of "$name")
    for flag in --tls-cert --tls-key --tls-ca; do
      [[ " $cmd " == *" $flag $work/data/tls/"* ]] ||
        fail "$name runs without $flag (argv: $cmd)"
    done
  done
  for flag in --coordinator-tls-cert --coordinator-tls-key --coordinator-tls-ca; do
    [[ " $(argv_of ristretto-learner) " == *" $flag $work/data/tls/"* ]] ||
      fail "the learner runs without $flag"
  done
  grep -q 'security: TLS on, every call authenticated' "$work/data/logs/coordinator.log" ||
    fail "the coordinator did not report TLS with authenticated calls"
  grep -q 'security: TLS on, every call authenticated' "$work/data/logs/learner.log" ||
    fail "the learner did not report TLS with authenticated calls"
  for f in "$work"/data/tls/*; do
    [ "$(stat -c %a "$f")" = 600 ] || fail "$f has mode $(stat -c %a "$f"), not 600"
  done
  [ "$(stat -c %a "$work/data/tls")" = 700 ] || fail "$work/data/tls is not mode 700"
  [ ! -e "$work/data/tls/ca.key" ] || fail "the CA's private key was written"
  # Every actor and the learner present a client certificate of their own
  # that names them (URI SAN urn:ristretto:actor:ID / :learner:MEMBER), so
  # the coordinator lets each use only its own id.
  flag_of() { sed -n "s/.* $2 \([^ ]*\).*/\1/p" <<< " $1 "; }
  uri_of() { openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null |
               sed -n 's/^ *URI://p'; }
  cmd=$(argv_of ristretto-actor)
  cert=$(flag_of "$cmd" --tls-cert)
  [ "$(uri_of "$cert")" = "urn:ristretto:actor:$(flag_of "$cmd" --actor-id)" ] ||
    fail "the actor's certificate $cert names '$(uri_of "$cert")', not its id (argv: $cmd)"
  cmd=$(argv_of ristretto-learner)
  cert=$(flag_of "$cmd" --coordinator-tls-cert)
  [ "$(uri_of "$cert")" = "urn:ristretto:learner:$(flag_of "$cmd" --member-id)" ] ||
    fail "the learner's certificate $cert names '$(uri_of "$cert")', not its member id (argv: $cmd)"
  echo "  [up] the actor and the learner present certificates naming their ids" >&2
  echo "  [up] mutual TLS: $(ls "$work/data/tls" | tr '\n' ' ')(mode 600, no CA key on disk)" >&2
  # The children authenticated with a per-run token from a private file.
  [ "$(stat -c %a "$work/data/token")" = 600 ] ||
    fail "$work/data/token has mode $(stat -c %a "$work/data/token"), not 600"
  grep -qxE '[0-9a-f]{64}' "$work/data/token" || fail "the token is not 32 bytes of hex"
  # Actors hold a token of their own, not the cluster token: they find the
  # learner through the coordinator, which gives them a ticket for it.
  [ "$(stat -c %a "$work/data/actor-token")" = 600 ] ||
    fail "$work/data/actor-token is not mode 600"
  grep -qxE '[0-9a-f]{64}' "$work/data/actor-token" || fail "the actor token is not 32 bytes of hex"
  cmp -s "$work/data/token" "$work/data/actor-token" && fail "the actor token is the cluster token"
  actor_argv=" $(argv_of ristretto-actor) "
  [[ $actor_argv == *" --token-file $work/data/actor-token "* ]] ||
    fail "the actor does not use the actor token (argv:$actor_argv)"
  [[ $actor_argv == *" --coordinator "* ]] ||
    fail "the actor does not find its learner through the coordinator (argv:$actor_argv)"
  [[ " $(argv_of ristretto-coordinator) " == *" --actor-token-file $work/data/actor-token "* ]] ||
    fail "the coordinator does not know the actor token"
  # The learner holds the learners' token, not the cluster token (the
  # operators'): it registers and does nothing else at the coordinator.
  [ "$(stat -c %a "$work/data/learner-token")" = 600 ] ||
    fail "$work/data/learner-token is not mode 600"
  grep -qxE '[0-9a-f]{64}' "$work/data/learner-token" || fail "the learners' token is not 32 bytes of hex"
  cmp -s "$work/data/token" "$work/data/learner-token" && fail "the learners' token is the cluster token"
  cmp -s "$work/data/actor-token" "$work/data/learner-token" && fail "the learners' token is the actors' token"
  learner_argv=" $(argv_of ristretto-learner) "
  [[ $learner_argv == *" --token-file $work/data/learner-token "* ]] ||
    fail "the learner does not use the learners' token (argv:$learner_argv)"
  [[ $learner_argv != *"$work/data/token "* ]] || fail "the learner holds the cluster token (argv:$learner_argv)"
  [[ " $(argv_of ristretto-coordinator) " == *" --learner-token-file $work/data/learner-token "* ]] ||
    fail "the coordinator does not know the learners' token"
  # The import report: holes filled per asset, one split at the outage.
  grep -q '^import report (forward-fill gaps of up to 3 bars)' "$log" ||
    fail "no import report"
  for pair in ADABTC ETHBTC LTCBTC XRPBTC; do
    filled=$(awk -v p="  $pair: " '/^bars forward-filled per asset:/ { on = 1; next }
      on && index($0, p) == 1 { print substr($0, length(p) + 1); exit }
      on && !/^  / { exit }' "$log")
    [ -n "$filled" ] && [ "$filled" -gt 0 ] ||
      fail "$pair: no forward-filled bars reported (got '$filled')"
  done
  grep -qE '^bars forward-filled: [1-9][0-9]*$' "$log" || fail "no fill total"
  grep -q '^long gaps: 4$' "$log" || fail "expected 4 long gaps (the outage in each pair)"
  grep -qE '^domains: 2 \([0-9]+ rows\)$' "$log" || fail "expected 2 domains"
  grep -q '^up: registered dataset [0-9a-f]\{64\}' "$log" || fail "dataset not registered"
  grep -q '^leaderboard' "$log" || grep -qi 'rank' "$log" || fail "no leaderboard"
  grep -q '^verdict: ' "$log" || fail "no verdict"
  if [ ! -f "$work/data/best-policy/policy.pt" ]; then
    # Everything that says why: up's output and the tails of every log.
    tail -n 40 "$log" >&2
    for f in "$work"/data/logs/*.log; do
      echo "--- $f" >&2
      tail -n 30 "$f" >&2
    done
    fail "no exported policy"
  fi
  [ -f "$work/data/best-policy/contract.json" ] || fail "no exported contract"
  # The stored study names the imported dataset; no temporary file is left.
  id=$(grep -o '^up: registered dataset [0-9a-f]*' "$log" | awk '{print $4}')
  [ -f "$work/data/datasets/$id.rds" ] || fail "no $work/data/datasets/$id.rds"
  if ls -A "$work/data/datasets" | grep -q '^\.'; then
    fail "temporary files left in $work/data/datasets: $(ls -A "$work/data/datasets")"
  fi
  grep -E '^(bars forward-filled|long gaps|domains|up: registered|verdict)' "$log" |
    sed 's/^/  [up] /' >&2
  # The registered file given with --dataset binds to the same study text:
  # `up` resumes the finished study instead of refusing or starting anew.
  # --insecure: plaintext between the processes, with a warning.
  if ! "$ristretto" up --dataset "$work/data/datasets/$id.rds" \
       --study "$work/tiny.yaml" --data-dir "$work/data" --actors 1 \
       --envs 8 --insecure > "$work/again.log" 2>&1; then
    tail -n 30 "$work/again.log" >&2
    fail "ristretto up --dataset (again) exited non-zero"
  fi
  grep -q '^up: resuming study own-data (done)' "$work/again.log" ||
    { tail -n 30 "$work/again.log" >&2; fail "up --dataset did not resume the study"; }
  grep -q '^up: WARNING: --insecure: the processes talk plaintext gRPC' "$work/again.log" ||
    fail "up --insecure gave no warning"
  grep -q 'security: plaintext (no TLS)' "$work/data/logs/coordinator.log" ||
    fail "the coordinator of up --insecure did not run plaintext"
  # A study naming another dataset is refused, before PostgreSQL starts.
  tiny_study "$work/other.yaml" other "dataset: {id: $(printf 'e%.0s' {1..64})}"
  expect_refused "$work/other.log" "the study names dataset eeee" \
    "$ristretto" up --dataset "$work/data/datasets/$id.rds" \
    --study "$work/other.yaml" --data-dir "$work/other-data"
  [ ! -e "$work/other-data/pg" ] || fail "PostgreSQL started for a refused study"
fi

if [[ $parts == all || $parts == train ]]; then
  "$ristretto" dataset import --csv-dir "$csv" --interval 5m \
    --out "$work/own.rds" > "$work/import.log" 2>&1 ||
    { cat "$work/import.log" >&2; fail "dataset import"; }
  log=$work/train.log
  # Validation (the last half) spans the outage: two pieces, one per domain.
  if ! "$ristretto" train --dataset "$work/own.rds" --budget 2048 \
       --episode 256 --lookback 2 --envs 4 --rollout 64 --epochs 1 \
       --minibatch 256 --policy-hidden 16,16 --quiet > "$log" 2>&1; then
    tail -n 30 "$log" >&2
    fail "ristretto train --dataset exited non-zero"
  fi
  grep -q 'not inside one contiguous market domain' "$log" &&
    fail "the domain error is back"
  grep -qE '^split: 2 domains; train [0-9]+ rows in 1 piece; validation [0-9]+ rows in 2 pieces' "$log" ||
    { cat "$log" >&2; fail "expected training in 1 piece and validation in 2"; }
  grep -qE '^eval@' "$log" || fail "no evaluation"
  grep -E '^(split|eval@)' "$log" | sed 's/^/  [train] /' >&2
fi

if [[ $parts == all || $parts == refused ]]; then
  short=$work/short
  write_csvs "$short" 1500 700 40 0
  tiny_study "$work/short.yaml" short
  expect_refused "$work/short-up.log" \
    "cannot run on dataset" \
    "$ristretto" up --csv-dir "$short" --interval 5m --study "$work/short.yaml" \
    --data-dir "$work/short-data"
  grep -qF "the longest training block has" "$work/short-up.log" ||
    fail "the refusal does not say why"
  [ ! -e "$work/short-data/pg" ] || fail "PostgreSQL started for refused data"
  if ls -A "$work/short-data/datasets" 2>/dev/null | grep -q .; then
    fail "files left behind: $(ls -A "$work/short-data/datasets")"
  fi
  "$ristretto" dataset import --csv-dir "$short" --interval 5m \
    --out "$work/short.rds" > /dev/null 2>&1 || fail "dataset import (short)"
  expect_refused "$work/short-train.log" \
    "no domain of the dataset is long enough for one training episode" \
    "$ristretto" train --dataset "$work/short.rds" --episode 256 --budget 2048
  grep -q '^  steps ' "$work/short-train.log" && fail "train started training"
fi
echo "PASS"
