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
#   preloaded libheapgraph_stacks.so preloaded, not recording (the wrappers' cost)
# and per other allocator (jemalloc, tcmalloc_minimal, mimalloc preloaded,
# when installed; $HG_BENCH_ALLOC_ROUNDS rounds, default 3): the program
# alone, heaptrack and heapgraph run --stacks on that allocator (the
# snapshot then lists the recorder's blocks).
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
L=$(cd "$B" && pwd)/libheapgraph_stacks.so
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
# the same on the other allocators (preloaded: the program stays the same)
libdir=$(dirname "$(${CC:-cc} -print-file-name=libc.so.6)")
for a in jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4 mimalloc:libmimalloc.so.2 mimalloc:libmimalloc.so.3; do
  n=${a%%:*} f=$libdir/${a#*:}
  [ -f "$f" ] || f=/usr/lib/x86_64-linux-gnu/${a#*:}
  [ -f "$tmp/$n.info" ] && continue # one mimalloc
  [ -f "$f" ] || { echo "bench-stacks: $n not installed, skipped"; continue; }
  for r in $(seq "${HG_BENCH_ALLOC_ROUNDS:-3}"); do
    run "$n.base" env LD_PRELOAD="$f" "$W" "$ITER" "$LIVE"
    run "$n.heaptrack" env LD_PRELOAD="$f" heaptrack -o "$tmp/ht.$r" "$W" "$ITER" "$LIVE"
    run "$n.full" env LD_PRELOAD="$f" "$CLI" run --stacks -o "$tmp/$n.hgsnap" -- "$W" "$ITER" "$LIVE"
    rm -f "$tmp"/ht.*
  done
  "$CLI" info --json "$tmp/$n.hgsnap" >"$tmp/$n.info" || exit 1
done
"$CLI" stacks --json "$tmp/full.hgsnap" >"$tmp/full.json" || exit 1
/usr/bin/python3 - "$tmp/t" "$tmp/full.json" "$ITER" "$LIVE" "$tmp" <<'PYEOF'
import json, os, statistics, sys
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
for a in ("glibc", "jemalloc", "tcmalloc", "mimalloc"):
    k = ("base", "heaptrack", "full") if a == "glibc" else tuple(a + "." + x for x in ("base", "heaptrack", "full"))
    if k[0] not in m:
        continue
    b, h, f = (m[x] for x in k)
    cb, ch, cf = (mc[x] for x in k)
    nodes = ""
    if a != "glibc" and os.path.exists(sys.argv[5] + "/" + a + ".info"):
        nodes = ", snapshot %d nodes" % json.load(open(sys.argv[5] + "/" + a + ".info"))["counts"]["nodes"]
    print("%-8s wall ms: base %d, heaptrack %d, full %d; full / base = %.2f, full / heaptrack = %.2f, "
          "cost / heaptrack cost = %.2f (%d rounds%s)" %
          (a, b, h, f, f / b, f / h, (f - b) / max(h - b, 1), len(t[k[0]]), nodes))
    print("%-8s cpu ms:  base %d, heaptrack %d, full %d; full / base = %.2f, full / heaptrack = %.2f" %
          ("", cb, ch, cf, cf / max(cb, 1), cf / max(ch, 1)))
PYEOF
uptime | sed 's/.*load/load/'
