#!/usr/bin/python3
"""check_symbolize.py — Mach-O frames symbolized by `heapgraph stacks` and
`show` (tools/symbolize_macho.c, machoparse/macho_symbols.c) on real Mach-O
files built by mk/symbolize.mk ($BUILD/symbolize), compared with LLVM's tools.

Snapshots (written by $BUILD/tests/symbolize_mksnap) hold stacks whose frames
are the return address of every call instruction llvm-objdump-14 finds in
the images (offsets from the load address = from __TEXT's vmaddr), and the
images under device paths that do not exist here (/private/var/...):
  1. names: with --image-dir and no dSYM, every frame prints the function
     llvm-symbolizer-14 names from the image's symbol table (C++ demangled,
     Mach-O's '_' dropped) and no file; frames outside any function (no image,
     past __text) print image + offset; arm64 and x86_64, executable and dylib
     (whose __TEXT is at 0);
  2. file:line: with the dSYM (a bundle, its DWARF file, a directory of
     bundles, or found next to the image), each frame's line is the one
     llvm-dwarfdump-14 --lookup gives for the call instruction, and is a line
     of sites.cpp marked "// CALL"; the text form prints "func (file:line)";
  3. a fat image and a fat dSYM: the slice whose LC_UUID is the snapshot's;
  4. LC_UUID mismatch (another build of the program, or a file without
     LC_UUID): no names from it, one line on stderr with both UUIDs; a dSYM
     of another build gives no lines;
  5. no llvm-symbolizer, or one that prints nonsense: names still print,
     one line on stderr, no crash;
  6. the same source as a Linux ELF program (the libdwfl path): the same
     demangled names and the same lines, inlined code included;
  7. hostile images: truncated at many sizes, symbol entries with names or
     sections out of range, a huge symbol count, random bytes in the symbol
     and string tables: the command exits 0 with valid JSON every time.
Prints "N passed, N failed" last.
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402  (tests/checks.py: run, check, summary)
from checks import check, summary  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CLI = os.path.join(BUILD, "heapgraph")
MKSNAP = os.path.join(BUILD, "tests", "symbolize_mksnap")
SYMBOL_AT = os.path.join(BUILD, "tests", "symbolize_symbol_at")
FIX = os.path.join(BUILD, "symbolize")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sites.cpp")


def run(cmd, env=None):
    return checks.run(cmd, env=env, timeout=300)


def uuid_of(path, arch):
    _, out, _ = run(["llvm-dwarfdump-14", "--uuid", path])
    for line in out.splitlines():
        m = re.match(r"UUID: ([0-9A-F-]+) \((\w+)\)", line)
        if m and m.group(2) == arch:
            return m.group(1).replace("-", "").lower()
    raise SystemExit("no UUID for %s %s" % (path, arch))


def text_vmaddr(path):
    _, out, _ = run(["llvm-objdump-14", "--macho", "--private-headers", path])
    m = re.search(r"segname __TEXT\n\s+vmaddr (0x[0-9a-f]+)", out)
    return int(m.group(1), 16)


def call_returns(path, only=None):
    """Return addresses of every call instruction in __text (in the
    functions `only` names, when given)."""
    _, out, _ = run(["llvm-objdump-14", "-d", "--no-show-raw-insn", path])
    insns, fn = [], None
    for line in out.splitlines():
        h = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if h:
            fn = h.group(1)
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), fn))
    return [insns[i + 1][0] for i in range(len(insns) - 1)
            if insns[i][1] in ("bl", "callq", "call") and (only is None or insns[i][2] in only)
            and insns[i + 1][2] == insns[i][2]]


def llvm_names(path, addrs):
    """llvm-symbolizer-14 on the image alone (its symbol table) at addr - 1."""
    inp = "".join("0x%x\n" % (a - 1) for a in addrs)
    p = subprocess.run(["llvm-symbolizer-14", "--obj=" + path, "--no-inlines"], input=inp.encode(),
                       stdout=subprocess.PIPE, check=True)
    blocks = p.stdout.decode().strip("\n").split("\n\n")
    return [b.split("\n")[0] for b in blocks]


def dwarf_line(dsym, addr, arch=None):
    cmd = ["llvm-dwarfdump-14", "--lookup=0x%x" % addr, dsym] + (["--arch=" + arch] if arch else [])
    _, out, _ = run(cmd)
    m = re.search(r"Line info: file '([^']*)', line (\d+)", out)
    if not m:
        return (None, 0)
    # inside inlined code: the call line of the outermost inlined subroutine
    # (its DIE comes first), the line in the function that holds the code
    inl = re.search(r"DW_TAG_inlined_subroutine(?:.|\n)*?DW_AT_call_line\s*\((\d+)\)", out)
    return (m.group(1), int(inl.group(1)) if inl else int(m.group(2)))


def marked_lines():
    return {i + 1 for i, l in enumerate(open(SRC)) if re.search(r"// CALL \w+$", l)}


def mksnap(path, images, stacks):
    cmd = [MKSNAP, path]
    for p, u, load in images:
        cmd += ["-i", p, u or "-", "%x" % load]
    for st in stacks:
        cmd += ["-s", ",".join("%s:%x" % ("-" if i is None else i, o) for i, o in st)]
    subprocess.run(cmd, check=True)


def chunks(frames, n=32):
    return [frames[i:i + n] for i in range(0, len(frames), n)] or [[]]


def stacks_json(snap, *opts, env=None):
    rc, out, err = run([CLI, "stacks", snap, "--json", "--by", "count"] + list(opts), env=env)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    frames = []
    if doc:
        for s in sorted(doc["stacks"], key=lambda s: s["id"]):
            frames += s["frames"]
    return rc, doc, frames, err


class Image:
    """One fixture image: path, arch, UUID, __TEXT vmaddr, call sites."""

    def __init__(self, name, arch):
        self.path = os.path.join(FIX, name)
        self.name, self.arch = name, arch
        self.uuid = uuid_of(self.path, arch)
        self.text = text_vmaddr(self.path)
        self.rets = call_returns(self.path)
        self.names = llvm_names(self.path, self.rets)
        self.device = "/private/var/containers/Bundle/Application/0F/App.app/" + name
        self.dsym = self.path + ".dSYM"
        self.dwarf = os.path.join(self.dsym, "Contents", "Resources", "DWARF", name)


def frames_of(img, index):
    return [(index, r - img.text) for r in img.rets]


def test_names_and_lines(tmp, nodsym):
    marks = marked_lines()
    for arch in ("arm64", "x86_64"):
        exe = Image("App-" + arch, arch)
        lib = Image("libsites-%s.dylib" % arch, arch)
        check(lib.text == 0 and exe.text == 0x100000000, arch + " __TEXT vmaddrs", (exe.text, lib.text))
        check(len(exe.rets) >= 8 and len(lib.rets) >= 7, arch + " call sites found", (exe.rets, lib.rets))
        extra = [(None, 0x7fff1234), (0, 0x3ff0)]  # no image; inside __TEXT, past every function
        snap = os.path.join(tmp, "names-%s.hgsnap" % arch)
        mksnap(snap, [(exe.device, exe.uuid, 0x104a88000), (lib.device, lib.uuid, 0x1050c0000)],
               chunks(frames_of(exe, 0) + frames_of(lib, 1)) + [extra])
        want = exe.names + lib.names
        n = len(want)
        # 1. names only (images without their dSYMs)
        rc, doc, fr, err = stacks_json(snap, "--image-dir", nodsym)
        got = [f["function"] for f in fr[:n]]
        check(rc == 0 and got == want, arch + " names = llvm-symbolizer's", list(zip(got, want)))
        check(all(f["file"] is None for f in fr), arch + " no file:line without a dSYM")
        check(all(w and not w.startswith("_") and "_Z" not in w for w in got) and
              "app::Cache::grow(unsigned long)" in got and "double* app::Cache::make<double>()" in got,
              arch + " demangled, '_' dropped", got)
        check([f["function"] for f in fr[n:]] == [None, None], arch + " frames outside functions", fr[n:])
        check(err == "", arch + " nothing on stderr", err)
        # 2. file:line from the dSYMs, found in a directory of bundles
        rc, doc, fr, err = stacks_json(snap, "--image-dir", nodsym, "--dsym", FIX)
        lines_ok, seen = [], set()
        for img, part in ((exe, fr[:len(exe.rets)]), (lib, fr[len(exe.rets):n])):
            for r, f in zip(img.rets, part):
                file, line = dwarf_line(img.dsym, r - 1)
                ok = f["file"] is not None and os.path.basename(f["file"]) == file and f["line"] == line
                lines_ok.append(ok and line in marks)
                seen.add(f["line"])
        check(rc == 0 and all(lines_ok) and len(lines_ok) == n, arch + " lines = llvm-dwarfdump --lookup's",
              list(zip(lines_ok, fr)))
        check(seen == marks, arch + " every // CALL line is hit", (sorted(seen), sorted(marks)))
        check([f["function"] for f in fr[:n]] == want, arch + " names unchanged with the dSYM")
        check(err == "", arch + " nothing on stderr (dSYM)", err)
        # the text form, through `show`
        rc, out, err = run([CLI, "show", snap, "#0", "--image-dir", nodsym, "--dsym", exe.dsym])
        f0, l0 = dwarf_line(exe.dsym, exe.rets[0] - 1)
        check(rc == 0 and re.search(r"^    %s \(\S*/%s:%d\)$" % (re.escape(exe.names[0]), f0, l0), out, re.M),
              arch + " show prints func (file:line)", out)
    return exe, lib


def test_elf(tmp):
    """The libdwfl path on the same source: names and lines as for Mach-O."""
    elf = os.path.join(FIX, "elf-sites")
    _, nm, _ = run(["llvm-nm-14", "--defined-only", elf])
    ours = {n for _, t, n in (l.split() for l in nm.splitlines() if len(l.split()) == 3)
            if t in "TtWw" and re.search(r"app|c_alloc|uses_inline|helper|^main$", n)}
    rets = call_returns(elf, ours)
    check(len(rets) >= 9, "ELF call sites", (rets, ours))
    _, notes, _ = run(["readelf", "-n", elf])
    bid = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    snap = os.path.join(tmp, "elf.hgsnap")
    mksnap(snap, [(os.path.abspath(elf), bid, 0)], chunks([(0, r) for r in rets]))
    rc, _, fr, err = stacks_json(snap)
    want = llvm_names(elf, rets)
    got = [f["function"] for f in fr]
    check(rc == 0 and got == want, "ELF names demangled = llvm-symbolizer's", list(zip(got, want)))
    lines = [f["line"] for f in fr]
    wl = [dwarf_line(elf, r - 1)[1] for r in rets]
    marks = marked_lines()
    check(lines == wl and set(lines) == marks, "ELF lines = llvm-dwarfdump's, inlined call on its caller's line",
          (lines, wl, sorted(marks)))


def test_symbol_at():
    """machoparse's macho_symbol_at() / iterator against llvm-nm-14."""
    for name in ("App-arm64", "App-x86_64", "libsites-arm64.dylib", "libsites-x86_64.dylib",
                 "App-arm64.dSYM/Contents/Resources/DWARF/App-arm64"):
        path = os.path.join(FIX, name)
        _, nm, _ = run(["llvm-nm-14", "-n", "--defined-only", path])
        syms = [(int(a, 16), t, n) for a, t, n in (l.split() for l in nm.splitlines())]
        text = [(a, n) for a, t, n in syms if t in "Tt" and n != "__mh_execute_header"]
        rets = call_returns(os.path.join(FIX, name.split(".dSYM")[0]))
        _, out, _ = run([SYMBOL_AT, path, "-"] + ["%x" % (r - 1) for r in rets] + ["0", "ffffffffffff"])
        lines = out.splitlines()
        want = []
        for r in rets:
            best = max((a, n) for a, n in text if a <= r - 1)
            want.append("%x %s %x" % (r - 1, best[1], best[0]))
        check(lines[:len(rets)] == want, name + ": macho_symbol_at = llvm-nm's nearest", list(zip(lines, want)))
        check(lines[len(rets):] == ["0 -", "ffffffffffff -", "symbols %d" % len(syms)],
              name + ": outside any section / symbol count", (lines[len(rets):], len(syms)))


