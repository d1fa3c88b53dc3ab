#!/usr/bin/env bash
# Prints, one per line and sorted, the Debian package that owns every shared
# library the given binaries load (ldd + dpkg -S). The CPU image installs
# exactly these packages in its runtime stage. Used inside the image's
# from-source build stage and, for --build-arg BINARIES=prebuilt, on the
# Debian 12 host that built the binaries (docker/stage-prebuilt.sh).
#
# Usage: docker/runtime-packages.sh BINARY...
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
if ldd "$@" | grep 'not found' >&2; then
  echo "runtime-packages: a library above is missing" >&2
  exit 1
fi
# Merged /usr: dpkg may know a library under its resolved path, without the
# /usr prefix, or under the path ldd printed. One dpkg -S per candidate
# form for all libraries at once (one call per library takes minutes).
mapfile -t libs < <(ldd "$@" | awk '/=> \//{print $3}' | sort -u)
declare -A owner=()
try() {  # try FORM: asks dpkg about every library still without an owner
  local -a paths=() keys=()
  local lib p
  for lib in "${libs[@]}"; do
    [ -z "${owner[$lib]:-}" ] || continue
    case "$1" in
      real) p=$(readlink -f "$lib") ;;
      nousr) p=$(readlink -f "$lib"); p=${p#/usr} ;;
      *) p=$lib ;;
    esac
    paths+=("$p"); keys+=("$lib")
  done
  [ "${#paths[@]}" -gt 0 ] || return 0
  local -A pkg_of=()
  local line
  while IFS= read -r line; do
    pkg_of[${line#*: }]=${line%%: *}
  done < <(dpkg -S "${paths[@]}" 2>/dev/null)
  local i
  for i in "${!paths[@]}"; do
    if [ -n "${pkg_of[${paths[$i]}]:-}" ]; then owner[${keys[$i]}]=${pkg_of[${paths[$i]}]}; fi
  done
}
try real
try nousr
try ldd
for lib in "${libs[@]}"; do
  [ -n "${owner[$lib]:-}" ] || { echo "runtime-packages: no package owns $lib" >&2; exit 1; }
  echo "${owner[$lib]%%:*}"
done | sort -u
