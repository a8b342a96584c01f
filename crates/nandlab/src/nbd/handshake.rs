//! The option haggling (fixed newstyle): export names, STARTTLS, structured replies and
//! meta contexts, INFO/GO.

use super::conn::{protocol, read_u32, read_u64, BufSock, Conn};
use super::*;
use std::io::{self, Read, Write};
use std::sync::Arc;

/// One option reply: magic, option, reply type, length, data.
fn opt_reply(w: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    w.write_all(&m)?;
    w.flush()
}

const TRANSMISSION_FLAGS: u16 =
    T_HAS_FLAGS | T_SEND_FLUSH | T_SEND_FUA | T_SEND_TRIM | T_SEND_WRITE_ZEROES | T_CAN_MULTI_CONN;

/// What a connection negotiated.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Negotiated {
    /// STARTTLS done.
    pub(super) tls: bool,
    /// Structured replies negotiated.
    pub(super) structured: bool,
    /// `base:allocation` selected for BLOCK_STATUS.
    pub(super) allocation: bool,
}

impl Negotiated {
    fn transmission_flags(&self) -> u16 {
        TRANSMISSION_FLAGS | if self.structured { T_SEND_DF } else { 0 }
    }
}

/// A length-prefixed string (u32 length) at the start of `d`, and the rest.
fn take_str(d: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = u32::from_be_bytes(d.get(..4)?.try_into().ok()?) as usize;
    let s = d.get(4..4usize.checked_add(n)?)?;
    Some((s, &d[4 + n..]))
}

/// How the handshake ended.
pub(super) enum Handshake {
    /// Enter transmission with these settings.
    Transmit(Negotiated),
    /// The client aborted or asked for another export by `NBD_OPT_EXPORT_NAME`.
    Done,
}

