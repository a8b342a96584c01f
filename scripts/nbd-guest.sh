#!/usr/bin/env bash
# A Linux guest under qemu-system-x86_64 (TCG) with its disk on `nandlab serve`: mkfs.ext4,
# mount, write files, fsync, fstrim, unmount, fsck clean; after a server restart the
# checksums match. Once with 512-byte and once with 4096-byte logical blocks.
# Needs: qemu-system-x86, busybox-static, cpio, e2fsprogs and a Debian kernel package
# (fetched with `apt-get download`, unpacked with `dpkg-deb -x`; nothing installed).
# Usage: scripts/nbd-guest.sh [path/to/nandlab]
#        scripts/nbd-guest.sh path/to/nandlab --capture-sensor OUT.blktrace
#   The second form runs only the sensor-logger guest (records appended to CSV files and
#   fsynced one by one, files rotated, ext4 mounted with -o discard) on a server started
#   with --record-trace, and keeps the trace it recorded (how traces/sensor-ext4 was made).
#        scripts/nbd-guest.sh path/to/nandlab --capture-dcr OUT.blktrace
#   The third runs only DCR's benchmark shapes on ext2 (see the `dcr` guest mode below;
#   how traces/dcr-ext2 was made).
#        scripts/nbd-guest.sh path/to/nandlab --capture-dcr-real OUT.blktrace
#   The same phases with the real programs where Debian packages them: bonnie++ for Bonnie,
#   postmark for Postmark, fio (four writers) for Tiotest (how traces/dcr-real-ext2 was made).
#        scripts/nbd-guest.sh path/to/nandlab --capture-waogc OUT.blktrace
#   WAO-GC's benchmark shapes on ext2 (the `waogc` guest mode) on k9k8g08u0b under WAO-GC
#   (how traces/waogc-ext2 was made).
#        scripts/nbd-guest.sh path/to/nandlab --capture-waogc-real OUT.blktrace
#   The same phases with bonnie++, postmark and fio for Bonnie, Postmark and Tiobench
#   (how traces/waogc-real-ext2 was made).
#        scripts/nbd-guest.sh path/to/nandlab --live-waogc [OUT.blktrace]
#   A file server's churn on ext2 live under the pure page-level scheme, RTGC, WAO-GC, GFTL
#   and RFTL (LIVE_SCHEMES="gftl rftl" for some of them; with OUT, the pure scheme's
#   requests recorded: how traces/churn-ext2 was made)
#   (examples/realtime/*.toml), each server's page service times and bound printed.
#        scripts/nbd-guest.sh path/to/nandlab --capture-realfs OUTDIR
#   Real programs on ext4 (mkfs discards the whole disk; mounted with -o discard), one
#   fresh disk each, every request recorded to OUTDIR/NAME-ext4.blktrace: postmark,
#   sqlite (WAL, synchronous=FULL, a transaction per statement), dbench, sensor (a logger
#   with rotation), copy (a tree copied and the original removed), bonnie (bonnie++).
#   REALFS="postmark sqlite" picks some (how traces/realfs was made).
#        scripts/nbd-guest.sh path/to/nandlab --emulated-sqlite [REPORT.md]
#   SQLite in the guest (WAL, synchronous=FULL, a transaction per statement, each timed by
#   sqlite3's own `.timer`) on a full device under `serve --timing emulate`: WAO-GC against
#   pure page-level GC on k9k8g08u0b; the program's own latencies beside each scheme's
#   bound (with REPORT.md, written there as Markdown).
#        scripts/nbd-guest.sh path/to/nandlab --discard-only
#   Only the last stage: mkfs.ext4 and a discard-mounted workload on the default profile
#   and on the page FTL, their mkfs wall times compared.
set -euo pipefail
NANDLAB=$(realpath "${1:-target/release/nandlab}")
capture=""
capture_mode=""
case "${2:-}" in
  --capture-sensor) capture=$(realpath -m "$3"); capture_mode=sensor ;;
  --capture-dcr) capture=$(realpath -m "$3"); capture_mode=dcr ;;
  --capture-dcr-real) capture=$(realpath -m "$3"); capture_mode=dcr-real ;;
  --capture-waogc) capture=$(realpath -m "$3"); capture_mode=waogc ;;
  --capture-waogc-real) capture=$(realpath -m "$3"); capture_mode=waogc-real ;;
  --live-waogc) capture_mode=live; if [ -n "${3:-}" ]; then capture=$(realpath -m "$3"); fi ;;
  --capture-realfs) capture=$(realpath -m "$3"); capture_mode=realfs ;;
  --discard-only) capture_mode=discard ;;
  --emulated-sqlite) capture_mode=emu-sqlite; if [ -n "${3:-}" ]; then capture=$(realpath -m "$3"); fi ;;
esac
root=$(realpath "$(dirname "$0")/..")
for t in qemu-system-x86_64 busybox cpio dpkg-deb mke2fs apt-get; do
  command -v "$t" >/dev/null || { echo "   skipped: $t missing"; exit 0; }
done
. "$(dirname "$0")/nbd-common.sh"

echo "-- guest kernel and initramfs"
(cd "$work" && timeout 120 apt-get download linux-image-amd64 >/dev/null 2>&1 || true)
pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
(cd "$work" && timeout 300 apt-get download "$pkg" >/dev/null 2>&1) || fail "apt-get download $pkg"
dpkg-deb -x "$work"/"$pkg"_*.deb "$work/k"
kver=$(ls "$work/k/lib/modules")
cp "$work/k/boot/vmlinuz-$kver" "$work/vmlinuz"
rd="$work/rd"
mkdir -p "$rd"/{bin,sbin,lib,lib64,proc,sys,dev,mnt,mods,tmp}
cp "$(command -v busybox)" "$rd/bin/busybox"
# The modules and what they depend on (read from each module's `depends=`), in load order.
python3 - "$work/k/lib/modules" "$rd/mods" virtio_pci virtio_blk crc32c_generic ext4 <<'PY' || fail "modules"
import lzma, gzip, os, re, subprocess, sys
root, out, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        m = re.match(r"(.+)\.ko(\.(xz|gz|zst))?$", f)
        if m:
            files[m.group(1).replace("-", "_")] = os.path.join(d, f)
