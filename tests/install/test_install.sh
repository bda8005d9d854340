#!/bin/sh
# test_install.sh — `make install` / `make uninstall` into a DESTDIR: the
# header, both libraries (with SONAME libheapgraph.so.1 and only hg_* symbols
# exported; every hg_ symbol of the static library declared in the header),
# heapgraph.pc and the CLI land where they should; a program built against
# the installed copy via pkg-config links and runs; uninstall removes
# everything it installed.
set -u
pass=0; fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { if eval "$1"; then ok; else no "$2"; fi; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
prefix=/opt/hg
make -s install PREFIX=$prefix DESTDIR="$root" BUILD="${BUILD:-build}" >/dev/null 2>&1 || no "make install failed"
d="$root$prefix"
check "[ -f $d/include/heapgraph.h ]" "header installed"
check "[ -f $d/lib/libheapgraph.a ]" "static library installed"
check "[ -L $d/lib/libheapgraph.so ] && [ -L $d/lib/libheapgraph.so.1 ]" "shared library links"
check "[ -x $d/bin/heapgraph ]" "CLI installed"
check "[ -f $d/lib/pkgconfig/heapgraph.pc ]" "pkg-config file installed"
soname=$(readelf -d "$d/lib/libheapgraph.so" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "[ '$soname' = libheapgraph.so.1 ]" "SONAME is libheapgraph.so.1 (got '$soname')"
syms=$(nm -D --defined-only "$d/lib/libheapgraph.so" | awk '{print $3}' | sed 's/@.*//')
# only hg_*: the malloc interposer is in libheapgraph_stacks.so alone
bad=$(printf '%s\n' "$syms" | grep -v '^hg_' | grep -v '^HEAPGRAPH_1$' | head -5)
check "[ -z '$bad' ]" "libheapgraph.so exports only hg_* (found: $bad)"
# libheapgraph_stacks.so: the same with libheapgraph.so's SONAME, plus the
# malloc family and C++ new/delete of the allocation-stack interposer
ss="$d/lib/libheapgraph_stacks.so"
sname=$(readelf -d "$ss" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "[ '$sname' = libheapgraph.so.1 ]" "libheapgraph_stacks.so has SONAME libheapgraph.so.1 (got '$sname')"
ssyms=$(nm -D --defined-only "$ss" 2>/dev/null | awk '{print $3}' | sed 's/@.*//')
mallocs='^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|reallocarray|malloc_usable_size|free_sized|free_aligned_sized|_Zn[wa]m.*|_Zd[la]Pv.*)$'
bad=$(printf '%s\n' "$ssyms" | grep -v '^hg_' | grep -v '^HEAPGRAPH_1$' | grep -Ev "$mallocs" | head -5)
check "[ -z '$bad' ] && printf '%s\\n' \"\$ssyms\" | grep -qx malloc" "libheapgraph_stacks.so: hg_*, malloc family and new/delete only (found: $bad)"
check "printf '%s\\n' \"\$syms\" | grep -qx hg_graph_load" "hg_graph_load exported"
# the hg_ prefix is the public API's: an internal function is _hg_ (or
# its component's own prefix), so every hg_ symbol the static library
# defines is declared in the installed header
undeclared=$(nm -g --defined-only "$d/lib/libheapgraph.a" 2>/dev/null | awk '$3 ~ /^hg_/ {print $3}' |
  sort -u | while read -r s; do grep -qw "$s" "$d/include/heapgraph.h" || echo "$s"; done | head -5)
check "[ -z '$undeclared' ]" "every hg_ symbol of libheapgraph.a is in heapgraph.h (not: $undeclared)"
cflags=$(PKG_CONFIG_PATH=$d/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root pkg-config --cflags heapgraph)
libs=$(PKG_CONFIG_PATH=$d/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root pkg-config --libs heapgraph)
cat > "$root/use.c" <<'SRC'
#include <heapgraph.h>
#include <stdio.h>
int main(int argc, char **argv) {
  struct hg_builder *b = hg_builder_new();
  hg_builder_node(b, 0x1000, 32, 0, HG_NODE_MALLOC, 0);
  int rc = hg_builder_write(b, argv[1], NULL);
  hg_builder_free(b);
  struct hg_graph *g = rc ? NULL : hg_graph_load(argv[1], NULL);
  printf("%u\n", g ? g->node_count : 0);
  hg_graph_free(g);
  return argc > 1 && g ? 0 : 1;
}
SRC
if cc $cflags -o "$root/use" "$root/use.c" $libs -Wl,-rpath,"$d/lib" 2>"$root/cc.log"; then
  ok
  out=$("$root/use" "$root/x.hgsnap" 2>&1)
  check "[ '$out' = 1 ]" "installed library works (got '$out')"
  check "ldd $root/use | grep -q '$d/lib/libheapgraph.so.1'" "binary uses the installed shared library"
  check "[ \"\$($d/bin/heapgraph verify $root/x.hgsnap; echo \$?)\" = 0 ]" "installed CLI verifies"
else
  no "compile against installed copy: $(cat "$root/cc.log")"
fi
make -s uninstall PREFIX=$prefix DESTDIR="$root" >/dev/null 2>&1 || no "make uninstall failed"
left=$(find "$d" -type f -o -type l | head -5)
check "[ -z '$left' ]" "uninstall removed everything (left: $left)"
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
