#!/usr/bin/env bash
# Issue 12, item 8: the verdict is honest, end to end with real processes
# (`ristretto up`: a private PostgreSQL, the coordinator, a learner, actors).
#   (a) the shipped small study (deploy/studies/small.yaml) with sampler
#       seeds 1, 2, 3 must end with "verdict: EDGE" and a best trial whose
#       lockbox Sharpe beats buy & hold and cash on at least 2 of the 3;
#   (b) the same study on a pure-noise market (predictability 0) must end
#       with "NO EDGE" on 3 of 3 seeds.
# Usage: verdict_test.sh RISTRETTO_BINARY STUDY_YAML [a|b|ab]
set -euo pipefail
ristretto=$1
study=$2
parts=${3:-ab}
work=$(mktemp -d /tmp/ristretto-verdict.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

# Runs one study; prints "edge" or "no-edge" and checks the exported
# metadata agrees with the printed verdict.
run_study() {  # name seed [predictability; default: the study file's]
  local name=$1 seed=$2 pred=${3:-}
  local dir=$work/$name file=$work/$name.yaml
  mkdir -p "$dir"
  sed -e "s/^name: .*/name: $name/" \
      -e "s/sampler: {type: tpe, seed: [0-9]*/sampler: {type: tpe, seed: $seed/" \
      "$study" > "$file"
  if [ -n "$pred" ]; then
    sed -i -e "s/predictability: [0-9.]*/predictability: $pred/" "$file"
    grep -q "predictability: $pred," "$file" || { echo "could not set predictability" >&2; exit 1; }
  fi
  grep -q "seed: $seed," "$file" || { echo "could not set the sampler seed" >&2; exit 1; }
  if ! "$ristretto" up --study "$file" --data-dir "$dir/data" > "$dir/up.log" 2>&1; then
    echo "ristretto up failed for $name:" >&2
    tail -n 40 "$dir/up.log" >&2
    exit 1
  fi
  local verdict
  verdict=$(grep '^verdict: ' "$dir/up.log" | tail -n 1 || true)
  if [ -z "$verdict" ]; then
    echo "$name: no verdict line in the output" >&2
    tail -n 40 "$dir/up.log" >&2
    exit 1
  fi
  grep -E 'leaderboard|lockbox|deflated|PBO|verdict' "$dir/up.log" | sed "s/^/  [$name] /" >&2
  if [[ $verdict == "verdict: EDGE"* ]]; then
    # The exported policy's metadata must say the same, and the lockbox
    # numbers must beat buy & hold and cash.
    local meta=$dir/data/best-policy/evaluation.json
    python3 - "$meta" <<'PY' >&2 || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
assert m["edge"] is True, m
l = m["lockbox"]
assert l["sharpe"] > l["buy_and_hold_sharpe"] and l["sharpe"] > 0, l
print("  metadata agrees:", sys.argv[1], "lockbox sharpe", round(l["sharpe"], 2),
      "buy & hold", round(l["buy_and_hold_sharpe"], 2))
PY
    echo edge
  else
    echo no-edge
  fi
}

failed=0
if [[ $parts == *a* ]]; then
  edges=0
  for seed in 1 2 3; do
    r=$(run_study "signal-$seed" "$seed")
    echo "signal seed $seed: $r"
    [ "$r" = edge ] && edges=$((edges + 1))
  done
  echo "learnable market: $edges of 3 seeds found an edge (need >= 2)"
  [ "$edges" -ge 2 ] || failed=1
fi
if [[ $parts == *b* ]]; then
  false_edges=0
  for seed in 1 2 3; do
    r=$(run_study "noise-$seed" "$seed" 0)
    echo "noise seed $seed: $r"
    [ "$r" = edge ] && false_edges=$((false_edges + 1))
  done
  echo "pure noise: $false_edges of 3 seeds claimed an edge (need 0)"
  [ "$false_edges" -eq 0 ] || failed=1
fi
exit $failed
