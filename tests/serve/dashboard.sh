#!/bin/sh
# dashboard.sh — the read side of `heapgraph serve` end to end (docs/serve.md
# section 4): captures the fleet test app (tests/fleet/fleet_app.cpp) at two
# versions on six devices, two sessions each (the planted issues of
# tests/fleet/test_fleet.py), and runs dashboard.cjs: uploads over HTTP, the
# issues API against `heapgraph fleet --json`, the read auth, and Chromium
# (playwright-core, as tests/viewer) over every dashboard page. Screenshots
# land in $BUILD/dashboard-shots/. The API part runs again with the store on
# a PostgreSQL 15 the test starts (tests/serve/pg.sh). Two snapshots with HTML/JS in their version,
# device model and class names (tests/viewer/mkhostile.c) check the escaping.
set -u
BUILD=${BUILD:-build}
here=$(cd "$(dirname "$0")/../.." && pwd)
name=dashboard
. "$here/tests/viewer/browser_env.sh"
dir="$BUILD/dashboard-test"
rm -rf "$dir" && mkdir -p "$dir/snaps" || exit 1
# two sessions of a device at once (the machine has two cores)
seed=1
for v in 1.0 2.0; do
  for d in 0 1 2 3 4 5; do
    for s in 0 1; do
      timeout 120 "$BUILD/fleet/fleet_app" "$dir/snaps/$v-d$d-s$s.hgsnap" "$v" "$d" "$s" "$seed" >/dev/null \
        2>"$dir/capture-$s.err" &
      seed=$((seed + 1))
    done
    wait
    for s in 0 1; do
      [ -s "$dir/snaps/$v-d$d-s$s.hgsnap" ] || { cat "$dir/capture-$s.err"; echo "dashboard: 0 passed, 1 failed"; exit 1; }
    done
  done
done
# hostile strings (version, device model, class names) for the escaping checks
"$BUILD/tests/viewer_mkhostile" "$dir/hostile-1.hgsnap" device-1 || exit 1
"$BUILD/tests/viewer_mkhostile" "$dir/hostile-2.hgsnap" device-2 || exit 1
run() {
  node "$here/tests/serve/dashboard.cjs" "$BUILD/heapgraph" "$dir/snaps" "$dir/$1" "$BUILD/dashboard-shots" "$pw" \
    "$dir/hostile-1.hgsnap" "$dir/hostile-2.hgsnap" >"$dir/$1.log" 2>&1
  cat "$dir/$1.log"
  p=$((p + $(sed -n 's/^dashboard: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$dir/$1.log" | tail -n 1)))
  f=$((f + $(sed -n 's/^dashboard: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$dir/$1.log" | tail -n 1)))
}
p=0 f=0
run sqlite
# the read API on PostgreSQL too (the browser part once is enough)
. "$here/tests/serve/pg.sh"
# in /tmp: the server runs as nobody, who cannot enter a build directory
# under a private home (a fresh machine's clone in /root)
pgdir=$(mktemp -d /tmp/hg-dash-pg.XXXXXX)
if pg_have && pg_start "$pgdir"; then
  HG_DASH_DB=$PG_URL HG_DASH_BROWSER=0 run postgres
  pg_stop "$pgdir"
else
  echo "dashboard: PostgreSQL 15 missing or not starting (scripts/deps.sh check)"
  f=$((f + 1))
fi
rm -rf "$pgdir"
echo "dashboard: $p passed, $f failed"
[ "$f" -eq 0 ]
