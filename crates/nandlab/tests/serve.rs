//! `nandlab serve`: the NBD protocol from a raw client (handshake, every command, unaligned
//! requests, protocol errors), restarts after SIGTERM and SIGKILL, the image lock, and
//! `qemu-io` as a real client where it is installed — on the combined profile, what
//! `--create` formats without `--ftl`.

mod common;

use common::{Client, Server};
use std::io::{Read, Write};
use std::process::Command;

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

#[test]
fn nbd_commands_restarts_and_protocol_errors() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("nbd.img");
    let port = common::free_port();
    let mut srv = Server::start(&image, true, port);
    // `--create` without `--ftl`: the combined profile, its FTL file beside the image.
    let side = std::fs::read_to_string(dir.path().join("nbd.img.ftl.toml")).unwrap();
    assert!(side.contains("scheme = \"combined\""), "{side}");
    let (mut c, size) = Client::connect(port);
    assert!(size > 4 << 20, "{size}");
    // Aligned, unaligned (read-modify-write), across page boundaries.
    let a = bytes(64 << 10, 1);
    assert_eq!(c.write(0, &a, false), 0);
    let b = bytes(3000, 2);
    assert_eq!(c.write(5000, &b, true), 0);
    let mut want = a.clone();
    want[5000..8000].copy_from_slice(&b);
    assert_eq!(c.read(0, 64 << 10), want);
    assert_eq!(c.read(4999, 3002)[1..3001], b[..]);
    // WRITE_ZEROES over a partial and whole pages; TRIM of whole pages.
    assert_eq!(c.request(6, 0, 10_000, 20_000, &[]).0, 0);
    want[10_000..30_000].fill(0);
    assert_eq!(c.read(0, 64 << 10), want);
    assert_eq!(c.request(4, 0, 32 << 10, 16 << 10, &[]).0, 0);
    assert_eq!(c.read(32 << 10, 16 << 10), vec![0u8; 16 << 10]);
    want[32 << 10..48 << 10].fill(0);
    // Out of range: EINVAL, connection stays usable.
    assert_eq!(c.request(0, 0, size - 100, 200, &[]).0, 22);
    assert_eq!(c.write(size, &[1, 2, 3], false), 22);
    assert_eq!(c.request(4, 0, u64::MAX - 10, 100, &[]).0, 22);
    // Unknown command: EINVAL.
    assert_eq!(c.request(99, 0, 0, 0, &[]).0, 22);
    assert_eq!(c.request(3, 0, 0, 0, &[]).0, 0); // FLUSH
                                                 // A second connection sees the same data (multi-conn).
    let (mut c2, _) = Client::connect(port);
    assert_eq!(c2.read(0, 64 << 10), want);
    // Garbage instead of a request: the server drops that connection only.
    c2.s.write_all(&[0xde; 28]).unwrap();
    let mut one = [0u8; 1];
    assert!(matches!(c2.s.read(&mut one), Ok(0) | Err(_)));
    assert_eq!(c.read(0, 4096), want[..4096]);
    // An oversized write header: disconnected, the volume unharmed.
    let (mut c3, _) = Client::connect(port);
    let mut m = Vec::new();
    m.extend_from_slice(&0x2560_9513u32.to_be_bytes());
    m.extend_from_slice(&0u16.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m.extend_from_slice(&1u64.to_be_bytes());
    m.extend_from_slice(&0u64.to_be_bytes());
    m.extend_from_slice(&u32::MAX.to_be_bytes());
    c3.s.write_all(&m).unwrap();
    assert!(matches!(c3.s.read(&mut one), Ok(0) | Err(_)));
    drop((c, c2, c3));
    // Two servers on one image: refused.
    let second = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(["serve", "--image"])
        .arg(&image)
        .args(["--listen", &format!("127.0.0.1:{}", port + 1)])
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use"));
    // Clean shutdown, restart: everything is there.
    srv.signal("-TERM");
    let mut srv = Server::start(&image, false, port);
    let (mut c, _) = Client::connect(port);
    assert_eq!(c.read(0, 64 << 10), want);
    // Flushed data survives SIGKILL.
    let d = bytes(8192, 9);
    assert_eq!(c.write(100 << 10, &d, false), 0);
    assert_eq!(c.request(3, 0, 0, 0, &[]).0, 0);
    drop(c);
    srv.signal("-KILL");
    let _srv = Server::start(&image, false, port);
    let (mut c, _) = Client::connect(port);
    assert_eq!(c.read(100 << 10, 8192), d);
    assert_eq!(c.read(0, 64 << 10), want);
}

