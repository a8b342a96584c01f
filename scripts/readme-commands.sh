#!/usr/bin/env bash
# Runs the command lines of README.md's "Using the CLI" section exactly as written (with
# `nandlab` standing for the given binary), in a scratch directory that sees the repo's
# examples/, crates/ and experiments/. Each must exit 0. Skipped, with the reason printed:
# the lines that take minutes or tens of GiB (they have their own stages or benchmarks).
#
#   scripts/readme-commands.sh target/release/nandlab
set -euo pipefail
bin=$(realpath "${1:?usage: readme-commands.sh NANDLAB_BINARY}")
repo=$(realpath "$(dirname "$0")/..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for d in examples crates experiments; do ln -s "$repo/$d" "$work/$d"; done
cd "$work"
head -c 65536 /dev/urandom > data.bin   # the ECC examples' input file

# The section's ```sh blocks, continuation lines joined.
awk '/^## Using the CLI/ { on = 1; next } /^## / && on { exit } on' "$repo/README.md" |
  awk '/^```sh/ { inb = 1; next } /^```/ { inb = 0; next } inb' |
  awk '{ if (sub(/\\$/, "")) { buf = buf $0 } else { print buf $0; buf = "" } }' > commands.txt

skip() {
  case "$1" in
    "nandlab bench") echo "32 GiB steady-state benchmark (minutes, ~10 GiB RAM)";;
    "nandlab crashtest --mode nested --samples 500") echo "minutes; CI runs a 200-sample nested stage";;
    *) return 1;;
  esac
}

n=0
flushed=
while IFS= read -r line; do
  cmd=$(echo "${line%%#*}" | sed 's/[[:space:]]*$//')
  [ -z "$cmd" ] && continue
  case "$cmd" in nandlab*) ;; *) continue;; esac
  if reason=$(skip "$cmd"); then
    echo "skip  $cmd   ($reason)"
    continue
  fi
  # `--flushed N` takes the N the stress line printed.
  if [[ "$cmd" == *"--flushed N"* ]]; then
    cmd=${cmd/--flushed N/--flushed $flushed}
  fi
  run=${cmd/#nandlab/$bin}
  start=$(date +%s%N)
  if ! out=$(eval "$run" 2>&1 < /dev/null); then
    echo "FAILED $cmd" >&2
    echo "$out" | tail -n 20 >&2
    exit 1
  fi
  if [[ "$cmd" == *"volume stress"* ]]; then
    flushed=$(echo "$out" | awk '/^flushed / { n = $2 } END { print n }')
    [ -n "$flushed" ] || { echo "volume stress printed no 'flushed N' line" >&2; exit 1; }
  fi
  printf 'ok    %-70s %6d ms\n' "$cmd" $(( ($(date +%s%N) - start) / 1000000 ))
  n=$((n + 1))
done < commands.txt
echo "$n README commands ran as written"
