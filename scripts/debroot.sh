#!/bin/sh
# debroot.sh — minimal Debian roots for tests that must run on a machine other
# than this one (the newcomer's fresh Debian 12, other glibc versions).
#
#   scripts/debroot.sh base SUITE [PKG...]  make (once) and cache a minbase root of
#                                            SUITE with git make gcc libc6-dev
#                                            ca-certificates (+ PKG...); print its path
#   scripts/debroot.sh new SUITE DIR [PKG...] DIR := a fresh copy of that cached root
#                                            (released suites: with -updates and
#                                            -security in sources.list, as installed)
#   scripts/debroot.sh run DIR CMD...        run CMD as root inside DIR, with /proc,
#                                            /sys, /dev and /dev/pts mounted for it and
#                                            DIR bound onto itself (/ a mount point)
#   scripts/debroot.sh rm DIR                unmount what is left and remove DIR
#
# SUITE is a Debian codename: bullseye, bookworm, trixie, forky (forky uses
# debootstrap's sid script).  The cache lives in $HG_ROOT_CACHE (default
# /var/cache/heapgraph/roots) so that it survives clones and CI runs; a cached
# root is never modified (each test works on a copy).  Needs root.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${HG_ROOT_CACHE:-/var/cache/heapgraph/roots}
mirror=${HG_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${HG_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
base_pkgs="git,make,gcc,libc6-dev,ca-certificates"

die() { echo "debroot: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount)"

umount_all() {
  # Deepest first; ignore what is not mounted.
  for m in dev/pts dev/shm dev sys proc; do
    if mountpoint -q "$1/$m" 2>/dev/null; then umount -l "$1/$m" 2>/dev/null || true; fi
  done
}

script_of() {
  case "$1" in
    forky|sid|unstable) echo /usr/share/debootstrap/scripts/sid ;;
    *) echo "/usr/share/debootstrap/scripts/$1" ;;
  esac
}

make_base() {
  suite=$1; shift
  extra=$(echo "$*" | tr ' ' ',')
  tag=$suite
  [ -n "$extra" ] && tag="$suite-$(printf '%s' "$extra" | cksum | cut -d' ' -f1)"
  dir="$cache/$tag"
  if [ -f "$dir/.heapgraph-root-ok" ]; then echo "$dir"; return 0; fi
  command -v debootstrap >/dev/null 2>&1 || sh "$here/scripts/deps.sh" roots >&2
  mkdir -p "$cache"
  # One builder per suite at a time; others wait for it and reuse its result.
  exec 9>"$cache/.$tag.lock"
  flock 9
  if [ ! -f "$dir/.heapgraph-root-ok" ]; then
    rm -rf "$dir.tmp"
    pkgs=$base_pkgs
    [ -n "$extra" ] && pkgs="$pkgs,$extra"
    echo "debroot: debootstrap $suite (minbase, +$pkgs) into $dir" >&2
    if ! debootstrap --variant=minbase --include="$pkgs" "$suite" "$dir.tmp" "$mirror" \
         "$(script_of "$suite")" >"$cache/$tag.log" 2>&1; then
      umount_all "$dir.tmp"
      tail -n 20 "$cache/$tag.log" >&2
      die "debootstrap $suite failed (log: $cache/$tag.log)"
    fi
    umount_all "$dir.tmp"
    rm -rf "$dir.tmp/var/cache/apt/archives/"*.deb
    touch "$dir.tmp/.heapgraph-root-ok"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  flock -u 9
  echo "$dir"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
  base)
    [ $# -ge 1 ] || die "usage: debroot.sh base SUITE [PKG...]"
    make_base "$@" ;;
  new)
    [ $# -ge 2 ] || die "usage: debroot.sh new SUITE DIR [PKG...]"
    suite=$1; dir=$2; shift 2
    src=$(make_base "$suite" "$@")
    if [ -d "$dir" ]; then umount_all "$dir"; rm -rf "$dir"; fi
    mkdir -p "$(dirname "$dir")"
    cp -a "$src" "$dir"
    cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    # Like an installed Debian (the installer enables both), a released
    # suite also gets its security and point-release updates: debootstrap
    # writes only the suite itself, whose packages (chromium, say) can be
    # far behind what every real machine of that release runs.
    case "$suite" in
      bullseye|bookworm|trixie)
        printf 'deb %s %s-updates main\ndeb %s %s-security main\n' \
          "$mirror" "$suite" "$security" "$suite" >>"$dir/etc/apt/sources.list" ;;
    esac
    echo "$dir" ;;
  run)
    [ $# -ge 2 ] || die "usage: debroot.sh run DIR CMD..."
    dir=$1; shift
    [ -f "$dir/.heapgraph-root-ok" ] || die "$dir is not a root made by debroot.sh"
    # The root bound onto itself first, so that / is a mount point inside the
    # chroot: `ip netns exec` (the serve tests' namespaces) makes / a slave
    # mount, which fails with EINVAL on a plain directory.
    selfbind=0
    if ! mountpoint -q "$dir"; then mount --bind "$dir" "$dir" && selfbind=1; fi
    trap 'umount_all "$dir"; [ $selfbind = 0 ] || umount -l "$dir"' EXIT INT TERM
    mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
    mountpoint -q "$dir/sys" || mount -t sysfs sys "$dir/sys" 2>/dev/null || mount --rbind /sys "$dir/sys"
    mountpoint -q "$dir/dev" || mount --bind /dev "$dir/dev"
    mountpoint -q "$dir/dev/pts" || mount --bind /dev/pts "$dir/dev/pts" 2>/dev/null || true
    rc=0
    env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        chroot "$dir" "$@" || rc=$?
    umount_all "$dir"
    [ $selfbind = 0 ] || umount -l "$dir"
    trap - EXIT INT TERM
    exit $rc ;;
  rm)
    [ $# -ge 1 ] || die "usage: debroot.sh rm DIR"
    umount_all "$1"
    rm -rf "$1" ;;
  *) die "usage: debroot.sh base|new|run|rm ... (see the top of this file)" ;;
esac
