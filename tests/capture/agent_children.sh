#!/bin/sh
# agent_children.sh — which processes capture, and to which file, when the
# program `heapgraph run` starts has children (capture/linux/agent.c,
# output_rule; issue 26: a shell wrapper's 33 children all wrote one file,
# the last one kept). A bash wrapper starts agent_target (never linked with
# libheapgraph) three times as children, plus `uname`:
#   1. default: only the wrapper's pid writes app.hgsnap, and says its
#      children were not captured; no other file
#   2. a wrapper that execs the program (after a child): the program has the
#      traced pid and writes app.hgsnap with its 1000-block list
#   3. --follow-children: app.hgsnap (the wrapper) and app.PID.hgsnap for
#      each child, each program's with its list
#   4. --follow-children with %p in the name: app-PID.hgsnap, nothing inserted
#   5. --watch (--rss 1: the first sample fires) under a wrapper that keeps
#      two agent_target children alive: one watcher, in the wrapper only,
#      so exactly one snapshot, the wrapper's pid (commit 48f3d15's rule)
#   6. the same with --follow-children: one watcher and one snapshot per
#      process, the wrapper's and each child's (a snapshot of agent_target;
#      its first sample may come before main() has made the list: a child's
#      watcher starts in the agent's constructor and samples at once)
#   The wrapper runs one other program, `sleep 2`, which with
#   --follow-children captures too (a forked subshell that does not exec
#   starts no watcher of its own: the watcher is a thread).
# Not under SANITIZE=1 (agent.sh covers the ASan-built agent; here the
# snapshots would have no heap nodes to tell the processes apart).
B=${BUILD:-build}
CLI=$(cd "$B" && pwd)/heapgraph
T=$(cd "$B" && pwd)/capture/agent_target
if [ "${SANITIZE:-0}" = 1 ]; then echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d /tmp/hg_children.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/wrap.sh" <<'EOF'
uname >/dev/null
for i in 1 2 3; do
  "$1" exit 1000 &
  echo "child $!"
done
wait
EOF

# nodes FILE: the snapshot's node count ("" if it does not load)
nodes() {
  env -u LD_PRELOAD "$CLI" info --json "$1" 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"]["nodes"])' 2>/dev/null
}
# program FILE: ok if FILE is a snapshot of agent_target (its 1000 blocks)
program() {
  [ -s "$1" ] || return 1
  n=$(nodes "$1")
  [ -n "$n" ] && [ "$n" -ge 1000 ]
}

# 1. default: the wrapper only
(cd "$tmp" && "$CLI" run -o app.hgsnap -- bash wrap.sh "$T" >one.out 2>one.err)
files=$(cd "$tmp" && ls app*.hgsnap 2>/dev/null | tr '\n' ' ')
[ "$files" = "app.hgsnap " ] && ok "default: one file ($files)" || bad "default: files '$files', want app.hgsnap only"
grep -q 'only pid [0-9]* is captured' "$tmp/one.err" && grep -q 'child processes were not captured' "$tmp/one.err" &&
  ok "default: says the children were not captured" || bad "default: no note on stderr: $(cat "$tmp/one.err")"
n=$(nodes "$tmp/app.hgsnap")
[ -n "$n" ] && [ "$n" -lt 1000 ] && ok "default: app.hgsnap is the wrapper's ($n nodes)" ||
  bad "default: app.hgsnap has '$n' nodes, the wrapper has fewer than 1000"
rm -f "$tmp"/app*.hgsnap

# 2. a wrapper that execs the program keeps the traced pid
(cd "$tmp" && "$CLI" run -o app.hgsnap -- bash -c "uname >/dev/null; exec '$T' exit 1000" 2>two.err)
files=$(cd "$tmp" && ls app*.hgsnap 2>/dev/null | tr '\n' ' ')
[ "$files" = "app.hgsnap " ] && program "$tmp/app.hgsnap" &&
  ok "exec wrapper: app.hgsnap is the program's ($(nodes "$tmp/app.hgsnap") nodes)" ||
  bad "exec wrapper: files '$files' ($(cat "$tmp/two.err"))"