def load(name):
    p = files[name]
    if p.endswith(".xz"):
        return lzma.open(p).read()
    if p.endswith(".gz"):
        return gzip.open(p).read()
    if p.endswith(".zst"):
        return subprocess.run(["zstd", "-qdc", p], check=True, capture_output=True).stdout
    return open(p, "rb").read()
order, seen = [], set()
def visit(name):
    if name in seen:
        return
    seen.add(name)
    data = load(name)
    m = re.search(rb"depends=([\w,-]*)", data)
    for dep in filter(None, (m.group(1).decode() if m else "").split(",")):
        visit(dep.replace("-", "_"))
    open(os.path.join(out, name + ".ko"), "wb").write(data)
    order.append(name)
for w in wanted:
    visit(w)
open(os.path.join(out, "order"), "w").write(" ".join(order) + "\n")
print("   modules:", " ".join(order))
PY
# The real programs of the real-fs captures, where the host has them (Debian's postmark,
# dbench, bonnie++, sqlite3), with their libraries; dbench's load file beside.
progs=(/sbin/mke2fs /sbin/e2fsck)
if [ "$capture_mode" = realfs ]; then
  for t in postmark dbench bonnie++ sqlite3; do
    have "$t" || fail "--capture-realfs needs $t (apt-get install postmark dbench bonnie++ sqlite3)"
    progs+=("$(command -v "$t")")
  done
  mkdir -p "$rd/usr/share/dbench"; cp /usr/share/dbench/client.txt "$rd/usr/share/dbench/"
fi
if [ "$capture_mode" = emu-sqlite ]; then
  have sqlite3 || fail "--emulated-sqlite needs sqlite3 (apt-get install sqlite3)"
  progs+=("$(command -v sqlite3)")
fi
if [ "$capture_mode" = dcr-real ] || [ "$capture_mode" = waogc-real ]; then
  for t in postmark bonnie++ fio; do
    have "$t" || fail "--capture-dcr-real needs $t (apt-get install postmark bonnie++ fio)"
    progs+=("$(command -v "$t")")
  done
fi
for b in "${progs[@]}"; do
  cp "$b" "$rd/sbin/"
  for l in $(ldd "$b" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
    mkdir -p "$rd$(dirname "$l")"; cp -L "$l" "$rd$l"
  done
done
cat >"$rd/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /etc; echo "root:x:0:0:root:/:/bin/sh" >/etc/passwd; echo "root:x:0:" >/etc/group
for m in $(cat /mods/order); do
  insmod /mods/$m.ko || { echo "GUEST-FAIL insmod $m"; poweroff -f; }
done
for i in $(seq 1 50); do [ -b /dev/vda ] && break; sleep 0.1; done
mode=$(sed -n 's/.*nandlab=\([a-z-]*\).*/\1/p' /proc/cmdline)
ok() { echo "GUEST-OK $*"; }
bad() { echo "GUEST-FAIL $*"; sync; poweroff -f; }
# real_bonnie MB: bonnie++ on an MB-megabyte file in /mnt (block write, rewrite, read,
# seeks; -f: no per-character tests), no small-file tests.
real_bonnie() {
  /sbin/bonnie++ -d /mnt -s "$1" -r $(( $1 / 2 )) -n 0 -f -u root -x 1 -q >/tmp/bn.out 2>&1 \
    || { cat /tmp/bn.out; bad bonnie++; }
}
# real_postmark FILES TRANSACTIONS DIRS: postmark in /mnt/pm (files of 500-10,240 bytes,
# seed 42; it deletes its files at its end).
real_postmark() {
  mkdir -p /mnt/pm
  printf 'set location /mnt/pm\nset number %s\nset transactions %s\nset size 500 10240\nset subdirectories %s\nset seed 42\nrun\nquit\n' "$1" "$2" "$3" \
    | /sbin/postmark >/tmp/pm.out 2>&1 || bad postmark
}
# A seeded random stream for the benchmark shapes (set r first).
rnd() { r=$(( (r * 1103515245 + 12345) % 2147483648 )); }
# churn FILES BYTES ROUNDS: a file server's churn — FILES files of BYTES each in
# /mnt/files, then ROUNDS rounds of 100 random files deleted and 100 new ones written.
churn() {
  mkdir -p /mnt/files
  for f in $(seq 1 $1); do dd if=/dev/zero of=/mnt/files/f$f bs=$2 count=1 2>/dev/null; done
  sync; n=$1
  for round in $(seq 1 $3); do
    for k in $(seq 1 100); do rnd; rm -f /mnt/files/f$(( 1 + r % n )); done
    for k in $(seq 1 100); do n=$((n + 1)); dd if=/dev/zero of=/mnt/files/f$n bs=$2 count=1 2>/dev/null; done
    sync
  done
}
# postmark FILES TRANSACTIONS DIRS: Postmark's shape — FILES files of 0.5-10 KiB spread
# over DIRS directories, then TRANSACTIONS transactions (read, append, delete, create).
postmark() {
  for d in $(seq 0 $(($3 - 1))); do mkdir /mnt/pm$d; done
  n=0
  while [ $n -lt $1 ]; do
    rnd; dd if=/dev/zero of=/mnt/pm$((n % $3))/f$n bs=512 count=$(( 1 + r % 20 )) 2>/dev/null
    n=$((n + 1))
  done
  t=0
  while [ $t -lt $2 ]; do
    rnd; f=$(( r % n )); rnd
    case $(( r % 4 )) in
      0) cat /mnt/pm$((f % $3))/f$f >/dev/null 2>&1 ;;
      1) dd if=/dev/zero bs=512 count=$(( 1 + r % 8 )) 2>/dev/null >>/mnt/pm$((f % $3))/f$f ;;
      2) rm -f /mnt/pm$((f % $3))/f$f ;;
      3) dd if=/dev/zero of=/mnt/pm$((n % $3))/f$n bs=512 count=$(( 1 + r % 20 )) 2>/dev/null; n=$((n + 1)) ;;
    esac
    t=$((t + 1))
  done
}
echo "logical block size $(cat /sys/block/vda/queue/logical_block_size)"
if [ "$mode" = kill ]; then
  # Write and sync file after file; the host kills the server in the middle and restarts
  # it (qemu reconnects); every file listed in SUMS was synced with its checksum.
  /sbin/mke2fs -q -F -t ext4 /dev/vda || bad mkfs
  mount -t ext4 /dev/vda /mnt || bad mount
  mkdir /mnt/d
  for i in $(seq 1 40); do
    dd if=/dev/urandom of=/mnt/d/f$i bs=4k count=25 2>/dev/null || bad "write f$i"
    sync /mnt/d/f$i
    (cd /mnt/d && sha256sum f$i >> /mnt/SUMS) && sync /mnt/SUMS || bad "sums f$i"
    echo "GUEST-SYNCED $i"
  done
  umount /mnt || bad umount
  ok kill
