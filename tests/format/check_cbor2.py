#!/usr/bin/python3
"""check_cbor2.py — an independent decoder for heapgraph snapshot format v1.

Decodes every snapshot the tests produced ($BUILD/test-snapshots/*.hgsnap),
the committed golden files (tests/golden/*.hgsnap) and out/demo.hgsnap if it
exists, using Debian's python3-cbor2 (not libcbor, not the C reader), and
checks them against docs/snapshot-format.md / docs/snapshot.cddl:

  * the self-described tag 55799, an indefinite-length array, the header
    ["heapgraph-snapshot", 1], records, the trailer last, the final break;
  * each record's type, field count and field types (as the CDDL says), and
    that it re-encodes byte for byte (definite lengths, shortest heads);
  * the LEB128 chunk payloads: node gaps/sizes/classes/flags/heaps, edge
    groups (source deltas, row counts, the words flag, continuation groups,
    kind codes 5..7 with field ids, zigzag target deltas), root rows;
  * ordering (nodes increasing and non-overlapping, edges by source then
    offset), id sequences, every reference in range, the trailer counts;
  * the xxh64 of every byte before the trailer (python3-xxhash).

Files named compat-*.hgsnap are hand-made forward-compatibility cases: for
them only what the CDDL allows is required (extra fields, unknown records,
keys and header items are accepted); every other file must be exactly what
the writer produces (no extra fields, no unknown keys, preferred encoding).

Usage: check_cbor2.py [FILE...]   (no arguments: the default set above)
Prints one line per file and "N passed, N failed" last.
"""
import glob
import io
import os
import sys

import cbor2

try:
    import xxhash
except ImportError:  # the checksum check is skipped, and said so
    xxhash = None

MAGIC = "heapgraph-snapshot"
CHUNK_MAX = 256 * 1024
TRAILER_KEYS = ["regions", "images", "threads", "heaps", "classes", "strings", "nodes", "edges", "roots"]
META_TEXT = {"platform", "os_version", "arch", "process", "trigger", "allocator", "heap_status"}
U32 = (1 << 32) - 1
U64 = (1 << 64) - 1


