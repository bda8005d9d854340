#!/bin/sh
# bench/bench_serve.sh — `make bench-serve` (loopback only, bounded): the
# figures of `heapgraph serve` (docs/serve.md section 3), each with its peer
# measured in the same run on this machine:
#  1. 2,000 uploads of mixed sizes (small / 1 MB / 10 MB snapshots, drawn
#     with repeats, so duplicates too) from 64 concurrent clients: every
#     upload's outcome, and the server's own counters summing to the same;
#     p99 latency of the small ones; the server's peak RSS;
#  2. intake throughput for 10 MB snapshots against the disk's sequential
#     write (fsync'd files in the same directory);
#  3. analysis throughput of one worker against `heapgraph top` on the same
#     files;
#  4. the issues query with 100,000 summaries in SQLite and in PostgreSQL
#     (bench_serve issues).
# BENCH_SERVE_SUMMARIES (100000) and BENCH_SERVE_UPLOADS (2000) scale it.
set -eu
B=${1:-build}
CLI=$B/heapgraph
GEN=$B/serve/snapgen
PY=${PYTHON:-python3}
HERE=$(dirname "$0")
N_SUM=${BENCH_SERVE_SUMMARIES:-100000}
N_UP=${BENCH_SERVE_UPLOADS:-2000}
. "$HERE/../tests/serve/pg.sh"
T=$(mktemp -d /tmp/hg-bench-serve.XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; pg_stop "$T/pg"; rm -rf "$T"' EXIT

start() { # DATA [options…]: sets url, spid
  d=$1; shift
  "$CLI" serve --data "$d" --rate 0 --max-connections 512 "$@" >"$d.out" 2>"$d.log" &
  spid=$!
  i=0; while [ ! -s "$d.out" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  url=$(head -n 1 "$d.out" | sed 's|/$||')
}
stop() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null || true; spid=; }
field() { $PY -c "import json,sys; print(json.loads(sys.argv[1])$2)" "$1"; }

# ---- snapshots: 200 small, 20 of ~1 MB, 8 of ~10 MB (distinct) ----
mkdir -p "$T/s"
for i in $(seq 1 200); do "$GEN" "$T/s/small$i.hgsnap" bench 1.$((i % 3)) d$((i % 50)) $i $((2000 + 90 * i)); done
for i in $(seq 1 20); do "$GEN" "$T/s/mid$i.hgsnap" bench 2.0 d$i $((1000 + i)) 150000; done
for i in $(seq 1 48); do "$GEN" "$T/s/big$i.hgsnap" bench 2.0 d$i $((2000 + i)) 1450000; done
small=$(ls "$T"/s/small*.hgsnap); mid=$(ls "$T"/s/mid*.hgsnap); big=$(ls "$T"/s/big*.hgsnap)
echo "serve bench: snapshots small $(du -cb $small | tail -1 | cut -f1) B in 200, 1 MB class $(stat -c %s "$T/s/mid1.hgsnap") B, 10 MB class $(stat -c %s "$T/s/big1.hgsnap") B"

# ---- 1. mixed load ----
start "$T/d1" --workers 0
KEY=$("$CLI" serve key add bench --data "$T/d1" | tail -n 1)
# weights: each small file listed 9 times, each 1 MB once, each 10 MB file once in 4 lists
files="$(for k in 1 2 3 4 5 6 7 8 9; do echo $small; done) $mid $(echo $big | cut -d' ' -f1-2)"
# shellcheck disable=SC2086
res=$($PY "$HERE/bench_serve_load.py" mixed "$url" "$KEY" 64 "$N_UP" $files)
metrics=$(curl -s "$url/metrics")
rss=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/$spid/status)
stop
served=$(printf '%s\n' "$metrics" | sed -n 's/^heapgraph_serve_requests_total{app="bench",outcome="\([a-z_]*\)"} \([0-9]*\)$/\1=\2/p' | tr '\n' ' ')
sum=$(printf '%s\n' "$metrics" | sed -n 's/^heapgraph_serve_requests_total{app="bench",outcome="[a-z_]*"} \([0-9]*\)$/\1/p' | awk '{s+=$1} END {print s+0}')
echo "mixed load: $(field "$res" '["count"]') uploads by 64 clients in $(field "$res" '["wall"]') s; client statuses $(field "$res" '["by_status"]'); server outcomes: $served(sum $sum; every upload accounted for: $([ "$sum" = "$(field "$res" '["count"]')" ] && echo yes || echo NO))"
echo "mixed load: small uploads (< 256 KiB, $(field "$res" '["small"]') of them) p50 $(field "$res" '["small_p50"]*1000') ms, p99 $(field "$res" '["small_p99"]*1000') ms; all uploads p99 $(field "$res" '["all_p99"]*1000') ms; server peak RSS $((rss / 1024)) MB (uploads $(field "$res" '["bytes"]//1048576') MiB in all)"

