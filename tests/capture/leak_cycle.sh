#!/bin/sh
# leak_cycle.sh — the same leak with and without --stacks (issue 26), for two
# programs never linked with libheapgraph, each under `heapgraph run` and
# `heapgraph run --stacks`:
#   leak_cycle.cpp leaks a cycle of two Nodes at the end of main, the second
#     right before the top chunk (the top chunk's address in main_arena,
#     libc's data, once rooted the second);
#   exited_stack.c leaks a cycle whose two addresses only an exited, joined
#     thread's stack frame still holds (glibc keeps that stack for reuse; it
#     once rooted the cycle as `other`), and keeps a block alive only as an
#     exited, unjoined thread's result (in its thread descriptor).
# In each, `heapgraph leaks` must report one root leak, the cycle (2 blocks,
# at the printed addresses), and `heapgraph path` must find no root for
# either block; for exited_stack also a root for the result and 2 dead
# thread stacks counted by the capture.
# Not under SANITIZE=1 (the preloaded ASan library has no glibc heap walk).
B=${BUILD:-build}
CLI=$B/heapgraph
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
if [ "${SANITIZE:-0}" = 1 ]; then echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
tmp=$(mktemp -d /tmp/hg_leak_cycle.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for prog in leak_cycle exited_stack; do
  for mode in plain stacks; do
    opt=""; [ $mode = stacks ] && opt=--stacks
    t="$prog $mode"; s="$tmp/$prog-$mode.hgsnap"
    # shellcheck disable=SC2086 # no option, or one
    "$CLI" run $opt -o "$s" -- "$B/capture/$prog" >"$tmp/out" 2>"$tmp/err"
    set -- $(sed -n 's/^cycle //p' "$tmp/out")
    a=${1:-} b=${2:-} r=${4:-}
    if [ -z "$b" ] || [ ! -s "$s" ]; then
      bad "$t: no run ($(cat "$tmp/err"))"; continue
    fi
    got=$("$CLI" leaks --json "$s" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
a, b, prog = int(sys.argv[1], 16), int(sys.argv[2], 16), sys.argv[3]
roots = [int(l["addr"], 16) for l in d["leaks"]]
ok = d["root_leaks"] == 1 and roots[0] in (a, b) and d["leaks"][0]["group_count"] == 2
if prog == "leak_cycle":
    ok = ok and d["leaks"][0]["class"] == "Node" and d["leaked_bytes"] >= 112
print(("ok" if ok else "bad") + " %d root leak(s) at %s, %d bytes" % (d["root_leaks"], [hex(x) for x in roots], d["leaked_bytes"]))
' "$a" "$b" "$prog")
    case "$got" in
      ok*) ok "$t: ${got#ok }" ;;
      *) bad "$t: ${got#bad } (want the cycle $a <-> $b)" ;;
    esac
    for x in $a $b; do
      why=$("$CLI" path "$s" "$x" 2>&1)
      [ $? = 1 ] && ok "$t: no root reaches $x" || bad "$t: $x is reached: $why"
    done
    [ $prog = exited_stack ] || continue
    why=$("$CLI" path "$s" "$r" 2>&1)
    [ $? = 0 ] && ok "$t: a root reaches the unjoined thread's result $r" || bad "$t: $r: $why"
    n=$("$CLI" info --json "$s" | sed -n 's/.*"dead_thread_stacks": *\([0-9]*\).*/\1/p')
    [ "$n" = 2 ] && ok "$t: 2 dead thread stacks" || bad "$t: dead_thread_stacks '$n', want 2"
  done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
