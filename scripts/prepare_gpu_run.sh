#!/usr/bin/env bash
# Gets a GPU benchmark ready to send to a bare CUDA machine in one call:
# .gpu-deps/deps.tar.gz (scripts/gpu_deps_bundle.sh, made once) and
# .gpu-src/ (a clean export of HEAD, so helpers' unfinished edits in the
# working tree do not travel), both git-ignored through .git/info/exclude.
# Prints the command to run there (from the repository root).
#
# Measured on an H100 machine (16 cores, Ubuntu 24.04, PyTorch 2.11+cu130):
# unpacking 1 s, configure 6 s, building learner + actor 43 s.
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for p in /.gpu-deps/ /.gpu-src/; do
  grep -qxF "$p" "$exclude" 2>/dev/null || echo "$p" >>"$exclude"
done
[ -s .gpu-deps/deps.tar.gz ] || scripts/gpu_deps_bundle.sh .gpu-deps
rm -rf .gpu-src && mkdir .gpu-src
git archive HEAD | tar -x -C .gpu-src
echo "ready: .gpu-src at $(git rev-parse --short HEAD), $(du -sh .gpu-deps | cut -f1) of dependencies"
cat <<'CMD'
run there (carry .gpu-src and .gpu-deps; about 60 s before the benchmark starts):
  cd .gpu-src && BENCH_CONFIGS='RUNS="1 4 16";RUNS=16 ENVS=32 BUDGET=262144' \
    CONFIG_LIMIT=240 DEADLINE=540 scripts/bench_gpu_device.sh ../.gpu-deps/deps.tar.gz
CMD
