#!/bin/sh
# agent_env.sh — the LD_PRELOAD agent refuses bad environment values with a
# clear message and never takes over a signal that would change how the
# program dies (issue 18, items 4 and 7): HEAPGRAPH_SIGNAL of a fault,
# termination or job-control signal, a bogus name, RTMIN+4 (parks threads);
# HEAPGRAPH_AT_EXIT=no means off and a bogus value is an error;
# HEAPGRAPH_MODE=bogus is an error. With a refused signal the program runs
# and dies as it would have (SIGTERM still terminates it).
B=${BUILD:-build}
LIB=$(cd "$B" && pwd)/libheapgraph.so
T=$B/capture/agent_target
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d /tmp/hg_agent_env.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pre="$LIB"
if [ "${SANITIZE:-0}" = 1 ]; then
  pre="$(${CC:-cc} -print-file-name=libasan.so) $LIB"
  export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0
fi

# refused NAME VAR=VALUE...: message on stderr, exit 0, no snapshot
refused() {
  name=$1; shift
  rm -f "$tmp"/*.hgsnap
  env LD_PRELOAD="$pre" HEAPGRAPH_OUTPUT="$tmp/s-%n.hgsnap" "$@" "$T" exit 10 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 0 ]; then bad "$name: exit $rc"; return; fi
  if ls "$tmp"/*.hgsnap >/dev/null 2>&1; then bad "$name: a snapshot was written"; return; fi
  if ! grep -q "^heapgraph: .*agent off" "$tmp/err"; then bad "$name: no clear message ($(cat "$tmp/err"))"; return; fi
  ok "$name: $(head -c 120 "$tmp/err")"
}
for s in 11 SEGV SIGBUS 9 KILL 19 STOP 15 TERM INT HUP QUIT ABRT CHLD PIPE ALRM 32 33 0 65 -3 RTMIN+4 38 bogus USR1x; do
  refused "HEAPGRAPH_SIGNAL=$s" HEAPGRAPH_SIGNAL="$s"
done
refused "HEAPGRAPH_AT_EXIT=maybe" HEAPGRAPH_AT_EXIT=maybe
refused "HEAPGRAPH_MODE=bogus" HEAPGRAPH_MODE=bogus HEAPGRAPH_AT_EXIT=1
refused "HEAPGRAPH_OMIT=secrets" HEAPGRAPH_OMIT=secrets HEAPGRAPH_AT_EXIT=1

# HEAPGRAPH_OMIT=all: no path of the program's in the snapshot
rm -f "$tmp"/*.hgsnap
env LD_PRELOAD="$pre" HEAPGRAPH_OUTPUT="$tmp/o.hgsnap" HEAPGRAPH_AT_EXIT=1 HEAPGRAPH_OMIT=all "$T" exit 10 2>"$tmp/err"
if [ ! -s "$tmp/o.hgsnap" ]; then bad "HEAPGRAPH_OMIT=all: no snapshot ($(cat "$tmp/err"))"
elif grep -q "agent_target" "$tmp/o.hgsnap"; then bad "HEAPGRAPH_OMIT=all: the program's path is in the file"
else ok "HEAPGRAPH_OMIT=all: no path in the file"; fi

# HEAPGRAPH_AT_EXIT=no: off, silently
rm -f "$tmp"/*.hgsnap
env LD_PRELOAD="$pre" HEAPGRAPH_OUTPUT="$tmp/s-%n.hgsnap" HEAPGRAPH_AT_EXIT=no "$T" exit 10 2>"$tmp/err"
if ls "$tmp"/*.hgsnap >/dev/null 2>&1 || [ -s "$tmp/err" ]; then bad "HEAPGRAPH_AT_EXIT=no captured or spoke"; else ok "HEAPGRAPH_AT_EXIT=no: off"; fi
# accepted spellings still work
for v in yes 1 TRUE on; do
  rm -f "$tmp"/*.hgsnap
  env LD_PRELOAD="$pre" HEAPGRAPH_OUTPUT="$tmp/s-%n.hgsnap" HEAPGRAPH_AT_EXIT=$v HEAPGRAPH_MODE=suspend "$T" exit 10 2>"$tmp/err"
  if ls "$tmp"/*.hgsnap >/dev/null 2>&1; then ok "HEAPGRAPH_AT_EXIT=$v: captured"; else bad "HEAPGRAPH_AT_EXIT=$v: no snapshot ($(cat "$tmp/err"))"; fi
done

# a refused HEAPGRAPH_SIGNAL=TERM leaves SIGTERM deadly; an accepted USR2
# leaves SIGTERM deadly too
for s in TERM USR2 RTMIN+2; do
  rm -f "$tmp/ready"
  env LD_PRELOAD="$pre" HEAPGRAPH_OUTPUT="$tmp/t-%n.hgsnap" HEAPGRAPH_SIGNAL=$s "$T" wait "$tmp/ready" 10 2>"$tmp/err" &
  pid=$!
  i=0; while [ ! -e "$tmp/ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  if [ $rc -eq 143 ]; then ok "HEAPGRAPH_SIGNAL=$s: SIGTERM still terminates (143)"; else bad "HEAPGRAPH_SIGNAL=$s: exit $rc after SIGTERM"; fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
