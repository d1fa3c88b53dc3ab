#!/usr/bin/env bash
# Stages the four binaries of a host build for
#   docker build -f docker/cpu.Dockerfile --build-arg BINARIES=prebuilt .
# into docker/prebuilt/ (git-ignored, inside the build context): bin/ with
# the stripped binaries and runtime-packages.txt, the Debian packages their
# shared libraries come from (docker/runtime-packages.sh). The host must be
# Debian 12 like the image (same libraries, so the binaries are ABI-identical
# to a from-source image build of the same commit).
#
# Usage: docker/stage-prebuilt.sh BUILD_DIR   (e.g. build, after scripts/build.sh)
set -euo pipefail
[ "$#" -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$1
here=$(cd "$(dirname "$0")" && pwd)
out="$here/prebuilt"
bins=("$build/cli/ristretto" "$build/coordinator/service/ristretto-coordinator"
      "$build/actor/ristretto-actor" "$build/learner/ristretto-learner")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "stage-prebuilt: $b missing (build it first)" >&2; exit 1; }
done
if ! grep -q '^VERSION_ID="12"' /etc/os-release 2>/dev/null \
   || ! grep -q '^ID=debian' /etc/os-release; then
  echo "stage-prebuilt: the host is not Debian 12; build the image from source" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/bin"
cp "${bins[@]}" "$out/bin/"
strip --strip-unneeded "$out"/bin/*
"$here/runtime-packages.sh" "$out"/bin/* > "$out/runtime-packages.txt"
echo "stage-prebuilt: $(ls "$out/bin" | tr '\n' ' ')and $(wc -l < "$out/runtime-packages.txt") run-time packages in $out"
