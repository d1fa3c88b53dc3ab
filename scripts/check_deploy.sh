#!/usr/bin/env bash
# Validates deploy/, docker/ and docs/metrics.md without a Docker engine,
# a Kubernetes cluster or a GPU. Tools come from Debian packages and the
# npm registry only (installed when missing):
#
#   compose     docker-compose 1.29 (Debian) `config` with deploy/.env.example,
#               then a policy check of the result (deploy/tools/check_compose.js)
#   prometheus  promtool check config (compose and Kubernetes configs)
#   dashboards  structural check of the Grafana JSON + every metric/label in
#               docs/metrics.md + deploy/promql.txt up to date
#               (deploy/tools/check_dashboards.js); promtool parses every PromQL
#   sql         every dashboard SQL query on a throw-away PostgreSQL with the
#               coordinator's schema, as the read-only grafana_reader
#               (skipped when no PostgreSQL server is installed)
#   k8s         generated ConfigMaps up to date; schema validation (npm
#               kubernetes-models) + unknown fields + cross references
#               (deploy/tools/check_k8s.js); `kubectl kustomize` when present
#   docker      Dockerfile lint (npm dockerfile-utils) and image policy
#   shell       bash -n on the shell scripts (and shellcheck when present)
#
# Usage: scripts/check_deploy.sh            run every check
#        scripts/check_deploy.sh --write    regenerate deploy/promql.txt and
#                                           the Kubernetes ConfigMaps first
# Exit status 0 when every check passes. Last line: "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export LC_ALL=C
ROOT="$PWD"
TOOLS="$ROOT/deploy/tools"
CACHE="$ROOT/.cache/deploy-tools"
WORK="$(mktemp -d)"
trap 'cleanup' EXIT
PG_PID_DIR=""

