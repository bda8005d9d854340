#!/usr/bin/env python3
"""check_xcframework.py — what `make xcframework-check` proves about the
XCFramework built on Linux (no Xcode here, so nothing was loaded by Xcode or
SwiftPM on a Mac):

  - Info.plist parses (plistlib) and has the keys Xcode writes, with
    CFBundlePackageType XFWK and XCFrameworkFormatVersion 1.0;
  - every AvailableLibraries entry's LibraryIdentifier directory, LibraryPath
    archive and HeadersPath directory exist; the headers are heapgraph.h and a
    module map declaring module CHeapGraph over it;
  - the archive holds exactly the listed architectures (llvm-lipo -archs), and
    for each, every member object's LC_BUILD_VERSION (llvm-objdump --macho
    --private-headers) names the listed platform: ios -> "ios", ios +
    simulator -> "iossimulator", macos -> "macos"; all archives have the same
    member count;
  - the zip holds the same files with the same bytes, and ZIP.sha256 is its
    sha256 (SwiftPM's binaryTarget checksum).

  check_xcframework.py XCF ZIP OBJDUMP LIPO
"""
import hashlib
import os
import plistlib
import re
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, run as run_cmd, summary  # noqa: E402

CPUTYPE = {"ARM64": "arm64", "X86_64": "x86_64"}
EXPECTED_PLATFORM = {("ios", None): "ios", ("ios", "simulator"): "iossimulator", ("macos", None): "macos"}


def run(cmd):
    rc, out, err = run_cmd(cmd)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {rc}: {err[:2000]}")
    return out


def main():
    xcf, zip_path, objdump, lipo = sys.argv[1:5]
    with open(os.path.join(xcf, "Info.plist"), "rb") as f:
        info = plistlib.load(f)
    check(info.get("CFBundlePackageType") == "XFWK", "CFBundlePackageType XFWK")
    check(info.get("XCFrameworkFormatVersion") == "1.0", "XCFrameworkFormatVersion 1.0")
    libs = info.get("AvailableLibraries", [])
    check(sorted(x.get("LibraryIdentifier") for x in libs) ==
            ["ios-arm64", "ios-arm64_x86_64-simulator", "macos-arm64_x86_64"], "the three libraries")
    members = set()
    for lib in libs:
        ident = lib["LibraryIdentifier"]
        keys = {"BinaryPath", "HeadersPath", "LibraryIdentifier", "LibraryPath",
                "SupportedArchitectures", "SupportedPlatform"}
        check(keys <= set(lib), f"{ident}: keys {sorted(keys - set(lib))} missing")
        archive = os.path.join(xcf, ident, lib["LibraryPath"])
        headers = os.path.join(xcf, ident, lib["HeadersPath"])
        check(os.path.isfile(archive), f"{ident}: {lib['LibraryPath']} exists")
        check(os.path.isfile(os.path.join(headers, "heapgraph.h")), f"{ident}: Headers/heapgraph.h")
        mm = open(os.path.join(headers, "module.modulemap")).read()
        check(re.search(r'module\s+CHeapGraph\s*{[^}]*header\s+"heapgraph.h"', mm) is not None,
                f"{ident}: module map declares CHeapGraph over heapgraph.h")
        fat = open(archive, "rb").read(4) == b"\xca\xfe\xba\xbe"
        if fat:
            archs = sorted(run([lipo, "-archs", archive]).split())
        else:  # llvm-lipo 14 and 16 crash on a thin archive: its members say
            archs = sorted({CPUTYPE.get(t, t) for t in re.findall(
                r"^\s*MH_MAGIC_64\s+(\S+)", run([objdump, "--macho", "--private-headers", archive]), re.M)})
        check(archs == sorted(lib["SupportedArchitectures"]),
              f"{ident}: {'fat' if fat else 'thin'} archive, architectures {archs} == {lib['SupportedArchitectures']}")
        want = EXPECTED_PLATFORM.get((lib["SupportedPlatform"], lib.get("SupportedPlatformVariant")))
        check(want is not None, f"{ident}: known platform")
        for arch in archs:
            out = run([objdump, "--macho", "--private-headers"] + ([f"--arch={arch}"] if fat else []) + [archive])
            objs = re.split(r"^\S*\((\S+\.o)\):\n", out, flags=re.M)[1:]
            names, bodies = objs[0::2], objs[1::2]
            cpus = [CPUTYPE.get(t, t) for b in bodies for t in re.findall(r"^\s*MH_MAGIC_64\s+(\S+)", b, re.M)]
            platforms = [re.findall(r"cmd LC_BUILD_VERSION\n.*\n\s*platform (\S+)", b) for b in bodies]
            ok = all(p == [want] for p in platforms) and cpus == [arch] * len(names)
            check(len(names) > 0 and ok,
                  f"{ident} {arch}: {len(names)} objects, each {arch} with LC_BUILD_VERSION platform {want}",
                  "" if ok else str([(n, p) for n, p in zip(names, platforms) if p != [want]][:5]) + str(set(cpus)))
            print(f"  {ident} {arch}: {len(names)} objects, cputype {arch}, LC_BUILD_VERSION platform {want}")
            members.add(len(names))
    check(len(members) == 1, f"every slice has the same member count {sorted(members)}")

    top = os.path.dirname(os.path.abspath(xcf))
    with zipfile.ZipFile(zip_path) as z:
        entries = {i.filename: i for i in z.infolist() if not i.is_dir()}
        ondisk = {}
        for d, _, ns in os.walk(xcf):
            for n in ns:
                ondisk[os.path.relpath(os.path.join(d, n), top)] = os.path.join(d, n)
        check(sorted(entries) == sorted(ondisk), f"zip holds the {len(ondisk)} files of the framework")
        check(all(z.read(n) == open(ondisk[n], "rb").read() for n in entries if n in ondisk),
                "zip entries equal the files")
        check(all(n.startswith(os.path.basename(xcf) + "/") for n in entries),
                "zip entries under CHeapGraph.xcframework/")
    digest = hashlib.sha256(open(zip_path, "rb").read()).hexdigest()
    check(open(zip_path + ".sha256").read().strip() == digest, f"checksum file = sha256 {digest}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