#[test]
fn qemu_io_as_a_client() {
    if Command::new("qemu-io").arg("--version").output().is_err() {
        // CI sets NANDLAB_REQUIRE_NBD_CLIENTS=1: there a missing client is a failure.
        assert!(
            std::env::var("NANDLAB_REQUIRE_NBD_CLIENTS").map_or(true, |v| v != "1"),
            "qemu-io is required (NANDLAB_REQUIRE_NBD_CLIENTS=1) but not installed"
        );
        eprintln!("SKIPPED qemu_io_as_a_client: qemu-io not installed (apt-get install qemu-utils; NANDLAB_REQUIRE_NBD_CLIENTS=1 makes this a failure)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("q.img");
    let port = common::free_port();
    let _srv = Server::start(&image, true, port);
    let url = format!("nbd://127.0.0.1:{port}");
    let out = Command::new("qemu-io")
        .args(["-f", "raw", &url])
        .args(["-c", "write -P 0xab 0 1M", "-c", "read -P 0xab 0 1M"])
        .args([
            "-c",
            "write -P 0x5c 1000 3000",
            "-c",
            "read -P 0x5c 1000 3000",
        ])
        .args(["-c", "read -P 0xab 0 1000", "-c", "write -z 8192 65536"])
        .args([
            "-c",
            "read -P 0 8192 65536",
            "-c",
            "discard 512k 256k",
            "-c",
            "flush",
        ])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("fail") && !text.contains("error"), "{text}");
    assert_eq!(text.matches("read ").count(), 4, "{text}");
}

/// `--record-trace` writes every request as a blkparse line (FUA writes as `WFS`, flushes as
/// `FN`, trims and zeroing trims as `D`), written out at flushes and shutdown; `nandlab
/// run` replays the file with the same requests, fitted to a device.
#[test]
fn record_trace_writes_a_replayable_blkparse_trace() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("rec.img");
    let trace = dir.path().join("rec.blktrace");
    let port = common::free_port();
    let mut srv = Server::start_with(
        &image,
        true,
        port,
        &["--record-trace", trace.to_str().unwrap()],
    );
    let (mut c, _) = Client::connect(port);
    assert_eq!(c.write(4096, &bytes(8192, 3), false), 0);
    assert_eq!(c.write(1000, &bytes(24, 4), true), 0); // FUA, unaligned
    assert_eq!(c.read(4096, 4096), bytes(8192, 3)[..4096].to_vec());
    assert_eq!(c.request(4, 0, 0, 16384, &[]).0, 0); // TRIM
    assert_eq!(c.request(3, 0, 0, 0, &[]).0, 0); // FLUSH
                                                 // Written out at the flush.
    let text = std::fs::read_to_string(&trace).unwrap();
    let rwbs: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().nth(6).unwrap())
        .collect();
    assert_eq!(rwbs, ["W", "WFS", "R", "D", "FN"], "{text}");
    let second = text.lines().nth(1).unwrap();
    assert!(
        second.starts_with("43,0 0 2 ") && second.ends_with(" Q WFS 1 + 1 [nbd]"),
        "{second}"
    );
    srv.signal("-TERM");
    let out = common::nandlab(&[
        "run",
        "--trace",
        trace.to_str().unwrap(),
        "--format",
        "blkparse",
        "--fit",
        "--quiet",
    ]);
    let s = common::stdout(&out);
    assert!(out.status.success(), "{s}{}", common::stderr(&out));
    // Two writes + FUA flush + read + trim + flush = 6 requests.
    assert!(s.contains("host        6 requests"), "{s}");
    assert!(s.contains("--fit: "), "{s}");
}

/// The statistics a clean shutdown prints (the JSON after "shut down cleanly: ").
fn shutdown_stats(srv: &mut Server) -> serde_json::Value {
    srv.signal("-TERM");
    let mut err = String::new();
    srv.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("shut down cleanly: "))
        .unwrap_or_else(|| panic!("no shutdown line in {err:?}"));
    serde_json::from_str(line).unwrap()
}

/// A server with no request for a while gives the FTL idle time: after a mount, the first
/// idle pass probes the loaded checkpoint generation (one metadata read, charged) — and
/// the requests before it are served as ever. Idle time starts 0.2 s after the last
/// request (as a replay with `--idle-after 0.2` gives it), not at the next of the server's
/// once-a-second rechecks: 0.6 s of quiet after a request is enough.
#[test]
fn an_idle_server_gives_the_ftl_idle_time() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("idle.img");
    let port = common::free_port();
    let mut srv = Server::start(&image, true, port);
    let (mut c, _) = Client::connect(port);
    assert_eq!(c.write(0, &bytes(8192, 3), true), 0);
    drop(c);
    shutdown_stats(&mut srv);
    // Mounted again; a client reads at once, then nothing for 0.6 s.
    let mut srv = Server::start(&image, false, port);
    let (mut c, _) = Client::connect(port);
    assert_eq!(c.read(0, 8192), bytes(8192, 3));
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(c.read(0, 8192), bytes(8192, 3));
    drop(c);
    let stats = shutdown_stats(&mut srv);
    let meta_reads = stats["counters"]["reads"]["meta"].as_u64().unwrap();
    assert!(
        meta_reads >= 1,
        "no idle-time probe: {}",
        stats["counters"]["reads"]
    );
    assert_eq!(stats["idle"]["errors"], 0, "{}", stats["idle"]);
}