def test_dsym_forms(tmp, nodsym, exe):
    snap = os.path.join(tmp, "forms.hgsnap")
    mksnap(snap, [(exe.device, exe.uuid, 0x100000000)], chunks(frames_of(exe, 0)))
    want = [dwarf_line(exe.dsym, r - 1)[1] for r in exe.rets]
    for what, opts in (("bundle", ["--dsym", exe.dsym]), ("DWARF file", ["--dsym", exe.dwarf]),
                       ("directory", ["--dsym", FIX]),
                       ("several --dsym", ["--dsym", os.path.join(FIX, "rebuilt"), "--dsym", exe.dsym]),
                       ("next to the image", [])):
        rc, _, fr, err = stacks_json(snap, "--image-dir", FIX if not opts else nodsym, *opts)
        check(rc == 0 and [f["line"] for f in fr] == want, "dSYM given as " + what, (fr, want, err))
    # the snapshot's own path, no options at all
    real = os.path.join(tmp, "real.hgsnap")
    mksnap(real, [(os.path.abspath(exe.path), exe.uuid, 0x100000000)], chunks(frames_of(exe, 0)))
    rc, _, fr, _ = stacks_json(real)
    check(rc == 0 and [f["function"] for f in fr] == exe.names and [f["line"] for f in fr] == want,
          "image at the snapshot's path, dSYM beside it", fr)


