#!/bin/sh
# agent.sh — the LD_PRELOAD agent (capture/linux/agent.c) and `heapgraph
# run` on an unmodified program (agent_target.c, never linked with
# libheapgraph):
#   1. heapgraph run -o F --at-exit -- PROG          trigger "exit"
#   2. heapgraph run -o F --signal USR2 -- PROG ...  SIGUSR2 sent to that one
#      pid only (never a group, never by name); trigger "signal"
#   3. LD_PRELOAD=libheapgraph.so HEAPGRAPH_OUTPUT=F HEAPGRAPH_AT_EXIT=1 PROG
# Each snapshot must load (heapgraph info --json) with the expected trigger,
# heap_status ok and the program's 1000-block list as nodes and edges.
#
# SANITIZE=1: the ASan-built library can be preloaded into a plain program
# only behind libasan (ASan must come first, and then malloc is ASan's), so
# there the test checks that each snapshot is written and loads with the
# expected trigger and heap_status "unsupported allocator…" and no nodes.
B=${BUILD:-build}
CLI=$B/heapgraph
LIB=$(cd "$B" && pwd)/libheapgraph.so
T=$B/capture/agent_target
N=1000
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d /tmp/hg_agent.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
san=0
if [ "${SANITIZE:-0}" = 1 ]; then
  san=1
  asan=$(${CC:-cc} -print-file-name=libasan.so)
  export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0
  export LD_PRELOAD="$asan"
fi

# check NAME FILE TRIGGER
check() {
  if [ ! -s "$2" ]; then
    bad "$1: no snapshot $2"; return
  fi
  out=$(env -u LD_PRELOAD "$CLI" info --json "$2" 2>&1)
  if ! printf '%s' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
want_trigger, n, san = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
c = d["counts"]
errs = []
if d.get("trigger") != want_trigger: errs.append("trigger %r" % d.get("trigger"))
if not d.get("checksum_ok"): errs.append("checksum")
if san:
    if "unsupported" not in (d.get("heap_status") or ""): errs.append("heap_status %r" % d.get("heap_status"))
else:
    if d.get("heap_status") != "ok": errs.append("heap_status %r" % d.get("heap_status"))
    if c["nodes"] < n or c["nodes"] > n + 500: errs.append("nodes %d" % c["nodes"])
    if c["edges"] < n - 1: errs.append("edges %d" % c["edges"])
if errs: sys.exit("; ".join(errs))
print("trigger %s, heap_status %s, %d nodes, %d edges" % (d["trigger"], d["heap_status"], c["nodes"], c["edges"]))
' "$3" "$N" "$san" >"$tmp/why" 2>&1; then
    bad "$1: $(cat "$tmp/why") ($out)"; return
  fi
  ok "$1: $(cat "$tmp/why")"
}

# 1. heapgraph run --at-exit
"$CLI" run -o "$tmp/exit-%p.hgsnap" --at-exit -- "$T" exit $N 2>"$tmp/exit.err"
check "run --at-exit" "$(ls "$tmp"/exit-*.hgsnap 2>/dev/null | head -n 1)" exit

# 2. heapgraph run --signal USR2: the signal goes to the child's pid only
"$CLI" run -o "$tmp/sig-%p-%n.hgsnap" --signal USR2 -- "$T" wait "$tmp/ready" $N 2>"$tmp/sig.err" &
pid=$!
i=0
while [ ! -e "$tmp/ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
if [ -e "$tmp/ready" ]; then
  kill -USR2 "$pid"
  i=0
  while [ ! -s "$tmp/sig-$pid-1.hgsnap" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
  check "run --signal USR2" "$tmp/sig-$pid-1.hgsnap" signal
else
  bad "run --signal USR2: program not ready ($(cat "$tmp/sig.err"))"
fi
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# 3. plain LD_PRELOAD with HEAPGRAPH_* variables
LD_PRELOAD="$LIB${LD_PRELOAD:+:$LD_PRELOAD}" HEAPGRAPH_OUTPUT="$tmp/pre-%p.hgsnap" HEAPGRAPH_AT_EXIT=1 \
  "$T" exit $N 2>"$tmp/pre.err"
check "LD_PRELOAD at exit" "$(ls "$tmp"/pre-*.hgsnap 2>/dev/null | head -n 1)" exit

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
