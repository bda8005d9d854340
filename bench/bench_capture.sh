#!/bin/sh
# bench_capture.sh — capture figures for 1 M and 4 M blocks, and the ratios
# against LeakSanitizer (__lsan_do_recoverable_leak_check) and a bare fork()
# on the same heap. Goals: total <= 0.5 x LSan, fork pause <= 1.5 x fork(),
# scratch <= 12 bytes per live block. Each size is also captured with
# hg_options.helpers = 0 (one core: no prefault, no pipelined scan), for the
# record; the goals are checked on the default (one helper thread).
B=${1:-build/bench}
dir=${TMPDIR:-/tmp}
for n in ${HG_BENCH_BLOCKS:-1000000 4000000}; do
  out=$("$B/bench_capture" "$n" "$dir") || { echo "bench_capture failed"; exit 1; }
  one=$(HG_BENCH_HELPERS=0 "$B/bench_capture" "$n" "$dir" | sed 's/^\([a-z]*\) /\1_alone /') ||
    { echo "bench_capture (helpers=0) failed"; exit 1; }
  lsan=$("$B/bench_capture_lsan" "$n") || { echo "bench_capture_lsan failed"; exit 1; }
  printf '%s\n%s\n%s\n' "$out" "$one" "$lsan"
  printf '%s\n%s\n%s\n' "$out" "$one" "$lsan" | awk -v n="$n" '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$1 "." kv[1]] = kv[2] } }
    END {
      printf("capture %d blocks: fork total/LSan = %.2f (goal <= 0.5), suspend total/LSan = %.2f, " \
             "fork pause/bare fork = %.2f (goal <= 1.5), scratch %.2f B/block (goal <= 12)\n",
             n, v["fork.total_ms"] / v["lsan.check_ms"], v["suspend.total_ms"] / v["lsan.check_ms"],
             v["fork.pause_ms"] / v["fork.bare_fork_ms"], v["fork.scratch_per_block"])
      printf("capture %d blocks, one core (helpers=0): fork total/LSan = %.2f, suspend total/LSan = %.2f\n",
             n, v["fork_alone.total_ms"] / v["lsan.check_ms"], v["suspend_alone.total_ms"] / v["lsan.check_ms"])
    }'
done
uptime | sed 's/.*load/load/'
