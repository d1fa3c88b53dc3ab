#!/usr/bin/env bash
# `ristretto backtest` end to end with the real binary. A
# synthetic dataset, a tiny policy trained and exported by `ristretto train
# --export`, a backtest on a window of it: the printed table and comparison,
# every output file (rows = bars played, finite values, buy & hold and cash
# columns, weights adding up to 1), the equity and drawdown charts in
# headless Chromium (tests/integration/browser_check.sh; screenshots kept in
# OUT_DIR), replacing an earlier backtest, and every bad input (one line on
# stderr naming the problem, non-zero exit, nothing written).
# bash, grep and awk only (no python in CI).
# Usage: backtest_test.sh RISTRETTO_BINARY OUT_DIR
# Exit 77 (skipped) only if chromium is missing, after every other check.
set -euo pipefail
ristretto=$1
out_dir=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out_dir"
mkdir -p "$out_dir"
work=$(mktemp -d /tmp/ristretto-backtest.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# 3 assets, hourly bars from 2022-01-03T15:00:00Z to 2022-05-05T23:00:00Z
# (one domain), with a learnable signal.
"$ristretto" dataset synth --out data.rds --assets 3 --rows 3000 \
  --interval 1h --seed 3 --predictability 0.5 > /dev/null
"$ristretto" train --dataset data.rds --budget 2048 --envs 4 --rollout 64 \
  --policy-hidden 32,32 --epochs 2 --minibatch 256 --lookback 2 \
  --export policy --quiet > train.log 2>&1 || { cat train.log >&2; fail "train"; }
[ -f policy/policy.pt ] && [ -f policy/contract.json ] || fail "no exported policy"
grep -q '"interval_seconds": 3600' policy/contract.json ||
  fail "the exported contract does not record the 1h interval"

# ---- a backtest on [2022-03-01, 2022-05-01): 61 days × 24 = 1464 rows; the
# env values a domain of S rows on S − 2·lookback + 1 = 1461 bars, the
# first one lookback − 1 bars after the first row.
rows=1464
bars=$((rows - 2 * 2 + 1))
"$ristretto" backtest policy --dataset data.rds --from 1646092800 \
  --to 2022-05-01T00:00:00Z --out results --random-seeds 5 \
  > backtest.out 2> backtest.err || { cat backtest.out backtest.err >&2; fail "backtest"; }
cat backtest.out
[ ! -s backtest.err ] || { cat backtest.err >&2; fail "backtest wrote to stderr"; }
grep -q "^backtest: policy on data.rds: 3 assets, $bars bars (1 domain) 2022-03-01T01:00:00Z to " backtest.out ||
  fail "header line (expected $bars bars from 2022-03-01T01:00:00Z)"
grep -q '^costs: buy fee 0.25%, sell fee 0.25%, slippage 5 bps, volume cap off$' backtest.out ||
  fail "costs line"
grep -q '^note: this is the dataset the policy was trained on' backtest.out ||
  fail "no in-sample note for the training dataset"
for row in 'policy  ' 'buy & hold  ' 'cash  ' 'random (5 seeds, mean ± std)  '; do
  grep -q "^$row" backtest.out || fail "table row '$row'"
done
# Every Sharpe carries its standard error; the random row its spread.
grep -E '^policy +-?[0-9.]+ ± [0-9.]+ ' backtest.out > /dev/null || fail "policy Sharpe ± SE"
grep -E '^buy & hold +-?[0-9.]+ ± [0-9.]+ ' backtest.out > /dev/null || fail "B&H Sharpe ± SE"
# The verdict's one-sided tests (paired against buy & hold), at p < 0.05.
pv='\((p = [0-9.]+|p < 0\.001)\)'
grep -E "^comparison: policy Sharpe -?[0-9.]+ ± [0-9.]+ vs buy & hold -?[0-9.]+ $pv, cash 0.00 $pv, random -?[0-9.]+ $pv, the strongest rule, (equal_weight_rebalanced|momentum|macd) -?[0-9.]+ $pv: the policy (beats|does NOT beat) .* beyond noise \(one-sided p < 0.05" \
  backtest.out > /dev/null || fail "comparison line"
# The rules a quant tries first, each with its parameter (chosen on the
# rows before 2022-03-01) and its Sharpe ± SE.
grep -E '^equal_weight_rebalanced \(none \(1/n each\)\) +-?[0-9.]+ ± [0-9.]+ ' backtest.out > /dev/null ||
  fail "equal-weight rebalanced row"
grep -E '^momentum \(N = [0-9]+ bars \([0-9]+ days\)\) +-?[0-9.]+ ± [0-9.]+ ' backtest.out > /dev/null ||
  fail "momentum row"
grep -E '^macd \(.*\) +-?[0-9.]+ ± [0-9.]+ ' backtest.out > /dev/null || fail "macd row"
grep -q '"rules": \[' results/metrics.json || fail "metrics.json rules"
grep -Eq '^time: [0-9.]+ s = .*forward passes [0-9.]+ s, 1460 calls' backtest.out ||
  fail "timing line (one forward pass per step: 1460)"

for f in equity.csv positions.csv metrics.json equity.svg drawdown.svg; do
  [ -s "results/$f" ] || fail "results/$f missing or empty"
done
[ -z "$(find . -maxdepth 1 -name '.results*')" ] || fail "temporary directory left behind"

# equity.csv: a header and one row per bar, in time order, every number
# finite, cash constant at the initial capital, drawdowns in [0, 1].
head -n 1 results/equity.csv | grep -qx 'timestamp,time,domain,policy,buy_and_hold,cash,drawdown,buy_and_hold_drawdown' ||
  fail "equity.csv header: $(head -n 1 results/equity.csv)"
[ "$(($(wc -l < results/equity.csv) - 1))" -eq "$bars" ] || fail "equity.csv rows != $bars"
sed -n 2p results/equity.csv | grep -q '^1646096400,2022-03-01T01:00:00Z,0,500,' ||
  fail "equity.csv first bar: $(sed -n 2p results/equity.csv)"
awk -F, 'NR > 1 {
    for (i = 4; i <= NF; ++i) if ($i !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { print "line " NR ": not finite: " $i; bad = 1 }
    if (NR > 2 && $1 != prev + 3600) { print "line " NR ": not the next hour"; bad = 1 }
    if ($4 <= 0 || $5 <= 0) { print "line " NR ": non-positive value"; bad = 1 }
    if ($6 != 500) { print "line " NR ": cash " $6; bad = 1 }
    if ($7 < 0 || $7 > 1 || $8 < 0 || $8 > 1) { print "line " NR ": drawdown"; bad = 1 }
    prev = $1
  } END { exit bad }' results/equity.csv || fail "equity.csv values"
# The policy actually traded (its curve is not the cash line).
awk -F, 'NR > 2 && $4 != 500 { moved = 1 } END { exit !moved }' results/equity.csv ||
  fail "the policy's equity never moved"

# positions.csv: the same bars; per asset a holding (>= 0) and a weight;
# cash and asset weights add up to 1; the value is the equity's on a
# single domain.
head -n 1 results/positions.csv | grep -qx 'timestamp,time,domain,value,cash,cash_weight,ADAUSD,ADAUSD_weight,AVAXUSD,AVAXUSD_weight,BNBUSD,BNBUSD_weight' ||
  fail "positions.csv header: $(head -n 1 results/positions.csv)"
[ "$(($(wc -l < results/positions.csv) - 1))" -eq "$bars" ] || fail "positions.csv rows != $bars"
awk -F, 'NR > 1 {
    w = $6
    for (i = 4; i <= NF; ++i) if ($i !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { print "line " NR ": not finite: " $i; bad = 1 }
    for (i = 7; i <= NF; i += 2) { if ($i < 0) { print "line " NR ": negative holding"; bad = 1 } w += $(i + 1) }
    if (w < 1 - 1e-9 || w > 1 + 1e-9) { print "line " NR ": weights add up to " w; bad = 1 }
    if ($5 < 0 || $5 > $4 * (1 + 1e-12)) { print "line " NR ": cash outside [0, value]"; bad = 1 }
  } END { exit bad }' results/positions.csv || fail "positions.csv values"
paste -d, <(cut -d, -f1,4 results/positions.csv) <(cut -d, -f4 results/equity.csv) |
  awk -F, 'NR > 1 && $2 != $3 { print "line " NR ": value " $2 " vs equity " $3; bad = 1 } END { exit bad }' ||
  fail "positions value != equity policy"

# metrics.json: the run and every row; the numbers match the printed table.
m=results/metrics.json
for key in '"backtest"' '"policy"' '"buy_and_hold"' '"cash"' '"random"' '"comparison"' '"timing"' \
           "\"bars\": $bars" '"slippage_bps": 5.0' '"seeds": 5' '"interval_seconds": 3600' \
           '"forward_calls": 1460' '"training_dataset": true'; do
  grep -q "$key" "$m" || fail "metrics.json lacks $key"
done
# Each baseline's test: its p-value, and "beats" exactly when p < 0.05.
for name in 'buy & hold' cash random; do
  block=$(sed -n '/^  "comparison": {/,/^  }/p' "$m" | grep -A8 "\"$name\": {" | sed '/}/q')
  p=$(grep -o '"p_value": [-0-9.e+]*' <<<"$block" | cut -d' ' -f2)
  beats=$(grep -o '"beats": [a-z]*' <<<"$block" | cut -d' ' -f2)
  [ -n "$p" ] && [ -n "$beats" ] || fail "metrics.json: no test against $name"
  awk -v p="$p" -v b="$beats" 'BEGIN { exit !((p < 0.05) == (b == "true")) }' ||
    fail "metrics.json: $name p = $p but beats = $beats"
done
grep -Eq '"difference_se": (0\.[0-9]*[1-9]|[1-9])' "$m" ||
  fail "metrics.json: no positive standard error of the paired difference"
grep -A2 '"policy": {' "$m" | grep -Eq '"sharpe_se": [0-9.]+(e-?[0-9]+)?,' ||
  fail "metrics.json: the policy's Sharpe has no finite standard error"
sharpe=$(grep -A1 '"policy": {' "$m" | grep -o '"sharpe": [-0-9.e+]*' | cut -d' ' -f2)
printf -v shown '%.2f' "$sharpe"
grep -Eq "^policy +$shown ± " backtest.out || fail "printed policy Sharpe != metrics.json ($shown)"
bh_return=$(grep -A4 '"buy_and_hold": {' "$m" | grep -o '"total_return": [-0-9.e+]*' | cut -d' ' -f2)
# (its account starts in cash like the policy's: the capital, 500, then the
# coins bought with fees and slippage, so its return pays them)
first_bh=$(sed -n 2p results/equity.csv | cut -d, -f5)
second_bh=$(sed -n 3p results/equity.csv | cut -d, -f5)
last_bh=$(tail -n 1 results/equity.csv | cut -d, -f5)
awk -v a="$first_bh" -v p="$second_bh" 'BEGIN { exit !(a == 500 && p < 500 * 1.1) }' ||
  fail "buy & hold's curve does not start with the capital, 500 ($first_bh, then $second_bh)"
awk -v r="$bh_return" -v a="$first_bh" -v b="$last_bh" 'BEGIN { d = b / a - 1 - r; exit !(d < 1e-9 && d > -1e-9) }' ||
  fail "buy & hold's return in metrics.json ($bh_return) is not its curve's ($first_bh to $last_bh)"

# ---- the charts in a real browser.
browser_rc=0
for chart in equity drawdown; do
  set +e
  bash "$here/browser_check.sh" "results/$chart.svg" "$out_dir/$chart.png" 1
  rc=$?
  set -e
  if [ "$rc" -eq 77 ]; then
    browser_rc=77
  elif [ "$rc" -ne 0 ]; then
    fail "browser check of $chart.svg"
  else
    echo "screenshot: $out_dir/$chart.png"
  fi
done
cp results/equity.svg results/drawdown.svg results/metrics.json "$out_dir/"

# ---- a second run replaces the earlier backtest in place.
"$ristretto" backtest policy --dataset data.rds --from 2022-04-01 \
  --out results --random-seeds 2 > second.out 2>&1 || { cat second.out >&2; fail "second backtest"; }
grep -q 'random (2 seeds' second.out || fail "second run's table"
grep -q '"seeds": 2' results/metrics.json || fail "second run did not replace metrics.json"
sed -n 2p results/equity.csv | grep -q '^[0-9]*,2022-04-01T01:00:00Z,' || fail "second run's equity.csv"
[ -z "$(find . -maxdepth 1 -name '.results*')" ] || fail "temporary directory left behind"

# ---- another dataset with the same layout (assets, features, interval):
# the policy runs on it, without the in-sample note.
"$ristretto" dataset synth --out other.rds --assets 3 --rows 800 --interval 1h \
  --seed 9 > /dev/null
"$ristretto" backtest policy --dataset other.rds --out other_results \
  --random-seeds 2 > other.out 2>&1 || { cat other.out >&2; fail "backtest on another dataset"; }
! grep -q '^note:' other.out || fail "in-sample note on another dataset"
grep -q '"training_dataset": false' other_results/metrics.json || fail "training_dataset on another dataset"
[ "$(($(wc -l < other_results/equity.csv) - 1))" -eq $((800 - 63 - 3)) ] ||
  fail "another dataset: equity.csv rows (800 bars - 63 warm-up - 3)"

# ---- a contract written before the interval was recorded: a warning on
# stderr, not an error.
cp -r policy no_interval && sed -i '/"interval_seconds"/d' no_interval/contract.json
! grep -q interval_seconds no_interval/contract.json || fail "could not drop interval_seconds"
"$ristretto" backtest no_interval --dataset data.rds --from 2022-04-01 --out no_interval_results \
  --random-seeds 2 > no_interval.out 2> no_interval.err || { cat no_interval.err >&2; fail "backtest without an interval"; }
grep -q '^backtest: warning: the policy.s contract does not record its bar interval' no_interval.err ||
  { cat no_interval.err >&2; fail "no warning for a contract without interval"; }

# ---- two domains: hourly CSVs with a 12-bar hole (longer than the import
# forward-fills) import as two contiguous domains; each is played from the
# initial capital, the files hold S − 2·lookback + 1 bars per domain of S
# rows, and the chained equity continues across the gap.
mkdir -p csv
seed=0
for sym in AAAUSD BBBUSD; do
  seed=$((seed + 1))
  awk -v seed="$seed" 'BEGIN {
      srand(seed); p = 100
      print "timestamp,open,high,low,close,volume"
      for (i = 0; i < 900; ++i) {
        o = p; p = p * (1 + (rand() - 0.5) * 0.02)
        if (i >= 400 && i < 412) continue
        h = (o > p ? o : p) * 1.001; l = (o < p ? o : p) * 0.999
        printf "%d,%.6f,%.6f,%.6f,%.6f,%.3f\n", 1699999200 + i * 3600, o, h, l, p, 100 + rand() * 50
      }
    }' > "csv/$sym.csv"
