#!/bin/sh
# bench_capture.sh — capture figures for 1 M and 4 M blocks, and the ratios
# against LeakSanitizer (__lsan_do_recoverable_leak_check) and a bare fork()
# on the same heap. Goals: total <= 0.5 x LSan, fork pause <= 1.5 x fork(),
# scratch <= 12 bytes per live block.
B=${1:-build/bench}
dir=${TMPDIR:-/tmp}
for n in ${HG_BENCH_BLOCKS:-1000000 4000000}; do
  out=$("$B/bench_capture" "$n" "$dir") || { echo "bench_capture failed"; exit 1; }
  lsan=$("$B/bench_capture_lsan" "$n") || { echo "bench_capture_lsan failed"; exit 1; }
  printf '%s\n%s\n' "$out" "$lsan"
  printf '%s\n%s\n' "$out" "$lsan" | awk -v n="$n" '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$1 "." kv[1]] = kv[2] } }
    END {
      printf("capture %d blocks: fork total/LSan = %.2f (goal <= 0.5), suspend total/LSan = %.2f, " \
             "fork pause/bare fork = %.2f (goal <= 1.5), scratch %.2f B/block (goal <= 12)\n",
             n, v["fork.total_ms"] / v["lsan.check_ms"], v["suspend.total_ms"] / v["lsan.check_ms"],
             v["fork.pause_ms"] / v["fork.bare_fork_ms"], v["fork.scratch_per_block"])
    }'
done
