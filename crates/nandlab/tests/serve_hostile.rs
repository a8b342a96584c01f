//! `nandlab serve` under hostile or careless clients, from the raw protocol client: protocol
//! conformance (export names, oversized options, flags), structured replies and
//! `base:allocation` block status, connection and handshake limits, and bounded memory with
//! stalled clients.

mod common;

use common::{Client, Server, ACK};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;
const REP_ERR_TOO_BIG: u32 = (1 << 31) + 9;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_SERVER: u32 = 2;
const REP_META_CONTEXT: u32 = 4;
const EINVAL: u32 = 22;

/// A closed connection: a read returns end of file (or an error).
fn closed(c: &mut Client) -> bool {
    c.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut one = [0u8; 1];
    matches!(c.s.read(&mut one), Ok(0) | Err(_))
}

/// A meta-context option payload: export name, then the queries.
fn meta(name: &str, queries: &[&str]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
    for q in queries {
        d.extend_from_slice(&(q.len() as u32).to_be_bytes());
        d.extend_from_slice(q.as_bytes());
    }
    d
}

#[test]
fn export_names_option_limits_and_command_flags() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("p.img");
    let p = common::free_port();
    let _srv = Server::start_with(&image, true, p, &["--export-name", "disk0"]);
    // LIST names the export; INFO and GO agree.
    let mut c = Client::raw(p);
    let list = c.opt(3, &[]);
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].0, REP_SERVER);
    assert_eq!(&list[0].1[4..], b"disk0");
    let info = c.go_opt(6, "disk0");
    assert!(info
        .iter()
        .any(|(k, d)| *k == 3 && d[..2] == [0, 1] && &d[2..] == b"disk0"));
    // Another name: NBD_REP_ERR_UNKNOWN, and the connection stays usable.
    let bad = c.go_opt(7, "nope");
    assert_eq!(bad.last().unwrap().0, REP_ERR_UNKNOWN);
    assert!(c.go("disk0") > 0);
    // The empty name is the default export.
    let (mut d, size) = Client::connect(p);
    // Unknown or misapplied command flags: EINVAL; a WRITE's payload is still consumed.
    assert_eq!(d.request(1, 1 << 7, 0, 4096, &[7u8; 4096]).0, EINVAL);
    assert_eq!(d.request(0, 1 << 2, 0, 4096, &[]).0, EINVAL); // DF without structured replies
    assert_eq!(d.request(3, 1 << 0, 0, 0, &[]).0, EINVAL); // FUA on FLUSH
    assert_eq!(d.write(0, &[9u8; 4096], false), 0);
    assert_eq!(d.read(0, 4096), vec![9u8; 4096]);
    // One-byte and odd requests work (minimum block 1 is advertised and meant).
    assert_eq!(d.write(12_345, &[0xab], false), 0);
    assert_eq!(d.read(12_345, 1), vec![0xab]);
    assert!(size > 1 << 20);
    // An oversized option: NBD_REP_ERR_TOO_BIG, then the connection is closed.
    let mut e = Client::raw(p);
    let mut m = b"IHAVEOPT".to_vec();
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(&(1u32 << 20).to_be_bytes());
    e.s.write_all(&m).unwrap();
    let mut h = [0u8; 20];
    e.s.read_exact(&mut h).unwrap();
    assert_eq!(
        u32::from_be_bytes(h[12..16].try_into().unwrap()),
        REP_ERR_TOO_BIG
    );
    let n = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
    let mut msg = vec![0u8; n];
    e.s.read_exact(&mut msg).unwrap();
    assert!(closed(&mut e));
    // EXPORT_NAME with a wrong name: closed (that option has no error reply).
    let mut f = Client::raw(p);
    let mut m = b"IHAVEOPT".to_vec();
    m.extend_from_slice(&1u32.to_be_bytes());
    m.extend_from_slice(&4u32.to_be_bytes());
    m.extend_from_slice(b"nope");
    f.s.write_all(&m).unwrap();
    assert!(closed(&mut f));
    // The first client is still served.
    assert_eq!(d.read(0, 4096), vec![9u8; 4096]);
}

