#!/usr/bin/env bash
# The compose stack in a real Docker engine, end to end (run from anywhere,
# as root, on Debian 12):
#
#   * a Docker engine: installs docker.io/docker-compose when missing,
#     starts dockerd when none answers (and stops only a dockerd it started);
#   * base images: debian:12 and debian:12-slim pulled, or made with
#     debootstrap from the Debian mirror apt uses; postgres and prometheus
#     pulled, or their stand-ins (docker/standin/) built and swapped in with
#     deploy/docker-compose.standins.yml;
#   * the CPU image from docker/cpu.Dockerfile: from the binaries of a host
#     build (--prebuilt BUILD_DIR: docker/stage-prebuilt.sh, what CI does)
#     or compiled in the image (--from-source, the default without
#     --prebuilt);
#   * first run: scripts/compose_up.sh --init-only writes the env file (mode
#     600, random secrets, never overwritten) and the TLS certificates (keys
#     600); without an env file compose fails naming compose_up.sh;
#   * postgres, prometheus, coordinator, learner-cpu and two actors up and
#     healthy (mutual TLS and the token everywhere; no secret in any
#     process's command line; the servers say `security: TLS on`);
#   * every Prometheus target up; the small study through the `cli`
#     service; once the database shows a run in progress the learner
#     process is SIGKILLed and must be restarted by its restart policy; the
#     study completes with every trial final, a leaderboard and the exported
#     policy on the shared volume; every expression of deploy/promql.txt
#     returns data at some point during the study (GPU-only ones are
#     reported as skipped when the stack has no GPU telemetry);
#   * `down -v`: no container, network or volume of the project is left.
#
# Everything runs under a unique compose project name (ristretto-test-PID)
# with host ports chosen by Docker, so it touches no other stack. The last
# line is `N passed, M failed`; the exit status is non-zero on any failure,
# 77 (skipped) when not root.
#
# Usage: scripts/compose_test.sh [--prebuilt BUILD_DIR | --from-source] [--keep] [--no-kill]
#   --keep     leave the stack up at the end (for debugging; prints how to
#              take it down)
#   --no-kill  do not kill the learner (to time the study undisturbed)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

prebuilt=
keep=0
kill_learner=1
while [ "$#" -gt 0 ]; do
  case "$1" in
    --prebuilt) prebuilt=$(cd "${2:?--prebuilt needs a build directory}" && pwd) || exit 2; shift 2 ;;
    --from-source) prebuilt=; shift ;;
    --keep) keep=1; shift ;;
    --no-kill) kill_learner=0; shift ;;
    *) echo "usage: $0 [--prebuilt BUILD_DIR | --from-source] [--keep] [--no-kill]" >&2; exit 2 ;;
  esac
done

passed=0
failed=0
ok() { echo "ok   - $*"; passed=$((passed + 1)); }
bad() { echo "FAIL - $*"; failed=$((failed + 1)); }
note() { echo "compose_test: $*"; }
summary() { echo "$passed passed, $failed failed"; }

if [ "$(id -u)" != 0 ]; then
  note "skipped: needs root (installs and starts a Docker engine)"
  summary
  exit 77
fi

WORK=$(mktemp -d /tmp/ristretto-compose-test.XXXXXX)
PROJECT=ristretto-test-$$
IMAGE=ristretto-cpu:compose-test
STUDY=small
dockerd_pid=
stack_up=0

# Debian's docker.io client (with BuildKit) before any other docker on PATH:
# docker-compose 1.29 runs `docker build` from PATH.
export PATH="/usr/bin:/usr/sbin:$PATH" DOCKER_BUILDKIT=1 COMPOSE_DOCKER_CLI_BUILD=1
DOCKER=/usr/bin/docker

elapsed() { echo $(($(date +%s) - $1)); }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 2 s until it
# succeeds. The bound only turns a hang into a failure; correctness never
# depends on it.
wait_for() {
  local limit=$1 what=$2 start
  shift 2
  start=$(date +%s)
  until "$@"; do
    if [ "$(elapsed "$start")" -ge "$limit" ]; then
      note "gave up after ${limit}s waiting for $what"
      return 1
    fi
    sleep 2
  done
}

