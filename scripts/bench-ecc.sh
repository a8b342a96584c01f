#!/usr/bin/env bash
# nandlab's BCH benchmark beside Linux lib/bch.c, compiled in the same run with
# `gcc -O3 -march=native` (scripts/bench-libbch.c: same data, same error patterns, same work
# per decode), and the throughput ratio per case.
#
# lib/bch.c (GPL-2.0) is not kept in this repository: the copy inside the bchlib source
# package is fetched from PyPI (`pip download`) into a temporary directory. Set BCH_SRC to a
# directory holding bch.c and bch.h to use another copy (e.g. a Linux tree's lib/ with
# include/linux/bch.h beside it).
#
# Usage: scripts/bench-ecc.sh [CRITERION_FILTER]   (default: every bch-4KiB case)
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-bch-4KiB}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src=${BCH_SRC:-}
if [ -z "$src" ]; then
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --dest "$work" bchlib==2.1.3 >&2
  tar -xzf "$work"/bchlib-2.1.3.tar.gz -C "$work"
  src=$work/bchlib-2.1.3/src
fi
gcc -O3 -march=native -I"$src" -o "$work/libbch-bench" scripts/bench-libbch.c "$src/bch.c"

# Criterion prints the case name, then "time:" and "thrpt: [low mid high]" lines; the
# middle estimate is taken, in MiB/s. ("change:" blocks after a saved baseline carry
# percentages, not rates, and are skipped.)
# lib/bch is measured before and after the Rust cases and its better figure kept, so a
# slow spell of the machine cannot flatter the ratio.
before=$("$work/libbch-bench")
ours=$(cargo bench -q -p ecc --bench bch -- "$filter" 2>/dev/null | awk '
  /^bch-/ { name=$1 }
  /thrpt: +\[[0-9.]+ [KMG]i?B\/s/ && name!="" {
    v=$4; u=$5; if (u=="GiB/s") v*=1024; else if (u=="KiB/s") v/=1024
    print name, v; name="" }')
after=$("$work/libbch-bench")
theirs=$(printf '%s\n%s\n' "$before" "$after" | awk '
  { if (!($2 in best) || $3 > best[$2]) best[$2] = $3 }
  END { for (k in best) print "libbch", k, best[k] }')
printf '%-34s %14s %14s %7s\n' case "nandlab MiB/s" "lib/bch MiB/s" ratio
while read -r name v; do
  l=$(awk -v n="$name" '$1=="libbch" && $2==n { print $3 }' <<< "$theirs")
  if [ -n "$l" ]; then
    printf '%-34s %14.1f %14.1f %7.2f\n' "$name" "$v" "$l" \
      "$(awk -v a="$v" -v b="$l" 'BEGIN { print a / b }')"
  fi
done <<< "$ours"