def test_fat(tmp):
    fat = os.path.join(FIX, "App-fat")
    fat_dsym = fat + ".dSYM"
    for arch in ("arm64", "x86_64"):
        thin = Image("App-" + arch, arch)
        u = uuid_of(fat, arch)
        check(u == thin.uuid, "fat %s slice is the thin build" % arch)
        snap = os.path.join(tmp, "fat-%s.hgsnap" % arch)
        mksnap(snap, [("/Applications/App.app/App-fat", u, 0x100000000)], chunks(frames_of(thin, 0)))
        rc, _, fr, err = stacks_json(snap, "--image-dir", FIX, "--dsym", fat_dsym)
        want = [dwarf_line(fat_dsym, r - 1, arch)[1] for r in thin.rets]
        check(rc == 0 and [f["function"] for f in fr] == thin.names, "fat image, %s slice names" % arch, fr)
        check([f["line"] for f in fr] == want and all(want), "fat dSYM, %s slice lines" % arch, (fr, want, err))


def test_mismatch(tmp, nodsym, exe):
    snap = os.path.join(tmp, "mismatch.hgsnap")
    mksnap(snap, [(exe.device, exe.uuid, 0x100000000)], chunks(frames_of(exe, 0)) * 3)
    other = uuid_of(os.path.join(FIX, "rebuilt", exe.name), "arm64")
    check(other != exe.uuid, "the rebuilt program has another LC_UUID")
    rc, out, err = run([CLI, "stacks", snap, "--image-dir", os.path.join(FIX, "rebuilt")])
    frames = [l.strip() for l in out.splitlines() if l.startswith("    ")]
    check(rc == 0 and frames and all(re.fullmatch(r"App-arm64\+0x[0-9a-f]+", f) for f in frames),
          "mismatched image: image + offset only", out)
    check(err.count("\n") == 1 and other in err and exe.uuid in err and "LC_UUID" in err,
          "mismatch said once on stderr, with both UUIDs", err)
    rc, _, fr, err = stacks_json(snap, "--image-dir", nodsym, "--dsym", os.path.join(FIX, "rebuilt", exe.name + ".dSYM"))
    check(rc == 0 and all(f["function"] and f["file"] is None for f in fr), "dSYM of another build: no lines", fr)
    # an image file without LC_UUID (its load command renamed) is another build too
    data = bytearray(open(exe.path, "rb").read())
    ncmds, at = struct.unpack_from("<I", data, 16)[0], 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 0x1b:  # LC_UUID
            struct.pack_into("<I", data, at, 0x7ffffff0)
        at += size
    d = os.path.join(tmp, "no-uuid")
    os.makedirs(d)
    with open(os.path.join(d, exe.name), "wb") as f:
        f.write(data)
    rc, out, err = run([CLI, "stacks", snap, "--image-dir", d])
    frames = [l.strip() for l in out.splitlines() if l.startswith("    ")]
    check(rc == 0 and frames and all(re.fullmatch(r"App-arm64\+0x[0-9a-f]+", f) for f in frames) and
          err.count("\n") == 1 and "has no LC_UUID" in err, "image without LC_UUID: not used, said once", err)
    # no UUID in the snapshot: a dSYM is never guessed
    snap2 = os.path.join(tmp, "nouuid.hgsnap")
    mksnap(snap2, [(exe.device, None, 0x100000000)], chunks(frames_of(exe, 0)))
    rc, _, fr, err = stacks_json(snap2, "--image-dir", os.path.join(FIX, "rebuilt"), "--dsym", FIX)
    check(rc == 0 and all(f["file"] is None for f in fr), "no snapshot UUID: no dSYM used", fr)