#[test]
fn structured_replies_and_allocation_status() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("s.img");
    let p = common::free_port();
    let _srv = Server::start(&image, true, p);
    let mut c = Client::raw(p);
    // Meta contexts need structured replies first.
    assert_eq!(
        c.opt(10, &meta("", &["base:allocation"])).last().unwrap().0,
        REP_ERR_INVALID
    );
    assert_eq!(c.opt(8, &[]).last().unwrap().0, ACK);
    let listed = c.opt(9, &meta("", &[]));
    assert_eq!(listed[0].0, REP_META_CONTEXT);
    assert_eq!(&listed[0].1[4..], b"base:allocation");
    let set = c.opt(10, &meta("", &["base:allocation", "qemu:dirty-bitmap:x"]));
    assert_eq!(set.len(), 2, "{set:?}");
    let id = u32::from_be_bytes(set[0].1[..4].try_into().unwrap());
    assert_eq!(
        c.opt(10, &meta("other", &["base:allocation"]))
            .last()
            .unwrap()
            .0,
        REP_ERR_UNKNOWN
    );
    // That last SET failed, so the earlier selection stands.
    c.go("");
    let page = 4096u64; // tiny-mlc pages
                        // Pages 2, 3 and 10 written; 3 then trimmed; 5 zeroed with NO_HOLE.
    for l in [2u64, 3, 10] {
        assert_eq!(
            c.write(l * page, &vec![l as u8 + 1; page as usize], false),
            0
        );
    }
    assert_eq!(c.request(4, 0, 3 * page, page as u32, &[]).0, 0);
    assert_eq!(c.request(6, 1 << 1, 5 * page, page as u32, &[]).0, 0);
    let status = c.structured(7, 0, 0, 12 * page as u32);
    assert_eq!(status.len(), 1);
    let (flags, kind, d) = &status[0];
    assert_eq!((*flags & 1, *kind), (1, 5));
    assert_eq!(u32::from_be_bytes(d[..4].try_into().unwrap()), id);
    let runs: Vec<(u32, u32)> = d[4..]
        .chunks(8)
        .map(|e| {
            (
                u32::from_be_bytes(e[..4].try_into().unwrap()),
                u32::from_be_bytes(e[4..].try_into().unwrap()),
            )
        })
        .collect();
    let p32 = page as u32;
    assert_eq!(
        runs,
        vec![
            (2 * p32, 3),
            (p32, 0),
            (2 * p32, 3),
            (p32, 0),
            (4 * p32, 3),
            (p32, 0),
            (p32, 3)
        ]
    );
    // REQ_ONE: one extent, from a mid-page offset.
    let one = c.structured(7, 1 << 3, 2 * page + 100, 4 * page as u32);
    assert_eq!(one[0].2.len(), 4 + 8);
    assert_eq!(
        u32::from_be_bytes(one[0].2[4..8].try_into().unwrap()),
        p32 - 100
    );
    // A structured READ streams OFFSET_DATA chunks, the last one marked done; DF asks for
    // one chunk.
    let len = 600 * 1024u32;
    let chunks = c.structured(0, 0, 0, len);
    let mut got = vec![0u8; len as usize];
    for (i, (f, t, d)) in chunks.iter().enumerate() {
        assert_eq!((*f, *t), ((i + 1 == chunks.len()) as u16, 1));
        let at = u64::from_be_bytes(d[..8].try_into().unwrap()) as usize;
        got[at..at + d.len() - 8].copy_from_slice(&d[8..]);
    }
    assert!(chunks.len() > 2, "{} chunks", chunks.len());
    // A zero-length READ: one NONE chunk, done.
    assert_eq!(c.structured(0, 0, 0, 0), vec![(1, 0, vec![])]);
    assert_eq!(
        &got[2 * page as usize..3 * page as usize],
        &vec![3u8; page as usize][..]
    );
    let df = c.structured(0, 1 << 2, 0, len);
    assert_eq!(df.len(), 1);
    assert_eq!(&df[0].2[8..], &got[..]);
    // Errors come as structured error chunks: an out-of-range READ.
    let err = c.structured(0, 0, u64::MAX - 8, 16);
    assert_eq!(err[0].1, (1 << 15) + 1);
    assert_eq!(
        u32::from_be_bytes(err[0].2[..4].try_into().unwrap()),
        EINVAL
    );
}

