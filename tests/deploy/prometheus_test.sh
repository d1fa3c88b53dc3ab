#!/usr/bin/env bash
# Every PromQL expression the dashboards use (deploy/promql.txt, one per line;
# blank lines and lines starting with # are ignored) returns data from a real
# Prometheus scraping a running local stack.
#
# Starts, all on 127.0.0.1 and in a fresh temporary directory: a private
# PostgreSQL cluster (initdb + pg_ctl, as user postgres when run as root), a
# small study (ristretto study create/start), ristretto-coordinator,
# ristretto-learner (leasing from the coordinator) and ristretto-actor, each
# with --metrics-port auto; then Debian's `prometheus` with a generated config
# (scrape_interval 1s, jobs ristretto-coordinator, ristretto-learner,
# ristretto-actor as in deploy/prometheus). Once every target is up and the
# learner has trained, each expression is evaluated through /api/v1/query
# (retried for up to 60 s); the test fails naming every expression that
# returns no data or an error.
#
# Expressions that use only ristretto_gpu_* metrics other than
# ristretto_gpu_metrics_available are skipped (and listed) where the learner
# has no GPU telemetry (ristretto_gpu_metrics_available{source="none"} == 1).
#
# Installs nothing: needs prometheus, curl and PostgreSQL's server binaries
# (scripts/install_deps.sh); exits 77 (ctest: skipped) when one is missing.
#
# Usage: prometheus_test.sh PROMQL_FILE LEARNER ACTOR COORDINATOR RISTRETTO_CLI
set -euo pipefail