elif [ "$mode" = sensor ]; then
  # A sensor logger: one record appended and fsynced at a time, 100 records a file, the
  # newest 5 files kept (a deleted file's blocks are discarded: -o discard).
  /sbin/mke2fs -q -F -t ext4 /dev/vda || bad mkfs
  mount -t ext4 -o discard /dev/vda /mnt || bad mount
  for f in $(seq 1 12); do
    for r in $(seq 1 100); do
      echo "$f,$r,$(date +%s),2$((r % 10)).$r,10$((f % 10))$((r % 10)).$f" >>/mnt/log$f.csv
      sync /mnt/log$f.csv || bad "sync $f $r"
    done
    if [ "$f" -gt 5 ]; then rm /mnt/log$((f - 5)).csv && sync /mnt; fi
  done
  umount /mnt || bad umount
  ok sensor
elif [ "$mode" = dcr ] || [ "$mode" = dcr-real ]; then
  # DCR's benchmarks as shapes a shell can run, on ext2 (the paper's file system, no
  # discard), between phase markers: after `sync` and dropping the caches, one 4 KiB read
  # of the disk's tail outside the file system, at byte `size - (k + 1) MiB` for marker k
  # (the replay splits the trace there). Bulk data from /dev/zero (the FTL stores digests).
  size=$(( $(cat /sys/block/vda/size) * 512 ))
  fsk=$(( size / 1024 - 16384 ))
  /sbin/mke2fs -q -F -t ext2 -b 4096 /dev/vda "${fsk}k" || bad mkfs
  echo "GUEST-FS-BYTES $(( fsk * 1024 ))"
  mount -t ext2 /dev/vda /mnt || bad mount
  marker() {
    sync; echo 3 >/proc/sys/vm/drop_caches
    dd if=/dev/vda of=/dev/null bs=4096 count=1 skip=$(( (size - ($1 + 1) * 1048576) / 4096 )) 2>/dev/null
    echo "GUEST-MARK $1"
  }
  # 1: the image the checkpoint holds (a film, the files to copy).
  dd if=/dev/zero of=/mnt/film bs=1000 count=8900 2>/dev/null
  dd if=/dev/zero of=/mnt/src1 bs=1000 count=1024 2>/dev/null
  dd if=/dev/zero of=/mnt/src2 bs=1000 count=256 2>/dev/null
  dd if=/dev/zero of=/mnt/src3 bs=1000 count=10752 2>/dev/null
  marker 1
  # 2: Mplayer: the film read through.
  cat /mnt/film >/dev/null; marker 2
  # 3-5: the three file copies.
  cp /mnt/src1 /mnt/copy1; marker 3
  cp /mnt/src2 /mnt/copy2; marker 4
  cp /mnt/src3 /mnt/copy3; marker 5
  if [ "$mode" = dcr-real ]; then
    # 6: bonnie++ on a 24 MB file. 7: postmark, 600 files in 10 directories, 600
    # transactions.
    real_bonnie 24; marker 6
    real_postmark 600 600 10; marker 7
    # 8: Tiotest's shape with fio: four writers of 20.6 MB each at once, 4 KiB writes.
    /sbin/fio --name=tio --directory=/mnt --rw=write --bs=4k --size=20600k --numjobs=4 \
      --ioengine=psync --end_fsync=1 >/tmp/fio.out 2>&1 || { cat /tmp/fio.out; bad fio; }
    marker 8
  else
  # 6: Bonnie: 24 MB written in 8 KiB blocks, then read back.
  dd if=/dev/zero of=/mnt/bonnie bs=8192 count=2937 2>/dev/null; sync
  echo 3 >/proc/sys/vm/drop_caches; cat /mnt/bonnie >/dev/null; marker 6
  # 7: Postmark: 600 files of 0.5-10 KiB, then 600 transactions (read, append, create,
  # delete), files in 10 directories.
  r=12345; postmark 600 600 10
  marker 7
  # 8: Tiotest: four writers of 20.6 MB each at once, 4 KiB writes.
  for w in 0 1 2 3; do dd if=/dev/zero of=/mnt/tio$w bs=4096 count=5031 2>/dev/null & done
  wait; marker 8
  fi
  umount /mnt || bad umount
  ok "$mode"
