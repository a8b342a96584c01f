# Shared by the NBD test scripts (sourced): a work folder, PID bookkeeping and cleanup,
# and starting/stopping `nandlab serve` on a random loopback port.
# Expects NANDLAB (path to the binary) to be set.
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
url="nbd://127.0.0.1:$port"
pids=()
server_pid=""
made_pki=""
scratch="" # a folder outside $work a stage made (e.g. in /dev/shm), removed with it
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
  # A libnbd certificate folder a stage made for fio (see nbd-stage.sh), never one it found.
  if [ -n "$made_pki" ]; then rm -rf "$made_pki"; rmdir /etc/pki 2>/dev/null || true; fi
  # NBD_KEEP_WORK=DIR keeps the work folder there for a look after the run.
  if [ -n "${NBD_KEEP_WORK:-}" ]; then rm -rf "$NBD_KEEP_WORK"; mv "$work" "$NBD_KEEP_WORK"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# start_server IMAGE [extra args]: starts the server and waits for its status line.
start_server() {
  local image=$1; shift
  : >"$work/serve.out"
  "$NANDLAB" serve --image "$image" --listen "127.0.0.1:$port" "$@" >"$work/serve.out" 2>>"$work/serve.err" &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 1 200); do
    grep -q '^serving' "$work/serve.out" && return 0
    kill -0 "$server_pid" 2>/dev/null || fail "server exited: $(cat "$work/serve.err")"
    sleep 0.05
  done
  fail "server did not start"
}

# stop_server TERM|KILL
stop_server() {
  kill "-$1" "$server_pid"
  wait "$server_pid" 2>/dev/null || [ "$1" = KILL ] || fail "unclean exit after SIG$1"
}

# replay_toml PRESET BLOCKS_PER_PLANE FTL_FILE: an experiment that replays what a server
# on that image saw (its chip and FTL file; serve's controller and error model, no
# preconditioning), for `nandlab run --trace`.
replay_toml() {
  printf '[chip]\npreset = "%s"\n[chip.geometry]\nblocks_per_plane = %s\n' "$1" "$2"
  printf '[controller]\nmode = "bytes"\n[errors]\nmodel = "none"\n'
  cat "$3"
  printf '[precondition]\nenabled = false\n[workload]\nrequests = 1\n'
}