/// Discards of the whole export, as mkfs sends them: TRIM and WRITE_ZEROES of every byte
/// are one range each (one trim record, however long), unaligned ends keep their
/// neighbours' bytes, a zero-length discard does nothing, one past the end is refused with
/// nothing discarded, and the recorded trace holds each as one `D` line.
#[test]
fn whole_export_discards_are_one_range_and_exact() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disc.img");
    let trace = dir.path().join("disc.blktrace");
    let port = common::free_port();
    let mut srv = Server::start_with(
        &image,
        true,
        port,
        &["--record-trace", trace.to_str().unwrap()],
    );
    let (mut c, size) = Client::connect(port);
    let a = bytes(64 << 10, 5);
    assert_eq!(c.write(0, &a, false), 0);
    assert_eq!(c.write(size - 8192, &bytes(8192, 6), false), 0);
    // Past the end: EINVAL, nothing discarded.
    assert_eq!(c.request(4, 0, 4096, size as u32, &[]).0, 22);
    assert_eq!(c.read(0, 64 << 10), a);
    // Zero length: nothing to do.
    assert_eq!(c.request(4, 0, 4096, 0, &[]).0, 0);
    assert_eq!(c.read(0, 64 << 10), a);
    // WRITE_ZEROES of all but 100 bytes at each end: the ends keep their bytes.
    assert_eq!(c.request(6, 0, 100, (size - 200) as u32, &[]).0, 0);
    let head = c.read(0, 4096);
    assert_eq!(head[..100], a[..100]);
    assert!(head[100..].iter().all(|&b| b == 0));
    let tail = c.read(size - 100, 100);
    assert_eq!(tail, bytes(8192, 6)[8092..].to_vec());
    // TRIM of the whole export: everything reads as zeros, after a restart too.
    assert_eq!(c.write(8192, &a, false), 0);
    assert_eq!(c.request(4, 0, 0, size as u32, &[]).0, 0);
    assert_eq!(c.request(3, 0, 0, 0, &[]).0, 0);
    assert!(c.read(0, 128 << 10).iter().all(|&b| b == 0));
    drop(c);
    let stats = shutdown_stats(&mut srv);
    let records = stats["counters"]["trim_records"].as_u64().unwrap();
    assert!(
        (1..=3).contains(&records),
        "one record per discard: {stats}"
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let whole = format!(" Q D 0 + {} [nbd]", size / 512);
    assert!(text.lines().any(|l| l.ends_with(&whole)), "{text}");
    let mut srv = Server::start(&image, false, port);
    let (mut c, _) = Client::connect(port);
    assert!(c.read(0, 128 << 10).iter().all(|&b| b == 0));
    assert!(c.read(size - 8192, 8192).iter().all(|&b| b == 0));
    drop(c);
    srv.signal("-TERM");
}

/// `--timing emulate`: a reply waits for the emulated device (a 4 KiB write on tiny-mlc
/// takes at least its 500 µs program on the wall clock), and a request that issues no
/// device operation (a read of a page never written) completes on the device when it
/// arrives: the host's time serving it is the reply's lag, not device time.
#[test]
fn emulated_replies_wait_for_the_device_and_host_time_is_lag() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("emu.img");
    let port = common::free_port();
    let mut srv = Server::start_with(&image, true, port, &["--timing", "emulate"]);
    let (mut c, size) = Client::connect(port);
    let start = std::time::Instant::now();
    assert_eq!(c.write(0, &bytes(4096, 1), false), 0);
    let waited = start.elapsed();
    assert!(
        waited >= std::time::Duration::from_micros(500),
        "the write's reply came after {waited:?}, before its program completed"
    );
    // The reply statistics start again; then only reads of pages never written.
    srv.kill_with("-USR2");
    std::thread::sleep(std::time::Duration::from_millis(100));
    for i in 0..20u64 {
        let at = size / 2 + i * 4096;
        assert_eq!(c.read(at, 4096), vec![0u8; 4096]);
    }
    drop(c);
    let stats = shutdown_stats(&mut srv);
    let em = &stats["emulation"];
    assert_eq!(em["replies"], 20, "{em}");
    assert_eq!(em["device_us"]["max"], 0, "{em}");
}
