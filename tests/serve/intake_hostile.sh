#!/bin/sh
# intake_hostile.sh — `heapgraph serve` against hostile clients: the fuzz
# corpus of snapshots (tests/fuzz/corpus/reader, regressions/reader) and
# 100 mutations of a valid snapshot uploaded (each answer agrees with
# `heapgraph verify`: 422 with reason and offset when it fails; the server
# never crashes; no temporary left); gzip and zstd bombs stopped at the
# decompressed-size limit (413, server memory bounded); slow clients
# (headers byte by byte, a stall, a trickled body) dropped at their
# deadlines while others are served; oversized headers (431); SQL
# metacharacters and control characters in every metadata string the
# store keeps, read back byte for byte from the database.
. tests/serve/lib.sh
D=$tmp/data
K=$(new_key "$D" shop)
"$MKMETA" "$tmp/ok.hgsnap" 7 app.version=1.0 || exit 1
start_server "$D" --workers 0 --rate 0 --max-decoded 5000000 --header-timeout 2 --idle-timeout 3 \
  --request-timeout 4 --header-limit 16384
alive() { kill -0 "$srv_pid" 2>/dev/null && [ "$(post "$K" "$tmp/ok.hgsnap" | cut -c1-3)" = 200 -o "$(post "$K" "$tmp/ok.hgsnap" | cut -c1-3)" = 201 ]; }
post "$K" "$tmp/ok.hgsnap" >/dev/null

