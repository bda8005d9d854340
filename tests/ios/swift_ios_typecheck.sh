#!/bin/sh
# swift_ios_typecheck.sh — type-checks the Swift target (Sources/HeapGraph)
# for arm64-apple-ios14.0 (the package's lowest iOS) against the iPhoneOS
# SDK's Swift interfaces, with the Linux swiftc of the trixie swiftlang root
# (scripts/swiftroot.sh): the UIKit branch (#if canImport(UIKit)) is compiled
# this way only. The SDK is bind-mounted read-only into the root; CHeapGraph
# comes from include/ (module.modulemap). With it, tests/ios/doc_example.swift:
# the app code of docs/integration-ios.md. Proves the Swift code type-checks
# against iOS 16.4's Foundation/UIKit/Dispatch interfaces; nothing is linked
# or run.
#
# What the Linux toolchain lacks: the SDK's Dispatch.swiftinterface was
# built by Apple's toolchain, whose lib/swift/apinotes/Dispatch.apinotes
# renames the C types for Swift (OS_dispatch_queue -> DispatchQueue, …);
# Debian's swiftlang ships no apinotes (it is a Linux toolchain), so the
# SDK's Dispatch — and everything above it: Foundation, UIKit — fails with
# "no type named 'DispatchQueue' in module 'Dispatch'". The apinotes are
# Apple's (swiftlang/swift apinotes/, in every Xcode toolchain) and are not
# copied into this repository: give a directory holding Dispatch.apinotes as
# HG_SWIFT_APINOTES (e.g. from Xcode's
# XcodeDefault.xctoolchain/usr/lib/swift/apinotes); it becomes the resource
# directory's apinotes/. Without it the script says so and exits 77.
#
# A resource directory with only the stdlib shims and the clang headers of
# the Linux toolchain (its own Dispatch/Foundation module maps clash with
# the SDK's). Building the SDK's modules from their interfaces takes long
# (tens of minutes on 2 busy cores): the module cache is kept in
# HG_SWIFT_IOS_CACHE (default /var/cache/heapgraph/swift-ios-modules/SDKNAME),
# so later runs only type-check.
#
#   IOS_SDK=path HG_SWIFT_APINOTES=dir [HG_SWIFT_ROOT=DIR] sh tests/ios/swift_ios_typecheck.sh
# Exits 77 (skipped) without root, an SDK or the apinotes.
set -eu
cd "$(dirname "$0")/../.."
sdk=${IOS_SDK:-/var/cache/heapgraph/sdk/iPhoneOS16.5.sdk}
notes=${HG_SWIFT_APINOTES:-}
[ "$(id -u)" = 0 ] || { echo "swift_ios_typecheck.sh: skipped: needs root"; exit 77; }
[ -d "$sdk/usr/lib/swift/Swift.swiftmodule" ] || { echo "swift_ios_typecheck.sh: skipped: no iPhoneOS SDK with Swift interfaces at '$sdk'"; exit 77; }
if [ -z "$notes" ] || [ ! -f "$notes/Dispatch.apinotes" ]; then
  echo "swift_ios_typecheck.sh: skipped: no Dispatch.apinotes of an Apple Swift toolchain (HG_SWIFT_APINOTES='$notes'); the Linux swiftc cannot import the SDK's Dispatch without it"
  exit 77
fi
cache=${HG_SWIFT_IOS_CACHE:-/var/cache/heapgraph/swift-ios-modules/$(basename "$sdk")}
mkdir -p "$cache"
root=${HG_SWIFT_ROOT:-}
fresh=0
if [ -z "$root" ]; then root=$(mktemp -d /tmp/hg-swiftios.XXXXXX); fresh=1; sh scripts/swiftroot.sh new "$root" >/dev/null; fi
cleanup() {
  umount "$root/sdk" "$root/tmp/mc" "$root/tmp/notes" 2>/dev/null || true
  [ $fresh = 1 ] && sh scripts/debroot.sh rm "$root"; true
}
trap cleanup EXIT INT TERM
rm -rf "$root/src" && mkdir -p "$root/src" "$root/sdk" "$root/tmp/mc" "$root/tmp/notes"
git ls-files -co --exclude-standard -z -- Sources include tests/ios/doc_example.swift | xargs -0 tar cf - | tar xf - -C "$root/src"
mount --bind "$sdk" "$root/sdk" && mount -o remount,bind,ro "$root/sdk"
mount --bind "$notes" "$root/tmp/notes" && mount -o remount,bind,ro "$root/tmp/notes"
mount --bind "$cache" "$root/tmp/mc"
sh scripts/debroot.sh run "$root" sh -eu -c '
  cd /src
  rm -rf /tmp/rd && mkdir -p /tmp/rd
  ln -sfn /usr/libexec/swift/lib/swift/shims /tmp/rd/shims
  ln -sfn /usr/libexec/swift/lib/swift/clang /tmp/rd/clang
  ln -sfn /tmp/notes /tmp/rd/apinotes
  t0=$(date +%s)
  swiftc -typecheck -target arm64-apple-ios14.0 -sdk /sdk -I include \
    -resource-dir /tmp/rd -module-name HeapGraph -module-cache-path /tmp/mc Sources/HeapGraph/*.swift tests/ios/doc_example.swift
  echo "swift_ios_typecheck.sh: Sources/HeapGraph and the doc'"'"'s example type-check for arm64-apple-ios14.0 against the iPhoneOS SDK ($(( $(date +%s) - t0 ))s)"
'
