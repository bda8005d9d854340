#!/usr/bin/env python3
"""test_cli.py — end-to-end tests of the analysis subcommands (top,
dominators, leaks, cycles, path, show, diff, export) on snapshots written
through the public builder by $BUILD/tests/analysis_mkfixture, with known
answers; the heapsnapshot export is validated by check_heapsnapshot.py.
Prints "N passed, N failed" last.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_heapsnapshot  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CLI = os.path.join(BUILD, "heapgraph")
passed = failed = 0


def run(*args, code=0):
    p = subprocess.run([CLI] + list(args), capture_output=True, text=True)
    if p.returncode != code:
        raise AssertionError("%s: exit %d (want %d): %s" % (" ".join(args), p.returncode, code,
                                                            p.stderr.strip()))
    return p.stdout


def test(fn):
    global passed, failed
    try:
        fn()
        passed += 1
    except Exception as e:  # report and go on
        failed += 1
        print("FAIL %s: %r" % (fn.__name__, e))


def main():
    tmp = tempfile.mkdtemp(prefix="hg-analysis-")
    subprocess.run([os.path.join(BUILD, "tests", "analysis_mkfixture"), tmp], check=True)
    app, app2, chain = (os.path.join(tmp, n) for n in ("app.hgsnap", "app2.hgsnap", "chain.hgsnap"))

    def top():
        j = json.loads(run("top", app, "--json", "-n", "3"))
        assert j["reachable_count"] == 6 and j["reachable_bytes"] == 1764, j
        assert [(n["class"], n["retained"]) for n in j["nodes"]] == [
            ("AppDelegate", 1664), ("foo::Cache", 1100), ("UIView", 500)], j["nodes"]
        entry = [c for c in json.loads(run("top", app, "--json"))["classes"] if c["class"] == "Entry"]
        assert entry == [{"class": "Entry", "count": 2, "bytes": 200, "retained": 200}], entry
        assert "N3foo5CacheE" in run("top", app, "--mangled")

    def dominators():
        j = json.loads(run("dominators", app, "0x12010", "--json"))
        assert [n["addr"] for n in j["chain"]] == ["0x11000", "0x10000"], j
        j = json.loads(run("dominators", app, "0x10000", "--json"))
        assert j["dominated_count"] == 2 and j["dominated"][0]["addr"] == "0x11000", j
        j = json.loads(run("dominators", app, "0x24000", "--json"))
        assert j["reachable"] is False
        run("dominators", app, "0x999999", code=1)

    def leaks():
        j = json.loads(run("leaks", app, "--json", code=1))
        assert j["leaked_count"] == 5 and j["leaked_bytes"] == 644 and j["root_leaks"] == 3, j
        got = [(x["class"], x["group_count"], x["count"], x["bytes"]) for x in j["leaks"]]
        assert got == [("Big", 1, 1, 500), ("Leaky", 2, 3, 112), ("WeakOnly", 1, 1, 32)], got
        assert "5 leaks for 644 total leaked bytes" in run("leaks", app, code=1)
        assert json.loads(run("leaks", chain, "--json"))["leaked_count"] == 0

    def cycles():
        j = json.loads(run("cycles", app, "--json"))
        assert j["cycle_count"] == 2, j
        c0, c1 = j["cycles"]
        assert (c0["count"], c0["bytes"], c0["leaked"]) == (2, 500, False), c0
        assert sorted(r["field"] for r in c0["references"]) == ["controller", "view"], c0
        assert (c1["count"], c1["bytes"], c1["leaked"]) == (2, 96, True), c1

    def path():
        j = json.loads(run("path", app, "0x12010", "--json"))
        (p,) = j["paths"]
        assert p["length"] == 2 and p["root"]["kind"] == "global", p
        assert [s.get("via") for s in p["steps"]] == [None, "cache", None], p
        assert p["steps"][2]["offset"] == 16 and p["steps"][2]["kind"] == "conservative"
        j = json.loads(run("path", app, "#3", "--json", "-n", "5"))
        assert j["paths"][0]["length"] == 0 and j["paths"][0]["root"]["kind"] == "stack", j
        assert len(j["paths"]) == 2  # the stack root, then through Cache
        run("path", app, "0x24000", code=1)  # only a weak reference: a leak
        j = json.loads(run("path", chain, "#199999", "--json"))
        assert j["paths"][0]["length"] == 199999

    def show():
        j = json.loads(run("show", app, "0x11000", "--json"))
        assert j["node"]["class"] == "foo::Cache" and j["node"]["class_kind"] == "c++", j
        assert j["out_count"] == 2 and j["in_count"] == 2, j
        assert sorted((e["kind"], e["field"]) for e in j["in"]) == [("strong", "cache"), ("weak", "owner")]
        assert "incoming (2)" in run("show", app, "#1")

    def diff():
        j = json.loads(run("diff", app, app2, "--json"))
        assert j["new_bytes"] - j["old_bytes"] == 4096 + 144, j
        first, second = j["classes"][:2]
        assert (first["class"], first["new"], first["delta_bytes"]) == ("NewThing", True, 4096)
        assert (second["class"], second["delta_count"], second["delta_bytes"]) == ("Leaky", 3, 144)

    def export_heapsnapshot():
        out = os.path.join(tmp, "app.heapsnapshot")
        run("export", app, "--format", "heapsnapshot", "-o", out)
        with open(out, encoding="utf-8") as f:
            snap = json.load(f)
        errs = check_heapsnapshot.check(snap)
        assert not errs, errs
        # 11 blocks + root, (GC roots), 2 root kinds, (Unreachable)
        assert snap["snapshot"]["node_count"] == 16, snap["snapshot"]
        names = [snap["strings"][snap["nodes"][i * 7 + 1]] for i in range(16)]
        assert names[:5] == ["", "(GC roots)", "(Stack roots)", "(Global roots)", "(Unreachable)"]
        assert "foo::Cache" in names and "Leaky" in names
        # the checker catches a broken file
        snap["edges"][2] += 1
        assert check_heapsnapshot.check(snap)
        big = os.path.join(tmp, "chain.heapsnapshot")
        run("export", chain, "--format", "heapsnapshot", "-o", big)
        with open(big, encoding="utf-8") as f:
            assert not check_heapsnapshot.check(json.load(f))

    def export_other():
        j = json.loads(run("export", app, "--format", "json"))
        assert len(j["nodes"]) == 11 and len(j["edges"]) == 11 and len(j["roots"]) == 2
        assert j["nodes"][0]["retained"] == 1664 and j["nodes"][0]["idom"] == -1
        dot = run("export", app, "--format", "dot", "-n", "3")
        assert dot.startswith("digraph") and dot.count("[label=\"") >= 3, dot
        dot = run("export", app, "--format", "dot", "--node", "0x14000", "--depth", "1")
        assert "controller" in dot and "penwidth=3" in dot
        run("export", app, "--format", "xml", code=2)

    for t in (top, dominators, leaks, cycles, path, show, diff, export_heapsnapshot, export_other):
        test(t)
    print("analysis-cli: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
