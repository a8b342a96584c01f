#!/usr/bin/env bash
# Instructions per simulated request of `nandlab bench`'s steady-state phases, counted by
# callgrind: deterministic, unlike wall clock on a shared VM (whose rate varies ±20 %
# between runs), so a change to a hot path can be judged by it. Compare two builds with
#   scripts/bench-instr.sh old/nandlab; scripts/bench-instr.sh target/release/nandlab
# Needs valgrind. Usage: bench-instr.sh [BINARY] [CAPACITY_GIB] [REQUESTS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/nandlab}
gib=${2:-2}
requests=${3:-100000}
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release)" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out" "$out.cg"' EXIT
# Only the measured phases are counted (not building or preconditioning the device), and
# only the main device's: the comparisons (bytes vs digest, FLARES vs fixed t) are off.
valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
  --toggle-collect='*bench_cmd*phases*' \
  "$bin" bench --capacity-gib "$gib" --requests "$requests" --small-mib 0 --flares-mib 0 >"$out" 2>&1 ||
  { grep -v "^==" "$out" | tail -5 >&2; exit 1; }
total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out")
[ -n "$total" ] && [ "$total" -gt 0 ] || { echo "no instructions counted inside the bench's phases" >&2; cat "$out" >&2; exit 1; }
# Two phases (random writes, 70/30 mix) of `requests` requests each.
echo "$bin: $total instructions, $((total / (2 * requests))) per request" \
  "($gib GiB device, $requests writes + $requests mixed)"
