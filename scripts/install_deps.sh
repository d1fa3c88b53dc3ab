#!/usr/bin/env bash
# Installs every build and run-time dependency of ristretto on Debian 12.
# Idempotent: packages already present are skipped, so re-running is cheap.
# Usage: scripts/install_deps.sh            (as root, or with sudo available)
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  clang-format clang-tidy
  # RPC and serialisation
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev
  # learning (CPU LibTorch 1.13) + a fast BLAS for its matmuls
  libtorch-dev libopenblas0-pthread libopenblas-dev
  libgoogle-glog-dev
  # metrics, database
  prometheus-cpp-dev libpqxx-dev libpq-dev postgresql libyaml-cpp-dev
  # tests and benchmarks (prometheus + curl: tests/deploy/prometheus_test.sh
  # evaluates the dashboards' PromQL on a real Prometheus)
  libgtest-dev libgmock-dev googletest libbenchmark-dev prometheus curl
  # helpers used by scripts (python3: scripts/lint_cache.py and the
  # policy rewriting of tests/integration/backtest_test.sh)
  zlib1g-dev nlohmann-json3-dev python3
  # network namespaces for the multi-machine test (tests/integration/netns_test.sh)
  iproute2
  # development TLS certificates (scripts/make_dev_certs.sh; the TLS tests)
  openssl
  # a real browser for the HTML report and chart tests
  # (tests/integration/browser_check.sh)
  chromium
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install_deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install_deps: done"
