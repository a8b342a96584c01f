//! The NBD protocol (newstyle, fixed handshake) over a byte-addressed volume.
//!
//! Handshake: `NBD_OPT_EXPORT_NAME`, `NBD_OPT_GO` / `NBD_OPT_INFO` (export size and flags,
//! name, block-size constraints: minimum 1 — any length and alignment is served, sub-page
//! pieces by read-modify-write — preferred = the FTL page, maximum 32 MiB), `NBD_OPT_LIST`,
//! `NBD_OPT_ABORT`, `NBD_OPT_STARTTLS` (when the server has a certificate),
//! `NBD_OPT_STRUCTURED_REPLY`, `NBD_OPT_LIST_META_CONTEXT` / `NBD_OPT_SET_META_CONTEXT`
//! (`base:allocation`); anything else gets `NBD_REP_ERR_UNSUP`. The export has one name
//! (`--export-name`, default empty); the empty name also selects it (the default export);
//! another name gets `NBD_REP_ERR_UNKNOWN` (or, for `NBD_OPT_EXPORT_NAME`, which has no
//! error reply, a closed connection). An option longer than 64 KiB gets
//! `NBD_REP_ERR_TOO_BIG` and the connection is closed. With TLS required, every option but
//! STARTTLS and ABORT gets `NBD_REP_ERR_TLS_REQD` until TLS is up.
//!
//! Transmission: READ, WRITE (FUA), FLUSH, TRIM, WRITE_ZEROES (FUA, NO_HOLE: zeros are then
//! written, not a hole punched), BLOCK_STATUS (`base:allocation`: pages never written or
//! trimmed are holes that read as zeros), DISC. With structured replies READ and
//! BLOCK_STATUS answer in structured chunks (a READ streams chunk by chunk; with
//! `NBD_CMD_FLAG_DF` in one piece), other commands in simple replies. Flags the command
//! does not take, and flags the server never advertised, get `EINVAL`. A malformed request
//! (bad magic, a payload over 32 MiB) ends the connection; out-of-range requests get
//! `EINVAL`.
//!
//! Memory: a WRITE payload is streamed from the socket in chunks of at most [`CHUNK`] bytes,
//! each written before the next is read; a structured READ is streamed the same way, each
//! connection reusing one piece buffer. A READ payload up to 32 KiB is read straight into
//! the connection's reply queue (at most 64 KiB and one reply; see `conn::Conn`), so the
//! replies of pipelined small READs leave in one system call, uncopied. Only a
//! simple-reply READ (and a DF READ) longer
//! than a piece needs its whole payload at once: that buffer is taken from a [`Budget`]
//! shared by all connections, so the total is bounded, and freed when the reply is sent
//! (header and payload go out in one vectored write, no copy). A client that leaves a reply
//! untaken past the stall timeout is disconnected, so stalled readers cannot hold the
//! budget for ever. Nothing a
//! client sends can make the server panic or leave the volume inconsistent: every request
//! runs under the volume lock, chunk by chunk.

mod conn;
mod handshake;
mod held;
pub mod tls;

use conn::{chunk, chunk_header, drain, error_chunk, protocol, simple_header, simple_reply, Conn};
use handshake::{handshake, Handshake};
use held::{Emulation, HeldReplies, Timing};
use std::io::{self, BufReader, Read};
use std::net::TcpStream;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Handshake magics.
const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
const FLAG_NO_ZEROES: u16 = 1 << 1;
const C_FLAG_FIXED_NEWSTYLE: u32 = 1 << 0;
const C_FLAG_NO_ZEROES: u32 = 1 << 1;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_STARTTLS: u32 = 5;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;
const OPT_STRUCTURED_REPLY: u32 = 8;
const OPT_LIST_META_CONTEXT: u32 = 9;
const OPT_SET_META_CONTEXT: u32 = 10;

const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_META_CONTEXT: u32 = 4;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_POLICY: u32 = (1 << 31) + 2;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_ERR_TLS_REQD: u32 = (1 << 31) + 5;
const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;
const REP_ERR_TOO_BIG: u32 = (1 << 31) + 9;

