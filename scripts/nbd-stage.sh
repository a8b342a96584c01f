#!/usr/bin/env bash
# Real clients against `nandlab serve` on 127.0.0.1: qemu-io, nbdcopy, qemu-img with an ext4
# image and e2fsck, fio's nbd engine with verification across clean and SIGKILL restarts
# (plus a control run that must fail), and fio throughput beside qemu-nbd on a raw file.
# Every step has a time bound; everything started is stopped by PID. A missing tool skips
# its step and says so. Usage: scripts/nbd-stage.sh [path/to/nandlab]
set -euo pipefail
NANDLAB=${1:-target/release/nandlab}
NANDLAB=$(realpath "$NANDLAB")
. "$(dirname "$0")/nbd-common.sh"
# tiny-mlc with 1024 blocks per plane: ~96 MiB exported.
new_disk() {
  rm -f "$work/$1.chip"
  start_server "$work/$1.chip" --create tiny-mlc --blocks-per-plane 1024
  sed 's/^/   /' "$work/serve.out"
}

echo "== nbd stage: $NANDLAB on $url"

echo "-- qemu-io: pattern writes and reads, zero writes, discard"
if have qemu-io; then
  new_disk qio
  timeout 60 qemu-io -f raw "$url" -c "write -P 0xab 0 1M" -c "read -P 0xab 0 1M" \
    -c "write -P 0x5c 1000 3000" -c "read -P 0x5c 1000 3000" -c "write -z 8192 65536" \
    -c "read -P 0 8192 65536" -c "discard 512k 256k" -c flush >"$work/qio.log" 2>&1 \
    || { cat "$work/qio.log"; fail "qemu-io"; }
  grep -qi "fail\|error" "$work/qio.log" && { cat "$work/qio.log"; fail "qemu-io pattern"; }
  stop_server TERM
  echo "   ok"
else
  echo "   skipped: qemu-io not installed"
fi

echo "-- nbdcopy: 64 MiB in and out, cmp"
if have nbdcopy; then
  new_disk copy
  head -c $((64 << 20)) /dev/urandom >"$work/in.bin"
  timeout 120 nbdcopy "$work/in.bin" "$url" || fail "nbdcopy in"
  timeout 120 nbdcopy "$url" "$work/out.bin" || fail "nbdcopy out"
  cmp -n $((64 << 20)) "$work/in.bin" "$work/out.bin" || fail "nbdcopy round trip differs"
  stop_server TERM
  rm -f "$work/in.bin" "$work/out.bin"
  echo "   ok"
else
  echo "   skipped: nbdcopy not installed"
fi

echo "-- qemu-img: an ext4 image in, compare, back out, e2fsck"
if have qemu-img && have mke2fs && have e2fsck; then
  new_disk fs
  mkdir -p "$work/tree/sub"
  for i in $(seq 1 40); do head -c $((i * 7919)) /dev/urandom >"$work/tree/sub/f$i"; done
  echo hello >"$work/tree/hello.txt"
  mke2fs -q -t ext4 -d "$work/tree" "$work/fs.img" 48M
  timeout 120 qemu-img convert -n -f raw -O raw "$work/fs.img" "$url" || fail "qemu-img convert in"
  timeout 120 qemu-img compare -f raw -F raw "$work/fs.img" "$url" >/dev/null || fail "qemu-img compare"
  timeout 120 qemu-img convert -f raw -O raw "$url" "$work/back.img" || fail "qemu-img convert out"
  truncate -s 48M "$work/back.img"
  e2fsck -fn "$work/back.img" >"$work/fsck.log" 2>&1 || { cat "$work/fsck.log"; fail "e2fsck"; }
  stop_server TERM
  echo "   ok (e2fsck -fn clean)"
else
  echo "   skipped: qemu-img, mke2fs or e2fsck missing"
fi

