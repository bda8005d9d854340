#!/bin/sh
# test_cxx_cli.sh — `heapgraph classes/nodes` on the C++ test program's
# snapshot: demangled names by default, raw type_info names with --mangled,
# kind "c++" in JSON. Uses the snapshot build/cxx/cxx_classes writes (runs
# the program first when it is missing).
BUILD=${BUILD:-build}
CLI=$BUILD/heapgraph
F=$BUILD/cxx/cxx_classes_shared-suspend.hgsnap
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
[ -f "$F" ] || "$BUILD/cxx/cxx_classes" >/dev/null 2>&1
if [ ! -f "$F" ] || ! "$CLI" info "$F" | grep -q 'heap .*: ok'; then
  # e.g. SANITIZE=1: the ASan allocator cannot be walked, nothing is classified
  echo "no walkable-heap snapshot at $F: CLI checks NOT run"
  echo "cxx-cli: 0 passed, 0 failed"
  exit 0
fi
classes=$("$CLI" classes "$F") || bad "classes exit"
mangled=$("$CLI" classes "$F" --mangled) || bad "classes --mangled exit"
for want in 'plug::PlugTemplate<42>' 'plug::PlugObject' '(anonymous namespace)::Hidden' \
    'Box<int>' 'Box<double>' 'make_local()::Local' 'Diamond' \
    'std::_Sp_counted_ptr_inplace<Shared, std::allocator<void>, (__gnu_cxx::_Lock_policy)2>' \
    'std::_Sp_counted_ptr<Leaf\*, (__gnu_cxx::_Lock_policy)2>'; do
  if printf '%s\n' "$classes" | grep -q " $want\$"; then ok; else bad "classes lacks $want"; fi
done
for want in 'N4plug12PlugTemplateILi42EEE' 'N12_GLOBAL__N_16HiddenE' '3BoxIiE' 'ZL10make_localvE5Local' '7Diamond'; do
  if printf '%s\n' "$mangled" | grep -q " $want\$"; then ok; else bad "classes --mangled lacks $want"; fi
done
if printf '%s\n' "$mangled" | grep -q 'plug::'; then bad "--mangled shows demangled names"; else ok; fi
# Counts shown are the program's own (Hidden: 6, Box<int>: 2, PlugTemplate<42>: 4).
printf '%s\n' "$classes" | grep -Eq '^ +6 +[0-9]+  \(anonymous namespace\)::Hidden$' && ok || bad "Hidden count"
n=$("$CLI" nodes "$F" --class 'Box<int>' | wc -l); [ "$n" -eq 2 ] && ok || bad "nodes --class Box<int>: $n"
n=$("$CLI" nodes "$F" --class 3BoxIiE --mangled | grep -c ' 3BoxIiE$'); [ "$n" -eq 2 ] && ok || bad "nodes --mangled: $n"
j=$("$CLI" nodes "$F" --class 'plug::PlugTemplate<42>' --json)
n=$(printf '%s\n' "$j" | grep -c '"class":"plug::PlugTemplate<42>","kind":"c++"'); [ "$n" -eq 4 ] && ok || bad "nodes --json: $n"
# Slabs (cxx_slabs.cpp): named "slab starting with Param", and the census
# of the objects inside them after the table.
S=$BUILD/cxx/cxx_slabs.hgsnap
if "$BUILD/cxx/cxx_slabs" "${TMPDIR:-/tmp}" "$S" >/dev/null 2>&1; then
  out=$("$CLI" classes "$S")
  printf '%s\n' "$out" | grep -Eq '^ +7 +[0-9]+  slab starting with Param$' && ok || bad "slab row: $out"
  printf '%s\n' "$out" | grep -q '^census: C++ objects counted inside slabs' && ok || bad "no census header"
  printf '%s\n' "$out" | grep -Eq '^ +2531 +Param$' && ok || bad "census of Param: $out"
  "$CLI" classes "$S" --mangled | grep -Eq '  slab:5Param$' && ok || bad "--mangled slab name"
  rm -f "$S"
else
  bad "cxx_slabs failed"
fi
echo "cxx-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
