#!/usr/bin/env bash
# `ristretto study report` on a real study, end to end. A reduced
# copy of deploy/studies/small.yaml (fewer, shorter trials; pruning on) runs
# with `ristretto up` (private PostgreSQL, coordinator, learner, actors);
# the test then starts that PostgreSQL again, writes the report, checks its
# content against what `up` printed (verdict, best trial, lockbox Sharpe),
# opens it in headless Chromium (tests/integration/browser_check.sh: no
# console output, no network, every chart has data; the screenshot is kept
# in OUT_DIR) and tries every bad input (unknown study, a study with no
# complete trial, missing --out, an --out that cannot be created): each is
# one line on stderr, a non-zero exit and no file left behind.
# bash, grep, sed and awk only (no python in CI).
# Usage: report_test.sh RISTRETTO_BINARY SMALL_STUDY_YAML OUT_DIR
# Exit 77 (skipped) only if chromium is missing, after every other check.
set -euo pipefail
ristretto=$1
small=$2
out_dir=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out_dir"
mkdir -p "$out_dir"
work=$(mktemp -d /tmp/ristretto-report.XXXXXX)
chmod 755 "$work"
pg_ctl=""
pg_dir="$work/data/pg"
as_pg=()
cleanup() {
  if [ -n "$pg_ctl" ]; then
    "${as_pg[@]}" "$pg_ctl" stop -w -m fast -D "$pg_dir" > /dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# ---- a real study: 6 trials × 2 folds × 12288 env steps, validated every
# 4096 (intermediate values; the median pruner may stop a trial at 8192
# steps once 3 trials reported there, so most trials complete and some are
# usually pruned), then each complete trial's refit on the lockbox.
name=report-it
sed -e "s/^name: .*/name: $name/" \
    -e 's/^budget_env_steps: .*/budget_env_steps: 12288/' \
    -e 's/^eval_every_env_steps: .*/eval_every_env_steps: 4096/' \
    -e 's/^max_trials: .*/max_trials: 6/' \
    -e 's/warmup_steps: [0-9]*, min_trials: [0-9]*/warmup_steps: 8192, min_trials: 3/' \
    "$small" > study.yaml
grep -q '^budget_env_steps: 12288$' study.yaml && grep -q '^max_trials: 6$' study.yaml &&
  grep -q 'warmup_steps: 8192, min_trials: 3' study.yaml ||
  fail "could not reduce $small"
start=$(date +%s)
"$ristretto" up --study study.yaml --data-dir "$work/data" > up.log 2>&1 ||
  { tail -n 40 up.log >&2; fail "ristretto up"; }
echo "ristretto up: $(( $(date +%s) - start )) s"
verdict=$(grep '^verdict: ' up.log | tail -n 1)
[ -n "$verdict" ] || { tail -n 40 up.log >&2; fail "no verdict in up's output"; }
echo "$verdict"
# `up` ends with its verdict (README), after the export and report lines.
[ "$(tail -n 1 up.log)" = "$verdict" ] ||
  { tail -n 5 up.log >&2; fail "up's last line is not its verdict"; }
grep -q '^up: study report written to ' up.log || fail "no report line"
# The rules a quant tries first, on the lockbox bars, and the verdict's
# word on the strongest of them.
grep -qE '^  rules +equal_weight_rebalanced Sharpe ' up.log ||
  { tail -n 30 up.log >&2; fail "no rule baselines in up's statistics"; }
grep -q 'the strongest rule a quant tries first, ' up.log ||
  fail "the verdict does not name the strongest rule"

# ---- the study's PostgreSQL again (`up` stopped it), on a free port.
pg_ctl=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)/pg_ctl
[ -x "$pg_ctl" ] || fail "no pg_ctl under /usr/lib/postgresql"
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi
port=$(( 20000 + RANDOM % 20000 ))
"${as_pg[@]}" "$pg_ctl" start -w -t 60 -D "$pg_dir" -l "$pg_dir/restart.log" \
  -o "-k $pg_dir -p $port -c listen_addresses=''" > /dev/null ||
  { cat "$pg_dir/restart.log" >&2; fail "cannot restart the study's PostgreSQL"; }
export RISTRETTO_DB="host=$pg_dir port=$port dbname=ristretto user=postgres"

# ---- the report.
report_dir=$out_dir/report
start_ms=$(date +%s%N)
"$ristretto" study report "$name" --out "$report_dir" > report.out 2> report.err ||
  { cat report.out report.err >&2; fail "study report"; }
echo "study report: $(( ($(date +%s%N) - start_ms) / 1000000 )) ms"
cat report.out
[ ! -s report.err ] || { cat report.err >&2; fail "study report wrote to stderr"; }
html=$report_dir/report.html
grep -qx "wrote the report of study $name to $html" report.out || fail "output line"
[ -s "$html" ] || fail "no $html"
[ "$(ls -A "$report_dir")" = report.html ] || fail "stray files in $report_dir: $(ls -A "$report_dir")"

# `study best` on the same study: every fold's Sharpe and buy & hold's carry
# a standard error (buy & hold's rebuilt from the dataset on the fold's rows).
"$ristretto" study best "$name" > best.out 2> best.err ||
  { cat best.out best.err >&2; fail "study best"; }
grep -Eq '^ +0 +-?[0-9.]+ ± [0-9.]+ +-?[0-9.]+ ± [0-9.]+ ' best.out ||
  { cat best.out >&2; fail "study best: fold 0 without Sharpe ± SE for the policy and buy & hold"; }
