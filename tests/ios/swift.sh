#!/bin/sh
# swift.sh — `swift build` and `swift test` of the repository's Swift package
# (Package.swift) on Linux, in the Debian trixie root with swiftlang 6.0.3
# (scripts/swiftroot.sh: one cached root shared with the Swift issue's
# tests). Proves that the manifest, the C target (portable sources + the
# Linux backend + compat/, with our own cbor.h/xxhash.h and no libcbor or
# libxxhash in the root's link) and the Swift API compile, and that the
# Swift tests (tests/ios/HeapGraphTests: capture, read back, errors, watcher,
# spool and upload hand-off, allocation stacks) pass. Also checks the C target's .d files name no libcbor/xxhash header of
# the root's /usr/include, and, given an XCFramework zip
# (build/xcframework/ or build/isolated/xcframework/), that
# `swift package compute-checksum` agrees with the sha256 written next to it.
#
#   tests/ios/swift.sh             (as root) a fresh copy of the cached root
#   HG_SWIFT_ROOT=DIR tests/ios/swift.sh   reuse DIR (made by swiftroot.sh new)
# Exits 77 (skipped) when not root.
set -eu
cd "$(dirname "$0")/../.."
repo=$(pwd)
if [ "$(id -u)" != 0 ]; then echo "swift.sh: skipped: needs root (a Debian root with swiftlang)"; exit 77; fi
root=${HG_SWIFT_ROOT:-}
fresh=0
if [ -z "$root" ]; then
  root=$(mktemp -d /tmp/hg-swiftpkg.XXXXXX)
  fresh=1
  sh scripts/swiftroot.sh new "$root" >/dev/null
fi
cleanup() { [ $fresh = 1 ] && sh scripts/debroot.sh rm "$root"; true; }
trap cleanup EXIT INT TERM

# the package's files as the work tree has them (tracked and new, not ignored)
rm -rf "$root/src" && mkdir -p "$root/src"
git ls-files -co --exclude-standard -z | xargs -0 tar cf - | tar xf - -C "$root/src"
for zip in build/xcframework/CHeapGraph.xcframework.zip build/isolated/xcframework/CHeapGraph.xcframework.zip; do
  if [ -f "$zip" ] && [ -f "$zip.sha256" ]; then cp "$zip" "$zip.sha256" "$root/src/"; break; fi
done

t0=$(date +%s)
sh scripts/debroot.sh run "$root" sh -eu -c '
  cd /src
  swift --version 2>&1 | head -n1
  # the manifest and all three targets
  rc=0; swift build --build-tests -Xcc -MD >/tmp/swift-build.log 2>&1 || rc=$?
  tail -n 3 /tmp/swift-build.log
  [ $rc = 0 ] || { echo "swift.sh: swift build failed ($rc)"; tail -n 40 /tmp/swift-build.log; exit 1; }
  # the C target read our cbor.h / xxhash.h, never the root'"'"'s libcbor/libxxhash headers
  d=$(find .build -path "*CHeapGraph.build*" -name "*.d" | wc -l)
  bad=$(find .build -path "*CHeapGraph.build*" -name "*.d" -exec cat {} + | tr " \\\\" "\n\n" |
        grep -E "^/usr/include/(cbor|xxhash)" | sort -u || true)
  [ "$d" -gt 0 ] || { echo "swift.sh: no .d files of the C target"; exit 1; }
  [ -z "$bad" ] || { echo "swift.sh: the C target read system headers: $bad"; exit 1; }
  echo "swift.sh: C target: $d .d files, no libcbor/xxhash header from /usr/include"
  rc=0; swift test >/tmp/swift-test.log 2>&1 || rc=$?
  grep -E "^(Test Case|capture|named|watch|spool|thread|in-process|FAIL|.*error)|Executed" /tmp/swift-test.log | tail -n 30
  [ $rc = 0 ] || { echo "swift.sh: swift test failed ($rc)"; tail -n 40 /tmp/swift-test.log; exit 1; }
  if [ -f CHeapGraph.xcframework.zip ]; then
    got=$(swift package compute-checksum CHeapGraph.xcframework.zip)
    want=$(cat CHeapGraph.xcframework.zip.sha256)
    [ "$got" = "$want" ] || { echo "swift.sh: compute-checksum $got != $want"; exit 1; }
    echo "swift.sh: swift package compute-checksum = $got (as written by make xcframework)"
  fi
'
echo "swift.sh: ok in $(( $(date +%s) - t0 ))s"
