#!/usr/bin/env bash
# Runs nandlab's BCH benchmark and Linux lib/bch (via bchlib) back to back on the same
# machine and prints the throughput ratio per anchor case.
# Needs: python3 with bchlib (pip install bchlib).
set -euo pipefail
cd "$(dirname "$0")/.."
ours=$(cargo bench -p ecc --bench bch 2>/dev/null | awk '
  /^bch-4KiB/ { name=$1 }
  /^ +time:/ && name=="" { }
  /thrpt:/ && name!="" { v=$(NF-3); u=$(NF-2); if (u=="GiB/s") v*=1024; print name, v; name="" }
  /^bch-4KiB-t[0-9]+\/[a-z0-9-]+$/ { name=$1 }')
theirs=$(python3 scripts/bench-bchlib.py)
printf '%-28s %12s %12s %7s\n' case "nandlab MiB/s" "lib/bch MiB/s" ratio
while read -r name v; do
  t=${name#bch-4KiB-t}; t=${t%%/*}; op=${name#*/}
  l=$(echo "$theirs" | awk -v t="t=$t" -v op="$op" '$3==t && $4==op { print $7 }')
  # (Criterion's "change:" block after a saved baseline has thrpt lines too: they carry no
  # case name and are skipped above; a case bchlib lacks is skipped here.)
  if [ -n "$l" ]; then
    printf '%-28s %12.1f %12.1f %7.2f\n' "$name" "$v" "$l" "$(awk -v a="$v" -v b="$l" 'BEGIN { print a / b }')"
  fi
done <<< "$ours"
