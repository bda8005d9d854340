#!/bin/sh
# bench_top.sh — `make bench-top` (issue 33): `heapgraph top`, the fleet
# summary (`heapgraph fleet` with an empty cache), the viewer's start and the
# DevTools export against the same commands of the base build, main 85daa17,
# built here from `git archive` (build/bench/base/, once), on bench_analysis
# snapshots (3 edges per node, 5 % leaked). Each pair runs back to back,
# alternating base/new, RUNS times (median shown), so the machine's load
# mostly cancels in the ratios: new / base for wall time, CPU time and peak
# RSS; fleet / top of the same build (goal <= 1.2): top and fleet run as
# adjacent pairs (base top, new top, base fleet, new fleet, RUNS times), and
# the ratio shown is the median of each pair's own ratio, with its range, so
# a drift of the machine between the top runs and the fleet runs does not
# enter it. Sizes: HG_BENCH_TOP_NODES
# (default 10000000; 100000000 is the issue's 100 M / 300 M case: it needs
# ~12 GB for the base build, so it runs only when MemAvailable allows, and
# only one at a time: a lock in /tmp).
set -eu
B=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
NEW=$B/heapgraph
GEN=$B/bench/bench_analysis
BASE_REV=${HG_BENCH_BASE:-85daa17}
BASEDIR=$B/bench/base
RUNS=${HG_BENCH_TOP_RUNS:-3}
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$B/bench"
if [ ! -x "$BASEDIR/build/heapgraph" ] || [ "$(cat "$BASEDIR/.rev" 2>/dev/null)" != "$BASE_REV" ]; then
  echo "bench-top: building the base ($BASE_REV) in $BASEDIR"
  rm -rf "$BASEDIR" && mkdir -p "$BASEDIR"
  git archive "$BASE_REV" | tar -x -C "$BASEDIR"
  make -C "$BASEDIR" build/heapgraph >"$B/bench/base-build.log" 2>&1 || {
    echo "bench-top: base build failed (see $B/bench/base-build.log)"; exit 1; }
  echo "$BASE_REV" >"$BASEDIR/.rev"
