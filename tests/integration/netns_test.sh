#!/usr/bin/env bash
# Actors on "other machines": a ristretto-learner and ristretto-actors, each
# in its own network namespace, joined only by veth pairs on a private bridge
# (itself in a namespace of its own, so the host's network is not touched).
# Every namespace has loopback plus one test address in 10.213.X.0/24 and no
# default route; the learner listens on its namespace's address only.
#
#   rl-PID-sw       bridge br0 + the switch ends of the veths (no address)
#   rl-PID-learner  eth0 10.213.X.1   ristretto-learner --address 10.213.X.1
#   rl-PID-a1/a2    eth0 10.213.X.11/12  actors started with the learner
#   rl-PID-a3       eth0 10.213.X.13  an actor that joins mid-run
#
# Proves: the namespaces are isolated (addresses, routes, 127.0.0.1 of
# another namespace unreachable, the learner's socket invisible from the
# host); every actor fetches the dataset over the network into its own
# cache dir, is assigned the run and sends steps; the run trains to its
# budget with exact accounting (received = trained + dropped = sum sent);
# the actors leave with exit 0 once the run has finished. The learner and
# the actors share a token (--token-file): a learner on a non-loopback
# address without one would refuse to start (docs/security.md).
#
# Usage: netns_test.sh LEARNER_BINARY ACTOR_BINARY
# Needs root and iproute2. Exits 77 (ctest SKIP_RETURN_CODE) when network
# namespaces cannot be created here (not root, no `ip`, a container that
# forbids it), unless RISTRETTO_REQUIRE_NETNS=1, which makes that a failure.
set -euo pipefail

LEARNER_BIN=${1:?usage: netns_test.sh LEARNER_BINARY ACTOR_BINARY}
ACTOR_BIN=${2:?usage: netns_test.sh LEARNER_BINARY ACTOR_BINARY}
PORT=50651
BUDGET=${RISTRETTO_NETNS_BUDGET:-150000}
SKIP_CODE=77

log() { echo "netns_test: $*"; }

skip() {
  if [ "${RISTRETTO_REQUIRE_NETNS:-0}" = "1" ]; then
    echo "netns_test: FAIL (RISTRETTO_REQUIRE_NETNS=1): $*" >&2
    exit 1
  fi
  echo "netns_test: SKIP: $*"
  exit "$SKIP_CODE"
}

