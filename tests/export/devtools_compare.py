#!/usr/bin/env python3
"""devtools_compare.py — compares what Chrome DevTools' loader computes for
heapgraph's heapsnapshot export with heapgraph's own json export: for every
block a root reaches, the retained size and the immediate dominator (a
synthetic DevTools node where heapgraph says super-root), and "(GC roots)"
retaining every reachable byte. Used by test_devtools.py and, at 1 M nodes,
by bench/bench_export.sh.

  devtools_compare.py CLI BUNDLE SNAP.hgsnap   prints "compared N ..., M differ"
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def devtools(bundle, mode, *files):
    p = subprocess.run(["node", "--max-old-space-size=16000", os.path.join(HERE, "devtools_check.mjs"),
                        bundle, mode, *files], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def compare(j, d):
    """(compared, mismatches as a list of (node, devtools row)) for json j and nodes report d."""
    by_id = {row[0]: row for row in d["nodes"]}
    synthetic = {row[0] for row in d["nodes"] if row[0] % 2 == 0}
    bad, compared, reach_bytes = [], 0, 0
    for n in j["nodes"]:
        if n["idom"] is None:
            continue
        row = by_id.get(n["devtools_id"])
        want_dom = synthetic if n["idom"] == -1 else {j["nodes"][n["idom"]]["devtools_id"]}
        if row is None or row[3] != n["retained"] or row[4] not in want_dom:
            bad.append((n, row))
        compared += 1
        reach_bytes += n["size"]
    gc = [row for row in d["nodes"] if row[1] == "(GC roots)"]
    if not gc or gc[0][3] != reach_bytes:
        bad.append(({"(GC roots)": reach_bytes}, gc[0] if gc else None))
    return compared, bad


def main():
    cli, bundle, snap = sys.argv[1:4]
    hs, js = snap + ".cmp.heapsnapshot", snap + ".cmp.json"
    subprocess.run([cli, "export", snap, "--format", "heapsnapshot", "-o", hs], check=True)
    subprocess.run([cli, "export", snap, "--format", "json", "-o", js], check=True)
    with open(js, encoding="utf-8") as f:
        j = json.load(f)
    d = devtools(bundle, "nodes", hs)
    os.remove(hs)
    os.remove(js)
    compared, bad = compare(j, d)
    print("compared %d reachable blocks with DevTools: %d differ, %d loader problems"
          % (compared, len(bad), len(d["problems"])))
    for b in bad[:5]:
        print("  differs:", b)
    return 1 if bad or d["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