# ---- 2. 10 MB intake throughput vs the disk ----
# After one untimed round of 8 uploads (a server runs for days: its first
# uploads also open the SQLite pool's connections), five rounds, each: the
# disk's sequential write (8 files of 10 MiB, fsync each, in the data
# directory), then 8 new 10 MB snapshots uploaded by 8 concurrent clients;
# the ratio per round, and its median. A round is a fraction of a second on
# a shared machine: one round alone says little.
start "$T/d2" --workers 0
KEY=$("$CLI" serve key add bench --data "$T/d2" | tail -n 1)
# shellcheck disable=SC2046
$PY "$HERE/bench_serve_load.py" stream "$url" "$KEY" 8 $(for i in $(seq 1 8); do echo "$T/s/big$i.hgsnap"; done) >/dev/null
ratios=
for round in 1 2 3 4 5; do
  files=$(for i in $(seq $((8 * round + 1)) $((8 * round + 8))); do echo "$T/s/big$i.hgsnap"; done)
  disk=$($PY "$HERE/bench_serve_load.py" disk "$T/d2" 8 10)
  # shellcheck disable=SC2086
  res=$($PY "$HERE/bench_serve_load.py" stream "$url" "$KEY" 8 $files)
  mbs=$($PY -c "import json,sys; r=json.loads(sys.argv[1]); print('%.1f' % (r['bytes']/1048576/r['wall']))" "$res")
  dmb=$(field "$disk" '["mib_s"]')
  ratio=$($PY -c "print('%.2f' % ($mbs/$dmb))")
  ratios="$ratios $ratio"
  echo "intake 10 MB snapshots, round $round: $mbs MiB/s (8 clients, statuses $(field "$res" '["by_status"]')); disk sequential write (fsync per file) $(printf '%.1f' "$dmb") MiB/s; ratio $ratio"
done
stop
echo "intake 10 MB snapshots: ratio to the disk, median of 5 rounds $(echo $ratios | tr ' ' '\n' | sort -n | sed -n 3p) (rounds:$ratios; goal >= 0.5)"

# ---- 3. analysis: one worker vs heapgraph top on the same 48 files ----
t0=$($PY -c 'import time; print(time.monotonic())')
for f in $big; do "$CLI" top "$f" -n 5 >/dev/null; done
t_top=$($PY -c "import time; print(time.monotonic() - $t0)")
# one Python process starts the worker and polls the database 10 times a
# second (a poll must not cost the worker CPU)
t_w=$($PY - "$CLI" "$T/d2" <<'PY'
import sqlite3, subprocess, sys, time
cli, d = sys.argv[1], sys.argv[2]
t0 = time.monotonic()
p = subprocess.Popen([cli, "serve", "--data", d, "--worker-only", "--workers", "1"],
                     stdout=subprocess.DEVNULL, stderr=open(d + "/../w.log", "w"))
db = sqlite3.connect(d + "/heapgraph.db", timeout=30)
while db.execute("SELECT COUNT(*) FROM jobs WHERE state < 2").fetchone()[0]:
    time.sleep(0.1)
print(time.monotonic() - t0)
p.terminate()
p.wait()
PY
)
done_n=$($PY -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('SELECT COUNT(*) FROM summaries').fetchone()[0])" "$T/d2/heapgraph.db")
echo "analysis: one worker summarised $done_n 10 MB snapshots in $(printf '%.2f' "$t_w") s (child process + load + summary + store), heapgraph top on the same files $(printf '%.2f' "$t_top") s; worker throughput / top's $($PY -c "print('%.2f' % ($t_top/$t_w))") (goal >= 0.8)"

# ---- 4. the issues query with 100,000 summaries ----
"$B/serve/bench_serve" issues "$T/d4" "$N_SUM" 300
# the same store served over HTTP: an issue's page (its history over every
# version, its exemplars) through the read API, 20 times
start "$T/d4" --workers 0
RKEY=$("$CLI" serve key add bench --read --data "$T/d4" | tail -n 1)
$PY - "$url" "$RKEY" <<'PY'
import json, sys, time, urllib.request
url, key = sys.argv[1], sys.argv[2]
def get(path):
    req = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + key})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=120) as r:
        body = r.read()
    return json.loads(body), time.monotonic() - t0
issues, _ = get("/v1/apps/bench/issues")
vers, _ = get("/v1/apps/bench/versions")
sigs = [i["signature"] for i in issues["issues"]]
first = get("/v1/apps/bench/issues/" + sigs[0])[1]
lat = sorted(get("/v1/apps/bench/issues/" + sigs[0])[1] for _ in range(20))
other = get("/v1/apps/bench/issues/" + sigs[-1])[1]
print("issue page over HTTP (its history over %d versions, exemplars): first %.1f ms; then p50 %.1f ms, p95 %.1f ms, "
      "max %.1f ms (20 requests); another issue's first page %.1f ms" % (len(vers.get("versions", [])), first * 1e3,
      lat[10] * 1e3, lat[18] * 1e3, lat[-1] * 1e3, other * 1e3))
PY
stop
if pg_have && pg_start "$T/pg"; then
  "$B/serve/bench_serve" issues "$T/d5" "$PG_URL" "$N_SUM" 300
else
  echo "issues query postgres: PostgreSQL 15 not available (scripts/deps.sh bench)"
fi
