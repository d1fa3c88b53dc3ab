#!/usr/bin/env bash
# The compose stack in one command, first run included:
#
#   1. writes deploy/.env from deploy/.env.example once, with random
#      passwords, a random RISTRETTO_TOKEN, RISTRETTO_ACTOR_TOKEN and
#      RISTRETTO_LEARNER_TOKEN (mode 600; an existing file is never
#      changed, except that a secret a newer
#      version needs and it lacks is appended, with a message) and
#      COMPOSE_PROFILES=gpu when nvidia-smi sees a GPU, cpu otherwise;
#   2. makes development TLS certificates once with scripts/make_dev_certs.sh
#      in deploy/secrets/tls (keys mode 600; names coordinator and learner,
#      plus $RISTRETTO_CERT_NAMES, e.g. "myhost.example.org 10.0.0.5" for
#      learners or actors on other machines); put your own ca.pem,
#      server.pem/.key and client.pem/.key there instead for production;
#   3. builds the CPU image (and the CUDA learner image under profile gpu,
#      the PostgreSQL and Prometheus stand-ins when COMPOSE_FILE names
#      deploy/docker-compose.standins.yml) with BuildKit;
#   4. runs `docker-compose -f deploy/docker-compose.yml up` with the given
#      options (default: -d).
#
# Usage: scripts/compose_up.sh [--init-only] [--no-build]
#                              [--prebuilt BUILD_DIR] [UP_OPTION...]
#   --init-only   steps 1 and 2 only
#   --no-build    skip step 3 (images already built or pulled)
#   --prebuilt D  build the CPU image from the binaries of the host build D
#                 (Debian 12 host; docker/stage-prebuilt.sh) instead of
#                 compiling them in the image
# Environment: DOCKER (the docker client, default docker), COMPOSE (default
# docker-compose when installed, else "docker compose"); COMPOSE_FILE (the
# compose files, e.g. deploy/docker-compose.yml:deploy/docker-compose.standins.yml
# where postgres and prometheus cannot be pulled; default the first alone);
# RISTRETTO_ENV_FILE and RISTRETTO_TLS_DIR move deploy/.env and
# deploy/secrets/tls (used by scripts/compose_test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

init_only=0
build=1
prebuilt=
while [ "$#" -gt 0 ]; do
  case "$1" in
    --init-only) init_only=1; shift ;;
    --no-build) build=0; shift ;;
    --prebuilt) prebuilt=${2:?--prebuilt needs a build directory}; shift 2 ;;
    *) break ;;
  esac
done

env_file=${RISTRETTO_ENV_FILE:-deploy/.env}
tls_dir=${RISTRETTO_TLS_DIR:-deploy/secrets/tls}

random_hex() {  # random_hex BYTES
  od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# Step 1: deploy/.env, once.
if [ ! -e "$env_file" ]; then
  profile=cpu
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    profile=gpu
  fi
  tmp=$(mktemp "$(dirname "$env_file")/.env.XXXXXX")  # mode 600
  while IFS= read -r line; do
    case "$line" in
      POSTGRES_PASSWORD=*|GRAFANA_DB_PASSWORD=*|GF_ADMIN_PASSWORD=*)
        line="${line%%=*}=$(random_hex 16)" ;;
      RISTRETTO_TOKEN=*) line="RISTRETTO_TOKEN=$(random_hex 32)" ;;
      RISTRETTO_ACTOR_TOKEN=*) line="RISTRETTO_ACTOR_TOKEN=$(random_hex 32)" ;;
      RISTRETTO_LEARNER_TOKEN=*) line="RISTRETTO_LEARNER_TOKEN=$(random_hex 32)" ;;
      COMPOSE_PROFILES=*) line="COMPOSE_PROFILES=$profile" ;;
    esac
    printf '%s\n' "$line"
  done < deploy/.env.example > "$tmp"
  if [ "$tls_dir" != deploy/secrets/tls ]; then
    printf 'RISTRETTO_TLS_DIR=%s\n' "$(cd "$(dirname "$tls_dir")" && pwd)/$(basename "$tls_dir")" >> "$tmp"
  fi
  # ln fails when the file appeared meanwhile: never overwrite one.
  if ln "$tmp" "$env_file" 2>/dev/null; then
    echo "compose_up: wrote $env_file (random passwords and token, COMPOSE_PROFILES=$profile, mode 600)"
  fi
  rm -f "$tmp"
