#!/bin/sh
# bench_compress.sh — size on the wire (docs/upload.md, "Size on the wire"):
# compressors side by side on three real snapshots — bench_capture's
# 1 M-block heap (captured here in fork mode, its total time kept), the demo
# (examples/demo) and clang++-14 -fsyntax-only on <bits/stdc++.h> under the
# agent — then the spool's choice (deflate level 1) against the goals:
# bytes <= 0.55 x the file on the 1 M-block snapshot, compression CPU <= 10 %
# of that capture's total time.
B=${1:-build/bench}
CLI=${CLI:-build/heapgraph}
dir=$(mktemp -d "${TMPDIR:-/tmp}/hg_bench_compress.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cap=$(HG_BENCH_MODE=fork HG_BENCH_REPS=1 HG_BENCH_KEEP=1 "$B/bench_capture" 1000000 "$dir" | grep total_ms) ||
  { echo "bench_capture failed"; exit 1; }
echo "$cap"
total=$(printf '%s' "$cap" | sed -n 's/.*total_ms=\([0-9.]*\).*/\1/p')
files=$(ls "$dir"/*.hgsnap)
build/examples/demo "$dir/demo.hgsnap" >/dev/null 2>&1 && files="$files $dir/demo.hgsnap"
if command -v clang++-14 >/dev/null; then
  printf '#include <bits/stdc++.h>\nint main() { return 0; }\n' >"$dir/t.cpp"
  "$CLI" run -o "$dir/clang.hgsnap" --at-exit -- clang++-14 -fsyntax-only "$dir/t.cpp" >/dev/null 2>&1
  [ -s "$dir/clang.hgsnap" ] && files="$files $dir/clang.hgsnap"
fi
out=$("$B/bench_compress" $files) || { echo "bench_compress failed"; exit 1; }
printf '%s\n' "$out"
printf '%s\n' "$out" | awk -v total="$total" '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    if (v["file"] ~ /^bench_capture/ && v["codec"] == "deflate-1")
      printf("compress 1 M blocks, deflate-1 (the spool): %.3f x the file (goal <= 0.55), %.0f ms CPU = %.1f %% " \
             "of the capture total %.0f ms (goal <= 10 %%)\n", v["ratio"], v["cpu_ms"], 100 * v["cpu_ms"] / total, total)
    if (v["file"] ~ /^bench_capture/ && v["codec"] == "zstd-1")
      printf("compress 1 M blocks, zstd-1 (for comparison): %.3f x, %.0f ms CPU = %.1f %% of the capture\n",
             v["ratio"], v["cpu_ms"], 100 * v["cpu_ms"] / total) }'
uptime | sed 's/.*load/load/'