done
"$ristretto" dataset import --csv-dir csv --interval 1h --out gap.rds > import.log 2>&1 ||
  { cat import.log >&2; fail "import of the gapped CSVs"; }
"$ristretto" dataset info gap.rds > gap.info
grep -q '^domains         2$' gap.info || { cat gap.info >&2; fail "the gapped data is not two domains"; }
# S − 2·lookback + 1 bars per domain of S rows (lookback 2, given below).
gap_bars=$(awk '/^  \[[0-9]+, [0-9]+\) [0-9]+ rows/ { sum += $3 - 3 } END { print sum }' gap.info)
"$ristretto" train --dataset gap.rds --budget 512 --envs 2 --rollout 64 --episode 100 \
  --policy-hidden 16 --epochs 1 --minibatch 128 --lookback 2 --export gap_policy --quiet > gap_train.log 2>&1 ||
  { cat gap_train.log >&2; fail "train on the gapped data"; }
"$ristretto" backtest gap_policy --dataset gap.rds --out gap_results --random-seeds 3 \
  > gap.out 2>&1 || { cat gap.out >&2; fail "backtest on two domains"; }
grep -q ", $gap_bars bars (2 domains) " gap.out || { cat gap.out >&2; fail "two-domain header ($gap_bars bars)"; }
for f in equity.csv positions.csv; do
  [ "$(($(wc -l < "gap_results/$f") - 1))" -eq "$gap_bars" ] || fail "gap_results/$f rows != $gap_bars"
