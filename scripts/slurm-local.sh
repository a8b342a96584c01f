#!/usr/bin/env bash
# A single-node Slurm cluster on localhost, from Debian's slurm-wlm and munge packages, for
# the sweep stage of CI (and for trying `nandlab sweep --slurm` by hand).
#
#   scripts/slurm-local.sh start DIR   # munged + slurmctld + slurmd, state and logs in DIR
#   scripts/slurm-local.sh stop DIR    # stops the three daemons by the PIDs recorded in DIR
#
# After `start`, export SLURM_CONF=DIR/slurm.conf for sbatch/squeue/sacct.
set -euo pipefail
cmd=${1:?usage: slurm-local.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: slurm-local.sh start|stop DIR}")

stop_pid() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

case $cmd in
start)
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  node=$(hostname -s)
  cpus=$(nproc)
  # munged with its own key, socket and PID file in DIR (root may run it with --force).
  if [ ! -f "$dir/munge/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 600 "$dir/munge/munge.key"
  fi
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  cat > "$dir/slurm.conf" <<CONF
ClusterName=nandlab
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$dir/slurm.conf"
  slurmd -f "$dir/slurm.conf"
  # Bounded wait for the node to come up.
  for _ in $(seq 60); do
    if sinfo -h -o %t 2>/dev/null | grep -Eq '^(idle|mix|alloc)'; then
      echo "slurm up: $(sinfo -h -o '%P %D %t %C')"
      exit 0
    fi
    sleep 0.5
  done
  echo "slurm did not come up; logs:" >&2
  tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
  exit 1
  ;;
stop)
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  stop_pid "$dir/munge/munged.pid"
  ;;
*)
  echo "usage: slurm-local.sh start|stop DIR" >&2
  exit 2
  ;;
esac