fi
BASE=$BASEDIR/build/heapgraph
T=$B/bench/top.time
measure() { # "wall cpu peak_mib" of the command
  /usr/bin/time -f '%e %U %S %M' -o "$T" "$@" >/dev/null
  awk '{printf "%.2f %.2f %.0f", $1, $2 + $3, $4 / 1024}' "$T"
}
viewer() { # seconds until `heapgraph view` prints its URL
  "$PY" - "$1" "$2" <<'PYEOF'
import subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen([sys.argv[1], "view", sys.argv[2], "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = p.stdout.readline()
dt = time.monotonic() - t
p.terminate(); p.wait()
print("%.2f 0 0" % dt if url.startswith("http") else "0 0 0")
PYEOF
}
measure_top() { measure "$1" top "$snap" -n 20; }
measure_fleet() { measure "$1" fleet "$snap" --cache-dir "$B/bench/fleet-cache"; }
measure_viewer() { viewer "$1" "$snap"; }
measure_export() { measure "$1" export "$snap" --format heapsnapshot -o "$B/bench/top.heapsnapshot"; }
pair() { # pair WHAT FUNCTION RUN: appends "what build wall cpu rss run" rows, base then new
  for build in base new; do
    bin=$BASE; [ $build = new ] && bin=$NEW
    rm -rf "$B/bench/fleet-cache"
    echo "$1 $build $($2 "$bin") $3" >>"$ROWS"
  done
}
run() { # run WHAT FUNCTION [WHAT FUNCTION]: RUNS times a pair of each, in turn
  for i in $(seq "$RUNS"); do
    pair "$1" "$2" "$i"
    [ $# -lt 4 ] || pair "$3" "$4" "$i"
  done
  rm -rf "$B/bench/fleet-cache" "$B/bench/top.heapsnapshot"
}
for n in ${HG_BENCH_TOP_NODES:-10000000}; do
  need=$((n / 1000000 * 125)) # MiB the base build needs, about
  avail=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
  if [ "$avail" -lt $((need + need / 4)) ]; then
    echo "bench-top: $n nodes need ~$need MiB, $avail MiB available: skipped"; continue
  fi
  exec 9>/tmp/heapgraph-bench-top.lock
  flock 9
  snap=$B/bench/top_$n.hgsnap
  [ -f "$snap" ] || "$GEN" "$snap" "$n" 3 write >/dev/null
  ROWS=$B/bench/top_rows.txt
  : >"$ROWS"
  echo "bench-top: $n nodes, $(stat -L -c %s "$snap") bytes; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; $RUNS runs each, base = $BASE_REV"
  run top measure_top fleet measure_fleet
  [ "$n" -le 10000000 ] && run viewer measure_viewer
  [ "$n" -le 10000000 ] && [ "${HG_BENCH_TOP_EXPORT:-1}" = 1 ] && run export measure_export
  awk -v n="$n" '
    { k = $1 " " $2; c[k]++; w[k, c[k]] = $3; u[k, c[k]] = $4; r[k, c[k]] = $5; what[$1] = 1
      pw[$1, $2, $6] = $3 }
    function med(a, k, m,   i, j, t, v) { for (i = 1; i <= m; i++) v[i] = a[k, i]
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return v[int((m + 1) / 2)] }
    END {
      split("top fleet viewer export", order, " ")
      for (o = 1; o <= 4; o++) { x = order[o]; if (!(x in what)) continue
        b = x " base"; e = x " new"
        bw = med(w, b, c[b]); nw = med(w, e, c[e]); bu = med(u, b, c[b]); nu = med(u, e, c[e])
        br = med(r, b, c[b]); nr = med(r, e, c[e])
        tw[x, "base"] = bw; tw[x, "new"] = nw; tr[x, "new"] = nr; tr[x, "base"] = br
        if (x == "viewer")
          printf "  %-7s start (until the URL)  base %7.2f s   new %7.2f s   new/base %.2f\n", x, bw, nw, nw / bw
        else
          printf "  %-7s base %7.2f s wall %7.2f s cpu %6d MiB | new %7.2f s wall %7.2f s cpu %6d MiB | new/base: wall %.2f cpu %.2f RSS %.2f\n", x, bw, bu, br, nw, nu, nr, nw / bw, nu / bu, nr / br
      }
      if (("top", "new") in tw && ("fleet", "new") in tw) {
        split("new base", bs, " ")
        for (j = 1; j <= 2; j++) { m = 0; lo = 1e9; hi = 0
          for (i = 1; ("top", bs[j], i) in pw && ("fleet", bs[j], i) in pw; i++) {
            q = pw["fleet", bs[j], i] / pw["top", bs[j], i]; pr[bs[j], ++m] = q
            if (q < lo) lo = q; if (q > hi) hi = q }
          rm[bs[j]] = m ? med(pr, bs[j], m) : 0; rl[bs[j]] = lo; rh[bs[j]] = hi }
        printf "  fleet / top, median of the %d adjacent pairs: new %.2f (%.2f-%.2f; goal <= 1.2), base %.2f (%.2f-%.2f)\n", c["top new"], rm["new"], rl["new"], rh["new"], rm["base"], rl["base"], rh["base"]
        printf "  fleet / top, ratio of the medians: new %.2f, base %.2f; fleet peak RSS / top: new %.2f\n", tw["fleet", "new"] / tw["top", "new"], tw["fleet", "base"] / tw["top", "base"], tr["fleet", "new"] / tr["top", "new"]
      }
    }' "$ROWS"
  [ "${HG_BENCH_TOP_KEEP:-0}" = 1 ] || [ "$n" -le 10000000 ] || rm -f "$snap"
  exec 9>&-
done
