#!/bin/sh
# test_cli_escape.sh — no control character from a snapshot reaches the
# terminal (issue 18, item 6). evil_names writes a snapshot whose every
# string carries ESC ]0;… (retitle), ESC [2J (clear), BEL, CR, a newline
# followed by "fake row", a tab and a C1 CSI (U+009B). Every text command's
# output (stdout and stderr) must hold none of those bytes raw, no line may
# start with "fake row", and the escaped form (\x1b) must be visible.
# JSON output must still be valid JSON with the exact strings.
B=${BUILD:-build}
CLI=$B/heapgraph
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d /tmp/hg_escape.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
F=$tmp/evil.hgsnap
"$B/tools/evil_names" "$F" || { echo "0 passed, 1 failed"; exit 1; }

check() { # NAME then the command's arguments
  name=$1; shift
  "$CLI" "$@" >"$tmp/out" 2>&1
  if LC_ALL=C grep -q "$(printf '[\033\007\r]')" "$tmp/out"; then bad "$name: raw control bytes"; return; fi
  if LC_ALL=C grep -q "$(printf '\302\233')" "$tmp/out"; then bad "$name: raw C1 CSI"; return; fi
  if grep -q '^fake row' "$tmp/out"; then bad "$name: a name started a new line"; return; fi
  if ! grep -q 'x1b' "$tmp/out"; then bad "$name: the escaped name is missing ($(head -c 200 "$tmp/out"))"; return; fi
  ok "$name"
}
check info info "$F"
check classes classes "$F"
check top top "$F"
check regions regions "$F"
check "regions --all" regions --all "$F"
check nodes nodes "$F"
check edges edges "$F"
check leaks leaks "$F"
check cycles cycles "$F"
check show show "$F" 0x11000
check path path "$F" 0x11040
check dominators dominators "$F" 0x11000
check diff diff "$F" "$F"
# a hostile file name in an error message (stderr)
evil_name="$tmp/$(printf 'x\033]0;owned\007')"
"$CLI" info "$evil_name" >"$tmp/out" 2>&1
if LC_ALL=C grep -q "$(printf '[\033\007]')" "$tmp/out"; then bad "error message: raw control bytes"; else ok "error message escaped"; fi
# JSON stays exact
for c in info classes nodes regions; do
  if "$CLI" $c --json "$F" | /usr/bin/python3 -c '
import json, sys
text = sys.stdin.read()
docs = [json.loads(l) for l in text.splitlines() if l.strip()] if "\n{" in text.strip() else [json.loads(text)]
s = json.dumps(docs)
assert "\\u001b]0;owned" in s, s[:300]
' 2>"$tmp/err"; then ok "$c --json: exact strings"; else bad "$c --json: $(cat "$tmp/err" | tail -1)"; fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