class Bad(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Bad(msg)


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64


def is_text(v):
    return isinstance(v, str)


def varint(buf, pos, what):
    """LEB128, at most 64 bits."""
    v = 0
    shift = 0
    while True:
        need(pos < len(buf), "%s: varint runs past the payload" % what)
        b = buf[pos]
        pos += 1
        need(shift < 64 and not (shift == 63 and b & 0x7E), "%s: varint overflows 64 bits" % what)
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


class Snapshot:
    def __init__(self, strict=True):
        self.strict = strict
        self.regions = []
        self.images = 0
        self.threads = 0
        self.heaps = 0
        self.classes = 0
        self.strings = 0
        self.nodes = 0
        self.node_end = None
        self.max_class = 0
        self.max_heap = 0
        self.edges = 0
        self.edge_refs = []  # (source, target) checked at the end
        self.max_field = 0
        self.last_edge = None  # (source, offset)
        self.roots = 0
        self.root_refs = []  # (kind, owner, target)
        self.meta_records = 0
        self.chunks = {8: 0, 9: 0, 10: 0}
        self.continuations = 0
        self.words_groups = 0
        self.named_edges = 0

    def fields(self, rec, n, what):
        if self.strict:
            need(len(rec) == n, "%s has %d fields, the writer writes %d" % (what, len(rec), n))
        else:
            need(len(rec) >= n, "%s has %d fields, needs %d" % (what, len(rec), n))

    # ---- records ----
    def meta(self, rec):
        self.fields(rec, 2, "meta record")
        m = rec[1]
        need(isinstance(m, dict), "meta is not a map")
        for k, v in m.items():
            need(is_text(k), "meta key is not text")
            if k in META_TEXT:
                need(is_text(v), "meta %s is not text" % k)
            elif k in ("pointer_size", "page_size"):
                need(is_uint(v) and v < U32, "meta %s is not a uint32" % k)
            elif k == "time_ns":
                need(is_uint(v), "meta time_ns is not a uint")
            elif k == "pid":
                need(isinstance(v, int) and -(1 << 63) <= v < (1 << 63), "meta pid is not an int64")
            elif k == "app":
                need(isinstance(v, dict) and all(is_text(a) and is_text(b) for a, b in v.items()),
                     "meta app is not a text map")
            elif k == "capture":
                need(isinstance(v, dict) and all(is_text(a) and is_uint(b) for a, b in v.items()),
                     "meta capture is not a text->uint map")
            elif self.strict:
                raise Bad("unknown meta key %r (the writer writes none)" % k)
        self.meta_records += 1

    def region(self, rec):
        self.fields(rec, 10, "region record")
        _, start, size, prot, tag, name, res, dirty, swapped, image = rec[:10]
        need(all(is_uint(x) for x in (start, size, res, dirty, swapped)), "region numbers")
        need(start + size <= U64 + 1, "region wraps")
        need(is_uint(prot) and prot < 16, "region prot")
        need(is_uint(tag) and tag < U32, "region tag")
        need(name is None or is_text(name), "region name")
        need(image is None or (is_uint(image) and image < U32), "region image")
        self.regions.append(image)

    def image(self, rec):
        self.fields(rec, 6, "image record")
        need(is_text(rec[1]), "image path")
        need(isinstance(rec[2], bytes) and len(rec[2]) <= 64, "image id")
        need(all(is_uint(x) for x in rec[3:6]), "image numbers")
        self.images += 1

    def thread(self, rec):
        self.fields(rec, 5, "thread record")
        need(is_uint(rec[1]) and (rec[2] is None or is_text(rec[2])), "thread tid/name")
        need(is_uint(rec[3]) and is_uint(rec[4]) and rec[3] <= rec[4], "thread stack range")
        self.threads += 1

    def seq_named(self, rec, attr, n):
        self.fields(rec, n, "record type %d" % rec[0])
        have = getattr(self, attr)
        need(rec[1] == have + 1, "%s id %r out of sequence (expected %d)" % (attr, rec[1], have + 1))
        need(is_text(rec[2]), "%s name" % attr)
        setattr(self, attr, have + 1)

    def klass(self, rec):
        self.seq_named(rec, "classes", 5)
        need(is_uint(rec[3]) and rec[3] <= 4, "class kind %r" % rec[3])
        need(is_uint(rec[4]), "class instance size")

    # ---- chunks ----
    def node_chunk(self, rec):
        self.fields(rec, 5, "nodes record")
        _, first, count, base, buf = rec[:5]
        need(first == self.nodes, "nodes chunk starts at %r, expected %d" % (first, self.nodes))
        need(is_uint(count) and count > 0 and is_uint(base), "nodes count/base")
        need(isinstance(buf, bytes) and len(buf) <= CHUNK_MAX, "nodes payload")
        pos, addr, heap = 0, base, 0
        for i in range(count):
            gap, pos = varint(buf, pos, "node gap")
            size, pos = varint(buf, pos, "node size")
            cls, pos = varint(buf, pos, "node class")
            need(pos < len(buf), "node flags missing")
            fl = buf[pos]
            pos += 1
            if fl & 0x80:
                heap, pos = varint(buf, pos, "node heap")
            need(not fl & 0x70, "node flag bits 4-6 set")
            if i == 0 and self.strict:
                need(gap == 0, "first node of a chunk has gap %d (writer writes 0)" % gap)
            addr += gap
            need(size > 0 and addr + size <= U64 + 1, "node %d: empty or wrapping" % self.nodes)
            need(self.node_end is None or addr >= self.node_end,
                 "node %d at %#x overlaps or precedes the previous node" % (self.nodes, addr))
            need(cls < U32 and heap < U32, "class/heap id too large")
            self.max_class = max(self.max_class, cls)
            self.max_heap = max(self.max_heap, heap)
            addr += size
            self.node_end = addr
            self.nodes += 1
        need(pos == len(buf), "%d trailing bytes in nodes chunk" % (len(buf) - pos))
        self.chunks[8] += 1

    def edge_chunk(self, rec):
        self.fields(rec, 4, "edges record")
        _, first, count, buf = rec[:4]
        need(is_uint(first) and is_uint(count) and count > 0, "edges first/count")
        need(isinstance(buf, bytes) and len(buf) <= CHUNK_MAX, "edges payload")
        pos, src, off, done, first_group = 0, first, 0, 0, True
        while done < count:
            sd, pos = varint(buf, pos, "group source")
            hdr, pos = varint(buf, pos, "group size")
            n, words = hdr >> 1, hdr & 1
            need(not first_group or sd == 0, "first group must start at the chunk's source")
            need(0 < n <= count - done, "group size %d out of range" % n)
            absolute = first_group or sd != 0
            if not absolute:
                self.continuations += 1
            self.words_groups += words
            src += sd
            first_group = False
            for i in range(n):
                ok, pos = varint(buf, pos, "edge offkind")
                code, q = ok & 7, ok >> 3
                field = 0
                if code >= 5:
                    field, pos = varint(buf, pos, "edge field")
                    need(0 < field < U32, "edge field id out of range")
                    self.named_edges += 1
                    self.max_field = max(self.max_field, field)
                zz, pos = varint(buf, pos, "edge target")
                d = q * 8 if words else q
                if absolute and i == 0:
                    off = d
                else:
                    need(d > 0, "edge offsets must increase")
                    off += d
                need(off <= U32, "edge offset beyond 4 GiB")
                need(self.last_edge is None or (src, off) > self.last_edge,
                     "edges out of order at source %d offset %d" % (src, off))
                self.last_edge = (src, off)
                self.edge_refs.append((src, src + unzigzag(zz)))
                self.edges += 1
            done += n
        need(pos == len(buf), "%d trailing bytes in edges chunk" % (len(buf) - pos))
        self.chunks[9] += 1

    def root_chunk(self, rec):
        self.fields(rec, 3, "roots record")
        _, count, buf = rec[:3]
        need(is_uint(count) and count > 0, "roots count")
        need(isinstance(buf, bytes) and len(buf) <= CHUNK_MAX, "roots payload")
        pos, where, target = 0, 0, 0
        for _ in range(count):
            need(pos < len(buf), "root row missing")
            kb = buf[pos]
            pos += 1
            need((kb & 0x0F) < 5 and not kb & 0xE0, "root kind byte %#x" % kb)
            owner = None
            if kb & 0x10:
                owner, pos = varint(buf, pos, "root owner")
                need(owner < U32, "root owner too large")
            zw, pos = varint(buf, pos, "root address")
            zt, pos = varint(buf, pos, "root target")
            where = (where + unzigzag(zw)) & U64
            target += unzigzag(zt)
            self.root_refs.append((kb & 0x0F, owner, target))
            self.roots += 1
        need(pos == len(buf), "%d trailing bytes in roots chunk" % (len(buf) - pos))
        self.chunks[10] += 1

    def finish(self, counts):
        for i, image in enumerate(self.regions):
            need(image is None or image < self.images, "region %d refers to image %r" % (i, image))
        need(self.max_class <= self.classes, "a node refers to class %d of %d" % (self.max_class, self.classes))
        need(self.max_heap <= self.heaps, "a node refers to heap %d of %d" % (self.max_heap, self.heaps))
        need(self.max_field <= self.strings, "an edge refers to string %d of %d" % (self.max_field, self.strings))
        for e, (s, t) in enumerate(self.edge_refs):
            need(0 <= s < self.nodes and 0 <= t < self.nodes, "edge %d: %d -> %d of %d nodes" % (e, s, t, self.nodes))
        for i, (kind, owner, target) in enumerate(self.root_refs):
            need(0 <= target < self.nodes, "root %d target %d of %d" % (i, target, self.nodes))
            if owner is not None:
                lim = self.images if kind == 2 else self.threads
                need(owner < lim, "root %d owner %r of %d" % (i, owner, lim))
        actual = {"regions": len(self.regions), "images": self.images, "threads": self.threads,
                  "heaps": self.heaps, "classes": self.classes, "strings": self.strings,
                  "nodes": self.nodes, "edges": self.edges, "roots": self.roots}
        need(all(k in counts for k in TRAILER_KEYS), "trailer lacks counts: %r" % sorted(counts))
        if self.strict:
            need(list(counts) == TRAILER_KEYS, "trailer keys %r, not the documented ones in order" % list(counts))
        for k in TRAILER_KEYS:
            need(counts[k] == actual[k], "trailer says %r %s, file holds %d" % (counts[k], k, actual[k]))


def check_file(path):
    strict = not os.path.basename(path).startswith("compat-")
    data = open(path, "rb").read()
    need(data[:3] == b"\xd9\xd9\xf7", "no self-describe tag 55799")
    need(data[3:4] == b"\x9f", "the record stream is not an indefinite-length array")
    need(data[-1:] == b"\xff", "does not end with the break")
    # The whole file is one CBOR item for any generic decoder.
    whole = cbor2.loads(data)
    need(isinstance(whole, list), "top-level item is not an array")
    fp = io.BytesIO(data)
    fp.seek(4)
    snap = Snapshot(strict)
    records = []
    while True:
        at = fp.tell()
        need(at < len(data), "no break")
        if data[at] == 0xFF:
            fp.seek(at + 1)
            break
        rec = cbor2.CBORDecoder(fp).decode()
        end = fp.tell()
        if strict:
            need(cbor2.dumps(rec) == data[at:end], "record at %d is not in preferred serialization" % at)
        records.append((at, rec))
    need(fp.tell() == len(data), "%d bytes after the break" % (len(data) - fp.tell()))
    need(len(records) >= 2, "no header or no trailer")
    need(len(records) == len(whole), "generic decode disagrees on the record count")
    hdr = records[0][1]
    need(hdr == [MAGIC, 1] or (not strict and isinstance(hdr, list) and hdr[:2] == [MAGIC, 1]),
         "header is %r" % (hdr,))
    need(records[0][0] == 4, "header does not follow the stream head")
    trailer_at, trailer = records[-1]
    need(isinstance(trailer, list) and trailer[:1] == [11], "last record is not the trailer")
    for at, rec in records[1:-1]:
        try:
            need(isinstance(rec, list) and rec and is_uint(rec[0]), "record is not [type, ...]")
            t = rec[0]
            if t == 1:
                snap.meta(rec)
            elif t == 2:
                snap.region(rec)
            elif t == 3:
                snap.image(rec)
            elif t == 4:
                snap.thread(rec)
            elif t == 5:
                snap.seq_named(rec, "heaps", 3)
            elif t == 6:
                snap.klass(rec)
            elif t == 7:
                snap.seq_named(rec, "strings", 3)
            elif t == 8:
                snap.node_chunk(rec)
            elif t == 9:
                snap.edge_chunk(rec)
            elif t == 10:
                snap.root_chunk(rec)
            elif t == 11:
                raise Bad("a second trailer")
            # other types: unknown records, skipped (forward compatible)
        except Bad as e:
            raise Bad("record at byte %d: %s" % (at, e))
    snap.fields(trailer, 3, "trailer")
    need(isinstance(trailer[1], dict) and is_uint(trailer[2]), "trailer fields")
    snap.finish(trailer[1])
    checked = "not checked (python3-xxhash missing)"
    if xxhash is not None:
        digest = xxhash.xxh64(data[:trailer_at], seed=0).intdigest()
        need(digest == trailer[2], "xxh64 %#x, trailer says %#x" % (digest, trailer[2]))
        checked = "ok"
    per = len(data) / (snap.nodes + snap.edges) if snap.nodes + snap.edges else 0.0
    return ("%d records, %d nodes (%d chunks), %d edges (%d chunks, %d continuation groups, "
            "%d word groups, %d named), %d roots, %.2f bytes/node+edge, xxh64 %s"
            % (len(records), snap.nodes, snap.chunks[8], snap.edges, snap.chunks[9], snap.continuations,
               snap.words_groups, snap.named_edges, snap.roots, per, checked))


# Field counts the writer emits per record (type element included).
RECORD_FIELDS = {"header": 2, "meta": 2, "region": 10, "image": 6, "thread": 5, "heap": 3,
                 "class": 5, "string": 3, "nodes": 5, "edges": 4, "roots": 3, "trailer": 3}


def check_cddl(path):
    """docs/snapshot.cddl must agree with this decoder: each record rule lists
    the fields the writer writes (then `* any`), the trailer counts and the
    metadata keys are the same."""
    import re
    text = re.sub(r";[^\n]*", "", open(path).read())
    rules = dict(re.findall(r"^([a-z0-9-]+)\s*=\s*(.*?)(?=^[a-z0-9-]+\s*=|\Z)", text, re.S | re.M))
    for name, n in RECORD_FIELDS.items():
        body = rules.get(name, "").strip()
        need(body.startswith("[") and body.endswith("]"), "cddl: no array rule %r" % name)
        items = [x.strip() for x in body[1:-1].split(",") if x.strip()]
        need(items and items[-1] == "* any", "cddl: %s does not end with * any" % name)
        need(len(items) - 1 == n, "cddl: %s lists %d fields, the writer writes %d" % (name, len(items) - 1, n))
    keys = re.findall(r'"([a-z_]+)"\s*=>', rules.get("trailer-counts", ""))
    need(keys == TRAILER_KEYS, "cddl: trailer-counts keys %r" % keys)
    meta = set(re.findall(r'"([a-z_]+)"\s*=>', rules.get("meta-map", "")))
    need(meta == META_TEXT | {"pointer_size", "page_size", "pid", "time_ns", "app", "capture"},
         "cddl: meta-map keys %r" % sorted(meta))
    return "%d rules, record field counts agree" % len(rules)


def main(argv):
    files = argv[1:]
    if not files:
        build = os.environ.get("BUILD", "build")
        files = sorted(glob.glob(os.path.join(build, "test-snapshots", "*.hgsnap")))
        files += sorted(glob.glob("tests/golden/*.hgsnap"))
        if os.path.exists("out/demo.hgsnap"):
            files.append("out/demo.hgsnap")
    passed = failed = 0
    cddl = "docs/snapshot.cddl"
    if len(argv) == 1 and os.path.exists(cddl):
        try:
            print("ok   %s: %s" % (cddl, check_cddl(cddl)))
            passed += 1
        except Exception as e:  # noqa: BLE001
            print("FAIL %s: %s" % (cddl, e))
            failed += 1
    for f in files:
        try:
            print("ok   %s: %s" % (f, check_file(f)))
            passed += 1
        except Exception as e:  # noqa: BLE001 - any decoder error is a failed file
            print("FAIL %s: %s: %s" % (f, type(e).__name__, e))
            failed += 1
    if xxhash is None:
        print("note: python3-xxhash is not installed; checksums were not verified")
    if not files:
        print("no snapshots found")
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
