#!/usr/bin/env bash
# Runs ctest tests several times in a row while `stress --cpu N` keeps
# every core busy, to show that the fault and integration tests wait for
# events rather than timing windows (a test that only passes on a quiet
# machine fails here).
#
#   scripts/stress_integration.sh [--runs 5] [--cpu 4] [--label integration]
#                                 [--regex REGEX] [--exclude REGEX]
#                                 [--jobs 1] [--log FILE]
#
# --jobs N runs N tests at once (ctest -j N; CI runs -j nproc): the tests
# then compete with each other as well as with stress.
#
# Needs a configured build (build/ or $BUILD_DIR) and Debian's `stress`
# package (installed with apt-get when missing and running as root).
# Prints one line per run (passed/failed, wall time, the failed tests) and
# ends with `N passed, M failed` (runs); exit status 1 when any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
cpu=4
label=integration
regex=
exclude=
log=
jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --regex) regex=$2; shift 2 ;;
    --exclude) exclude=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "stress_integration.sh: unknown argument '$1' (see --help)" >&2
       exit 2 ;;
  esac
done
case "$runs$cpu$jobs" in
  *[!0-9]*) echo "stress_integration.sh: --runs, --cpu and --jobs take integers" >&2
            exit 2 ;;
esac

build_dir=${BUILD_DIR:-build}
if [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
  echo "stress_integration.sh: no configured build in $build_dir" \
       "(run scripts/build.sh first)" >&2
  exit 2
fi
if ! command -v stress >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y --no-install-recommends stress >/dev/null 2>&1
  else
    echo "stress_integration.sh: the 'stress' package is missing" \
         "(apt-get install stress)" >&2
    exit 2
  fi
fi

stress --cpu "$cpu" >/dev/null 2>&1 &
stress_pid=$!
# stress forks its workers into its own process; stop them all on exit.
trap 'kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null || true' EXIT

select=(-L "$label")
[ -n "$regex" ] && select=(-R "$regex")
[ -n "$exclude" ] && select+=(-E "$exclude")
log=${log:-$build_dir/stress_integration.log}
: > "$log"
echo "stress --cpu $cpu on $(nproc) cores; ctest ${select[*]} -j $jobs; $runs runs;" \
     "log: $log" | tee -a "$log"

passed=0
failed=0
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  if out=$(cd "$build_dir" && ctest "${select[@]}" -j "$jobs" --output-on-failure \
             --timeout 1800 2>&1); then
    status=passed
    passed=$((passed + 1))
  else
    status=failed
    failed=$((failed + 1))
  fi
  printf '%s\n' "$out" >> "$log"
  # (grep finds nothing in a clean run: not an error here)
  summary=$(printf '%s\n' "$out" | grep -E 'tests passed|tests failed' \
              | tail -1 || true)
  failures=$(printf '%s\n' "$out" | grep -E '^\s+[0-9]+ - ' \
               | tr -s ' ' | tr '\n' ';' || true)
  echo "run $i: $status in $(( $(date +%s) - start )) s ($summary) $failures" \
    | tee -a "$log"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
