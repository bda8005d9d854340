#!/usr/bin/python3
"""check_fixtures.py — `heapgraph macho` against llvm-objdump on real Mach-O
files built by mk/macho.mk ($BUILD/macho-fixtures).

For every fixture (and every slice of the fat ones):
  - LC_DYLD_INFO files: --bind, --lazy-bind, --weak-bind, --rebase output is
    byte-identical to llvm-objdump-14 --macho --bind (etc.);
  - every file: --chained-fixups output is byte-identical to llvm-objdump-16
    --macho --dyld-info (the chained binds and rebases);
  - --typeinfo lists exactly the classes tests/macho/classes.expected names.
Prints "N passed, N failed" last.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402  (tests/checks.py: run, check, summary)
from checks import check, summary  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CLI = os.path.join(BUILD, "heapgraph")
FIX = os.path.join(BUILD, "macho-fixtures")
HERE = os.path.dirname(os.path.abspath(__file__))


run = checks.run  # no time limit here


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i in range(max(len(al), len(bl))):
        x = al[i] if i < len(al) else "<eof>"
        y = bl[i] if i < len(bl) else "<eof>"
        if x != y:
            return "line %d:\n  ours: %r\n  llvm: %r" % (i + 1, x, y)
    return ""


def main():
    expected = set(l.strip() for l in open(os.path.join(HERE, "classes.expected")) if l.strip())
    files = sorted(f for f in os.listdir(FIX)
                   if os.path.isfile(os.path.join(FIX, f)) and not f.endswith(".o") and not f.startswith("."))
    check(len(files) >= 16, "fixture count", str(files))
    for name in files:
        path = os.path.join(FIX, name)
        archs = [["--arch", "arm64"], ["--arch", "x86_64"]] if name.startswith("fat") else [[]]
        for arch in archs:
            tag = name + (" " + arch[1] if arch else "")
            if "chained" not in name:
                for table in ("bind", "lazy-bind", "weak-bind", "rebase"):
                    rc1, ours, err = run([CLI, "macho", path, "--" + table] + arch)
                    rc2, ref, _ = run(["llvm-objdump-14", "--macho", "--" + table] + arch + [path])
                    check(rc1 == 0 and rc2 == 0 and ours == ref, "%s --%s" % (tag, table),
                          err + first_diff(ours, ref))
                    if table == "bind":
                        check(ours.count("\n") > 4, "%s has binds" % tag)
                    if table == "weak-bind" and name.startswith("exe16"):
                        check(" strong " in ours, "%s has a strong weak-bind entry" % tag)
            rc1, ours, err = run([CLI, "macho", path, "--chained-fixups"] + arch)
            rc2, ref, _ = run(["llvm-objdump-16", "--macho", "--dyld-info"] + arch + [path])
            check(rc1 == 0 and rc2 == 0 and ours == ref, "%s --chained-fixups" % tag,
                  err + first_diff(ours, ref))
            if "chained" in name:
                check(ours.count(" bind ") >= 13 and ours.count(" rebase") > 10,
                      "%s has chained binds and rebases" % tag)
            rc, out, err = run([CLI, "macho", path, "--typeinfo", "--json"] + arch)
            got = set()
            for line in out.splitlines():
                o = json.loads(line)
                got.add("%s %s" % (o["kind"], o["name"]))
            check(rc == 0 and got == expected, "%s --typeinfo" % tag,
                  "%s missing %s extra %s" % (err, sorted(expected - got), sorted(got - expected)))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