done
awk -F, 'NR > 2 && $3 != prev_domain {
    ++switches
    d = $4 / prev_policy - 1
    if (d > 1e-9 || d < -1e-9) { print "equity jumps across the gap: " prev_policy " -> " $4; bad = 1 }
  }
  NR > 1 { prev_domain = $3; prev_policy = $4 }
  END { exit bad || switches != 1 }' gap_results/equity.csv || fail "chained equity across the two domains"
awk -F, 'NR > 2 && $3 != prev { if ($4 != 500 || $5 != 500) bad = 1 } NR > 1 { prev = $3 }
  END { exit bad }' gap_results/positions.csv || fail "the second domain does not start from the initial capital"

# ---- refits: an export of a trial judged on capital split among its refits
# holds refit-0/, refit-1/, ... Two copies of one policy split the capital
# between two identical accounts, so the split scores as the policy itself
# (every column but trades, which two sub-accounts place twice).
mkdir -p refits/refit-0 refits/refit-1
cp policy/policy.pt policy/contract.json refits/refit-0/
cp policy/policy.pt policy/contract.json refits/refit-1/
"$ristretto" backtest refits --dataset data.rds --from 1646092800 \
  --to 2022-05-01T00:00:00Z --out refit_results --random-seeds 5 \
  > refits.out 2>&1 || { cat refits.out >&2; fail "backtest of two refits"; }
