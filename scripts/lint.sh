#!/usr/bin/env bash
# clang-format (check, or --fix) and clang-tidy over every tracked C++ file.
# Needs build/compile_commands.json (scripts/build.sh writes it).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run -Werror "${files[@]}"
fi
echo "clang-format: clean"
mapfile -t sources < <(git ls-files '*.cc')
report=$(printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "${BUILD_DIR:-build}" --quiet 2>/dev/null |
  grep -E "(warning|error):" | sort -u || true)
if [ -n "$report" ]; then
  echo "$report"
  echo "clang-tidy: $(echo "$report" | wc -l) findings" >&2
  exit 1
fi
echo "clang-tidy: clean"
