#!/usr/bin/env bash
# CI stage for the docs a newcomer reads: every relative link of README.md,
# ARCHITECTURE.md and docs/ (the guide, the design notes, the reproductions) must lead to a
# file that exists, and every `sh` block of the guide (docs/guide/*.md) runs as written
# (with `nandlab` standing for the given binary) in a scratch directory that sees the
# repo's examples/, crates/ and experiments/; `cargo run` lines run in the repository.
# `console` blocks are shown, not run (long runs, guests, clusters: stages of their own).
# The lines that take minutes or tens of GiB are skipped with the reason printed.
#
#   scripts/guide-check.sh target/release/nandlab
set -euo pipefail
bin=$(realpath "${1:?usage: guide-check.sh NANDLAB_BINARY}")
repo=$(realpath "$(dirname "$0")/..")

echo "-- links"
python3 - "$repo" <<'PY'
import pathlib, re, sys
repo = pathlib.Path(sys.argv[1])
docs = [repo / "README.md", repo / "ARCHITECTURE.md"] + sorted((repo / "docs").rglob("*.md"))
bad, n = [], 0
for d in docs:
    text = d.read_text()
    # Code blocks hold no links.
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        n += 1
        path = target.split("#")[0]
        if not (d.parent / path).exists():
            bad.append(f"{d.relative_to(repo)}: {target}")
print(f"{n} relative links in {len(docs)} files")
if bad:
    sys.exit("broken links:\n" + "\n".join(bad))
PY

echo "-- commands"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for d in examples crates experiments; do ln -s "$repo/$d" "$work/$d"; done
cd "$work"
head -c 65536 /dev/urandom > data.bin   # the ECC examples' input file

# The guide's ```sh blocks, continuation lines joined.
for f in "$repo"/docs/guide/*.md; do
  awk '/^```sh/ { inb = 1; next } /^```/ { inb = 0; next } inb' "$f"
done | awk '{ if (sub(/\\$/, "")) { buf = buf $0 } else { print buf $0; buf = "" } }' > commands.txt

skip() {
  case "$1" in
    "nandlab bench") echo "32 GiB steady-state benchmark (minutes, ~10 GiB RAM)";;
    "nandlab crashtest --mode nested --samples 500") echo "minutes; CI runs 200-sample nested stages";;
    *) return 1;;
  esac
}

n=0
flushed=
while IFS= read -r line; do
  cmd=$(echo "${line%%#*}" | sed 's/[[:space:]]*$//')
  [ -z "$cmd" ] && continue
  case "$cmd" in nandlab*|"cargo run"*) ;; *) continue;; esac
  if reason=$(skip "$cmd"); then
    echo "skip  $cmd   ($reason)"
    continue
  fi
  # `--flushed N` takes the N the stress line printed.
  if [[ "$cmd" == *"--flushed N"* ]]; then
    cmd=${cmd/--flushed N/--flushed $flushed}
  fi
  case "$cmd" in
    nandlab*) run=${cmd/#nandlab/$bin}; dir=$work;;
    *) run=$cmd; dir=$repo;;
  esac
  start=$(date +%s%N)
  if ! out=$(cd "$dir" && eval "$run" 2>&1 < /dev/null); then
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
echo "$n guide commands ran as written"
