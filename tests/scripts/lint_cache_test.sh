#!/usr/bin/env bash
# scripts/lint.sh's clang-tidy cache (.ci/lint-clean, keys from
# scripts/lint_cache.py) on a tiny project of its own: two .cc files, a
# local header, a .clang-tidy, a real Ninja build (so `ninja -t deps` has
# records) and its compile_commands.json, in temporary directories, so the
# real tree's state does not matter. Checks that a key is stable (twice,
# and from a copy built at another path), that editing the included header
# or .clang-tidy changes it, that a TU edited since the build has no key,
# and that lint.sh caches the clean TU but never the one with a finding,
# reuses it next time, and prunes the file on a whole-tree run.
# Usage: lint_cache_test.sh SOURCE_DIR
set -uo pipefail
src=$1
for tool in c++ ninja clang-tidy clang-format python3 git; do
  command -v "$tool" >/dev/null || { echo "SKIP: no $tool"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# make_tree DIR: the tiny project in DIR, built.
make_tree() {
  local dir=$1
  mkdir -p "$dir/scripts" "$dir/lib" "$dir/build"
  cp "$src/scripts/lint.sh" "$src/scripts/lint_cache.py" "$dir/scripts/"
  cp "$src/.clang-format" "$dir/"
  printf '%s\n' "Checks: '-*,modernize-use-nullptr'" >"$dir/.clang-tidy"
  printf '%s\n' '#ifndef LIB_VALUE_H_' '#define LIB_VALUE_H_' '' \
    'int Value();' '' '#endif  // LIB_VALUE_H_' >"$dir/lib/value.h"
  printf '%s\n' '#include "lib/value.h"' '' \
    'int Value() { return 1; }' >"$dir/lib/clean.cc"
  # modernize-use-nullptr finds the 0.
  printf '%s\n' 'int* Pointer() { return 0; }' >"$dir/lib/finding.cc"
  cat >"$dir/build/build.ninja" <<EOF
root = $dir
rule cxx
  command = c++ -I\$root -std=c++17 -MD -MF \$out.d -o \$out -c \$in
  depfile = \$out.d
  deps = gcc
build clean.o: cxx \$root/lib/clean.cc
build finding.o: cxx \$root/lib/finding.cc
EOF
  ninja -C "$dir/build" -t compdb cxx >"$dir/build/compile_commands.json"
  ninja -C "$dir/build" >/dev/null || fail "the tiny build failed in $dir"
}
# key DIR FILE: FILE's key in DIR's tree ('-': none).
key() {
  (cd "$1" && python3 scripts/lint_cache.py keys --build build \
    --tidy-arg=--quiet "$2") | cut -d' ' -f1
}

a=$tmp/a
make_tree "$a"
k1=$(key "$a" lib/clean.cc)
[[ $k1 =~ ^[0-9a-f]{64}$ ]] || fail "no key for a built TU: '$k1'"
[ "$(key "$a" lib/clean.cc)" = "$k1" ] || fail "key not stable"
make_tree "$tmp/elsewhere/deeper/b"
[ "$(key "$tmp/elsewhere/deeper/b" lib/clean.cc)" = "$k1" ] ||
  fail "key differs in a copy at another path"
[ "$(key "$a" lib/finding.cc)" != "$k1" ] || fail "two TUs share a key"

# The included header, edited: no key until rebuilt, then another key.
echo '// edited' >>"$a/lib/value.h"
[ "$(key "$a" lib/clean.cc)" = - ] ||
  fail "a TU whose header changed since the build has a key"
ninja -C "$a/build" >/dev/null || fail "rebuild failed"
k2=$(key "$a" lib/clean.cc)
[[ $k2 =~ ^[0-9a-f]{64}$ ]] || fail "no key after the rebuild: '$k2'"
[ "$k2" != "$k1" ] || fail "editing the included header kept the key"

# .clang-tidy, edited: another key.
echo '# edited' >>"$a/.clang-tidy"
k3=$(key "$a" lib/clean.cc)
if [ "$k3" = "$k2" ] || [ "$k3" = - ]; then
  fail "editing .clang-tidy did not change the key ('$k2' -> '$k3')"
fi

# lint.sh: the clean TU is cached, the one with a finding is not.
out=$("$a/scripts/lint.sh" lib/clean.cc lib/finding.cc 2>&1) &&
  fail "lint.sh passed a TU with a finding: $out"
echo "$out"
grep -q 'finding.cc.*modernize-use-nullptr' <<<"$out" ||
  fail "the finding was not reported"
grep -qxE '[0-9a-f]{64} lib/clean.cc' "$a/.ci/lint-clean" ||
  fail "the clean TU was not cached: $(cat "$a/.ci/lint-clean")"
grep -q 'finding.cc' "$a/.ci/lint-clean" && fail "the finding's TU was cached"
out=$("$a/scripts/lint.sh" lib/clean.cc lib/finding.cc 2>&1)
echo "$out"
grep -q '1 reused from .ci/lint-clean, 1 checked' <<<"$out" ||
  fail "the second run did not reuse exactly the clean TU"
out=$(LINT_CACHE=0 "$a/scripts/lint.sh" lib/clean.cc 2>&1) ||
  fail "lint.sh failed on the clean TU: $out"
grep -q '0 reused from .ci/lint-clean, 1 checked' <<<"$out" ||
  fail "LINT_CACHE=0 still reused: $out"

# A whole-tree run (git ls-files) prunes entries of files no longer there.
echo '0000 lib/gone.cc' >>"$a/.ci/lint-clean"
printf '%s\n' 'int* Pointer() { return nullptr; }' >"$a/lib/finding.cc"
ninja -C "$a/build" >/dev/null || fail "rebuild failed"
(cd "$a" && git init -q && git add lib .clang-format) || fail "git init failed"
out=$("$a/scripts/lint.sh" 2>&1) || fail "whole-tree lint failed: $out"
echo "$out"
grep -q '1 reused from .ci/lint-clean, 1 checked' <<<"$out" ||
  fail "the whole-tree run did not reuse the clean TU"
[ "$(cut -d' ' -f2 "$a/.ci/lint-clean" | tr '\n' ' ')" = \
  "lib/clean.cc lib/finding.cc " ] ||
  fail "not pruned to the tree's clean TUs: $(cat "$a/.ci/lint-clean")"
echo PASS