grep -q '^policy: 2 refits, capital split equally among them' refits.out ||
  fail "no refits line"
single=$(awk '/^policy  / { print $2, $3, $4, $5, $6, $7, $8, $9, 2 * $10 }' backtest.out)
split=$(awk '/^policy  / { print $2, $3, $4, $5, $6, $7, $8, $9, $10 }' refits.out)
[ -n "$single" ] && [ "$single" = "$split" ] ||
  fail "two identical refits score '$split', the policy alone '$single' (trades doubled)"
# The random baseline is split like the policy: each of its 5 accounts is
# capital split among 2 random policies.
grep -q '^random (5 seeds, each split among 2 like the policy, mean ± std)  ' refits.out ||
  fail "the random row of a 2-refit backtest is not split among 2"
grep -q '"split": 2' refit_results/metrics.json ||
  fail "metrics.json of a 2-refit backtest lacks the random split"
echo "refits ok: $split"

# ---- bad input: one line on stderr with the expected text, exit != 0, and
# nothing new on disk.
cp -r policy no_contract && rm no_contract/contract.json
cp -r policy no_weights && rm no_weights/policy.pt
cp -r policy junk_weights && echo "not a TorchScript archive" > junk_weights/policy.pt
cp -r policy other_lookback && sed -i 's/"lookback": 2/"lookback": 3/' other_lookback/contract.json
cp -r policy other_features && sed -i 's/"rsi_14"/"rsi_7"/' other_features/contract.json
"$ristretto" dataset synth --out four_assets.rds --assets 4 --rows 600 --interval 1h > /dev/null
"$ristretto" dataset synth --out half_hour.rds --assets 3 --rows 600 --interval 30m > /dev/null
head -c 300 data.rds > truncated.rds
echo "not a dataset" > garbage.rds
mkdir -p not_ours && echo keep > not_ours/notes.txt
# Not regular files, a contract too large to be one, a symbolic-link loop.
cp -r policy fifo_contract && rm fifo_contract/contract.json && mkfifo fifo_contract/contract.json
cp -r policy huge_contract && truncate -s 20M huge_contract/contract.json
ln -s loop_policy loop_policy
# A policy whose forward pass never returns (a policy directory is code):
# the exported TorchScript with its forward rewritten as an endless loop.
cp -r policy hang_policy
python3 - hang_policy/policy.pt <<'PY'
import re, sys, zipfile
path = sys.argv[1]
with zipfile.ZipFile(path) as z:
    items = [(i, z.read(i.filename)) for i in z.infolist()]
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
    for info, data in items:
        if info.filename.endswith("code/__torch__.py.debug_pkl"):
            continue  # source ranges of the original code
        if info.filename.endswith("code/__torch__.py"):
            text = data.decode()
            head = text[:text.index("    obs: Tensor) -> Tensor:")]
            data = (head + "    obs: Tensor) -> Tensor:\n"
                    "    x = obs\n"
                    "    while bool(torch.gt(torch.sum(torch.abs(x)), -1.0)):\n"
                    "      x = torch.mul(x, 1.0)\n"
                    "    return x\n").encode()
        z.writestr(info, data)
