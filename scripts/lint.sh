#!/usr/bin/env bash
# clang-format (check) and clang-tidy over the project's sources.
# Usage: scripts/lint.sh [--fix]   (needs build/compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run -Werror "${files[@]}"
fi
mapfile -t sources < <(git ls-files '*.cc')
clang-tidy -p build --quiet "${sources[@]}" 2>&1 | grep -v "warnings generated" || true
# Fail if clang-tidy reported anything.
if clang-tidy -p build --quiet "${sources[@]}" 2>/dev/null | grep -q "warning:"; then
  echo "clang-tidy: warnings above" >&2
  exit 1
fi
echo "lint: clean"
