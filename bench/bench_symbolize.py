#!/usr/bin/python3
"""bench_symbolize.py — the cost of Mach-O file:line through llvm-symbolizer
(make bench-symbolize, mk/symbolize.mk).

Builds (into $BUILD/symbolize-bench) an arm64 executable with N functions that
each call malloc (clang++-14 -g, ld64.lld-14, dsymutil-14), writes a snapshot
whose stacks hold the N return addresses, then, interleaved, REPS times:
  names   `heapgraph stacks --json` with the image only (symbol table);
  lines   the same with --dsym: one llvm-symbolizer process for all N;
  per-address  llvm-symbolizer started once per address (what resolving
          frame by frame would cost), timed on SAMPLE addresses and scaled
          to N.
Prints medians and the ratios measured in the same run.
"""
import os
import re
import statistics
import subprocess
import sys
import time

BUILD = os.environ.get("BUILD", "build")
N = int(os.environ.get("SYM_BENCH_FUNCS", "2000"))
REPS = int(os.environ.get("SYM_BENCH_REPS", "5"))
SAMPLE = 40
OUT = os.path.join(BUILD, "symbolize-bench")
CLI = os.path.join(BUILD, "heapgraph")
MKSNAP = os.path.join(BUILD, "tests", "symbolize_mksnap")
SDK = "tests/macho/sdk"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw).stdout.decode()


def build():
    os.makedirs(OUT, exist_ok=True)
    src = os.path.join(OUT, "many.cpp")
    with open(src, "w") as f:
        f.write('extern "C" void *malloc(unsigned long);\nnamespace bench {\n')
        for i in range(N):
            f.write("void *site%d(unsigned long n) {\n  return malloc(n + %d);\n}\n" % (i, i))
        f.write("}\nint main() { return bench::site0(1) != 0; }\n")
    obj, exe = os.path.join(OUT, "many.o"), os.path.join(OUT, "Many")
    sh(["clang++-14", "-nostdinc++", "-fno-exceptions", "-O0", "-g", "-w", "--target=arm64-apple-macos11",
        "-c", src, "-o", obj])
    sh(["ld64.lld-14", "-platform_version", "macos", "11.0", "11.0", "-syslibroot", SDK, "-lSystem",
        "-arch", "arm64", "-o", exe, obj])
    sh(["rm", "-rf", exe + ".dSYM"])
    sh(["dsymutil-14", exe, "-o", exe + ".dSYM"])
    return exe


def main():
    exe = build()
    uuid = re.search(r"UUID: ([0-9A-F-]+)", sh(["llvm-dwarfdump-14", "--uuid", exe])).group(1).replace("-", "")
    dis = sh(["llvm-objdump-14", "-d", "--no-show-raw-insn", exe])
    insns = [(int(m.group(1), 16), m.group(2)) for m in re.finditer(r"^\s*([0-9a-f]+):\s+(\S+)", dis, re.M)]
    rets = [insns[i + 1][0] for i in range(len(insns) - 1) if insns[i][1] == "bl"]
    rets = rets[:64 * 32]
    snap = os.path.join(OUT, "many.hgsnap")
    cmd = [MKSNAP, snap, "-i", "/private/var/Many.app/Many", uuid.lower(), "100000000"]
    for k in range(0, len(rets), 32):
        cmd += ["-s", ",".join("0:%x" % (r - 0x100000000) for r in rets[k:k + 32])]
    sh(cmd)
    dwarf = os.path.join(exe + ".dSYM", "Contents", "Resources", "DWARF", "Many")
    names, lines, per = [], [], []
    for _ in range(REPS):
        t = time.perf_counter()
        out = sh([CLI, "stacks", snap, "--json", "--image-dir", OUT],  # no llvm-symbolizer: names only
                 env=dict(os.environ, HEAPGRAPH_LLVM_SYMBOLIZER=""))
        names.append(time.perf_counter() - t)
        t = time.perf_counter()
        out2 = sh([CLI, "stacks", snap, "--json", "--image-dir", OUT, "--dsym", exe + ".dSYM"])
        lines.append(time.perf_counter() - t)
        t = time.perf_counter()
        for r in rets[:SAMPLE]:
            sh(["llvm-symbolizer-14", "--obj=" + dwarf, "--no-inlines", "0x%x" % (r - 1)])
        per.append((time.perf_counter() - t) / SAMPLE * len(rets))
    assert out.count('"function":"') == len(rets) and '"function":null' not in out, "names missing"
    assert out2.count('"line":') == len(rets) and '"line":0' not in out2, "lines missing"
    mn, ml, mp = statistics.median(names), statistics.median(lines), statistics.median(per)
    print("bench-symbolize: %d Mach-O frames (arm64, %d functions), median of %d, interleaved" % (len(rets), N, REPS))
    print("  heapgraph stacks, names from the symbol table:        %8.1f ms" % (mn * 1e3))
    print("  heapgraph stacks, + file:line (1 llvm-symbolizer run): %8.1f ms  (%.2fx names only)" % (ml * 1e3, ml / mn))
    print("  llvm-symbolizer once per address (scaled from %d):    %8.1f ms  (%.1fx the batch)" % (SAMPLE, mp * 1e3, mp / ml))
    return 0


if __name__ == "__main__":
    sys.exit(main())
