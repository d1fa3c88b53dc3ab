#!/usr/bin/env bash
# scripts/bench_gpu.sh on a bare CUDA machine with PyTorch but no package
# registry (the device machines this project is lent): unpacks the
# dependency bundle made by scripts/gpu_deps_bundle.sh into a private
# prefix, builds ristretto-learner and ristretto-actor against PyTorch's
# CUDA LibTorch, and runs the benchmark. Every phase is timed; logs go to
# LOG_DIR (default $OUT when set, else /tmp/ristretto-gpu-logs).
#
# Usage: scripts/bench_gpu_device.sh [bundle (.gpu-deps/deps.tar.gz)]
#        BENCH_CONFIGS, DEADLINE (below)
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu-deps/deps.tar.gz}
logs=${LOG_DIR:-${OUT:-/tmp/ristretto-gpu-logs}}
mkdir -p "$logs"
t_start=$(date +%s)
phase() { echo "== [$(($(date +%s) - t_start)) s] $*"; }

phase "machine"
(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || true
nproc
c++ --version 2>&1 | head -1 || echo "no c++ compiler"
cmake --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  echo "python3 cannot import torch" >&2; exit 1; }
tver=$(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, int(torch.cuda.is_available()), int(torch._C._GLIBCXX_USE_CXX11_ABI))')
echo "torch (version, CUDA, available, cxx11 abi): $tver"
# PyTorch 2.13 and later need C++20 in every translation unit that sees
# ATen; older ones build as C++17 like the rest of the project.
std=17
python3 - <<'PY' && std=20
import sys, torch
major, minor = (int(x) for x in torch.__version__.split('.')[:2])
sys.exit(0 if (major, minor) >= (2, 13) else 1)
PY

phase "dependencies from $bundle"
deps=/opt/ristretto-deps
rm -rf "$deps" && mkdir -p "$deps" && tar -C "$deps" -xzf "$bundle" || exit 1
lib="$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu"
export PATH="$deps/usr/bin:$PATH"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$lib"
# Only the multiarch folder (OpenSSL's configuration.h) goes in the
# compiler's environment: CMake takes what is there for an implicit system
# folder and drops it from the targets' include flags, and $deps/usr/include
# must come first through them (CMakeLists.txt puts Protobuf's before
# LibTorch's bundled Protobuf headers).
export CPLUS_INCLUDE_PATH="$deps/usr/include/x86_64-linux-gnu"
export C_INCLUDE_PATH="$CPLUS_INCLUDE_PATH"
export PKG_CONFIG_PATH="$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$deps"
protoc --version

phase "configure (C++$std)"
B=build-gpu
cuda_root=""
[ -d /usr/local/cuda ] && cuda_root=/usr/local/cuda
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix;$deps/usr" -DOPENSSL_ROOT_DIR="$deps/usr" \
  -DPKG_CONFIG_EXECUTABLE="$deps/usr/bin/pkgconf" \
  ${cuda_root:+-DCUDAToolkit_ROOT=$cuda_root} -DCMAKE_CXX_STANDARD="$std" \
  -DRISTRETTO_BUILD_TESTS=OFF -DRISTRETTO_BUILD_BENCH=OFF \
  >"$logs/configure.log" 2>&1 || { tail -40 "$logs/configure.log"; exit 1; }
grep -E "LibTorch|CUDA" "$logs/configure.log" | head -5

phase "build"
# -k 0: every compile error in one call, not only the first.
cmake --build "$B" -j "$(nproc)" --target ristretto-learner ristretto-actor -- -k 0 \
  >"$logs/build.log" 2>&1 || { grep -E "error|Error" "$logs/build.log" | head -30; tail -20 "$logs/build.log"; exit 1; }
ldd "$B/learner/ristretto-learner" | grep -E "not found|torch_cuda" || true

# One benchmark per configuration in BENCH_CONFIGS (';'-separated
# variable assignments for bench_gpu.sh, e.g. 'RUNS="1 4 16";RUNS=16
# ENVS=32'; DEVICE=cpu in one runs the same binaries' CPU learner, the
# baseline); the default is bench_gpu.sh's own. Each gets the time left
# before DEADLINE seconds from the start (default 560), at most
# CONFIG_LIMIT seconds (default 600); one with less than 60 s left is
# skipped. Processes a stopped benchmark left behind are ended.
rc=0
IFS=';' read -r -a configs <<<"${BENCH_CONFIGS:-}"
[ "${#configs[@]}" = 0 ] && configs=("")
k=0
for cfg in "${configs[@]}"; do
  k=$((k + 1))
  left=$((${DEADLINE:-560} - ($(date +%s) - t_start)))
  if [ "$left" -lt 60 ]; then phase "benchmark $k ($cfg) skipped: ${left} s left"; continue; fi
  [ "$left" -gt "${CONFIG_LIMIT:-600}" ] && left=${CONFIG_LIMIT:-600}
  phase "benchmark $k: ${cfg:-defaults} (limit $left s)"
  eval "env DEVICE=cuda $cfg KEEP=1 BUILD_DIR=$B timeout $left scripts/bench_gpu.sh" 2>&1 |
    tee "$logs/bench-$k.txt" || rc=$?
  pkill -f "$B/(learner|actor)/ristretto-" 2>/dev/null || true
  kept=$(sed -n "s/^logs in //p" "$logs/bench-$k.txt" | tail -1)
  if [ -n "$kept" ] && [ -d "$kept" ]; then
    tar -C "$kept" -czf "$logs/bench-$k-logs.tar.gz" --exclude='cache-*' --exclude='runs' . 2>/dev/null || true
  fi
done
phase "done (benchmark exit $rc)"
exit "$rc"
