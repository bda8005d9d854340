"""check_swift.py — compares a Swift program's snapshot with what the program
says it allocated (tests/swift/main.swift prints one line per fact):

  count NAME N                    N nodes of class NAME, kind swift
  edge FROM FIELD KIND TO         an edge FROM -> TO named FIELD of KIND
  leak-closure C                  C is in a leaked cycle through its closure
  leak-delegate O H               O, H form a leaked delegate cycle
  leak-self C FIELD               C's closure FIELD captured only C (Swift
                                  then uses C as the context): a strong
                                  edge C -FIELD-> C, and C is leaked
  weak W FIELD T1 T2              W (rooted) refers weakly to T1; T1 <-> T2
                                  is leaked: not retained through W
  notswift A                      the C block at A (metadata pointer in a
                                  block too small, a fake metadata copy,
                                  random words) is not labelled Swift
  box B                           a captured var's box holds B, strongly:
                                  a compiler-made box has the metadata kind
                                  of closure contexts (heap local variable)
                                  and is named like them, its capture
                                  "capture#0"; a runtime one (swift_allocBox
                                  of a generic box) is "Swift box<T>", "value"
  genbox B                        a generic captured var's box (the
                                  runtime's, swift_allocBox) holds B:
                                  "Swift box<Zoo.Boxed>", field "value"
  named N NAME...                 N nodes of class NAME (with spaces),
                                  kind swift (Dictionary's storage)
  capture RC                      hg_capture's result (0)

usage: check_swift.py CLI SNAP MANIFEST [SNAP MANIFEST...] CXX_SNAP
The last snapshot is a C++ program's: no class of it may be of kind swift
(absent in the sanitizer build, which runs it once: not checked then).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checks import check, run, summary  # noqa: E402

cli = sys.argv[1]


def jsonl(*args):
    rc, out, err = run([cli] + list(args) + ["--json"], timeout=300)
    return rc, out, err


def lines_json(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def one(snap, manifest):
    tag = os.path.basename(snap)
    facts = [l.split() for l in open(manifest) if l.strip()]
    rc, out, err = run([cli, "verify", snap], timeout=120)
    check(rc == 0, tag + ": verify", err)
    rc, out, err = jsonl("nodes", snap)
    nodes = lines_json(out)
    by_addr = {n["addr"]: n for n in nodes}
    counts = {}
    for n in nodes:
        if n["kind"] == "swift":
            counts[n["class"]] = counts.get(n["class"], 0) + 1
    rc, out, err = jsonl("edges", snap)
    edges = {}
    for e in lines_json(out):
        edges.setdefault(e["from"], []).append(e)
    rc, out, err = jsonl("cycles", snap, "-n", "100000")
    cycles = json.loads(out)["cycles"] if out.strip() else []
    rc, out, err = jsonl("leaks", snap, "-n", "100000")
    leaks = json.loads(out)["leaks"] if out.strip() else []
    leak_roots = {l["addr"] for l in leaks}

    def cycle_of(addrs):
        for c in cycles:
            members = {m["addr"] for m in c["members"]}
            if set(addrs) <= members:
                return c
        return None

    def cycle_fields(c):
        return sorted({r["field"] for r in c["references"]})

    for f in facts:
        what = f[0]
        if what == "capture":
            check(f[1] == "0", tag + ": hg_capture returned 0", f)
        elif what == "count":
            name, want = f[1], int(f[2])
            check(counts.get(name, 0) == want, tag + ": %d instances of %s" % (want, name),
                  "got %d; swift classes: %s" % (counts.get(name, 0), sorted(counts.items())[:60]))
        elif what == "edge":
            src, field, kind, dst = f[1], f[2], f[3], f[4]
            es = edges.get(src, [])
            if kind == "weak":
                # a weak reference points at the referent's side table,
                # whose own edge to the referent is weak
                hops = [e for e in es if e["field"] == field and e["kind"] == "weak"]
                ok = any(s["to"] == dst and s["kind"] == "weak" and s["field"] == "object"
                         for h in hops for s in edges.get(h["to"], []))
                check(ok and by_addr.get(hops[0]["to"], {}).get("class") == "Swift weak side table",
                      tag + ": %s -%s (weak, via side table)-> %s" % (src, field, dst),
                      [(e["field"], e["kind"], e["to"]) for e in es])
            else:
                ok = any(e["to"] == dst and e["field"] == field and e["kind"] == kind for e in es)
                check(ok, tag + ": %s %s -%s (%s)-> %s" % (by_addr.get(src, {}).get("class"), src, field,
                                                          kind, dst),
                      [(e["field"], e["kind"], e["to"]) for e in es])
        elif what == "leak-closure":
            c = cycle_of([f[1]])
            ok = c is not None and c["leaked"]
            fields = cycle_fields(c) if c else []
            classes = sorted({m["class"] for m in c["members"]}) if c else []
            check(ok and "handler" in fields and "capture#0" in fields and
                  classes == ["Swift closure context", "Zoo.Controller"],
                  tag + ": closure cycle of %s leaked, fields handler/capture#0" % f[1], c)
            check(c is not None and any(m["addr"] in leak_roots for m in c["members"]),
                  tag + ": closure cycle of %s among the leaks" % f[1], c)
        elif what == "leak-self":
            es = edges.get(f[1], [])
            check(any(e["to"] == f[1] and e["field"] == f[2] and e["kind"] == "strong" for e in es),
                  tag + ": %s -%s (strong)-> itself" % (f[1], f[2]), es)
            check(f[1] in leak_roots, tag + ": %s among the leaks" % f[1], leaks[:5])
        elif what == "leak-delegate":
            c = cycle_of([f[1], f[2]])
            ok = c is not None and c["leaked"] and len(c["members"]) == 2
            check(ok and cycle_fields(c) == ["delegate", "owner"] and
                  all(r["kind"] == "strong" for r in c["references"]),
                  tag + ": delegate cycle %s <-> %s leaked, fields delegate/owner" % (f[1], f[2]), c)
            check(c is not None and any(m["addr"] in leak_roots for m in c["members"]),
                  tag + ": delegate cycle of %s among the leaks" % f[1], c)
        elif what == "weak":
            w, field, t1, t2 = f[1], f[2], f[3], f[4]
            c = cycle_of([t1, t2])
            check(c is not None and c["leaked"], tag + ": %s, weakly referenced by %s, is leaked "
                  "(not retained through the weak reference)" % (t1, w), c)
            hops = [e for e in edges.get(w, []) if e["field"] == field]
            check(len(hops) == 1 and hops[0]["kind"] == "weak" and
                  any(s["to"] == t1 and s["kind"] == "weak" for s in edges.get(hops[0]["to"], [])),
                  tag + ": %s -%s-> side table -> %s, both weak" % (w, field, t1), hops)
        elif what == "box":
            holders = [a for a, es in edges.items()
                       for e in es if e["to"] == f[1] and e["kind"] == "strong" and
                       (by_addr.get(a, {}).get("class"), e["field"]) in
                       (("Swift box<Zoo.Boxed>", "value"), ("Swift closure context", "capture#0"))]
            check(len(holders) == 1, tag + ": a Swift box holds %s" % f[1],
                  [(a, by_addr.get(a, {}).get("class"), [(e["field"], e["kind"]) for e in edges[a] if e["to"] == f[1]])
                   for a, es in edges.items() if any(e["to"] == f[1] for e in es)])
        elif what == "genbox":
            holders = [(a, by_addr.get(a, {}).get("class"), e["field"]) for a, es in edges.items()
                       for e in es if e["to"] == f[1] and e["kind"] == "strong"]
            check([h[1:] for h in holders] == [("Swift box<Zoo.Boxed>", "value")],
                  tag + ": the runtime's generic box holds %s (value)" % f[1], holders)
        elif what == "named":
            name, want = " ".join(f[2:]), int(f[1])
            check(counts.get(name, 0) == want, tag + ": %d instances of %s" % (want, name),
                  "got %d; swift classes: %s" % (counts.get(name, 0), sorted(counts.items())[:60]))
        elif what == "notswift":
            n = by_addr.get(f[1])
            check(n is not None and n["kind"] != "swift", tag + ": C block %s not Swift" % f[1], n)
    # every Swift-kind node is an instance the program made, a runtime
    # object (storage, contexts, boxes, side tables) or libswiftCore's
    made = {f[1] for f in facts if f[0] == "count"} | {" ".join(f[2:]) for f in facts if f[0] == "named"}
    strays = [c for c in counts if c not in made and not c.startswith("Swift")]
    check(not strays, tag + ": no Swift class outside the program's and the runtime's", strays)
    check(any(c.startswith("Swift._ContiguousArrayStorage<") for c in counts),
          tag + ": array storage named with its element type", sorted(counts)[:40])


def cxx(snap):
    rc, out, err = jsonl("classes", snap)
    rows = lines_json(out)
    check(rc == 0 and any(r["kind"] == "c++" for r in rows), "C++ program: C++ classes found", err)
    check(not any(r["kind"] == "swift" for r in rows), "C++ program: nothing labelled Swift",
          [r for r in rows if r["kind"] == "swift"])


args = sys.argv[2:]
for i in range(0, len(args) - 1, 2):
    one(args[i], args[i + 1])
if os.path.exists(args[-1]):  # not made in the sanitizer build
    cxx(args[-1])
sys.exit(summary())
