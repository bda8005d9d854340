#!/bin/sh
# fresh-check.sh — the newcomer's test: the README's two commands, `make demo`
# then `make check`, run as root in a fresh minimal Debian 12 (debootstrap
# --variant=minbase bookworm + git make gcc libc6-dev ca-certificates), on a
# clone of the current HEAD commit (not the work tree: commit first).
#
#   scripts/fresh-check.sh            prints one summary line, exits 1 if either fails
#   scripts/fresh-check.sh GOAL...    runs `make GOAL` for each GOAL instead (e.g.
#                                     "bench" "fuzz" "darwin" "install"; quote
#                                     "check SANITIZE=1" as one argument)
#
# The root is a copy of the cached pristine one (scripts/debroot.sh; built once
# into /var/cache/heapgraph/roots), removed afterwards. Nothing of this machine
# is visible inside but /proc, /sys and /dev. To save downloads, the .deb files
# of earlier runs ($HG_APT_CACHE, default /var/cache/heapgraph/apt-archives) are
# hard-linked into the root's /var/cache/apt/archives first and new ones linked
# back afterwards (links, not a shared mount: concurrent runs never contend for
# apt's archive lock): packages are still installed by the project's own
# scripts/deps.sh, into an empty dpkg database. Like DNS
# (debroot.sh copies resolv.conf), this network's TLS trust comes along: local
# CA certificates (/usr/local/share/ca-certificates, e.g. an egress proxy's)
# are added to the root's store, or npm (make darwin) cannot reach its
# registry through such a proxy. Logs:
# build/fresh-check/ (or $HG_FRESH_OUT), one per command. Needs root.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
out=${HG_FRESH_OUT:-$here/build/fresh-check}
apt_cache=${HG_APT_CACHE:-/var/cache/heapgraph/apt-archives}
suite=bookworm
[ "$(id -u)" = 0 ] || { echo "fresh-check: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
[ $# -gt 0 ] || set -- demo check

sha=$(git -C "$here" rev-parse HEAD)
mkdir -p "$out" "$apt_cache"
rm -f "$out"/*.log
root=$(mktemp -d "${TMPDIR:-/var/tmp}/hg-fresh.XXXXXX")
# $1 -> $2: link (or copy, then rename) each .deb that $2 lacks
share_debs() {
  for f in "$1"/*.deb; do
    [ -f "$f" ] || continue
    t="$2/${f##*/}"
    [ -e "$t" ] && continue
    ln "$f" "$t" 2>/dev/null || { cp "$f" "$t.tmp.$$" && mv -f "$t.tmp.$$" "$t"; } || true
  done
}
cleanup() {
  share_debs "$root/var/cache/apt/archives" "$apt_cache"
  sh "$here/scripts/debroot.sh" rm "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sh "$here/scripts/debroot.sh" new "$suite" "$root" >/dev/null
mkdir -p "$root/var/cache/apt/archives/partial"
share_debs "$apt_cache" "$root/var/cache/apt/archives"
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  sh "$here/scripts/debroot.sh" run "$root" update-ca-certificates >/dev/null 2>&1
fi
git clone -q --no-checkout "$here" "$root/root/heapgraph"
git -C "$root/root/heapgraph" cat-file -e "$sha^{commit}" 2>/dev/null ||
  git -C "$root/root/heapgraph" fetch -q origin HEAD
git -C "$root/root/heapgraph" -c advice.detachedHead=false checkout -q "$sha"

summary="fresh-check $(printf '%.12s' "$sha") ($suite minbase):"
sep=""
failed=0
for goal in "$@"; do
  log="$out/make-$(printf '%s' "$goal" | tr -c 'A-Za-z0-9_.=-' '_').log"
  t0=$(date +%s)
  rc=0
  sh "$here/scripts/debroot.sh" run "$root" sh -c "cd /root/heapgraph && make $goal" \
    >"$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  counts=$(grep -E '^check: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 | sed 's/^check: //')
  if [ "$rc" = 0 ]; then word=ok; else word="FAILED (exit $rc, log $log)"; failed=1; fi
  summary="$summary$sep make $goal $word (${secs}s)${counts:+: $counts}"
  sep=","
  if [ "$rc" != 0 ]; then
    echo "---- last lines of $log" >&2
    tail -n 30 "$log" >&2
    break
  fi
done
echo "$summary"
exit $failed
