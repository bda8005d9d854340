#!/bin/sh
# leak_cycle.sh — the same leak with and without --stacks (issue 26): a C++
# program (leak_cycle.cpp, never linked with libheapgraph) leaks a cycle of
# two Nodes at the end of main, the second right before the top chunk, under
# `heapgraph run` and `heapgraph run --stacks`. In both, `heapgraph leaks`
# must report one root leak, the cycle (2 Nodes, 112 bytes, at the printed
# addresses), and `heapgraph path` must find no root for either Node (the
# top chunk's address in main_arena, libc's data, once rooted the second).
# Not under SANITIZE=1 (the preloaded ASan library has no glibc heap walk).
B=${BUILD:-build}
CLI=$B/heapgraph
P=$B/capture/leak_cycle
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
if [ "${SANITIZE:-0}" = 1 ]; then echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
tmp=$(mktemp -d /tmp/hg_leak_cycle.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for mode in plain stacks; do
  opt=""; [ $mode = stacks ] && opt=--stacks
  # shellcheck disable=SC2086 # no option, or one
  "$CLI" run $opt -o "$tmp/$mode.hgsnap" -- "$P" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
  set -- $(sed -n 's/^cycle //p' "$tmp/$mode.out")
  a=$1 b=$2
  if [ -z "$b" ] || [ ! -s "$tmp/$mode.hgsnap" ]; then
    bad "$mode: no run ($(cat "$tmp/$mode.err"))"; continue
  fi
  got=$("$CLI" leaks --json "$tmp/$mode.hgsnap" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
a, b = int(sys.argv[1], 16), int(sys.argv[2], 16)
roots = [int(l["addr"], 16) for l in d["leaks"]]
ok = d["root_leaks"] == 1 and roots[0] in (a, b) and d["leaks"][0]["group_count"] == 2 \
     and d["leaks"][0]["class"] == "Node" and d["leaked_bytes"] >= 112
print(("ok" if ok else "bad") + " %d root leak(s) at %s, %d bytes" % (d["root_leaks"], [hex(r) for r in roots], d["leaked_bytes"]))
' "$a" "$b")
  case "$got" in
    ok*) ok "$mode: ${got#ok }" ;;
    *) bad "$mode: ${got#bad } (want the cycle $a <-> $b)" ;;
  esac
  for x in $a $b; do
    why=$("$CLI" path "$tmp/$mode.hgsnap" "$x" 2>&1)
    [ $? = 1 ] && ok "$mode: no root reaches $x" || bad "$mode: $x is reached: $why"
  done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
