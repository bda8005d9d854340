#!/bin/sh
# allocators.sh — every allocator under `heapgraph run`, with and without
# --stacks: tests/stacks/allocators.cpp linked with glibc, jemalloc,
# tcmalloc (minimal) and mimalloc, and the glibc build with each of the
# three preloaded. Never a crash (the program prints "ok" and exits 0);
# with --stacks every snapshot has exactly 1000 Alpha, 500 Beta, 100 Wide
# and 3 Leaked nodes, and the cycle of 2 Leaked is a leak (glibc: walked; the
# others: listed from the allocation recorder); without --stacks glibc is
# walked the same, and the others write no heap node and say, in the
# snapshot and on stderr, that the heap was not walked and that --stacks
# gets its blocks. An allocator is skipped only when this system's apt does
# not package it (mimalloc on Debian 11); when apt has the package that
# scripts/deps.sh installs (check, allocators) and its program or library is
# missing, that is a failure: make decides at build time, after deps.sh ran
# (mk/stacks.mk), so a fresh machine's first `make check` runs them all.
set -u
B=${BUILD:-build}
CLI=$B/heapgraph
D=$B/stacks
pass=0; fail=0; skip=0
tmp=$(mktemp -d /tmp/hg_allocs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

libdir=$(dirname "$(${CC:-cc} -print-file-name=libc.so.6)")
lib_of() { # allocator -> its shared library (for LD_PRELOAD; mimalloc 3 is .so.3)
  case $1 in
    jemalloc) ns="libjemalloc.so.2" ;;
    tcmalloc) ns="libtcmalloc_minimal.so.4" ;;
    mimalloc) ns="libmimalloc.so.2 libmimalloc.so.3" ;;
  esac
  for d in "$libdir" /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
    for n in $ns; do
      [ -f "$d/$n" ] && { echo "$d/$n"; return; }
    done
  done
}

# one NAME STACKS(0|1) WALKED(0|1) PROG [PRELOAD]
one() {
  name=$1; st=$2; walked=$3; prog=$4; pre=${5:-}
  snap="$tmp/$name-$st.hgsnap"
  flag=; [ "$st" = 1 ] && flag=--stacks
  out=$(env ${pre:+LD_PRELOAD=$pre} "$CLI" run $flag -o "$snap" -- "$prog" 2>"$tmp/err"); rc=$?
  if [ "$rc" != 0 ] || [ "$out" != ok ]; then
    fail=$((fail + 1)); echo "FAIL $name stacks=$st: exit $rc, output '$out'"; sed -n 1,5p "$tmp/err"; return
  fi
  env -u LD_PRELOAD "$CLI" info --json "$snap" >"$tmp/info" 2>&1 &&
    env -u LD_PRELOAD "$CLI" classes --json "$snap" >"$tmp/classes" 2>&1 &&
    { env -u LD_PRELOAD "$CLI" leaks --json "$snap" >"$tmp/leaks" 2>&1; [ $? -le 1 ]; } || { # 1: leaks found
    fail=$((fail + 1)); echo "FAIL $name stacks=$st: snapshot unreadable"; sed -n 1,5p "$tmp/info"; return
  }
  if msg=$(/usr/bin/python3 - "$tmp" "$walked" <<'PY'
import json, sys
d, walked = sys.argv[1], sys.argv[2] == "1"
info = json.load(open(d + "/info"))
err = open(d + "/err").read()
status = info.get("heap_status") or ""
nodes = info["counts"]["nodes"]
bad = []
if walked:
    if not status.startswith("ok"):
        bad.append("heap_status %r" % status)
    # blocks listed from the recorder are counted (capture figure recorded_blocks)
    rec = info.get("capture", {}).get("recorded_blocks", 0)
    if ("allocation recorder's" in status) != (rec == nodes and rec > 0):
        bad.append("recorded_blocks %d for %d nodes, heap_status %r" % (rec, nodes, status[:120]))
    want = {"Alpha": 1000, "Beta": 500, "Wide": 100, "Leaked": 3}
    got = {}
    for line in open(d + "/classes"):
        line = line.strip()
        if line:
            c = json.loads(line)
            got[c["class"]] = c["count"]
    for k, v in want.items():
        if got.get(k) != v:
            bad.append("%s: %s nodes, want %d" % (k, got.get(k), v))
    lk = json.load(open(d + "/leaks"))
    leaked = {}  # root leaks by class: blocks each holds
    for e in lk["leaks"]:
        leaked[e["class"]] = leaked.get(e["class"], 0) + e["count"]
    if leaked.get("Leaked") != 2:
        bad.append("Leaked: root leaks hold %s blocks, want the cycle's 2 (by class: %s)" % (leaked.get("Leaked"), leaked))
    for k in ("Alpha", "Beta", "Wide"):
        if leaked.get(k):
            bad.append("%d %s leaked, want 0" % (leaked[k], k))
else:
    if nodes != 0:
        bad.append("%d nodes, want 0" % nodes)
    for s in (status, err):
        if "not walked" not in s or "--stacks" not in s:
            bad.append("no clear 'not walked … --stacks' in %r" % s[:300])
print("; ".join(bad))
sys.exit(1 if bad else 0)
PY
  ); then
    pass=$((pass + 1)); echo "ok   $name stacks=$st"
  else
    fail=$((fail + 1)); echo "FAIL $name stacks=$st: $msg"
  fi
}

# missing ALLOCATOR WHAT: skips when apt does not package it here, else fails
missing() {
  case $1 in
    jemalloc) pkg=libjemalloc-dev ;;
    tcmalloc) pkg=libgoogle-perftools-dev ;;
    *) pkg=lib$1-dev ;;
  esac
  if ! command -v apt-cache >/dev/null 2>&1; then
    skip=$((skip + 1)); echo "SKIP $1: $2 (no apt here to say whether $pkg exists)"
  elif ! apt-cache show "$pkg" >/dev/null 2>&1; then
    skip=$((skip + 1)); echo "SKIP $1: $2 (this system's apt has no $pkg)"
  else
    fail=$((fail + 1)); echo "FAIL $1: $2, yet apt has $pkg, which scripts/deps.sh check (and allocators) installs"
  fi
}

for a in glibc jemalloc tcmalloc mimalloc; do
  prog=$D/allocators-$a
  if [ ! -x "$prog" ]; then
    why="$prog not built"; [ -f "$prog.absent" ] && why=$(cat "$prog.absent")
    if [ $a = glibc ]; then fail=$((fail + 1)); echo "FAIL glibc: $why"; else missing $a "$why"; fi
    continue
  fi
  walked=0; [ $a = glibc ] && walked=1
  one "linked-$a" 0 $walked "$prog"
  one "linked-$a" 1 1 "$prog"
  [ $a = glibc ] && continue
  pre=$(lib_of $a)
  if [ -z "$pre" ]; then
    missing $a "its shared library was not found for LD_PRELOAD"; continue
  fi
  one "preloaded-$a" 0 0 "$D/allocators-glibc" "$pre"
  one "preloaded-$a" 1 1 "$D/allocators-glibc" "$pre"
done
echo "allocators: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
