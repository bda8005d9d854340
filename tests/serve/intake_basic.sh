#!/bin/sh
# intake_basic.sh — `heapgraph serve` intake over real HTTP (curl): keys
# (add prints the key last, stored hashed, list, revoke), 201 new / 200 the
# same id for a duplicate (identity, gzip, zstd), the blob content-addressed
# and equal to the upload, every refusal (401 no/wrong/unknown/revoked key,
# 403 read key and another app, 411, 413 before the body, 415, 422 with the
# reader's reason and offset, 429 + Retry-After), the outcome counters of
# GET /metrics and one log line per request; TLS with a self-signed
# certificate made here (openssl); the device's uploader (`heapgraph upload
# --spool`, capture/upload.c) end to end.
. tests/serve/lib.sh
D=$tmp/data

# ---- keys
"$CLI" serve key add shop --data "$D" >"$tmp/keyout" 2>&1
K=$(tail -n 1 "$tmp/keyout")
check 'printf "%s" "$K" | grep -Eq "^hgk_[0-9a-f]{16}_[0-9a-f]{32}$"' "key add prints the key on its last line"
kid=$(printf '%s' "$K" | cut -d_ -f2); secret=$(printf '%s' "$K" | cut -d_ -f3)
check '! grep -q "$secret" "$D/heapgraph.db"' "the database does not hold the secret"
check '"$CLI" serve key list --data "$D" | grep -q "^$kid	shop	upload	active$"' "key list shows id, app, kind, state"
R=$(new_key "$D" shop --read)
K2=$(new_key "$D" shop)
KO=$(new_key "$D" other)
"$CLI" serve key add 'bad name;' --data "$D" >/dev/null 2>&1
check '[ $? = 2 ]' "an app name with other characters is refused"

# ---- snapshots
for i in 1 2 3 4 5 6; do "$MKMETA" "$tmp/s$i.hgsnap" "$i" app.version=1.$i || exit 1; done
gzip -1 -c "$tmp/s2.hgsnap" >"$tmp/s2.gz"
zstd -q -3 -c "$tmp/s3.hgsnap" >"$tmp/s3.zst"
head -c 200 "$tmp/s4.hgsnap" >"$tmp/trunc.hgsnap"

start_server "$D" --workers 0 --max-upload 100000 --rate 1000
check '[ -n "$url" ]' "the server prints its URL first ($url)"
id1=$(id_of "$tmp/s1.hgsnap")
r=$(post "$K" "$tmp/s1.hgsnap")
check '[ "$r" = "201 {\"id\":\"$id1\"}" ]' "new snapshot: 201 with its checksum as id ($r)"
blob=$D/blobs/$(printf %.2s "$id1")/$id1-$(wc -c <"$tmp/s1.hgsnap" | tr -d ' ').hgsnap
check 'cmp -s "$blob" "$tmp/s1.hgsnap"' "the blob is content-addressed and equal to the upload"
r=$(post "$K2" "$tmp/s1.hgsnap")
check '[ "$r" = "200 {\"id\":\"$id1\"}" ]' "duplicate (another key of the app): 200, same id"
r=$(post "$K" "$tmp/s2.gz" -H 'Content-Encoding: gzip')
check '[ "$r" = "201 {\"id\":\"$(id_of "$tmp/s2.hgsnap")\"}" ]' "gzip: 201 ($r)"
r=$(post "$K" "$tmp/s3.zst" -H 'Content-Encoding: zstd')
check '[ "$r" = "201 {\"id\":\"$(id_of "$tmp/s3.hgsnap")\"}" ]' "zstd: 201 ($r)"
r=$(post "$K" "$tmp/s2.hgsnap")
check '[ "${r%% *}" = 200 ]' "the gzip upload's snapshot sent plain: duplicate"
r=$(post "$KO" "$tmp/s1.hgsnap")
check '[ "${r%% *}" = 201 ]' "the same snapshot for another app: 201 (one row per app)"
check '[ $(find "$D/blobs" -name "$id1-*" | wc -l) = 1 ]' "one blob for both apps"

