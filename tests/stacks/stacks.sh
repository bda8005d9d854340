#!/bin/sh
# stacks.sh — allocation stacks end to end: `heapgraph run --stacks` on
# tests/stacks/sites.c (built without frame pointers) and its dlopen'd
# libsite.so, then `heapgraph stacks --json` / `show` on the snapshot:
#   1. exact live counts per known call site (and per site the snapshot's
#      nodes), freed sites absent: plain malloc three frames deep, realloc
#      chains (the block belongs to the last realloc), the memalign family,
#      a block glibc hands out bigger than asked (bytes per stack = its
#      nodes' bytes, for every stack),
#      calloc, reallocarray, 4 threads, a dlopen'd library; fork children
#      allocating while another thread does (no recorder lock left held);
#      the snapshot is written at exit with the blocks still live
#   2. the file still reads as a v1 snapshot: the independent cbor2 decoder
#      (tests/format/check_cbor2.py skips unknown records) and
#      `heapgraph verify`
#   3. budget exhaustion: a 1 MiB budget, 200,000 blocks: the program runs
#      to the end, the snapshot says "budget-exhausted" and counts the dropped
#   4. sampling (--sample-bytes 4096): the estimate for 100,000 blocks of
#      64 bytes is within 15 %
#   5. large-allocation monitor (--large-alloc 1M): three 2 MiB blocks are
#      reported on stderr by the monitor thread and kept in the snapshot;
#      `heapgraph show ADDR` prints the block's stack
#   6. --tree bottom-up / top-down print the sites
# SANITIZE=1: the ASan library has no interposer (ASan owns malloc), so the
# test checks that `run --stacks` says so and the snapshot has no stacks.
B=${BUILD:-build}
CLI=$B/heapgraph
P=$B/stacks/sites
LIBSITE=$(cd "$B/stacks" && pwd)/libsite.so
PY=${PYTHON:-/usr/bin/python3}
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d /tmp/hg_stacks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [ "${SANITIZE:-0}" = 1 ]; then
  asan=$(${CC:-cc} -print-file-name=libasan.so)
  LD_PRELOAD="$asan" ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
    "$CLI" run --stacks -o "$tmp/san.hgsnap" -- "$P" many 100 2>"$tmp/san.err"
  if grep -q "allocation stacks not recorded: unsupported" "$tmp/san.err"; then
    ok "ASan build: run --stacks reports the interposer is unsupported"
  else
    bad "ASan build: no 'not recorded' message"; cat "$tmp/san.err"
  fi
  if [ -s "$tmp/san.hgsnap" ] && ! env -u LD_PRELOAD "$CLI" stacks "$tmp/san.hgsnap" >/dev/null 2>&1; then
    ok "ASan build: snapshot written, without stacks"
  else
    bad "ASan build: snapshot missing or has stacks"
  fi
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ]
  exit
fi

# ---- 1. exact attribution ----
if timeout 120 "$CLI" run --stacks -o "$tmp/sites.hgsnap" -- "$P" sites "$LIBSITE" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "sites done" "$tmp/out"; then
  ok "sites ran under run --stacks (20 forks with a thread allocating)"
else
  bad "sites run failed"; cat "$tmp/err"
fi
"$CLI" stacks "$tmp/sites.hgsnap" --json >"$tmp/sites.json" 2>"$tmp/err" || { bad "stacks --json"; cat "$tmp/err"; }
if "$PY" - "$tmp/sites.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = {"site_a": 100, "site_b": 0, "site_r": 0, "site_grow": 10, "site_posix_memalign": 5,
        "site_aligned_alloc": 5, "site_memalign": 5, "site_valloc": 5, "site_pvalloc": 5,
        "site_calloc": 5, "site_reallocarray": 5, "site_t": 1000, "lib_alloc": 30, "site_child": 0,
        "site_guard": 1, "site_roomy_first": 0, "site_roomy": 1}
got = {k: [0, 0] for k in want}
errs = []
for s in d["stacks"]:
    fns = [f["function"] for f in s["frames"]]
    # bytes are usable sizes taken at allocation and at free: exactly the
    # live nodes' sizes, never drifting (glibc may hand out more than asked)
    if s["bytes"] != s["node_bytes"]:
        errs.append("stack %d (%s): bytes %d, its nodes' %d" % (s["id"], fns[:3], s["bytes"], s["node_bytes"]))
    site = next((f for f in fns if f in want), None)
    if site is None:
        continue
    got[site][0] += s["count"]
    got[site][1] += s["nodes"]
    if site == "site_a" and "a_mid" not in fns:
        errs.append("site_a stack lacks its caller a_mid: %r" % fns)
    if site == "lib_alloc":
        im = s["frames"][fns.index("lib_alloc")]["image"] or ""
        if not im.endswith("libsite.so"):
            errs.append("lib_alloc frame image %r" % im)
    if site == "site_a" and not any((f["file"] or "").endswith("sites.c") and f["line"] > 0 for f in s["frames"]):
        errs.append("no file:line for site_a")
for k, n in want.items():
    if got[k] != [n, n]:
        errs.append("%s: count/nodes %r, want %d" % (k, got[k], n))
i = d["info"]
if i["status"] != "ok" or i["dropped"] != 0 or not i["unwinder"].startswith("libunwind"):
    errs.append("info %r" % i)
if errs:
    print("\n".join(errs))
    sys.exit(1)
PYEOF
then ok "exact live counts, bytes and nodes per site (malloc, realloc chain, memalign family, threads, dlopen), freed sites absent"
else bad "attribution"; fi

# ---- 2. v1 readers ----
if "$PY" tests/format/check_cbor2.py "$tmp/sites.hgsnap" >"$tmp/cbor" 2>&1; then
  ok "independent v1 decoder (cbor2) reads the file with stack records"
