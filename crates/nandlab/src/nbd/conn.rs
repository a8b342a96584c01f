//! The connection under the protocol: plain TCP or TLS after STARTTLS, buffered reads,
//! and the reply writers (simple replies and structured chunks, one write each).

use super::{CHUNK, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, SIMPLE_REPLY_MAGIC, STRUCTURED_REPLY_MAGIC};
use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::TcpStream;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// The connection: plain TCP (reads buffered, so a request header is one system call, not
/// six), or TLS over it after STARTTLS (rustls buffers the plaintext itself).
///
/// Replies are corked in transmission: [`send`](Conn::send) and
/// [`send_filled`](Conn::send_filled) queue them, and they go out together when the server
/// is about to wait for the client ([`flush_if_idle`](Conn::flush_if_idle): no whole
/// request header is buffered) or when a queue would pass [`CORK_LIMIT`]. A client that
/// pipelines (queue depth 16) then gets the replies of a burst of requests in one system
/// call — and under TLS in one record, which it decrypts once instead of once per reply.
/// Small READ payloads (up to [`QUEUED_PAYLOAD`]) are read by the volume straight into the
/// queue, so their replies batch too, without a copy. A reply is never held while the
/// server waits for the client, so a client that waits for replies before sending more
/// cannot stall. The queue holds at most [`CORK_LIMIT`] bytes plus one reply.
///
/// With replies held ([`set_hold`](Conn::set_hold): `serve --timing emulate`) nothing is
/// written while a request is served: its whole reply stays in the queue, and the
/// transmission loop takes it ([`take_queued`](Conn::take_queued)) to send when the
/// simulated device completes the request ([`write_now`](Conn::write_now)).
pub(super) enum Conn {
    /// Plain TCP, and the replies queued (a reply with a payload larger than
    /// [`QUEUED_PAYLOAD`] goes out at once, with the queue before it, in one vectored
    /// write: payloads are not copied).
    Plain(BufReader<TcpStream>, Queue),
    /// The stream, and the replies queued: rustls makes a record (and a system call) per
    /// write, so queued replies go in as one.
    Tls(
        Box<rustls::StreamOwned<rustls::ServerConnection, BufSock>>,
        Queue,
    ),
}

/// Replies queued for one write, and whether they are held (see [`Conn`]).
#[derive(Debug, Default)]
pub(super) struct Queue {
    bytes: Vec<u8>,
    hold: bool,
}

impl Deref for Queue {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.bytes
    }
}

impl DerefMut for Queue {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }
}

/// Bytes of queued replies that make [`Conn::send`] write them out at once.
pub(super) const CORK_LIMIT: usize = 64 << 10;

/// A reply up to this size (headers, errors, small block-status lists) is queued in plain
/// TCP by [`Conn::send`]; a larger one carries a payload and goes out at once.
const SMALL_REPLY: usize = 512;

/// A READ payload up to this size is produced in the reply queue itself
/// ([`Conn::send_filled`]); a larger one is read into the connection's piece buffer and sent
/// from there (plain TCP: one vectored write, so one system call carries many pages).
pub(super) const QUEUED_PAYLOAD: usize = 32 << 10;