def test_no_symbolizer(tmp, nodsym, exe):
    snap = os.path.join(tmp, "nosym.hgsnap")
    mksnap(snap, [(exe.device, exe.uuid, 0x100000000)], chunks(frames_of(exe, 0)))
    env = dict(os.environ, HEAPGRAPH_LLVM_SYMBOLIZER="")
    rc, _, fr, err = stacks_json(snap, "--image-dir", nodsym, "--dsym", exe.dsym, env=env)
    check(rc == 0 and [f["function"] for f in fr] == exe.names and all(f["file"] is None for f in fr),
          "no llvm-symbolizer: names, no lines", fr)
    check(err.count("\n") == 1 and "HEAPGRAPH_LLVM_SYMBOLIZER is empty" in err, "no llvm-symbolizer said once", err)
    env = dict(os.environ, PATH=os.path.join(tmp, "empty-path"))
    env.pop("HEAPGRAPH_LLVM_SYMBOLIZER", None)
    rc, _, fr, err = stacks_json(snap, "--image-dir", nodsym, "--dsym", exe.dsym, env=env)
    check(rc == 0 and all(f["function"] and f["file"] is None for f in fr) and "no llvm-symbolizer on PATH" in err,
          "llvm-symbolizer not on PATH: names, said", err)
    fake = os.path.join(tmp, "fake-symbolizer")
    with open(fake, "w") as f:  # answers out of step, bad numbers, a huge line
        f.write("#!/bin/sh\ncat >/dev/null\nprintf 'x\\n::\\n\\n??\\nfoo:-3:0\\n\\nf\\n%%s:99999999999:1\\nzz\\n' "
                "\"$(head -c 100000 /dev/zero | tr '\\\\0' a)\"\n")
    os.chmod(fake, 0o755)
    env = dict(os.environ, HEAPGRAPH_LLVM_SYMBOLIZER=fake)
    rc, _, fr, err = stacks_json(snap, "--image-dir", nodsym, "--dsym", exe.dsym, env=env)
    check(rc == 0 and [f["function"] for f in fr] == exe.names, "nonsense from the symbolizer: no crash", (rc, err))
    fail = os.path.join(tmp, "failing-symbolizer")
    with open(fail, "w") as f:
        f.write("#!/bin/sh\nexit 3\n")
    os.chmod(fail, 0o755)
    env = dict(os.environ, HEAPGRAPH_LLVM_SYMBOLIZER=fail)
    rc, _, fr, err = stacks_json(snap, "--image-dir", nodsym, "--dsym", exe.dsym, env=env)
    check(rc == 0 and all(f["file"] is None for f in fr) and "failed" in err, "failing symbolizer said", err)


