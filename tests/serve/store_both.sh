#!/bin/sh
# tests/serve/store_both.sh — the store test suite (tests/serve/store_suite.c)
# on SQLite and on a PostgreSQL 15 this script starts (tests/serve/pg.sh),
# then, on each, the issues the store answered compared with
# `heapgraph fleet --json` on the same snapshot files (same objects).
set -u
B=${BUILD:-build}
HERE=$(dirname "$0")
. "$HERE/pg.sh"
T=$(mktemp -d /tmp/hg-store.XXXXXX)
trap 'pg_stop "$T/pg"; rm -rf "$T"' EXIT
pass=0; fail=0; skip=0

compare_cli() { # WORKDIR NAME
  files=$(sed "s|^|$1/byid/|" "$1/order-dump")
  # shellcheck disable=SC2086
  "$B/heapgraph" fleet --json --version 2.0 --baseline-version 1.0 --cache-dir "$1/cache" $files >"$1/cli.jsonl" 2>"$1/cli.err"
  if ${PYTHON:-python3} - "$1/issues.json" "$1/cli.jsonl" <<'PY'
import json, sys
api = json.load(open(sys.argv[1]))
cli = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
ok = api["issues"] == cli and len(cli) > 0 and api["pending"] == 0
print("issues API == heapgraph fleet --json: %d issues, %s" % (len(cli), "same" if ok else "DIFFERENT"))
sys.exit(0 if ok else 1)
PY
  then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $2: CLI comparison"; cat "$1/cli.err"; fi
}

run_suite() { # NAME WORKDIR [URL]
  out=$("$B/serve/store_suite" "$B/serve/snapgen" "$2" ${3:-} 2>&1); rc=$?
  printf '%s\n' "$out" | sed "s/^/[$1] /"
  line=$(printf '%s\n' "$out" | tail -n 1)
  p=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\1/p')
  f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) passed, ([0-9]+) failed.*/\2/p')
  k=$(printf '%s' "$line" | sed -nE 's/.* failed, ([0-9]+) skipped.*/\1/p')
  pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1})); skip=$((skip + ${k:-0}))
  [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ] && fail=$((fail + 1))
  compare_cli "$2" "$1"
}

run_suite sqlite "$T/sqlite"
if pg_have && pg_start "$T/pg"; then
  run_suite postgres "$T/postgres" "$PG_URL"
else
  echo "FAIL postgres: PostgreSQL 15 could not be started (scripts/deps.sh check installs postgresql-15)"
  fail=$((fail + 1))
fi
if [ "$skip" -gt 0 ]; then echo "store_both: $pass passed, $fail failed, $skip skipped"
else echo "store_both: $pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
