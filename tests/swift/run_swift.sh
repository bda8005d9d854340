#!/bin/sh
# run_swift.sh — the Swift classifier on real Swift programs (make check):
# a fresh copy of the cached trixie+swiftlang root (scripts/swiftroot.sh),
# the current tree (tracked and new files) copied in and built there with
# gcc, the test programs built with that root's swiftc (main.swift in module
# Zoo, PetKit.swift a second module as a shared library, shim.c the C side)
# and run there in suspend and fork mode; each prints what it allocated, and
# check_swift.py compares the snapshots with it (with this tree's CLI). A
# C++ program of the tree (examples/demo) runs in the same root: nothing of
# it may be labelled Swift.
#
#   tests/swift/run_swift.sh          the test (needs root to make the root:
#                                     otherwise it says so loudly, reports a
#                                     skip and exits 0; likewise inside a
#                                     debroot.sh root, e.g. fresh-check.sh's,
#                                     unless HG_SWIFT_NESTED=1)
#   tests/swift/run_swift.sh bench    make bench's figure (bench-swift)
#   tests/swift/run_swift.sh callgrind  the same captures' instruction
#                                     counts (bench-swift-callgrind: the
#                                     host's valgrind copied into the root)
#   tests/swift/run_swift.sh inside test|bench|callgrind   the part run in the root
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
out=build/swift

if [ "${1:-}" = inside ]; then
  # Inside the root, in /src: build the agent and the Swift programs.
  set -e
  mkdir -p $out
  # SANITIZE=1: the agent with UBSan (ASan would replace malloc: no glibc
  # heap to capture), as mk/capture.mk's capture tests
  if [ "${SANITIZE:-}" = 1 ]; then
    lib="build/san/capture/libheapgraph-ubsan.a -lubsan"
    nice make -j2 CC=gcc HG_DEPS=0 SANITIZE=1 build/san/capture/libheapgraph-ubsan.a >/dev/null
  else # and the C++ program (the same in both builds: run once)
    lib=build/libheapgraph.a
    nice make -j2 CC=gcc HG_DEPS=0 build/libheapgraph.a build/examples/demo >/dev/null
  fi
  echo "versions: $(swiftc --version 2>&1 | head -n 1); glibc $(ldd --version | sed -n '1s/.* //p')"
  link="$lib -lcbor -lxxhash -lpthread -ldl"
  if [ "$2" = bench ] || [ "$2" = callgrind ]; then
    gcc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -I. -c bench/bench_swift_shim.c -o $out/bench_shim.o
    swiftc -O -module-name Bench bench/bench_swift.swift $out/bench_shim.o $link -o $out/bench_swift
    if [ "$2" = bench ]; then
      $out/bench_swift /tmp/bench-swift.hgsnap "${HG_BENCH_SWIFT_OBJECTS:-1000000}"
      exit 0
    fi
    # one capture per configuration, helper thread off, objects made on a
    # second thread (valgrind's brk stops at 8 MiB: a thread arena then),
    # instructions counted inside hg_capture only
    for cfg in without classes with; do
      HG_BENCH_SWIFT_THREAD=1 HG_BENCH_SWIFT_HELPERS=0 HG_BENCH_SWIFT_ONLY=$cfg \
        valgrind --tool=callgrind --toggle-collect=hg_capture --callgrind-out-file=/tmp/cg.$cfg \
        $out/bench_swift /tmp/bench-swift.hgsnap "${HG_BENCH_SWIFT_OBJECTS:-1000000}" >/tmp/cg.$cfg.out 2>/tmp/cg.$cfg.err
      n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' /tmp/cg.$cfg.err)
      echo "bench-swift-callgrind: $cfg: $n instructions in hg_capture; $(sed -n 's/.*ms, //p' /tmp/cg.$cfg.out)"
      eval "ir_$cfg=$n"
    done
    # shellcheck disable=SC2154 # set by the eval above
    awk -v w="$ir_with" -v c="$ir_classes" -v b="$ir_without" 'BEGIN {
      printf "bench-swift-callgrind: with / without %.3f, classes only / without %.3f (goal <= 1.10)\n", w / b, c / b }'
    exit 0
  fi
  gcc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -c tests/swift/shim.c -o $out/shim.o
  swiftc -Onone -parse-as-library -emit-library -module-name PetKit -emit-module \
    -emit-module-path $out/PetKit.swiftmodule tests/swift/PetKit.swift -o $out/libPetKit.so
  swiftc -Onone -module-name Zoo -I $out -L $out -lPetKit -Xlinker -rpath=/src/$out \
    tests/swift/main.swift $out/shim.o $link -o $out/zoo
  $out/zoo /tmp/zoo-suspend.hgsnap suspend >/tmp/zoo-suspend.txt
  $out/zoo /tmp/zoo-fork.hgsnap fork >/tmp/zoo-fork.txt
  [ "${SANITIZE:-}" = 1 ] || build/examples/demo /tmp/demo.hgsnap >/dev/null
  # iOS Mach-O objects from real swiftc output (a minimal standard library:
  # there is no iOS SDK here), for the Darwin path of the parser
  for t in arm64 arm64e; do
    swiftc -target $t-apple-ios15.0 -parse-stdlib -module-name Swift -parse-as-library \
      -Xfrontend -disable-implicit-concurrency-module-import \
      -Xfrontend -disable-implicit-string-processing-module-import \
      -c tests/swift/macho/stdlib.swift tests/swift/macho/classes.swift -wmo -o /tmp/swift-$t.o
  done
  exit 0
