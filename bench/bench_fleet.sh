#!/bin/sh
# bench_fleet.sh BUILD — fleet figures (make bench-fleet):
#  1. summary time per snapshot against `heapgraph top` on the same file
#     (goal <= 1.2x): `heapgraph fleet FILE` with an empty cache (load,
#     dominators, leaks, signatures, write the summary) vs `heapgraph top
#     FILE` (load, dominators, classes), best of 3 each, same run; and the
#     same `heapgraph fleet` again (the summary from the cache);
#  2. issues over 100,000 summaries (goal <= 2 s, <= 1 GB).
set -eu
B=${1:-build}
HG=$B/heapgraph
SNAP=$B/bench/bench_fleet.hgsnap
CACHE=$B/bench/fleet-cache
NODES=${FLEET_BENCH_NODES:-1000000}
$B/bench/bench_fleet snapshot "$SNAP" "$NODES"
ns() { date +%s%N; }
best_top=0; best_fleet=0; best_cached=0
for i in 1 2 3; do
  t0=$(ns); $HG top "$SNAP" -n 20 >/dev/null; t1=$(ns)
  rm -rf "$CACHE"
  $HG fleet "$SNAP" --cache-dir "$CACHE" >/dev/null; t2=$(ns)
  $HG fleet "$SNAP" --cache-dir "$CACHE" >/dev/null; t3=$(ns)
  top=$(( (t1 - t0) / 1000000 )); fl=$(( (t2 - t1) / 1000000 )); ca=$(( (t3 - t2) / 1000000 ))
  if [ $best_top -eq 0 ] || [ $top -lt $best_top ]; then best_top=$top; fi
  if [ $best_fleet -eq 0 ] || [ $fl -lt $best_fleet ]; then best_fleet=$fl; fi
  if [ $best_cached -eq 0 ] || [ $ca -lt $best_cached ]; then best_cached=$ca; fi
done
size=$(ls -l "$CACHE"/*.hgsum | awk '{print $5}')
echo "fleet summary: $NODES-node snapshot ($(ls -l "$SNAP" | awk '{print $5}') bytes): heapgraph fleet $best_fleet ms vs heapgraph top $best_top ms: $(awk "BEGIN{printf \"%.2f\", $best_fleet/$best_top}")x (goal <= 1.2x); cached $best_cached ms; summary $size bytes"
$B/bench/bench_fleet compare "$SNAP"
rm -rf "$CACHE" "$SNAP"
$B/bench/bench_fleet issues 100000