rm -f "$tmp"/app*.hgsnap

# 3. --follow-children: one file per process
(cd "$tmp" && "$CLI" run --follow-children -o app.hgsnap -- bash wrap.sh "$T" >three.out 2>three.err)
[ -s "$tmp/app.hgsnap" ] && ok "follow: the wrapper's app.hgsnap" || bad "follow: no app.hgsnap"
for pid in $(sed -n 's/^child //p' "$tmp/three.out"); do
  program "$tmp/app.$pid.hgsnap" && ok "follow: child $pid wrote app.$pid.hgsnap" ||
    bad "follow: child $pid: no snapshot of the program in app.$pid.hgsnap"
done
n=$(ls "$tmp"/app.*.hgsnap 2>/dev/null | wc -l)
[ "$n" -ge 4 ] && ok "follow: $n child files (3 programs and uname)" || bad "follow: $n child files, want 4"
grep -q 'not captured' "$tmp/three.err" && bad "follow: still says children were not captured" ||
  ok "follow: no not-captured note"
rm -f "$tmp"/app*.hgsnap

# 4. --follow-children with %p: the pattern decides
(cd "$tmp" && "$CLI" run --follow-children -o 'app-%p.hgsnap' -- bash wrap.sh "$T" >four.out 2>four.err)
good=0
for pid in $(sed -n 's/^child //p' "$tmp/four.out"); do
  program "$tmp/app-$pid.hgsnap" && good=$((good + 1))
done
[ "$good" = 3 ] && ! ls "$tmp"/app-*.*.hgsnap >/dev/null 2>&1 && ok "follow with %p: app-PID.hgsnap per child" ||
  bad "follow with %p: $good of 3 ($(ls "$tmp"))"

# 5, 6. the memory watcher under a wrapper
cat >"$tmp/watch.sh" <<'EOF'
echo "wrapper $$"
for i in 1 2; do
  "$1" wait "ready$i" 1000 &
  echo "child $!"
done
sleep 2 # several samples of every watcher (sleep is a process too)
kill $(jobs -p)
wait
EOF
# pids DIR: "pid nodes trigger process" of each snapshot in DIR, sorted by pid
pids() {
  for f in "$1"/*.hgsnap; do
    [ -s "$f" ] && env -u LD_PRELOAD "$CLI" info --json "$f" 2>/dev/null |
      /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["pid"], d["counts"]["nodes"], d["trigger"], d["process"])'
  done | sort -n
}
for fc in "" --follow-children; do
  w="$tmp/watch${fc:+-follow}"
  mkdir -p "$w" && cp "$tmp/watch.sh" "$w/"
  # shellcheck disable=SC2086 # no option, or one
  (cd "$w" && "$CLI" run --watch --rss 1 $fc -- bash watch.sh "$T" >out 2>err)
  set -- $(sed -n 's/^child //p' "$w/out")
  c1=${1:-none} c2=${2:-none}
  got=$(pids "$w")
  ns=$(echo "$got" | grep -c .)
  wp=$(sed -n 's/^wrapper //p' "$w/out")
  wrapper=$(echo "$got" | awk -v a="$c1" -v b="$c2" '$1 != a && $1 != b {print $1}')
  if [ -z "$fc" ]; then
    [ "$ns" = 1 ] && [ "$wrapper" = "$wp" ] && ok "watch: one snapshot, the wrapper's (pid $wp)" ||
      bad "watch: want only the wrapper's snapshot, got: $got ($(cat "$w/err"))"
  else
    kids=$(echo "$got" | awk -v a="$c1" -v b="$c2" '($1 == a || $1 == b) && $4 == "agent_target"' | wc -l)
    others=$(echo "$wrapper" | grep -c .)
    [ "$ns" = 4 ] && [ "$others" = 2 ] && [ "$kids" = 2 ] && echo "$wrapper" | grep -qx "$wp" &&
      ok "watch --follow-children: one snapshot per process (the children $c1 $c2, the wrapper and sleep:" $wrapper")" ||
      bad "watch --follow-children: want the wrapper's, sleep's and the 2 children's, got: $got ($(cat "$w/err"))"
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