# ---- refusals
r=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "@$tmp/s4.hgsnap" "$url/v1/snapshots")
check '[ "$r" = 401 ]' "no key: 401"
r=$(post "hgk_${kid}_00000000000000000000000000000000" "$tmp/s4.hgsnap")
check '[ "${r%% *}" = 401 ]' "wrong secret: 401"
r=$(post "hgk_0123456789abcdef_$secret" "$tmp/s4.hgsnap")
check '[ "${r%% *}" = 401 ]' "unknown key id: 401"
r=$(post "$R" "$tmp/s4.hgsnap")
check '[ "$r" = "403 {\"error\":\"unauthorized\",\"reason\":\"a read key cannot upload\"}" ]' "read key: 403 ($r)"
r=$(post "$K" "$tmp/s4.hgsnap" -H 'X-Heapgraph-App: other')
check '[ "${r%% *}" = 403 ]' "a key of app shop naming app other: 403"
r=$(post "$K" "$tmp/s4.hgsnap" -H 'Transfer-Encoding: chunked')
check '[ "${r%% *}" = 411 ]' "no Content-Length: 411 ($r)"
head -c 300000 /dev/urandom >"$tmp/big"
r=$(post "$K" "$tmp/big")
check 'printf "%s" "$r" | grep -q "^413 .*over the app.s limit of 100000 bytes"' "over the app's maximum: 413 ($r)"
check 'grep "outcome=too_large" "$D.log" | grep -q "bytes=0 "' "413 decided before the body (0 bytes of it taken in)"
r=$(post "$K" "$tmp/s4.hgsnap" -H 'Content-Encoding: br')
check '[ "${r%% *}" = 415 ]' "unknown Content-Encoding: 415"
r=$(post "$K" "$tmp/trunc.hgsnap")
check 'printf "%s" "$r" | grep -Eq "^422 \{\"error\":\"invalid\",\"reason\":\".+\",\"offset\":[0-9]+\}$"' "truncated: 422 with reason and offset ($r)"
head -c 100 "$tmp/s2.gz" >"$tmp/trunc.gz"
r=$(post "$K" "$tmp/trunc.gz" -H 'Content-Encoding: gzip')
check 'printf "%s" "$r" | grep -q "^422 .*gzip"' "gzip stream cut short: 422 ($r)"
r=$(post "$K" "$tmp/s4.hgsnap" -H 'Content-Encoding: gzip')
check '[ "${r%% *}" = 422 ]' "not gzip although it says so: 422"
"$CLI" serve key revoke "$kid" --data "$D" >/dev/null
r=$(post "$K" "$tmp/s4.hgsnap")
check '[ "$r" = "401 {\"error\":\"unauthorized\",\"reason\":\"key revoked\"}" ]' "revoked key: 401 ($r)"
check '"$CLI" serve key list --data "$D" | grep -q "^$kid	shop	upload	revoked$"' "key list shows it revoked"

# ---- outcomes: counted per app, one log line each
check '[ "$(metric shop accepted)" = 3 ] && [ "$(metric other accepted)" = 1 ]' "metrics: accepted per app"
check '[ "$(metric shop duplicate)" = 2 ]' "metrics: duplicate"
check '[ "$(metric shop too_large)" = 1 ] && [ "$(metric shop invalid)" = 5 ]' "metrics: too_large, invalid (411, 415, 422 x3)"
check '[ "$(metric shop unauthorized)" = 3 ] && [ "$(metric - unauthorized)" = 3 ]' "metrics: unauthorized (shop: read key, other app, revoked; no valid key: 3)"
check '[ "$(grep -c " intake " "$D.log")" = 18 ]' "one log line per request (18)"
curl -s -D "$tmp/h" -o /dev/null "$url/metrics"
check 'grep -qi "^content-type: text/plain; version=0.0.4" "$tmp/h"' "metrics in the Prometheus text format"
# an early answer to a client still sending (no Expect: 100-continue below
# 1 MiB) must reach it: the server reads the body before it answers
# (web/http.c), else closing with unread bytes resets the connection
lost=0
for i in $(seq 1 40); do r=$(post "$K" "$tmp/big"); [ "${r%% *}" = 401 ] || lost=$((lost + 1)); done
check '[ $lost = 0 ]' "40 early answers (401: the key is revoked) to a client still sending 300 kB: every one received ($lost lost)"
stop_server

# ---- rate limit per key
D2=$tmp/rate
K=$(new_key "$D2" shop); K2=$(new_key "$D2" shop)
start_server "$D2" --workers 0 --rate 2
post "$K" "$tmp/s1.hgsnap" >/dev/null; post "$K" "$tmp/s2.hgsnap" >/dev/null
curl -s -D "$tmp/h" -o "$tmp/body" -X POST --data-binary "@$tmp/s3.hgsnap" -H "Authorization: Bearer $K" "$url/v1/snapshots"
check 'head -n 1 "$tmp/h" | grep -q " 429 " && grep -Eqi "^retry-after: [0-9]+" "$tmp/h"' "third upload in a minute: 429 with Retry-After"
r=$(post "$K2" "$tmp/s3.hgsnap")
check '[ "${r%% *}" = 201 ]' "the rate is per key: another key goes on"
check '[ "$(metric shop rate_limited)" = 1 ]' "metrics: rate_limited"
stop_server