! grep -q "buy & hold's standard errors:" best.out ||
  { cat best.out >&2; fail "study best could not rebuild buy & hold"; }

# The verdict in the same words as `up`/`study best` (HTML-escaped there).
unescape() { sed -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&quot;/"/g' -e "s/&#39;/'/g" -e 's/&amp;/\&/g'; }
page_verdict=$(grep -o '<div class="verdict [a-z]*">verdict: [^<]*</div>' "$html" | head -n 1 |
  sed -e 's/<div class="verdict [a-z]*">//' -e 's/<\/div>//' | unescape)
[ "$page_verdict" = "$verdict" ] ||
  fail "verdict differs: page '$page_verdict', up '$verdict'"
# The best trial and its lockbox Sharpe ± SE as the leaderboard printed them.
# (the title, the header, the dashes, then rank 1: "1  TRIAL  SCORE  S ± SE (b&h …)")
best=$(awk '/^leaderboard of study/ { getline; getline; getline; print $2; exit }' up.log)
lockbox=$(awk '/^leaderboard of study/ { getline; getline; getline; if ($5 == "±") print $4, $5, $6; exit }' up.log)
[ -n "$best" ] || fail "no best trial in up's leaderboard"
grep -q "<div class=\"k\">best trial (score)</div><div class=\"v\">$best (" "$html" ||
  fail "the page's best trial is not $best"
if [ -n "$lockbox" ]; then
  grep -qF "<td>$lockbox</td>" "$html" || fail "lockbox Sharpe '$lockbox' of trial $best not on the page"
  echo "best trial $best, lockbox Sharpe $lockbox: on the page"
fi
# Every section, with data; trials table has a row per trial.
for id in history importance slices folds lockbox statistics trials; do
  grep -q "<section id=\"$id\">" "$html" || fail "section $id missing"
done
rows=$(grep -o '<tr class="\(complete\|pruned\|failed\|running\)' "$html" | wc -l)
[ "$rows" -eq 6 ] || fail "$rows trial rows, expected 6"
complete=$(grep -o '<tr class="complete' "$html" | wc -l)
pruned=$(grep -o '<tr class="pruned' "$html" | wc -l)
echo "trials: $complete complete, $pruned pruned"
# The rules a quant tries first, in the lockbox table beside buy & hold.
rules=$(grep -o '<tr class="rule"><td>rule: ' "$html" | wc -l)
[ "$rules" -eq 3 ] || fail "$rules rule rows in the lockbox table, expected 3"
# Every Sharpe carries its standard error: no "Sharpe" number without ±.
grep -q 'lockbox Sharpe ± SE</div><div class="v">-\?[0-9.]* ± [0-9.]*<' "$html" ||
  fail "lockbox Sharpe ± SE card"
! grep -q '<script' "$html" || fail "the page has a script"
! grep -qE '(src|href)="(https?:)?//' "$html" || fail "the page references the network"
# Charts: history, per-parameter (3), folds, lockbox equity and drawdown,
# and importance once 4 trials are complete.
charts=7
[ "$complete" -ge 4 ] && charts=8
grep -q 'data-chart="score-history"' "$html" || fail "no history chart"
grep -q 'data-chart="lockbox-equity"' "$html" || fail "no lockbox equity chart"
if [ "$pruned" -gt 0 ]; then
  grep -q 'pruned (the value the pruner judged)' "$html" || fail "pruned trials not marked"
fi

# ---- bad input: one line on stderr, non-zero exit, nothing written.
bad() {  # expected-message-regex args...
  local want=$1
  shift
  local dir=$work/bad-out
  rm -rf "$dir"
  if "$ristretto" "$@" > bad.out 2> bad.err; then
    fail "'$*' succeeded"
  fi
  [ "$(wc -l < bad.err)" -eq 1 ] || { cat bad.err >&2; fail "'$*': not one line on stderr"; }
  grep -qE -e "$want" bad.err || { cat bad.err >&2; fail "'$*': message does not match '$want'"; }
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    fail "'$*' left files: $(ls -A "$dir")"
  fi
  echo "bad input ok: $* -> $(cat bad.err)"
}
bad "no study named 'no-such-study'" study report no-such-study --out "$work/bad-out"
bad "missing required --out" study report "$name"
touch "$work/a-file"
bad "--out $work/a-file/sub: cannot create" study report "$name" --out "$work/a-file/sub"
[ ! -e "$work/a-file/sub" ] || fail "created under a file"
"$ristretto" study create study.yaml --name empty-study > /dev/null || fail "study create"
bad "study 'empty-study' has no complete trial" study report empty-study --out "$work/bad-out"
bad "usage: ristretto study report NAME --out DIR" study report --out "$work/bad-out"
# An existing report is replaced only by a complete one: a failed run for
# an unknown study leaves it as it was.
sum=$(cksum < "$html")
"$ristretto" study report no-such-study --out "$report_dir" 2> /dev/null && fail "unknown study succeeded"
[ "$(cksum < "$html")" = "$sum" ] || fail "a failed report changed $html"

# ---- in a real browser.
shot=$out_dir/report-screenshot.png
set +e
bash "$here/browser_check.sh" "$html" "$shot" "$charts"
rc=$?
set -e
[ $rc -eq 77 ] && { echo "chromium not installed: browser check skipped"; exit 77; }
[ $rc -eq 0 ] || fail "browser check"
echo "report: $html"
echo "screenshot: $shot"
echo "PASS"