for bin in "$LEARNER_BIN" "$ACTOR_BIN"; do
  [ -x "$bin" ] || { echo "netns_test: not executable: $bin" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "'ip' (iproute2) not found; scripts/install_deps.sh installs it"

# gRPC honours proxy variables; the namespaces have no route to any proxy.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY grpc_proxy all_proxy ALL_PROXY

PREFIX="rl-$$"
NS_SW="$PREFIX-sw"
NS_L="$PREFIX-learner"
ACTORS=(a1 a2 a3)
declare -A NS_OF=([learner]="$NS_L" [a1]="$PREFIX-a1" [a2]="$PREFIX-a2" [a3]="$PREFIX-a3")
declare -A HOST_OF=([learner]=1 [a1]=11 [a2]=12 [a3]=13)
CREATED_NS=()
declare -A PID_OF=()
WORK=""
PASSED=0

# Namespaces left by an earlier run that was killed (its PID is gone).
while read -r name _; do
  if [[ "$name" =~ ^rl-([0-9]+)-(sw|learner|a[0-9]+)$ ]] &&
     ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
    log "removing stale namespace $name"
    ip netns del "$name" 2>/dev/null || true
  fi
done < <(ip netns list 2>/dev/null || true)

dump_logs() {
  [ -n "$WORK" ] || return 0
  for f in "$WORK"/*.log; do
    [ -f "$f" ] || continue
    echo "----- $(basename "$f") (last 40 lines) -----" >&2
    tail -n 40 "$f" >&2 || true
  done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local name pid
  for name in "${!PID_OF[@]}"; do
    pid=${PID_OF[$name]}
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true  # a frozen actor (see a3 below)
  done
  for name in "${!PID_OF[@]}"; do
    pid=${PID_OF[$name]}
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "${#CREATED_NS[@]}" -gt 0 ]; then
    # The veths and the bridge go with their namespaces; delete them first
    # anyway so nothing lingers while the kernel reaps the namespaces.
    for name in "${ACTORS[@]}" learner; do
      ip -n "$NS_SW" link del "sw-$name" 2>/dev/null || true
    done
    ip -n "$NS_SW" link del br0 2>/dev/null || true
    for name in "${CREATED_NS[@]}"; do
      ip netns del "$name" 2>/dev/null || true
    done
  fi
  if [ "$PASSED" = 1 ]; then
    rm -rf "$WORK"
  elif [ -n "$WORK" ]; then
    dump_logs
    echo "netns_test: logs kept in $WORK" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "netns_test: FAIL: $*" >&2
  exit 1
}

# A /24 in 10.213.0.0/16 that nothing on this host uses.
SUBNET=""
used=$(ip -o -4 addr show 2>/dev/null; ip -4 route show table all 2>/dev/null)
for x in 77 78 79 141 142 143 201 202; do
  if ! grep -q "10\.213\.$x\." <<<"$used" && ! grep -q "10\.213\.0\.0/16" <<<"$used"; then
    SUBNET="10.213.$x"
    break
  fi
done
[ -n "$SUBNET" ] || fail "every candidate subnet in 10.213.0.0/16 is in use here"
LEARNER_ADDR="$SUBNET.1"
log "subnet $SUBNET.0/24, namespaces $PREFIX-*"

# --- Topology -------------------------------------------------------------
if ! err=$(ip netns add "$NS_SW" 2>&1); then
  skip "cannot create a network namespace here: $err"
fi
CREATED_NS+=("$NS_SW")
WORK=$(mktemp -d /tmp/ristretto_netns_XXXXXX)
ip -n "$NS_SW" link set lo up
ip -n "$NS_SW" link add br0 type bridge ||
  fail "cannot create a bridge in $NS_SW (bridge module missing?)"
ip -n "$NS_SW" link set br0 up

for name in learner "${ACTORS[@]}"; do
  ns=${NS_OF[$name]}
  ip netns add "$ns"
  CREATED_NS+=("$ns")
  # No IPv6 link-local addresses: loopback + one IPv4 address, nothing else.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
  ip -n "$NS_SW" link add "sw-$name" type veth peer name eth0 netns "$ns"
  ip -n "$NS_SW" link set "sw-$name" master br0
  ip -n "$NS_SW" link set "sw-$name" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$SUBNET.${HOST_OF[$name]}/24" dev eth0
  ip -n "$ns" link set eth0 up
done

# --- Isolation ------------------------------------------------------------
for name in learner "${ACTORS[@]}"; do
  ns=${NS_OF[$name]}
  addrs=$(ip -n "$ns" -o addr show | awk '{print $2, $4}' |
          grep -v '^eth0 fe80:' | sort | tr '\n' ' ')
  want="eth0 $SUBNET.${HOST_OF[$name]}/24 lo 127.0.0.1/8 "
  [ "$addrs" = "$want" ] || [ "$addrs" = "${want}lo ::1/128 " ] ||
    fail "$ns has addresses '$addrs', want '$want'"
  links=$(ip -n "$ns" -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' |
          sort | tr '\n' ' ')
  [ "$links" = "eth0 lo " ] || fail "$ns has interfaces '$links', want 'eth0 lo'"
  routes=$(ip -n "$ns" route show; ip -n "$ns" -6 route show 2>/dev/null || true)
  if grep -q default <<<"$routes"; then fail "$ns has a default route: $routes"; fi
done
log "isolation: each namespace has only lo + eth0 (its 10.213 address), no default route"

# --- Learner --------------------------------------------------------------
wait_for_log() {  # FILE PATTERN SECONDS PID
  local deadline=$((SECONDS + $3))
  while ! grep -q -- "$2" "$1" 2>/dev/null; do
    kill -0 "$4" 2>/dev/null || fail "process $4 exited before '$2' appeared in $(basename "$1")"
    [ "$SECONDS" -lt "$deadline" ] || fail "'$2' did not appear in $(basename "$1") within $3 s"
    sleep 0.1
  done
}

wait_exit() {  # NAME SECONDS -> sets EXIT_CODE
  local pid=${PID_OF[$1]} deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "$1 still running after $2 s"
    sleep 0.1
  done
  EXIT_CODE=0
  wait "$pid" || EXIT_CODE=$?
  unset "PID_OF[$1]"
}

start_actor() {  # NAME
  local name=$1
  mkdir -p "$WORK/cache-$name"
  ip netns exec "${NS_OF[$name]}" "$ACTOR_BIN" \
    --learner "$LEARNER_ADDR:$PORT" --envs 8 --actor-id "$name" \
    --cache-dir "$WORK/cache-$name" --seed "${HOST_OF[$name]}" \
    --token-file "$WORK/token" --exit-when-idle >"$WORK/$name.log" 2>&1 &
  PID_OF[$name]=$!
}

# The learner's token, mode 600 like every secret file.
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$WORK/token")

START=$SECONDS
ip netns exec "$NS_L" "$LEARNER_BIN" \
  --address "$LEARNER_ADDR" --port "$PORT" --run-dir "$WORK/runs" \
  --token-file "$WORK/token" \
  --synthetic-rows 1200 --synthetic-assets 3 --policy-hidden 32,32 \
  --samples-per-update 1024 --rollout 32 --episode 200 --epochs 2 \
  --minibatch 512 --budget "$BUDGET" --exit-when-done \
  >"$WORK/learner.log" 2>&1 &
PID_OF[learner]=$!
wait_for_log "$WORK/learner.log" "listening on $LEARNER_ADDR:$PORT" 60 "${PID_OF[learner]}"
log "learner listening on $LEARNER_ADDR:$PORT in $NS_L"

tcp_open() {  # NS HOST PORT: succeeds if a TCP connection opens
  ip netns exec "$1" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null
}
tcp_open "${NS_OF[a1]}" "$LEARNER_ADDR" "$PORT" ||
  fail "${NS_OF[a1]} cannot reach the learner at $LEARNER_ADDR:$PORT"
! tcp_open "${NS_OF[a1]}" 127.0.0.1 "$PORT" ||
  fail "${NS_OF[a1]} reaches 127.0.0.1:$PORT: not isolated from the learner's namespace"
! tcp_open "$NS_L" 127.0.0.1 "$PORT" ||
  fail "the learner answers on 127.0.0.1:$PORT; it should listen on $LEARNER_ADDR only"
if command -v ss >/dev/null 2>&1; then
  host_sockets=$(ss -Hltn 2>/dev/null || true)
  learner_sockets=$(ip netns exec "$NS_L" ss -Hltn)
  if grep -qF "$LEARNER_ADDR:$PORT" <<<"$host_sockets"; then
    fail "the learner's socket is visible in the host's namespace"
  fi
  grep -qF "$LEARNER_ADDR:$PORT" <<<"$learner_sockets" ||
    fail "the learner's socket is not in $NS_L: $learner_sockets"
fi
log "isolation: learner reachable from ${NS_OF[a1]} only via $LEARNER_ADDR; 127.0.0.1:$PORT is closed there"

# --- Actors join, train, a third joins mid-run ------------------------------
start_actor a1
start_actor a2
wait_for_log "$WORK/a1.log" "assigned run run-0" 60 "${PID_OF[a1]}"
wait_for_log "$WORK/a2.log" "assigned run run-0" 60 "${PID_OF[a2]}"
log "a1, a2 assigned run-0 after $((SECONDS - START)) s"

# a1 and a2 are frozen until a3 has its assignment, so the run cannot reach
# its budget while a3 starts, however slow the machine (no timing window).
kill -STOP "${PID_OF[a1]}" "${PID_OF[a2]}"
if grep -q "learner: run run-0" "$WORK/learner.log"; then
  kill -CONT "${PID_OF[a1]}" "${PID_OF[a2]}"
  fail "the run finished before a3 could join; raise the budget (RISTRETTO_NETNS_BUDGET)"
fi
start_actor a3
wait_for_log "$WORK/a3.log" "assigned run run-0" 120 "${PID_OF[a3]}"
kill -CONT "${PID_OF[a1]}" "${PID_OF[a2]}"
log "a3 joined mid-run after $((SECONDS - START)) s"

wait_exit learner 240
[ "$EXIT_CODE" -eq 0 ] || fail "learner exited with $EXIT_CODE"
log "learner finished after $((SECONDS - START)) s"

# --- Actors leave ---------------------------------------------------------
field() {  # FILE LINE_MARKER KEY -> integer (empty if absent)
  { grep -m1 -- "$2" "$1" || true; } | grep -oE "(^| )$3=-?[0-9]+" |
    sed -n '1s/.*=//p' || true
}

total_sent=0
for name in "${ACTORS[@]}"; do
  wait_exit "$name" 40
  [ "$EXIT_CODE" -eq 0 ] || fail "actor $name exited with $EXIT_CODE"
  f="$WORK/$name.log"
  grep -q "assigned run run-0" "$f" || fail "actor $name was never assigned run-0"
  grep -q "(run finished)" "$f" || fail "actor $name did not see the run finish"
  sent=$(field "$f" "actor $name: env_steps_sent=" env_steps_sent)
  [ "${sent:-0}" -gt 0 ] || fail "actor $name sent no env steps ('$sent')"
  total_sent=$((total_sent + sent))
  versions=$(field "$f" "actor $name: env_steps_sent=" versions)
  # Joined while training: the run published new weights after it joined.
  [ "${versions:-0}" -ge 2 ] ||
    fail "actor $name received ${versions:-no} weight versions; it did not train with the run"
  # The dataset came over the network into this actor's own cache.
  id=$(grep -m1 -oE "actor $name: dataset [0-9a-f]+" "$f" | awk '{print $4}' || true)
  [ -n "$id" ] || fail "actor $name did not report a dataset"
  cached="$WORK/cache-$name/$id.rds"
  [ -f "$cached" ] || fail "no $cached: actor $name did not fetch the dataset"
  cmp -s "$cached" "$WORK/runs/dataset.rds" ||
    fail "$cached differs from the learner's dataset"
  [ "$(stat -c %i "$cached")" != "$(stat -c %i "$WORK/runs/dataset.rds")" ] ||
    fail "$cached is the learner's file, not a fetched copy"
  log "actor $name: exit 0, env_steps_sent=$sent, versions=$versions, dataset ${id:0:12} fetched into cache-$name"
done

# --- The run's accounting -------------------------------------------------
L="$WORK/learner.log"
version=$(field "$L" "learner: run run-0" version)
received=$(field "$L" "learner: run run-0" received)
trained=$(field "$L" "learner: run run-0" trained)
dropped=$(field "$L" "learner: run run-0" dropped)
finished=$(field "$L" "learner: run run-0" finished)
if [ -z "$trained" ] || [ -z "$received" ] || [ -z "$dropped" ] || [ -z "$version" ]; then
  fail "no summary line for run-0 in the learner's log"
fi
[ "$finished" = 1 ] || fail "run-0 finished=$finished"
[ "$trained" -ge "$BUDGET" ] || fail "trained=$trained < budget $BUDGET"
[ "$version" -ge 1 ] || fail "version=$version: no update was made"
[ "$received" -eq $((trained + dropped)) ] ||
  fail "received=$received != trained=$trained + dropped=$dropped"
[ "$total_sent" -eq "$received" ] ||
  fail "actors sent $total_sent env steps, the learner received $received"
log "run-0: version=$version received=$received trained=$trained dropped=$dropped (budget $BUDGET) = sum sent"

PASSED=1
log "PASS in $((SECONDS - START)) s"
