#!/bin/sh
# intake_faults.sh — `heapgraph serve` intake under faults: kill -9 of the
# server while uploads stream in (after the restart no partial blob is
# visible, every blob verifies, every 201 answered before is there); disk
# full on the data directory (a small tmpfs mounted here: 507, nothing
# half-written, uploads succeed again once space returns); the database
# unavailable (SQLite locked by another writer past the busy timeout: 503
# with Retry-After, nothing recorded; accepted after the lock goes).
set -u
BUILD=${BUILD:-build}
. tests/serve/lib.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgserve.XXXXXX")
mnt=
trap 'stop_server; [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
skipped=0

for i in 1 2 3 4 5 6; do "$MKMETA" "$tmp/big$i.hgsnap" "$i" @nodes=60000 app.version=3.$i || exit 1; done
for i in 1 2 3 4; do "$MKMETA" "$tmp/s$i.hgsnap" "$((i + 10))" app.version=1.$i || exit 1; done

# every blob whole: its name's size is its size, and it verifies
blobs_ok() {
  for b in $(find "$1/blobs" -name '*.hgsnap' ! -path '*/tmp/*'); do
    n=${b##*/}; sz=${n##*-}; sz=${sz%.hgsnap}
    [ "$(wc -c <"$b" | tr -d ' ')" = "$sz" ] || return 1
    "$CLI" verify "$b" >/dev/null 2>&1 || return 1
  done
}

# ---- kill -9 during uploads
D=$tmp/kill
K=$(new_key "$D" shop)
start_server "$D" --workers 0 --rate 0
ids=
for i in 1 2 3 4; do
  r=$(post "$K" "$tmp/s$i.hgsnap")
  [ "${r%% *}" = 201 ] && ids="$ids $(id_of "$tmp/s$i.hgsnap")"
done
for i in 1 2 3 4 5 6; do
  curl -s -o "$tmp/k$i" -w '%{http_code}' --limit-rate 200k -X POST --data-binary "@$tmp/big$i.hgsnap" \
    -H "Authorization: Bearer $K" "$url/v1/snapshots" >"$tmp/kc$i" 2>/dev/null &
done
sleep 1.5
partial=$(ls -A "$D/blobs/tmp" | wc -l)
kill -9 "$srv_pid"; wait "$srv_pid" 2>/dev/null; srv_pid=
wait
for i in 1 2 3 4 5 6; do
  [ "$(cat "$tmp/kc$i")" = 201 ] && ids="$ids $(id_of "$tmp/big$i.hgsnap")"
done
start_server "$D" --workers 0 --rate 0
check '[ "$partial" -ge 1 ] && [ -z "$(ls -A "$D/blobs/tmp")" ]' "kill -9 with $partial uploads in flight: their temporaries are gone after the restart"
check 'blobs_ok "$D"' "after the restart every blob is whole and verifies"
missing=0
for id in $ids; do
  python3 -c 'import sqlite3,sys; sys.exit(0 if sqlite3.connect(sys.argv[1]).execute("SELECT 1 FROM snapshots WHERE id=?", (sys.argv[2],)).fetchone() else 1)' \
    "$D/heapgraph.db" "$id" || missing=$((missing + 1))
  ls "$D/blobs/$(printf %.2s "$id")/$id-"*.hgsnap >/dev/null 2>&1 || missing=$((missing + 1))
done
check '[ $missing = 0 ] && [ -n "$ids" ]' "every 201 answered before the kill has its row and blob ($(echo $ids | wc -w))"
r=$(post "$K" "$tmp/big1.hgsnap")
check '[ "${r%% *}" = 201 ] || [ "${r%% *}" = 200 ]' "an upload cut by the kill goes through when retried (${r%% *})"
stop_server

# ---- disk full: the data directory on a 6 MB tmpfs
mnt=$tmp/full; mkdir -p "$mnt"
if mount -t tmpfs -o size=6m tmpfs "$mnt" 2>/dev/null; then
  D=$mnt/data
  K=$(new_key "$D" shop)
  start_server "$D" --workers 0 --rate 0
  r=$(post "$K" "$tmp/s1.hgsnap")
  check '[ "${r%% *}" = 201 ]' "disk full: a first upload fits"
  avail=$(df -B1 --output=avail "$mnt" | tail -n 1 | tr -d ' ')
  # leave 200 kB: less than a big snapshot (about 540 kB)
  head -c $((avail - 200000)) /dev/zero >"$mnt/filler" 2>/dev/null
  r=$(post "$K" "$tmp/big1.hgsnap")
  check 'printf "%s" "$r" | grep -q "^507 "' "disk full: 507 ($r)"
  check '[ -z "$(ls -A "$D/blobs/tmp")" ] && blobs_ok "$D"' "disk full: nothing half-written (no temporary, every blob whole)"
  check '! ls "$D/blobs/$(id_of "$tmp/big1.hgsnap" | cut -c1-2)/$(id_of "$tmp/big1.hgsnap")-"* >/dev/null 2>&1' "disk full: no blob for the refused upload"
  check '[ "$(metric shop insufficient_storage)" = 1 ]' "disk full: counted as insufficient_storage"
  rm -f "$mnt/filler"
  r=$(post "$K" "$tmp/big1.hgsnap")
  check '[ "${r%% *}" = 201 ]' "space back: the same upload is accepted ($r)"
  check 'blobs_ok "$D"' "space back: every blob whole"
  stop_server
  umount "$mnt"; mnt=
else
  echo "skip: cannot mount a tmpfs here (disk-full case needs root)"; skipped=$((skipped + 1))
fi

# ---- database unavailable: SQLite held by another writer past the 10 s busy timeout
D=$tmp/db
K=$(new_key "$D" shop)
start_server "$D" --workers 0 --rate 0
python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(14)
c.execute("ROLLBACK")' "$D/heapgraph.db" "$tmp/locked" &
lock=$!
while [ ! -f "$tmp/locked" ]; do sleep 0.1; done
curl -s -D "$tmp/h" -o "$tmp/body" -X POST --data-binary "@$tmp/s2.hgsnap" -H "Authorization: Bearer $K" "$url/v1/snapshots"
check 'head -n 1 "$tmp/h" | grep -q " 503 " && grep -qi "^retry-after:" "$tmp/h"' "database unavailable: 503 with Retry-After ($(head -n 1 "$tmp/h" | tr -d '\r'))"
wait $lock
check '[ "$(metric shop unavailable)" = 1 ]' "counted as unavailable"
n=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM snapshots").fetchone()[0])' "$D/heapgraph.db")
check '[ "$n" = 0 ]' "nothing recorded for the refused upload"
r=$(post "$K" "$tmp/s2.hgsnap")
check '[ "${r%% *}" = 201 ]' "the database back: the retry is accepted"
stop_server

echo "intake_faults: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
