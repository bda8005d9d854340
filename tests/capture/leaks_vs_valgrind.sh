#!/bin/sh
# leaks_vs_valgrind.sh — heapgraph's unreachable nodes must equal valgrind
# memcheck's definitely + indirectly lost blocks for the same program.
B=${BUILD:-build}/capture
prog=$B/leaks
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind missing (sh scripts/deps.sh check)"; echo "0 passed, 1 failed"; exit 1
fi
vg=$(valgrind --leak-check=full --error-exitcode=0 "$prog" plain 2>&1)
def=$(printf '%s\n' "$vg" | sed -n 's/.*definitely lost: [0-9,]* bytes in \([0-9,]*\) blocks.*/\1/p' | tr -d ,)
ind=$(printf '%s\n' "$vg" | sed -n 's/.*indirectly lost: [0-9,]* bytes in \([0-9,]*\) blocks.*/\1/p' | tr -d ,)
want=$(( ${def:-0} + ${ind:-0} ))
[ "$want" -eq 35 ] && ok "valgrind: $def definitely + $ind indirectly lost = $want blocks" \
                  || bad "valgrind reports $want lost blocks, the program leaks 35"
out=$("$prog" check "${TMPDIR:-/tmp}")
for mode in fork suspend; do
  got=$(printf '%s\n' "$out" | sed -n "s/^$mode unreachable \([0-9-]*\)/\1/p")
  [ "$got" = "$want" ] && ok "$mode: $got unreachable nodes = valgrind's $want" \
                       || bad "$mode: $got unreachable nodes, valgrind $want"
done
echo "$pass passed, $fail failed"