fi

# An env file written before actors had a token of their own: append one
# (nothing else in it changes).
if [ -e "$env_file" ] && ! grep -q '^RISTRETTO_ACTOR_TOKEN=' "$env_file"; then
  printf 'RISTRETTO_ACTOR_TOKEN=%s\n' "$(random_hex 32)" >> "$env_file"
  echo "compose_up: added a random RISTRETTO_ACTOR_TOKEN to $env_file (actors now hold their own token)"
fi
# And before learners had one.
if [ -e "$env_file" ] && ! grep -q '^RISTRETTO_LEARNER_TOKEN=' "$env_file"; then
  printf 'RISTRETTO_LEARNER_TOKEN=%s\n' "$(random_hex 32)" >> "$env_file"
  echo "compose_up: added a random RISTRETTO_LEARNER_TOKEN to $env_file (learners now hold their own token)"
fi

# Step 2: development certificates, once (make_dev_certs.sh keeps its CA).
if [ ! -s "$tls_dir/server.key" ] || [ ! -s "$tls_dir/client.key" ]; then
  # shellcheck disable=SC2086  # RISTRETTO_CERT_NAMES is a list of names
  scripts/make_dev_certs.sh "$tls_dir" coordinator learner ${RISTRETTO_CERT_NAMES:-}
fi
[ "$init_only" = 0 ] || exit 0

setting() {  # setting NAME DEFAULT: its value in the env file
  local v
  v=$(sed -n "s/^$1=//p" "$env_file" | tail -n 1)
  echo "${v:-$2}"
}
docker=${DOCKER:-docker}
if [ -n "${COMPOSE:-}" ]; then
  read -r -a compose <<< "$COMPOSE"
elif command -v docker-compose >/dev/null; then
  compose=(docker-compose)
else
  compose=("$docker" compose)
fi

# Step 3: images.
if [ "$build" = 1 ]; then
  args=()
  if [ -n "$prebuilt" ]; then
    docker/stage-prebuilt.sh "$prebuilt"
    args=(--build-arg BINARIES=prebuilt)
  fi
  DOCKER_BUILDKIT=1 "$docker" build -f docker/cpu.Dockerfile "${args[@]}" \
    -t "$(setting RISTRETTO_IMAGE ristretto-cpu:latest)" .
  if [[ ${COMPOSE_FILE:-} == *docker-compose.standins.yml* ]]; then
    DOCKER_BUILDKIT=1 "$docker" build -f docker/standin/postgres.Dockerfile -t ristretto-standin-postgres:15 .
    DOCKER_BUILDKIT=1 "$docker" build -f docker/standin/prometheus.Dockerfile -t ristretto-standin-prometheus:2 .
  fi
  if [[ ",$(setting COMPOSE_PROFILES gpu)," == *,gpu,* ]]; then
    DOCKER_BUILDKIT=1 "$docker" build -f docker/learner-cuda.Dockerfile \
      -t "$(setting RISTRETTO_LEARNER_IMAGE ristretto-learner-cuda:latest)" .
  fi
fi

# Step 4: the stack.
if [ "$#" -eq 0 ]; then set -- -d; fi
files=()
[ -n "${COMPOSE_FILE:-}" ] || files=(-f deploy/docker-compose.yml)
exec "${compose[@]}" "${files[@]}" --env-file "$(realpath "$env_file")" up --no-build "$@"
