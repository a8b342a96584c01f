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

/// What an option's handler leaves the haggling to do.
enum Next {
    /// Read the next option.
    Options,
    /// The haggling is over.
    End(Handshake),
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
    loop {
        let (opt, data) = read_option(&mut conn, deadline)?;
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
        let next = match opt {
            OPT_STARTTLS => {
                let plain;
                (conn, plain) = starttls(conn, cfg, st.tls || !data.is_empty())?;
                if !plain {
                    // Everything negotiated before TLS is forgotten (the spec's rule).
                    st = Negotiated {
                        tls: true,
                        ..Negotiated::default()
                    };
                }
                Next::Options
            }
            OPT_EXPORT_NAME => {
                if !cfg.ours(&data) {
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
                Next::End(Handshake::Transmit(st))
            }
            OPT_ABORT => {
                opt_reply(&mut conn, opt, REP_ACK, &[])?;
                Next::End(Handshake::Done)
            }
            OPT_LIST => list(&mut conn, cfg, &data)?,
            OPT_STRUCTURED_REPLY => {
                if data.is_empty() {
                    st.structured = true;
                    opt_reply(&mut conn, opt, REP_ACK, &[])?;
                } else {
                    let why = b"STRUCTURED_REPLY takes no data";
                    opt_reply(&mut conn, opt, REP_ERR_INVALID, why)?;
                }
                Next::Options
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                meta_context(&mut conn, cfg, opt, &data, &mut st)?
            }
            OPT_INFO | OPT_GO => info_go(&mut conn, cfg, opt, &data, st)?,
            _ => {
                opt_reply(&mut conn, opt, REP_ERR_UNSUP, &[])?;
                Next::Options
            }
        };
        if let Next::End(h) = next {
            return Ok((conn, h));
        }
    }
}

impl ServerConfig {
    /// Whether an option names this server's export (the empty name is the default one).
    fn ours(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.export_name.as_bytes()
    }
}

/// The next option's code and data, with what is left of the handshake's time (the whole
/// handshake is bounded, not just each read: a client trickling options).
fn read_option(conn: &mut Conn, deadline: std::time::Instant) -> io::Result<(u32, Vec<u8>)> {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "handshake took too long",
        ));
    }
    conn.tcp().set_read_timeout(Some(left))?;
    if read_u64(conn)? != IHAVEOPT {
        return Err(protocol("bad option magic"));
    }
    let opt = read_u32(conn)?;
    let len = read_u32(conn)?;
    if len > MAX_OPTION {
        // The payload is not read: refuse, then close.
        opt_reply(conn, opt, REP_ERR_TOO_BIG, b"option data over 64 KiB")?;
        return Err(protocol("option too large"));
    }
    let mut data = vec![0u8; len as usize];
    conn.read_exact(&mut data)?;
    Ok((opt, data))
}

/// NBD_OPT_STARTTLS: the connection upgraded to TLS (`false`), or left plain after an
/// error reply (`true`): `refused` (a second STARTTLS, or one with data), or no
/// certificate.
fn starttls(mut conn: Conn, cfg: &ServerConfig, refused: bool) -> io::Result<(Conn, bool)> {
    let opt = OPT_STARTTLS;
    if refused {
        opt_reply(
            &mut conn,
            opt,
            REP_ERR_INVALID,
            b"STARTTLS once, without data",
        )?;
        return Ok((conn, true));
    }
    let Some(tls) = &cfg.tls else {
        let why = b"this server has no TLS certificate";
        opt_reply(&mut conn, opt, REP_ERR_POLICY, why)?;
        return Ok((conn, true));
    };
    opt_reply(&mut conn, opt, REP_ACK, &[])?;
    let Conn::Plain(plain, _) = conn else {
        unreachable!("TLS is not up yet");
    };
    // A client waits for the ACK before its TLS hello: bytes already buffered would be
    // plaintext smuggled past the upgrade.
    if !plain.buffer().is_empty() {
        return Err(protocol("data after STARTTLS before the TLS handshake"));
    }
    let server = rustls::ServerConnection::new(Arc::clone(tls))
        .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
    let mut t = rustls::StreamOwned::new(server, BufSock(plain));
    while t.conn.is_handshaking() {
        t.conn.complete_io(&mut t.sock)?;
    }
    Ok((Conn::Tls(Box::new(t), conn::Queue::default()), false))
}

