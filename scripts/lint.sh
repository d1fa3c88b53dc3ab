#!/usr/bin/env bash
# clang-format (check, or --fix) and clang-tidy over every tracked C++ file,
# or over the files named after the options (scripts/lint.sh [--fix] [FILE…]).
# clang-tidy also runs clang's thread-safety analysis (-Wthread-safety as an
# error, here and in .clang-tidy): the g++ build ignores the ABSL_GUARDED_BY
# / ABSL_*_LOCKS_REQUIRED annotations, so this is where they are checked.
# Needs build/compile_commands.json (scripts/build.sh writes it).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' '*.h')
fi
if [ "$fix" = 1 ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run -Werror "${files[@]}"
fi
echo "clang-format: clean"
mapfile -t sources < <(printf '%s\n' "${files[@]}" | grep -E '\.cc$' || true)
# The flags are appended last so that no flag of the compile command can
# turn the analysis off again.
report=$(printf '%s\n' "${sources[@]}" | grep -v '^$' |
  xargs -r -P "$(nproc)" -n 1 clang-tidy -p "${BUILD_DIR:-build}" --quiet \
    --extra-arg=-Wthread-safety --extra-arg=-Werror=thread-safety 2>/dev/null |
  grep -E "(warning|error):" | sort -u || true)
if [ -n "$report" ]; then
  echo "$report"
  echo "clang-tidy: $(echo "$report" | wc -l) findings" >&2
  exit 1
fi
echo "clang-tidy: clean (thread-safety analysis included)"
