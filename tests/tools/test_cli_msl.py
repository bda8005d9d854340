#!/usr/bin/env python3
"""test_cli_msl.py — `heapgraph msl` on index files generated here from the
record definitions of libmalloc-166.251.2 src/stack_logging_disk.c
(stack_logging_index_event64 {u64 argument, address, offset_and_flags},
stack_logging_index_event32 {u32, u32, u64}; address ^ 0x5555; stack id in
bits 0-47, VM user tag 48-55, type flags 56-63): JSON and text output, the
width detected and forced, a cut file, a file that is not an index (exit 1,
reason with the byte offset), usage errors."""
import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checks import check, run, summary  # noqa: E402

CLI = os.environ.get("HG_CLI", os.path.join(os.environ.get("BUILD", "build"), "heapgraph"))


def off_flags(stack, flags):
    return (stack & 0xFFFFFFFFFFFF) | ((flags & 0xFF) << 56) | ((flags & 0xFF000000) << 24)


def rec(wide, argument, ptr, stack, flags):
    if wide:
        return struct.pack("<QQQ", argument, ptr ^ 0x5555, off_flags(stack, flags))
    return struct.pack("<IIQ", argument, (ptr ^ 0x5555) & 0xFFFFFFFF, off_flags(stack, flags))


def session(wide):
    base = 0x600000A00000 if wide else 0x06B00000
    b = b"".join(rec(wide, 64, base + i * 0x40, 0x10 + i % 2, 2) for i in range(10))  # 5 + 5 x 64
    b += b"".join(rec(wide, 0, base + i * 0x40, 0x99, 4) for i in range(0, 10, 2))    # frees stack 0x10's
    b += rec(wide, 0, base + 0x40 * 1, 0x77, 4) + rec(wide, 300, base + 0x5000, 0x77, 2)  # realloc: free + alloc
    b += rec(wide, 16384, base + 0x100000, 0x44, 16 | (35 << 24))                      # vm_allocate, tag 35
    return b


def main():
    tmp = tempfile.mkdtemp()
    for wide, width in ((1, 24), (0, 16)):
        path = os.path.join(tmp, "stack-logs.1.1000.App.AbCdEf.index")
        with open(path, "wb") as f:
            f.write(session(wide))
        rc, out, err = run([CLI, "msl", path, "--json"])
        check(rc == 0, "msl --json width %d" % width, err)
        try:
            j = json.loads(out)
        except ValueError as e:
            check(False, "msl --json parses", "%s: %s" % (e, out))
            continue
        check(j["width"] == width and j["width_detected"], "width %d detected" % width, out)
        check(j["records"] == 18 and j["events"]["alloc"] == 11 and j["events"]["free"] == 6
              and j["events"]["vm_allocate"] == 1, "events by type (%d)" % width, out)
        check(j["live_count"] == 5 and j["live_bytes"] == 4 * 64 + 300, "live blocks (%d)" % width, out)
        stacks = {s["stack_id"]: s for s in j["stacks"]}
        check(stacks.get(0x77, {}).get("live_bytes") == 300 and stacks.get(0x11, {}).get("live_count") == 4
              and stacks.get(0x10, {}).get("live_count") == 0 and j["stacks"][0]["stack_id"] == 0x77,
              "per stack id (%d)" % width, out)
        rc, out, err = run([CLI, "msl", path, "-n", "1"])
        check(rc == 0 and "records: 18 of %d bytes" % width in out and "(2 more stacks" in out,
              "text output (%d)" % width, out + err)
        rc, out, err = run([CLI, "msl", path, "--json", "--width", str(40 - width)])
        check(rc == 0 and json.loads(out)["events"]["invalid"] > 0, "the other width, forced", out + err)
        with open(path, "wb") as f:
            f.write(session(wide)[:-3])
        rc, out, err = run([CLI, "msl", path])
        check(rc == 0 and "bytes after the last whole record (offset %d)" % (17 * width) in out,
              "cut file (%d)" % width, out + err)
    bad = os.path.join(tmp, "bad.index")
    with open(bad, "wb") as f:
        f.write(bytes((i * 7 + 1) & 0xFF for i in range(4096)))
    rc, out, err = run([CLI, "msl", bad])
    check(rc == 1 and "at offset 0" in err and not out, "not an index: exit 1 with the offset", err)
    rc, out, err = run([CLI, "msl", os.path.join(tmp, "missing.index")])
    check(rc == 1 and "missing.index" in err, "missing file", err)
    rc, out, err = run([CLI, "msl", bad, "--width", "20"])
    check(rc == 2, "--width 20 is a usage error", err)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
