//! `nandlab serve`: the NBD protocol from a raw client (handshake, every command, unaligned
//! requests, protocol errors), restarts after SIGTERM and SIGKILL, the image lock, and
//! `qemu-io` as a real client where it is installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Server {
    child: Child,
}

impl Server {
    fn start(image: &Path, create: bool, port: u16) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nandlab"));
        cmd.args(["serve", "--image"]).arg(image);
        cmd.args(["--listen", &format!("127.0.0.1:{port}")]);
        if create {
            cmd.args(["--create", "tiny-mlc", "--blocks-per-plane", "128"]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The status line says it is listening.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("serving"), "server said: {line:?}");
        Server { child }
    }

    fn signal(&mut self, sig: &str) {
        Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        let st = self.child.wait().unwrap();
        if sig == "-TERM" {
            assert!(st.success(), "clean shutdown failed: {st:?}");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Client {
    s: TcpStream,
    cookie: u64,
}

impl Client {
    /// Connects and negotiates with NBD_OPT_GO; returns the client and the export size.
    fn connect(port: u16) -> (Client, u64) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..8], b"NBDMAGIC");
        assert_eq!(&hello[8..16], b"IHAVEOPT");
        s.write_all(&3u32.to_be_bytes()).unwrap(); // fixed newstyle, no zeroes
        let mut opt = Vec::new();
        opt.extend_from_slice(b"IHAVEOPT");
        opt.extend_from_slice(&7u32.to_be_bytes()); // GO
        opt.extend_from_slice(&6u32.to_be_bytes());
        opt.extend_from_slice(&0u32.to_be_bytes()); // empty name
        opt.extend_from_slice(&0u16.to_be_bytes()); // no info requests
        s.write_all(&opt).unwrap();
        let mut size = 0;
        let mut min_block = 0;
        loop {
            let mut h = [0u8; 20];
            s.read_exact(&mut h).unwrap();
            let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
            let mut d = vec![0u8; len];
            s.read_exact(&mut d).unwrap();
            match kind {
                1 => break, // ACK
                3 => match u16::from_be_bytes([d[0], d[1]]) {
                    0 => size = u64::from_be_bytes(d[2..10].try_into().unwrap()),
                    3 => min_block = u32::from_be_bytes(d[2..6].try_into().unwrap()),
                    _ => {}
                },
                k => panic!("option reply {k:#x}"),
            }
        }
        assert_eq!(min_block, 512);
        (Client { s, cookie: 0 }, size)
    }

    fn request(
        &mut self,
        kind: u16,
        flags: u16,
        offset: u64,
        len: u32,
        data: &[u8],
    ) -> (u32, Vec<u8>) {
        self.cookie += 1;
        let mut m = Vec::new();
        m.extend_from_slice(&0x2560_9513u32.to_be_bytes());
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&kind.to_be_bytes());
        m.extend_from_slice(&self.cookie.to_be_bytes());
        m.extend_from_slice(&offset.to_be_bytes());
        m.extend_from_slice(&len.to_be_bytes());
        m.extend_from_slice(data);
        self.s.write_all(&m).unwrap();
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        assert_eq!(u32::from_be_bytes(h[..4].try_into().unwrap()), 0x6744_6698);
        assert_eq!(
            u64::from_be_bytes(h[8..16].try_into().unwrap()),
            self.cookie
        );
        let err = u32::from_be_bytes(h[4..8].try_into().unwrap());
        let mut d = Vec::new();
        if kind == 0 && err == 0 {
            d = vec![0u8; len as usize];
            self.s.read_exact(&mut d).unwrap();
        }
        (err, d)
    }

    fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> u32 {
        self.request(1, fua as u16, offset, data.len() as u32, data)
            .0
    }

    fn read(&mut self, offset: u64, len: u32) -> Vec<u8> {
        let (e, d) = self.request(0, 0, offset, len, &[]);
        assert_eq!(e, 0, "read {offset}+{len}");
        d
    }
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

#[test]
fn nbd_commands_restarts_and_protocol_errors() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("nbd.img");
    let port = 20000 + (std::process::id() % 20000) as u16;
    let mut srv = Server::start(&image, true, port);
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
        eprintln!("qemu-io not installed: step skipped (CI installs qemu-utils)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("q.img");
    let port = 20000 + ((std::process::id() + 7919) % 20000) as u16;
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
