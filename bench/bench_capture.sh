#!/bin/sh
# bench_capture.sh — issue 33's capture goal: capture <= 0.5 x LeakSanitizer's
# recoverable leak check (__lsan_do_recoverable_leak_check) on the same heap
# (bench_capture.c: 1 M blocks, ~290 MB), in every run, on an idle machine
# and with a CPU-bound process on the other core, in both freeze modes; the
# frozen part (the app's pause) reported separately.
#
# One run = one bench_capture process (fork and suspend, best of 2 each),
# one with hg_options.helpers = 0 (one core: no prefault, no pipelined scan)
# and one bench_capture_lsan process (best of 2 checks), back to back, so
# each run's ratios come from the same minute of this shared machine.
# HG_BENCH_RUNS runs (default 6) idle, then as many with a busy loop
# started by this script; min / median / max of every ratio per phase.
# HG_BENCH_BASE=PROGRAM: a bench_capture built from another commit, run in
# each run too, for A/B ratios of a change in the same minutes.
# Also printed: the fork pause against a bare fork(), scratch per block,
# and the fork-mode floor: a forked child reading one word of every block
# (the first touch of each page in a child, ~15 us a page on this VM).
B=${1:-build/bench}
dir=${TMPDIR:-/tmp}
n=${HG_BENCH_BLOCKS:-1000000}
runs=${HG_BENCH_RUNS:-6}
hog=
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null' EXIT INT TERM

one_run() { # prints the run's key=value lines, each prefixed with its tool
  out=$("$B/bench_capture" "$n" "$dir") || { echo "bench_capture failed" >&2; return 1; }
  one=$(HG_BENCH_HELPERS=0 "$B/bench_capture" "$n" "$dir" | sed 's/^\([a-z]*\) /\1_alone /') ||
    { echo "bench_capture (helpers=0) failed" >&2; return 1; }
  lsan=$("$B/bench_capture_lsan" "$n") || { echo "bench_capture_lsan failed" >&2; return 1; }
  base=
  if [ -n "$HG_BENCH_BASE" ]; then
    base=$("$HG_BENCH_BASE" "$n" "$dir" | sed 's/^\([a-z]*\) /\1_base /') ||
      { echo "$HG_BENCH_BASE failed" >&2; return 1; }
  fi
  printf '%s\n%s\n%s\n%s\n' "$out" "$one" "$lsan" "$base"
}

# The ratios of one phase's runs: min / median / max of each.
summary() {
  awk -v phase="$1" -v n="$n" -v base="$HG_BENCH_BASE" '
    /^run / { r = $2; next }
    NF { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[r, $1 "." kv[1]] = kv[2] } runs[r] = 1 }
    function stat(name, num, den,   k, m, x, a, i, j, t) {
      m = 0
      for (k in runs) {
        if (v[k, den] <= 0) continue
        a[++m] = v[k, num] / v[k, den]
      }
      for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      x = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
      printf("  %-34s min %.3f  median %.3f  max %.3f  (%d runs)\n", name, a[1], x, a[m], m)
    }
    END {
      printf("capture %d blocks, %s:\n", n, phase)
      stat("fork total / LSan (goal <= 0.5)", "fork.total_ms", "lsan.check_ms")
      stat("suspend total / LSan (goal <= 0.5)", "suspend.total_ms", "lsan.check_ms")
      stat("fork pause / LSan", "fork.pause_ms", "lsan.check_ms")
      stat("suspend pause / LSan", "suspend.pause_ms", "lsan.check_ms")
      stat("fork one core / LSan", "fork_alone.total_ms", "lsan.check_ms")
      stat("suspend one core / LSan", "suspend_alone.total_ms", "lsan.check_ms")
      stat("fork helper / one core", "fork.total_ms", "fork_alone.total_ms")
      stat("suspend helper / one core", "suspend.total_ms", "suspend_alone.total_ms")
      stat("fork pause / bare fork (<= 1.5)", "fork.pause_ms", "fork.bare_fork_ms")
      stat("child page touch / LSan", "fork.child_touch_ms", "lsan.check_ms")
      if (base) {
        stat("fork / base build", "fork.total_ms", "fork_base.total_ms")
        stat("suspend / base build", "suspend.total_ms", "suspend_base.total_ms")
        stat("base fork / LSan", "fork_base.total_ms", "lsan.check_ms")
        stat("base suspend / LSan", "suspend_base.total_ms", "lsan.check_ms")
      }
      stat("scratch bytes per block (<= 12)", "fork.scratch_bytes", "fork.blocks")
    }'
}

for phase in idle busy; do
  if [ "$phase" = busy ]; then
    sh -c 'while :; do :; done' &
    hog=$!
  fi
  all=
  r=1
  while [ "$r" -le "$runs" ]; do
    res=$(one_run) || exit 1
    printf '%s run %d:\n%s\n' "$phase" "$r" "$res"
    all=$(printf '%s\nrun %d\n%s' "$all" "$r" "$res")
    r=$((r + 1))
  done
  if [ -n "$hog" ]; then kill "$hog"; wait "$hog" 2>/dev/null; hog=; fi
  printf '%s\n' "$all" | sed '/^$/d' | summary "$phase"
done
uptime | sed 's/.*load/load/'
