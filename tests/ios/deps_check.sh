#!/bin/sh
# deps_check.sh DIR NAME — the Apple builds' proof that no header came from
# this machine's /usr/include: reads every .d file under DIR (made with -MD,
# so system headers are listed too), resolves each header's real path
# (a symlink into /usr/include counts as /usr/include) and fails if any lies
# under /usr/include. Prints how many headers came from where.
set -eu
dir=$1 name=$2
n=$(find "$dir" -name '*.d' | wc -l)
[ "$n" -gt 0 ] || { echo "$name: no .d files under $dir" >&2; exit 1; }
list=$(find "$dir" -name '*.d' -exec cat {} + | tr ' \\' '\n\n' | sed -n 's/:$//; /\.h$/p' | sort -u |
       while read -r f; do readlink -f "$f" || echo "$f"; done | sort -u)
bad=$(echo "$list" | grep -E '^/usr/include/' || true)
if [ -n "$bad" ]; then
  echo "$name: headers read from /usr/include:" >&2
  echo "$bad" >&2
  exit 1
fi
repo=$(pwd -P)
echo "$list" | awk -v repo="$repo/" -v name="$name" -v n="$n" '
  index($0, repo) == 1 { r++; next }
  /\.sdk\//            { s++; next }
  /\/lib\/clang\//     { c++; next }
  /zig/                { z++; next }
                       { o++; print name ": other header: " $0 }
  END { printf "%s: %d .d files, no header from /usr/include: %d repository, %d SDK, %d zig libc, %d compiler, %d other\n",
        name, n, r, s, z, c, o }'
