#!/bin/sh
# intake_memory.sh — the server's memory does not grow with the upload's
# size: the peak RSS (VmHWM) of `heapgraph serve` after a 1 MB snapshot and
# after a 40 MB one (snapgen, valid, accepted) differ by less than 8 MB
# (the streaming verifier, hg_snapshot_verify, holds fixed buffers; the
# body streams to a temporary file). Also a 40 MB upload cut short and one
# with a bit flipped deep inside: refused (422, the reader's reason) in the
# same memory.
. tests/serve/lib.sh
GEN=$BUILD/serve/snapgen
D=$tmp/data
K=$(new_key "$D" shop)
"$GEN" "$tmp/small.hgsnap" shop 1.0 dev-a 1 150000 >/dev/null || exit 1
"$GEN" "$tmp/big.hgsnap" shop 1.0 dev-b 2 5200000 >/dev/null || exit 1
small=$(wc -c <"$tmp/small.hgsnap"); big=$(wc -c <"$tmp/big.hgsnap")
check '[ "$small" -lt 2000000 ] && [ "$big" -gt 38000000 ]' "snapshots of $small and $big bytes"
start_server "$D" --workers 0 --rate 0
hwm() { sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' /proc/$srv_pid/status; }
r=$(post "$K" "$tmp/small.hgsnap")
check 'printf "%s" "$r" | grep -q "^201 "' "small upload accepted ($r)"
h1=$(hwm)
r=$(post "$K" "$tmp/big.hgsnap")
check 'printf "%s" "$r" | grep -q "^201 "' "big upload accepted ($r)"
h2=$(hwm)
check '[ $((h2 - h1)) -lt 8192 ]' "peak RSS after 1 MB: $h1 kB, after 40 MB: $h2 kB (grew $((h2 - h1)) kB, < 8 MB)"
head -c $((big - 1000)) "$tmp/big.hgsnap" >"$tmp/cut.hgsnap"
r=$(post "$K" "$tmp/cut.hgsnap")
check 'printf "%s" "$r" | grep -q "^422 .*\"offset\":"' "40 MB cut short: 422 with the reason and offset"
python3 -c "
import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[len(b) // 2] ^= 4; open(sys.argv[2], 'wb').write(b)" \
  "$tmp/big.hgsnap" "$tmp/flip.hgsnap"
r=$(post "$K" "$tmp/flip.hgsnap")
check 'printf "%s" "$r" | grep -q "^422 .*\"offset\":"' "40 MB with a flipped bit: 422 ($(printf '%s' "$r" | cut -c1-90))"
h3=$(hwm)
check '[ $((h3 - h1)) -lt 8192 ]' "peak RSS after the refused ones: $h3 kB"
check '[ -z "$(ls -A "$D/blobs/tmp")" ]' "no temporary left behind"
echo "intake_memory: $pass passed, $fail failed"
[ $fail = 0 ]
