#!/bin/sh
# swiftroot.sh — the Debian trixie root with Swift: swiftlang (6.0.3, needs
# trixie's glibc) plus the build group of scripts/deps.sh, so the tree builds
# inside it too (gcc for the agent, swiftc / swift build for Swift programs).
# One cached root for everyone who needs Swift (the Swift classifier's tests,
# tests/swift/; `swift build` of a Swift package): its package list is exactly
# `$pkgs_build swiftlang`, so it is debootstrapped once and then only copied.
#
#   scripts/swiftroot.sh base        make (once) and cache it; print its path
#   scripts/swiftroot.sh new DIR     DIR := a fresh copy of it (then
#                                    scripts/debroot.sh run DIR CMD..., rm DIR)
#   scripts/swiftroot.sh pkgs        print the package list
#
# Needs root (scripts/debroot.sh); exits 77 when not root, so that callers can
# tell "cannot make a root here" from a failure.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
pkgs="$(sed -n 's/^pkgs_build="\(.*\)"$/\1/p' "$here/scripts/deps.sh") swiftlang"

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
  pkgs) echo "$pkgs"; exit 0 ;;
  base|new) ;;
  *) echo "usage: swiftroot.sh base | new DIR | pkgs" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "swiftroot: needs root (debootstrap, chroot, mount): no Swift root here" >&2
  exit 77
fi
# shellcheck disable=SC2086 # one argument per package
case "$cmd" in
  base) exec sh "$here/scripts/debroot.sh" base trixie $pkgs ;;
  new)  [ $# -eq 1 ] || { echo "usage: swiftroot.sh new DIR" >&2; exit 2; }
        exec sh "$here/scripts/debroot.sh" new trixie "$1" $pkgs ;;
esac
