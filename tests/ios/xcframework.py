#!/usr/bin/env python3
"""xcframework.py — writes an XCFramework's Info.plist as Xcode's
`xcodebuild -create-xcframework` does (an XML plist with sorted keys, tab
indentation: what plistlib writes; AvailableLibraries entries with
BinaryPath, HeadersPath, LibraryIdentifier, LibraryPath,
SupportedArchitectures, SupportedPlatform and, for the simulator,
SupportedPlatformVariant; CFBundlePackageType XFWK; XCFrameworkFormatVersion
1.0), then zips the framework reproducibly (entries sorted, fixed times and
modes, so the same inputs give the same SwiftPM checksum) and writes the
zip's sha256 — what `swift package compute-checksum` prints — to ZIP.sha256.

  xcframework.py write XCF ZIP ID:PLATFORM:VARIANT:ARCH[,ARCH] ...
"""
import hashlib
import os
import plistlib
import sys
import zipfile

LIBRARY = "libheapgraph.a"
HEADERS = "Headers"


def write(xcf, zip_path, specs):
    libs = []
    for spec in specs:
        ident, platform, variant, archs = spec.split(":")
        entry = {
            "BinaryPath": LIBRARY,
            "HeadersPath": HEADERS,
            "LibraryIdentifier": ident,
            "LibraryPath": LIBRARY,
            "SupportedArchitectures": archs.split(","),
            "SupportedPlatform": platform,
        }
        if variant:
            entry["SupportedPlatformVariant"] = variant
        libs.append(entry)
    info = {"AvailableLibraries": libs, "CFBundlePackageType": "XFWK", "XCFrameworkFormatVersion": "1.0"}
    with open(os.path.join(xcf, "Info.plist"), "wb") as f:
        plistlib.dump(info, f, fmt=plistlib.FMT_XML, sort_keys=True)

    top = os.path.dirname(os.path.abspath(xcf))
    files = []
    for d, _, names in os.walk(xcf):
        for n in names:
            files.append(os.path.relpath(os.path.join(d, n), top))
    tmp = zip_path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        dirs = sorted({os.path.dirname(p) for p in files} | {os.path.basename(xcf)})
        for p in sorted(set(dirs) | set(files)):
            full = os.path.join(top, p)
            is_dir = os.path.isdir(full)
            zi = zipfile.ZipInfo(p + ("/" if is_dir else ""), date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = ((0o40755 if is_dir else 0o100644) << 16)
            zi.compress_type = zipfile.ZIP_STORED if is_dir else zipfile.ZIP_DEFLATED
            z.writestr(zi, b"" if is_dir else open(full, "rb").read())
    os.replace(tmp, zip_path)
    digest = hashlib.sha256(open(zip_path, "rb").read()).hexdigest()
    with open(zip_path + ".sha256", "w") as f:
        f.write(digest + "\n")
    print(f"xcframework: {xcf}/Info.plist ({len(libs)} libraries), {zip_path} "
          f"({os.path.getsize(zip_path)} bytes, {len(files)} files), sha256 {digest}")


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] != "write":
        sys.exit(__doc__)
    write(sys.argv[2], sys.argv[3], sys.argv[4:])
