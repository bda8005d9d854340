#!/usr/bin/python3
"""check_generated.py — `heapgraph macho` on the byte-level fixtures of
gen_macho.py ($BUILD/macho-fixtures/gen) and on malformed inputs.

  - every fixup (--chained-fixups --json) equals the list the generator built
    the file from: formats 64, 64_OFFSET, ARM64E, ARM64E_USERLAND(24), auth
    and plain, IMPORT/ADDEND/ADDEND64, MULTI starts, threaded binds;
  - --typeinfo finds exactly the type_infos it planted, names resolved;
  - where llvm-objdump-16 can decode the file, --chained-fixups output is
    byte-identical to its --dyld-info;
  - the FAT_MAGIC_64 file's slices (one with the LIB64 subtype bit) select by arch;
  - malformed variants (truncated, offsets past the end, ULEB overflow, chains
    that run off their page, bad ordinals, bad opcodes, 32-bit, unknown) fail
    with a message naming a byte offset, never a crash or a hang; plus a
    deterministic sweep of truncations and byte flips that must not crash.
Prints "N passed, N failed" last.
"""
import json
import os
import random
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402  (tests/checks.py: run, check, summary)
from checks import check, summary  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CLI = os.path.join(BUILD, "heapgraph")
GEN = os.path.join(BUILD, "macho-fixtures", "gen")
FIX = os.path.join(BUILD, "macho-fixtures")


def run(cmd, timeout=120):
    return checks.run(cmd, timeout=timeout)


def fixups_of(path, arch=None):
    a = ["--arch", arch] if arch else []
    rc, out, err = run([CLI, "macho", path, "--chained-fixups", "--json"] + a)
    return rc, [json.loads(l) for l in out.splitlines()], err


def typeinfo_of(path, arch=None):
    a = ["--arch", arch] if arch else []
    rc, out, err = run([CLI, "macho", path, "--typeinfo", "--json"] + a)
    return rc, [json.loads(l) for l in out.splitlines()], err


def check_fixture(name, exp, arch=None):
    path = os.path.join(GEN, name)
    rc, got, err = fixups_of(path, arch)
    check(rc == 0, "%s runs" % name, err)
    check(len(got) == len(exp["fixups"]), "%s fixup count" % name, "%d vs %d" % (len(got), len(exp["fixups"])))
    for g, e in zip(got, exp["fixups"]):
        if g != e:
            check(False, "%s fixup at 0x%x" % (name, e["vmaddr"]), "\n  got %s\n  exp %s" % (g, e))
            break
    else:
        check(True, name)
    rc, tis, err = typeinfo_of(path, arch)
    want = sorted((t["vmaddr"], t["kind"], t["mangled"], t["non_unique"]) for t in exp["typeinfo"])
    have = sorted((t["vmaddr"], t["kind"], t["mangled"], t["non_unique"]) for t in tis)
    check(rc == 0 and want == have, "%s typeinfo" % name, "\n  got %s\n  exp %s %s" % (have, want, err))


def check_llvm(name):
    path = os.path.join(GEN, name)
    rc1, ours, err = run([CLI, "macho", path, "--chained-fixups"])
    rc2, ref, _ = run(["llvm-objdump-16", "--macho", "--dyld-info", path])
    check(rc1 == 0 and rc2 == 0 and ours == ref, "%s vs llvm-objdump-16" % name, err)


def expect_error(data, what, arch=None, modes=("--chained-fixups", "--bind", "--rebase", "--typeinfo")):
    """Each mode must exit 1 with an error naming an offset (or 0), never crash."""
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(data)
        path = f.name
    try:
        errs = []
        for m in modes:
            a = ["--arch", arch] if arch else []
            rc, out, err = run([CLI, "macho", path, m] + a)
            if rc not in (0, 1):
                check(False, "%s %s: exit %d" % (what, m, rc), err)
                return
            if rc == 1:
                errs.append(err)
        check(any("offset 0x" in e for e in errs), "%s reports an offset" % what, errs)
    finally:
        os.unlink(path)


