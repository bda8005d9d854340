#!/bin/sh
# bench_stacks.sh — allocation-stack recording cost on one malloc-heavy
# workload (bench_stacks_work: 4 M malloc + 4 M free through 4-11 frames,
# 1 M blocks live at the end), the same run, interleaved rounds, medians of
# wall time (process start to exit, output files written):
#   base      the program alone
#   heaptrack Debian's heaptrack (LD_PRELOAD, libunwind, interpret + zstd)
#   full      heapgraph run --stacks: every block, snapshot at exit
#   tracking  the same recording without the snapshot at exit
#   inline    tracking with every live-map update on the allocating thread
#             (HEAPGRAPH_STACKS_QUEUE=0: no update queue, no recorder thread)
#   sampled   heapgraph run --sample-bytes 524288 (no snapshot: recording only)
#   preloaded libheapgraph.so preloaded, not recording (the wrappers' cost)
# Both wall time and CPU time (user + sys, children included) are printed:
# on a loaded machine wall time also measures how the scheduler shares the
# cores (heaptrack runs two processes), CPU time only the work.
# Goals: full <= 0.5 x heaptrack (printed both as a ratio of wall times
# and of costs, i.e. wall time minus base); sampled <= 1.05 x base; tracking memory
# <= 16 bytes per live block plus the stack table (from the snapshot's stack
# info: live-map bytes / live blocks).
B=${1:-build}
W=$B/bench/bench_stacks_work
CLI=$B/heapgraph
ITER=${HG_BENCH_ITER:-4000000}
LIVE=${HG_BENCH_LIVE:-1000000}
ROUNDS=${HG_BENCH_ROUNDS:-9}
tmp=$(mktemp -d /tmp/hg_bstacks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# wall and CPU (user + sys of the process and its children, e.g. heaptrack's
# interpreter) of one run: "LABEL wall_ms cpu_ms" appended to $tmp/t. Wall
# time from the nanosecond clock (time(1) rounds it to 10 ms, which is 2 %
# of the program's own run), CPU time from time(1).
run() { # label cmd...
  l=$1; shift
  t0=$(date +%s%N)
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" ||
    { echo "bench-stacks: $l failed" >&2; cat "$tmp/err" >&2; exit 1; }
  t1=$(date +%s%N)
  awk -v l="$l" -v ns=$((t1 - t0)) '{ printf("%s %d %d\n", l, ns / 1e6, ($1 + $2) * 1000) }' "$tmp/time" >>"$tmp/t"
}
L=$(cd "$B" && pwd)/libheapgraph.so
for r in $(seq "$ROUNDS"); do
  run base "$W" "$ITER" "$LIVE"
  run heaptrack heaptrack -o "$tmp/ht.$r" "$W" "$ITER" "$LIVE"
  run full "$CLI" run --stacks -o "$tmp/full.hgsnap" -- "$W" "$ITER" "$LIVE"
  run tracking env LD_PRELOAD="$L" HEAPGRAPH_STACKS=1 "$W" "$ITER" "$LIVE"
  run inline env LD_PRELOAD="$L" HEAPGRAPH_STACKS=1 HEAPGRAPH_STACKS_QUEUE=0 "$W" "$ITER" "$LIVE"
  run sampled env LD_PRELOAD="$L" HEAPGRAPH_STACKS=1 HEAPGRAPH_SAMPLE_BYTES=524288 "$W" "$ITER" "$LIVE"
  run preloaded env LD_PRELOAD="$L" "$W" "$ITER" "$LIVE"
  rm -f "$tmp"/ht.*
done
"$CLI" stacks --json "$tmp/full.hgsnap" >"$tmp/full.json" || exit 1
/usr/bin/python3 - "$tmp/t" "$tmp/full.json" "$ITER" "$LIVE" <<'PYEOF'
import json, statistics, sys
t, c = {}, {}
for line in open(sys.argv[1]):
    k, w, u = line.split()
    t.setdefault(k, []).append(int(w))
    c.setdefault(k, []).append(int(u))
m = {k: statistics.median(v) for k, v in t.items()}
mc = {k: statistics.median(v) for k, v in c.items()}
i = json.load(open(sys.argv[2]))["info"]
it, live = int(sys.argv[3]), int(sys.argv[4])
keys = ("base", "preloaded", "heaptrack", "full", "tracking", "inline", "sampled")
print("stacks workload: %d malloc+free, %d live at exit, %d rounds interleaved (medians)" % (it, live, len(t["base"])))
print("  wall ms: " + ", ".join("%s %d" % (k, m[k]) for k in keys))
print("  cpu ms:  " + ", ".join("%s %d" % (k, mc[k]) for k in keys))
print("full tracking / heaptrack = %.2f wall, %.2f cpu (goal <= 0.5); full / base = %.2f wall" %
      (m["full"] / m["heaptrack"], mc["full"] / mc["heaptrack"], m["full"] / m["base"]))
print("full tracking cost / heaptrack cost (wall minus base) = %.2f" %
      ((m["full"] - m["base"]) / max(m["heaptrack"] - m["base"], 1)))
print("tracking without the snapshot / heaptrack = %.2f wall, %.2f cpu; with every update inline = %.2f wall, %.2f cpu" %
      (m["tracking"] / m["heaptrack"], mc["tracking"] / mc["heaptrack"],
       m["inline"] / m["heaptrack"], mc["inline"] / mc["heaptrack"]))
print("sampled 512 KiB / base = %.3f wall, %.3f cpu (goal <= 1.05); preloaded, not recording / base = %.3f wall" %
      (m["sampled"] / m["base"], mc["sampled"] / mc["base"], m["preloaded"] / m["base"]))
per = i["map_bytes"] / max(i["live_blocks"], 1)
print("tracking memory: %.1f bytes per live block in the live map (goal <= 16) + stack table %d bytes "
      "(%d stacks); total %d bytes for %d live blocks" %
      (per, i["tracking_bytes"] - i["map_bytes"], i["stacks"], i["tracking_bytes"], i["live_blocks"]))
PYEOF
uptime | sed 's/.*load/load/'