PY
cp -r refits refits_stale && echo '{"lockbox":{"bars":1,"refits":3}}' > refits_stale/evaluation.json
cp -r refits refits_mixed && cp other_lookback/contract.json refits_mixed/refit-1/contract.json

expect_fail() {  # expected-text args...
  local want=$1
  shift
  local before after rc=0
  rm -f bad.out bad.err
  before=$(find . | sort)
  "$ristretto" backtest "$@" --out bad_out > bad.out 2> bad.err || rc=$?
  after=$(find . | sort | grep -v -e '^./bad.out$' -e '^./bad.err$')
  [ "$rc" -ne 0 ] || fail "backtest $* succeeded"
  [ "$(wc -l < bad.err)" -eq 1 ] || { cat bad.err >&2; fail "backtest $*: not one line on stderr"; }
  grep -qF -- "$want" bad.err || { cat bad.err >&2; fail "backtest $*: stderr lacks '$want'"; }
  [ ! -s bad.out ] || fail "backtest $*: printed results"
  [ "$before" = "$after" ] || fail "backtest $*: files changed: $(diff <(echo "$before") <(echo "$after"))"
  echo "bad input ok (exit $rc): $(cat bad.err)"
}
expect_fail "has no contract.json" no_contract --dataset data.rds
expect_fail "has no policy.pt" no_weights --dataset data.rds
expect_fail "policy directory missing does not exist" missing --dataset data.rds
expect_fail "fifo_contract/contract.json is a FIFO, not a regular file" fifo_contract --dataset data.rds
expect_fail "huge_contract/contract.json is 20971520 bytes, more than the 16777216 allowed" \
  huge_contract --dataset data.rds
