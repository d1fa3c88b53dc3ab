#!/usr/bin/env bash
# Packs the C++ dependencies the learner and actor need (gRPC, Protobuf,
# Abseil, prometheus-cpp, glog, yaml-cpp, libpqxx's pkg-config files,
# OpenSSL, pkgconf) from Debian 12 packages into one tarball, for a GPU
# machine that has CUDA, PyTorch and a compiler but no package registry
# (the device machines this project is lent). scripts/bench_gpu_device.sh
# unpacks it into a private prefix there; nothing is installed into /.
#
# Only shared libraries, headers, CMake/pkg-config files and the code
# generators (protoc, grpc_cpp_plugin) are kept; static archives and docs
# are dropped, and absolute symbolic links are made relative so the
# prefix works wherever it is unpacked. glibc, libstdc++ and the
# compiler come from the target machine (Debian 12's libraries need glibc
# >= 2.36 and the C++11 ABI, which PyTorch 2.x's LibTorch also uses).
#
# Usage: scripts/gpu_deps_bundle.sh [OUT_DIR (.gpu-deps)]
# Writes OUT_DIR/deps.tar.gz (about 15 MB) and prints its size.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu-deps}

# The -dev packages CMakeLists.txt finds, and the runtime libraries and
# -dev packages their CMake configs pull in (apt-cache depends --recurse,
# minus glibc, libstdc++, the compiler and libraries only libcurl and
# libpq load at run time, which the learner and actor do not link).
PACKAGES=(
  libabsl-dev libabsl20220623
  libgrpc++-dev libgrpc++1.51 libgrpc-dev libgrpc29 protobuf-compiler-grpc
  libprotobuf-dev libprotobuf-lite32 libprotobuf32 libprotoc32 protobuf-compiler
  libc-ares-dev libc-ares2 libre2-9 libre2-dev
  libssl-dev libssl3 zlib1g zlib1g-dev liblzma-dev liblzma5
  libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev libgflags2.2
  libunwind-dev libunwind8
  prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
  libprometheus-cpp-push1.0 libcivetweb-dev libcivetweb1 civetweb
  libcurl4 libcurl4-openssl-dev
  libpqxx-dev libpqxx-6.4 libpq-dev libpq5
  libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev
  pkgconf pkgconf-bin pkg-config libpkgconf3
)

tmp=$(mktemp -d /tmp/ristretto-gpu-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "${PACKAGES[@]}" >/dev/null 2>&1) || {
  echo "apt-get download failed (is the Debian mirror reachable?)" >&2
  (cd "$tmp" && apt-get download "${PACKAGES[@]}" 2>&1 | tail -3) >&2
  exit 1
}
root=$tmp/root
mkdir -p "$root"
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$root"; done
# Static archives go, except those a CMake config names (CMake refuses an
# imported target whose file is missing: gflags_static, for one).
while IFS= read -r archive; do
  grep -rqsF "$(basename "$archive")" "$root"/usr/lib/x86_64-linux-gnu/cmake \
    "$root"/usr/lib/cmake "$root"/usr/share/cmake* || rm -f "$archive"
done < <(find "$root" -name '*.a')
rm -rf "$root"/usr/share/{doc,man,lintian,locale,bug}
# Absolute links (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) would
# point into the target's own /lib: make them relative to the prefix.
while IFS= read -r link; do
  target=$(readlink "$link")
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link"
done < <(find "$root" -type l -lname '/*')
# glog's CMake config adds an absolute /usr/share/glog/cmake (its
# FindUnwind) to the module path: make it relative to the config.
sed -i 's|"/usr/share/glog/cmake"|"${CMAKE_CURRENT_LIST_DIR}/../../../../share/glog/cmake"|' \
  "$root"/usr/lib/x86_64-linux-gnu/cmake/glog/glog-modules.cmake
mkdir -p "$out"
tar -C "$root" -czf "$out/deps.tar.gz" .
echo "$out/deps.tar.gz: $(du -h "$out/deps.tar.gz" | cut -f1), ${#PACKAGES[@]} packages"
