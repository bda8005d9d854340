# lib.sh — shared by tests/serve/intake_*.sh (sourced): counters, a server
# started on port 0 (its URL from stdout's first line), uploads with curl.
# Needs $BUILD, sets $CLI, $MKMETA; the caller sets $tmp.
CLI=${HG_CLI:-$BUILD/heapgraph}
MKMETA=$BUILD/tests/serve_mkmeta
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { if eval "$1"; then ok "$2"; else bad "$2 [$1]"; fi; }

srv_pid=
# start_server DATA_DIR [serve options…]: sets $url (no trailing slash), $srv_pid;
# the server's stderr goes to DATA_DIR.log
start_server() {
  d=$1; shift
  mkdir -p "$d"
  rm -f "$d.out"
  "$CLI" serve --data "$d" "$@" >"$d.out" 2>>"$d.log" &
  srv_pid=$!
  i=0
  while [ ! -s "$d.out" ] && [ $i -lt 200 ] && kill -0 $srv_pid 2>/dev/null; do sleep 0.05; i=$((i + 1)); done
  url=$(head -n 1 "$d.out" | sed 's|/$||')
}
stop_server() {
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  srv_pid=
}
# new_key DATA_DIR APP [--read]: prints the key (the command's last line)
new_key() { "$CLI" serve key add "$2" ${3:-} --data "$1" | tail -n 1; }
# post KEY FILE [curl options…]: prints "STATUS BODY" of POST /v1/snapshots
post() {
  k=$1; f=$2; shift 2
  curl -s -o "$tmp/body" -w '%{http_code}' -X POST --data-binary "@$f" \
    -H "Authorization: Bearer $k" -H 'Content-Type: application/vnd.heapgraph.snapshot' "$@" \
    "$url/v1/snapshots" >"$tmp/code" 2>/dev/null
  printf '%s %s' "$(cat "$tmp/code")" "$(cat "$tmp/body" 2>/dev/null)"
}
# metric APP OUTCOME: the counter's value in GET /metrics
metric() {
  curl -s "$url/metrics" | sed -n "s/^heapgraph_serve_requests_total{app=\"$1\",outcome=\"$2\"} \([0-9]*\)$/\1/p"
}
# id_of FILE: the snapshot's id (trailer checksum, 16 hex digits)
id_of() { "$CLI" info "$1" | sed -n 's/.*(xxh64 0x\([0-9a-f]*\)).*/\1/p' | awk '{ printf "%016s\n", $1 }' | tr ' ' 0; }
