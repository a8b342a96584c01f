//! The NBD protocol (newstyle, fixed handshake) over a byte-addressed volume.
//!
//! Handshake: `NBD_OPT_EXPORT_NAME`, `NBD_OPT_GO` / `NBD_OPT_INFO` (export size and flags,
//! block-size constraints: minimum 512, preferred = the FTL page, maximum 32 MiB),
//! `NBD_OPT_LIST`, `NBD_OPT_ABORT`; anything else gets `NBD_REP_ERR_UNSUP`. Transmission:
//! READ, WRITE (with FUA), FLUSH, TRIM, WRITE_ZEROES, DISC with simple replies; other
//! commands get `EINVAL`. A malformed request (bad magic, an oversized payload) ends the
//! connection; out-of-range requests get `EINVAL`. Nothing a client sends can make the
//! server panic or leave the volume inconsistent: every request runs to completion under
//! the volume lock before the next.

use std::io::{self, Read, Write};

/// Handshake magics.
const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
const FLAG_NO_ZEROES: u16 = 1 << 1;
const C_FLAG_FIXED_NEWSTYLE: u32 = 1 << 0;
const C_FLAG_NO_ZEROES: u32 = 1 << 1;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
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
const T_CAN_MULTI_CONN: u16 = 1 << 8;

const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;
const CMD_TRIM: u16 = 4;
const CMD_WRITE_ZEROES: u16 = 6;
const CMD_FLAG_FUA: u16 = 1 << 0;

/// NBD error numbers.
pub const EIO: u32 = 5;
/// Out of space.
pub const ENOSPC: u32 = 28;
/// Invalid request.
pub const EINVAL: u32 = 22;
/// Server shutting down.
pub const ESHUTDOWN: u32 = 108;

/// Largest option payload and request accepted.
const MAX_OPTION: u32 = 64 * 1024;
/// Largest read or write payload.
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Smallest block the volume serves (smaller writes are read-modify-write).
pub const MIN_BLOCK: u32 = 512;

/// What the server needs from the volume it exports. Errors are NBD error numbers.
pub trait Export {
    /// Reads `buf.len()` bytes at `offset` (in range).
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), u32>;
    /// Writes `data` at `offset` (in range); with `fua`, durable before it returns.
    fn write_at(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<(), u32>;
    /// Discards a range (reads as zeros afterwards where whole pages are covered).
    fn trim(&mut self, offset: u64, len: u64, fua: bool) -> Result<(), u32>;
    /// Writes zeros over a range.
    fn write_zeroes(&mut self, offset: u64, len: u64, fua: bool) -> Result<(), u32>;
    /// Makes everything written durable.
    fn flush(&mut self) -> Result<(), u32>;
}

fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn protocol(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn opt_reply(w: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    w.write_all(&m)
}

const TRANSMISSION_FLAGS: u16 =
    T_HAS_FLAGS | T_SEND_FLUSH | T_SEND_FUA | T_SEND_TRIM | T_SEND_WRITE_ZEROES | T_CAN_MULTI_CONN;

/// Runs the handshake; `Ok(true)` when the client entered transmission.
fn handshake<S: Read + Write>(s: &mut S, size: u64, preferred: u32) -> io::Result<bool> {
    let mut hello = Vec::new();
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    let cflags = read_u32(s)?;
    if cflags & !(C_FLAG_FIXED_NEWSTYLE | C_FLAG_NO_ZEROES) != 0 {
        return Err(protocol("unknown client flags"));
    }
    let no_zeroes = cflags & C_FLAG_NO_ZEROES != 0;
    loop {
        if read_u64(s)? != IHAVEOPT {
            return Err(protocol("bad option magic"));
        }
        let opt = read_u32(s)?;
        let len = read_u32(s)?;
        if len > MAX_OPTION {
            // Drain what we can afford to, then refuse.
            return Err(protocol("option too large"));
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                let mut m = Vec::new();
                m.extend_from_slice(&size.to_be_bytes());
                m.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                if !no_zeroes {
                    m.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&m)?;
                return Ok(true);
            }
            OPT_ABORT => {
                opt_reply(s, opt, REP_ACK, &[])?;
                return Ok(false);
            }
            OPT_LIST => {
                if len != 0 {
                    opt_reply(s, opt, REP_ERR_INVALID, b"LIST takes no data")?;
                    continue;
                }
                opt_reply(s, opt, REP_SERVER, &0u32.to_be_bytes())?;
                opt_reply(s, opt, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                // name length, name, number of requests, requests.
                let valid = data.len() >= 6 && {
                    let n = u32::from_be_bytes(data[..4].try_into().expect("4 bytes")) as usize;
                    data.len() >= 4 + n + 2 && {
                        let k = u16::from_be_bytes(data[4 + n..6 + n].try_into().expect("2 bytes"))
                            as usize;
                        data.len() == 6 + n + 2 * k
                    }
                };
                if !valid {
                    opt_reply(s, opt, REP_ERR_INVALID, b"malformed INFO/GO request")?;
                    continue;
                }
                let mut export = Vec::new();
                export.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                export.extend_from_slice(&size.to_be_bytes());
                export.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                opt_reply(s, opt, REP_INFO, &export)?;
                let mut bs = Vec::new();
                bs.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                bs.extend_from_slice(&MIN_BLOCK.to_be_bytes());
                bs.extend_from_slice(&preferred.to_be_bytes());
                bs.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
                opt_reply(s, opt, REP_INFO, &bs)?;
                let mut name = Vec::new();
                name.extend_from_slice(&INFO_NAME.to_be_bytes());
                name.extend_from_slice(b"nandlab");
                opt_reply(s, opt, REP_INFO, &name)?;
                opt_reply(s, opt, REP_ACK, &[])?;
                if opt == OPT_GO {
                    return Ok(true);
                }
            }
            _ => {
                let kind = if len > MAX_OPTION {
                    REP_ERR_TOO_BIG
                } else {
                    REP_ERR_UNSUP
                };
                opt_reply(s, opt, kind, &[])?;
            }
        }
    }
}

fn reply<W: Write>(w: &mut W, cookie: u64, error: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(16 + data.len());
    m.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&error.to_be_bytes());
    m.extend_from_slice(&cookie.to_be_bytes());
    m.extend_from_slice(data);
    w.write_all(&m)
}

/// Serves one connection: handshake, then requests until DISC or the client goes away.
/// `with` runs an operation on the export under its lock.
pub fn serve_connection<S, F>(s: &mut S, size: u64, preferred: u32, mut with: F) -> io::Result<()>
where
    S: Read + Write,
    F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
{
    if !handshake(s, size, preferred)? {
        return Ok(());
    }
    let mut buf: Vec<u8> = Vec::new();
    loop {
        if read_u32(s)? != REQUEST_MAGIC {
            return Err(protocol("bad request magic"));
        }
        let flags = read_u16(s)?;
        let kind = read_u16(s)?;
        let cookie = read_u64(s)?;
        let offset = read_u64(s)?;
        let len = read_u32(s)?;
        let fua = flags & CMD_FLAG_FUA != 0;
        let in_range = offset
            .checked_add(len as u64)
            .is_some_and(|end| end <= size);
        match kind {
            CMD_READ => {
                if len > MAX_PAYLOAD || !in_range {
                    reply(s, cookie, EINVAL, &[])?;
                    continue;
                }
                buf.resize(len as usize, 0);
                let r = with(&mut |e| e.read_at(offset, &mut buf));
                match r {
                    Ok(()) => reply(s, cookie, 0, &buf)?,
                    Err(e) => reply(s, cookie, e, &[])?,
                }
            }
            CMD_WRITE => {
                if len > MAX_PAYLOAD {
                    // The payload cannot be skipped safely: end the connection.
                    return Err(protocol("write payload too large"));
                }
                buf.resize(len as usize, 0);
                s.read_exact(&mut buf)?;
                let e = if in_range {
                    with(&mut |e| e.write_at(offset, &buf, fua))
                        .err()
                        .unwrap_or(0)
                } else {
                    EINVAL
                };
                reply(s, cookie, e, &[])?;
            }
            CMD_DISC => {
                let _ = with(&mut |e| e.flush());
                return Ok(());
            }
            CMD_FLUSH => {
                let e = with(&mut |e| e.flush()).err().unwrap_or(0);
                reply(s, cookie, e, &[])?;
            }
            CMD_TRIM | CMD_WRITE_ZEROES => {
                let e = if !in_range {
                    EINVAL
                } else if kind == CMD_TRIM {
                    with(&mut |e| e.trim(offset, len as u64, fua))
                        .err()
                        .unwrap_or(0)
                } else {
                    with(&mut |e| e.write_zeroes(offset, len as u64, fua))
                        .err()
                        .unwrap_or(0)
                };
                reply(s, cookie, e, &[])?;
            }
            _ => reply(s, cookie, EINVAL, &[])?,
        }
    }
}