#[test]
fn connection_limit_and_handshake_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("l.img");
    let p = common::free_port();
    let _srv = Server::start_with(
        &image,
        true,
        p,
        &["--max-connections", "2", "--handshake-timeout", "1"],
    );
    let (mut a, _) = Client::connect(p);
    let (b, _) = Client::connect(p);
    // A third is closed at once, before the greeting.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", p)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 18];
    assert!(matches!(s.read(&mut buf), Ok(0) | Err(_)));
    // Those in transmission may idle past the handshake timeout.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(a.write(0, &[1u8; 4096], true), 0);
    drop(b.s.shutdown(std::net::Shutdown::Both));
    drop(b);
    std::thread::sleep(Duration::from_millis(200));
    // A slot is free again; a client that stalls in the handshake is dropped after 1 s.
    let mut idle = Client::raw(p);
    let start = Instant::now();
    assert!(closed(&mut idle));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    let (mut c, _) = Client::connect(p);
    assert_eq!(c.read(0, 4096), vec![1u8; 4096]);
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// 40 clients announce WRITEs of the whole export and stall halfway through the payload,
/// 10 more send READs of the whole export and never read the replies: the server's memory
/// stays bounded (the WRITEs are streamed piece by piece, the READ buffers come from a
/// 64 MiB budget) and another client is served meanwhile.
#[test]
fn stalled_clients_keep_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("m.img");
    let p = common::free_port();
    let srv = Server::start_with(&image, true, p, &["--buffer-memory", "64"]);
    let pid = srv.child.id();
    let (mut ok, size) = Client::connect(p);
    // The other client works at the end of the export, which the stalled WRITEs (half
    // their payload sent, applied piece by piece as NBD allows) never reach.
    let mine = (size & !4095) - 8192;
    assert_eq!(ok.write(mine, &[5u8; 8192], false), 0);
    let before = rss_kib(pid);
    let span = (size.min(32 << 20) as u32) & !4095;
    let half = vec![1u8; span as usize / 2];
    let mut stalled = Vec::new();
    for _ in 0..40 {
        let (mut c, _) = Client::connect(p);
        c.send(1, 0, 0, span, &half);
        stalled.push(c);
    }
    for _ in 0..10 {
        let (mut c, _) = Client::connect(p);
        c.send(0, 0, 0, span, &[]);
        stalled.push(c);
    }
    std::thread::sleep(Duration::from_millis(1500));
    let after = rss_kib(pid);
    // Budget 64 MiB + 50 pieces of 256 KiB + slack for thread stacks and the allocator.
    let bound = 64 * 1024 + 50 * 256 + 48 * 1024;
    eprintln!(
        "server RSS {before} KiB before, {after} KiB with 50 stalled clients ({} KiB of payload sent)",
        40 * half.len() / 1024
    );
    assert!(
        after.saturating_sub(before) < bound,
        "RSS grew {} KiB (bound {bound} KiB)",
        after - before
    );
    // Still serving.
    assert!(ok.read(mine, 8192) == vec![5u8; 8192]);
    drop(stalled);
}

/// Reads one simple reply: (error, cookie), and `len` payload bytes for a successful READ.
fn simple_reply(c: &mut Client, len: usize) -> (u32, u64, Vec<u8>) {
    let mut h = [0u8; 16];
    c.s.read_exact(&mut h).unwrap();
    assert_eq!(u32::from_be_bytes(h[..4].try_into().unwrap()), 0x6744_6698);
    let err = u32::from_be_bytes(h[4..8].try_into().unwrap());
    let cookie = u64::from_be_bytes(h[8..16].try_into().unwrap());
    let mut d = vec![0u8; if err == 0 { len } else { 0 }];
    c.s.read_exact(&mut d).unwrap();
    (err, cookie, d)
}

/// READ payloads up to 32 KiB are read straight into the reply queue and batch with other
/// replies; larger ones go out from the piece buffer. Across that boundary, with the queue
/// filling past its limit mid-burst, interleaved errors and a write between reads, every
/// reply carries exactly the volume's bytes, in order — with simple and structured replies.
#[test]
fn queued_read_payloads_are_exact_at_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("q.chip");
    let p = common::free_port();
    let _srv = Server::start(&image, true, p);
    let (mut c, size) = Client::connect(p);
    let mut model: Vec<u8> = (0..192 * 1024usize)
        .map(|i| (i * 7 + i / 4096) as u8 % 251 + 1)
        .collect();
    assert_eq!(c.write(0, &model, false), 0);

    // (offset, length, write this byte over the range instead of reading it).
    let mut burst: Vec<(u64, u32, Option<u8>)> = vec![
        (0, 1, None),
        (1, 511, None),
        (4095, 4096, None),
        (0, 32 * 1024 - 1, None),
        (3, 32 * 1024, None),
        (5, 32 * 1024 + 1, None),
        (size - 10, 100, None), // out of range: EINVAL
        (0, 64 * 1024, None),
        (8192, 4096, Some(0xEE)),
        (8000, 4096 + 500, None), // sees the write
        (100, 68 * 1024, None),
    ];
    for i in 0..40u64 {
        burst.push((i * 1000, 32 * 1024, None)); // queue limit passed several times
    }
    let first = c.cookie + 1;
    for &(off, len, w) in &burst {
        match w {
            Some(b) => c.send(1, 0, off, len, &vec![b; len as usize]),
            None => c.send(0, 0, off, len, &[]),
        }
    }
    for (k, &(off, len, w)) in burst.iter().enumerate() {
        let out = off + len as u64 > size;
        let (err, cookie, d) = simple_reply(&mut c, if w.is_some() { 0 } else { len as usize });
        assert_eq!(cookie, first + k as u64, "reply {k}");
        assert_eq!(err, if out { EINVAL } else { 0 }, "reply {k}");
        match w {
            Some(b) => model[off as usize..(off + len as u64) as usize].fill(b),
            None if !out => assert!(
                d == model[off as usize..(off + len as u64) as usize],
                "read {k}: {off}+{len}"
            ),
            None => {}
        }
    }
    // A lone small read is answered at once.
    c.s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(c.read(8190, 10), model[8190..8200].to_vec());

    // Structured replies: pipelined reads, streamed (one chunk each here) and DF.
    let mut s = Client::raw(p);
    assert_eq!(s.opt(8, &[]).last().unwrap().0, ACK);
    s.go("");
    let reads: Vec<(u64, u32, u16)> = (0..24u64)
        .map(|i| {
            (
                i * 5000,
                [1u32, 4096, 32 * 1024, 40 * 1024][i as usize % 4],
                if i % 3 == 0 { 4 } else { 0 },
            )
        })
        .collect();
    let first = s.cookie + 1;
    for &(off, len, flags) in &reads {
        s.send(0, flags, off, len, &[]);
    }
    for (k, &(off, len, _)) in reads.iter().enumerate() {
        let mut h = [0u8; 20];
        s.s.read_exact(&mut h).unwrap();
        assert_eq!(u32::from_be_bytes(h[..4].try_into().unwrap()), 0x668e_33ef);
        assert_eq!(
            u64::from_be_bytes(h[8..16].try_into().unwrap()),
            first + k as u64
        );
        assert_eq!(
            (h[5] & 1, u16::from_be_bytes([h[6], h[7]])),
            (1, 1),
            "read {k}: one done data chunk"
        );
        let n = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut d = vec![0u8; n];
        s.s.read_exact(&mut d).unwrap();
        assert_eq!(u64::from_be_bytes(d[..8].try_into().unwrap()), off);
        assert!(
            d[8..] == model[off as usize..(off + len as u64) as usize],
            "read {k}: {off}+{len}"
        );
    }
}

