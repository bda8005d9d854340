#!/bin/sh
# run.sh — runs every test program and script given as arguments, reads the
# "N passed, N failed[, N skipped]" line each prints last, and prints the
# total the same way.
# A program that exits non-zero without such a line counts as one failure.
# Scripts ending in .py run under $PYTHON, .sh under sh; others are executed.
set -u
total_p=0; total_f=0; total_s=0; bad=""
for t in "$@"; do
  case "$t" in
    *.py) cmd="${PYTHON:-/usr/bin/python3} $t" ;;
    *.sh) cmd="sh $t" ;;
    *) cmd="$t" ;;
  esac
  out=$($cmd 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^([A-Za-z_-]+: )?[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [ -n "$line" ]; then
    p=$(printf '%s' "$line" | sed -E 's/^([A-Za-z_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
    f=$(printf '%s' "$line" | sed -E 's/^([A-Za-z_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
    s=$(printf '%s' "$line" | sed -E -n 's/.* failed, ([0-9]+) skipped.*/\1/p')
  else
    p=0; f=0; s=""
  fi
  total_s=$((total_s + ${s:-0}))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  total_p=$((total_p + p)); total_f=$((total_f + f))
  if [ "$f" -ne 0 ]; then
    bad="$bad $t"
    printf 'FAIL %-40s %s\n' "$t" "${line:-exit $rc}"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/    /'
  else
    printf 'ok   %-40s %s\n' "$t" "$line"
  fi
done
[ -n "$bad" ] && echo "failed:$bad"
if [ "$total_s" -gt 0 ]; then
  echo "check: $total_p passed, $total_f failed, $total_s skipped"
else
  echo "check: $total_p passed, $total_f failed"
fi
[ "$total_f" -eq 0 ]