const INFO_EXPORT: u16 = 0;
const INFO_NAME: u16 = 1;
const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags.
const T_HAS_FLAGS: u16 = 1 << 0;
const T_SEND_FLUSH: u16 = 1 << 2;
const T_SEND_FUA: u16 = 1 << 3;
const T_SEND_TRIM: u16 = 1 << 5;
const T_SEND_WRITE_ZEROES: u16 = 1 << 6;
const T_SEND_DF: u16 = 1 << 7;
const T_CAN_MULTI_CONN: u16 = 1 << 8;

const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;
const CMD_TRIM: u16 = 4;
const CMD_WRITE_ZEROES: u16 = 6;
const CMD_BLOCK_STATUS: u16 = 7;
const CMD_FLAG_FUA: u16 = 1 << 0;
const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
const CMD_FLAG_DF: u16 = 1 << 2;
const CMD_FLAG_REQ_ONE: u16 = 1 << 3;

const REPLY_FLAG_DONE: u16 = 1 << 0;
const REPLY_TYPE_NONE: u16 = 0;
const REPLY_TYPE_OFFSET_DATA: u16 = 1;
const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

/// `base:allocation` flags.
const STATE_HOLE: u32 = 1 << 0;
const STATE_ZERO: u32 = 1 << 1;
/// The one meta context this server offers, and its id.
const BASE_ALLOCATION: &str = "base:allocation";
const BASE_ALLOCATION_ID: u32 = 1;

/// NBD error numbers.
pub const EIO: u32 = 5;
/// Out of space.
pub const ENOSPC: u32 = 28;
/// Invalid request.
pub const EINVAL: u32 = 22;
/// Server shutting down.
pub const ESHUTDOWN: u32 = 108;

/// Largest option payload accepted.
const MAX_OPTION: u32 = 64 * 1024;
/// Largest read or write payload.
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Bytes per streamed piece of a WRITE or structured READ payload.
pub const CHUNK: usize = 256 << 10;
/// Most extents in one BLOCK_STATUS reply.
const MAX_EXTENTS: usize = 8192;

/// A data command as the client sent it (before any splitting into pieces), for
/// [`Export::observe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// READ.
    Read,
    /// WRITE; `fua`: forced unit access.
    Write {
        /// Durable before the reply.
        fua: bool,
    },
    /// FLUSH.
    Flush,
    /// TRIM; `fua`: durable before the reply.
    Trim {
        /// Durable before the reply.
        fua: bool,
    },
    /// WRITE_ZEROES.
    WriteZeroes {
        /// Durable before the reply.
        fua: bool,
        /// Real zeros written (no hole punched).
        no_hole: bool,
    },
}

/// What the server needs from the volume it exports. Errors are NBD error numbers.
pub trait Export {
    /// Sees every well-formed data command once, as the client sent it, before it is
    /// served (`nandlab serve --record-trace`); the default ignores it.
    fn observe(&mut self, _cmd: Command, _offset: u64, _len: u64) {}
    /// Reads `buf.len()` bytes at `offset` (in range).
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), u32>;
    /// Writes `data` at `offset` (in range); with `fua`, durable before it returns.
    fn write_at(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<(), u32>;
    /// Discards a range (reads as zeros afterwards where whole pages are covered).
    fn trim(&mut self, offset: u64, len: u64, fua: bool) -> Result<(), u32>;
    /// Writes zeros over a range; with `no_hole`, real zeros are written (no hole punched).
    fn write_zeroes(&mut self, offset: u64, len: u64, fua: bool, no_hole: bool) -> Result<(), u32>;
    /// Makes everything written durable.
    fn flush(&mut self) -> Result<(), u32>;
    /// Allocation from `offset` (in range) on: runs of (bytes, allocated) covering at most
    /// `len` bytes and at least one, at most `max` runs. Unallocated bytes read as zeros.
    fn extents(&mut self, offset: u64, len: u64, max: usize) -> Result<Vec<(u32, bool)>, u32>;
    /// Timing emulation ([`ServerConfig::emulate`]): starts collecting the completion time
    /// of the device operations the calls that follow issue, up to
    /// [`timing_end`](Export::timing_end); they belong to a request whose header arrived at
    /// `arrival` (when the device gets it: the host's own time serving it is not the
    /// device's).
    fn timing_start(&mut self, _arrival: Option<Instant>) {}
    /// When (wall clock) the emulated device completes the operations issued since
    /// [`timing_start`](Export::timing_start); `None` without emulation or without one.
    fn timing_end(&mut self) -> Option<Instant> {
        None
    }
    /// A reply held for its request's completion went out `lag` after it; the device took
    /// `device` from the request's arrival (`arrival`) to its completion.
    fn timing_reply(&mut self, _arrival: Instant, _device: Duration, _lag: Duration) {}
}

