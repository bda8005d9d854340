#!/usr/bin/env python3
"""bench_serve_load.py — the load half of `make bench-serve` (bench/bench_serve.sh).

  bench_serve_load.py mixed URL KEY CLIENTS COUNT FILE...
      COUNT uploads drawn (seeded) from FILES by CLIENTS concurrent clients
      (threads, one connection per upload); prints one JSON line: the
      outcome of every upload by HTTP status, latencies of the small ones
      (< 256 KiB) and of all, wall time.
  bench_serve_load.py stream URL KEY CLIENTS FILE...
      every FILE once, CLIENTS at a time: bytes, wall time (throughput).
  bench_serve_load.py disk DIR N MB
      writes N files of MB MiB with fsync each (the disk's sequential write
      in the same run): MiB/s.
"""
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse


def upload(url, key, path, data):
    u = urllib.parse.urlparse(url)
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        c.request("POST", "/v1/snapshots", body=data,
                  headers={"Authorization": "Bearer " + key, "Content-Type": "application/vnd.heapgraph.snapshot"})
        r = c.getresponse()
        r.read()
        status = r.status
        c.close()
    except Exception as e:  # a refused or dropped connection is an outcome too
        status = "error:" + type(e).__name__
    return status, time.monotonic() - t0


def run(url, key, clients, jobs):
    """jobs: list of (path, bytes); returns [(path, size, status, seconds)]."""
    out = [None] * len(jobs)
    nxt = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(jobs):
                return
            path, data = jobs[i]
            status, dt = upload(url, key, path, data)
            out[i] = (path, len(data), status, dt)

    ts = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out, time.monotonic() - t0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))] if xs else 0.0


def main():
    mode = sys.argv[1]
    if mode == "disk":
        d, n, mb = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        buf = os.urandom(1 << 20)
        t0 = time.monotonic()
        for i in range(n):
            p = os.path.join(d, "disk-%d.tmp" % i)
            with open(p, "wb") as f:
                for _ in range(mb):
                    f.write(buf)
                f.flush()
                os.fsync(f.fileno())
        dt = time.monotonic() - t0
        for i in range(n):
            os.unlink(os.path.join(d, "disk-%d.tmp" % i))
        print(json.dumps({"mib_s": n * mb / dt}))
        return
    url, key, clients = sys.argv[2], sys.argv[3], int(sys.argv[4])
    if mode == "mixed":
        count, files = int(sys.argv[5]), sys.argv[6:]
        data = {f: open(f, "rb").read() for f in files}
        rnd = random.Random(29)
        jobs = [(f, data[f]) for f in (rnd.choice(files) for _ in range(count))]
    else:
        jobs = [(f, open(f, "rb").read()) for f in sys.argv[5:]]
    res, wall = run(url, key, clients, jobs)
    by = {}
    for _, _, st, _ in res:
        by[str(st)] = by.get(str(st), 0) + 1
    small = [dt for _, size, st, dt in res if size < 256 << 10 and st in (200, 201)]
    print(json.dumps({"count": len(res), "by_status": by, "wall": wall,
                      "bytes": sum(size for _, size, _, _ in res),
                      "small": len(small), "small_p50": pct(small, 50), "small_p99": pct(small, 99),
                      "all_p99": pct([r[3] for r in res], 99)}))


main()