elif [ "$mode" = waogc ] || [ "$mode" = waogc-real ] || [ "$mode" = churn ]; then
  # WAO-GC's benchmarks (§V: NFS file serving, Bonnie, Postmark, Tiobench) as shapes a
  # shell can run, on ext2 (the paper's mkfs.ext2, no discard) of 700 MB — below the
  # logical size of every scheme the trace is replayed on — between phase markers (reads
  # of the disk's tail, as in the dcr mode). `churn` (the live runs of each scheme) is a
  # file server's churn instead: an 80 MB file system filled to 60 % with 32 KiB files
  # (four to an erase block), then 48 rounds of 100 random files deleted and 100 new ones
  # written (ext2 reuses the freed blocks: scattered overwrites while the other files stay
  # valid; 200 MB written on a 128 MiB chip). Bulk data from /dev/zero.
  size=$(( $(cat /sys/block/vda/size) * 512 ))
  if [ "$mode" = churn ]; then fs=80000k; else fs=700000k; fi
  blocks=30000; passes=1
  /sbin/mke2fs -q -F -t ext2 -b 4096 /dev/vda $fs || bad mkfs
  mount -t ext2 /dev/vda /mnt || bad mount
  marker() {
    sync; echo 3 >/proc/sys/vm/drop_caches
    dd if=/dev/vda of=/dev/null bs=4096 count=1 skip=$(( (size - ($1 + 1) * 1048576) / 4096 )) 2>/dev/null
    echo "GUEST-MARK $1"
  }
  r=4242
  bonnie() { # a file written in 8 KiB blocks, rewritten in place, read back, 2000 random seeks
    dd if=/dev/zero of=/mnt/bonnie bs=8192 count=$blocks 2>/dev/null; sync
    p=0; while [ $p -lt $passes ]; do
      dd if=/dev/zero of=/mnt/bonnie bs=8192 count=$blocks conv=notrunc 2>/dev/null; sync; p=$((p + 1))
    done
    echo 3 >/proc/sys/vm/drop_caches; cat /mnt/bonnie >/dev/null
    i=0; while [ $i -lt 2000 ]; do rnd; dd if=/mnt/bonnie of=/dev/null bs=8192 count=1 skip=$(( r % blocks )) 2>/dev/null; i=$((i + 1)); done
    rm /mnt/bonnie; sync
  }
  if [ "$mode" = churn ]; then
    churn 1600 32768 48
    marker 1
  else
    # 1: NFS file serving: a tree of 40 files (1-6 MB) copied in, copied out, read, removed.
    mkdir /mnt/export /mnt/client
    for f in $(seq 1 40); do rnd; dd if=/dev/zero of=/mnt/export/f$f bs=65536 count=$(( 16 + r % 80 )) 2>/dev/null; done
    cp -r /mnt/export/. /mnt/client/; sync; echo 3 >/proc/sys/vm/drop_caches
    cat /mnt/client/* >/dev/null; rm -r /mnt/export; marker 1
    if [ "$mode" = waogc-real ]; then
      # 2-4 with the real programs: bonnie++ on a 240 MB file (block write, rewrite,
      # read, seeks; no per-character or small-file tests); postmark (3000 files of
      # 0.5-10 KiB in 20 directories, 3000 transactions, its files deleted at its end);
      # fio as Tiobench (four jobs writing 60 MB each at once in 4 KiB, reading them back
      # at once, then 1000 random 4 KiB reads each).
      real_bonnie 240; marker 2
      real_postmark 3000 3000 20; rm -r /mnt/pm; marker 3
      tio="--directory=/mnt --bs=4k --size=60m --numjobs=4 --ioengine=psync --filename_format=tio.\$jobnum"
      /sbin/fio --name=w $tio --rw=write --end_fsync=1 >/tmp/fio.out 2>&1 || { cat /tmp/fio.out; bad fio; }
      sync; echo 3 >/proc/sys/vm/drop_caches
      /sbin/fio --name=r $tio --rw=read >>/tmp/fio.out 2>&1 || { cat /tmp/fio.out; bad fio; }
      /sbin/fio --name=x $tio --rw=randread --number_ios=1000 --randseed=42 >>/tmp/fio.out 2>&1 || { cat /tmp/fio.out; bad fio; }
      rm /mnt/tio.*; marker 4
    else
    # 2: Bonnie.
    bonnie; marker 2
    # 3: Postmark: 3000 files of 0.5-10 KiB in 20 directories, 3000 transactions (read,
    # append, create, delete), then every file deleted.
    postmark 3000 3000 20
    rm -r /mnt/pm*; marker 3
    # 4: Tiobench: four threads writing 60 MB each in 4 KiB at once, then reading them
    # back at once, then 1000 random 4 KiB reads each.
    for w in 0 1 2 3; do dd if=/dev/zero of=/mnt/tio$w bs=4096 count=15000 2>/dev/null & done
    wait; sync; echo 3 >/proc/sys/vm/drop_caches
    for w in 0 1 2 3; do cat /mnt/tio$w >/dev/null & done; wait
    for w in 0 1 2 3; do
      (i=0; r=$((r + w)); while [ $i -lt 1000 ]; do r=$(( (r * 1103515245 + 12345) % 2147483648 )); dd if=/mnt/tio$w of=/dev/null bs=4096 count=1 skip=$(( r % 15000 )) 2>/dev/null; i=$((i + 1)); done) &
    done
    wait; rm /mnt/tio*; marker 4
    fi
    # 5: the NFS server's steady state on a file system 85 % full: 500 archive files of
    # 1 MB and 1,600 working files of 64 KiB kept, then 60 rounds of 100 random working
    # files replaced (clients rewriting some of them): ext2 reuses the freed blocks, so
    # the overwrites scatter while most files stay valid.
    mkdir /mnt/archive
    for f in $(seq 1 500); do dd if=/dev/zero of=/mnt/archive/a$f bs=1048576 count=1 2>/dev/null; done
    churn 1600 65536 60
    marker 5
  fi
  umount /mnt || bad umount
  ok "$mode"
elif [ "$mode" = emu-sqlite ]; then
  # The whole device written first (every later write needs GC), ext4 made without a
  # discard (which would empty it again) and mounted without one, then SQLite: WAL,
  # synchronous=FULL, every statement its own transaction, each timed by sqlite3 itself.
  dd if=/dev/zero of=/dev/vda bs=1M 2>/dev/null; sync
  /sbin/mke2fs -q -F -t ext4 -E nodiscard /dev/vda || bad mkfs
  mount -t ext4 /dev/vda /mnt || bad mount
  # The host starts the server's statistics again here (SIGUSR2): they cover SQLite alone.
  sync; echo GUEST-SQLITE-START; sleep 3
  { echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
    echo "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT); CREATE INDEX tk ON t(k);"
    echo ".timer on"
    r=77; i=1
    while [ $i -le 1500 ]; do
      rnd; echo "INSERT INTO t(k, v) VALUES($r, '$r-$i-sensor-reading-payload-$((r % 9973))');"
      if [ $((i % 4)) = 0 ]; then rnd; echo "UPDATE t SET v = 'u$r' WHERE id = $(( 1 + r % i ));"; fi
      i=$((i + 1))
    done; } >/tmp/load.sql
  /sbin/sqlite3 /mnt/db.sqlite </tmp/load.sql >/tmp/times.out 2>&1 || bad sqlite
  # "Run Time: real 0.003 user ... sys ...": the statements' wall times, in µs.
  sed -n 's/^Run Time: real \([0-9.]*\).*/\1/p' /tmp/times.out | awk '{printf "%d\n", $1 * 1000000}' | sort -n >/tmp/us
  n=$(wc -l </tmp/us)
  at() { sed -n "$(( ($1 * n + 999) / 1000 ))p" /tmp/us; }
  echo "GUEST-SQLITE-US n=$n p50=$(at 500) p99=$(at 990) p999=$(at 999) max=$(tail -1 /tmp/us)"
  umount /mnt || bad umount
  ok "$mode"