echo "-- fio nbd engine: verified random writes; clean restart, SIGKILL restart, control"
if have fio && fio --enghelp 2>/dev/null | grep -qw nbd; then
  # fio saves its verify state (local-v-0-verify.state) in the current folder: keep it in
  # the work folder, not the checkout.
  cd "$work"
  job=(--name=v --ioengine=nbd --uri="$url" --rw=randwrite --bs=4k --size=16M
       --verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=7 --end_fsync=1)
  new_disk fio
  timeout 300 fio "${job[@]}" --do_verify=1 >"$work/fio1.log" 2>&1 || { tail -20 "$work/fio1.log"; fail "fio write+verify"; }
  stop_server TERM
  start_server "$work/fio.chip"; sed 's/^/   /' "$work/serve.out"
  timeout 300 fio "${job[@]}" --verify_only >"$work/fio2.log" 2>&1 || { tail -20 "$work/fio2.log"; fail "fio verify after clean restart"; }
  stop_server KILL
  start_server "$work/fio.chip"; sed 's/^/   /' "$work/serve.out"
  timeout 300 fio "${job[@]}" --verify_only >"$work/fio3.log" 2>&1 || { tail -20 "$work/fio3.log"; fail "fio verify after SIGKILL"; }
  # Control: one block changed behind fio's back must fail verification.
  if have qemu-io; then
    timeout 60 qemu-io -f raw "$url" -c "write -P 0x33 4096 4096" -c flush >/dev/null
    if timeout 300 fio "${job[@]}" --verify_only >"$work/fio4.log" 2>&1; then
      fail "control: fio verified a corrupted volume"
    fi
    echo "   control run failed as it must"
  fi
  stop_server TERM
  cd - >/dev/null
  echo "   ok"
else
  echo "   skipped: fio with the nbd engine not installed"
fi

echo "-- throughput: the same fio job on nandlab and on qemu-nbd serving a raw file"
if have fio && have qemu-nbd && fio --enghelp 2>/dev/null | grep -qw nbd; then
  perf=(--bs=4k --size=32M --randrepeat=1 --output-format=json)
  run_perf() { # run_perf URL NAME RW
    timeout 300 fio --name="$2" --ioengine=nbd --uri="$1" --rw="$3" "${perf[@]}" >"$work/$2.json" 2>/dev/null || fail "fio $2"
    python3 - "$work/$2.json" "$3" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text[text.index("{"):])["jobs"][0]
d = j["write" if "write" in sys.argv[2] else "read"]
print(f'{d["iops"]:.0f} {d["bw"] / 1024:.1f} {d["clat_ns"]["mean"] / 1000:.1f}')
EOF
  }
  new_disk perf
  nw=$(run_perf "$url" nandlab-w randwrite); nr=$(run_perf "$url" nandlab-r randread)
  kill -USR1 "$server_pid"; sleep 0.3
  stats=$(tail -1 "$work/serve.err")
  stop_server TERM
  truncate -s 96M "$work/raw.img"
  qport=$((port + 1))
  qemu-nbd -f raw -b 127.0.0.1 -p "$qport" -t "$work/raw.img" >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$qport") 2>/dev/null && break; sleep 0.05; done
  qw=$(run_perf "nbd://127.0.0.1:$qport" qemu-w randwrite); qr=$(run_perf "nbd://127.0.0.1:$qport" qemu-r randread)
  python3 - "$nw" "$nr" "$qw" "$qr" <<'EOF'
import sys
rows = [s.split() for s in sys.argv[1:]]
names = ["4 KiB randwrite", "4 KiB randread"]
print("   workload          nandlab IOPS  MiB/s  lat µs | qemu-nbd IOPS  MiB/s  lat µs | ratio")
for i, n in enumerate(names):
    a, b = rows[i], rows[i + 2]
    print(f"   {n:16} {float(a[0]):12.0f} {float(a[1]):6.1f} {float(a[2]):7.1f} | {float(b[0]):13.0f} {float(b[1]):6.1f} {float(b[2]):7.1f} | {float(a[0]) / float(b[0]):.2f}x")
EOF
  echo "   nandlab FTL after the run: $stats" | cut -c1-400
else
  echo "   skipped: fio or qemu-nbd missing"
fi

echo "== nbd stage passed"
