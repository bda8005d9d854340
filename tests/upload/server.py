#!/usr/bin/env python3
"""server.py — a minimal stand-in for the backend's POST /v1/snapshots (the
real `heapgraph serve` does not exist yet), for the upload tests only.

  server.py DIR KEY [PLAN]

Listens on 127.0.0.1, port 0 (the kernel picks); writes the port to
DIR/port. Each POST /v1/snapshots must carry "Authorization: Bearer KEY"
(else 401). The body (gzip when Content-Encoding says so) must be a whole
snapshot: its trailer's xxh64 (format 2.8) is recomputed over the bytes
before the trailer and must equal X-Heapgraph-Checksum (else 422). PLAN is
a comma list of answers for the first requests, in order: a status (201,
200, 413, 422, 429, 503; "429:N" adds Retry-After: N), "drop" (close the
connection without an answer, after reading the body) or "slow:S" (wait S
seconds, then answer as after the plan). After the plan: 201
{"id"} for a new checksum (stored as DIR/store/CHECKSUM.hgsnap), 200 for
one already stored. Every request is logged as one JSON line to DIR/log.
"""
import gzip
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import xxhash

DIR, KEY = sys.argv[1], sys.argv[2]
PLAN = [p for p in (sys.argv[3] if len(sys.argv) > 3 else "").split(",") if p]
LOCK = threading.Lock()
STORE = os.path.join(DIR, "store")
os.makedirs(STORE, exist_ok=True)


def trailer_checksum(data):
    """(xxh64 in the trailer, xxh64 of the bytes before it) or None."""
    if len(data) < 16 or data[-1] != 0xFF:
        return None
    for start in range(len(data) - 2, max(len(data) - 600, 0), -1):
        if data[start:start + 3] != b"\x83\x0b\xa9":
            continue
        i = start + 3
        try:
            for _ in range(9):
                kl = data[i] & 31
                i += 1 + kl
                i = skip_uint(data, i)[0]
            i, val = skip_uint(data, i)
        except (IndexError, ValueError):
            continue
        if i == len(data) - 1:
            return val, xxhash.xxh64(data[:start], seed=0).intdigest()
    return None


def skip_uint(data, i):
    b = data[i]
    if b >> 5:
        raise ValueError
    ai = b & 31
    n = {24: 1, 25: 2, 26: 4, 27: 8}.get(ai, 0)
    if ai > 27:
        raise ValueError
    val = ai if ai < 24 else int.from_bytes(data[i + 1:i + 1 + n], "big")
    return i + 1 + n, val


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body, extra=None):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        rec = {"path": self.path, "bytes": n, "encoding": self.headers.get("Content-Encoding", ""),
               "checksum": self.headers.get("X-Heapgraph-Checksum", "")}
        with LOCK:
            plan = PLAN.pop(0) if PLAN else None
        try:
            if plan == "drop":
                rec["status"] = "drop"
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if self.headers.get("Authorization") != "Bearer " + KEY:
                rec["status"] = 401
                return self.answer(401, {"error": "bad key"})
            if plan and plan.startswith("slow:"):
                import time
                time.sleep(float(plan[5:]))  # after reading, before storing: the sender may be killed
                plan = None
            if plan:
                code, _, ra = plan.partition(":")
                rec["status"] = int(code)
                extra = {"Retry-After": ra} if ra else None
                return self.answer(int(code), {"error": "planned %s" % code}, extra)
            data = gzip.decompress(body) if rec["encoding"] == "gzip" else body
            t = trailer_checksum(data)
            if not t or t[0] != t[1] or "%016x" % t[0] != rec["checksum"]:
                rec["status"] = 422
                return self.answer(422, {"error": "not a whole snapshot or checksum mismatch"})
            path = os.path.join(STORE, rec["checksum"] + ".hgsnap")
            with LOCK:
                dup = os.path.exists(path)
                if not dup:
                    with open(path + ".tmp", "wb") as f:
                        f.write(data)
                    os.rename(path + ".tmp", path)
            rec["status"] = 200 if dup else 201
            self.answer(rec["status"], {"id": rec["checksum"]})
        finally:
            with LOCK, open(os.path.join(DIR, "log"), "a") as f:
                f.write(json.dumps(rec) + "\n")


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
srv.serve_forever()
