#!/bin/sh
# run.sh — runs every test program and script given as arguments, reads the
# "N passed, N failed[, N skipped]" line each prints last, and prints the
# total the same way.
# A program that exits non-zero without such a line counts as one failure.
# Scripts ending in .py run under $PYTHON, .sh under sh; others are executed.
# The end of the output stands alone: a "failed:" block repeats each failing
# test's name, counts and last $HG_FAIL_LINES (15) lines of output, just above
# the total, so a log's tail says what failed and how. Each test gets at most
# $HG_TEST_TIMEOUT seconds (1200): a hang fails that test, not the whole run.
set -u
keep=${HG_FAIL_LINES:-15}
limit=${HG_TEST_TIMEOUT:-1200}
total_p=0; total_f=0; total_s=0
fails=$(mktemp "${TMPDIR:-/tmp}/hg_run.XXXXXX")
trap 'rm -f "$fails"' EXIT
for t in "$@"; do
  case "$t" in
    *.py) cmd="${PYTHON:-/usr/bin/python3} $t" ;;
    *.sh) cmd="sh $t" ;;
    *) cmd="$t" ;;
  esac
  out=$(timeout -k 10 "$limit" $cmd 2>&1); rc=$?
  case "$rc" in
    124|137) how="timed out after ${limit}s" ;;
    1[3-9][0-9]) how="killed by signal $((rc - 128))" ;;
    *) how="exit $rc" ;;
  esac
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
    printf 'FAIL %-40s %s\n' "$t" "${line:-$how}"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/    /'
    { printf '  %s (%s): %s\n' "$t" "$how" "${line:-no summary line}"
      printf '%s\n' "$out" | tail -n "$keep" | sed 's/^/    | /'; } >>"$fails"
  else
    printf 'ok   %-40s %s\n' "$t" "$line"
  fi
done
if [ -s "$fails" ]; then
  echo "failed:"
  cat "$fails"
fi
if [ "$total_s" -gt 0 ]; then
  echo "check: $total_p passed, $total_f failed, $total_s skipped"
else
  echo "check: $total_p passed, $total_f failed"
fi
[ "$total_f" -eq 0 ]
