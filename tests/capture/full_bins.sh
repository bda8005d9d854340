#!/bin/sh
# full_bins.sh — full_bins.c under three allocator settings (issue 26): the
# defaults; one arena for every thread (glibc.malloc.arena_max=1: the
# workers' frees and the capture's probe share the main arena's bins); and
# one-entry tcache bins (glibc.malloc.tcache_count=1: on 2.43, which has no
# fastbins, the voting probe then never had two tcache frees in a row and
# failed every capture; with arena_max=1 it reported thousands of freed
# blocks as live in fork mode).
#   full_bins.sh [CAPTURES] [DIR]      default 20, /tmp
B=${BUILD:-build}
n=${1:-20} dir=${2:-/tmp}
pass=0; fail=0
for t in "" glibc.malloc.arena_max=1 glibc.malloc.tcache_count=1; do
  if GLIBC_TUNABLES=$t "$B/capture/full_bins" "$n" "$dir"; then
    pass=$((pass + 1)); echo "ok   full_bins ${t:-(defaults)}"
  else
    fail=$((fail + 1)); echo "FAIL full_bins ${t:-(defaults)}"
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
