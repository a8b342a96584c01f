//! Shared by the integration tests: running the binary, writing input files, a
//! `nandlab serve` process and a raw NBD client.
#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A loopback port the kernel picked as free (bound to port 0, then released): tests never
/// derive ports from the process id, so parallel runs and stale servers cannot collide.
#[allow(dead_code)]
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A `nandlab serve` process, killed on drop.
pub struct Server {
    pub child: Child,
}

impl Server {
    /// Starts a server on `image` (formatting it first with `create`) on 127.0.0.1:`port`.
    pub fn start(image: &Path, create: bool, port: u16) -> Server {
        Server::start_with(image, create, port, &[])
    }

    /// [`Server::start`] with extra command-line arguments.
    pub fn start_with(image: &Path, create: bool, port: u16, extra: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nandlab"));
        cmd.args(["serve", "--image"]).arg(image);
        cmd.args(["--listen", &format!("127.0.0.1:{port}")]);
        if create {
            cmd.args(["--create", "tiny-mlc", "--blocks-per-plane", "128"]);
        }
        cmd.args(extra);
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

    /// Sends `sig` (e.g. "-USR2") and returns at once (the server goes on).
    pub fn kill_with(&self, sig: &str) {
        Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
    }

    /// Sends `sig` (e.g. "-TERM") and waits for the exit; a TERM must exit cleanly.
    pub fn signal(&mut self, sig: &str) {
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

/// A raw NBD client: every byte it sends is spelled out here.
pub struct Client {
    pub s: TcpStream,
    pub cookie: u64,
}

/// `NBD_REP_ACK`.
pub const ACK: u32 = 1;
/// `NBD_REP_INFO`.
pub const INFO: u32 = 3;

impl Client {
    /// Connects and reads the greeting; sends the fixed-newstyle, no-zeroes client flags.
    pub fn raw(port: u16) -> Client {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..8], b"NBDMAGIC");
        assert_eq!(&hello[8..16], b"IHAVEOPT");
        s.write_all(&3u32.to_be_bytes()).unwrap(); // fixed newstyle, no zeroes
        Client { s, cookie: 0 }
    }

    /// Sends option `opt` with `data` and reads its replies up to the final one (an ACK or
    /// an error): (reply type, data) each.
    pub fn opt(&mut self, opt: u32, data: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut m = Vec::new();
        m.extend_from_slice(b"IHAVEOPT");
        m.extend_from_slice(&opt.to_be_bytes());
        m.extend_from_slice(&(data.len() as u32).to_be_bytes());
        m.extend_from_slice(data);
        self.s.write_all(&m).unwrap();
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 20];
            self.s.read_exact(&mut h).unwrap();
            assert_eq!(u32::from_be_bytes(h[8..12].try_into().unwrap()), opt);
            let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
            let mut d = vec![0u8; len];
            self.s.read_exact(&mut d).unwrap();
            let last = kind == ACK || kind >= 1 << 31;
            out.push((kind, d));
            if last {
                return out;
            }
        }
    }

    /// NBD_OPT_GO (or INFO, `opt` = 6) for export `name`: its replies.
    pub fn go_opt(&mut self, opt: u32, name: &str) -> Vec<(u32, Vec<u8>)> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&0u16.to_be_bytes()); // no info requests
        self.opt(opt, &d)
    }

    /// Connects and negotiates with NBD_OPT_GO; returns the client and the export size.
    pub fn connect(port: u16) -> (Client, u64) {
        let mut c = Client::raw(port);
        let size = c.go("");
        (c, size)
    }

    /// NBD_OPT_GO for `name`, which must succeed: the export size (and the advertised
    /// minimum block size must be 1: any request is served).
    pub fn go(&mut self, name: &str) -> u64 {
        let mut size = 0;
        let mut min_block = 0;
        for (kind, d) in self.go_opt(7, name) {
            match kind {
                ACK => {}
                INFO => match u16::from_be_bytes([d[0], d[1]]) {
                    0 => size = u64::from_be_bytes(d[2..10].try_into().unwrap()),
                    3 => min_block = u32::from_be_bytes(d[2..6].try_into().unwrap()),
                    _ => {}
                },
                k => panic!("option reply {k:#x}"),
            }
        }
        assert_eq!(min_block, 1);
        size
    }

    /// Sends a request header (and `data`), without reading a reply.
    pub fn send(&mut self, kind: u16, flags: u16, offset: u64, len: u32, data: &[u8]) {
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
    }

    /// A request answered by structured chunks: (flags, type, payload) each, up to DONE.
    pub fn structured(
        &mut self,
        kind: u16,
        flags: u16,
        offset: u64,
        len: u32,
    ) -> Vec<(u16, u16, Vec<u8>)> {
        self.send(kind, flags, offset, len, &[]);
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 20];
            self.s.read_exact(&mut h).unwrap();
            assert_eq!(u32::from_be_bytes(h[..4].try_into().unwrap()), 0x668e_33ef);
            assert_eq!(
                u64::from_be_bytes(h[8..16].try_into().unwrap()),
                self.cookie
            );
            let f = u16::from_be_bytes([h[4], h[5]]);
            let t = u16::from_be_bytes([h[6], h[7]]);
            let n = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
            let mut d = vec![0u8; n];
            self.s.read_exact(&mut d).unwrap();
            out.push((f, t, d));
            if f & 1 != 0 {
                return out;
            }
        }
    }

    /// A request answered by a simple reply: (error, payload of a successful READ).
    pub fn request(
        &mut self,
        kind: u16,
        flags: u16,
        offset: u64,
        len: u32,
        data: &[u8],
    ) -> (u32, Vec<u8>) {
        self.send(kind, flags, offset, len, data);
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

    /// WRITE; the error.
    pub fn write(&mut self, offset: u64, data: &[u8], fua: bool) -> u32 {
        self.request(1, fua as u16, offset, data.len() as u32, data)
            .0
    }

    /// READ, which must succeed.
    pub fn read(&mut self, offset: u64, len: u32) -> Vec<u8> {
        let (e, d) = self.request(0, 0, offset, len, &[]);
        assert_eq!(e, 0, "read {offset}+{len}");
        d
    }
}

/// Runs the binary with `args`.
pub fn nandlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(args)
        .output()
        .expect("run nandlab")
}

/// Its standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `text` to the file `name` in `dir`; its path.
pub fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}
