#!/bin/bash
# LibTorch's headers cost tens of seconds per translation unit, so torch must
# stay out of headers other components include. Follows every project
# `#include "..."` from the source tree and fails when
#   * a header other than learner/torch/actor_critic.h and learner/torch/ppo.h
#     reaches <torch/...>, <ATen/...> or <c10/...> (directly or through other
#     headers: those two are the only torch headers, for .cc files only), or
#   * a non-test .cc file outside learner/torch/ reaches torch, unless it
#     really runs a policy (listed below).
# Usage: torch_boundary_test.sh [SOURCE_ROOT]   (bash and grep only)
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1

# Headers allowed to include torch: the model and the PPO learner.
torch_headers="learner/torch/actor_critic.h learner/torch/ppo.h"
# Non-test .cc files outside learner/torch/ that run torch code: the run's
# training thread and the actor's batched policy.
torch_sources="learner/service/run_host.cc actor/actor.cc"

declare -A reach  # file -> 1 (reaches torch) / 0 (does not)
declare -A via    # file -> the include that leads to torch
declare -A busy   # include cycles: a file being visited counts as torch-free
declare -A incs   # file -> its includes in order, one a line: a project
                  # path as written, or "<torch/...>" (and ATen, c10)
declare -A scanned

# Appends the include lines of `grep -H` output on stdin to incs[].
# (One grep over the whole tree instead of a bash loop over every line
# of every file: the walk took over 60 s on a loaded 2-core machine.)
collect() {
  local hit f line
  while IFS= read -r hit; do
    f=${hit%%:*}
    f=${f#./}
    line=${hit#*:}
    scanned[$f]=1
    if [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<(torch|ATen|c10)/ ]]; then
      incs[$f]+="<${BASH_REMATCH[1]}/...>"$'\n'
    elif [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
      incs[$f]+="${BASH_REMATCH[1]}"$'\n'
    fi
  done
}

# Sets reach[$1] (and via[$1]) by following its includes.
visit() {
  local f=$1 inc
  [[ -n ${reach[$f]+x} ]] && return
  if [[ -n ${busy[$f]+x} ]]; then return; fi
  if [[ -z ${scanned[$f]+x} ]]; then
    scanned[$f]=1
    collect < <(grep -H -E '^[[:space:]]*#[[:space:]]*include' "$f")
  fi
  busy[$f]=1
  reach[$f]=0
  while IFS= read -r inc; do
    [[ -z $inc ]] && continue
    if [[ $inc == \<* ]]; then
      reach[$f]=1
      via[$f]=$inc
      break
    fi
    # Project headers resolve against the root; tests also include
    # helpers next to them.
    if [[ ! -f $inc && $f == */* && -f ${f%/*}/$inc ]]; then
      inc=${f%/*}/$inc
    fi
    [[ -f $inc ]] || continue  # generated (protos) or system: no torch
    visit "$inc"
    if [[ ${reach[$inc]} == 1 ]]; then
      reach[$f]=1
      via[$f]=$inc
      break
    fi
  done <<<"${incs[$f]-}"
  unset "busy[$f]"
}

# The chain of includes from $1 to torch, e.g. "a.h -> b.h -> <torch/...>".
chain() {
  local f=$1 out=$1
  while [[ -n ${via[$f]+x} ]]; do
    out="$out -> ${via[$f]}"
    [[ ${via[$f]} == \<* ]] && break
    f=${via[$f]}
  done
  echo "$out"
}

# The source tree: hidden folders (.git, and ignored copies such as
# .gpu-src from scripts/prepare_gpu_run.sh) and build trees are not in it.
mapfile -t files < <(find . \( -path ./build -o -path './build-*' -o -path './.*' \
  -o -path ./docker -o -path ./deploy \) -prune -o \
  \( -name '*.h' -o -name '*.cc' \) -type f -print | sort)
for f in "${files[@]}"; do scanned[${f#./}]=1; done
collect < <(printf '%s\0' "${files[@]}" |
  xargs -0 grep -H -E '^[[:space:]]*#[[:space:]]*include')

failures=0
headers=0
sources=0
while IFS= read -r f; do
  f=${f#./}
  visit "$f"
  case $f in
    *.h)
      headers=$((headers + 1))
      if [[ ${reach[$f]} == 1 && " $torch_headers " != *" $f "* ]]; then
        echo "FAIL: header includes torch: $(chain "$f")"
        failures=$((failures + 1))
      fi
      ;;
    *.cc)
      sources=$((sources + 1))
      case $f in tests/* | bench/* | learner/torch/*) continue ;; esac
      if [[ ${reach[$f]} == 1 && " $torch_sources " != *" $f "* ]]; then
        echo "FAIL: source includes torch but is not listed as running a" \
          "policy: $(chain "$f")"
        failures=$((failures + 1))
      fi
      ;;
  esac
done < <(printf '%s\n' "${files[@]}")

# The two torch headers must really be found (a moved file would make the
# test pass vacuously).
for h in $torch_headers; do
  if [[ ${reach[$h]:-0} != 1 ]]; then
    echo "FAIL: $h was expected to include torch (moved? update this test)"
    failures=$((failures + 1))
  fi
done

torch_cc=0
for f in "${!reach[@]}"; do
  [[ $f == *.cc && ${reach[$f]} == 1 ]] && torch_cc=$((torch_cc + 1))
done
echo "checked $headers headers and $sources .cc files;" \
  "$torch_cc .cc files include torch"
if ((failures > 0)); then
  echo "$failures torch boundary violation(s)"
  exit 1
fi
echo "OK"
