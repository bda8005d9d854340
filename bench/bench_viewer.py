#!/usr/bin/env python3
"""bench_viewer.py — `make bench` figures for `heapgraph view` at scale.

    bench_viewer.py CLI SNAP [BASELINE]

Starts `heapgraph view SNAP [BASELINE] --no-open` and times (wall clock) how
long until the URL is the first line of its stdout (goal: 15 s on the
10M-node / 30M-edge snapshot), then, for every view, the API requests the
page makes to show it (its first answer; goal: 1 s each), each a fresh
connection. The same run times `heapgraph top SNAP` (load + dominators, the
least any answer needs) back to back with the startup, and prints the
startup as a ratio of it, which load from other processes mostly cancels.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request


def startup(cli, args):
    t0 = time.monotonic()
    p = subprocess.Popen([cli, "view", *args, "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = p.stdout.readline().strip()
    return p, url, time.monotonic() - t0


def main():
    cli, snap = sys.argv[1], sys.argv[2]
    base = sys.argv[3] if len(sys.argv) > 3 else None
    t0 = time.monotonic()
    subprocess.run([cli, "top", snap, "-n", "1"], stdout=subprocess.DEVNULL, check=True)
    t_top = time.monotonic() - t0
    p, url, t_url = startup(cli, [snap] + ([base] if base else []))
    if not url.startswith("http://"):
        print("bench-viewer: no URL:", p.stderr.read(), file=sys.stderr)
        sys.exit(1)
    root = url.split("/?")[0]
    token = url.split("token=")[1]

    def get(path):
        sep = "&" if "?" in path else "?"
        t = time.monotonic()
        with urllib.request.urlopen(f"{root}/api/{path}{sep}token={token}") as r:
            body = r.read()
        return time.monotonic() - t, json.loads(body)

    try:
        _, summ = get("summary")
        _, top = get("top?n=5")
        _, cls = get("classes?n=100")
        big = cls["rows"][0]["id"]
        addr = top["nodes"][0]["addr"]
        _, leaks = get("leaks?n=1")
        leak = leaks["leaks"][0]["addr"] if leaks["leaks"] else addr
        # a node deep in the tree: follow the biggest child a few levels
        deep = addr
        for _ in range(8):
            _, kids = get(f"children?node={deep}&n=1")
            if not kids["rows"]:
                break
            deep = kids["rows"][0]["addr"]
        views = {
            "summary": ["info", "regions", "summary"],
            "classes": ["classes?sort=retained&n=100"],
            "classes (sort by name)": ["classes?sort=name&n=100"],
            "classes (filter)": ["classes?q=class_1&n=100"],
            "instances (biggest class)": [f"instances?class={big}&n=100"],
            "instances (page 1000)": [f"instances?class={big}&n=100&offset=100000"],
            "dominators": ["summary", "icicle?depth=5&n=14", "children?n=50"],
            "dominators (expand top node)": [f"children?node={addr}&n=50"],
            "object (top node)": [f"show?node={addr}&n=100", f"dominators?node={addr}&n=50", f"path?node={addr}&n=5"],
            "object (deep node)": [f"show?node={deep}&n=100", f"dominators?node={deep}&n=50", f"path?node={deep}&n=5"],
            "leaks": ["leaks?n=50"],
            "leak group": [f"leak?node={leak}"],
            "cycles": ["cycles?n=20"],
            "top": ["top?n=20"],
        }
        if base:
            views["diff"] = ["diff?n=100"]
        print(f"bench-viewer: {summ['nodes_total']:,} nodes, {summ['edges_total']:,} edges, load average {os.getloadavg()[0]:.2f}")
        print(f"  URL printed after      {t_url:7.2f} s   (goal 15 s)   = {t_url / t_top:.2f} x `heapgraph top` ({t_top:.2f} s) in the same run")
        print("  startup steps (s):     " + ", ".join(f"{k} {v:.2f}" for k, v in summ["startup_seconds"].items()))
        worst = 0.0
        for name, reqs in views.items():
            total = 0.0
            size = 0
            for r in reqs:
                t, body = get(r)
                total += t
                size += len(json.dumps(body))
            worst = max(worst, total)
            print(f"  {name:30s} {total * 1000:8.1f} ms  ({len(reqs)} request{'s' if len(reqs) > 1 else ''}, {size / 1024:.1f} KiB)")
        print(f"  slowest view's first answer: {worst * 1000:.1f} ms (goal 1000 ms)")
        ok = t_url <= 15 and worst <= 1
        print("bench-viewer: " + ("within the goals" if ok else "OVER a goal (machine load: see load average)"))
        with open(f"/proc/{p.pid}/status") as f:
            hwm = [l.split()[1] for l in f if l.startswith("VmHWM")]
        if hwm:
            print(f"  viewer peak RSS: {int(hwm[0]) / 1024 / 1024:.2f} GiB")
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