/// Runs the option haggling until `deadline`; STARTTLS replaces the connection by its TLS
/// form, which is handed back.
pub(super) fn handshake(
    mut conn: Conn,
    cfg: &ServerConfig,
    deadline: std::time::Instant,
) -> io::Result<(Conn, Handshake)> {
    let mut hello = Vec::new();
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    conn.write_all(&hello)?;
    conn.flush()?;
    let cflags = read_u32(&mut conn)?;
    if cflags & !(C_FLAG_FIXED_NEWSTYLE | C_FLAG_NO_ZEROES) != 0 {
        return Err(protocol("unknown client flags"));
    }
    let no_zeroes = cflags & C_FLAG_NO_ZEROES != 0;
    let mut st = Negotiated::default();
    let ours = |name: &[u8]| name.is_empty() || name == cfg.export_name.as_bytes();
    loop {
        // The whole handshake is bounded, not just each read (a client trickling options).
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "handshake took too long",
            ));
        }
        conn.tcp().set_read_timeout(Some(left))?;
        if read_u64(&mut conn)? != IHAVEOPT {
            return Err(protocol("bad option magic"));
        }
        let opt = read_u32(&mut conn)?;
        let len = read_u32(&mut conn)?;
        if len > MAX_OPTION {
            // The payload is not read: refuse, then close.
            opt_reply(&mut conn, opt, REP_ERR_TOO_BIG, b"option data over 64 KiB")?;
            return Err(protocol("option too large"));
        }
        let mut data = vec![0u8; len as usize];
        conn.read_exact(&mut data)?;
        if cfg.tls_required && !st.tls && opt != OPT_STARTTLS && opt != OPT_ABORT {
            if opt == OPT_EXPORT_NAME {
                return Err(protocol(
                    "TLS required: NBD_OPT_EXPORT_NAME before STARTTLS",
                ));
            }
            opt_reply(
                &mut conn,
                opt,
                REP_ERR_TLS_REQD,
                b"TLS is required: STARTTLS first",
            )?;
            continue;
        }
        match opt {
            OPT_STARTTLS => {
                if len != 0 || st.tls {
                    opt_reply(
                        &mut conn,
                        opt,
                        REP_ERR_INVALID,
                        b"STARTTLS once, without data",
                    )?;
                    continue;
                }
                let Some(tls) = &cfg.tls else {
                    opt_reply(
                        &mut conn,
                        opt,
                        REP_ERR_POLICY,
                        b"this server has no TLS certificate",
                    )?;
                    continue;
                };
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
                let Conn::Plain(plain, _) = conn else {
                    unreachable!("TLS is not up yet");
                };
                // A client waits for the ACK before its TLS hello: bytes already buffered
                // would be plaintext smuggled past the upgrade.
                if !plain.buffer().is_empty() {
                    return Err(protocol("data after STARTTLS before the TLS handshake"));
                }
                let server = rustls::ServerConnection::new(Arc::clone(tls))
                    .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
                let mut t = rustls::StreamOwned::new(server, BufSock(plain));
                while t.conn.is_handshaking() {
                    t.conn.complete_io(&mut t.sock)?;
                }
                conn = Conn::Tls(Box::new(t), Vec::new());
                // Everything negotiated before TLS is forgotten (the spec's rule).
                st = Negotiated {
                    tls: true,
                    ..Negotiated::default()
                };
            }
            OPT_EXPORT_NAME => {
                if !ours(&data) {
                    // No error reply exists for this option: close.
                    return Ok((conn, Handshake::Done));
                }
                let mut m = Vec::new();
                m.extend_from_slice(&cfg.size.to_be_bytes());
                m.extend_from_slice(&st.transmission_flags().to_be_bytes());
                if !no_zeroes {
                    m.extend_from_slice(&[0u8; 124]);
                }
                conn.write_all(&m)?;
                conn.flush()?;
                return Ok((conn, Handshake::Transmit(st)));
            }
            OPT_ABORT => {
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
                return Ok((conn, Handshake::Done));
            }
            OPT_LIST => {
                if len != 0 {
                    opt_reply(&mut conn, opt, REP_ERR_INVALID, b"LIST takes no data")?;
                    continue;
                }
                let name = cfg.export_name.as_bytes();
                let mut m = (name.len() as u32).to_be_bytes().to_vec();
                m.extend_from_slice(name);
                opt_reply(&mut conn, opt, REP_SERVER, &m)?;
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
            }
            OPT_STRUCTURED_REPLY => {
                if len != 0 {
                    opt_reply(
                        &mut conn,
                        opt,
                        REP_ERR_INVALID,
                        b"STRUCTURED_REPLY takes no data",
                    )?;
                    continue;
                }
                st.structured = true;
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                let set = opt == OPT_SET_META_CONTEXT;
                let parsed = take_str(&data).and_then(|(name, rest)| {
                    let n = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
                    let mut rest = &rest[4..];
                    let mut queries = Vec::new();
                    for _ in 0..n {
                        let (q, r) = take_str(rest)?;
                        queries.push(q);
                        rest = r;
                    }
                    rest.is_empty().then_some((name, queries))
                });
                let Some((name, queries)) = parsed else {
                    opt_reply(
                        &mut conn,
                        opt,
                        REP_ERR_INVALID,
                        b"malformed meta context request",
                    )?;
                    continue;
                };
                if !st.structured {
                    opt_reply(
                        &mut conn,
                        opt,
                        REP_ERR_INVALID,
                        b"negotiate structured replies first",
                    )?;
                    continue;
                }
                if !ours(name) {
                    opt_reply(&mut conn, opt, REP_ERR_UNKNOWN, b"no such export")?;
                    continue;
                }
                // LIST with no query lists everything; "base:" lists the base namespace.
                let matches = if queries.is_empty() {
                    !set
                } else {
                    queries.iter().any(|q| {
                        *q == BASE_ALLOCATION.as_bytes() || (!set && *q == b"base:".as_slice())
                    })
                };
                if set {
                    st.allocation = matches;
                }
                if matches {
                    let mut m = BASE_ALLOCATION_ID.to_be_bytes().to_vec();
                    m.extend_from_slice(BASE_ALLOCATION.as_bytes());
                    opt_reply(&mut conn, opt, REP_META_CONTEXT, &m)?;
                }
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                // name length, name, number of requests, requests.
                let valid = take_str(&data).and_then(|(name, rest)| {
                    let k = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize;
                    (rest.len() == 2 + 2 * k).then_some(name)
                });
                let Some(name) = valid else {
                    opt_reply(
                        &mut conn,
                        opt,
                        REP_ERR_INVALID,
                        b"malformed INFO/GO request",
                    )?;
                    continue;
                };
                if !ours(name) {
                    opt_reply(&mut conn, opt, REP_ERR_UNKNOWN, b"no such export")?;
                    continue;
                }
                let mut export = INFO_EXPORT.to_be_bytes().to_vec();
                export.extend_from_slice(&cfg.size.to_be_bytes());
                export.extend_from_slice(&st.transmission_flags().to_be_bytes());
                opt_reply(&mut conn, opt, REP_INFO, &export)?;
                let mut bs = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
                bs.extend_from_slice(&1u32.to_be_bytes());
                bs.extend_from_slice(&cfg.preferred.to_be_bytes());
                bs.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
                opt_reply(&mut conn, opt, REP_INFO, &bs)?;
                let mut n = INFO_NAME.to_be_bytes().to_vec();
                n.extend_from_slice(cfg.export_name.as_bytes());
                opt_reply(&mut conn, opt, REP_INFO, &n)?;
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
                if opt == OPT_GO {
                    return Ok((conn, Handshake::Transmit(st)));
                }
            }
            _ => opt_reply(&mut conn, opt, REP_ERR_UNSUP, &[])?,
        }
    }
}