def symtab_of(data):
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == 2:
            return at
        at += size
    raise SystemExit("no LC_SYMTAB")


def test_hostile(tmp, exe):
    data = bytearray(open(exe.path, "rb").read())
    lc = symtab_of(data)
    symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", data, lc + 8)
    snap = os.path.join(tmp, "hostile.hgsnap")
    d = os.path.join(tmp, "hostile")
    os.makedirs(d, exist_ok=True)
    mksnap(snap, [(exe.device, exe.uuid, 0x100000000)], chunks(frames_of(exe, 0)))
    variants = []
    for cut in sorted({4, 31, 32, 100, lc + 8, symoff, symoff + 7, symoff + 16 * nsyms // 2, stroff, stroff + 3,
                       len(data) - 1}):
        variants.append(("truncated at %d" % cut, bytes(data[:cut])))

    def patched(what, fn):
        b = bytearray(data)
        fn(b)
        variants.append((what, bytes(b)))

    def each_sym(b, off, fmt, v):
        for i in range(nsyms):
            struct.pack_into(fmt, b, symoff + 16 * i + off, v)

    patched("names past the string table", lambda b: each_sym(b, 0, "<I", 0xfffffff0))
    patched("name index = string table size", lambda b: each_sym(b, 0, "<I", strsize))
    patched("sections out of range", lambda b: each_sym(b, 5, "<B", 200))
    patched("huge symbol count", lambda b: struct.pack_into("<I", b, lc + 12, 0x0fffffff))
    patched("symbol table past the end", lambda b: struct.pack_into("<I", b, lc + 8, len(data) - 8))
    patched("string table unterminated", lambda b: b.__setitem__(slice(stroff, stroff + strsize), b"A" * strsize))
    patched("addresses far away", lambda b: each_sym(b, 8, "<Q", 0xffffffffffffff00))
    rnd = random.Random(17)
    for k in range(12):
        def flip(b, k=k):
            for _ in range(40):
                i = rnd.randrange(symoff, stroff + strsize)
                b[i] = rnd.randrange(256)
        patched("random bytes in the symbol/string tables #%d" % k, flip)
    bad = 0
    for what, blob in variants:
        with open(os.path.join(d, exe.name), "wb") as f:
            f.write(blob)
        rc, doc, fr, err = stacks_json(snap, "--image-dir", d)
        if rc != 0 or doc is None or len(fr) != len(exe.rets) or "Sanitizer" in err or "runtime error" in err:
            bad += 1
            print("FAIL hostile image (%s): rc %d, %s" % (what, rc, err[:500]))
    check(bad == 0, "hostile images: exit 0 and valid JSON (%d variants)" % len(variants))
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)  # an image path that would block an open() for reading
    snap2 = os.path.join(tmp, "fifo.hgsnap")
    mksnap(snap2, [(fifo, exe.uuid, 0), (fifo, None, 0)], [[(0, 0x10), (1, 0x20)]])
    rc, doc, fr, err = stacks_json(snap2, "--image-dir", tmp, "--dsym", fifo)
    check(rc == 0 and len(fr) == 2 and not any(f["function"] for f in fr), "a FIFO as image or dSYM: no hang", err)