teardown() {
  if [ "$stack_up" = 1 ] && [ "$keep" = 0 ]; then
    dc down -v --remove-orphans --timeout 30 >"$WORK/down.log" 2>&1
    stack_up=0
  fi
  if [ -n "$dockerd_pid" ] && [ "$keep" = 0 ]; then
    kill "$dockerd_pid" 2>/dev/null
    wait "$dockerd_pid" 2>/dev/null
    dockerd_pid=
  fi
}
on_exit() {
  teardown
  rm -rf "$WORK"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

############################ engine ############################
missing=()
for tool in docker:docker.io docker-compose:docker-compose debootstrap:debootstrap \
            jq:jq curl:curl openssl:openssl; do
  [ -x "/usr/bin/${tool%%:*}" ] || [ -x "/usr/sbin/${tool%%:*}" ] || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  note "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
         "${missing[@]}" >"$WORK/apt.log" 2>&1 \
    || { bad "install ${missing[*]} (see apt-get output)"; cat "$WORK/apt.log"; summary; exit 1; }
fi
COMPOSE=(/usr/bin/docker-compose)

if ! "$DOCKER" info >/dev/null 2>&1; then
  note "no Docker engine answers; starting dockerd (log: $WORK/dockerd.log)"
  dockerd >"$WORK/dockerd.log" 2>&1 &
  dockerd_pid=$!
  if wait_for 120 "dockerd to answer" "$DOCKER" info >/dev/null 2>&1; then
    ok "started dockerd (pid $dockerd_pid)"
  else
    bad "dockerd did not start"; tail -20 "$WORK/dockerd.log"; summary; exit 1
  fi
fi
note "$("$DOCKER" version --format 'engine {{.Server.Version}}, client {{.Client.Version}}'), $("${COMPOSE[@]}" version --short 2>/dev/null | sed 's/^/docker-compose /')"

############################ base images ############################
image_exists() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
try_pull() { image_exists "$1" || timeout 120 "$DOCKER" pull -q "$1" >/dev/null 2>&1; }

# The first http(s) Debian mirror apt uses (one-line or deb822 sources).
apt_mirror() {
  {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" { print $2 }'
  } | grep -v -e security -e '^$' | grep -m1 -i debian || echo http://deb.debian.org/debian
}

if ! try_pull debian:12; then
  mirror=$(apt_mirror)
  note "debian:12 cannot be pulled; debootstrap --variant=minbase bookworm from $mirror"
  start=$(date +%s)
  if debootstrap --variant=minbase bookworm "$WORK/rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 \
     && tar -C "$WORK/rootfs" -c . | "$DOCKER" import -c 'CMD ["bash"]' - debian:12 >/dev/null; then
    ok "debian:12 made locally with debootstrap ($(elapsed "$start") s)"
  else
    bad "debootstrap of debian:12"; tail -20 "$WORK/debootstrap.log"
  fi
  rm -rf "$WORK/rootfs"
fi
if ! try_pull debian:12-slim; then
  "$DOCKER" tag debian:12 debian:12-slim && note "debian:12-slim is a tag of the local debian:12"
fi
if image_exists debian:12 && image_exists debian:12-slim; then ok "base images debian:12, debian:12-slim"; else bad "base images"; fi

compose_files=(-f deploy/docker-compose.yml)
if try_pull postgres:15-bookworm && try_pull prom/prometheus:v2.53.4; then
  note "upstream postgres and prometheus images pulled"
else
  note "postgres:15-bookworm or prom/prometheus cannot be pulled: building the stand-ins (docker/standin/)"
  compose_files+=(-f deploy/docker-compose.standins.yml)
  start=$(date +%s)
  if "$DOCKER" build -q -f docker/standin/postgres.Dockerfile -t ristretto-standin-postgres:15 . >"$WORK/standin.log" 2>&1 \
     && "$DOCKER" build -q -f docker/standin/prometheus.Dockerfile -t ristretto-standin-prometheus:2 . >>"$WORK/standin.log" 2>&1; then
    ok "stand-in images built ($(elapsed "$start") s)"
  else
    bad "stand-in images"; tail -30 "$WORK/standin.log"
  fi
fi

############################ CPU image ############################
build_args=(--build-arg BINARIES=source)
how="from source"
if [ -n "$prebuilt" ]; then
  if docker/stage-prebuilt.sh "$prebuilt" >"$WORK/stage.log" 2>&1; then
    build_args=(--build-arg BINARIES=prebuilt)
    how="prebuilt binaries of $prebuilt"
  else
    bad "staging the binaries of $prebuilt"; cat "$WORK/stage.log"; summary; exit 1
  fi
fi
start=$(date +%s)
if "$DOCKER" build --progress=plain -f docker/cpu.Dockerfile "${build_args[@]}" -t "$IMAGE" . >"$WORK/build.log" 2>&1; then
  ok "CPU image built, $how: $(elapsed "$start") s, $("$DOCKER" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}')"
else
  bad "CPU image build ($how)"; tail -40 "$WORK/build.log"; summary; exit 1
fi

############################ first run ############################
# Without an env file compose refuses, naming what to run.
: >"$WORK/empty.env"
if env -u POSTGRES_PASSWORD -u GRAFANA_DB_PASSWORD -u GF_ADMIN_PASSWORD -u RISTRETTO_TOKEN -u RISTRETTO_ACTOR_TOKEN -u RISTRETTO_LEARNER_TOKEN \
     "${COMPOSE[@]}" -f deploy/docker-compose.yml --env-file "$WORK/empty.env" config >/dev/null 2>"$WORK/noenv.err"; then
  bad "compose without an env file should fail"
elif grep -q "run scripts/compose_up.sh" "$WORK/noenv.err"; then
  ok "compose without deploy/.env fails: ...$(grep -o 'deploy/.env is missing or incomplete; run scripts/compose_up.sh[a-z ,]*' "$WORK/noenv.err" | tail -n 1)"
else
  bad "compose without an env file fails without naming scripts/compose_up.sh: $(cat "$WORK/noenv.err")"
fi

ENV_FILE=$WORK/env
TLS_DIR=$WORK/tls
export RISTRETTO_ENV_FILE=$ENV_FILE RISTRETTO_TLS_DIR=$TLS_DIR
if scripts/compose_up.sh --init-only >"$WORK/init.log" 2>&1; then
  ok "compose_up.sh --init-only: $(head -1 "$WORK/init.log")"
else
  bad "compose_up.sh --init-only"; cat "$WORK/init.log"
fi
value() { sed -n "s/^$1=//p" "$ENV_FILE" | tail -n 1; }
TOKEN=$(value RISTRETTO_TOKEN)
ACTOR_TOKEN=$(value RISTRETTO_ACTOR_TOKEN)
LEARNER_TOKEN=$(value RISTRETTO_LEARNER_TOKEN)
SECRETS=("$TOKEN" "$ACTOR_TOKEN" "$LEARNER_TOKEN" "$(value POSTGRES_PASSWORD)" "$(value GRAFANA_DB_PASSWORD)" "$(value GF_ADMIN_PASSWORD)")
modes=$(stat -c '%a' "$ENV_FILE" "$TLS_DIR"/*.key 2>/dev/null | sort -u | tr '\n' ' ')
if [ "$modes" = "600 " ] && [[ $TOKEN =~ ^[0-9a-f]{64}$ ]] && [[ $ACTOR_TOKEN =~ ^[0-9a-f]{64}$ ]] &&
   [[ $LEARNER_TOKEN =~ ^[0-9a-f]{64}$ ]] && [ "$TOKEN" != "$ACTOR_TOKEN" ] &&
   [ "$TOKEN" != "$LEARNER_TOKEN" ] && [ "$ACTOR_TOKEN" != "$LEARNER_TOKEN" ] &&
   ! grep -q change-me "$ENV_FILE"; then
  ok "env file and keys mode 600, three distinct random tokens (cluster, actors', learners') and passwords"
else
  bad "env file/keys: modes '$modes', token '${#TOKEN}' chars, placeholders left: $(grep -c change-me "$ENV_FILE")"
fi
sum=$(sha256sum "$ENV_FILE" "$TLS_DIR"/*)
scripts/compose_up.sh --init-only >/dev/null 2>&1
if [ "$sum" = "$(sha256sum "$ENV_FILE" "$TLS_DIR"/*)" ]; then
  ok "a second compose_up.sh keeps the env file and certificates"
else
  bad "a second compose_up.sh changed the env file or certificates"
fi
# This test's own settings: its image, the CPU learner, any free host port.
cat >>"$ENV_FILE" <<EOF
RISTRETTO_IMAGE=$IMAGE
COMPOSE_PROFILES=cpu
COORDINATOR_HOST_PORT=0
LEARNER_HOST_PORT=0
PROMETHEUS_HOST_PORT=0
GRAFANA_HOST_PORT=0
ACTOR_ENVS=16
EOF

dc() { "${COMPOSE[@]}" -p "$PROJECT" "${compose_files[@]}" --env-file "$ENV_FILE" "$@"; }
cli() { dc run --rm -T cli "$@"; }
sql() { dc exec -T postgres psql -U ristretto -d ristretto -tAXc "$1" 2>/dev/null; }
cid() { dc ps -q "$1" | head -n 1; }
health() { "$DOCKER" inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1" 2>/dev/null; }

############################ stack ############################
SERVICES=(postgres prometheus coordinator learner-cpu actor)
start=$(date +%s)
stack_up=1
if dc up -d --no-build --scale actor=2 "${SERVICES[@]}" >"$WORK/up.log" 2>&1; then
  ok "docker-compose up -d --scale actor=2 ${SERVICES[*]}"
else
  bad "docker-compose up"; tail -30 "$WORK/up.log"
fi
all_healthy() {
  local c n=0
  for c in $(dc ps -q "${SERVICES[@]}"); do
    [ "$(health "$c")" = healthy ] || return 1
    n=$((n + 1))
  done
  [ "$n" -eq 6 ]
}
if wait_for 600 "six healthy containers" all_healthy; then
  ok "postgres, prometheus, coordinator, learner-cpu and 2 actors healthy: $(elapsed "$start") s after up"
else
  bad "stack not healthy"; dc ps; dc logs --tail 30 coordinator learner-cpu actor
fi
if [ "$(dc ps -a -q tls-init | xargs -r "$DOCKER" inspect -f '{{.State.ExitCode}}')" = 0 ]; then
  ok "tls-init installed the certificates and exited 0"
else
  bad "tls-init"; dc logs tls-init
fi

# No secret in any command line (docker inspect and every process's argv).
leaks=0
for c in $(dc ps -q); do
  [ "$("$DOCKER" inspect -f '{{.State.Running}}' "$c")" = true ] || continue  # tls-init has exited
  argv="$("$DOCKER" inspect -f '{{.Path}} {{json .Args}}' "$c") $("$DOCKER" top "$c" -eo pid,args)"
  for s in "${SECRETS[@]}"; do
    if [ -n "$s" ] && [[ $argv == *"$s"* ]]; then
      leaks=$((leaks + 1)); note "secret in the command line of $("$DOCKER" inspect -f '{{.Name}}' "$c")"
    fi
  done
done
if [ "$leaks" = 0 ] && [ -n "$TOKEN" ]; then ok "no token or password in any container's command line"; else bad "$leaks secrets in command lines"; fi
# Actors hold the actors' token, never the cluster token.
actor_envs=$(for c in $(dc ps -q actor); do "$DOCKER" inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$c"; done)
if [ -n "$actor_envs" ] && grep -qxF "RISTRETTO_TOKEN=$ACTOR_TOKEN" <<<"$actor_envs" &&
   ! grep -qF "$TOKEN" <<<"$actor_envs"; then
  ok "actors hold the actors' token, not the cluster token"
else
  bad "actors' environment: the actors' token missing or the cluster token present"
fi
# Learners hold the learners' token (it only registers), never the
# cluster (operators') token nor the actors' token.
learner_envs=$(for c in $(dc ps -q learner-cpu); do "$DOCKER" inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$c"; done)
if [ -n "$learner_envs" ] && grep -qxF "RISTRETTO_TOKEN=$LEARNER_TOKEN" <<<"$learner_envs" &&
   ! grep -qF "$TOKEN" <<<"$learner_envs" && ! grep -qF "$ACTOR_TOKEN" <<<"$learner_envs"; then
  ok "learners hold the learners' token, not the cluster or the actors' token"
else
  bad "learners' environment: the learners' token missing or another role's token present"
fi
procs=$(for c in $(dc ps -q coordinator learner-cpu actor); do "$DOCKER" top "$c" -eo pid,uid,args | awk '$3 ~ /^ristretto-(coordinator|learner|actor)$/ {print $2, $3}'; done)
if [ "$(wc -l <<<"$procs")" -eq 4 ] && [ "$(awk '$1 == 10001' <<<"$procs" | wc -l)" -eq 4 ]; then
  ok "the 4 ristretto processes run as uid 10001"
else
  bad "ristretto processes (uid, name): $(tr '\n' ';' <<<"$procs")"
fi

# TLS: both servers say so, and present a certificate of the stack's CA
# for their service name.
for s in coordinator learner-cpu; do
  line=$(dc logs --no-color "$s" 2>/dev/null | grep -m1 -o 'security: .*')
  if [[ $line == *"security: TLS on"* ]]; then ok "$s: $line"; else bad "$s: no 'security: TLS on' line (${line:-none})"; fi
done
for pair in coordinator:50050 learner-cpu:50051; do
  s=${pair%%:*}
  name=${s%-cpu}
  addr=$(dc port "$s" "${pair#*:}" 2>/dev/null)
  # -verify_return_error: a certificate that does not verify (CA, name)
  # aborts the handshake, so the line below only appears on success.
  timeout 30 openssl s_client -connect "$addr" -CAfile "$TLS_DIR/ca.pem" -verify_return_error \
    -verify_hostname "$name" -cert "$TLS_DIR/client.pem" -key "$TLS_DIR/client.key" \
    </dev/null >"$WORK/s_client.log" 2>&1
  if grep -q 'Verify return code: 0 (ok)' "$WORK/s_client.log"; then
    ok "$s ($addr): TLS certificate for '$name' verified against the stack's CA"
  else
    bad "$s ($addr): TLS handshake"; tail -5 "$WORK/s_client.log"
  fi
  if curl -s -o /dev/null --max-time 10 --http2-prior-knowledge "http://$addr/"; then
    bad "$s answers plaintext HTTP/2"
  else
    ok "$s refuses plaintext HTTP/2"
  fi
done

# Prometheus: every target up (the coordinator, the learner, both actors
# and Prometheus itself).
PROM=$(dc port prometheus 9090)
targets() { curl -fsS --max-time 10 "http://$PROM/api/v1/targets" | jq -r '.data.activeTargets[] | "\(.labels.job) \(.health)"' | sort; }
targets_up() {
  local t
  t=$(targets) || return 1
  [ "$(grep -c ' up$' <<<"$t")" -eq 5 ] && ! grep -qv ' up$' <<<"$t"
}
if wait_for 180 "5 Prometheus targets up" targets_up; then
  ok "Prometheus targets up: $(targets | awk '{print $1}' | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
else
  bad "Prometheus targets: $(targets | tr '\n' ';')"
fi

############################ study ############################
mapfile -t EXPRS < <(grep -v -e '^\s*$' -e '^\s*#' deploy/promql.txt)
declare -A seen=()
GPU_ONLY='ristretto_gpu_(utilization|memory|power|temperature|clock)|ristretto_learner_gpu_busy'
poll_promql() {
  local e n
  for e in "${EXPRS[@]}"; do
    [ -z "${seen[$e]:-}" ] || continue
    n=$(curl -fsS --max-time 10 -G --data-urlencode "query=$e" "http://$PROM/api/v1/query" | jq -r '.data.result | length' 2>/dev/null)
    if [ "${n:-0}" -gt 0 ]; then seen[$e]=1; fi
  done
}
study_state() { sql "SELECT state FROM studies WHERE name = '$STUDY'"; }
run_in_progress() {
  [ "$(sql "SELECT count(*) FROM runs r JOIN studies s ON s.id = r.study_id WHERE s.name = '$STUDY' AND r.state = 'leased' AND r.env_steps > 0")" -gt 0 ] 2>/dev/null
}

study_started=0
if cli study create /usr/share/ristretto/studies/small.yaml >"$WORK/cli.log" 2>&1 \
   && cli study start "$STUDY" >>"$WORK/cli.log" 2>&1; then
  ok "cli: study create + start $STUDY"
  study_started=1
else
  bad "cli: study create/start"; cat "$WORK/cli.log"
fi
study_start=$(date +%s)

# Kill the learner once the database shows a run in progress.
killed=0
if [ "$kill_learner" = 0 ]; then
  note "--no-kill: the learner is not killed"
elif [ "$study_started" = 1 ] && wait_for 600 "a leased run with env steps" run_in_progress; then
  learner=$(cid learner-cpu)
  restarts0=$("$DOCKER" inspect -f '{{.RestartCount}}' "$learner")
  init_pid=$("$DOCKER" inspect -f '{{.State.Pid}}' "$learner")
  pid=$(pgrep -P "$init_pid" | head -n 1)
  if [ -n "$pid" ] && [ "$pid" -gt 1 ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q '^ristretto-learner '; then
    # SIGKILL to the learner process, like a crash or the OOM killer. (`docker
    # kill` is a manual stop to Docker: the restart policy does not apply.)
    # The runs it held, as "id:attempts" (the kill may land between two
    # queries; a run finished meanwhile only shortens the list).
    held=$(sql "SELECT string_agg(id || ':' || attempts, ' ') FROM runs WHERE state = 'leased'")
    kill -KILL "$pid" && killed=1
    note "SIGKILLed ristretto-learner (host pid $pid) holding runs (id:attempts) ${held:-none}"
  else
    bad "no ristretto-learner process under the learner container's init (pid ${init_pid:-?})"
  fi
fi
restarted() {
  [ "$("$DOCKER" inspect -f '{{.RestartCount}}' "$learner")" -gt "$restarts0" ] && [ "$(health "$learner")" = healthy ]
}
if [ "$kill_learner" = 0 ]; then
  :
elif [ "$killed" = 1 ] && wait_for 300 "the learner to be restarted and healthy" restarted; then
  ok "learner restarted by its restart policy (restart count $("$DOCKER" inspect -f '{{.RestartCount}}' "$learner")) and healthy again"
else
  bad "learner kill and restart"
fi

# The runs the killed learner held must be taken from it: expired or
# released and leased again (a higher attempt count), or finished. If the
# restarted learner (same member id) finishes a run of its own while one of
# them is still leased under the same attempt, nothing will ever take it
# back: its heartbeats extend every lease of that member id.
stale_runs() {  # prints the held runs still leased under the same attempt
  local r
  for r in $held; do
    [ "$(sql "SELECT state = 'leased' AND attempts = ${r#*:} FROM runs WHERE id = ${r%%:*}")" = t ] && printf '%s ' "${r%%:*}"
  done
}
restart_time=$(date -u '+%Y-%m-%d %H:%M:%S')
recovered=
held_runs_decided() {
  [ -z "$(stale_runs)" ] && { recovered=1; return 0; }
  [ "$(sql "SELECT count(*) FROM leases WHERE granted_at > '$restart_time+00' AND outcome = 'done'")" -gt 0 ] \
    && { recovered=0; return 0; }
  return 1
}
if [ "$killed" = 1 ] && [ -n "$held" ] && wait_for 600 "the killed learner's runs to be taken back" held_runs_decided; then
  if [ "$recovered" = 1 ]; then
    ok "the runs the killed learner held ($held) were taken back (re-leased or finished)"
  else
    bad "runs $(stale_runs)still leased to the restarted learner's member id under their old attempt although it has finished a run since: the coordinator neither releases a re-registered member's leases nor expires runs its heartbeats do not report"
    study_started=0  # the study cannot finish; do not wait for it
  fi
fi

# Until the study is done: collect which PromQL expressions returned data.
done_or_poll() {
  poll_promql
  [ "$(study_state)" = "done" ]
}
if [ "$study_started" = 1 ] && wait_for 1200 "study $STUDY to finish" done_or_poll; then
  STUDY_SECONDS=$(elapsed "$study_start")
  ok "study $STUDY done in $STUDY_SECONDS s (start to done$([ "$killed" = 1 ] && echo ', learner killed once'))"
else
  bad "study $STUDY did not finish: $(study_state)"; cli study show "$STUDY"
fi
poll_promql

counts=$(sql "SELECT count(*) FILTER (WHERE t.state = 'running'), count(*) FILTER (WHERE t.state = 'complete'), count(*) FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = '$STUDY'")
IFS='|' read -r running complete total <<<"$counts"
if [ "${running:-1}" = 0 ] && [ "${complete:-0}" -gt 0 ]; then
  ok "every trial final: $total trials, $complete complete, none running"
else
  bad "trials: '$counts' (running|complete|total)"
fi
if cli study best "$STUDY" >"$WORK/best.log" 2>&1 && [ -s "$WORK/best.log" ]; then
  ok "cli study best: $(grep -m1 -i -e score -e sharpe "$WORK/best.log" | cut -c1-100)"
else
  bad "cli study best"; cat "$WORK/best.log"
fi
# One policy, or with refits (small.yaml has 3) one per refit-<r>/.
if cli study export "$STUDY" --out /data/export >"$WORK/export.log" 2>&1 \
   && dc run --rm -T --entrypoint find cli /data/export -type f >"$WORK/ls.log" 2>>"$WORK/export.log" \
   && grep -qxE '/data/export/(refit-0/)?policy\.pt' "$WORK/ls.log" \
   && grep -qxE '/data/export/(refit-0/)?contract\.json' "$WORK/ls.log" \
   && grep -qx /data/export/evaluation.json "$WORK/ls.log"; then
  ok "exported policy on the shared volume: $(sed 's|^/data/export/||' "$WORK/ls.log" | sort | tr '\n' ',' | sed 's/,$//')"
else
  bad "export"; cat "$WORK/export.log" "$WORK/ls.log"
fi

# Prometheus expressions.
no_gpu=$(curl -fsS -G --data-urlencode 'query=ristretto_gpu_metrics_available{source="none"} == 1' "http://$PROM/api/v1/query" | jq -r '.data.result | length')
answered=0
skipped=()
for e in "${EXPRS[@]}"; do
  if [ -n "${seen[$e]:-}" ]; then
    answered=$((answered + 1))
  elif [ "${no_gpu:-0}" -gt 0 ] && grep -Eq "$GPU_ONLY" <<<"$e"; then
    skipped+=("$e")
  else
    bad "PromQL returned no data during the study: $e"
  fi
done
ok "PromQL: $answered of ${#EXPRS[@]} expressions of deploy/promql.txt returned data"
if [ "${#skipped[@]}" -gt 0 ]; then
  note "skipped (GPU-only; this stack reports ristretto_gpu_metrics_available{source=\"none\"}): ${#skipped[@]}"
  printf '  skipped: %s\n' "${skipped[@]}"
fi
denied=$(curl -fsS -G --data-urlencode "query=sum(ristretto_coordinator_rpc_denied_total)" "http://$PROM/api/v1/query" | jq -r '.data.result[0].value[1] // "0"')
note "ristretto_coordinator_rpc_denied_total at the end: ${denied:-?} (a learner re-registering after its restart may add one)"

############################ down ############################
if [ "$keep" = 1 ]; then
  note "--keep: the stack stays up; take it down with:"
  echo "  ${COMPOSE[*]} -p $PROJECT ${compose_files[*]} --env-file <env> down -v"
  trap - EXIT
  summary
  exit $((failed > 0))
fi
if dc down -v --remove-orphans --timeout 60 >"$WORK/down.log" 2>&1; then stack_up=0; fi
left=$("$DOCKER" ps -a -q --filter "label=com.docker.compose.project=$PROJECT"; \
       "$DOCKER" network ls -q --filter "label=com.docker.compose.project=$PROJECT"; \
       "$DOCKER" volume ls -q --filter "label=com.docker.compose.project=$PROJECT")
if [ "$stack_up" = 0 ] && [ -z "$left" ]; then
  ok "down -v: no container, network or volume of $PROJECT left"
else
  bad "down -v left: $left"; cat "$WORK/down.log"
fi
teardown
summary
[ "$failed" = 0 ]
