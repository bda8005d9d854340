# tests/serve/pg.sh — sourced by the serve tests and bench: starts a
# throw-away PostgreSQL 15 (Debian's /usr/lib/postgresql/15/bin) as an
# unprivileged user in a temporary directory, listening on a unix socket in
# that directory (and on TCP only at the address asked for), with a random
# port number (which only names the socket when TCP is off).
#   pg_start DIR [LISTEN_ADDR] [extra postgres -c options…]
#       sets PG_URL (postgres://hg@/hg?host=DIR/sock&port=N) and PG_PORT
#   pg_stop DIR
# As root the server runs as `nobody` (initdb refuses root); otherwise as
# the caller. pg_have says whether the binaries are installed.
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

pg_have() { [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ]; }

pg_as() {
  if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}

pg_start() {
  _d=$1; _listen=${2:-}; shift; [ $# -gt 0 ] && shift
  mkdir -p "$_d/sock"
  if [ "$(id -u)" = 0 ]; then chown -R nobody "$_d"; chmod 755 "$_d"; chmod o+x "$(dirname "$_d")"; fi
  pg_as "$PG_BIN/initdb" -D "$_d/db" -U hg -A trust --no-sync -E UTF8 >"$_d/initdb.log" 2>&1 || {
    cat "$_d/initdb.log" >&2; return 1; }
  # TCP (a test's own network namespace only): trust its clients
  [ -n "$_listen" ] && echo "host all all 0.0.0.0/0 trust" >>"$_d/db/pg_hba.conf"
  PG_PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000 ))
  _opts="-k $_d/sock -p $PG_PORT -c listen_addresses='$_listen' -c max_connections=200 -c fsync=off -c full_page_writes=off"
  for _o in "$@"; do _opts="$_opts -c $_o"; done
  printf '%s\n' "$_opts" >"$_d/opts"
  pg_as "$PG_BIN/pg_ctl" -D "$_d/db" -o "$_opts" -l "$_d/pg.log" -w -t 60 start >/dev/null || {
    cat "$_d/pg.log" >&2; return 1; }
  pg_as "$PG_BIN/createdb" -h "$_d/sock" -p "$PG_PORT" -U hg hg || return 1
  PG_URL="postgres://hg@/hg?host=$_d/sock&port=$PG_PORT"
  export PG_URL PG_PORT
}

# pg_restart DIR: starts a stopped server again with the same options
pg_restart() {
  pg_as "$PG_BIN/pg_ctl" -D "$1/db" -o "$(cat "$1/opts")" -l "$1/pg.log" -w -t 60 start >/dev/null
}
# pg_sql DIR SQL: one query's rows, unaligned
pg_sql() {
  pg_as psql -X -h "$1/sock" -p "$(sed -n 's/.* -p \([0-9]*\) .*/\1/p' "$1/opts")" -U hg -d hg -tAc "$2"
}

pg_stop() {
  [ -d "$1/db" ] && pg_as "$PG_BIN/pg_ctl" -D "$1/db" -m immediate -w stop >/dev/null 2>&1
  return 0
}