expect_fail "policy directory loop_policy cannot be read (Too many levels of symbolic links)" \
  loop_policy --dataset data.rds
expect_fail "hang_policy/policy.pt: one forward pass of the policy ran for more than 2s (--forward-timeout-s)" \
  hang_policy --dataset data.rds --forward-timeout-s 2
expect_fail "--forward-timeout-s 0 must be in (0, 86400]" policy --dataset data.rds --forward-timeout-s 0
expect_fail "junk_weights/policy.pt is not a TorchScript module" junk_weights --dataset data.rds
expect_fail "asset_symbols is [\"ADAUSD\",\"AVAXUSD\",\"BNBUSD\"] in the policy's contract but" \
  policy --dataset four_assets.rds
expect_fail "interval_seconds is 3600 in the policy's contract but 1800 in the dataset" \
  policy --dataset half_hour.rds
expect_fail "feature_names[8] is \"rsi_7\" in the policy's contract but \"rsi_14\" in the dataset" \
  other_features --dataset data.rds
expect_fail "obs_size is 88 in the policy's contract but the dataset gives 130" \
  other_lookback --dataset data.rds
expect_fail "--from 2010-01-01 is outside the data" policy --dataset data.rds --from 2010-01-01
expect_fail "--to 2030-01-01T00:00:00Z is outside the data" policy --dataset data.rds \
  --to 2030-01-01T00:00:00Z
expect_fail "--from 2022-04-01 is not before --to 2022-03-01" policy --dataset data.rds \
  --from 2022-04-01 --to 2022-03-01
expect_fail "leave at most 5 contiguous bars, fewer than the 6 that lookback 2 needs" \
  policy --dataset data.rds --from 2022-04-01T00:00:00Z --to 2022-04-01T05:00:00Z
expect_fail "--from yesterday is not a time" policy --dataset data.rds --from yesterday
expect_fail "cannot read dataset truncated.rds" policy --dataset truncated.rds
expect_fail "cannot read dataset garbage.rds" policy --dataset garbage.rds
expect_fail "cannot read dataset nowhere.rds" policy --dataset nowhere.rds
expect_fail "--dataset" policy
expect_fail "says the lockbox judged 3 refit(s), but 2 policy(ies) are there" \
  refits_stale --dataset data.rds
expect_fail "refits_mixed/refit-1 has another contract than refits_mixed/refit-0" \
  refits_mixed --dataset data.rds
expect_fail "--slippage-bps -1 must be in [0, 10000)" policy --dataset data.rds --slippage-bps -1
# An --out that holds something else is never replaced.
rc=0
"$ristretto" backtest policy --dataset data.rds --out not_ours > bad.out 2> bad.err || rc=$?
[ "$rc" -ne 0 ] && grep -q "not an earlier backtest's output" bad.err || fail "--out over a foreign directory"
[ "$(ls -A not_ours)" = "notes.txt" ] || fail "a foreign --out directory was changed"

echo "backtest_test: OK"
exit "$browser_rc"