/// Buffer memory shared by every connection: a request that needs a whole payload at once
/// waits until the total in use leaves room for it.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

/// Bytes of a [`Budget`] held; returned on drop.
#[derive(Debug)]
pub struct Held<'a> {
    budget: &'a Budget,
    bytes: usize,
}

impl Budget {
    /// A budget of `limit` bytes (at least one maximal payload).
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit: limit.max(MAX_PAYLOAD as usize),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Takes `bytes` (≤ the limit), waiting while others hold too much.
    pub fn take(&self, bytes: usize) -> Held<'_> {
        let bytes = bytes.min(self.limit);
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while *used + bytes > self.limit {
            used = self.freed.wait(used).unwrap_or_else(|p| p.into_inner());
        }
        *used += bytes;
        Held {
            budget: self,
            bytes,
        }
    }

    /// Bytes in use now.
    pub fn in_use(&self) -> usize {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|p| p.into_inner());
        *used -= self.bytes;
        self.budget.freed.notify_all();
    }
}

/// What the server offers.
#[derive(Clone)]
pub struct ServerConfig {
    /// Export size in bytes.
    pub size: u64,
    /// Preferred block size (the FTL page).
    pub preferred: u32,
    /// The export's name (the empty name selects it too).
    pub export_name: String,
    /// The TLS configuration, when the server has a certificate.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Refuse to negotiate an export before TLS is up.
    pub tls_required: bool,
    /// Bound on the whole handshake (options and TLS), and on each read during it.
    pub handshake_timeout: Duration,
    /// Longest a reply may wait for the client to take it before the connection is dropped.
    pub stall_timeout: Duration,
    /// Timing emulation: each reply is held until the export says its request completes
    /// ([`Export::timing_end`]), while the connection goes on serving the requests after it.
    pub emulate: bool,
}

/// Serves one connection: handshake (bounded by the configured timeout), then requests
/// until DISC or the client goes away. `with` runs an operation on the export under its
/// lock; `budget` bounds the whole-payload buffers of all connections.
pub fn serve_connection<F>(
    tcp: TcpStream,
    cfg: &ServerConfig,
    budget: &Budget,
    mut with: F,
) -> io::Result<()>
where
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    tcp.set_read_timeout(Some(cfg.handshake_timeout))?;
    tcp.set_write_timeout(Some(cfg.handshake_timeout))?;
    let deadline = std::time::Instant::now() + cfg.handshake_timeout;
    let plain = Conn::Plain(
        BufReader::with_capacity(64 << 10, tcp),
        conn::Queue::default(),
    );
    let (mut conn, st) = match handshake(plain, cfg, deadline)? {
        (c, Handshake::Transmit(st)) => (c, st),
        (_, Handshake::Done) => return Ok(()),
    };
    // Idle connections are legitimate once in transmission (a mounted disk); a client that
    // leaves a reply untaken for `stall_timeout` is not, and is dropped (freeing buffers).
    conn.tcp().set_read_timeout(None)?;
    conn.tcp().set_write_timeout(Some(cfg.stall_timeout))?;
    let mut piece = vec![0u8; CHUNK];
    let mut header = [0u8; 28];
    if !cfg.emulate {
        let result = transmit(
            &mut conn,
            cfg,
            &st,
            budget,
            &mut with,
            &mut piece,
            &mut header,
            None,
        );
        // Replies still queued (a disconnect, or a protocol error after requests that were
        // served) go out before the connection closes.
        let flushed = conn.flush_replies();
        return result.and(flushed);
    }
    // Timing emulation: every call on the export reports when the device completes what it
    // issued; a request's reply is held until the latest of its calls' completions.
    let timing = Timing::default();
    let mut timed = |op: &mut dyn FnMut(&mut dyn Export) -> Result<(), u32>| {
        with(&mut |e: &mut dyn Export| {
            e.timing_start(timing.arrival.get());
            let r = op(e);
            if let Some(t) = e.timing_end() {
                let done = &timing.done;
                done.set(Some(done.get().map_or(t, |d| d.max(t))));
            }
            r
        })
    };
    conn.set_hold(true);
    // A held reply is due to the microsecond: no timer slack on this thread's waits (the
    // kernel's default lets a 10 µs wait end up to 50 µs late).
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    let mut held = HeldReplies::default();
    let result = transmit(
        &mut conn,
        cfg,
        &st,
        budget,
        &mut timed,
        &mut piece,
        &mut header,
        Some((&timing, &mut held)),
    );
    // Held replies go out at their times before the connection closes (a disconnect, or a
    // protocol error after requests that were served).
    let last = conn.take_queued();
    let now = Instant::now();
    let arrival = timing.arrival.take().unwrap_or(now);
    held.hold(arrival, timing.done.take().unwrap_or(arrival), last);
    let released = held.release_all(&mut conn, &mut timed);
    let flushed = conn.flush_replies();
    result.and(released).and(flushed)
}

