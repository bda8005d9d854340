#!/usr/bin/env python3
"""test_devtools.py — heapgraph's exports as other viewers read them.

Chrome DevTools' own heap snapshot loader (npm chrome-devtools-frontend,
bundled with esbuild by bundle.mjs, run in node by devtools_check.mjs) loads
the .heapsnapshot exports of two captures of export_target, and what it
computes is compared with heapgraph's own answers:
  - every block reachable from a root: DevTools' retained size and immediate
    dominator equal heapgraph's (json export: retained, idom);
  - the issue's repro: A (16 B) -> B (1000 B) plus unreachable L -> B: A
    retains 1,016 B, L is no retainer of B in DevTools' sense;
  - each root leak hangs off "(Unreachable)" and retains what `heapgraph
    leaks` says it holds alone (owned bytes); "(GC roots)" retains every
    reachable byte; DevTools reports no broken snapshot;
  - per-class counts and bytes equal `heapgraph classes`, the unclassified
    size buckets kept apart;
  - the Comparison view of the two captures (50 Widgets made, 100 freed):
    New/Deleted per class against `heapgraph diff` (New - Deleted = delta
    count, sizes too; exactly 50 new and 100 deleted Widgets, Parts and
    buffers: address-derived ids are stable);
  - ids: odd for blocks, (id - 1) x 8 = low 35 bits of the address, and
    `heapgraph show FILE @ID` finds the block;
  - json: meta.time_ns is a string that equals the snapshot's time; jsonl
    has one record per line and the same nodes;
  - the same two files in the real DevTools of Debian's chromium (headless,
    playwright-core; devtools_ui.mjs): Summary rows and the Comparison
    view's New/Deleted, screenshots $BUILD/export/devtools_*.png;
  - dot: Graphviz renders the default and --node views to PNG under
    $BUILD/export/ (looked at by hand), with a legend, grouped by class,
    no pointer edge drawn twice beside its dominator edge.
Needs node, chromium, the npm packages and graphviz from `scripts/deps.sh check`.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import devtools_compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(TOP, os.environ.get("BUILD", "build"))
CLI = os.path.join(BUILD, "heapgraph")
TARGET = os.path.join(BUILD, "export", "export_target")
DEPS = os.path.join(TOP, ".deps", "devtools")
BUNDLE = os.path.join(BUILD, "export", "devtools_worker.mjs")
passed = failed = 0


def run(*args, code=0):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != code:
        raise AssertionError("%s -> %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p.stdout


def hg(*args, code=0):
    return run(CLI, *args, code=code)


def devtools(mode, *files):
    return devtools_compare.devtools(BUNDLE, mode, *files)


def test(fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print("ok   %s" % fn.__name__)
    except Exception as e:  # noqa: BLE001 - report every failure and go on
        failed += 1
        print("FAIL %s: %s" % (fn.__name__, e))


def bundle():
    src = os.path.join(DEPS, "node_modules", "chrome-devtools-frontend", "package.json")
    if not os.path.exists(src):
        raise SystemExit("test_devtools: %s missing: run scripts/deps.sh check" % src)
    if not os.path.exists(BUNDLE) or os.path.getmtime(BUNDLE) < os.path.getmtime(
            os.path.join(HERE, "bundle.mjs")):
        os.makedirs(os.path.dirname(BUNDLE), exist_ok=True)
        run("node", os.path.join(HERE, "bundle.mjs"), DEPS, BUNDLE)


def main():
    bundle()
    tmp = tempfile.mkdtemp(prefix="hg_export_")
    addrs = {}
    for name, a in re.findall(r"^(\w+) (0x[0-9a-f]+)$", run(TARGET, tmp), re.M):
        addrs[name] = int(a, 16)
    one, two = os.path.join(tmp, "one.hgsnap"), os.path.join(tmp, "two.hgsnap")
    st = {}

    def export(snap, fmt, out):
        hg("export", snap, "--format", fmt, "-o", out)
        return out

    def loaded(snap):
        if snap not in st:
            hs = export(snap, "heapsnapshot", snap + ".heapsnapshot")
            with open(export(snap, "json", snap + ".json"), encoding="utf-8") as f:
                j = json.load(f)
            d = devtools("nodes", hs)
            st[snap] = (j, d)
        return st[snap]

    def node_of(j, addr):
        for n in j["nodes"]:
            if int(n["addr"], 16) <= addr < int(n["addr"], 16) + n["size"]:
                return n
        raise AssertionError("no node at %#x" % addr)

    def dominators_and_retained():
        for snap in (one, two):
            j, d = loaded(snap)
            assert d["problems"] == [], d["problems"]
            ids = [n["devtools_id"] for n in j["nodes"]]
            assert len(set(ids)) == len(ids) and all(i & 1 for i in ids)
            compared, bad = devtools_compare.compare(j, d)
            assert not bad, bad[:3]
            assert compared > 500, compared

    def repro_garbage_does_not_retain():
        j, d = loaded(one)
        by_id = {row[0]: row for row in d["nodes"]}
        a, b, l = (node_of(j, addrs[k]) for k in ("A", "B", "L"))
        assert l["idom"] is None and a["idom"] is not None, (a, l)
        # sizes are malloc's usable sizes: A 24 B (16 asked), B 1000 B (1000 asked)
        assert a["retained"] == a["size"] + b["size"] == by_id[a["devtools_id"]][3], (
            a, b, by_id[a["devtools_id"]])
        assert by_id[b["devtools_id"]][4] == a["devtools_id"]

    def leaks_hang_off_unreachable():
        j, d = loaded(one)
        by_id = {row[0]: row for row in d["nodes"]}
        unreach = [row for row in d["nodes"] if row[1] == "(Unreachable)"][0]
        leaks = json.loads(hg("leaks", one, "--json", code=1))  # exit 1: leaks found
        assert leaks["root_leaks"] == 3, leaks
        for lk in leaks["leaks"]:
            row = by_id[j["nodes"][lk["index"]]["devtools_id"]]
            assert row[4] == unreach[0], row            # hangs off (Unreachable)
            assert row[3] == lk["owned_bytes"], (row, lk)
        x = node_of(j, addrs["X"])  # the X <-> Y group alone holds X, Y (Z is shared with W)
        assert by_id[x["devtools_id"]][3] == x["size"] + node_of(j, addrs["Y"])["size"]
        assert unreach[3] == leaks["leaked_bytes"], (unreach, leaks)

    def classes():
        for snap in (one, two):
            j, d = loaded(snap)
            want = {}
            for line in hg("classes", snap, "--json").splitlines():
                c = json.loads(line)
                want[c["class"]] = [c["count"], c["bytes"]]
            got = {k: v[:2] for k, v in d["classes"].items()}
            assert got == want, (got, want)
            assert "Widget" in got and "(unclassified <=8192 B)" in got, got

    def comparison():
        hg_diff = json.loads(hg("diff", one, two, "--json"))
        dv = devtools("diff", one + ".heapsnapshot", two + ".heapsnapshot")
        assert dv["problems"] == []
        # heapgraph diff has one unclassified bucket; DevTools one per size
        want = {c["class"] or "(unclassified)": (c["delta_count"], c["delta_bytes"])
                for c in hg_diff["classes"] if c["delta_count"] or c["delta_bytes"]}
        got = {}
        for k, v in dv["diff"].items():
            k = "(unclassified)" if k.startswith("(unclassified <=") else k
            c, b = got.get(k, (0, 0))
            got[k] = (c + v[0] - v[1], b + v[2] - v[3])
        got = {k: v for k, v in got.items() if v != (0, 0)}
        assert got == want, (got, want)
        for cls in ("Widget", "Part", "(unclassified <=8192 B)"):
            assert dv["diff"][cls][:2] == [50, 100], (cls, dv["diff"][cls])

    def ids_map_to_addresses():
        j, d = loaded(one)
        for n in j["nodes"][:50]:
            assert (n["devtools_id"] - 1) * 8 == int(n["addr"], 16) % (1 << 35), n
        a = node_of(j, addrs["A"])
        out = hg("show", one, "@%d" % a["devtools_id"])
        assert a["addr"] in out, out
        hg("show", one, "@2", code=1)

    def json_forms():
        j, _ = loaded(one)
        assert isinstance(j["meta"]["time_ns"], str) and int(j["meta"]["time_ns"]) > 2**53
        recs = [json.loads(line) for line in hg("export", one, "--format", "jsonl").splitlines()]
        assert recs[0]["type"] == "meta" and recs[0]["time_ns"] == j["meta"]["time_ns"]
        assert sum(r["type"] == "edge" for r in recs) == len(j["edges"])
        nodes = [r for r in recs if r.pop("type") == "node"]
        assert nodes == j["nodes"]

    def dot_renders():
        outdir = os.path.join(BUILD, "export")
        for name, extra in (("top", []), ("focus", ["--node", "0x%x" % addrs["A"]])):
            dot = os.path.join(outdir, "%s.dot" % name)
            hg("export", two, "--format", "dot", "-o", dot, *extra)
            text = open(dot, encoding="utf-8").read()
            assert "cluster_legend" in text, text[:400]
            png = os.path.join(outdir, "%s.png" % name)
            run("dot", "-Tpng", "-o", png, dot)
            assert os.path.getsize(png) > 1000
            if name == "top":
                assert "subgraph cluster_c" in text  # grouped by class
                pairs = re.findall(r"^\s*(n\d+) -> (n\d+)", text, re.M)
                assert len(pairs) == len(set(pairs)), "an edge is drawn twice"
        shutil.copy(os.path.join(outdir, "top.png"), os.path.join(outdir, "export_dot.png"))

    def chromium_devtools_panel():
        # the real DevTools of Debian's chromium, as a person uses it
        loaded(one)
        loaded(two)
        out = os.path.join(BUILD, "export")
        rows = json.loads(run("node", os.path.join(HERE, "devtools_ui.mjs"), DEPS, out,
                              one + ".heapsnapshot", two + ".heapsnapshot"))
        summary, comparison = rows["summary"], rows["comparison"]
        assert any(r.startswith("Widget\u00d7250 ") for r in summary), summary
        assert sum(r.startswith("(unclassified <=") for r in summary) >= 3, summary
        for cls in ("Widget", "Part", "(unclassified <=8192 B)"):
            assert any(r.startswith(cls + " 50 100 \u221250 ") for r in comparison), comparison
        for png in ("devtools_summary.png", "devtools_comparison.png"):
            assert os.path.getsize(os.path.join(out, png)) > 10000

    for t in (dominators_and_retained, repro_garbage_does_not_retain, leaks_hang_off_unreachable,
              classes, comparison, chromium_devtools_panel, ids_map_to_addresses, json_forms,
              dot_renders):
        test(t)
    shutil.rmtree(tmp, ignore_errors=True)
    print("export-devtools: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
