#!/usr/bin/env bash
# Measures a whole `.ci/run` as CI runs it: a clean clone of this
# repository's committed HEAD with ../shared beside it, an empty compiler
# cache and, unless --keep-images, no debian:12 and no ristretto-* image
# (the compose test's base, stand-ins and CPU image, and any other
# ristretto image) so that the compose test makes them from scratch.
# Packages already installed stay installed (apt-get finds nothing to
# do): time a fresh install separately with --apt, which installs
# scripts/install_deps.sh's packages into a new debian:12 container.
#
#   scripts/measure_ci.sh [--dir DIR (/tmp/ristretto-ci)] [--keep-images]
#   scripts/measure_ci.sh --apt
#
# Prints the phase lines of .ci/run, the ctest summary and the total; the
# whole log is DIR/ci.log. Run it on a quiet machine, as root (the compose
# test needs Docker).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=/tmp/ristretto-ci
keep_images=0
apt=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --keep-images) keep_images=1; shift ;;
    --apt) apt=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "measure_ci.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
docker_cli=docker
[ -x /usr/bin/docker ] && docker_cli=/usr/bin/docker

if [ "$apt" = 1 ]; then
  # The package list is install_deps.sh's own: run the script itself in a
  # fresh container (it runs apt-get update first).
  t0=$(date +%s)
  "$docker_cli" run --rm -v "$root/scripts:/s:ro" debian:12 \
    bash -c 'export DEBIAN_FRONTEND=noninteractive; /s/install_deps.sh' >/tmp/measure-ci-apt.log 2>&1 ||
    { tail -20 /tmp/measure-ci-apt.log; exit 1; }
  echo "install_deps.sh in a fresh debian:12 container: $(($(date +%s) - t0)) s" \
    "(log /tmp/measure-ci-apt.log)"
  exit 0
fi

shared=$(cd "$root/../shared" && pwd)
rm -rf "$dir"
mkdir -p "$dir"
git clone -q --no-hardlinks "$root" "$dir/main"
ln -s "$shared" "$dir/shared"
echo "clone of $(git -C "$dir/main" log --oneline -1) in $dir/main"
if [ "$keep_images" = 0 ] && "$docker_cli" info >/dev/null 2>&1; then
  mapfile -t images < <("$docker_cli" images --format '{{.Repository}}:{{.Tag}}' |
    grep -E '^(debian:12|ristretto-)' || true)
  [ "${#images[@]}" -gt 0 ] && "$docker_cli" rmi -f "${images[@]}" >/dev/null
  "$docker_cli" builder prune -af >/dev/null 2>&1 || true
  echo "removed images: ${images[*]:-none}"
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
rc=0
(cd "$dir/main" && CCACHE_DIR="$dir/ccache" .ci/run) >"$dir/ci.log" 2>&1 || rc=$?
total=$(($(date +%s) - t0))
grep -E '^== \.ci/run:|tests passed|tests failed|Total Test time' "$dir/ci.log" || true
echo ".ci/run exit $rc, total $total s ($((total / 60)) min); load average after:" \
  "$(cut -d' ' -f1-3 /proc/loadavg); log $dir/ci.log"
exit "$rc"
