#!/bin/sh
# test_cli_defects.sh — small CLI defects of issue 18 (item 7) and the
# privacy option (item 8) through the CLI:
#   capture -o 'a"b.hgsnap' --json prints valid JSON naming the file;
#   capture --pid P --signal bogus / 9 / TERM is a usage error (exit 2) and
#   P is not signalled; run --signal bogus / SEGV is an error and the
#   program is not started; verify on a FIFO with no writer fails at once;
#   capture --omit all leaves the executable's path out of the file.
B=${BUILD:-build}
CLI=$(cd "$B" && pwd)/heapgraph
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d /tmp/hg_defects.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
san=${SANITIZE:-0}

# 1. JSON with a quote in the file name
(cd "$tmp" && "$CLI" capture -o 'a"b.hgsnap' --json >"$tmp/j" 2>"$tmp/e")
if /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["file"]=="a\"b.hgsnap", d' "$tmp/j" 2>"$tmp/why"; then
  ok "capture --json with a quote in the name: valid JSON"
else bad "capture --json: $(cat "$tmp/j" "$tmp/why" "$tmp/e" | tail -2)"; fi

# 2. capture --pid with a bad or dangerous signal
sleep 30 &
victim=$!
for s in bogus 9 TERM SEGV 0 RTMIN+4; do
  "$CLI" capture --pid "$victim" --signal "$s" >/dev/null 2>"$tmp/e"
  rc=$?
  if [ $rc -eq 2 ] && grep -q "cannot trigger" "$tmp/e" && kill -0 "$victim" 2>/dev/null; then
    ok "capture --pid --signal $s: refused, process untouched"
  else bad "capture --pid --signal $s: exit $rc ($(cat "$tmp/e"))"; fi
done
kill "$victim" 2>/dev/null; wait "$victim" 2>/dev/null

# 3. run --signal bogus: the program is not started
for s in bogus SEGV 15 USR3; do
  rm -f "$tmp/started"
  "$CLI" run --signal "$s" -- sh -c "touch '$tmp/started'" >/dev/null 2>"$tmp/e"
  rc=$?
  if [ $rc -eq 2 ] && [ ! -e "$tmp/started" ] && grep -q "cannot trigger" "$tmp/e"; then
    ok "run --signal $s: refused before starting the program"
  else bad "run --signal $s: exit $rc, started=$([ -e "$tmp/started" ] && echo yes || echo no) ($(cat "$tmp/e"))"; fi
done

# 4. verify on a FIFO with no writer: fails at once
mkfifo "$tmp/fifo"
timeout 10 "$CLI" verify "$tmp/fifo" 2>"$tmp/e"
rc=$?
if [ $rc -eq 1 ] && grep -q "not a regular file" "$tmp/e"; then ok "verify FIFO: clear error, exit 1"
else bad "verify FIFO: exit $rc ($(cat "$tmp/e"))"; fi

# 5. capture --omit all: no path of ours in the file (under ASan there is no
# heap walk, but paths are still written or omitted the same way)
"$CLI" capture -o "$tmp/priv.hgsnap" --omit all >/dev/null 2>"$tmp/e"
"$CLI" capture -o "$tmp/full.hgsnap" >/dev/null 2>>"$tmp/e"
if [ -s "$tmp/priv.hgsnap" ] && [ -s "$tmp/full.hgsnap" ] && grep -q "heapgraph" "$tmp/full.hgsnap" &&
   ! grep -q "/heapgraph" "$tmp/priv.hgsnap" && ! grep -q "libc.so" "$tmp/priv.hgsnap"; then
  ok "capture --omit all: no paths in the file"
else bad "capture --omit all ($(cat "$tmp/e"))"; fi
"$CLI" capture -o "$tmp/x.hgsnap" --omit everything >/dev/null 2>&1
[ $? -eq 2 ] && ok "capture --omit everything: usage error" || bad "capture --omit everything accepted"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
