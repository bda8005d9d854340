#!/bin/sh
# dashboard.sh — the read side of `heapgraph serve` end to end (docs/serve.md
# section 4): captures the fleet test app (tests/fleet/fleet_app.cpp) at two
# versions on six devices, two sessions each (the planted issues of
# tests/fleet/test_fleet.py), and runs dashboard.cjs: uploads over HTTP, the
# issues API against `heapgraph fleet --json`, the read auth, and Chromium
# (playwright-core, as tests/viewer) over every dashboard page. Screenshots
# land in $BUILD/dashboard-shots/.
set -u
BUILD=${BUILD:-build}
here=$(cd "$(dirname "$0")/../.." && pwd)
pw="$here/.deps/viewer/node_modules/playwright-core"
[ -f "$pw/package.json" ] || pw="$here/.deps/devtools/node_modules/playwright-core"
if [ ! -f "$pw/package.json" ] || [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null; then
  echo "dashboard: playwright-core, chromium or node missing (scripts/deps.sh check)"
  echo "dashboard: 0 passed, 1 failed"
  exit 1
fi
dir="$BUILD/dashboard-test"
rm -rf "$dir" && mkdir -p "$dir/snaps" || exit 1
seed=1
for v in 1.0 2.0; do
  for d in 0 1 2 3 4 5; do
    for s in 0 1; do
      timeout 120 "$BUILD/fleet/fleet_app" "$dir/snaps/$v-d$d-s$s.hgsnap" "$v" "$d" "$s" "$seed" >/dev/null 2>"$dir/capture.err" ||
        { cat "$dir/capture.err"; echo "dashboard: 0 passed, 1 failed"; exit 1; }
      seed=$((seed + 1))
    done
  done
done
exec node "$here/tests/serve/dashboard.cjs" "$BUILD/heapgraph" "$dir/snaps" "$dir/work" "$BUILD/dashboard-shots" "$pw"