# ---- an app's own limits (serve app set/show): read per request, 0 = the server's default
D4=$tmp/applim
K=$(new_key "$D4" tiny); K2=$(new_key "$D4" shop)
"$CLI" serve app set tiny --max-upload 100 --rate 1 --data "$D4" >/dev/null
"$CLI" serve app set tiny --quota 5000000 --data "$D4" >"$tmp/appout"
check 'grep -qx "max_upload_bytes 100" "$tmp/appout" && grep -qx "rate_per_minute 1" "$tmp/appout" && grep -qx "quota_bytes 5000000" "$tmp/appout"' "app set changes only the limits given"
check '"$CLI" serve app show shop --data "$D4" | grep -qx "max_upload_bytes 0"' "an app without settings: 0 (the server's default)"
"$CLI" serve app set 'x;y' --rate 1 --data "$D4" >/dev/null 2>&1
check '[ $? = 2 ]' "app set refuses a bad app name"
start_server "$D4" --workers 0 --max-upload 100000 --rate 1000
r=$(post "$K" "$tmp/s1.hgsnap")
check 'printf "%s" "$r" | grep -q "^413 .*over the app.s limit of 100 bytes"' "the app's own maximum: 413 ($r)"
r=$(post "$K2" "$tmp/s1.hgsnap")
check '[ "${r%% *}" = 201 ]' "another app keeps the server's maximum: 201"
"$CLI" serve app set tiny --max-upload 0 --data "$D4" >/dev/null
r=$(post "$K" "$tmp/s1.hgsnap")
check '[ "${r%% *}" = 201 ]' "set back to 0 while serving: the server's maximum again, 201 ($r)"
r=$(post "$K" "$tmp/s2.hgsnap")
check '[ "${r%% *}" = 429 ]' "the app's own rate (1 a minute): 429 ($r)"
r=$(post "$K2" "$tmp/s2.hgsnap")
check '[ "${r%% *}" = 201 ]' "another app keeps the server's rate: 201"
stop_server

# ---- TLS: a self-signed certificate made here
if openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
     -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1; then
  D3=$tmp/tls
  K=$(new_key "$D3" shop)
  start_server "$D3" --workers 0 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"
  check 'printf "%s" "$url" | grep -q "^https://"' "TLS: the URL is https"
  r=$(post "$K" "$tmp/s1.hgsnap" --cacert "$tmp/cert.pem")
  check '[ "${r%% *}" = 201 ]' "TLS: upload verified against the certificate: 201 ($r)"
  r=$(curl -s -o /dev/null -w '%{http_code}' "http${url#https}/metrics")
  check '[ "$r" != 200 ]' "TLS: plain HTTP on the TLS port gets no answer"
  stop_server
  "$CLI" serve --data "$D3" --tls-cert "$tmp/cert.pem" >/dev/null 2>&1
  check '[ $? = 2 ]' "--tls-cert without --tls-key: usage error"
else
  bad "openssl could not make a certificate"
fi

# ---- the device's uploader end to end (capture/upload.c through heapgraph upload)
D4=$tmp/dev
K=$(new_key "$D4" shop)
start_server "$D4" --workers 0
sp=$tmp/spool; mkdir -p "$sp"
cp "$tmp/s5.hgsnap" "$sp/a.hgsnap"; cp "$tmp/s6.hgsnap" "$sp/b.hgsnap"; cp "$tmp/s1.hgsnap" "$sp/c.hgsnap"
"$CLI" upload --url "$url/v1/snapshots" --key "$K" --spool "$sp" >"$tmp/up" 2>&1; rc=$?
left=$(ls "$sp" | grep -c 'hgsnap')
check '[ $rc = 0 ] && [ "$left" = 0 ]' "heapgraph upload --spool: exit 0, spool emptied (rc $rc, $left left)"
check '[ "$(metric shop accepted)" = 3 ]' "the server accepted the three gzip uploads"
"$CLI" upload --url "$url/v1/snapshots" --key "$K" "$tmp/s5.hgsnap" >"$tmp/up2" 2>&1; rc=$?
check '[ $rc = 0 ] && [ "$(metric shop duplicate)" = 1 ]' "the same file again: duplicate, exit 0"
"$CLI" upload --url "$url/v1/snapshots" --key "$K" "$tmp/trunc.hgsnap" >"$tmp/up3" 2>&1; rc=$?
check '[ $rc = 1 ]' "an invalid file: 422, dropped by the uploader (exit 1)"
"$CLI" upload --url "$url/v1/snapshots" --key hgk_0000000000000000_00000000000000000000000000000000 "$tmp/s2.hgsnap" >"$tmp/up4" 2>&1; rc=$?
check '[ $rc = 75 ]' "a wrong key: 401, kept to retry (exit 75)"
stop_server

echo "intake_basic: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