else
  bad "cbor2 decoder"; cat "$tmp/cbor"
fi
"$CLI" verify "$tmp/sites.hgsnap" && ok "heapgraph verify" || bad "verify"
# fleet's allocation-site signatures on the same real snapshot (docs/fleet.md)
"$CLI" fleet --summaries --cache-dir "$tmp/fleet" "$tmp/sites.hgsnap" >"$tmp/sum" 2>"$tmp/err" || { bad "fleet --summaries"; cat "$tmp/err"; }
if "$PY" - "$tmp/sum" <<'PYEOF'
import json, sys
s = json.loads(open(sys.argv[1]).readline())
site = {g["path"][0]: g for g in s["signatures"] if g["kind"] == "site"}
assert site["site_a"]["count"] == 100 and site["site_a"]["path"][1] == "a_mid", site.get("site_a")
assert site["site_t"]["count"] == 1000, site.get("site_t")
assert site["lib_alloc"]["path"][1] == "lib_site", site.get("lib_alloc")
assert all(g["algo"] >= 1 and g["bytes"] > 0 for g in site.values())
assert not any(f.startswith("0x") for g in site.values() for f in g["path"]), "raw address in a site path"
PYEOF
then ok "fleet summary: site signatures of the planted sites (counts, symbol frames, no raw addresses)"
else bad "fleet site signatures: $(head -c 2000 "$tmp/sum")"; fi

# ---- 3. budget exhaustion ----
if timeout 120 "$CLI" run --stacks --stacks-budget 1M -o "$tmp/budget.hgsnap" -- "$P" many 200000 2>"$tmp/err" &&
   "$CLI" stacks "$tmp/budget.hgsnap" --json >"$tmp/budget.json" &&
   "$PY" -c '
import json, sys
i = json.load(open(sys.argv[1]))["info"]
assert i["status"] == "budget-exhausted" and i["dropped"] > 0 and i["tracking_bytes"] <= i["budget_bytes"], i
' "$tmp/budget.json"; then
  ok "budget exhaustion: program finished, snapshot says budget-exhausted"
else
  bad "budget exhaustion"; cat "$tmp/err"
fi

# ---- 4. sampling ----
if timeout 120 "$CLI" run --sample-bytes 4096 -o "$tmp/sample.hgsnap" -- "$P" many 100000 2>"$tmp/err" &&
   "$CLI" stacks "$tmp/sample.hgsnap" --json >"$tmp/sample.json" &&
   "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = b = 0
for s in d["stacks"]:
    if any(f["function"] == "site_many" for f in s["frames"]):
        c += s["count"]; b += s["bytes"]
assert d["info"]["sample_bytes"] == 4096, d["info"]
assert abs(c - 100000) < 15000 and abs(b - 7200000) < 1080000, (c, b)
print("estimate %d blocks, %d bytes (true 100000, 7200000)" % (c, b))
' "$tmp/sample.json"; then
  ok "sampling: unbiased estimate within 15 %"
else
  bad "sampling"; cat "$tmp/err"
fi

# ---- 5. large allocations ----
if timeout 120 "$CLI" run --large-alloc 1M -o "$tmp/large.hgsnap" -- "$P" large 2>"$tmp/err" &&
   [ "$(grep -c 'heapgraph: large allocation 2097152 bytes' "$tmp/err")" = 3 ]; then
  ok "large-allocation monitor reported 3 blocks on its thread"
else
  bad "large-allocation reports"; cat "$tmp/err"
fi
"$CLI" fleet --summaries --cache-dir "$tmp/fleet" "$tmp/large.hgsnap" >"$tmp/lsum" 2>&1
if "$PY" -c '
import json, sys
s = json.loads(open(sys.argv[1]).readline())
g = [g for g in s["signatures"] if g["kind"] == "large"]
assert len(g) == 1 and g[0]["count"] == 3 and g[0]["bytes"] == 3 * 2097152, g
assert g[0]["path"][:2] == ["<=2097152 B", "site_large"], g
' "$tmp/lsum"; then ok "fleet summary: one large-allocation signature (size bucket + site_large), 3 blocks"
else bad "fleet large signature: $(head -c 2000 "$tmp/lsum")"; fi
"$CLI" stacks "$tmp/large.hgsnap" --json >"$tmp/large.json"
addr=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
la = d["large_allocations"]
st = {s["id"]: s for s in d["stacks"]}
assert len(la) == 3, la
for x in la:
    assert x["size"] == 2097152 and any(f["function"] == "site_large" for f in st[x["stack"]]["frames"]), x
print(la[0]["addr"])
' "$tmp/large.json") && ok "large allocations in the snapshot with their stacks" || bad "large allocations in snapshot"
if "$CLI" show "$tmp/large.hgsnap" "$addr" | grep -q "site_large (.*sites.c:"; then
  ok "show ADDR prints the block's allocation stack"
else
  bad "show ADDR stack"; "$CLI" show "$tmp/large.hgsnap" "$addr" | head -20
fi

# ---- 6. trees ----
if "$CLI" stacks "$tmp/sites.hgsnap" --tree bottom-up | grep -q "^site_t\|^ *1000 .*site_t" &&
   "$CLI" stacks "$tmp/sites.hgsnap" --tree top-down --by count | grep -q "^_start\|^ *[0-9]* .* _start"; then
  ok "--tree bottom-up and top-down"
else
  bad "trees"; "$CLI" stacks "$tmp/sites.hgsnap" --tree bottom-up | head; "$CLI" stacks "$tmp/sites.hgsnap" --tree top-down | head
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
