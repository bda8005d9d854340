#!/bin/sh
# exited_stack.sh — a dead thread's stack, kept by glibc for reuse, is not a
# root (issue 26; capture/linux/threads.c): exited_stack.c leaks a cycle
# whose two addresses only the exited thread A's stack frame still holds,
# and keeps a block alive only as thread B's result (B exited, unjoined:
# the result is in its thread descriptor, which stays scanned). Under
# `heapgraph run` and `run --stacks`: one root leak, the cycle (2 blocks);
# no root reaches either of its blocks; a root reaches B's result; the
# capture counts 2 dead thread stacks. Before the rule, the cycle was no
# leak at all. Not under SANITIZE=1 (ASan's malloc has no glibc heap walk).
B=${BUILD:-build}
CLI=$B/heapgraph
P=$B/capture/exited_stack
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
if [ "${SANITIZE:-0}" = 1 ]; then echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
tmp=$(mktemp -d /tmp/hg_exited_stack.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for mode in plain stacks; do
  opt=""; [ $mode = stacks ] && opt=--stacks
  # shellcheck disable=SC2086 # no option, or one
  "$CLI" run $opt -o "$tmp/$mode.hgsnap" -- "$P" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
  set -- $(sed -n 's/^cycle //p' "$tmp/$mode.out")
  a=${1:-} b=${2:-} r=${4:-}
  if [ -z "$r" ] || [ ! -s "$tmp/$mode.hgsnap" ]; then
    bad "$mode: no run ($(cat "$tmp/$mode.err"))"; continue
  fi
  got=$("$CLI" leaks --json "$tmp/$mode.hgsnap" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
a, b = int(sys.argv[1], 16), int(sys.argv[2], 16)
roots = [int(l["addr"], 16) for l in d["leaks"]]
ok = d["root_leaks"] == 1 and roots[0] in (a, b) and d["leaks"][0]["group_count"] == 2
print(("ok" if ok else "bad") + " %d root leak(s) at %s" % (d["root_leaks"], [hex(x) for x in roots]))
' "$a" "$b")
  case "$got" in
    ok*) ok "$mode: ${got#ok }" ;;
    *) bad "$mode: ${got#bad } (want the cycle $a <-> $b)" ;;
  esac
  for x in $a $b; do
    why=$("$CLI" path "$tmp/$mode.hgsnap" "$x" 2>&1)
    [ $? = 1 ] && ok "$mode: no root reaches $x" || bad "$mode: $x is reached: $why"
  done
  why=$("$CLI" path "$tmp/$mode.hgsnap" "$r" 2>&1)
  [ $? = 0 ] && ok "$mode: a root reaches the unjoined thread's result $r" || bad "$mode: $r: $why"
  n=$("$CLI" info --json "$tmp/$mode.hgsnap" | sed -n 's/.*"dead_thread_stacks": *\([0-9]*\).*/\1/p')
  [ "$n" = 2 ] && ok "$mode: 2 dead thread stacks" || bad "$mode: dead_thread_stacks '$n', want 2"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
