#!/usr/bin/env bash
# CI stage: the shipped reproductions at --quick size (timed), then the same sweep on a real
# single-node Slurm cluster (Debian's slurm-wlm + munge, started and stopped here by PID),
# collected and compared byte for byte with a local run.
#
#   scripts/sweep-stage.sh target/release/nandlab
set -euo pipefail
bin=$(realpath "${1:?usage: sweep-stage.sh NANDLAB_BINARY}")
cd "$(dirname "$0")/.."
work=$(mktemp -d)
cluster=$work/slurm
cleanup() {
  scripts/slurm-local.sh stop "$cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "-- reproduce --quick (each within 120 CPU-seconds: 60 s on 2 cores)"
# The budget is CPU time (user + system), not wall time: CI runs this stage beside the
# background build of the test binaries, which takes the same cores (spftl --quick: 25 s
# alone, 49-54 s beside the build, 65 s with one more build beside it).
TIMEFORMAT='%R %U %S'
# AP's cost trends ("within 1 % of BL") do not hold everywhere, for reasons its reports
# give: those matrices must keep their other verdicts (named below), not every one.
for name in waf ap-table1 recovery ap ap-io ap-sensor ap-traces flares flares-fig5 flares-refresh dcr waogc spftl combined real-fs; do
  times=$( { time timeout 300 "$bin" reproduce "$name" --quick --out "$work/reproduce/$name" --quiet \
    > "$work/$name.out" 2> "$work/$name.err" ; } 2>&1 ) || { cat "$work/$name.err" >&2; exit 1; }
  read -r wall user sys <<< "$times"
  cpu_ms=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1000 }')
  grep -E "^ *[a-zA-Z][a-zA-Z ,.0-9×()-]*: " "$work/$name.out" | grep -v "^report:" | sed 's/^ */   /'
  echo "$name --quick: $cpu_ms ms of CPU, $wall s wall"
  if [ "$cpu_ms" -gt 120000 ]; then
    echo "reproduce $name --quick took $cpu_ms ms of CPU (budget 120 s: 60 s on 2 cores)" >&2
    exit 1
  fi
  case $name in
    # (At --quick size the AP cells count few errors: their count verdicts are partly or
    # inconclusive there, by their 95 % intervals.)
    ap) must="AP has fewer uncorrectable critical-page errors than the Baseline at every" ;;
    ap-sensor | ap-traces) must="AP is faster than Meta-Cure" ;;
    ap-io) must="the mean response time falls as the share of reads grows" ;;
    flares) must="FLARES moves more flash operations per second than fixed t = 50" ;;
    flares-refresh) must="refresh write amplification rises as the required retention shrinks" ;;
    # (It runs dcr-capacity after it: both parts' verdicts are in the output.)
    dcr) must="DCR's advantage grows with capacity" ;;
    # (It runs waogc-table1 after it: Table I measured, each scheme against its bound.)
    waogc) must="every scheme's measured worst write stays within its bound" ;;
    # (It runs spftl-random and spftl-traces after it. At --quick size the chip has so few PMT units that
    # write-backs batch several entries: the published absolute volumes are not reached.)
    spftl) must="SPFTL writes fewer metadata bytes than DFTL_por (paper"
           also="SPFTL_log writes fewer metadata bytes than DFTL_por (paper" ;;
    # (Two of its rows, WAO-GC's and DCR's, do not keep their technique's benefit, for reasons its report gives; its real-trace companion, combined-traces, shows forced checkpoints breaking the bound.)
    combined) must="the combined profile's worst page write stays within its own (re-derived) bound"
              also="the combined profile keeps FLARES's throughput" ;;
    # (Its WAF, time and metadata verdicts fail for the causes its report measures: the
    # flush buffer WAO-GC's bound does not admit yet, and roll-forward's young budget.)
    real-fs) must="the default profile's trims stay within their derived bound"
             also="the default profile's flushes stay within their derived bound" ;;
    *) must="" ;;
  esac
  # A verdict word that does not say the claim failed (the vocabulary is in sweep::verdict).
  ok="(holds|matches|same direction, (smaller|larger) by [0-9.e+-]+×|partly)"
  if [ -n "$must" ]; then
    for m in "$must" "${also:-$must}"; do
      if ! grep -qE "$ok: $(printf '%s' "$m" | sed 's/[][().*^$+?{}|\\]/\\&/g')" "$work/$name.out"; then
        echo "reproduce $name --quick: expected \"$m\" not to fail" >&2
        exit 1
      fi
    done
    also=""
  elif grep -qE "does NOT hold|contradicts" "$work/$name.out"; then
    echo "reproduce $name --quick: a trend that held before no longer does" >&2
    exit 1
  fi
done

echo "-- the waf --quick sweep as a Slurm job array"
scripts/slurm-local.sh start "$cluster"
export SLURM_CONF=$cluster/slurm.conf
"$bin" sweep experiments/waf.toml --quick --slurm "$work/job" --chunk 3
job=$(sbatch --parsable "$work/job/job.sh")
echo "submitted job $job"
# Bounded poll: the job leaves the queue when every array task has ended.
for i in $(seq 600); do
  if [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; then
    break
  fi
  if [ "$i" = 600 ]; then
    echo "job $job still queued after 300 s:" >&2
    squeue -j "$job" >&2 || true
    tail -n 30 "$cluster/slurmctld.log" "$cluster/slurmd.log" >&2 || true
    exit 1
  fi
  sleep 0.5
done
cat "$work"/job/logs/task-*.out
"$bin" sweep collect "$work/job" > /dev/null
echo "-- the same sweep locally, compared byte for byte"
"$bin" sweep experiments/waf.toml --quick --out "$work/local" --quiet > /dev/null 2>&1
for f in results.csv report.md $(cd "$work/local" && ls plots/*); do
  cmp "$work/local/$f" "$work/job/$f"
done
# results.json: identical but for its provenance (each names its own command line).
python3 - "$work/local/results.json" "$work/job/results.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert all("provenance" in x for x in (a, b)), "results.json without provenance"
for x in (a, b):
    x.pop("provenance")
assert a == b, "results.json differ beyond their provenance"
PY
echo "slurm run and local run wrote identical results.json, results.csv, report.md and plots"