if [ $# -ne 5 ]; then
  echo "usage: $0 PROMQL_FILE LEARNER ACTOR COORDINATOR RISTRETTO_CLI" >&2
  exit 2
fi
PROMQL=$1 LEARNER=$2 ACTOR=$3 COORDINATOR=$4 CLI=$5

skip() { echo "SKIP: $*"; exit 77; }
[ -f "$PROMQL" ] || skip "$PROMQL does not exist"
command -v prometheus >/dev/null || skip "prometheus is not installed (scripts/install_deps.sh)"
command -v curl >/dev/null || skip "curl is not installed (scripts/install_deps.sh)"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] || skip "PostgreSQL server binaries are missing"
for b in "$LEARNER" "$ACTOR" "$COORDINATOR" "$CLI"; do
  [ -x "$b" ] || { echo "FAIL: $b is not an executable"; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ristretto_prom_XXXXXX")
chmod 755 "$TMP"
PIDS=()
PG_STARTED=0
RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then RUN_AS=(runuser -u postgres --); fi

cleanup() {
  local status=$?
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${PIDS[i]}" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ "$PG_STARTED" -eq 1 ]; then
    "${RUN_AS[@]}" "$PGBIN/pg_ctl" stop -w -m fast -D "$TMP/pg" >/dev/null 2>&1 || true
  fi
  if [ "$status" -eq 0 ]; then
    rm -rf "$TMP"
  else
    echo "logs kept in $TMP"
  fi
}
trap cleanup EXIT

# A TCP port nothing listens on (checked, not reserved: retried on failure).
free_port() {
  local port
  while true; do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}

# Waits (60 s) for `pattern` in `log`; prints the first match's group 1.
wait_log() {
  local log=$1 pattern=$2 pid=$3 value=""
  for _ in $(seq 300); do
    value=$(sed -n -E "s/.*${pattern}.*/\\1/p" "$log" 2>/dev/null | head -n 1)
    if [ -n "$value" ]; then echo "$value"; return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "FAIL: no '$pattern' in $log:" >&2
  tail -n 20 "$log" >&2 || true
  return 1
}

# --- PostgreSQL
mkdir -p "$TMP/pg"
chmod 700 "$TMP/pg"
if [ ${#RUN_AS[@]} -gt 0 ]; then chown postgres "$TMP/pg"; fi
"${RUN_AS[@]}" "$PGBIN/initdb" -D "$TMP/pg" -A trust -U postgres -E UTF8 \
  --locale=C --no-sync >"$TMP/initdb.log" 2>&1 ||
  { echo "FAIL: initdb"; cat "$TMP/initdb.log"; exit 1; }
PG_PORT=$(free_port)
"${RUN_AS[@]}" "$PGBIN/pg_ctl" start -w -t 60 -D "$TMP/pg" -l "$TMP/pg/server.log" \
  -o "-k $TMP/pg -p $PG_PORT -h 127.0.0.1 -c fsync=off -c shared_buffers=32MB" \
  >"$TMP/pg_ctl.log" 2>&1 || { echo "FAIL: pg_ctl start"; cat "$TMP/pg_ctl.log"; exit 1; }
PG_STARTED=1
"${RUN_AS[@]}" "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres ristretto
DSN="host=127.0.0.1 port=$PG_PORT dbname=ristretto user=postgres"
echo "PostgreSQL on 127.0.0.1:$PG_PORT"

# --- the stack: a study long enough to keep training while we query
cat >"$TMP/study.yaml" <<'EOF'
name: promql
dataset:
  synthetic: {rows: 1500, assets: 2, seed: 3, predictability: 0.5}
cv: {scheme: holdout, validation_fraction: 0.3}
budget_env_steps: 2000000
eval_every_env_steps: 4096
sampler: {type: random, seed: 5}
pruner: {type: none}
concurrency: 1
max_trials: 1
max_attempts: 2
fixed: {width: 32, layers: 2, batch_size: 256, rollout_steps: 32, num_envs: 8, epochs: 2,
        episode_steps: 256}
space:
  learning_rate: {type: float, low: 1.0e-4, high: 1.0e-3, log: true}
EOF
"$CLI" study create "$TMP/study.yaml" --db "$DSN" >"$TMP/study.log" 2>&1 ||
  { echo "FAIL: study create"; cat "$TMP/study.log"; exit 1; }

"$COORDINATOR" --db "$DSN" --address 127.0.0.1 --port 0 --data-dir "$TMP/coordinator" \
  --tick-ms 500 --metrics-port auto --metrics-address 127.0.0.1 \
  >"$TMP/coordinator.log" 2>&1 &
PIDS+=($!)
COORD_ADDR=$(wait_log "$TMP/coordinator.log" "listening on ([^ ]+)" "${PIDS[-1]}")
COORD_METRICS=$(wait_log "$TMP/coordinator.log" "metrics on [^ ]*:([0-9]+)" "${PIDS[-1]}")
"$CLI" study start promql --db "$DSN" >>"$TMP/study.log" 2>&1 ||
  { echo "FAIL: study start"; cat "$TMP/study.log"; exit 1; }

"$LEARNER" --coordinator "$COORD_ADDR" --address 127.0.0.1 --port 0 --slots 1 \
  --run-dir "$TMP/learner" --metrics-port auto --metrics-address 127.0.0.1 \
  >"$TMP/learner.log" 2>&1 &
PIDS+=($!)
LEARNER_METRICS=$(wait_log "$TMP/learner.log" "metrics on [^ ]*:([0-9]+)" "${PIDS[-1]}")

"$ACTOR" --coordinator "$COORD_ADDR" --envs 8 --actor-id promql-actor-0 \
  --cache-dir "$TMP/actor-cache" --metrics-port auto --metrics-address 127.0.0.1 \
  >"$TMP/actor.log" 2>&1 &
PIDS+=($!)
ACTOR_METRICS=$(wait_log "$TMP/actor.log" "metrics on [^ ]*:([0-9]+)" "${PIDS[-1]}")
echo "metrics: coordinator :$COORD_METRICS, learner :$LEARNER_METRICS, actor :$ACTOR_METRICS"

# --- Prometheus
PROM_PORT=$(free_port)
PROM="http://127.0.0.1:$PROM_PORT"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ristretto-coordinator
    static_configs: [{targets: ["127.0.0.1:$COORD_METRICS"]}]
  - job_name: ristretto-learner
    static_configs: [{targets: ["127.0.0.1:$LEARNER_METRICS"]}]
  - job_name: ristretto-actor
    static_configs: [{targets: ["127.0.0.1:$ACTOR_METRICS"]}]
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prometheus-data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn \
  >"$TMP/prometheus.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 150); do
  curl -sf "$PROM/-/ready" >/dev/null 2>&1 && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { echo "FAIL: prometheus exited"; cat "$TMP/prometheus.log"; exit 1; }
  sleep 0.2
done
echo "Prometheus on 127.0.0.1:$PROM_PORT"

# query EXPR: prints Prometheus's JSON answer.
query() { curl -s -G "$PROM/api/v1/query" --data-urlencode "query=$1"; }
# has_data EXPR: success with at least one sample (vector/matrix) or a scalar.
has_data() {
  local answer
  answer=$(query "$1")
  [[ $answer == *'"status":"success"'* ]] && [[ $answer != *'"result":[]'* ]]
}

# Every target up, the learner trained and reported, the actor acting.
ready=0
for _ in $(seq 180); do
  if has_data 'count(up{job=~"ristretto-.*"} == 1) == 3' &&
     has_data 'sum(ristretto_learner_updates_total) > 1' &&
     has_data 'sum(ristretto_actor_env_steps_total) > 0'; then
    ready=1
    break
  fi
  sleep 1
done
if [ "$ready" -ne 1 ]; then
  echo "FAIL: the stack did not come up within 180 s (targets up, learner trained)"
  query 'up' && echo
  for f in coordinator learner actor prometheus; do echo "--- $f"; tail -n 15 "$TMP/$f.log"; done
  exit 1
fi
# rate()/increase() over [1m] need two samples per series: a few more scrapes.
sleep 5

no_gpu=0
if has_data 'ristretto_gpu_metrics_available{source="none"} == 1'; then no_gpu=1; fi

# Only ristretto_gpu_* series other than ristretto_gpu_metrics_available?
gpu_only() {
  local names
  names=$(grep -oE 'ristretto_[a-z0-9_]+' <<<"$1" | sort -u)
  [ -n "$names" ] || return 1
  while read -r n; do
    [[ $n == ristretto_gpu_* && $n != ristretto_gpu_metrics_available ]] || return 1
  done <<<"$names"
  return 0
}

pending=()
skipped=()
total=0
while IFS= read -r line || [ -n "$line" ]; do
  expr="${line#"${line%%[![:space:]]*}"}"
  [ -z "$expr" ] && continue
  [[ $expr == \#* ]] && continue
  total=$((total + 1))
  if [ "$no_gpu" -eq 1 ] && gpu_only "$expr"; then
    skipped+=("$expr")
    continue
  fi
  pending+=("$expr")
done <"$PROMQL"

deadline=$((SECONDS + 60))
while true; do
  still=()
  for expr in "${pending[@]}"; do
    has_data "$expr" || still+=("$expr")
  done
  pending=("${still[@]+"${still[@]}"}")
  [ ${#pending[@]} -eq 0 ] && break
  [ $SECONDS -ge $deadline ] && break
  sleep 2
done

if [ ${#skipped[@]} -gt 0 ]; then
  echo "skipped ${#skipped[@]} GPU-only expression(s): no GPU telemetry on this machine (ristretto_gpu_metrics_available{source=\"none\"} 1):"
  for expr in "${skipped[@]}"; do echo "  SKIP $expr"; done
fi
evaluated=$((total - ${#skipped[@]}))
if [ ${#pending[@]} -gt 0 ]; then
  echo "FAIL: ${#pending[@]} of $evaluated expression(s) returned no data or an error:"
  for expr in "${pending[@]}"; do
    answer=$(query "$expr")
    if [[ $answer == *'"status":"success"'* ]]; then
      echo "  NO DATA $expr"
    else
      echo "  ERROR   $expr"
    fi
    echo "          ${answer:0:300}"
  done
  exit 1
fi
echo "PASS: all $evaluated evaluated expression(s) of $PROMQL returned data ($total in the file, ${#skipped[@]} skipped)"