/// The transmission phase's request loop (replies corked: see [`Conn`]; with timing
/// emulation, held until their requests complete).
#[allow(clippy::too_many_arguments)]
fn transmit<F>(
    conn: &mut Conn,
    cfg: &ServerConfig,
    st: &handshake::Negotiated,
    budget: &Budget,
    with: &mut F,
    piece: &mut [u8],
    header: &mut [u8; 28],
    mut emulation: Emulation<'_>,
) -> io::Result<()>
where
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    let size = cfg.size;
    loop {
        match emulation.as_mut() {
            Some((timing, held)) => {
                // The previous request's reply, held until its completion. One that
                // issued no device operation completes on the device when it arrives:
                // the host's time serving it (a flush's sync of the image file, which
                // can take tens of milliseconds) is the reply's lag, not device time.
                let reply = conn.take_queued();
                let now = Instant::now();
                let arrival = timing.arrival.get().unwrap_or(now);
                held.hold(arrival, timing.done.take().unwrap_or(arrival), reply);
                held.wait_for_request(conn, with)?;
            }
            None => conn.flush_if_idle()?,
        }
        // The whole header in one read: under TLS each read is a pass through rustls's
        // buffers, not a copy out of ours.
        conn.read_exact(header)?;
        if let Some((timing, _)) = emulation.as_ref() {
            timing.arrival.set(Some(Instant::now()));
        }
        let be = |at: usize, n: usize| {
            header[at..at + n]
                .iter()
                .fold(0u64, |v, &b| v << 8 | b as u64)
        };
        if be(0, 4) != REQUEST_MAGIC as u64 {
            return Err(protocol("bad request magic"));
        }
        let flags = be(4, 2) as u16;
        let kind = be(6, 2) as u16;
        let cookie = be(8, 8);
        let offset = be(16, 8);
        let len = be(24, 4) as u32;
        let fua = flags & CMD_FLAG_FUA != 0;
        let in_range = offset
            .checked_add(len as u64)
            .is_some_and(|end| end <= size);
        // The flags each command takes; anything else (or never advertised) is EINVAL.
        let allowed = match kind {
            CMD_READ if st.structured => CMD_FLAG_DF,
            CMD_WRITE | CMD_TRIM => CMD_FLAG_FUA,
            CMD_WRITE_ZEROES => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
            CMD_BLOCK_STATUS => CMD_FLAG_REQ_ONE,
            _ => 0,
        };
        let flags_ok = flags & !allowed == 0;
        let no_hole = flags & CMD_FLAG_NO_HOLE != 0;
        let r = Req {
            cookie,
            offset,
            len,
            flags,
            fua,
            in_range,
            flags_ok,
        };
        let observed = match kind {
            CMD_READ => Some(Command::Read),
            CMD_WRITE => Some(Command::Write { fua }),
            CMD_FLUSH => Some(Command::Flush),
            CMD_TRIM => Some(Command::Trim { fua }),
            CMD_WRITE_ZEROES => Some(Command::WriteZeroes { fua, no_hole }),
            _ => None,
        };
        if let Some(cmd) = observed {
            // A discard (TRIM, WRITE_ZEROES) carries no payload: any in-range length is
            // served, so any is recorded (mkfs discards the whole export in one request).
            let well_formed = flags_ok
                && match cmd {
                    Command::Flush => true,
                    Command::Trim { .. } | Command::WriteZeroes { .. } => in_range,
                    Command::Read | Command::Write { .. } => in_range && len <= MAX_PAYLOAD,
                };
            if well_formed {
                let _ = with(&mut |e| {
                    e.observe(cmd, offset, len as u64);
                    Ok(())
                });
            }
        }
        match kind {
            CMD_READ => serve_read(conn, st, budget, with, piece, &r)?,
            CMD_WRITE => serve_write(conn, cfg, with, piece, &r)?,
            CMD_DISC => {
                let _ = with(&mut |e| e.flush());
                return Ok(());
            }
            CMD_FLUSH => {
                let e = if flags_ok {
                    with(&mut |e| e.flush()).err().unwrap_or(0)
                } else {
                    EINVAL
                };
                simple_reply(conn, cookie, e)?;
            }
            CMD_TRIM | CMD_WRITE_ZEROES => {
                let e = if !in_range || !flags_ok {
                    EINVAL
                } else if kind == CMD_TRIM {
                    with(&mut |e| e.trim(offset, len as u64, fua))
                        .err()
                        .unwrap_or(0)
                } else {
                    with(&mut |e| e.write_zeroes(offset, len as u64, fua, no_hole))
                        .err()
                        .unwrap_or(0)
                };
                simple_reply(conn, cookie, e)?;
            }
            CMD_BLOCK_STATUS if st.structured => serve_block_status(conn, st, with, &r)?,
            _ if st.structured => error_chunk(conn, cookie, EINVAL)?,
            _ => simple_reply(conn, cookie, EINVAL)?,
        }
    }
}

