#!/bin/sh
# objc_direct_first.sh — regression of issue 3's "main_arena not found in
# libc data": running the ObjC graph test's direct part before its captures
# leaves the unsorted bin non-empty and the binmap words looking like one
# more bin, so a candidate shifted by two bins inside the real main_arena
# tied with it. The suspend and fork captures must both succeed.
prog=${BUILD:-build}/tests/objc/test_objc_graph
if [ ! -x "$prog" ]; then
  echo "missing $prog (built by mk/objc.mk)"; echo "0 passed, 1 failed"; exit 1
fi
HG_OBJC_DIRECT_FIRST=1 "$prog"