fi

what=${1:-test}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP tests/swift ($what): NOT RUN — making the trixie+swiftlang root needs root (scripts/swiftroot.sh)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
# Inside one of our roots (scripts/fresh-check.sh's fresh Debian 12 runs
# make check in one) the Swift root would be debootstrapped anew inside it (about 1 GB,
# 10 min) and chrooted into from there: not done unless HG_SWIFT_NESTED=1.
# (/.heapgraph-root-ok marks every root scripts/debroot.sh makes)
if [ "${HG_SWIFT_NESTED:-0}" != 1 ] && [ -f /.heapgraph-root-ok ]; then
  echo "SKIP tests/swift ($what): NOT RUN — inside a scripts/debroot.sh root (a nested trixie+swiftlang root would be debootstrapped; HG_SWIFT_NESTED=1 forces it)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
if [ "$what" = callgrind ] && ! command -v valgrind >/dev/null; then
  echo "SKIP tests/swift (callgrind): NOT RUN — no valgrind on this machine (scripts/deps.sh check)"
  exit 0
fi
build=${BUILD:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/hg-swift.XXXXXX")
root=$work/root
trap 'sh "$here/scripts/debroot.sh" rm "$root" >/dev/null 2>&1; rm -rf "$work"' EXIT INT TERM
if ! sh "$here/scripts/swiftroot.sh" new "$root" >"$work/root.log" 2>&1; then
  tail -n 20 "$work/root.log"
  echo "FAIL no trixie+swiftlang root (scripts/swiftroot.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi
mkdir -p "$root/src"
if [ "$what" = callgrind ]; then # the host's valgrind (its tools are static)
  cp "$(command -v valgrind)" /usr/bin/valgrind.bin "$root/usr/bin/" && cp -a /usr/libexec/valgrind "$root/usr/libexec/"
fi
(cd "$here" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$root/src" -xf -
if ! sh "$here/scripts/debroot.sh" run "$root" sh -c "cd /src && SANITIZE=${SANITIZE:-} sh tests/swift/run_swift.sh inside $what" >"$work/inside.log" 2>&1; then
  tail -n 30 "$work/inside.log"
  echo "FAIL building or running the Swift programs in the root"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ "$what" = bench ] || [ "$what" = callgrind ]; then
  cat "$work/inside.log"
  exit 0
fi
grep '^versions:' "$work/inside.log"
"${PYTHON:-python3}" "$here/tests/swift/check_swift.py" "$here/$build/heapgraph" \
  "$root/tmp/zoo-suspend.hgsnap" "$root/tmp/zoo-suspend.txt" \
  "$root/tmp/zoo-fork.hgsnap" "$root/tmp/zoo-fork.txt" "$root/tmp/demo.hgsnap" >"$work/check.out" 2>&1
rc=$?
# the Darwin path on the arm64 dylib linked here (lld cannot link arm64e)
if ld64.lld-16 -dylib -arch arm64 -platform_version ios 15.0 15.0 -undefined dynamic_lookup \
     -o "$work/swift-arm64.dylib" "$root/tmp/swift-arm64.o" >"$work/macho.out" 2>&1; then
  "$here/$build/tests/swift/test_swift_macho" "$work/swift-arm64.dylib" "$root/tmp/swift-arm64e.o" >>"$work/macho.out" 2>&1 || rc=1
else
  echo "FAIL ld64.lld-16 could not link the arm64 object" >>"$work/macho.out"; rc=1
fi
grep -v -E '^[0-9]+ passed, [0-9]+ failed' "$work/check.out" "$work/macho.out"
cat "$work/check.out" "$work/macho.out" | grep -E '^[0-9]+ passed, [0-9]+ failed' |
  awk '{p += $1; f += $3} END {print p + 0 " passed, " f + 0 " failed"}'
exit $rc
