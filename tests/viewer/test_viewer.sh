#!/bin/sh
# test_viewer.sh — `heapgraph view` in a real browser: makes the snapshots
# (analysis fixtures, the hostile-names fixture, a capture by examples/demo,
# the sampled-stacks fixture, a `heapgraph run --stacks` of tests/stacks/sites)
# and runs browser.cjs (playwright-core driving Debian's chromium).
# Screenshots of every view land in $BUILD/viewer-shots/.
set -u
BUILD=${BUILD:-build}
here=$(cd "$(dirname "$0")/../.." && pwd)
name=viewer
. "$here/tests/viewer/browser_env.sh"
dir="$BUILD/viewer-test"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$BUILD/tests/analysis_mkfixture" "$dir" || exit 1
"$BUILD/tests/viewer_mkhostile" "$dir/hostile.hgsnap" || exit 1
"$BUILD/tests/viewer_mkstacks" "$dir/sampled.hgsnap" || exit 1
"$BUILD/tests/viewer_mkstacks" "$dir/many.hgsnap" 3000 || exit 1
# allocation stacks recorded by the interposer (tests/stacks/sites.c); the ASan
# library has none (ASan owns malloc), so a sanitizer build checks the
# stacks views on the sampled fixture only
if [ "${SANITIZE:-0}" != 1 ]; then
  timeout 120 "$BUILD/heapgraph" run --stacks -o "$dir/stacks.hgsnap" -- "$BUILD/stacks/sites" sites \
    "$(cd "$BUILD/stacks" && pwd)/libsite.so" >/dev/null 2>"$dir/stacks.err" || { cat "$dir/stacks.err"; exit 1; }
fi
# the demo leaks on purpose (that is what the Leaks view shows)
ASAN_OPTIONS=detect_leaks=0 "$BUILD/examples/demo" "$dir/demo.hgsnap" >/dev/null || exit 1
exec node "$here/tests/viewer/browser.cjs" "$BUILD/heapgraph" "$dir" "$BUILD/viewer-shots" "$pw"
