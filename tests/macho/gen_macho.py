#!/usr/bin/python3
"""gen_macho.py — writes byte-level Mach-O fixtures for fixup formats lld cannot
emit, each with the fixups it contains known by construction.

    gen_macho.py OUTDIR

For every fixture NAME it writes OUTDIR/NAME (the Mach-O, thin or fat) and
OUTDIR/NAME.expected.json: {"arch": …, "fixups": [...], "typeinfo": [...]} in
the shape `heapgraph macho --json` prints (check_generated.py compares them).

Covered: chained pointer formats 64 (2), 64_OFFSET (6), ARM64E (1),
ARM64E_USERLAND (9), ARM64E_USERLAND24 (12), auth and plain; imports formats
IMPORT, ADDEND, ADDEND64 (addends combined with inline pointer addends);
special ordinals; weak imports; MULTI page starts; several pages; old arm64e
BIND_OPCODE_THREADED binds with an ordinal table; FAT_MAGIC_64 with an
x86_64 slice whose cpusubtype carries the LIB64 flag.
"""
import json
import os
import struct
import sys

BASE = 0x100000000
PAGE = 0x4000
CPU_ARM64, CPU_X86_64 = 0x0100000C, 0x01000007
LIBS = ["/usr/lib/libSystem.B.dylib", "/usr/lib/libc++abi.dylib",
        "/System/Library/Frameworks/Foundation.framework/Versions/C/Foundation"]
SHORT = {1: "libSystem", 2: "libc++abi", 3: "Foundation", 0: "this-image",
         -1: "main-executable", -2: "flat-namespace", -3: "weak"}