/// Replies are corked while requests are already buffered: a pipelined burst gets every
/// reply, in order, with the right data; a lone request is answered without the client
/// sending anything more; replies of a burst that ends in a DISC, or in a protocol error,
/// are all sent before the connection closes.
#[test]
fn corked_replies_are_complete_ordered_and_never_held() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("cork.chip");
    let p = common::free_port();
    let _srv = Server::start(&image, true, p);
    let page = |i: u64| vec![(i * 37 % 251) as u8 + 1; 4096];

    // A burst of 64 writes and 64 reads of what they wrote, sent before any reply is read.
    let (mut c, _) = Client::connect(p);
    let first = c.cookie + 1;
    for i in 0..64u64 {
        c.send(1, 0, i * 8192, 4096, &page(i));
    }
    for i in 0..64u64 {
        c.send(0, 0, i * 8192, 4096, &[]);
    }
    for k in 0..128u64 {
        let read = k >= 64;
        let (err, cookie, d) = simple_reply(&mut c, if read { 4096 } else { 0 });
        assert_eq!((err, cookie), (0, first + k), "reply {k} of the burst");
        if read {
            assert_eq!(d, page(k - 64), "read {} of the burst", k - 64);
        }
    }

    // A lone request: its reply comes although nothing follows it.
    c.s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.send(1, 0, 1 << 20, 4096, &page(7));
    let (err, cookie, _) = simple_reply(&mut c, 0);
    assert_eq!((err, cookie), (0, c.cookie));

    // A burst ending in DISC: every reply before the close.
    let first = c.cookie + 1;
    for i in 0..16u64 {
        c.send(1, 0, (2 << 20) + i * 4096, 4096, &page(i + 100));
    }
    c.send(2, 0, 0, 0, &[]); // NBD_CMD_DISC
    for k in 0..16u64 {
        let (err, cookie, _) = simple_reply(&mut c, 0);
        assert_eq!((err, cookie), (0, first + k));
    }
    assert!(closed(&mut c));

    // A burst ending in a bad request magic: the valid ones are answered, then the close.
    let (mut c, _) = Client::connect(p);
    let first = c.cookie + 1;
    for i in 0..16u64 {
        c.send(1, 0, (3 << 20) + i * 4096, 4096, &page(i + 200));
    }
    c.s.write_all(&[0xAB; 28]).unwrap();
    for k in 0..16u64 {
        let (err, cookie, _) = simple_reply(&mut c, 0);
        assert_eq!((err, cookie), (0, first + k));
    }
    assert!(closed(&mut c));

    // What the bursts wrote is there.
    let (mut c, _) = Client::connect(p);
    assert_eq!(c.read(2 << 20, 4096), page(100));
    assert_eq!(c.read((3 << 20) + 15 * 4096, 4096), page(215));
}
