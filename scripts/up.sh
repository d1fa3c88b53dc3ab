#!/usr/bin/env bash
# The main job: set up, build, then run a small hyper-parameter study end to
# end on built-in synthetic data with `ristretto up` — a private PostgreSQL
# cluster (started for you under the data directory), the coordinator, one
# learner and two actors. Prints progress, the leaderboard and where the best
# policy was exported. Ctrl-C stops everything cleanly; running it again
# resumes the study. Usage: scripts/up.sh [extra `ristretto up` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
DATA=${RISTRETTO_DATA:-ristretto-data}
exec "${BUILD_DIR:-build}/cli/ristretto" up --study deploy/studies/small.yaml \
  --data-dir "$DATA" --actors 2 "$@"
