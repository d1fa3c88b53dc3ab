#!/usr/bin/env bash
# scripts/bench_gpu.sh with a learner no actor feeds (ACTORS=0): the script
# must say so and exit 1 once STALL_S has passed, not wait for a budget
# that never comes (what it did on an H100 when every actor's rollout
# failed). Usage: bench_gpu_unfed_test.sh BUILD_DIR
set -uo pipefail
out=$(ACTORS=0 RUNS=1 STALL_S=3 BUILD_DIR="$1" \
  bash "$(dirname "$0")/../../scripts/bench_gpu.sh" --quick 2>&1)
rc=$?
echo "$out"
if [ "$rc" != 1 ]; then echo "FAIL: exit $rc, want 1"; exit 1; fi
if ! grep -q "N=1: no env step reached the learner in 3 s" <<<"$out"; then
  echo "FAIL: the unfed learner was not reported"; exit 1
fi
echo PASS