/// A transmission request's header, parsed and checked against the export.
#[derive(Clone, Copy)]
struct Req {
    cookie: u64,
    offset: u64,
    len: u32,
    flags: u16,
    fua: bool,
    /// `offset + len` lies within the export.
    in_range: bool,
    /// Every flag is one this command takes.
    flags_ok: bool,
}

/// NBD_CMD_READ: the data as a simple reply or structured chunks (one per piece, or the
/// whole payload at once when the client asked not to fragment it).
fn serve_read<F>(
    conn: &mut Conn,
    st: &handshake::Negotiated,
    budget: &Budget,
    with: &mut F,
    piece: &mut [u8],
    r: &Req,
) -> io::Result<()>
where
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    let Req {
        cookie,
        offset,
        len,
        flags,
        in_range,
        flags_ok,
        ..
    } = *r;
    let err = if len > MAX_PAYLOAD || !in_range || !flags_ok {
        Some(EINVAL)
    } else {
        None
    };
    match (st.structured, err) {
        (false, Some(e)) => simple_reply(conn, cookie, e)?,
        (true, Some(e)) => error_chunk(conn, cookie, e)?,
        (structured, None) if !structured || flags & CMD_FLAG_DF != 0 => {
            // The whole payload at once: up to a piece in the connection's own
            // buffer, beyond from the shared budget (freed when sent).
            let n = len as usize;
            let (_held, mut big);
            let buf: &mut [u8] = if n <= CHUNK {
                &mut piece[..n]
            } else {
                _held = budget.take(n);
                big = vec![0u8; n];
                &mut big
            };
            let done = structured.then_some(REPLY_FLAG_DONE);
            if let Err(e) = data_reply(conn, cookie, done, offset, buf, with)? {
                match structured {
                    false => simple_reply(conn, cookie, e)?,
                    true => error_chunk(conn, cookie, e)?,
                }
            }
        }
        (_, None) => {
            // Structured: one chunk per piece, the last one marked done (an
            // error ends the reply with an error chunk instead).
            let mut done = 0usize;
            while done < len as usize {
                let n = (len as usize - done).min(CHUNK);
                let at = offset + done as u64;
                let last = if done + n == len as usize {
                    REPLY_FLAG_DONE
                } else {
                    0
                };
                let buf = &mut piece[..n];
                if let Err(e) = data_reply(conn, cookie, Some(last), at, buf, with)? {
                    error_chunk(conn, cookie, e)?;
                    break;
                }
                done += n;
            }
            if len == 0 {
                chunk(conn, cookie, REPLY_FLAG_DONE, REPLY_TYPE_NONE, &[])?;
            }
        }
    }
    Ok(())
}

