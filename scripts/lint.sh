#!/usr/bin/env bash
# clang-format (check, or --fix) and clang-tidy over every tracked C++ file,
# or over the files named after the options
# (scripts/lint.sh [--fix] [--no-cache] [FILE…]).
# clang-tidy also runs clang's thread-safety analysis (-Wthread-safety as an
# error, here and in .clang-tidy): the g++ build ignores the ABSL_GUARDED_BY
# / ABSL_*_LOCKS_REQUIRED annotations, so this is where they are checked.
# Needs build/compile_commands.json (scripts/build.sh writes it) and a
# finished build (its dependency records key the cache).
#
# Cache: .ci/lint-clean (committed) lists, one 'KEY PATH' a line, the
# translation units clang-tidy found clean. KEY (scripts/lint_cache.py) is
# a SHA-256 over the toolchain, the flags, every .clang-tidy that applies,
# the TU's compile command and the contents of the TU and of every file it
# includes, system headers too, as ninja's dependency records list them: a
# TU whose key is listed is not linted again, its result would be the same.
# A TU without a key (not built, or edited since the build) is always
# linted. A run over the whole tree rewrites the file with the keys of all
# clean TUs (pruned to the current tree); a run over FILEs adds theirs.
# LINT_CACHE=0 or --no-cache: lint every TU (the file is still written).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
use_cache="${LINT_CACHE:-1}"
while [ $# -gt 0 ]; do
  case "$1" in
    --fix) fix=1 ;;
    --no-cache) use_cache=0 ;;
    *) break ;;
  esac
  shift
done
whole_tree=0
if [ $# -gt 0 ]; then
  files=("$@")
else
  whole_tree=1
  mapfile -t files < <(git ls-files '*.cc' '*.h')
fi
if [ "$fix" = 1 ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run -Werror "${files[@]}"
fi
echo "clang-format: clean"
mapfile -t sources < <(printf '%s\n' "${files[@]}" | grep -E '\.cc$' || true)
build="${BUILD_DIR:-build}"
cache=.ci/lint-clean
# The flags are appended last so that no flag of the compile command can
# turn the analysis off again. They are part of every key.
tidy_flags=(--quiet --extra-arg=-Wthread-safety
            --extra-arg=-Werror=thread-safety)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
touch "$work/keys" "$work/todo"
if [ "${#sources[@]}" -gt 0 ]; then
  python3 scripts/lint_cache.py keys --build "$build" \
    "${tidy_flags[@]/#/--tidy-arg=}" "${sources[@]}" >"$work/keys"
fi
# 'INDEX PATH' of every TU to lint: no key, or a key not in the cache.
if [ "$use_cache" = 1 ] && [ -f "$cache" ]; then
  awk 'NR == FNR { clean[$1] = 1; next }
       !($1 in clean) || $1 == "-" { print FNR, $2 }' "$cache" "$work/keys" \
    >"$work/todo"
else
  awk '{ print FNR, $2 }' "$work/keys" >"$work/todo"
fi
# One clang-tidy per file, $(nproc) at a time, each file's output and exit
# status kept apart so that each file's result is known. xargs appends
# OUTPUT_PREFIX FILE to the fixed arguments (the build dir, the flags).
# shellcheck disable=SC2016
awk -v dir="$work" '{ print dir "/" $1, $2 }' "$work/todo" |
  xargs -r -P "$(nproc)" -n 2 bash -c '
    out=${*: -2:1} file=${*: -1} status=0
    clang-tidy -p "$0" "${@:1:$#-2}" "$file" 2>/dev/null >"$out.out" ||
      status=$?
    echo "$status" >"$out.status"' "$build" "${tidy_flags[@]}"
report=$(cat "$work"/*.out 2>/dev/null | grep -E "(warning|error):" |
  sort -u || true)
# Clean: no finding and exit status 0 (not a crash, not a TU clang-tidy
# could not find). Those, with the cached ones, are the clean keys.
: >"$work/clean"
: >"$work/checked-clean"
checked=0
while read -r index key path; do
  out="$work/$index"
  if [ -f "$out.status" ]; then
    checked=$((checked + 1))
    status=$(cat "$out.status")
    if grep -qE "(warning|error):" "$out.out"; then
      :  # reported below
    elif [ "$status" = 0 ]; then
      echo "$key $path" >>"$work/checked-clean"
    else
      echo "clang-tidy: $path: exit $status without a finding (not cached)" >&2
    fi
  else
    echo "$key $path" >>"$work/clean"  # reused: its key is in the cache
  fi
done < <(awk '{ print FNR, $0 }' "$work/keys")
reused=$(($(wc -l <"$work/keys") - checked))
# The keys of the clean TUs once more, after the runs: a TU or header
# edited while clang-tidy ran is not cached under the key of the contents
# it had before.
if [ -s "$work/checked-clean" ]; then
  mapfile -t checked_clean < <(cut -d' ' -f2- "$work/checked-clean")
  python3 scripts/lint_cache.py keys --build "$build" \
    "${tidy_flags[@]/#/--tidy-arg=}" "${checked_clean[@]}" >"$work/after"
  grep -xFf "$work/after" "$work/checked-clean" >>"$work/clean" || true
fi
if [ "$whole_tree" = 1 ]; then
  python3 scripts/lint_cache.py update "$cache" --prune <"$work/clean"
elif [ "${#sources[@]}" -gt 0 ]; then
  python3 scripts/lint_cache.py update "$cache" <"$work/clean"
fi
if [ -n "$report" ]; then
  echo "$report"
  echo "clang-tidy: $(echo "$report" | wc -l) findings ($reused reused" \
    "from $cache, $checked checked)" >&2
  exit 1
fi
echo "clang-tidy: clean ($reused reused from $cache, $checked checked;" \
  "thread-safety analysis included)"