def test_viewer(tmp, nodsym, exe):
    """`view --dsym/--image-dir`: /api/show's stack equals `show --json`'s."""
    snap = os.path.join(tmp, "viewer.hgsnap")
    mksnap(snap, [(exe.device, exe.uuid, 0x104a88000)], chunks(frames_of(exe, 0)))
    opts = ["--image-dir", nodsym, "--dsym", exe.dsym]
    rc, out, err = run([CLI, "show", snap, "#0", "--json"] + opts)
    want = json.loads(out)["node"]["stack"] if rc == 0 else None
    p = subprocess.Popen([CLI, "view", snap, "--no-open"] + opts, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        url = p.stdout.readline().strip()
        base, _, query = url.partition("?")
        base = base.rstrip("/")
        import urllib.request
        got = None
        with urllib.request.urlopen("%s/api/show?node=%%230&%s" % (base, query), timeout=60) as r:
            got = json.loads(r.read())["node"]["stack"]
        check(want is not None and want["frames"][0]["file"] is not None and got == want,
              "view --dsym: /api/show's stack = show --json's (file:line from the dSYM)", (got, want))
    finally:
        p.terminate()
        p.wait(timeout=30)


def main():
    tmp = tempfile.mkdtemp(prefix="hg_symbolize.")
    try:
        nodsym = os.path.join(tmp, "images")  # the images without their dSYMs
        os.makedirs(nodsym)
        for n in os.listdir(FIX):
            p = os.path.join(FIX, n)
            if os.path.isfile(p) and not n.endswith(".o") and not n.startswith("."):
                shutil.copy(p, nodsym)
        test_symbol_at()
        exe, _ = test_names_and_lines(tmp, nodsym)
        exe = Image("App-arm64", "arm64")
        test_dsym_forms(tmp, nodsym, exe)
        test_fat(tmp)
        test_mismatch(tmp, nodsym, exe)
        test_no_symbolizer(tmp, nodsym, exe)
        test_hostile(tmp, exe)
        test_viewer(tmp, nodsym, exe)
        test_elf(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
