#!/bin/sh
# test_cli.sh — `heapgraph verify` exit codes and `heapgraph info --json` on
# good and damaged snapshots (golden file, truncated copy, bad checksum,
# missing file). Run from the repository root by tests/run.sh with $BUILD set.
# Prints "N passed, N failed".
set -u
BUILD=${BUILD:-build}
CLI=${HG_CLI:-$BUILD/heapgraph}
PY=/usr/bin/python3
GOLDEN=tests/golden/v1-small.hgsnap
pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

if [ ! -x "$CLI" ]; then echo "no CLI at $CLI" >&2; echo "0 passed, 1 failed"; exit 1; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgcli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# damaged copies: cut in the middle, and one checksum byte flipped
size=$(wc -c < "$GOLDEN")
head -c $((size / 2)) "$GOLDEN" > "$tmp/trunc.hgsnap"
$PY - "$GOLDEN" "$tmp/badsum.hgsnap" <<'PYEOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
d[-2] ^= 0x01  # last byte of the 8-byte xxh64 before the final break
open(sys.argv[2], 'wb').write(d)
PYEOF

# expect STATUS CMD... : runs CMD, compares the exit status
expect() {
  want=$1; shift
  "$@" > "$tmp/out" 2> "$tmp/err"; got=$?
  if [ "$got" -eq "$want" ]; then ok; else no "$* exited $got, want $want: $(cat "$tmp/err")"; fi
}

expect 0 "$CLI" verify "$GOLDEN"
expect 0 "$CLI" verify --help
expect 2 "$CLI" verify
expect 1 "$CLI" verify "$tmp/trunc.hgsnap"
grep -q "at byte" "$tmp/err" && grep -q "truncated" "$tmp/err" && ok || no "verify trunc message: $(cat "$tmp/err")"
expect 1 "$CLI" verify "$tmp/badsum.hgsnap"
grep -q "checksum mismatch" "$tmp/err" && ok || no "verify badsum message: $(cat "$tmp/err")"
expect 1 "$CLI" verify "$tmp/missing.hgsnap"
grep -q "missing.hgsnap" "$tmp/err" && ok || no "verify missing message: $(cat "$tmp/err")"
expect 1 "$CLI" verify "$GOLDEN" "$tmp/trunc.hgsnap"
expect 1 "$CLI" verify "$tmp"

# info --json on the golden file: the exact counts and metadata
expect 0 "$CLI" info --json "$GOLDEN"
$PY - "$tmp/out" <<'PYEOF' && ok || no "info --json golden content"
import json, sys
j = json.load(open(sys.argv[1]))
want = {"regions": 3, "images": 2, "threads": 2, "heaps": 2, "classes": 3,
        "strings": 2, "nodes": 6, "edges": 10, "roots": 5}
assert j["counts"] == want, j["counts"]
assert j["format_version"] == 1 and j["checksum_ok"] is True
assert j["platform"] == "linux" and j["process"] == "golden" and j["pid"] == 4242
assert j["time_ns"] == 1700000000123456789
assert j["app"] == {"build": "1.2.4", "user": "t\u00e9st \u2713"}, j["app"]
assert j["capture"] == {"pause_ns": 1600, "walk_ns": 0, "write_ns": 99}, j["capture"]
assert j["file_size"] == 880 or j["file_size"] > 0
PYEOF
expect 0 "$CLI" info "$GOLDEN"
grep -q "checksum ok" "$tmp/out" && ok || no "info text: $(cat "$tmp/out")"

# a file whose only fault is the checksum is still shown, with status 1
expect 1 "$CLI" info --json "$tmp/badsum.hgsnap"
$PY -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['checksum_ok'] is False and j['counts']['nodes'] == 6" \
  "$tmp/out" && ok || no "info --json badsum content"
expect 1 "$CLI" info --json "$tmp/trunc.hgsnap"
[ ! -s "$tmp/out" ] && ok || no "info on a truncated file printed data"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
