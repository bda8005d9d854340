#!/bin/sh
# tests/serve/netns_workers.sh — `heapgraph serve` on several machines: four
# network namespaces made here (ip netns + veth pairs on a bridge in a fifth):
# a PostgreSQL 15 host, an intake host (`heapgraph serve --workers 0 --db`),
# two worker hosts (`heapgraph serve --worker-only --db … --data DIR`, the
# blob directory shared as a shared mount would be). Snapshots are uploaded
# over HTTP; worker 1 is killed with SIGKILL while it holds leases; worker 2
# takes its jobs when the leases expire. Then: every accepted snapshot has
# exactly one summary and one done job, none lost, none twice; a duplicate
# upload adds no row; with the database stopped the intake answers 503 and
# records nothing, and after it comes back the next upload is accepted and
# analysed. Worker 2 starts only once worker 1 is dead, so worker 1 is the
# one consumer while it is caught; when it finished everything before it
# could be caught (a job takes tens of milliseconds: on a fast machine all
# 16 were once done first, and the wait ran into the test's timeout), eight
# more snapshots are uploaded and it is caught on those. Needs root
# (namespaces); skipped otherwise.
set -u
B=${BUILD:-build}
HERE=$(dirname "$0")
CLI=${HG_CLI:-$B/heapgraph}
GEN=$B/serve/snapgen
. "$HERE/pg.sh"
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { if eval "$1"; then ok "$2"; else bad "$2 [$1]"; fi; }

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1 || ! pg_have; then
  echo "netns_workers: needs root, iproute2 and postgresql-15"
  echo "netns_workers: 0 passed, 0 failed, 1 skipped"
  exit 0
fi

T=$(mktemp -d /tmp/hg-netns.XXXXXX)
chmod 755 "$T"
S=$$
NET=10.213.$((S % 250))
BR=hgb$S PG=hgp$S IN=hgi$S W1=hgw$S W2=hgx$S
pids=""
cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  ip netns exec "$PG" sh -c ". '$HERE/pg.sh'; pg_stop '$T/pg'" 2>/dev/null
  for n in $PG $IN $W1 $W2 $BR; do ip netns del "$n" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT

# ---- the network: one bridge, four hosts ----
ip netns add "$BR" && ip -n "$BR" link add br0 type bridge && ip -n "$BR" link set br0 up || {
  bad "network namespaces can be made"; echo "netns_workers: $pass passed, $fail failed"; exit 1; }
i=1
for n in $PG $IN $W1 $W2; do
  ip netns add "$n"
  ip link add "v$n" type veth peer name "p$n"
  ip link set "v$n" netns "$n"
  ip link set "p$n" netns "$BR"
  ip -n "$BR" link set "p$n" master br0 up
  ip -n "$n" addr add "$NET.$i/24" dev "v$n"
  ip -n "$n" link set "v$n" up
  ip -n "$n" link set lo up
  i=$((i + 1))
done

# ---- the database host ----
ip netns exec "$PG" sh -c ". '$HERE/pg.sh'; pg_start '$T/pg' '$NET.1' && echo \$PG_PORT >'$T/pgport'" ||
  bad "PostgreSQL starts on the database host"
URL="postgres://hg@$NET.1:$(cat "$T/pgport" 2>/dev/null)/hg"
sql() { ip netns exec "$PG" sh -c ". '$HERE/pg.sh'; pg_sql '$T/pg' \"$1\""; }