VT = {"class": "__ZTVN10__cxxabiv117__class_type_infoE",
      "si_class": "__ZTVN10__cxxabiv120__si_class_type_infoE",
      "vmi_class": "__ZTVN10__cxxabiv121__vmi_class_type_infoE",
      "pointer": "__ZTVN10__cxxabiv119__pointer_type_infoE",
      "function": "__ZTVN10__cxxabiv120__function_type_infoE"}


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def sleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if (v == 0 and not b & 0x40) or (v == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def pad(b, n):
    return b + b"\0" * ((-len(b)) % n)


class Image:
    """A two-data-page image: __TEXT (header, __text, __cstring), __DATA
    (__const, __data; 2 pages), __LINKEDIT."""

    def __init__(self, cputype, subtype):
        self.cputype, self.subtype = cputype, subtype
        self.cstring = bytearray()
        self.data = bytearray(2 * PAGE)   # __DATA contents
        self.text_size = PAGE
        self.data_vm = BASE + PAGE
        self.slots = {}                   # data offset -> spec
        self.typeinfo = []

    def string(self, s):
        off = len(self.cstring)
        self.cstring += s.encode() + b"\0"
        return BASE + 0x1000 + off        # __cstring lives at text + 0x1000

    def add(self, off, spec):
        assert off not in self.slots and off % 4 == 0
        self.slots[off] = spec

    def add_typeinfo(self, off, kind, mangled, non_unique, base_ti=None, addend_via=None):
        """A type_info at data offset off: bind to the cxxabi vtable (+16),
        name pointer (bit 63 when non_unique), optional base pointer."""
        self.add(off, {"bind": VT[kind], "ordinal": 2, "addend": 16, "via": addend_via})
        name = self.string(mangled)
        self.add(off + 8, {"rebase": name, "high8": 0x80 if non_unique else 0})
        if base_ti is not None:
            self.add(off + 16, {"rebase": self.data_vm + base_ti, "high8": 0})
        self.typeinfo.append({"vmaddr": self.data_vm + off, "kind": kind, "mangled": mangled,
                              "non_unique": non_unique})

    # ---- layout ----
    def build(self, linkedit, info_cmd, filetype=6):
        """linkedit: bytes; info_cmd: function(linkedit_fileoff) -> load command bytes."""
        cmds = []
        text_sects = [(b"__text", b"__TEXT", BASE + 0x800, 0x100, 0x800),
                      (b"__cstring", b"__TEXT", BASE + 0x1000, len(self.cstring), 0x1000)]
        data_sects = [(b"__const", b"__DATA", self.data_vm, PAGE, PAGE),
                      (b"__data", b"__DATA", self.data_vm + PAGE, PAGE, 2 * PAGE)]
        le_off = 3 * PAGE

        def seg(name, vm, vms, fo, fs, sects, prot):
            c = struct.pack("<II16sQQQQIIII", 0x19, 72 + 80 * len(sects), name, vm, vms, fo, fs,
                            prot, prot, len(sects), 0)
            for sn, sg, addr, size, off in sects:
                c += struct.pack("<16s16sQQIIIIIIII", sn, sg, addr, size, off, 3, 0, 0, 0, 0, 0, 0)
            return c

        cmds.append(seg(b"__TEXT", BASE, PAGE, 0, PAGE, text_sects, 5))
        cmds.append(seg(b"__DATA", self.data_vm, 2 * PAGE, PAGE, 2 * PAGE, data_sects, 3))
        cmds.append(seg(b"__LINKEDIT", BASE + le_off, PAGE, le_off, len(linkedit), [], 1))
        name = pad(b"@rpath/libgen.dylib\0", 8)
        cmds.append(struct.pack("<IIIIII", 0xD, 24 + len(name), 24, 2, 0x10000, 0x10000) + name)
        for lib in LIBS:
            n = pad(lib.encode() + b"\0", 8)
            cmds.append(struct.pack("<IIIIII", 0xC, 24 + len(n), 24, 2, 0x10000, 0x10000) + n)
        cmds.append(struct.pack("<II16s", 0x1B, 24, bytes(range(16))))
        cmds.append(struct.pack("<IIIIII", 0x32, 24, 1, 0x0C0000, 0x0D0000, 0))
        cmds.append(info_cmd(le_off))
        lc = b"".join(cmds)
        hdr = struct.pack("<IIIIIIII", 0xFEEDFACF, self.cputype, self.subtype, filetype, len(cmds),
                          len(lc), 0x85, 0)
        text = bytearray(PAGE)
        text[:len(hdr) + len(lc)] = hdr + lc
        assert len(hdr) + len(lc) <= 0x800
        text[0x1000:0x1000 + len(self.cstring)] = self.cstring
        return bytes(text) + bytes(self.data) + linkedit

    def section_of(self, off):
        return "__const" if off < PAGE else "__data"


# ---------------------------------------------------------------- chained

def enc_chained(fmt, spec, next_units, import_index, base):
    if fmt in (2, 6):
        if "bind" in spec:
            assert 0 <= spec["paddend"] < 256
            return import_index | spec["paddend"] << 24 | next_units << 51 | 1 << 63
        t = spec["rebase"] - (base if fmt == 6 else 0)
        assert 0 <= t < 1 << 36
        return t | spec["high8"] << 36 | next_units << 51
    auth = spec.get("auth")
    if "bind" in spec:
        v = import_index | next_units << 51 | 1 << 62
        if auth:
            key, div, addr = auth
            return v | div << 32 | addr << 48 | key << 49 | 1 << 63
        return v | (spec["paddend"] & 0x7FFFF) << 32
    if auth:
        key, div, addr = auth
        return (spec["rebase"] - base) | div << 32 | addr << 48 | key << 49 | next_units << 51 | 1 << 63
    t = spec["rebase"] - (0 if fmt == 1 else base)
    assert 0 <= t < 1 << 43
    return t | spec["high8"] << 43 | next_units << 51


def write_chains(img, fmt, imports, multi_page=None):
    """Encodes every slot of img into img.data as chains; returns the
    starts_in_segment bytes for __DATA (2 pages)."""
    stride = 4 if fmt in (2, 6) else 8
    pages = {0: [], 1: []}
    for off in sorted(img.slots):
        pages[off // PAGE].append(off)
    starts, overflow = [], []
    for p in (0, 1):
        offs = pages[p]
        if not offs:
            starts.append(0xFFFF)
            continue
        chains = [offs]
        if multi_page == p and len(offs) >= 2:   # split into two chains with a MULTI start
            half = len(offs) // 2
            chains = [offs[:half], offs[half:]]
        for chain in chains:
            for i, off in enumerate(chain):
                nxt = (chain[i + 1] - off) // stride if i + 1 < len(chain) else 0
                assert nxt < (1 << (12 if stride == 4 else 11))
                spec = img.slots[off]
                idx = imports.index(spec["import"]) if "bind" in spec else 0
                v = enc_chained(fmt, spec, nxt, idx, BASE)
                struct.pack_into("<Q", img.data, off, v)
        if len(chains) == 1:
            starts.append(offs[0] % PAGE)
        else:
            starts.append(0x8000 | (2 + len(overflow)))
            overflow += [chains[0][0] % PAGE, 0x8000 | (chains[1][0] % PAGE)]
    arr = starts + overflow
    size = 22 + 2 * len(arr)
    return struct.pack("<IHHQIH", size, PAGE, fmt, PAGE, 0, 2) + struct.pack("<%dH" % len(arr), *arr)


def chained_blob(img, fmt, imports_format, imports, multi_page=None):
    seg_starts = write_chains(img, fmt, imports, multi_page)
    # starts_in_image: 3 segments; only __DATA (1) has fixups.
    sii = struct.pack("<IIII", 3, 0, 16, 0)
    starts = pad(sii + seg_starts, 4)
    syms = bytearray(b"\0")
    ient = bytearray()
    for name, ordinal, weak, addend in imports:
        noff = len(syms)
        syms += name.encode() + b"\0"
        if imports_format == 3:
            ient += struct.pack("<QQ", (ordinal & 0xFFFF) | weak << 16 | noff << 32, addend & (2**64 - 1))
        else:
            v = (ordinal & 0xFF) | weak << 8 | noff << 9
            ient += struct.pack("<I", v)
            if imports_format == 2:
                ient += struct.pack("<i", addend)
    starts_off = 32
    imports_off = starts_off + len(starts)
    symbols_off = imports_off + len(ient)
    hdr = struct.pack("<IIIIIII", 0, starts_off, imports_off, symbols_off, len(imports), imports_format, 0)
    return pad(pad(hdr, 8) + starts + ient + syms, 8)


def expected_fixups(img, fmt, imports_format):
    out = []
    for off in sorted(img.slots):
        spec = img.slots[off]
        e = {"kind": "bind" if "bind" in spec else "rebase", "segment": "__DATA",
             "section": img.section_of(off), "vmaddr": img.data_vm + off}
        if "bind" in spec:
            name, ordinal, weak, iadd = spec["import"]
            e.update(ordinal=ordinal, dylib=SHORT[ordinal], symbol=name,
                     addend=iadd + (0 if spec.get("auth") else spec["paddend"]),
                     weak_import=bool(weak))
        else:
            e["target"] = spec["rebase"] | spec["high8"] << 56 if not spec.get("auth") else spec["rebase"]
        if spec.get("auth"):
            key, div, addr = spec["auth"]
            e["auth"] = {"key": key, "diversity": div, "addr_div": bool(addr)}
        out.append(e)
    return out


def populate(img, fmt, imports_format, auth_ok, mixed_addend=True):
    """Fills img with type_infos, plain rebases and binds; returns imports."""
    imports = []

    def imp(name, ordinal, weak=0, addend=0):
        t = (name, ordinal, weak, addend)
        if t not in imports:
            imports.append(t)
        return t

    max_paddend = 255 if fmt in (2, 6) else 0x3FFFF
    # type_infos in __const: import addend or pointer addend carries the 16.
    kinds = [("class", "4Base", True, None), ("si_class", "7Derived", False, 0),
             ("vmi_class", "5Multi", True, 0), ("class", "5Other", False, None),
             ("pointer", "P4Base", False, None), ("function", "FivE", False, None)]
    for i, (kind, mangled, nu, base) in enumerate(kinds):
        off = 0x100 + i * 0x20
        via_import = imports_format != 1 and i % 2 == 1
        t = imp(VT[kind], 2, 0, 16 if via_import else 0)
        img.add_typeinfo(off, kind, mangled, nu, base_ti=None if base is None else 0x100)
        img.slots[off] = {"bind": VT[kind], "import": t, "paddend": 0 if via_import else 16}
    # Plain binds with special ordinals, weak import, addends.
    specials = [(0x400, "_puts", 1, 0, 0, 0), (0x408, "_malloc", 1, 1, 0, 0),
                (0x410, "_flat", -2, 0, 0, 8), (0x418, "_mainsym", -1, 0, 0, 0),
                (0x420, "_weaksym", -3, 0, 0, 0), (0x428, "_OBJC_CLASS_$_NSObject", 3, 0, 0, 0)]
    if imports_format == 2:
        specials.append((0x430, "_negadd", 1, 0, -24, 4 if mixed_addend else 0))
    if imports_format == 3:
        specials.append((0x430, "_bigadd", 1, 0, 0x123456789A, 0))
        specials.append((0x438, "_negbig", 2, 1, -0x100000000, 0))
    for off, name, ordinal, weak, iadd, padd in specials:
        t = imp(name, ordinal, weak, iadd)
        assert padd <= max_paddend
        img.add(off, {"bind": name, "import": t, "paddend": padd})
    if fmt not in (2, 6):
        t = imp("_negptr", 1, 0, 0)
        img.add(0x440, {"bind": "_negptr", "import": t, "paddend": -5 & 0x7FFFF})
        img.slots[0x440]["paddend_signed"] = -5
    # Rebases to text / data.
    img.add(0x500, {"rebase": BASE + 0x800, "high8": 0})
    img.add(0x508, {"rebase": img.data_vm + 0x100, "high8": 0x12})
    # Second page: a run of rebases and binds (MULTI start splits it).
    for k in range(6):
        off = PAGE + 0x40 + k * 0x18
        if k % 2:
            t = imp("_free", 1)
            img.add(off, {"bind": "_free", "import": t, "paddend": k})
        else:
            img.add(off, {"rebase": img.data_vm + PAGE + k, "high8": 0})
    if auth_ok:
        t = imp("_authfn", 1)
        img.add(0x600, {"bind": "_authfn", "import": t, "paddend": 0, "auth": (0, 0x1234, 1)})
        img.add(0x608, {"rebase": BASE + 0x840, "high8": 0, "auth": (2, 0xBEEF, 0)})
        img.add(PAGE + 0x200, {"rebase": img.data_vm + 8, "high8": 0, "auth": (3, 7, 1)})
    return imports


def make_chained(name, cputype, sub, fmt, imports_format, multi_page=None, llvm=False):
    img = Image(cputype, sub)
    imports = populate(img, fmt, imports_format, auth_ok=fmt in (1, 9, 12), mixed_addend=not llvm)
    blob = chained_blob(img, fmt, imports_format, imports, multi_page)
    linkedit = pad(blob, 8)

    def cmd(le_off):
        return struct.pack("<IIII", 0x80000034, 16, le_off, len(blob))

    macho = img.build(linkedit, cmd)
    exp = expected_fixups(img, fmt, imports_format)
    for e, off in zip(exp, sorted(img.slots)):
        s = img.slots[off]
        if "paddend_signed" in s:
            e["addend"] = s["import"][3] + s["paddend_signed"]
    return macho, exp, img.typeinfo


# ---------------------------------------------------------------- threaded

def make_threaded(name):
    """Old arm64e: LC_DYLD_INFO_ONLY whose bind stream has an ordinal table
    and one THREADED_APPLY chain over __DATA (ARM64E pointer layout)."""
    img = Image(CPU_ARM64, 2)
    table = []   # (symbol, ordinal, addend, flags)

    def ent(sym, ordinal, addend=0, flags=0):
        t = (sym, ordinal, addend, flags)
        if t not in table:
            table.append(t)
        return table.index(t)

    kinds = [("class", "4Base", True), ("si_class", "7Derived", False), ("vmi_class", "5Multi", False)]
    for i, (kind, mangled, nu) in enumerate(kinds):
        off = 0x100 + i * 0x20
        img.add_typeinfo(off, kind, mangled, nu)
        img.slots[off] = {"bind": VT[kind], "t": ent(VT[kind], 2, 16 if i == 1 else 0),
                          "paddend": 0 if i == 1 else 16}
    img.add(0x300, {"bind": "_puts", "t": ent("_puts", 1), "paddend": 0})
    img.add(0x308, {"bind": "_weakimp", "t": ent("_weakimp", 1, 0, 1), "paddend": 3})
    img.add(0x310, {"bind": "_authfn", "t": ent("_authfn", 3, 0), "paddend": 0, "auth": (1, 0x55, 1)})
    img.add(0x318, {"rebase": BASE + 0x900, "high8": 0})
    img.add(0x320, {"rebase": BASE + 0x904, "high8": 0, "auth": (0, 9, 0)})
    img.add(PAGE + 0x10, {"rebase": img.data_vm, "high8": 0})
    img.add(PAGE + 0x18, {"bind": "_free", "t": ent("_free", -2, -8), "paddend": 0})
    offs = sorted(img.slots)
    for i, off in enumerate(offs):
        nxt = (offs[i + 1] - off) // 8 if i + 1 < len(offs) else 0
        spec = img.slots[off]
        v = enc_chained(1, spec, nxt, spec.get("t", 0), BASE)
        struct.pack_into("<Q", img.data, off, v)
    op = bytearray()
    op += bytes([0xD0]) + uleb(len(table))
    for sym, ordinal, addend, flags in table:
        op += bytes([0x40 | flags]) + sym.encode() + b"\0"
        op += bytes([0x30 | (ordinal & 0xF)]) if ordinal <= 0 else bytes([0x10 | ordinal])
        op += bytes([0x60]) + sleb(addend)
        op += bytes([0x51, 0x90])
    op += bytes([0x71]) + uleb(offs[0]) + bytes([0xD1, 0x00])
    bind = pad(bytes(op), 8)

    def cmd(le_off):
        return struct.pack("<IIIIIIIIIIII", 0x80000022, 48, 0, 0, le_off, len(bind), 0, 0, 0, 0, 0, 0)

    macho = img.build(bind, cmd)
    exp = []
    for off in offs:
        spec = img.slots[off]
        e = {"kind": "bind" if "bind" in spec else "rebase", "segment": "__DATA",
             "section": img.section_of(off), "vmaddr": img.data_vm + off}
        if "bind" in spec:
            sym, ordinal, addend, flags = table[spec["t"]]
            e.update(ordinal=ordinal, dylib=SHORT[ordinal], symbol=sym,
                     addend=addend + (0 if spec.get("auth") else spec["paddend"]),
                     weak_import=bool(flags & 1))
        else:
            e["target"] = spec["rebase"] | (spec["high8"] << 56 if not spec.get("auth") else 0)
        if spec.get("auth"):
            key, div, addr = spec["auth"]
            e["auth"] = {"key": key, "diversity": div, "addr_div": bool(addr)}
        exp.append(e)
    return macho, exp, img.typeinfo


def fat64(slices):
    """slices: list of (cputype, cpusubtype-in-fat-header, bytes)."""
    hdr = struct.pack(">II", 0xCAFEBABF, len(slices))
    off = 0x4000
    ents, body = b"", b""
    for cputype, sub, data in slices:
        ents += struct.pack(">IIQQII", cputype, sub, off + len(body), len(data), 14, 0)
        body += pad(data, 0x4000)
    return pad(hdr + ents, 0x4000) + body


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # name: cputype, cpusubtype, pointer format, imports format, MULTI page,
    # llvm-objdump-16 can decode it too (no MULTI, no ADDEND64, no addend in
    # both the import and the pointer: llvm-16 keeps only one of them).
    fixtures = {
        "gen_ptr64_import": (CPU_X86_64, 3, 2, 1, None, True),
        "gen_ptr64_addend": (CPU_ARM64, 0, 2, 2, 1, False),
        "gen_ptr64off_import": (CPU_ARM64, 0, 6, 1, None, True),
        "gen_ptr64off_addend": (CPU_X86_64, 3, 6, 2, None, True),
        "gen_ptr64off_addend64": (CPU_ARM64, 0, 6, 3, 0, False),
        "gen_arm64e_import": (CPU_ARM64, 0x80000002, 1, 1, 1, False),
        "gen_arm64e_user_addend": (CPU_ARM64, 0x80000002, 9, 2, 0, False),
        "gen_arm64e_user24_addend64": (CPU_ARM64, 0x80000002, 12, 3, 1, False),
    }
    built = {}
    oracle = {}
    for name, (cpu, sub, fmt, ifmt, multi, llvm) in fixtures.items():
        macho, exp, ti = make_chained(name, cpu, sub, fmt, ifmt, multi, llvm)
        built[name] = (cpu, sub, macho, exp, ti)
        oracle[name] = llvm
    macho, exp, ti = make_threaded("gen_threaded")
    built["gen_threaded"] = (CPU_ARM64, 2, macho, exp, ti)
    arch_of = {(CPU_X86_64, 3): "x86_64", (CPU_ARM64, 0): "arm64", (CPU_ARM64, 0x80000002): "arm64e",
               (CPU_ARM64, 2): "arm64e"}
    for name, (cpu, sub, macho, exp, ti) in built.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(macho)
        with open(os.path.join(out, name + ".expected.json"), "w") as f:
            json.dump({"arch": arch_of[(cpu, sub)], "llvm16": oracle.get(name, False),
                       "fixups": exp, "typeinfo": ti}, f, indent=1)
    # Fat64: x86_64 slice with the LIB64 capability bit, and an arm64e slice.
    a = built["gen_ptr64_import"]
    b = built["gen_arm64e_import"]
    with open(os.path.join(out, "gen_fat64"), "wb") as f:
        f.write(fat64([(CPU_X86_64, 0x80000003, a[2]), (CPU_ARM64, 0x80000002, b[2])]))
    with open(os.path.join(out, "gen_fat64.expected.json"), "w") as f:
        json.dump({"slices": {"x86_64": "gen_ptr64_import", "arm64e": "gen_arm64e_import"}}, f)


if __name__ == "__main__":
    main()