/// A request header's size: less buffered than this means reading the next one may wait.
const HEADER: usize = 28;

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
            Conn::Plain(s, _) => s.get_ref(),
            Conn::Tls(t, _) => t.sock.0.get_ref(),
        }
    }

    /// Queues one reply made of `parts` (see the type's docs): in plain TCP a reply with a
    /// payload is written at once, with the queue, in one vectored write (no copy).
    pub(super) fn send(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        match self {
            Conn::Plain(s, queued) => {
                if queued.hold || total <= SMALL_REPLY && queued.len() + total <= CORK_LIMIT {
                    for p in parts {
                        queued.extend_from_slice(p);
                    }
                    return Ok(());
                }
                let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(parts.len() + 1);
                slices.push(IoSlice::new(queued));
                slices.extend(parts.iter().map(|p| IoSlice::new(p)));
                write_all_vectored(s.get_mut(), &mut slices)?;
                queued.clear();
                Ok(())
            }
            Conn::Tls(_, queued) => {
                for p in parts {
                    queued.extend_from_slice(p);
                }
                if queued.len() >= CORK_LIMIT && !queued.hold {
                    self.flush_replies()?;
                }
                Ok(())
            }
        }
    }

    /// Queues one reply made of `head` and `n` payload bytes that `fill` writes straight
    /// into the queue (no copy; the queue is written out first if the reply would take it
    /// past [`CORK_LIMIT`]). If `fill` fails, nothing is queued and its error is returned,
    /// for the caller to send an error reply instead. `head.len() + n` must not pass
    /// [`CORK_LIMIT`] (it is at most a header and [`QUEUED_PAYLOAD`]).
    pub(super) fn send_filled(
        &mut self,
        head: &[u8],
        n: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), u32>,
    ) -> io::Result<Result<(), u32>> {
        debug_assert!(head.len() + n <= CORK_LIMIT);
        if self.queue().len() + head.len() + n > CORK_LIMIT && !self.queue().hold {
            self.flush_replies()?;
        }
        let queued = self.queue();
        let start = queued.len();
        queued.extend_from_slice(head);
        queued.resize(start + head.len() + n, 0);
        if let Err(e) = fill(&mut queued[start + head.len()..]) {
            queued.truncate(start);
            return Ok(Err(e));
        }
        Ok(Ok(()))
    }

    fn queue(&mut self) -> &mut Queue {
        match self {
            Conn::Plain(_, q) | Conn::Tls(_, q) => q,
        }
    }

    /// Holds replies in the queue (see [`Conn`]); `false` writes them as usual again.
    pub(super) fn set_hold(&mut self, hold: bool) {
        self.queue().hold = hold;
    }

    /// The queued replies, taken out of the queue.
    pub(super) fn take_queued(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.queue().bytes)
    }

    /// Writes `bytes` (whole replies) now, after anything queued.
    pub(super) fn write_now(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.flush_replies()?;
        match self {
            Conn::Plain(s, _) => s.get_mut().write_all(bytes),
            Conn::Tls(t, _) => {
                t.write_all(bytes)?;
                t.flush()
            }
        }
    }

    /// Waits up to `timeout` for the client to send something; whether it did (or a whole
    /// request header is buffered already).
    pub(super) fn wait_readable(&mut self, timeout: Duration) -> io::Result<bool> {
        if self.buffered()? >= HEADER {
            return Ok(true);
        }
        let mut fd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(self.tcp()),
            events: libc::POLLIN,
            revents: 0,
        };
        // Nanosecond resolution: a held reply may be due in microseconds.
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one valid pollfd and a valid timespec for the call's duration; no mask.
        let n = unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(false),
                _ => Err(e),
            };
        }
        Ok(n > 0)
    }

    /// Request bytes at hand without a system call (under TLS, the bytes already received
    /// decrypted first).
    fn buffered(&mut self) -> io::Result<usize> {
        Ok(match self {
            Conn::Plain(s, _) => s.buffer().len(),
            Conn::Tls(t, _) => {
                let t = &mut **t;
                let mut state = t.conn.process_new_packets().map_err(tls_error)?;
                while state.plaintext_bytes_to_read() < HEADER
                    && !t.sock.0.buffer().is_empty()
                    && t.conn.wants_read()
                {
                    t.conn.read_tls(&mut t.sock)?;
                    state = t.conn.process_new_packets().map_err(tls_error)?;
                }
                state.plaintext_bytes_to_read()
            }
        })
    }

    /// Writes the queued replies out now.
    pub(super) fn flush_replies(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s, queued) => {
                if !queued.is_empty() {
                    s.get_mut().write_all(queued)?;
                    queued.clear();
                }
                Ok(())
            }
            Conn::Tls(t, queued) => {
                if !queued.is_empty() {
                    t.write_all(queued)?;
                    t.flush()?;
                    queued.clear();
                }
                if queued.capacity() > 2 * CHUNK.max(CORK_LIMIT) {
                    queued.bytes = Vec::new(); // a whole-payload reply: do not keep its size
                }
                Ok(())
            }
        }
    }

    /// Writes the queued replies out unless a whole request header is already at hand
    /// (then the next request is read without waiting for the client). Under TLS the
    /// bytes already received are decrypted first (no system call) to find out.
    pub(super) fn flush_if_idle(&mut self) -> io::Result<()> {
        if self.buffered()? < HEADER {
            self.flush_replies()?;
        }
        Ok(())
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("TLS: {e}"))
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s, _) => s.read(buf),
            Conn::Tls(t, _) => t.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s, _) => s.get_mut().write(buf),
            Conn::Tls(t, _) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s, _) => s.get_mut().flush(),
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

/// A simple reply's header.
pub(super) fn simple_header(cookie: u64, error: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    h[4..8].copy_from_slice(&error.to_be_bytes());
    h[8..].copy_from_slice(&cookie.to_be_bytes());
    h
}

/// A simple reply without payload.
pub(super) fn simple_reply(conn: &mut Conn, cookie: u64, error: u32) -> io::Result<()> {
    conn.send(&[&simple_header(cookie, error)])
}

/// A structured reply chunk's header, for a payload of `len` bytes.
pub(super) fn chunk_header(cookie: u64, flags: u16, kind: u16, len: usize) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    h[4..6].copy_from_slice(&flags.to_be_bytes());
    h[6..8].copy_from_slice(&kind.to_be_bytes());
    h[8..16].copy_from_slice(&cookie.to_be_bytes());
    h[16..].copy_from_slice(&(len as u32).to_be_bytes());
    h
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
    let h = chunk_header(cookie, flags, kind, len);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A plain connection and the peer's end of its socket.
    fn pair() -> (Conn, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        (
            Conn::Plain(BufReader::new(server), Queue::default()),
            client,
        )
    }

    /// A reply whose payload fails to fill leaves the queue as it was; the queue is written
    /// out before a reply would take it past the limit, and never holds more than the limit.
    #[test]
    fn send_filled_queues_exact_bytes_and_drops_failed_fills() {
        let (mut conn, mut peer) = pair();
        simple_reply(&mut conn, 1, 0).unwrap();
        let r = conn.send_filled(b"head", 100, |b| {
            b.fill(9);
            Err(5)
        });
        assert_eq!(r.unwrap(), Err(5));
        assert_eq!(
            conn.queue().len(),
            16,
            "the failed reply left nothing behind"
        );
        let mut expect = simple_header(1, 0).to_vec();
        for k in 0..5u8 {
            let n = QUEUED_PAYLOAD - k as usize;
            let r = conn.send_filled(&[k; 3], n, |b| {
                assert_eq!(b.len(), n);
                b.fill(k + 1);
                Ok(())
            });
            assert_eq!(r.unwrap(), Ok(()));
            assert!(conn.queue().len() <= CORK_LIMIT);
            expect.extend_from_slice(&[k; 3]);
            expect.extend(std::iter::repeat_n(k + 1, n));
        }
        conn.flush_replies().unwrap();
        assert!(conn.queue().is_empty());
        let mut got = vec![0u8; expect.len()];
        peer.read_exact(&mut got).unwrap();
        assert!(got == expect);
    }
}
