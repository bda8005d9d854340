#!/bin/sh
# swift_ios_typecheck.sh — type-checks the Swift target (Sources/HeapGraph)
# for arm64-apple-ios14.0 against the iPhoneOS SDK's Swift interfaces, with
# the Linux swiftc of the trixie swiftlang root (scripts/swiftroot.sh): the
# UIKit branch (#if canImport(UIKit)) is compiled this way only. The SDK is
# bind-mounted read-only into the root; CHeapGraph comes from include/
# (module.modulemap). Proves the Swift code type-checks against iOS 16.4's
# Foundation/UIKit/Dispatch interfaces; nothing is linked or run.
#
#   IOS_SDK=path [HG_SWIFT_ROOT=DIR] sh tests/ios/swift_ios_typecheck.sh
# Exits 77 (skipped) without root or an SDK.
set -eu
cd "$(dirname "$0")/../.."
sdk=${IOS_SDK:-/var/cache/heapgraph/sdk/iPhoneOS16.5.sdk}
[ "$(id -u)" = 0 ] || { echo "swift_ios_typecheck.sh: skipped: needs root"; exit 77; }
[ -d "$sdk/usr/lib/swift/Swift.swiftmodule" ] || { echo "swift_ios_typecheck.sh: skipped: no iPhoneOS SDK with Swift interfaces at '$sdk'"; exit 77; }
root=${HG_SWIFT_ROOT:-}
fresh=0
if [ -z "$root" ]; then root=$(mktemp -d /tmp/hg-swiftios.XXXXXX); fresh=1; sh scripts/swiftroot.sh new "$root" >/dev/null; fi
cleanup() {
  umount "$root/sdk" 2>/dev/null || true
  [ $fresh = 1 ] && sh scripts/debroot.sh rm "$root"; true
}
trap cleanup EXIT INT TERM
rm -rf "$root/src" && mkdir -p "$root/src" "$root/sdk"
git ls-files -co --exclude-standard -z -- Sources include | xargs -0 tar cf - | tar xf - -C "$root/src"
mount --bind "$sdk" "$root/sdk" && mount -o remount,bind,ro "$root/sdk"
sh scripts/debroot.sh run "$root" sh -eu -c '
  cd /src
  mkdir -p /tmp/mc /tmp/rd
  # a resource directory without the Linux toolchain'"'"'s own Dispatch/Foundation
  # module maps (they clash with the SDK'"'"'s): only the stdlib shims and the
  # clang headers, the rest comes from the SDK
  ln -sfn /usr/libexec/swift/lib/swift/shims /tmp/rd/shims
  ln -sfn /usr/libexec/swift/lib/swift/clang /tmp/rd/clang
  t0=$(date +%s)
  swiftc -typecheck -target arm64-apple-ios14.0 -sdk /sdk -I include \
    -resource-dir /tmp/rd -module-name HeapGraph -module-cache-path /tmp/mc Sources/HeapGraph/*.swift
  echo "swift_ios_typecheck.sh: Sources/HeapGraph type-checks for arm64-apple-ios14.0 against the iPhoneOS SDK ($(( $(date +%s) - t0 ))s)"
'