elif [ "${mode#rf-}" != "$mode" ]; then
  # Real programs on ext4 as a user runs them: mkfs discards the whole disk, the file
  # system is mounted with -o discard (deleted files' blocks are trimmed at once).
  /sbin/mke2fs -q -F -t ext4 /dev/vda || bad mkfs
  mount -t ext4 -o discard /dev/vda /mnt || bad mount
  case ${mode#rf-} in
    postmark) # a mail server: small files created, read, appended, deleted
      printf 'set location /mnt\nset number 4000\nset transactions 30000\nset size 512 16384\nset subdirectories 10\nset seed 42\nrun\nquit\n' \
        | /sbin/postmark >/tmp/pm.out 2>&1 || bad postmark
      grep -i "transactions" /tmp/pm.out | head -2 ;;
    sqlite) # SQLite in WAL mode, synchronous=FULL: every statement its own transaction
      { echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
        echo "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT); CREATE INDEX tk ON t(k);"
        r=77; i=1
        while [ $i -le 3000 ]; do
          rnd; echo "INSERT INTO t(k, v) VALUES($r, '$r-$i-sensor-reading-payload-$((r % 9973))');"
          if [ $((i % 4)) = 0 ]; then rnd; echo "UPDATE t SET v = 'u$r' WHERE id = $(( 1 + r % i ));"; fi
          if [ $((i % 10)) = 0 ]; then rnd; echo "DELETE FROM t WHERE id = $(( 1 + r % i ));"; fi
          i=$((i + 1))
        done
        echo "PRAGMA wal_checkpoint(TRUNCATE);"; } >/tmp/load.sql
      /sbin/sqlite3 /mnt/db.sqlite </tmp/load.sql >/dev/null || bad sqlite
      echo "rows: $(/sbin/sqlite3 /mnt/db.sqlite 'SELECT count(*) FROM t;')" ;;
    dbench) # a file server (the NetBench client load), two clients
      /sbin/dbench -c /usr/share/dbench/client.txt -D /mnt -t 20 2 >/tmp/db.out 2>&1 || bad dbench
      tail -3 /tmp/db.out ;;
    sensor) # a sensor logger: 4 KiB records appended and fsynced, files rotated
      r=5; f=1
      while [ $f -le 40 ]; do
        k=1
        while [ $k -le 64 ]; do
          dd if=/dev/zero bs=4096 count=1 2>/dev/null >>/mnt/log$f.dat; sync /mnt/log$f.dat || bad "sync $f"
          k=$((k + 1))
        done
        if [ $f -gt 8 ]; then rm /mnt/log$((f - 8)).dat && sync /mnt; fi
        f=$((f + 1))
      done ;;
    copy) # a bulk copy: a tree of files written, copied, the original removed
      mkdir -p /mnt/src; r=9
      for d in 1 2 3 4; do
        mkdir /mnt/src/d$d
        for f in $(seq 1 25); do rnd; dd if=/dev/zero of=/mnt/src/d$d/f$f bs=4096 count=$(( 8 + r % 120 )) 2>/dev/null; done
      done
      sync; cp -a /mnt/src /mnt/dst || bad copy; sync
      rm -r /mnt/src; sync ;;
    bonnie) # bonnie++: a 96 MiB file (write, rewrite, read) and small-file create/stat/delete
      /sbin/bonnie++ -d /mnt -s 96 -r 48 -n 4:4096:0:4 -u root -x 1 -q >/tmp/bn.out 2>&1 || { cat /tmp/bn.out; bad bonnie; }
      ;;
    *) bad "unknown workload $mode" ;;
  esac
  umount /mnt || bad umount
  /sbin/e2fsck -fn /dev/vda >/dev/null 2>&1 || bad fsck
  ok "$mode"
elif [ "$mode" = discard ]; then
  # mkfs.ext4 discards the whole disk (timed by the guest's clock), then a discard-mounted
  # workload: files written, some deleted (their blocks trimmed at once), fstrim, fsck.
  t0=$(cut -d' ' -f1 /proc/uptime)
  /sbin/mke2fs -q -F -t ext4 /dev/vda || bad mkfs
  t1=$(cut -d' ' -f1 /proc/uptime)
  echo "GUEST-MKFS-SECONDS $t0 $t1"
  mount -t ext4 -o discard /dev/vda /mnt || bad mount
  mkdir /mnt/d
  for i in $(seq 1 30); do dd if=/dev/urandom of=/mnt/d/f$i bs=4k count=$((i * 4)) 2>/dev/null; done
  sync
  for i in $(seq 1 2 30); do rm /mnt/d/f$i; done
  (cd /mnt/d && sha256sum f* > /mnt/SUMS) && sync || bad write
  fstrim /mnt || bad fstrim
  umount /mnt || bad umount
  /sbin/e2fsck -fn /dev/vda >/dev/null 2>&1 || bad fsck
  mount -t ext4 /dev/vda /mnt || bad remount
  (cd /mnt/d && sha256sum -c /mnt/SUMS >/dev/null) || bad checksums
  umount /mnt || bad umount
  ok discard
elif [ "$mode" = fresh ]; then
  /sbin/mke2fs -q -F -t ext4 /dev/vda || bad mkfs
  mount -t ext4 /dev/vda /mnt || bad mount
  mkdir /mnt/d
  for i in $(seq 1 24); do dd if=/dev/urandom of=/mnt/d/f$i bs=4k count=$((i * 5)) 2>/dev/null; done
  (cd /mnt/d && sha256sum f* > /mnt/SUMS) && sync /mnt/SUMS || bad write
  rm /mnt/d/f1 /mnt/d/f2 && sed -i '/ f1$/d; / f2$/d' /mnt/SUMS && sync
  fstrim -v /mnt || bad fstrim
  umount /mnt || bad umount
  /sbin/e2fsck -fn /dev/vda >/dev/null 2>&1 || bad fsck
  ok fresh