# ---- the intake host ----
D=$T/data
mkdir -p "$D"
KEY=$(ip netns exec "$IN" "$CLI" serve key add fleet --data "$D" --db "$URL" 2>"$T/key.err" | tail -n 1)
check "[ -n '$KEY' ]" "a key is made through the database host"
ip netns exec "$IN" "$CLI" serve --data "$D" --db "$URL" --host "$NET.2" --workers 0 >"$T/in.out" 2>"$T/in.log" &
pids="$pids $!"
n=0; while [ ! -s "$T/in.out" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
SURL=$(head -n 1 "$T/in.out" | sed 's|/$||')
check "[ -n '$SURL' ]" "the intake host serves ($SURL)"
post() { # FILE -> HTTP status
  ip netns exec "$IN" curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "@$1" \
    -H "Authorization: Bearer $KEY" "$SURL/v1/snapshots"
}

# ---- uploads ----
N=16
accepted=0
for k in $(seq 1 $N); do
  v=1.0; [ $k -gt 8 ] && v=2.0
  "$GEN" "$T/s$k.hgsnap" fleet $v "dev-$((k % 5))" $k $((200000 + 10000 * (k % 7))) || bad "snapgen $k"
  [ "$(post "$T/s$k.hgsnap")" = 201 ] && accepted=$((accepted + 1))
done
check "[ $accepted -eq $N ]" "all $N uploads accepted over the bridge ($accepted)"
check "[ \"\$(post '$T/s3.hgsnap')\" = 200 ]" "a repeated upload is a duplicate (200)"

# ---- two worker hosts; worker 1 is killed while it holds leases ----
LEASE=4
ip netns exec "$W1" "$CLI" serve --worker-only --workers 2 --worker-lease $LEASE --db "$URL" --data "$D" \
  >/dev/null 2>"$T/w1.log" &
w1=$!; pids="$pids $w1"
# freeze it first (a commit already sent lands within the pause), read what
# it holds, then kill it: what it held can only be finished by worker 2. A
# job can end between seeing it held and the freeze: then it runs on and is
# caught again; when no job is left for it, eight more snapshots are uploaded
# (version 3.0, seeds after the first N).
held=; tries=0; more=0
while [ -z "$held" ] && [ $tries -lt 10 ]; do
  tries=$((tries + 1)); n=0
  while [ $n -lt 400 ]; do
    [ "$(sql "SELECT COUNT(*) FROM summaries WHERE worker LIKE '%:$w1/%'")" -ge 1 ] &&
      [ "$(sql "SELECT COUNT(*) FROM jobs WHERE state = 1 AND worker LIKE '%:$w1/%'")" -ge 1 ] && break
    [ "$(sql "SELECT COUNT(*) FROM jobs WHERE state < 2")" = 0 ] && break
    sleep 0.03; n=$((n + 1))
  done
  kill -STOP "$w1"
  sleep 0.3
  held=$(sql "SELECT id FROM jobs WHERE state = 1 AND worker LIKE '%:$w1/%'" | tr '\n' ' ')
  [ -n "$held" ] && break
  if [ "$(sql "SELECT COUNT(*) FROM jobs WHERE state < 2")" = 0 ]; then
    for j in 1 2 3 4 5 6 7 8; do
      k=$((N + more + 1))
      "$GEN" "$T/s$k.hgsnap" fleet 3.0 "dev-$((k % 5))" $k $((200000 + 10000 * (k % 7))) || bad "snapgen $k"
      [ "$(post "$T/s$k.hgsnap")" = 201 ] && more=$((more + 1))
    done
  fi
  kill -CONT "$w1"
done
kill -9 "$w1"
check "[ -n '$held' ]" "worker 1 killed (SIGKILL) while holding leases: $held (more uploads: $more)"
N=$((N + more))
ip netns exec "$W2" "$CLI" serve --worker-only --workers 2 --worker-lease $LEASE --db "$URL" --data "$D" \
  >/dev/null 2>"$T/w2.log" &
w2=$!; pids="$pids $w2"
n=0
while [ "$(sql "SELECT COUNT(*) FROM jobs WHERE state < 2")" -gt 0 ] && [ $n -lt 1800 ]; do sleep 0.1; n=$((n + 1)); done

# ---- exactly once ----
check "[ \"\$(sql 'SELECT COUNT(*) FROM snapshots')\" = $N ]" "every accepted snapshot has one row ($N)"
check "[ \"\$(sql 'SELECT COUNT(*) FROM summaries')\" = $N ]" "every accepted snapshot has one summary"
check "[ \"\$(sql 'SELECT COUNT(DISTINCT id) FROM summaries')\" = $N ]" "no summary twice"
check "[ \"\$(sql 'SELECT COUNT(*) FROM jobs WHERE state = 2')\" = $N ]" "every job done"
check "[ \"\$(sql 'SELECT COUNT(*) FROM jobs WHERE state = 3')\" = 0 ]" "nothing quarantined"
check "[ \"\$(sql 'SELECT COUNT(*) FROM snapshots s JOIN summaries m ON m.app = s.app AND m.id = s.id')\" = $N ]" \
  "every snapshot row joins its summary"
for id in $held; do
  by=$(sql "SELECT worker FROM summaries WHERE id = '$id'")
  att=$(sql "SELECT attempts FROM jobs WHERE id = '$id'")
  check "case '$by' in *:$w2/*) true;; *) false;; esac && [ '$att' = 1 ]" \
    "job $id held by the killed worker: done once by worker 2 after its lease expired ($by, attempts $att)"
done
check "[ \"\$(sql \"SELECT COUNT(*) FROM summaries WHERE worker LIKE '%:$w1/%'\")\" -ge 1 ]" "worker 1 finished jobs before it died"
check "[ \"\$(sql \"SELECT COUNT(*) FROM summaries WHERE worker LIKE '%:$w2/%'\")\" -ge 1 ]" "worker 2 finished jobs"
check "[ \"\$(sql \"SELECT COUNT(*) FROM summaries WHERE version = '2.0'\")\" = 8 ]" "versions read from the snapshots"

# ---- the database host goes away: 503, nothing recorded; back: accepted ----
"$GEN" "$T/late.hgsnap" fleet 2.0 dev-late 999 20000
ip netns exec "$PG" sh -c ". '$HERE/pg.sh'; pg_as '$PG_BIN/pg_ctl' -D '$T/pg/db' -m fast -w stop" >/dev/null 2>&1
code=$(post "$T/late.hgsnap")
check "[ '$code' = 503 ]" "database stopped: the intake answers 503 ($code)"
ip netns exec "$PG" sh -c ". '$HERE/pg.sh'; pg_restart '$T/pg'" || bad "PostgreSQL restarts"
check "[ \"\$(sql 'SELECT COUNT(*) FROM snapshots')\" = $N ]" "nothing was recorded while it was down"
code=$(post "$T/late.hgsnap")
check "[ '$code' = 201 ]" "database back: the same upload is accepted ($code)"
n=0; while [ "$(sql "SELECT COUNT(*) FROM summaries")" != $((N + 1)) ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
check "[ \"\$(sql 'SELECT COUNT(*) FROM summaries')\" = $((N + 1)) ]" "worker 2 reconnected and analysed it"
kill "$w2" 2>/dev/null; wait "$w2" 2>/dev/null
[ "$fail" -ne 0 ] && { echo "--- intake log"; tail -n 20 "$T/in.log"; echo "--- w2 log"; tail -n 20 "$T/w2.log"; }
echo "netns_workers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
