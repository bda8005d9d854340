#!/bin/sh
# test_cli_options.sh — every subcommand through the built CLI: --help exits
# 0 with "usage: heapgraph CMD" on stdout; a usage error exits 2 and prints
# the very same usage on stderr (one text, generated from the option table);
# every option the usage lists is accepted (not "unknown option"); -n and
# --limit are the same option wherever a limit exists, and numbers are strict. (run's --limit-fraction is another option)
# Run from the repository root by tests/run.sh with $BUILD set.
# Prints "N passed, N failed".
set -u
BUILD=${BUILD:-build}
CLI=${HG_CLI:-$BUILD/heapgraph}
GOLDEN=tests/golden/v1-small.hgsnap
pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

if [ ! -x "$CLI" ]; then echo "no CLI at $CLI" >&2; echo "0 passed, 1 failed"; exit 1; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgopts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmds=$("$CLI" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
[ "$(printf '%s\n' "$cmds" | wc -l)" -ge 17 ] && ok || no "top-level --help lists $(printf '%s\n' "$cmds" | wc -l) commands"

for c in $cmds; do
  "$CLI" "$c" --help > "$tmp/help" 2> "$tmp/err"; rc=$?
  if [ "$rc" -eq 0 ] && head -n 1 "$tmp/help" | grep -q "^usage: heapgraph $c"; then ok
  else no "$c --help exited $rc: $(head -n 1 "$tmp/help")"; fi
  # a usage error shows the same text, after one line saying what is wrong
  "$CLI" "$c" --no-such-option > "$tmp/out" 2> "$tmp/err"; rc=$?
  if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] && head -n 1 "$tmp/err" | grep -q "^heapgraph $c: unknown option" &&
     tail -n +2 "$tmp/err" | cmp -s - "$tmp/help"; then ok
  else no "$c --no-such-option: exit $rc, stderr differs from --help"; fi
  # every spelling listed under options: is known to the parser
  for o in $(sed -n '/^options:/,$p' "$tmp/help" | grep -o -E -- '(^  |, )--?[a-z][a-z-]*' | sed 's/^[ ,]*//' | sort -u); do
    "$CLI" "$c" "$o" > /dev/null 2> "$tmp/err"
    if grep -q "unknown option" "$tmp/err"; then no "$c: $o is in --help but unknown"; else ok; fi
  done
  # the limit: both spellings or neither, strict numbers
  if grep -q -- '-n, --limit N' "$tmp/help"; then
    for bad in abc -1 5x ''; do
      "$CLI" "$c" -n "$bad" > /dev/null 2> "$tmp/err"; rc=$?
      if [ "$rc" -eq 2 ] && grep -q "needs a number" "$tmp/err"; then ok; else no "$c -n '$bad' exited $rc"; fi
    done
  elif grep -q -- '--limit[ =]\|-n ' "$tmp/help"; then
    no "$c has a limit not spelled '-n, --limit N'"
  fi
done

# -n N and --limit N give the same output
for c in classes nodes edges top leaks cycles; do
  "$CLI" $c "$GOLDEN" -n 2 > "$tmp/a" 2>&1; r1=$?
  "$CLI" $c "$GOLDEN" --limit 2 > "$tmp/b" 2>&1; r2=$?
  "$CLI" $c "$GOLDEN" > "$tmp/c" 2>&1
  if [ "$r1" -eq "$r2" ] && cmp -s "$tmp/a" "$tmp/b"; then ok; else no "$c: -n 2 and --limit 2 differ"; fi
done
# the limit limits (classes prints a header and a total around the rows)
[ "$("$CLI" classes "$GOLDEN" -n 1 | wc -l)" -eq 3 ] && ok || no "classes -n 1 is not one row"
[ "$("$CLI" nodes "$GOLDEN" --limit=2 | wc -l)" -eq 2 ] && ok || no "nodes --limit=2 is not two rows"
# numbers in hex are numbers; a value-less flag takes no =value
[ "$("$CLI" nodes "$GOLDEN" -n 0x1 | wc -l)" -eq 1 ] && ok || no "nodes -n 0x1"
"$CLI" info "$GOLDEN" --json=1 > /dev/null 2>&1; [ $? -eq 2 ] && ok || no "info --json=1 accepted"
# capture: --pid and --signal are strict too
"$CLI" capture --pid abc > /dev/null 2>&1; [ $? -eq 2 ] && ok || no "capture --pid abc"
"$CLI" capture --pid 0 > /dev/null 2>&1; [ $? -eq 2 ] && ok || no "capture --pid 0"
"$CLI" capture --pid $$ --signal BOGUS > /dev/null 2>&1; [ $? -eq 2 ] && ok || no "capture --signal BOGUS"
"$CLI" capture --mode other -o "$tmp/x" > /dev/null 2>&1; [ $? -eq 2 ] && ok || no "capture --mode other"
# run: options stop at PROGRAM, whose own options pass through
"$CLI" run -o "$tmp/r-%p.hgsnap" -- /bin/echo -n > /dev/null 2>&1; [ $? -ne 2 ] && ok || no "run -- /bin/echo -n"
out=$(HEAPGRAPH_LIB=/dev/null "$CLI" run -o "$tmp/r-%p.hgsnap" /bin/sh -c 'echo "$HEAPGRAPH_MODE:$0"' -n 2>/dev/null)
[ "$out" = ":-n" ] && ok || no "run passes PROGRAM's arguments through: got '$out'"
# export: --format is required and must be one of its words
"$CLI" export "$GOLDEN" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q -- "--format is required" "$tmp/err" && ok || no "export without --format"
"$CLI" export "$GOLDEN" --format svg > /dev/null 2>&1; [ $? -eq 2 ] && ok || no "export --format svg"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