else
  mount -t ext4 /dev/vda /mnt || bad mount
  (cd /mnt/d && sha256sum -c /mnt/SUMS >/dev/null) || bad checksums
  umount /mnt || bad umount
  /sbin/e2fsck -fn /dev/vda >/dev/null 2>&1 || bad fsck
  ok check
fi
sync; poweroff -f
EOF
chmod +x "$rd/init"
(cd "$rd" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$work/initrd.gz")
echo "   kernel $kver"

boot_bg() { # boot_bg MODE BLOCKSIZE: starts the guest, sets guest_pid
  : >"$work/console.log"
  timeout "${GUEST_TIMEOUT:-300}" qemu-system-x86_64 -accel tcg -m "${GUEST_MEM:-256}" -nographic -no-reboot \
    -kernel "$work/vmlinuz" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 nandlab=$1" \
    -drive "driver=raw,if=none,id=d0,cache.direct=on,file.driver=nbd,file.server.type=inet,file.server.host=127.0.0.1,file.server.port=$port,file.reconnect-delay=30,discard=unmap" \
    -device "virtio-blk-pci,drive=d0,logical_block_size=$2,physical_block_size=$2" \
    >"$work/console.log" 2>&1 &
  guest_pid=$!; pids+=("$guest_pid")
}
boot() { # boot MODE BLOCKSIZE
  boot_bg "$@"
  wait "$guest_pid" || true
  grep -q "GUEST-OK $1" "$work/console.log" || { tail -30 "$work/console.log"; fail "guest $1 ($2-byte blocks)"; }
  grep -q "logical block size $2" "$work/console.log" || fail "guest did not see $2-byte blocks"
}
discard_stage() {
  # mkfs.ext4 (a whole-disk discard) and a discard-mounted workload on a 1 GiB volume of the
  # default profile and of the page FTL: the discard is one range, so the default profile's
  # mkfs takes about the page FTL's wall time.
  echo "-- mkfs.ext4 (whole-disk discard) and a discard-mounted workload: default profile against page, 1 GiB"
  local -A mkfs_s
  for profile in combined page; do
    rm -f "$work/disk.chip" "$work/disk.chip.ftl.toml"
    # About 1 GiB exported each: the default profile raises over-provisioning to what
    # WAO-GC's bound needs on this chip (about half of it), so its chip is twice as large.
    ftl=(); bpp=22000
    if [ "$profile" = page ]; then ftl=(--ftl "$root/examples/ftl/page.toml"); bpp=11000; fi
    start_server "$work/disk.chip" --create tiny-mlc --blocks-per-plane "$bpp" "${ftl[@]}"
    t0=$SECONDS; boot discard 4096
    read -r a b < <(sed -n 's/.*GUEST-MKFS-SECONDS \([0-9.]*\) \([0-9.]*\).*/\1 \2/p' "$work/console.log")
    mkfs_s[$profile]=$(python3 -c "print(round($b - $a, 2))")
    stop_server TERM
    sim=$(grep "shut down cleanly" "$work/serve.err" | tail -1 | python3 -c '
import json, sys
line = sys.stdin.read()
s = json.loads(line[line.index("{"):])
t, f, c = s["trim"], s["flush"], s["counters"]
print("simulated: %d discards, worst %.1f ms, %d trim records, %d checkpoints, %d metadata bytes; worst flush %.1f ms" % (
    t["count"], t["max_us"] / 1e3, c.get("trim_records", 0), c["checkpoints"], c["meta_bytes"], f["max_us"] / 1e3))')
    echo "   $profile: $(sed -n 's/^serving.*(\([^)]*\)).*/\1/p' "$work/serve.out" | head -1) mkfs ${mkfs_s[$profile]} s in the guest; workload, fstrim, fsck and checksums ok ($((SECONDS - t0)) s)"
    echo "      $sim"
  done
  python3 -c 'import sys; c, p = map(float, sys.argv[1:]); print(f"   mkfs wall time, default profile / page: {c / max(p, 0.01):.2f}x ({c} s against {p} s)")' "${mkfs_s[combined]}" "${mkfs_s[page]}"
}
if [ "$capture_mode" = discard ]; then
  discard_stage
  exit 0
fi
if [ "$capture_mode" = sensor ]; then
  echo "-- sensor-logger guest, its requests recorded"
  start_server "$work/disk.chip" --create tiny-mlc --blocks-per-plane 1024 --ftl "$root/examples/ftl/page.toml" --record-trace "$capture"
  t0=$SECONDS; boot sensor 4096
  stop_server TERM
  echo "   $(grep -c ' Q ' "$capture") requests recorded in $capture ($((SECONDS - t0)) s)"
  exit 0
fi
if [ "$capture_mode" = realfs ]; then
  mkdir -p "$capture"
  for w in ${REALFS:-postmark sqlite dbench sensor copy bonnie}; do
    echo "-- real-fs capture: $w on ext4 with discard, its requests recorded"
    rm -f "$work/disk.chip" "$work/disk.chip.ftl.toml"
    start_server "$work/disk.chip" --create tiny-mlc --blocks-per-plane 2048 --ftl "$root/examples/ftl/page.toml" --record-trace "$capture/$w-ext4.blktrace"
    t0=$SECONDS; GUEST_TIMEOUT=3000 boot "rf-$w" 4096
    stop_server TERM
    grep -vE "^\s*$" "$work/console.log" | grep -vE "GUEST-OK|logical block size|Powering|reboot" | tail -4 | sed 's/^/   guest: /'
    echo "   $(grep -c ' Q ' "$capture/$w-ext4.blktrace") requests recorded ($((SECONDS - t0)) s)"
  done
  exit 0
fi
if [ "$capture_mode" = waogc ] || [ "$capture_mode" = waogc-real ]; then
  echo "-- WAO-GC's benchmarks on ext2 ($capture_mode), on k9k8g08u0b under WAO-GC, their requests recorded"
  start_server "$work/disk.chip" --create k9k8g08u0b --ftl "$root/examples/realtime/wao-gc.toml" --record-trace "$capture"
  mem=256; [ "$capture_mode" = waogc-real ] && mem=1024
  t0=$SECONDS; GUEST_TIMEOUT=3000 GUEST_MEM=$mem boot "$capture_mode" 4096
  stop_server TERM
  grep -E "GUEST-MARK" "$work/console.log" | tr '\n' ' '; echo
  echo "   $(grep -c ' Q ' "$capture") requests recorded in $capture ($((SECONDS - t0)) s)"
  grep "shut down cleanly" "$work/serve.err" | tail -1
  exit 0
fi
if [ "$capture_mode" = emu-sqlite ]; then
  echo "-- SQLite in the guest on a full device, serve --timing emulate: WAO-GC against pure page-level (k9k8g08u0b, 128 blocks per plane)"
  rows=()
  # The image in memory (tmpfs): a flush's sync of the image file then costs nothing, where
  # on this machine's disk it took up to 100 ms now and then, which the guest's statements
  # felt as host lag (the server reports it as lag, not device time). What is measured is
  # the emulated device's latency, not durability against the host losing power.
  scratch=$(mktemp -d /dev/shm/nandlab-emu.XXXXXX)
  for scheme in wao-gc pure; do
    rm -f "$scratch/disk.chip" "$scratch/disk.chip.ftl.toml"
    start_server "$scratch/disk.chip" --create k9k8g08u0b --blocks-per-plane 128 --ftl "$root/examples/realtime/$scheme.toml" --timing emulate --record-trace "$work/$scheme.blktrace"
    t0=$SECONDS; GUEST_TIMEOUT=3000 boot_bg emu-sqlite 4096
    for _ in $(seq 1 6000); do
      grep -q GUEST-SQLITE-START "$work/console.log" && break
      kill -0 "$guest_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -USR2 "$server_pid"
    wait "$guest_pid" || true
    grep -q "GUEST-OK emu-sqlite" "$work/console.log" || { tail -30 "$work/console.log"; fail "guest emu-sqlite"; }
    kill -USR1 "$server_pid"; sleep 0.5
    stats=$(grep '^{' "$work/serve.err" | tail -1)
    stop_server TERM
    times=$(sed -n 's/.*GUEST-SQLITE-US \(.*\)/\1/p' "$work/console.log" | tr -d '\r')
    # The simulator beside the emulation: the recorded trace split at the guest's pause
    # before SQLite, the part before replayed unmeasured, SQLite's part measured.
    python3 - "$work/$scheme.blktrace" "$work" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
cut = max(i for i in range(1, len(lines)) if float(lines[i].split()[3]) - float(lines[i - 1].split()[3]) > 2.0)
open(f"{sys.argv[2]}/warm.blktrace", "w").write("\n".join(lines[:cut]) + "\n")
open(f"{sys.argv[2]}/meas.blktrace", "w").write("\n".join(lines[cut:]) + "\n")
PY
    replay_toml k9k8g08u0b 128 "$root/examples/realtime/$scheme.toml" >"$work/replay.toml"
    "$NANDLAB" run --config "$work/replay.toml" --trace "$work/meas.blktrace" --warmup-trace "$work/warm.blktrace" \
      --format blkparse --idle-after 0.2 --json "$work/replay.json" --quiet >/dev/null || fail "$scheme: replay"
    row=$(python3 -c '
import json, sys
s, scheme, times = json.loads(sys.argv[1]), sys.argv[2], dict(kv.split("=") for kv in sys.argv[3].split())
r = json.load(open(sys.argv[4]))["latency"]
b, em = s.get("latency_bound") or {}, s["emulation"]
rmax = max(v["max_us"] for v in r.values()) / 1e3
print("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.2f / %.2f | %.2f / %.2f / %.2f | %.2f | %s | %d / %d |" % (scheme, times["n"],
    *(int(times[k]) / 1e3 for k in ("p50", "p99", "p999", "max")),
    em["device_us"]["p99"] / 1e3, em["device_us"]["max"] / 1e3,
    r["write"]["p99_us"] / 1e3, r.get("flush", {}).get("p99_us", 0) / 1e3, rmax,
    b.get("write_ns", 0) / 1e6, "%.2f" % s["waf"], em["lag_us"]["p99"], em["lag_us"]["max"]))' "$stats" "$scheme" "$times" "$work/replay.json")
    rows+=("$row")
    echo "   $row ($((SECONDS - t0)) s)"
  done
  if [ -n "$capture" ]; then
    mkdir -p "$(dirname "$capture")"
    { echo "# SQLite in a Linux guest on an emulated full device: WAO-GC against pure page-level"
      echo
      echo "Generated by \`scripts/nbd-guest.sh NANDLAB --emulated-sqlite REPORT\` (commit \`$(git -C "$root" rev-parse --short HEAD)\`, $(date -u +%F)); do not edit by hand."
      echo "A Linux guest (qemu TCG) has its disk on \`nandlab serve --timing emulate\` (k9k8g08u0b, 128 blocks per"
      echo "plane, each scheme's FTL file from \`examples/realtime/\`). It writes the whole disk, makes ext4 without a"
      echo "discard, and runs SQLite (WAL, synchronous=FULL, each statement its own transaction: 1,500 inserts and"
      echo "375 updates) timing every statement with sqlite3's own \`.timer\` (millisecond resolution). The guest's"
      echo "CPU is emulated, so its own time per statement is large; the schemes differ in what the device adds."
      echo "The server's columns (device, lag) cover the SQLite run alone: its statistics restart (SIGUSR2) when the"
      echo "guest has written the disk and made the file system. The write bound is per page; a request (an ext4"
      echo "journal commit, a WAL append) is several pages, so its device time can be several bounds."
      echo
      echo "The simulator's columns replay the trace the server recorded (\`nandlab run --warmup-trace\`: what came"
      echo "before SQLite replayed unmeasured): its requests' write and flush p99 and its slowest request, beside the"
      echo "emulation's device time per request (p99 / max over all of SQLite's requests). Both give the FTL idle"
      echo "time 200 ms after the last request (the replay with \`--idle-after 0.2\`), one background step at a time;"
      echo "the server's idle time starts on the wall clock, the replay's at the trace's times. The image file is in"
      echo "memory (tmpfs), so a flush's sync of it adds no host stall; lag is the rest of the host's time (the reply"
      echo "sent after the device completed). A request that issues no device operation completes on the device"
      echo "when it arrives. The guest's statement times include its own emulated CPU and the lag."
      echo
      echo "| scheme | statements | p50 (ms) | p99 | p99.9 | max | emulated device p99 / max (ms) | simulator write p99 / flush p99 / max (ms) | write bound (ms) | WAF | lag p99 / max (µs) |"
      echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
      printf '%s\n' "${rows[@]}"
    } >"$capture"
    echo "   written: $capture"
  fi
  exit 0
fi
if [ "$capture_mode" = live ]; then
  # LIVE_SCHEMES picks some of them. RFTL holds a quarter of its chip: it runs on the chip
  # cut to 1024 blocks per plane, so that its volume holds the same 80 MB file system.
  echo "-- a file server's churn on ext2 under each real-time scheme, live (k9k8g08u0b cut to 256 blocks per plane; RFTL 1024)"
  for scheme in ${LIVE_SCHEMES:-pure rtgc wao-gc gftl rftl}; do
    rm -f "$work/disk.chip" "$work/disk.chip.ftl.toml"
    record=()
    if [ -n "${3:-}" ] && [ "$scheme" = pure ]; then record=(--record-trace "$capture"); fi
    bpp=256; if [ "$scheme" = rftl ]; then bpp=1024; fi
    start_server "$work/disk.chip" --create k9k8g08u0b --blocks-per-plane "$bpp" --ftl "$root/examples/realtime/$scheme.toml" "${record[@]}"
    t0=$SECONDS; GUEST_TIMEOUT=3000 boot churn 4096
    stop_server TERM
    echo "   $scheme ($((SECONDS - t0)) s): $(grep 'shut down cleanly' "$work/serve.err" | tail -1 | python3 -c '
import json, sys
line = sys.stdin.read()
s = json.loads(line[line.index("{"):])
w, r, c, b = s["page_write"], s["page_read"], s["counters"], s.get("latency_bound")
print("page writes %d, worst %.0f us, mean %.1f us; page reads worst %.0f us; victims %d, copies %d, most valid in a victim %d, partial steps %d, overruns %d; bound %s" % (
    w["count"], w["max_us"], w["mean_us"], r["max_us"], c["gc_victims"], c["valid_copies"], c["max_victim_valid"], c["partial_steps"], c["rt_overruns"],
    "none" if not b else "%.0f us (array times %.0f us)" % (b["write_ns"] / 1e3, b["array_write_ns"] / 1e3)))')"
  done
  exit 0
fi
if [ "$capture_mode" = dcr ] || [ "$capture_mode" = dcr-real ]; then
  echo "-- DCR's benchmarks on ext2 ($capture_mode), their requests recorded"
  start_server "$work/disk.chip" --create tiny-mlc --blocks-per-plane 4096 --ftl "$root/examples/ftl/page.toml" --record-trace "$capture"
  # (fio's libraries make the initramfs about 80 MB larger: more memory for that mode.)
  mem=256; [ "$capture_mode" = dcr-real ] && mem=1024
  t0=$SECONDS; GUEST_TIMEOUT=1500 GUEST_MEM=$mem boot "$capture_mode" 4096
  stop_server TERM
  grep -E "GUEST-(MARK|FS-BYTES)" "$work/console.log" | tr '\n' ' '; echo
  echo "   $(grep -c ' Q ' "$capture") requests recorded in $capture ($((SECONDS - t0)) s)"
  exit 0
fi
for bs in 512 4096; do
  echo "-- guest with $bs-byte logical blocks"
  rm -f "$work/disk.chip"
  # The page-level FTL (its ~96 MiB export); the combined profile, serve's default, is
  # the kill -9 run below.
  start_server "$work/disk.chip" --create tiny-mlc --blocks-per-plane 1024 --ftl "$root/examples/ftl/page.toml"
  t0=$SECONDS; boot fresh "$bs"; echo "   mkfs, write, fsync, fstrim, umount, fsck: ok ($((SECONDS - t0)) s)"
  stop_server TERM
  start_server "$work/disk.chip"
  t0=$SECONDS; boot check "$bs"; echo "   after a server restart: checksums and fsck ok ($((SECONDS - t0)) s)"
  stop_server TERM
done
# On the combined profile (the page FTL's SIGKILL restarts run in the NBD stage's fio step).
echo "-- guest writing and syncing while the server (combined profile) is killed (kill -9) and restarted"
rm -f "$work/disk.chip" "$work/disk.chip.ftl.toml"
start_server "$work/disk.chip" --create tiny-mlc --blocks-per-plane 1024   # serve's default FTL
grep -q 'scheme = "combined"' "$work/disk.chip.ftl.toml" || fail "the combined profile is not serve's default"
t0=$SECONDS
boot_bg kill 4096
for _ in $(seq 1 1200); do grep -q "GUEST-SYNCED 8" "$work/console.log" && break; sleep 0.1; done
grep -q "GUEST-SYNCED 8" "$work/console.log" || { tail -20 "$work/console.log"; fail "guest did not get going"; }
stop_server KILL
synced=$(grep -c "GUEST-SYNCED" "$work/console.log")
sleep 2
start_server "$work/disk.chip"
echo "   killed the server after $synced synced files; restarted: $(sed -n 's/.*mounted by/mounted by/p' "$work/serve.out")"
wait "$guest_pid" || true
grep -q "GUEST-OK kill" "$work/console.log" || { tail -30 "$work/console.log"; fail "guest did not survive the server's restart"; }
total=$(grep -c "GUEST-SYNCED" "$work/console.log")
stop_server TERM
start_server "$work/disk.chip"
boot check 4096
echo "   mounted again: all $total synced files match their checksums, fsck clean ($((SECONDS - t0)) s)"
stop_server TERM
discard_stage
echo "== guest stage passed"
