#!/bin/sh
# isolated.sh — the Apple builds with this machine's /usr/include unreachable:
# in a private mount namespace an empty read-only tmpfs is mounted over
# /usr/include, then `make xcframework` (all five slices: iPhoneOS SDK
# for ios-arm64 and the arm64 simulator, zig's macOS headers for macOS and
# the x86_64 simulator) and `make ios` (library, dylib, demo linked) build
# from scratch into build/isolated/. A header from /usr/include would fail the
# compile; deps_check.sh over the -MD files then lists where every header came
# from. Needs root (unshare -m) and an iPhoneOS SDK (IOS_SDK); exits 77 when
# either is missing.
#
#   IOS_SDK=path sh tests/ios/isolated.sh
set -eu
cd "$(dirname "$0")/../.."
sdk=${IOS_SDK:-/var/cache/heapgraph/sdk/iPhoneOS16.5.sdk}
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
  echo "isolated.sh: skipped: needs root and unshare"; exit 77; fi
if [ ! -f "$sdk/usr/lib/libSystem.tbd" ]; then
  echo "isolated.sh: skipped: no iPhoneOS SDK at '$sdk'"; exit 77; fi
# packages first (deps.sh needs nothing from /usr/include, but installing is
# no business of the isolated build)
sh scripts/deps.sh ios darwin
out=build/isolated
rm -rf "$out"
unshare -m sh -eu -c '
  mount --make-rprivate / 2>/dev/null || true
  mount -t tmpfs -o ro,size=64k tmpfs /usr/include
  [ -z "$(ls -A /usr/include)" ] || { echo "isolated.sh: /usr/include is not empty"; exit 1; }
  echo "isolated.sh: /usr/include is an empty tmpfs in this namespace"
  make -j2 HG_DEPS=0 xcframework IOS_SDK="$1" XCF_OUT="$2/xcframework"
  make -j2 HG_DEPS=0 ios IOS_SDK="$1" IOS_OUT="$2/ios"
  touch "$2/ok"
' isolated "$sdk" "$out" 2>&1 | grep -v '^clang-14 \|^rm -f \|^cp \|^llvm-lipo-14 '
# the pipe hides the status: both makes (and their checks) ran to the end
[ -f "$out/ok" ] || { echo "isolated.sh: a build or check failed (see above)" >&2; exit 1; }
echo "isolated.sh: ok: make xcframework and make ios built with /usr/include empty"
