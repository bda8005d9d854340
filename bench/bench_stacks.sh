#!/bin/sh
# bench_stacks.sh — allocation-stack recording cost on one malloc-heavy
# workload (bench_stacks_work: 4 M malloc + 4 M free through 4-11 frames,
# 1 M blocks live at the end), the same run, interleaved rounds, medians of
# wall time (process start to exit, output files written):
#   base      the program alone
#   heaptrack Debian's heaptrack (LD_PRELOAD, libunwind, interpret + zstd)
#   full      heapgraph run --stacks: every block, snapshot at exit
#   sampled   heapgraph run --sample-bytes 524288 (no snapshot: recording only)
# Goals: full <= 0.5 x heaptrack; sampled <= 1.05 x base; tracking memory
# <= 16 bytes per live block plus the stack table (from the snapshot's stack
# info: live-map bytes / live blocks).
B=${1:-build}
W=$B/bench/bench_stacks_work
CLI=$B/heapgraph
ITER=${HG_BENCH_ITER:-4000000}
LIVE=${HG_BENCH_LIVE:-1000000}
ROUNDS=${HG_BENCH_ROUNDS:-3}
tmp=$(mktemp -d /tmp/hg_bstacks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s%N; }
run_ms() { # label cmd...
  t0=$(now); "$@" >/dev/null 2>"$tmp/err" || { echo "bench-stacks: $1 failed" >&2; cat "$tmp/err" >&2; exit 1; }
  t1=$(now); echo $(( (t1 - t0) / 1000000 ))
}
for r in $(seq "$ROUNDS"); do
  echo "base $(run_ms "$W" "$ITER" "$LIVE")" >>"$tmp/t"
  echo "heaptrack $(run_ms heaptrack -o "$tmp/ht.$r" "$W" "$ITER" "$LIVE")" >>"$tmp/t"
  echo "full $(run_ms "$CLI" run --stacks -o "$tmp/full.hgsnap" -- "$W" "$ITER" "$LIVE")" >>"$tmp/t"
  echo "sampled $(run_ms env LD_PRELOAD="$(cd "$B" && pwd)/libheapgraph.so" HEAPGRAPH_STACKS=1 \
       HEAPGRAPH_SAMPLE_BYTES=524288 "$W" "$ITER" "$LIVE")" >>"$tmp/t"
  rm -f "$tmp"/ht.*
done
"$CLI" stacks --json "$tmp/full.hgsnap" >"$tmp/full.json" || exit 1
/usr/bin/python3 - "$tmp/t" "$tmp/full.json" "$ITER" "$LIVE" <<'PYEOF'
import json, statistics, sys
t = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    t.setdefault(k, []).append(int(v))
m = {k: statistics.median(v) for k, v in t.items()}
i = json.load(open(sys.argv[2]))["info"]
it, live = int(sys.argv[3]), int(sys.argv[4])
print("stacks workload: %d malloc+free, %d live at exit, %d rounds (medians, ms): %s" %
      (it, live, len(t["base"]), ", ".join("%s %d" % (k, m[k]) for k in ("base", "heaptrack", "full", "sampled"))))
print("full tracking / heaptrack = %.2f (goal <= 0.5); full / base = %.2f" % (m["full"] / m["heaptrack"], m["full"] / m["base"]))
print("sampled 512 KiB / base = %.3f (goal <= 1.05)" % (m["sampled"] / m["base"]))
per = i["map_bytes"] / max(i["live_blocks"], 1)
print("tracking memory: %.1f bytes per live block in the live map (goal <= 16) + stack table %d bytes "
      "(%d stacks); total %d bytes for %d live blocks" %
      (per, i["tracking_bytes"] - i["map_bytes"], i["stacks"], i["tracking_bytes"], i["live_blocks"]))
PYEOF
uptime | sed 's/.*load/load/'
