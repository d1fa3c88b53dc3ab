#!/usr/bin/env bash
# Opens an HTML or SVG file in headless Chromium (Debian's `chromium`) and
# checks what a user would see:
#   * the page logs nothing to the console (no error, no warning, no log),
#     and makes no network request (every host resolves to nothing, so a
#     page that needs the network shows broken charts and fails below);
#   * it has at least MIN_CHARTS charts (<svg class="chart">, see
#     report/svg_chart.h) and every chart draws data: at least one point,
#     bar or line vertex, and as many as its data-points attribute says;
#   * a screenshot is saved to SCREENSHOT for the test log.
# Usage: browser_check.sh FILE SCREENSHOT.png [MIN_CHARTS]
# Prints one line per chart and ends with "browser_check: OK" (exit 0) or a
# reason (exit 1). Exit 77 if chromium is not installed (ctest: skipped).
set -uo pipefail
file=$(readlink -f "$1")
shot=$2
min_charts=${3:-1}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "browser_check: chromium is not installed (apt-get install chromium)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A private profile, no sandbox (tests run as root in CI), no network.
flags=(--headless --no-sandbox --disable-gpu --no-first-run
       --user-data-dir="$work/profile" --disable-extensions
       --host-resolver-rules="MAP * ~NOTFOUND"
       --enable-logging=stderr --v=0)
if ! timeout 120 "$browser" "${flags[@]}" --virtual-time-budget=5000 \
    --dump-dom "file://$file" >"$work/dom.html" 2>"$work/log.txt"; then
  echo "browser_check: chromium failed on $file:"
  tail -n 20 "$work/log.txt"
  exit 1
fi
if grep -q ':CONSOLE' "$work/log.txt"; then
  echo "browser_check: console output while loading $file:"
  grep ':CONSOLE' "$work/log.txt"
  exit 1
fi
# An SVG document serialises its xmlns first; put class="chart" first.
sed -E 's/<svg xmlns="[^"]*" class="chart"/<svg class="chart"/g' "$work/dom.html" >"$work/dom.norm"
# One chart per record: split the DOM at every chart's opening tag.
report=$(awk 'BEGIN { RS = "<svg class=\"chart\""; n = 0 }
  NR > 1 {
    rec = $0
    sub(/<\/svg>.*/, "", rec)
    head = rec; sub(/>.*/, "", head)
    id = head; sub(/^.*data-chart="/, "", id); sub(/".*/, "", id)
    want = head; sub(/^.*data-points="/, "", want); sub(/".*/, "", want)
    pts = gsub(/class="pt"/, "&", rec)
    bars = gsub(/class="bar"/, "&", rec)
    verts = 0; tmp = rec
    while (match(tmp, /class="series" data-points="[0-9]+"/)) {
      s = substr(tmp, RSTART, RLENGTH); gsub(/[^0-9]/, "", s); verts += s
      tmp = substr(tmp, RSTART + RLENGTH)
    }
    drawn = pts + bars + verts
    printf "chart %s: %d points, %d bars, %d line vertices (data-points %s)\n", id, pts, bars, verts, want
    if (drawn == 0 || drawn != want + 0) { bad = bad " " id }
    n++
  }
  END { printf "charts %d bad%s\n", n, bad }' "$work/dom.norm")
echo "$report" | grep '^chart '
summary=$(echo "$report" | tail -n 1)
charts=$(echo "$summary" | awk '{print $2}')
bad=$(echo "$summary" | sed 's/^charts [0-9]* bad//')
timeout 120 "$browser" "${flags[@]}" --hide-scrollbars --window-size=1280,3000 \
  --screenshot="$work/shot.png" "file://$file" >/dev/null 2>&1
if [ -s "$work/shot.png" ]; then
  mkdir -p "$(dirname "$shot")" && cp "$work/shot.png" "$shot"
  echo "browser_check: screenshot $shot"
else
  echo "browser_check: no screenshot was written"
  exit 1
fi
if [ "$charts" -lt "$min_charts" ]; then
  echo "browser_check: $charts charts in $file, expected at least $min_charts"
  exit 1
fi
if [ -n "$bad" ]; then
  echo "browser_check: charts without data or with a wrong count:$bad"
  exit 1
fi
echo "browser_check: OK ($charts charts)"
