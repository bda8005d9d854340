#!/usr/bin/env python3
"""check_heapsnapshot.py — validates a Chrome DevTools .heapsnapshot against
the format rules DevTools' loader relies on (V8 JSON heap snapshot layout).

  check_heapsnapshot.py FILE       prints "ok" or the violations, exit 0/1

Rules checked: the meta describes node/edge fields and type tables; nodes
and edges arrays have node_count x len(node_fields) and edge_count x
len(edge_fields) entries; every number is an integer in [0, 2^32); type
indices are in range; names are string indices; node ids are unique; the
per-node edge_count values sum to the edge total; to_node is a multiple of
the node field count inside the nodes array; element/hidden edges carry a
number, all other edge types a string index; node 0 is the synthetic root,
one of its children is "(GC roots)"; every node is reachable from the root
through non-weak edges (DevTools reports others as unreachable).
"""
import json
import sys

U32 = 2**32


def check(snap):
    errs = []
    meta = snap["snapshot"]["meta"]
    nf, ef = meta["node_fields"], meta["edge_fields"]
    for f in ("type", "name", "id", "self_size", "edge_count"):
        if f not in nf:
            errs.append("node_fields lacks %s" % f)
    for f in ("type", "name_or_index", "to_node"):
        if f not in ef:
            errs.append("edge_fields lacks %s" % f)
    if errs:
        return errs
    node_types, edge_types = meta["node_types"][0], meta["edge_types"][0]
    nodes, edges, strings = snap["nodes"], snap["edges"], snap["strings"]
    N, E = len(nf), len(ef)
    nc, ec = snap["snapshot"]["node_count"], snap["snapshot"]["edge_count"]
    if len(nodes) != nc * N:
        errs.append("nodes has %d numbers, want %d x %d" % (len(nodes), nc, N))
    if len(edges) != ec * E:
        errs.append("edges has %d numbers, want %d x %d" % (len(edges), ec, E))
    for name, arr in (("nodes", nodes), ("edges", edges)):
        for i, v in enumerate(arr):
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < U32:
                errs.append("%s[%d] = %r is not a uint32" % (name, i, v))
                break
    if not all(isinstance(s, str) for s in strings):
        errs.append("strings must all be strings")
    if errs:
        return errs
    it, iname, iid, iec = nf.index("type"), nf.index("name"), nf.index("id"), nf.index("edge_count")
    et, en, eto = ef.index("type"), ef.index("name_or_index"), ef.index("to_node")
    ids = set()
    total = 0
    for k in range(nc):
        base = k * N
        if nodes[base + it] >= len(node_types):
            errs.append("node %d: type %d out of range" % (k, nodes[base + it]))
        if nodes[base + iname] >= len(strings):
            errs.append("node %d: name %d out of range" % (k, nodes[base + iname]))
        if nodes[base + iid] in ids:
            errs.append("node %d: duplicate id %d" % (k, nodes[base + iid]))
        ids.add(nodes[base + iid])
        total += nodes[base + iec]
    if total != ec:
        errs.append("edge_count fields sum to %d, edge_count is %d" % (total, ec))
    numeric = {edge_types.index(t) for t in ("element", "hidden") if t in edge_types}
    weak = edge_types.index("weak") if "weak" in edge_types else -1
    for j in range(ec):
        b = j * E
        t, name, to = edges[b + et], edges[b + en], edges[b + eto]
        if t >= len(edge_types):
            errs.append("edge %d: type %d out of range" % (j, t))
        if t not in numeric and name >= len(strings):
            errs.append("edge %d: name %d is not a string index" % (j, name))
        if to % N or to >= len(nodes):
            errs.append("edge %d: to_node %d is not a node offset" % (j, to))
        if len(errs) > 20:
            return errs
    if errs:
        return errs
    if nc == 0 or node_types[nodes[it]] != "synthetic":
        errs.append("node 0 is not the synthetic root")
        return errs
    # Adjacency via the edge_count walk, as DevTools does it.
    first, at = [], 0
    for k in range(nc):
        first.append(at)
        at += nodes[k * N + iec]
    first.append(at)
    root_children = [strings[nodes[edges[j * E + eto] + iname]] for j in range(first[0], first[1])]
    if "(GC roots)" not in root_children:
        errs.append("the root has no (GC roots) child")
    seen = bytearray(nc)
    seen[0] = 1
    stack = [0]
    while stack:
        k = stack.pop()
        for j in range(first[k], first[k + 1]):
            if edges[j * E + et] == weak:
                continue
            t = edges[j * E + eto] // N
            if not seen[t]:
                seen[t] = 1
                stack.append(t)
    missing = nc - sum(seen)
    if missing:
        errs.append("%d nodes unreachable from the root through non-weak edges" % missing)
    return errs


def main(argv):
    with open(argv[1], encoding="utf-8") as f:
        snap = json.load(f)
    errs = check(snap)
    for e in errs:
        print(e)
    print("ok" if not errs else "%d violations" % len(errs))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