/// NBD_OPT_LIST: this server's one export.
fn list(conn: &mut Conn, cfg: &ServerConfig, data: &[u8]) -> io::Result<Next> {
    let opt = OPT_LIST;
    if !data.is_empty() {
        opt_reply(conn, opt, REP_ERR_INVALID, b"LIST takes no data")?;
        return Ok(Next::Options);
    }
    let name = cfg.export_name.as_bytes();
    let mut m = (name.len() as u32).to_be_bytes().to_vec();
    m.extend_from_slice(name);
    opt_reply(conn, opt, REP_SERVER, &m)?;
    opt_reply(conn, opt, REP_ACK, &[])?;
    Ok(Next::Options)
}

/// NBD_OPT_LIST_META_CONTEXT / NBD_OPT_SET_META_CONTEXT: `base:allocation` is the one
/// context; SET selects it for BLOCK_STATUS.
fn meta_context(
    conn: &mut Conn,
    cfg: &ServerConfig,
    opt: u32,
    data: &[u8],
    st: &mut Negotiated,
) -> io::Result<Next> {
    let set = opt == OPT_SET_META_CONTEXT;
    let parsed = take_str(data).and_then(|(name, rest)| {
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
            conn,
            opt,
            REP_ERR_INVALID,
            b"malformed meta context request",
        )?;
        return Ok(Next::Options);
    };
    if !st.structured {
        let why = b"negotiate structured replies first";
        opt_reply(conn, opt, REP_ERR_INVALID, why)?;
        return Ok(Next::Options);
    }
    if !cfg.ours(name) {
        opt_reply(conn, opt, REP_ERR_UNKNOWN, b"no such export")?;
        return Ok(Next::Options);
    }
    // LIST with no query lists everything; "base:" lists the base namespace.
    let matches = if queries.is_empty() {
        !set
    } else {
        queries
            .iter()
            .any(|q| *q == BASE_ALLOCATION.as_bytes() || (!set && *q == b"base:".as_slice()))
    };
    if set {
        st.allocation = matches;
    }
    if matches {
        let mut m = BASE_ALLOCATION_ID.to_be_bytes().to_vec();
        m.extend_from_slice(BASE_ALLOCATION.as_bytes());
        opt_reply(conn, opt, REP_META_CONTEXT, &m)?;
    }
    opt_reply(conn, opt, REP_ACK, &[])?;
    Ok(Next::Options)
}

/// NBD_OPT_INFO / NBD_OPT_GO: the export's size and flags, block sizes and name; GO then
/// enters transmission.
fn info_go(
    conn: &mut Conn,
    cfg: &ServerConfig,
    opt: u32,
    data: &[u8],
    st: Negotiated,
) -> io::Result<Next> {
    // name length, name, number of requests, requests.
    let valid = take_str(data).and_then(|(name, rest)| {
        let k = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize;
        (rest.len() == 2 + 2 * k).then_some(name)
    });
    let Some(name) = valid else {
        opt_reply(conn, opt, REP_ERR_INVALID, b"malformed INFO/GO request")?;
        return Ok(Next::Options);
    };
    if !cfg.ours(name) {
        opt_reply(conn, opt, REP_ERR_UNKNOWN, b"no such export")?;
        return Ok(Next::Options);
    }
    let mut export = INFO_EXPORT.to_be_bytes().to_vec();
    export.extend_from_slice(&cfg.size.to_be_bytes());
    export.extend_from_slice(&st.transmission_flags().to_be_bytes());
    opt_reply(conn, opt, REP_INFO, &export)?;
    let mut bs = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    bs.extend_from_slice(&1u32.to_be_bytes());
    bs.extend_from_slice(&cfg.preferred.to_be_bytes());
    bs.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
    opt_reply(conn, opt, REP_INFO, &bs)?;
    let mut n = INFO_NAME.to_be_bytes().to_vec();
    n.extend_from_slice(cfg.export_name.as_bytes());
    opt_reply(conn, opt, REP_INFO, &n)?;
    opt_reply(conn, opt, REP_ACK, &[])?;
    Ok(if opt == OPT_GO {
        Next::End(Handshake::Transmit(st))
    } else {
        Next::Options
    })
}
