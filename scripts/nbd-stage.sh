#!/usr/bin/env bash
# Real clients against `nandlab serve` on 127.0.0.1: qemu-io, nbdcopy, qemu-img with an ext4
# image and e2fsck, fio's nbd engine with verification across clean and SIGKILL restarts
# (plus a control run that must fail), and fio throughput beside qemu-nbd on a raw file.
# Every step has a time bound; everything started is stopped by PID. A missing tool skips
# its step and says so. Usage: scripts/nbd-stage.sh [path/to/nandlab]
set -euo pipefail
NANDLAB=${1:-target/release/nandlab}
NANDLAB=$(realpath "$NANDLAB")
root=$(realpath "$(dirname "$0")/..")
. "$(dirname "$0")/nbd-common.sh"
# tiny-mlc with 1024 blocks per plane and the page-level FTL: ~96 MiB exported (the
# default, the combined profile, exports ~47 MiB of it; its own step is below).
page_ftl=(--ftl "$root/examples/ftl/page.toml")
new_disk() {
  rm -f "$work/$1.chip"
  start_server "$work/$1.chip" --create tiny-mlc --blocks-per-plane 1024 "${page_ftl[@]}"
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

echo "-- the combined profile (serve --create's default): fio verified random writes, SIGKILL restart"
if have fio && fio --enghelp 2>/dev/null | grep -qw nbd; then
  cd "$work"
  cjob=(--name=c --ioengine=nbd --uri="$url" --rw=randwrite --bs=4k --size=16M
        --verify=crc32c --verify_fatal=1 --randrepeat=1 --randseed=11 --end_fsync=1)
  rm -f "$work/comb.chip"
  # No --ftl: `serve --create` formats the combined profile by default.
  start_server "$work/comb.chip" --create tiny-mlc --blocks-per-plane 1024
  grep -q 'scheme = "combined"' "$work/comb.chip.ftl.toml" || fail "combined: not the default FTL"
  sed 's/^/   /' "$work/serve.out"
  timeout 300 fio "${cjob[@]}" --do_verify=1 >"$work/cfio1.log" 2>&1 || { tail -20 "$work/cfio1.log"; fail "combined: fio write+verify"; }
  stop_server KILL
  start_server "$work/comb.chip"; sed 's/^/   /' "$work/serve.out"
  timeout 300 fio "${cjob[@]}" --verify_only >"$work/cfio2.log" 2>&1 || { tail -20 "$work/cfio2.log"; fail "combined: fio verify after SIGKILL"; }
  stop_server TERM
  cd - >/dev/null
  echo "   ok"
else
  echo "   skipped: fio with the nbd engine not installed"
fi

echo "-- block status: nbdinfo --map and qemu-img map see the holes (never written, trimmed)"
if have nbdinfo && have qemu-io && have qemu-img; then
  new_disk map
  timeout 60 qemu-io -f raw "$url" -c "write -P 0x11 1M 1M" -c "write -P 0x22 8M 512k" \
    -c "discard 1M 256k" -c flush >/dev/null || fail "qemu-io for the map"
  timeout 60 nbdinfo --map "$url" >"$work/map.txt" || fail "nbdinfo --map"
  timeout 60 qemu-img map --output=json -f raw "$url" >"$work/qmap.json" || fail "qemu-img map"
  # Data exactly at 1.25..2 MiB and 8..8.5 MiB in both tools; holes elsewhere.
  python3 - "$work/map.txt" "$work/qmap.json" <<'PY' || fail "block status maps"
import json, sys
want = [(1280 << 10, 2 << 20), (8 << 20, (8 << 20) + (512 << 10))]
def merged(spans):  # adjacent data extents (from separate requests) as one
    out = []
    for a, b in spans:
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
spans = []
for line in open(sys.argv[1]):
    off, length, kind = (int(x) for x in line.split()[:3])
    if kind & 1 == 0:
        spans.append((off, off + length))
assert merged(spans) == want, f"nbdinfo --map data extents {spans}, expected {want}"
m = json.load(open(sys.argv[2]))
spans = [(e["start"], e["start"] + e["length"]) for e in m if e["data"]]
assert merged(spans) == want, f"qemu-img map data extents {spans}, expected {want}"
PY
  stop_server TERM
  echo "   ok (data at 1.25-2 MiB and 8-8.5 MiB, holes elsewhere, in both tools)"
else
  echo "   skipped: nbdinfo, qemu-io or qemu-img missing"
fi

echo "-- TLS with client certificates: qemu-io, qemu-img, nbdinfo, nbdcopy; others refused"
if have openssl && have qemu-io && have qemu-img && have nbdinfo && have nbdcopy; then
  tls=$work/tls
  mkdir -p "$tls/good" "$tls/rogue" "$tls/ca" "$tls/otherca"
  ca() { # ca DIR NAME: a CA key and self-signed certificate
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/ca-key.pem" -out "$1/ca-cert.pem" \
      -days 2 -subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  }
  leaf() { # leaf CADIR OUT_PREFIX CN USAGE [SAN]
    openssl req -newkey rsa:2048 -nodes -keyout "$2-key.pem" -out "$2.csr" -subj "/CN=$3" 2>/dev/null
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$4"
      [ -n "${5:-}" ] && echo "subjectAltName=$5"
    } >"$2.ext"
    openssl x509 -req -in "$2.csr" -CA "$1/ca-cert.pem" -CAkey "$1/ca-key.pem" -CAcreateserial \
      -out "$2-cert.pem" -days 2 -extfile "$2.ext" 2>/dev/null
  }
  ca "$tls/ca" "nandlab test CA"
  ca "$tls/otherca" "another CA"
  leaf "$tls/ca" "$tls/server" localhost serverAuth "IP:127.0.0.1,DNS:localhost"
  leaf "$tls/ca" "$tls/good/client" "good client" clientAuth
  leaf "$tls/otherca" "$tls/rogue/client" "rogue client" clientAuth
  # Both clients trust the server's CA; only one holds a certificate that CA signed.
  cp "$tls/ca/ca-cert.pem" "$tls/good/ca-cert.pem"
  cp "$tls/ca/ca-cert.pem" "$tls/rogue/ca-cert.pem"
  rm -f "$work/tls.chip"
  start_server "$work/tls.chip" --create tiny-mlc --blocks-per-plane 1024 "${page_ftl[@]}" \
    --tls-cert "$tls/server-cert.pem" --tls-key "$tls/server-key.pem" --tls-ca "$tls/ca/ca-cert.pem"
  obj=(--object "tls-creds-x509,id=tls0,endpoint=client,dir=$tls/good")
  img="driver=nbd,host=127.0.0.1,port=$port,tls-creds=tls0"
  timeout 60 qemu-io "${obj[@]}" --image-opts "$img" -c "write -P 0x3c 0 1M" \
    -c "read -P 0x3c 0 1M" -c flush >"$work/tlsio.log" 2>&1 || { cat "$work/tlsio.log"; fail "qemu-io over TLS"; }
  if grep -qi "fail\|error" "$work/tlsio.log"; then cat "$work/tlsio.log"; fail "qemu-io over TLS pattern"; fi
  timeout 60 qemu-img info "${obj[@]}" --image-opts "$img" >/dev/null || fail "qemu-img info over TLS"
  nbds="nbds://127.0.0.1:$port/?tls-certificates=$tls/good"
  timeout 60 nbdinfo "$nbds" >"$work/tlsinfo.txt" || fail "nbdinfo over TLS"
  head -c $((4 << 20)) /dev/urandom >"$work/tin.bin"
  timeout 60 nbdcopy "$work/tin.bin" "$nbds" || fail "nbdcopy in over TLS"
  timeout 60 nbdcopy "$nbds" "$work/tout.bin" || fail "nbdcopy out over TLS"
  cmp -n $((4 << 20)) "$work/tin.bin" "$work/tout.bin" || fail "nbdcopy over TLS differs"
  if timeout 30 nbdinfo "nbds://127.0.0.1:$port/?tls-certificates=$tls/rogue" >/dev/null 2>&1; then
    fail "a client certificate from another CA was accepted"
  fi
  if timeout 30 nbdinfo "$url" >/dev/null 2>&1; then
    fail "a plaintext client was served although TLS is required"
  fi
  if timeout 30 qemu-io -f raw "$url" -c "read 0 4k" >/dev/null 2>&1; then
    fail "qemu-io without TLS was served"
  fi
  stop_server TERM
  echo "   ok (qemu-io, qemu-img, nbdinfo, nbdcopy over TLS; another CA's client and plaintext refused)"
else
  echo "   skipped: openssl, qemu-io, qemu-img, nbdinfo or nbdcopy missing"
fi

echo "-- throughput: 4 KiB random writes (queue depth 16, 2.5x the export: GC active) and reads,"
echo "   nandlab, nandlab over TLS and qemu-nbd on a raw file, 3 alternating rounds, medians;"
echo "   servers on CPU 0 and fio on CPU 1 when there are two (the client's own TLS work then"
echo "   does not run on the server's CPU), and the CPU time per request of each server and of"
echo "   fio (the client: fio + libnbd + GnuTLS; what limits IOPS when it is the busier side)"
if have fio && have qemu-nbd && fio --enghelp 2>/dev/null | grep -qw nbd; then
  perf=(--bs=4k --iodepth=16 --randrepeat=1 --output-format=json)
  pin_server=() pin_client=()
  if have taskset && [ "$(nproc)" -ge 2 ]; then pin_server=(taskset -a -pc 0) pin_client=(taskset -c 1); fi
  cpu_ticks() { # cpu_ticks PID: user + system time of the process, in clock ticks
    awk '{ print $14 + $15 }' "/proc/$1/stat"
  }
  run_perf() { # run_perf URL NAME RW IO_SIZE SERVER_PID: "IOPS server-µs/request client-µs/request"
    local before after
    before=$(cpu_ticks "$5")
    timeout 600 "${pin_client[@]}" fio --name="$2" --ioengine=nbd --uri="$1" --rw="$3" --io_size="$4" "${perf[@]}" \
      >"$work/$2.json" 2>"$work/$2.err" || { cat "$work/$2.err"; fail "fio $2"; }
    after=$(cpu_ticks "$5")
    python3 -c 'import json, sys
t = open(sys.argv[1]).read(); j = json.loads(t[t.index("{"):])["jobs"][0][sys.argv[2]]
job = json.loads(t[t.index("{"):])["jobs"][0]
ticks = int(sys.argv[4]) - int(sys.argv[3])
ios = max(j["total_ios"], 1)
client = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] * 1e3 / ios
print(round(j["iops"]), round(ticks * 1e6 / int(sys.argv[5]) / ios, 2), round(client, 2))' \
      "$work/$2.json" "$([[ $3 == *write* ]] && echo write || echo read)" "$before" "$after" "$(getconf CLK_TCK)"
  }
  new_disk perf
  plain_pid=$server_pid
  [ ${#pin_server[@]} -eq 0 ] || "${pin_server[@]}" "$plain_pid" >/dev/null
  size=$(awk '/^serving/ { gsub(/[(]/, "", $3); print $3 }' "$work/serve.out")
  [ -n "$size" ] || fail "no export size in the status line"
  gc=$((size * 5 / 2 / 4096 * 4096))
  targets=("nandlab nbd://127.0.0.1:$port/ $plain_pid")
  # fio's nbd engine may not name a certificate folder in its URI (libnbd refuses local
  # file access there): libnbd's default folder is used, /etc/pki/libnbd for root (made
  # here only if absent, and removed after) or ~/.pki/libnbd (HOME pointed at the work
  # folder).
  if [ "$(id -u)" = 0 ]; then pki=/etc/pki/libnbd; else pki=$work/home/.pki/libnbd; fi
  tport=$((port + 2))
  if [ -n "${tls:-}" ] && [ -f "$tls/server-cert.pem" ] && [ ! -e "$pki" ]; then
    mkdir -p "$pki"
    if [ "$pki" = /etc/pki/libnbd ]; then made_pki=$pki; fi
    cp "$tls/good/ca-cert.pem" "$tls/good/client-cert.pem" "$tls/good/client-key.pem" "$pki/"
    "$NANDLAB" serve --image "$work/perftls.chip" --create tiny-mlc --blocks-per-plane 1024 "${page_ftl[@]}" \
      --listen "127.0.0.1:$tport" --tls-cert "$tls/server-cert.pem" --tls-key "$tls/server-key.pem" \
      --tls-ca "$tls/ca/ca-cert.pem" >"$work/tls-serve.out" 2>&1 &
    tls_pid=$!
    pids+=("$tls_pid")
    [ ${#pin_server[@]} -eq 0 ] || "${pin_server[@]}" "$tls_pid" >/dev/null
    for _ in $(seq 1 200); do grep -q '^serving' "$work/tls-serve.out" && break; sleep 0.05; done
    targets+=("TLS nbds://127.0.0.1:$tport/ $tls_pid")
  else
    echo "   (TLS runs skipped: no certificates from the TLS step, or $pki exists already)"
  fi
  truncate -s "$size" "$work/raw.img"
  qport=$((port + 1))
  qemu-nbd -f raw -b 127.0.0.1 -p "$qport" -t "$work/raw.img" >/dev/null 2>&1 &
  qemu_pid=$!
  pids+=("$qemu_pid")
  [ ${#pin_server[@]} -eq 0 ] || "${pin_server[@]}" "$qemu_pid" >/dev/null
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$qport") 2>/dev/null && break; sleep 0.05; done
  targets+=("qemu-nbd nbd://127.0.0.1:$qport/ $qemu_pid")
  : >"$work/perf.txt"
  for round in 1 2 3; do
    for t in "${targets[@]}"; do
      read -r name u spid <<<"$t"
      w=$(HOME=$work/home run_perf "$u" "$name-w$round" randwrite "$gc" "$spid")
      r=$(HOME=$work/home run_perf "$u" "$name-r$round" randread 32M "$spid")
      echo "$name $w $r" >>"$work/perf.txt"
    done
  done
  kill -USR1 "$plain_pid"; sleep 0.3
  stats=$(tail -1 "$work/serve.err")
  python3 - "$work/perf.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, w, wcpu, wcli, r, rcpu, rcli = line.split()
    runs.setdefault(name, []).append(
        (int(w), int(r), float(wcpu), float(rcpu), float(wcli), float(rcli)))
med = {n: [statistics.median(x[i] for x in v) for i in range(6)] for n, v in runs.items()}
def table(title, cols, fmt):
    print(f"   {title:24}" + "".join(f"{n:>10}" for n in med) + "   nandlab/qemu-nbd   TLS/plain")
    for i, op in cols:
        row = "".join(f"{med[n][i]:10{fmt}}" for n in med)
        q = med["nandlab"][i] / med["qemu-nbd"][i]
        t = f'{med["TLS"][i] / med["nandlab"][i]:.2f}x' if "TLS" in med else "-"
        print(f"   {op:24}{row}   {q:15.2f}x   {t:>9}")
table("IOPS (median of 3)", [(0, "4 KiB randwrite"), (1, "4 KiB randread")], ".0f")
table("server CPU µs/request", [(2, "4 KiB randwrite"), (3, "4 KiB randread")], ".2f")
table("client CPU µs/request", [(4, "4 KiB randwrite"), (5, "4 KiB randread")], ".2f")
PY
  # Where TLS's write cost lies: libnbd sends a WRITE's header and payload in two send
  # calls, joined into one TCP segment in plaintext (MSG_MORE) but not over TLS (two records,
  # two segments). An LD_PRELOAD shim swaps that one behaviour in fio's client, both ways.
  if [ -n "${tls_pid:-}" ] && have cc &&
    cc -O2 -shared -fPIC -o "$work/shim.so" "$root/scripts/nbd-send-shim.c" -ldl 2>"$work/shim.err"; then
    : >"$work/split.txt"
    for round in 1 2 3; do
      for v in "plain nbd://127.0.0.1:$port/ $plain_pid none" \
        "plain-split nbd://127.0.0.1:$port/ $plain_pid split" \
        "TLS nbds://127.0.0.1:$tport/ $tls_pid none" \
        "TLS-cork nbds://127.0.0.1:$tport/ $tls_pid cork"; do
        read -r name u spid mode <<<"$v"
        w=$(HOME=$work/home SHIM_MODE=$mode LD_PRELOAD=$work/shim.so run_perf "$u" "$name-s$round" randwrite "$gc" "$spid")
        echo "$name $w" >>"$work/split.txt"
      done
    done
    echo "   TLS cost split, 4 KiB randwrite, medians of 3 (the shim, scripts/nbd-send-shim.c,"
    echo "   changes only how fio's libnbd cuts a WRITE into TCP segments):"
    python3 - "$work/split.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, iops, srv, cli = line.split()
    runs.setdefault(name, []).append((int(iops), float(srv), float(cli)))
med = {n: [statistics.median(x[i] for x in v) for i in range(3)] for n, v in runs.items()}
label = {
    "plain": "plaintext (libnbd: header+payload, 1 segment)",
    "plain-split": "plaintext, header in its own segment",
    "TLS": "TLS (libnbd: 2 records, 2 segments)",
    "TLS-cork": "TLS, the 2 records in 1 segment",
}
print(f"   {'client':48}{'IOPS':>8}{'server µs':>11}{'client µs':>11}{'IOPS/plain':>12}")
for n, (iops, srv, cli) in med.items():
    print(f"   {label[n]:48}{iops:8.0f}{srv:11.2f}{cli:11.2f}{iops / med['plain'][0]:11.2f}x")
PY
  else
    echo "   (TLS cost split skipped: no TLS server or no C compiler for the shim)"
  fi
  if [ -n "${made_pki:-}" ]; then rm -rf "$made_pki"; rmdir /etc/pki 2>/dev/null || true; made_pki=; fi
  echo "   nandlab FTL after the runs: $stats" | cut -c1-400
  stop_server TERM
else
  echo "   skipped: fio or qemu-nbd missing"
fi

echo "== nbd stage passed"