/// NBD_CMD_WRITE: the payload streamed to the volume a piece at a time (each written
/// before the next is read), then one reply.
fn serve_write<F>(
    conn: &mut Conn,
    cfg: &ServerConfig,
    with: &mut F,
    piece: &mut [u8],
    r: &Req,
) -> io::Result<()>
where
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    let Req {
        cookie,
        offset,
        len,
        fua,
        in_range,
        flags_ok,
        ..
    } = *r;
    if len > MAX_PAYLOAD {
        // The payload cannot be skipped cheaply: end the connection.
        return Err(protocol("write payload too large"));
    }
    if !in_range || !flags_ok {
        drain(conn, len as usize, piece)?;
        simple_reply(conn, cookie, EINVAL)?;
        return Ok(());
    }
    // Streamed: each piece is written before the next is read. Pieces end on
    // page boundaries so only the request's own ends are read-modify-write.
    let page = cfg.preferred.max(1) as u64;
    let step = (CHUNK as u64 / page).max(1) * page;
    let mut done = 0u64;
    let mut failed = None;
    while done < len as u64 {
        let at = offset + done;
        let to_boundary = step - at % step;
        let n = (len as u64 - done).min(to_boundary).min(CHUNK as u64) as usize;
        conn.read_exact(&mut piece[..n])?;
        if failed.is_none() {
            let data = &piece[..n];
            failed = with(&mut |x| x.write_at(at, data, false)).err();
        }
        done += n as u64;
    }
    if failed.is_none() && fua {
        failed = with(&mut |x| x.flush()).err();
    }
    simple_reply(conn, cookie, failed.unwrap_or(0))?;
    Ok(())
}

/// NBD_CMD_BLOCK_STATUS (structured replies, allocation context): the extents as one
/// chunk.
fn serve_block_status<F>(
    conn: &mut Conn,
    st: &handshake::Negotiated,
    with: &mut F,
    r: &Req,
) -> io::Result<()>
where
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    let Req {
        cookie,
        offset,
        len,
        flags,
        in_range,
        flags_ok,
        ..
    } = *r;
    if !st.allocation || !flags_ok || !in_range || len == 0 {
        error_chunk(conn, cookie, EINVAL)?;
        return Ok(());
    }
    let max = if flags & CMD_FLAG_REQ_ONE != 0 {
        1
    } else {
        MAX_EXTENTS
    };
    let mut runs = Vec::new();
    match with(&mut |e| {
        runs = e.extents(offset, len as u64, max)?;
        Ok(())
    }) {
        Ok(()) => {
            let mut m = Vec::with_capacity(4 + 8 * runs.len());
            m.extend_from_slice(&BASE_ALLOCATION_ID.to_be_bytes());
            for (n, mapped) in runs {
                m.extend_from_slice(&n.to_be_bytes());
                let state = if mapped { 0 } else { STATE_HOLE | STATE_ZERO };
                m.extend_from_slice(&state.to_be_bytes());
            }
            chunk(
                conn,
                cookie,
                REPLY_FLAG_DONE,
                REPLY_TYPE_BLOCK_STATUS,
                &[&m],
            )?;
        }
        Err(e) => error_chunk(conn, cookie, e)?,
    }
    Ok(())
}

/// Sends the data of a READ: `buf.len()` bytes at `at`, read by the volume, as a simple
/// reply (`structured` = `None`) or as one `OFFSET_DATA` chunk with the given flags. A
/// payload up to [`QUEUED_PAYLOAD`](conn::QUEUED_PAYLOAD) is read straight into the reply
/// queue (it then batches with other replies); a larger one is read into `buf` and sent
/// from there. If the read fails nothing is sent, and its error is returned for the caller's
/// error reply.
fn data_reply<F>(
    conn: &mut Conn,
    cookie: u64,
    structured: Option<u16>,
    at: u64,
    buf: &mut [u8],
    with: &mut F,
) -> io::Result<Result<(), u32>>
where
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    let n = buf.len();
    let mut read = |b: &mut [u8]| with(&mut |e| e.read_at(at, b));
    let mut h = [0u8; 28];
    let head: &[u8] = match structured {
        None => {
            h[..16].copy_from_slice(&simple_header(cookie, 0));
            &h[..16]
        }
        Some(flags) => {
            h[..20].copy_from_slice(&chunk_header(cookie, flags, REPLY_TYPE_OFFSET_DATA, n + 8));
            h[20..].copy_from_slice(&at.to_be_bytes());
            &h
        }
    };
    if n <= conn::QUEUED_PAYLOAD {
        return conn.send_filled(head, n, read);
    }
    if let Err(e) = read(buf) {
        return Ok(Err(e));
    }
    conn.send(&[head, buf])?;
    Ok(Ok(()))
}
