//! The connection under the protocol: plain TCP or TLS after STARTTLS, buffered reads,
//! and the reply writers (simple replies and structured chunks, one write each).

use super::{CHUNK, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, SIMPLE_REPLY_MAGIC, STRUCTURED_REPLY_MAGIC};
use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::TcpStream;

/// The connection: plain TCP (reads buffered, so a request header is one system call, not
/// six), or TLS over it after STARTTLS (rustls buffers the plaintext itself).
pub(super) enum Conn {
    /// Plain TCP.
    Plain(BufReader<TcpStream>),
    /// The stream, and a buffer where a reply's parts are joined: rustls makes a record
    /// (and a system call) per write, so a reply goes in as one.
    Tls(
        Box<rustls::StreamOwned<rustls::ServerConnection, BufSock>>,
        Vec<u8>,
    ),
}

/// The socket under TLS: reads buffered (rustls asks for 4 KiB at a time; pipelined
/// requests then cost one system call per 64 KiB, not per 4 KiB), writes straight through.
pub(super) struct BufSock(pub(super) BufReader<TcpStream>);

impl Read for BufSock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for BufSock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.get_mut().write(buf)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.0.get_mut().write_vectored(bufs)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.get_mut().flush()
    }
}

impl Conn {
    pub(super) fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s.get_ref(),
            Conn::Tls(t, _) => t.sock.0.get_ref(),
        }
    }

    /// Sends one reply made of `parts`: a vectored write in plain TCP (no copy), one TLS
    /// record's worth of writes under TLS.
    pub(super) fn send(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        match self {
            Conn::Plain(s) => {
                let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
                write_all_vectored(s.get_mut(), &mut slices)
            }
            Conn::Tls(t, joined) => {
                joined.clear();
                for p in parts {
                    joined.extend_from_slice(p);
                }
                t.write_all(joined)?;
                t.flush()?;
                if joined.capacity() > 2 * CHUNK {
                    *joined = Vec::new(); // a whole-payload reply: do not keep its size
                }
                Ok(())
            }
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(t, _) => t.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.get_mut().write(buf),
            Conn::Tls(t, _) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.get_mut().flush(),
            Conn::Tls(t, _) => t.flush(),
        }
    }
}

pub(super) fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

pub(super) fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

pub(super) fn protocol(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Writes all of `bufs` (a header and a payload) without joining them.
pub(super) fn write_all_vectored(w: &mut impl Write, bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    let mut bufs = bufs;
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    w.flush()
}

pub(super) fn simple_reply(
    conn: &mut Conn,
    cookie: u64,
    error: u32,
    data: &[u8],
) -> io::Result<()> {
    let mut h = [0u8; 16];
    h[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    h[4..8].copy_from_slice(&error.to_be_bytes());
    h[8..].copy_from_slice(&cookie.to_be_bytes());
    conn.send(&[&h, data])
}

/// One structured reply chunk: header, then `parts` as its payload.
pub(super) fn chunk(
    conn: &mut Conn,
    cookie: u64,
    flags: u16,
    kind: u16,
    parts: &[&[u8]],
) -> io::Result<()> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut h = [0u8; 20];
    h[..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    h[4..6].copy_from_slice(&flags.to_be_bytes());
    h[6..8].copy_from_slice(&kind.to_be_bytes());
    h[8..16].copy_from_slice(&cookie.to_be_bytes());
    h[16..].copy_from_slice(&(len as u32).to_be_bytes());
    let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
    all.push(&h);
    all.extend_from_slice(parts);
    conn.send(&all)
}

/// A structured error chunk ending the reply.
pub(super) fn error_chunk(conn: &mut Conn, cookie: u64, error: u32) -> io::Result<()> {
    chunk(
        conn,
        cookie,
        REPLY_FLAG_DONE,
        REPLY_TYPE_ERROR,
        &[&error.to_be_bytes(), &0u16.to_be_bytes()],
    )
}

/// Reads and drops `len` payload bytes (a refused WRITE's data) through `buf`.
pub(super) fn drain(r: &mut impl Read, mut len: usize, buf: &mut [u8]) -> io::Result<()> {
    while len > 0 {
        let n = len.min(buf.len());
        r.read_exact(&mut buf[..n])?;
        len -= n;
    }
    Ok(())
}