# ---- the fuzz corpus and mutations
mkdir -p "$tmp/m"
for f in tests/fuzz/corpus/reader/* tests/fuzz/regressions/reader/*; do [ -f "$f" ] && cp "$f" "$tmp/m/"; done
"$MKMETA" "$tmp/base.hgsnap" 11 app.version=2.0 device.model=x || exit 1
python3 - "$tmp/base.hgsnap" "$tmp/m" <<'PY'
import random, sys
data = open(sys.argv[1], "rb").read()
rnd = random.Random(29)
for i in range(100):
    b = bytearray(data)
    kind = i % 5
    if kind == 0:                       # flip bytes
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    elif kind == 1:                     # truncate
        b = b[:rnd.randrange(len(b))]
    elif kind == 2:                     # insert garbage
        p = rnd.randrange(len(b)); b[p:p] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16)))
    elif kind == 3:                     # huge CBOR lengths
        p = rnd.randrange(len(b)); b[p:p + 9] = b"\x1b\xff\xff\xff\xff\xff\xff\xff\xf0"
    else:                               # a byte set to a boundary value
        b[rnd.randrange(len(b))] = rnd.choice([0, 0x7f, 0x80, 0xff, 0x1f, 0x3f])
    open("%s/mut%03d.hgsnap" % (sys.argv[2], i), "wb").write(bytes(b))
PY
# one client for all the uploads, one `heapgraph verify` for all the files
python3 - "${url#http://}" "$K" "$tmp"/m/* >"$tmp/answers" <<'PY'
import http.client, sys
host, key, files = sys.argv[1], sys.argv[2], sys.argv[3:]
for f in files:
    c = http.client.HTTPConnection(host, timeout=30)
    c.request("POST", "/v1/snapshots", body=open(f, "rb").read(), headers={"Authorization": "Bearer " + key})
    r = c.getresponse()
    print(f, r.status, r.read().decode("utf-8", "replace").strip())
    c.close()
PY
"$CLI" verify "$tmp"/m/* 2>"$tmp/verify" >/dev/null
agree=0; disagree=0; n422=0; nooff=0
while read -r f code body; do
  if grep -q "^heapgraph: $f: " "$tmp/verify"; then want=bad; else want=ok; fi
  case "$code:$want" in
    201:ok|200:ok) agree=$((agree + 1)) ;;
    422:bad) agree=$((agree + 1)); n422=$((n422 + 1))
             printf '%s' "$body" | grep -Eq '"reason":".+","offset":[0-9]+\}$' || nooff=$((nooff + 1)) ;;
    *) disagree=$((disagree + 1)); echo "  $f: $code $body (verify: $want)" ;;
  esac
done <"$tmp/answers"
total=$(ls "$tmp/m" | wc -l)
check '[ $disagree = 0 ] && [ $n422 -ge 95 ] && [ $agree = $total ]' "fuzz corpus + mutations: $total uploads agree with heapgraph verify ($n422 answered 422)"
check '[ $nooff = 0 ]' "every 422 carries the reader's reason and byte offset"
check 'kill -0 $srv_pid' "the server is alive after $total hostile snapshots"
check '[ -z "$(ls -A "$D/blobs/tmp")" ]' "no temporary left behind"
bad_blobs=0
for b in $(find "$D/blobs" -name '*.hgsnap'); do "$CLI" verify "$b" >/dev/null 2>&1 || bad_blobs=$((bad_blobs + 1)); done
check '[ $bad_blobs = 0 ]' "every stored blob verifies"

# ---- bombs: 200 MB of zeros, limit 5 MB
head -c 200000000 /dev/zero | gzip -1 -c >"$tmp/bomb.gz"
head -c 200000000 /dev/zero | zstd -q -3 -c >"$tmp/bomb.zst"
r=$(post "$K" "$tmp/bomb.gz" -H 'Content-Encoding: gzip')
check 'printf "%s" "$r" | grep -q "^413 .*decompresses to more than 5000000 bytes"' "gzip bomb ($(wc -c <"$tmp/bomb.gz") bytes): 413 at the limit"
r=$(post "$K" "$tmp/bomb.zst" -H 'Content-Encoding: zstd')
check 'printf "%s" "$r" | grep -q "^413 .*decompresses to more than 5000000 bytes"' "zstd bomb ($(wc -c <"$tmp/bomb.zst") bytes): 413 at the limit"
check '[ -z "$(ls -A "$D/blobs/tmp")" ]' "bombs: no temporary left"
hwm=$(sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' /proc/$srv_pid/status)
check '[ "$hwm" -lt 100000 ]' "server peak RSS after the bombs: $hwm kB (< 100 MB)"

# ---- slow clients: headers byte by byte, a stall, a trickled body
port=${url##*:}
python3 - "$port" "$K" >"$tmp/slow" 2>&1 <<'PY' &
import socket, sys, time
port, key = int(sys.argv[1]), sys.argv[2]
def conn():
    return socket.create_connection(("127.0.0.1", port))
def closed_within(s, seconds, trickle=None):
    """True when the server closes s within seconds (trickle: bytes sent one per 0.2 s meanwhile)."""
    s.settimeout(0.2)
    t0 = time.time(); i = 0
    while time.time() - t0 < seconds:
        try:
            if trickle is not None and i < len(trickle):
                s.send(trickle[i:i + 1]); i += 1
            d = s.recv(4096)
            if not d:
                return time.time() - t0
        except socket.timeout:
            continue
        except OSError:
            return time.time() - t0
    return None
req = b"POST /v1/snapshots HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key.encode() + b"\r\n" + b"X-Pad: " + b"a" * 400 + b"\r\n"
import threading
out = {}
def bytewise():
    out["bytewise"] = closed_within(conn(), 8, trickle=req)
def stall():
    b = conn(); b.send(b"POST /v1/snap")
    out["stall"] = closed_within(b, 8)
def body():
    c = conn(); c.send(req + b"Content-Length: 100000\r\n\r\n")
    out["body"] = closed_within(c, 9, trickle=b"x" * 1000)
ts = [threading.Thread(target=f) for f in (bytewise, stall, body)]
for t in ts: t.start()
for t in ts: t.join()
for k in ("bytewise", "stall", "body"): print(k, out.get(k))
PY
slow=$!
sleep 1
t0=$(date +%s.%N)
r=$(post "$K" "$tmp/ok.hgsnap")
t1=$(date +%s.%N)
check '[ "${r%% *}" = 200 ] && awk -v a=$t0 -v b=$t1 "BEGIN { exit !(b - a < 1.5) }"' "others are served while slow clients hold connections ($r)"
wait $slow
cat "$tmp/slow"
check 'grep -Eq "^bytewise [0-9.]+$" "$tmp/slow" && awk "/^bytewise/ { exit !(\$2 < 4) }" "$tmp/slow"' "headers sent byte by byte: dropped at the 2 s header deadline"
check 'grep -Eq "^stall [0-9.]+$" "$tmp/slow" && awk "/^stall/ { exit !(\$2 < 5) }" "$tmp/slow"' "a stalled client: dropped"
check 'grep -Eq "^body [0-9.]+$" "$tmp/slow" && awk "/^body/ { exit !(\$2 < 7) }" "$tmp/slow"' "a trickled body: dropped at the 4 s request deadline"
check '[ "$(metric shop aborted)" -ge 1 ]' "the dropped upload is counted as aborted"
check '[ "$(curl -s "$url/metrics" | sed -n "s/^heapgraph_serve_connections_dropped_total //p")" -ge 2 ]' "connections dropped by a deadline are counted"
check '[ -z "$(ls -A "$D/blobs/tmp")" ]' "slow clients: no temporary left"

# ---- oversized headers
big=$(head -c 40000 /dev/zero | tr '\0' a)
r=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Big: $big" -H "Authorization: Bearer $K" --data-binary "@$tmp/ok.hgsnap" "$url/v1/snapshots")
check '[ "$r" = 431 ]' "40 kB of headers: 431 ($r)"
# past the header limit and the body buffer together: libmicrohttpd's own refusal
big=$(head -c 100000 /dev/zero | tr '\0' a) # three of them (one argument is at most 128 kB)
r=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Big: $big" -H "X-Big2: $big" -H "X-Big3: $big" -H "Authorization: Bearer $K" --data-binary "@$tmp/ok.hgsnap" "$url/v1/snapshots")
check '[ "$r" = 431 ]' "300 kB of headers: 431 ($r)"
# just under the limit: served
mid=$(head -c 15000 /dev/zero | tr '\0' a)
r=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Mid: $mid" -H "Authorization: Bearer $K" --data-binary "@$tmp/ok.hgsnap" "$url/v1/snapshots")
check '[ "$r" = 200 ] || [ "$r" = 201 ]' "15 kB of headers under a 16 kB limit: served ($r)"
check 'alive' "the server goes on after them"

# ---- SQL metacharacters and control characters in every metadata string
v=$(printf "1.0'); DROP TABLE snapshots;--\001\033[31m\t\"\\\\")
m=$(printf "Robert'); DELETE FROM keys; --\r\n%%s%%n\177 \$1 ? :name @x")
i=$(printf "' OR '1'='1\037\b;\"x\" /* */")
"$MKMETA" "$tmp/evil.hgsnap" 23 "app.name=$m" "app.version=$v" "device.model=$m" "device.install_id=$i" || exit 1
r=$(post "$K" "$tmp/evil.hgsnap")
id=$(id_of "$tmp/evil.hgsnap")
check '[ "$r" = "201 {\"id\":\"$id\"}" ]' "metadata full of SQL and control characters: 201"
stop_server
python3 - "$D/heapgraph.db" "$id" "$v" "$m" "$i" >"$tmp/row" 2>&1 <<'PY'
import sqlite3, sys
db, sid, v, m, i = sys.argv[1:]
c = sqlite3.connect(db)
row = c.execute("SELECT version, device_model, device_id FROM snapshots WHERE id = ?", (sid,)).fetchone()
keys = c.execute("SELECT count(*) FROM keys").fetchone()[0]
n = c.execute("SELECT count(*) FROM snapshots").fetchone()[0]
print("row", row == (v, m, i), "keys", keys, "snapshots", n)
if row != (v, m, i): print(repr(row), repr((v, m, i)))
PY
check 'grep -q "^row True keys 1 snapshots [0-9]" "$tmp/row"' "the store kept them byte for byte; tables intact ($(head -n 1 "$tmp/row"))"

echo "intake_hostile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