cleanup() {
  if [ -n "$PG_PID_DIR" ] && [ -f "$PG_PID_DIR/data/postmaster.pid" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PG_PID_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    $SUDO apt-get update -qq >/dev/null || return 1
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ------------------------------------------------------------------ tools
setup_tools() {
  local missing=()
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "check_deploy: installing ${missing[*]} (apt)"
    apt_install "${missing[@]}" || { echo "check_deploy: cannot install ${missing[*]}" >&2; return 1; }
  fi
  # promtool only, unpacked from Debian's prometheus package: installing the
  # package would start a Prometheus server on machines with systemd.
  if ! command -v promtool >/dev/null 2>&1; then
    if [ ! -x "$CACHE/usr/bin/promtool" ]; then
      echo "check_deploy: fetching promtool (Debian package prometheus, unpacked into .cache/)"
      mkdir -p "$CACHE/deb"
      if [ "$APT_UPDATED" -eq 0 ]; then $SUDO apt-get update -qq >/dev/null; APT_UPDATED=1; fi
      (cd "$CACHE/deb" && apt-get download -qq prometheus >/dev/null) || { echo "check_deploy: apt-get download prometheus failed" >&2; return 1; }
      dpkg -x "$CACHE"/deb/prometheus_*.deb "$CACHE" || return 1
    fi
    export PATH="$CACHE/usr/bin:$PATH"
  fi
  if [ ! -d "$TOOLS/node_modules" ] || [ "$TOOLS/package-lock.json" -nt "$TOOLS/node_modules/.package-lock.json" ]; then
    echo "check_deploy: npm ci in deploy/tools"
    (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || { echo "check_deploy: npm ci failed" >&2; return 1; }
  fi
  echo "check_deploy: node $(node --version), $(docker-compose version --short 2>/dev/null | sed 's/^/docker-compose /'), $(promtool --version 2>&1 | head -1)"
}

# ----------------------------------------------------------------- checks
check_compose() {
  local f=deploy/docker-compose.yml
  # Without deploy/.env the file must refuse to start (no default passwords).
  if docker-compose -f "$f" --project-directory "$WORK" config >/dev/null 2>"$WORK/noenv.err"; then
    echo "compose: config succeeded without passwords; they must be required" >&2
    return 1
  fi
  grep -q "POSTGRES_PASSWORD" "$WORK/noenv.err" || { cat "$WORK/noenv.err" >&2; return 1; }
  local profile
  for profile in "" gpu cpu tools; do
    local args=(-f "$f" --env-file deploy/.env.example)
    [ -n "$profile" ] && args+=(--profile "$profile")
    docker-compose "${args[@]}" config -q || { echo "compose: config failed (profile '${profile:-none}')" >&2; return 1; }
  done
  docker-compose -f "$f" --env-file deploy/.env.example config > "$WORK/compose.yml" || return 1
  echo "compose: docker-compose $(docker-compose version --short) config: OK (profiles none, gpu, cpu, tools)"
  node "$TOOLS/check_compose.js" "$WORK/compose.yml"
}

check_prometheus() {
  promtool check config deploy/prometheus/prometheus.yml || return 1
  if ! promtool check config deploy/prometheus/prometheus-k8s.yml >"$WORK/k8s-prom.out" 2>&1; then
    if grep -q "kubernetes_sd_configs not found" "$WORK/k8s-prom.out"; then
      # Debian's promtool is built without Kubernetes discovery: check the
      # rest (relabelling, intervals) with the discovery swapped for a target.
      echo "prometheus: this promtool has no kubernetes_sd; checking prometheus-k8s.yml with a static target instead"
      node "$TOOLS/check_docker.js" --emit-prometheus-k8s "$WORK/prometheus-k8s-static.yml" || return 1
      promtool check config "$WORK/prometheus-k8s-static.yml" || return 1
      grep -q "kubernetes_sd_configs:" deploy/prometheus/prometheus-k8s.yml || return 1
    else
      cat "$WORK/k8s-prom.out" >&2
      return 1
    fi
  else
    cat "$WORK/k8s-prom.out"
  fi
}

check_dashboards() {
  node "$TOOLS/check_dashboards.js" --emit-promql "$WORK/rules.yml" --emit-sql "$WORK/sql.json" || return 1
  # promtool parses every expression of deploy/promql.txt (as recording rules).
  promtool check rules "$WORK/rules.yml" >"$WORK/rules.out" 2>&1 || { cat "$WORK/rules.out" >&2; return 1; }
  echo "dashboards: promtool parsed $(grep -c . deploy/promql.txt) expressions of deploy/promql.txt"
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

check_sql() {
  if [ "${SKIP_SQL:-0}" = 1 ]; then echo "sql: skipped (SKIP_SQL=1)"; return 0; fi
  PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ] || ! command -v psql >/dev/null 2>&1; then
    echo "sql: skipped (no PostgreSQL server installed; apt-get install postgresql)"
    return 0
  fi
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "sql: skipped (running as root without a postgres user)"
    return 0
  fi
  [ -f "$WORK/sql.json" ] || node "$TOOLS/check_dashboards.js" --emit-sql "$WORK/sql.json" >/dev/null || return 1
  local dir="$WORK/pg"
  mkdir -p "$dir/sock"
  [ "$(id -u)" -eq 0 ] && chown -R postgres "$dir" && chmod 755 "$WORK"
  PG_PID_DIR="$dir"
  as_pg "$PG_BIN/initdb" -D "$dir/data" -U ristretto --auth=trust --locale=C -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  # Unix socket only: no TCP port is opened.
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-c listen_addresses='' -k $dir/sock" start >/dev/null || { cat "$dir/server.log" >&2; return 1; }
  export PGHOST="$dir/sock"
  as_pg env PGHOST="$PGHOST" createdb -U ristretto ristretto || return 1
  export PGDATABASE=ristretto
  # As in the postgres image: the init script first (POSTGRES_USER owns the
  # database), then the coordinator's migrations, then a small study.
  as_pg env PGHOST="$PGHOST" POSTGRES_USER=ristretto POSTGRES_DB=ristretto GRAFANA_DB_PASSWORD=check \
    bash deploy/postgres/init/10-grafana-reader.sh >/dev/null || return 1
  node "$TOOLS/check_sql.js" --migrations | psql -X -q -v ON_ERROR_STOP=1 -U ristretto >/dev/null || return 1
  node "$TOOLS/check_sql.js" --seed | psql -X -q -v ON_ERROR_STOP=1 -U ristretto >/dev/null || return 1
  node "$TOOLS/check_sql.js" --run "$WORK/sql.json"
}

check_k8s() {
  scripts/gen_k8s_dashboards.sh --check || return 1
  node "$TOOLS/check_k8s.js" || return 1
  if command -v kubectl >/dev/null 2>&1; then
    local root
    for root in deploy/k8s deploy/k8s/external-db; do
      kubectl kustomize "$root" >"$WORK/kustomize.yaml" 2>"$WORK/kustomize.err" \
        || { cat "$WORK/kustomize.err" >&2; return 1; }
      echo "k8s: kubectl kustomize $root: $(grep -c '^kind:' "$WORK/kustomize.yaml") objects"
    done
  else
    echo "k8s: kubectl not installed; kustomize rendering not checked (deploy/tools/check_k8s.js resolves the kustomizations itself)"
  fi
}

check_docker() {
  node "$TOOLS/check_docker.js"
}

check_shell() {
  local f rc=0
  for f in docker/*.sh docker/standin/*.sh deploy/postgres/init/*.sh scripts/check_deploy.sh scripts/gen_k8s_dashboards.sh \
           scripts/compose_up.sh scripts/compose_test.sh; do
    bash -n "$f" || rc=1
    [ -x "$f" ] || { echo "shell: $f is not executable" >&2; rc=1; }
  done
  if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -S warning docker/*.sh docker/standin/*.sh deploy/postgres/init/*.sh scripts/gen_k8s_dashboards.sh scripts/check_deploy.sh \
      scripts/compose_up.sh scripts/compose_test.sh || rc=1
  fi
  [ "$rc" -eq 0 ] && echo "shell: OK"
  return "$rc"
}

# ------------------------------------------------------------------- main
if [ "${1:-}" = "--write" ]; then
  setup_tools || exit 1
  node "$TOOLS/check_dashboards.js" --write-promql || true
  scripts/gen_k8s_dashboards.sh
elif [ -n "${1:-}" ]; then
  echo "usage: $0 [--write]" >&2
  exit 2
fi

passed=0
failed=0
failures=()
run() {
  local name="$1"
  echo "== $name"
  if "check_$name"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "== $name: FAILED" >&2
  fi
}

echo "== tools"
if ! setup_tools; then
  echo "check_deploy: 0 passed, 1 failed (tools could not be installed)"
  exit 1
fi
run compose
run prometheus
run dashboards
run sql
run k8s
run docker
run shell

if [ "$failed" -gt 0 ]; then echo "check_deploy: failed: ${failures[*]}" >&2; fi
echo "check_deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
