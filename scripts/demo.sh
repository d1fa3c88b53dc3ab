#!/usr/bin/env bash
# A short tour without the coordinator (scripts/up.sh runs a real study):
# set up, build, check env parity, measure env speed, and play a
# short synthetic-data episode report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
RISTRETTO=${BUILD_DIR:-build}/cli/ristretto
echo "== env parity (bundled golden case) =="
case_dir=$(mktemp -d)
trap 'rm -rf "$case_dir"' EXIT
tar xzf tests/data/golden_env_cases.tar.gz -C "$case_dir"
"$RISTRETTO" env replay "$case_dir/s08_L2_concentrated_zeroprice" --copies 4
echo "== env speed (7 assets, 98 features, 1024 copies, one core) =="
"$RISTRETTO" env bench --assets 7 --features 98 --lookback 1 --copies 1024 --seconds 2
"$RISTRETTO" env bench --assets 7 --features 98 --lookback 5 --copies 1024 --seconds 2
echo "== synthetic dataset =="
"$RISTRETTO" dataset synth --out "$case_dir/synthetic.rds" --rows 6000 --seed 7 | head -12
echo "== episode report on the held-out 30 % of a synthetic market =="
"$RISTRETTO" env demo --seed 7
echo "== PPO on a synthetic market with a planted signal (about 5 s) =="
"$RISTRETTO" train --synthetic-assets 1 --synthetic-rows 4000 \
  --predictability 1 --policy-hidden 64,64 --budget 300000 --envs 32 \
  --rollout 128 --epochs 4 --minibatch 1024 --lookback 1 --lr 1e-3 \
  --gamma 0.9 --lambda 0.9 --norm-action 5 --buy-fee 0.001 --sell-fee 0.001 \
  --reward log_return --eval-every 100000 --quiet \
  --out "$case_dir/runs" --study demo --trial t0 --fold 0 \
  --export "$case_dir/policy"
ls -l "$case_dir/policy"