def no_crash(data, what):
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(data)
        path = f.name
    try:
        for m in ("--chained-fixups", "--bind", "--weak-bind", "--lazy-bind", "--rebase", "--typeinfo", "--info"):
            rc, out, err = run([CLI, "macho", path, m], timeout=60)
            if rc not in (0, 1):
                check(False, "%s %s: exit %d" % (what, m, rc), err)
                return False
        return True
    finally:
        os.unlink(path)


def linkedit_off(data):
    """File offset of the chained blob / bind opcodes in a generated fixture."""
    return 3 * 0x4000


def malformed():
    base = open(os.path.join(GEN, "gen_ptr64_import"), "rb").read()
    le = linkedit_off(base)
    hdr = struct.unpack_from("<IIIIIII", base, le)
    starts, imports, symbols, count = hdr[1], hdr[2], hdr[3], hdr[4]
    # truncated: header only, mid load commands, mid linkedit
    expect_error(base[:16], "truncated header")
    expect_error(base[:200], "truncated load commands")
    expect_error(base[:le + 10], "truncated linkedit")
    # imports_count far past the blob
    d = bytearray(base); struct.pack_into("<I", d, le + 16, 0x10000000)
    expect_error(bytes(d), "imports_count past the end")
    # starts_offset past the end
    d = bytearray(base); struct.pack_into("<I", d, le + 4, 0xFFFFFF00)
    expect_error(bytes(d), "starts_offset past the end")
    # bad ordinal in an import (ordinal 9, image has 3 dylibs)
    d = bytearray(base); v = struct.unpack_from("<I", d, le + imports)[0]
    struct.pack_into("<I", d, le + imports, (v & ~0xFF) | 9)
    expect_error(bytes(d), "bad import ordinal")
    # import name offset past the symbols
    d = bytearray(base); struct.pack_into("<I", d, le + imports, (v & 0x1FF) | (0x7FFFFF << 9))
    expect_error(bytes(d), "import name past the end")
    # chain whose next runs off the page: first pointer at 0x4100 of __DATA
    d = bytearray(base); p = 0x4000 + 0x100
    v = struct.unpack_from("<Q", d, p)[0]
    struct.pack_into("<Q", d, p, (v & ~(0xFFF << 51)) | (0xFFF << 51))
    expect_error(bytes(d), "chain runs off its page")
    # bind with an import index past imports_count
    d = bytearray(base); struct.pack_into("<Q", d, p, (v & ~0xFFFFFF) | 0xFFFFFF)
    expect_error(bytes(d), "bind import index out of range")
    # page_start past the page
    seg = le + starts + 16
    d = bytearray(base); struct.pack_into("<H", d, seg + 22, 0x7FF0)
    expect_error(bytes(d), "page start past the page")
    # unknown pointer format
    d = bytearray(base); struct.pack_into("<H", d, seg + 6, 77)
    expect_error(bytes(d), "unknown pointer format")
    # segment file range past the end (fileoff of __DATA)
    d = bytearray(base); struct.pack_into("<Q", d, 32 + 232 + 40, 0x7FFFFFFF)
    expect_error(bytes(d), "segment past the end")
    # 32-bit and unknown magic are refused
    expect_error(struct.pack("<I", 0xFEEDFACE) + bytes(60), "32-bit Mach-O")
    expect_error(b"\x7fELF" + bytes(60), "not Mach-O")
    # fat header with a slice past the end
    expect_error(struct.pack(">IIIIIII", 0xCAFEBABE, 1, 0x01000007, 3, 0x1000, 0x100000, 12), "fat slice past end")

    # Opcode streams: the threaded fixture's bind stream starts at linkedit.
    th = open(os.path.join(GEN, "gen_threaded"), "rb").read()
    ble = linkedit_off(th)
    d = bytearray(th); d[ble] = 0xE0                 # bad opcode
    expect_error(bytes(d), "bad bind opcode")
    d = bytearray(th); d[ble + 1:ble + 12] = b"\xff" * 10 + b"\x7f"  # ULEB overflow
    expect_error(bytes(d), "ULEB overflow")
    # Real LC_DYLD_INFO fixture: locate the bind stream via --info.
    exe = os.path.join(FIX, "exe-x86_64")
    if os.path.exists(exe):
        data = open(exe, "rb").read()
        rc, info, _ = run([CLI, "macho", exe, "--info"])
        # LC_DYLD_INFO_ONLY: find the command to read the offsets
        ncmds, sizeofcmds = struct.unpack_from("<II", data, 16)
        at = 32
        rebase = bind = None
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<II", data, at)
            if cmd == 0x80000022:
                rebase = struct.unpack_from("<II", data, at + 8)
                bind = struct.unpack_from("<II", data, at + 16)
            at += size
        check(bind is not None, "exe-x86_64 has LC_DYLD_INFO_ONLY")
        if bind:
            d = bytearray(data); d[bind[0]] = 0x1F          # SET_DYLIB_ORDINAL_IMM 15
            expect_error(bytes(d), "bad bind ordinal", modes=("--bind",))
            d = bytearray(data); d[rebase[0]] = 0x90        # bad rebase opcode
            expect_error(bytes(d), "bad rebase opcode", modes=("--rebase",))
            # ULEB_TIMES_SKIPPING with a huge count and skip -8 (same slot forever)
            loop = bytes([0x11, 0x40]) + b"_x\0" + bytes([0x51, 0x72, 0x00, 0xC0]) + \
                b"\xff" * 9 + b"\x01" + b"\xf8" + b"\xff" * 8 + b"\x01" + bytes([0])
            if len(loop) <= bind[1]:
                d = bytearray(data); d[bind[0]:bind[0] + len(loop)] = loop
                expect_error(bytes(d), "runaway ULEB_TIMES_SKIPPING loop", modes=("--bind",))
            # bind opcodes said to lie past the end of the file
            d = bytearray(data)
            at = 32
            for _ in range(ncmds):
                cmd, size = struct.unpack_from("<II", d, at)
                if cmd == 0x80000022:
                    struct.pack_into("<I", d, at + 16, len(d) - 4)
                at += size
            expect_error(bytes(d), "bind opcodes past the end", modes=("--bind",))
    # Sweep: truncations and byte flips must never crash or hang.
    rnd = random.Random(1234)
    ok = True
    for src in ("gen_threaded", "gen_arm64e_user24_addend64", "gen_fat64"):
        data = open(os.path.join(GEN, src), "rb").read()
        for cut in (1, 7, 31, 100, 500, 0x3000, 0x4100, 0xC010, len(data) - 3):
            ok &= no_crash(data[:cut], "%s cut %d" % (src, cut))
        for i in range(12):
            d = bytearray(data)
            for _ in range(8):
                pos = rnd.randrange(0, min(len(d), 0x800)) if i % 2 else rnd.randrange(0xC000, len(d))
                d[pos] = rnd.randrange(256)
            ok &= no_crash(bytes(d), "%s flips %d" % (src, i))
    check(ok, "truncation and bit-flip sweep")


def main():
    names = sorted(f[:-len(".expected.json")] for f in os.listdir(GEN) if f.endswith(".expected.json"))
    check(len(names) >= 9, "generated fixture count", names)
    for name in names:
        exp = json.load(open(os.path.join(GEN, name + ".expected.json")))
        if "slices" in exp:
            for arch, thin in sorted(exp["slices"].items()):
                texp = json.load(open(os.path.join(GEN, thin + ".expected.json")))
                rc, got, err = fixups_of(os.path.join(GEN, name), arch)
                check(rc == 0 and got == texp["fixups"], "%s --arch %s" % (name, arch), err)
            rc, out, err = run([CLI, "macho", os.path.join(GEN, name), "--info", "--arch", "x86_64"])
            check(rc == 0 and "arch:        x86_64" in out, "fat64 LIB64 x86_64 slice selected", out + err)
            rc, out, err = run([CLI, "macho", os.path.join(GEN, name), "--info", "--arch", "arm64"])
            check(rc == 1 and "no arm64 slice" in err, "fat64 missing arch is an error", err)
            continue
        check_fixture(name, exp)
        if exp.get("llvm16"):
            check_llvm(name)
    malformed()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
