#!/bin/sh
# bench_export.sh — `make bench-export`: heapgraph's heapsnapshot export
# against Chrome DevTools' own loader reading that file (the work a person
# waits for when opening it in the Memory panel), on bench_analysis graphs of
# 1 M and 10 M nodes (3 edges each; HG_BENCH_EXPORT_SIZES overrides).
# For each size, back to back: export (wall s, peak RSS), the DevTools
# loader in node (HeapSnapshotLoader + JSHeapSnapshot initialisation: parse,
# dominators, retained sizes, aggregates), export again, and the jsonl
# export; then the ratio loader / export (same run, so machine load mostly
# cancels). Up to 1 M nodes it also checks DevTools' retained sizes and
# dominators against heapgraph's (tests/export/devtools_compare.py). The
# snapshots are cached under $BUILD/bench/.
set -eu
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cli="$top/$BUILD/heapgraph"
gen="$top/$BUILD/bench/bench_analysis"
bundle="$top/$BUILD/export/devtools_worker.mjs"
mkdir -p "$top/$BUILD/bench" "$top/$BUILD/export"
[ -f "$bundle" ] || node "$top/tests/export/bundle.mjs" "$top/.deps/devtools" "$bundle"
measure() { # prints "wall_s peak_mib" of the command
  /usr/bin/time -f '%e %M' -o "$top/$BUILD/bench/export.time" "$@" >/dev/null
  awk '{printf "%.2f %.0f", $1, $2 / 1024}' "$top/$BUILD/bench/export.time"
}
echo "bench-export: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for n in ${HG_BENCH_EXPORT_SIZES:-1000000 10000000}; do
  snap="$top/$BUILD/bench/export_$n.hgsnap"
  hs="$top/$BUILD/bench/export_$n.heapsnapshot"
  [ -f "$snap" ] || "$gen" "$snap" "$n" 3 >/dev/null
  set -- $(measure "$cli" export "$snap" --format heapsnapshot -o "$hs")
  e1=$1 m1=$2
  size=$(stat -c %s "$hs")
  set -- $(measure node --max-old-space-size=20000 "$top/tests/export/devtools_check.mjs" "$bundle" time "$hs")
  l=$1 lm=$2
  set -- $(measure "$cli" export "$snap" --format heapsnapshot -o "$hs")
  e2=$1
  set -- $(measure "$cli" export "$snap" --format jsonl -o "$hs.jsonl")
  j=$1 jm=$2
  jsize=$(stat -c %s "$hs.jsonl")
  rm -f "$hs" "$hs.jsonl"
  # correctness at scale: every reachable block's retained size and dominator
  [ "$n" -le 1000000 ] && ${PYTHON:-/usr/bin/python3} "$top/tests/export/devtools_compare.py" \
    "$cli" "$bundle" "$snap" | sed "s/^/$n nodes: /"
  awk -v n="$n" -v e1="$e1" -v e2="$e2" -v m1="$m1" -v l="$l" -v lm="$lm" -v size="$size" \
      -v j="$j" -v jm="$jm" -v jsize="$jsize" 'BEGIN {
    e = (e1 + e2) / 2
    printf "%9d nodes: heapsnapshot %.0f MB: heapgraph export %.2f s / %.2f s (%d MiB); DevTools loader %.2f s (%d MiB)\n", n, size / 1e6, e1, e2, m1, l, lm
    printf "%9d nodes: jsonl %.0f MB in %.2f s (%d MiB)\n", n, jsize / 1e6, j, jm
    printf "%9d nodes: ratio DevTools loader / heapgraph export: time %.1fx, peak RSS %.1fx\n", n, l / (e > 0 ? e : 0.01), lm / (m1 > 0 ? m1 : 1)
  }'
done
