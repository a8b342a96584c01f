//! The GXT's byte form (what a GXT write programs and a mount parses), fixed-length for a
//! given chip and configuration:
//!
//! ```text
//! magic "GXT1" u32 | mode u8 | block width w u8 | free-queue entries u8 | BSI entries u8
//! | update block (user) w | PMT update block w | PMT write pointer u16
//! | BIT update block w | BIT write pointer u16 | victims 2 × w | free user blocks u32 | drift u32
//! | free queue: free_queue × w | BSI: bsi_entries × (w + valid u16)
//! | subpage partitions: 2 bits per metadata block | PMD: u16 per PMT unit
//! | BID: u16 per BIT unit
//! | (SPFTL_log only) PMT-log update block w | its write pointer u16 | BIT-log update block w
//! | its write pointer u16 | PLID: u16 per PMT unit | BLID: u16 per BIT unit
//! | CRC32C u32 of everything before
//! ```
//!
//! Block numbers take `w` = 2 bytes on chips of up to 65,535 blocks, else 4 (all ones:
//! none); PMD and BID entries are partition-local unit addresses (block index in the
//! partition × slots + slot; `0xFFFF`: never written), as §IV-B suggests to keep the GXT
//! small. The LIDs (SPFTL_log's log information directories) are partition-local the same
//! way, into the PMT-log and BIT-log partitions.
//!
//! ## GXT logs (SPFTL_log)
//!
//! SPFTL_log writes the GXT as a **log** into an SP block of the GXT-log partition: the
//! GXT's fields that differ from the last whole GXT written (the *base*), each as (field
//! position in [`Gxt::cells`], value) — the paper's "(type, value)" —, coalesced: each
//! GXT log holds every change since the base, so a mount needs the base and the newest
//! readable log naming it. When the changes no longer fit one subpage, the whole GXT is
//! written (a page of the GXT partition) and becomes the next base.
//!
//! ```text
//! magic "GXL1" u32 | base sequence number u64 | entries n u32 | n × (position u32, value u32)
//! | CRC32C u32 of everything before
//! ```

use super::{DftlConfig, Plan, NONE};
use alloc::vec::Vec;

const MAGIC: u32 = u32::from_le_bytes(*b"GXT1");
const LOG_MAGIC: u32 = u32::from_le_bytes(*b"GXL1");
/// The GXT format version this build reads and writes (the magic's last character).
pub(crate) const GXT_VERSION: u8 = 1;

/// The version a GXT (`GXTn`) or GXT log (`GXLn`) names when it is not this build's: its
/// magic's prefix matches and its digit differs. A mount stops on it: an older GXT would
/// lose what the newer one holds.
pub(crate) fn other_version(bytes: &[u8]) -> Option<u8> {
    let m = bytes.get(..4)?;
    ((m[..3] == *b"GXT" || m[..3] == *b"GXL")
        && m[3].is_ascii_digit()
        && m[3] != b'0' + GXT_VERSION)
        .then(|| m[3] - b'0')
}

/// Bytes of a GXT log besides its entries.
const LOG_FIXED: usize = 4 + 8 + 4 + 4;

/// The GXT's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gxt {
    pub mode: u8,
    pub u: u32,
    pub pmt_upd: u32,
    pub pmt_wp: u32,
    pub bit_upd: u32,
    pub bit_wp: u32,
    /// The victims collected at the last switch (`NONE`: none).
    pub victims: [u32; 2],
    pub free_total: u32,
    /// Valid-count drift recovery allows (lower pages lost to power cuts since format).
    pub drift: u32,
    pub free_q: Vec<u32>,
    pub bsi: Vec<(u32, u32)>,
    /// Per metadata block (from block 0).
    pub sp_part: Vec<u8>,
    /// Partition-local unit addresses.
    pub pmd: Vec<u16>,
    pub bid: Vec<u16>,
    /// SPFTL_log: the PMT-log and BIT-log partitions' update blocks and write pointers
    /// (`NONE`, 0 in the other modes).
    pub plog_upd: u32,
    pub plog_wp: u32,
    pub blog_upd: u32,
    pub blog_wp: u32,
    /// SPFTL_log: partition-local log addresses per PMT / BIT unit (empty in the other
    /// modes).
    pub plid: Vec<u16>,
    pub blid: Vec<u16>,
}

/// The shape of a chip's GXT: what sizes its byte form and its cells.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub nblocks: u32,
    pub meta_blocks: u32,
    pub pmt_units: u32,
    pub bit_units: u32,
    /// SPFTL_log: the log fields are present.
    pub log: bool,
}

fn width(nblocks: u32) -> usize {
    if nblocks <= 0xFFFF {
        2
    } else {
        4
    }
}

/// Bytes of the GXT of a chip of `nblocks` blocks sized by `plan`.
pub(crate) fn encoded_len(plan: &Plan, nblocks: u32, cfg: &DftlConfig, log: bool) -> usize {
    let meta: u32 = plan.part_len.iter().sum();
    byte_len(
        &Shape {
            nblocks,
            meta_blocks: meta,
            pmt_units: plan.pmt_units,
            bit_units: plan.bit_units,
            log,
        },
        cfg,
    )
}

/// Bytes of the GXT: the layout in the module docs.
fn byte_len(sh: &Shape, cfg: &DftlConfig) -> usize {
    let w = width(sh.nblocks);
    let units = 2 * sh.pmt_units as usize + 2 * sh.bit_units as usize;
    8 + w * 5
        + 2 * 2
        + 8
        + cfg.free_queue as usize * w
        + cfg.bsi_entries as usize * (w + 2)
        + (sh.meta_blocks as usize).div_ceil(4)
        + units
        + if sh.log { 2 * w + 4 + units } else { 0 }
        + 4
}

/// GXT-log entries a subpage of `sub` bytes holds.
pub(crate) fn log_capacity(sub: usize) -> usize {
    sub.saturating_sub(LOG_FIXED) / 8
}

/// A GXT log: the changes `cur` holds against `base` (cells), extending the whole GXT of
/// sequence number `base_seq`; `None` if they do not fit `sub` bytes.
pub(crate) fn encode_log(
    base_seq: u64,
    base: &[u32],
    cur: &[u32],
    sub: usize,
    crc: fn(&[u8]) -> u32,
) -> Option<Vec<u8>> {
    let changed: Vec<(usize, u32)> = base
        .iter()
        .zip(cur)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (_, &b))| (i, b))
        .collect();
    if changed.len() > log_capacity(sub) {
        return None;
    }
    let mut out = Vec::with_capacity(sub);
    out.extend_from_slice(&LOG_MAGIC.to_le_bytes());
    out.extend_from_slice(&base_seq.to_le_bytes());
    out.extend_from_slice(&(changed.len() as u32).to_le_bytes());
    for (i, v) in changed {
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    let c = crc(&out);
    out.extend_from_slice(&c.to_le_bytes());
    Some(out)
}

/// A GXT log's base sequence number and entries; `None` if the bytes are not one (magic,
/// length, CRC) or name positions outside `cells` cells.
pub(crate) fn decode_log(
    bytes: &[u8],
    cells: usize,
    crc: fn(&[u8]) -> u32,
) -> Option<(u64, Vec<(usize, u32)>)> {
    if bytes.len() < LOG_FIXED || u32::from_le_bytes(bytes[..4].try_into().ok()?) != LOG_MAGIC {
        return None;
    }
    let base = u64::from_le_bytes(bytes[4..12].try_into().ok()?);
    let n = u32::from_le_bytes(bytes[12..16].try_into().ok()?) as usize;
    let end = 16usize.checked_add(n.checked_mul(8)?)?;
    if end + 4 > bytes.len() {
        return None;
    }
    let stored = u32::from_le_bytes(bytes[end..end + 4].try_into().ok()?);
    if crc(&bytes[..end]) != stored {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let o = 16 + 8 * k;
        let i = u32::from_le_bytes(bytes[o..o + 4].try_into().ok()?) as usize;
        let v = u32::from_le_bytes(bytes[o + 4..o + 8].try_into().ok()?);
        if i >= cells {
            return None;
        }
        out.push((i, v));
    }
    Some((base, out))
}

fn put_block(out: &mut Vec<u8>, w: usize, b: u32) {
    if w == 2 {
        let v = if b == NONE { 0xFFFF } else { b as u16 };
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.extend_from_slice(&b.to_le_bytes());
    }
}

impl Gxt {
    /// The byte form (`len` bytes: [`encoded_len`]), padded to `unit` multiples by the
    /// caller.
    pub fn encode(&self, nblocks: u32, cfg: &DftlConfig, crc: fn(&[u8]) -> u32) -> Vec<u8> {
        let w = width(nblocks);
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&[
            self.mode,
            w as u8,
            self.free_q.len() as u8,
            self.bsi.len() as u8,
        ]);
        put_block(&mut out, w, self.u);
        put_block(&mut out, w, self.pmt_upd);
        out.extend_from_slice(&(self.pmt_wp as u16).to_le_bytes());
        put_block(&mut out, w, self.bit_upd);
        out.extend_from_slice(&(self.bit_wp as u16).to_le_bytes());
        put_block(&mut out, w, self.victims[0]);
        put_block(&mut out, w, self.victims[1]);
        out.extend_from_slice(&self.free_total.to_le_bytes());
        out.extend_from_slice(&self.drift.to_le_bytes());
        for i in 0..cfg.free_queue as usize {
            put_block(&mut out, w, self.free_q.get(i).copied().unwrap_or(NONE));
        }
        for i in 0..cfg.bsi_entries as usize {
            let (b, v) = self.bsi.get(i).copied().unwrap_or((NONE, 0));
            put_block(&mut out, w, b);
            out.extend_from_slice(&(v.min(0xFFFF) as u16).to_le_bytes());
        }
        for chunk in self.sp_part.chunks(4) {
            let mut byte = 0u8;
            for (i, &p) in chunk.iter().enumerate() {
                byte |= (p & 3) << (2 * i);
            }
            out.push(byte);
        }
        for &a in self.pmd.iter().chain(self.bid.iter()) {
            out.extend_from_slice(&a.to_le_bytes());
        }
        if self.mode == super::MetaMode::Log as u8 {
            put_block(&mut out, w, self.plog_upd);
            out.extend_from_slice(&(self.plog_wp as u16).to_le_bytes());
            put_block(&mut out, w, self.blog_upd);
            out.extend_from_slice(&(self.blog_wp as u16).to_le_bytes());
            for &a in self.plid.iter().chain(self.blid.iter()) {
                out.extend_from_slice(&a.to_le_bytes());
            }
        }
        let c = crc(&out);
        out.extend_from_slice(&c.to_le_bytes());
        out
    }

    /// Parses a GXT of the given shape; `None` if it is not one (wrong magic, length or
    /// CRC).
    pub fn decode(
        bytes: &[u8],
        sh: &Shape,
        cfg: &DftlConfig,
        crc: fn(&[u8]) -> u32,
    ) -> Option<Gxt> {
        let w = width(sh.nblocks);
        let len = byte_len(sh, cfg);
        let (meta_blocks, pmt_units, bit_units) = (sh.meta_blocks, sh.pmt_units, sh.bit_units);
        if bytes.len() < len {
            return None;
        }
        let body = &bytes[..len - 4];
        let stored = u32::from_le_bytes(bytes[len - 4..len].try_into().ok()?);
        if crc(body) != stored || u32::from_le_bytes(body[..4].try_into().ok()?) != MAGIC {
            return None;
        }
        if body[5] as usize != w
            || body[6] as u32 > cfg.free_queue
            || body[7] as u32 > cfg.bsi_entries
        {
            return None;
        }
        let mut r = Cursor { body, at: 8, w };
        let u = r.block();
        let pmt_upd = r.block();
        let pmt_wp = r.u16() as u32;
        let bit_upd = r.block();
        let bit_wp = r.u16() as u32;
        let victims = [r.block(), r.block()];
        let free_total = r.u32();
        let drift = r.u32();
        let mut free_q = Vec::new();
        for i in 0..cfg.free_queue as usize {
            let b = r.block();
            if i < body[6] as usize {
                free_q.push(b);
            }
        }
        let mut bsi = Vec::new();
        for i in 0..cfg.bsi_entries as usize {
            let b = r.block();
            let v = r.u16() as u32;
            if i < body[7] as usize {
                bsi.push((b, v));
            }
        }
        let sp_part = (0..meta_blocks as usize)
            .map(|i| (body[r.at + i / 4] >> (2 * (i % 4))) & 3)
            .collect();
        r.at += (meta_blocks as usize).div_ceil(4);
        let pmd = (0..pmt_units).map(|_| r.u16()).collect();
        let bid = (0..bit_units).map(|_| r.u16()).collect();
        let (mut plog_upd, mut plog_wp, mut blog_upd, mut blog_wp) = (NONE, 0, NONE, 0);
        let (mut plid, mut blid) = (Vec::new(), Vec::new());
        if sh.log {
            plog_upd = r.block();
            plog_wp = r.u16() as u32;
            blog_upd = r.block();
            blog_wp = r.u16() as u32;
            plid = (0..pmt_units).map(|_| r.u16()).collect();
            blid = (0..bit_units).map(|_| r.u16()).collect();
        }
        Some(Gxt {
            mode: body[4],
            u,
            pmt_upd,
            pmt_wp,
            bit_upd,
            bit_wp,
            victims,
            free_total,
            drift,
            free_q,
            bsi,
            sp_part,
            pmd,
            bid,
            plog_upd,
            plog_wp,
            blog_upd,
            blog_wp,
            plid,
            blid,
        })
    }

    /// Every field as a flat list of `u32` cells, fixed in length for a shape (free queue
    /// and BSI padded to their configured lengths): what GXT logs name by position.
    pub fn cells(&self, cfg: &DftlConfig) -> Vec<u32> {
        let mut c = Vec::new();
        c.extend_from_slice(&[
            self.mode as u32,
            self.u,
            self.pmt_upd,
            self.pmt_wp,
            self.bit_upd,
            self.bit_wp,
            self.victims[0],
            self.victims[1],
            self.free_total,
            self.drift,
            self.plog_upd,
            self.plog_wp,
            self.blog_upd,
            self.blog_wp,
            self.free_q.len() as u32,
            self.bsi.len() as u32,
        ]);
        for i in 0..cfg.free_queue as usize {
            c.push(self.free_q.get(i).copied().unwrap_or(NONE));
        }
        for i in 0..cfg.bsi_entries as usize {
            let (b, v) = self.bsi.get(i).copied().unwrap_or((NONE, 0));
            c.push(b);
            c.push(v);
        }
        c.extend(self.sp_part.iter().map(|&x| x as u32));
        for t in [&self.pmd, &self.bid, &self.plid, &self.blid] {
            c.extend(t.iter().map(|&x| x as u32));
        }
        c
    }

    /// The GXT `cells` describe (the inverse of [`cells`](Self::cells)); `None` if a
    /// cell is out of its field's range.
    pub fn from_cells(c: &[u32], sh: &Shape, cfg: &DftlConfig) -> Option<Gxt> {
        let (fq, bs) = (cfg.free_queue as usize, cfg.bsi_entries as usize);
        let (pu, bu) = (sh.pmt_units as usize, sh.bit_units as usize);
        let lu = if sh.log { pu + bu } else { 0 };
        if c.len() != 16 + fq + 2 * bs + sh.meta_blocks as usize + pu + bu + lu {
            return None;
        }
        let (nq, nb) = (c[14] as usize, c[15] as usize);
        if c[0] > 255 || nq > fq || nb > bs {
            return None;
        }
        let mut at = 16;
        let free_q = c[at..at + nq].to_vec();
        at += fq;
        let bsi = (0..nb)
            .map(|i| (c[at + 2 * i], c[at + 2 * i + 1]))
            .collect();
        at += 2 * bs;
        let mut take = |n: usize, max: u32| -> Option<Vec<u32>> {
            let v = c[at..at + n].to_vec();
            at += n;
            v.iter().all(|&x| x <= max).then_some(v)
        };
        let sp_part = take(sh.meta_blocks as usize, 3)?;
        let u16s = |v: Vec<u32>| v.into_iter().map(|x| x as u16).collect::<Vec<u16>>();
        let pmd = u16s(take(pu, 0xFFFF)?);
        let bid = u16s(take(bu, 0xFFFF)?);
        let (plid, blid) = if sh.log {
            (u16s(take(pu, 0xFFFF)?), u16s(take(bu, 0xFFFF)?))
        } else {
            (Vec::new(), Vec::new())
        };
        Some(Gxt {
            mode: c[0] as u8,
            u: c[1],
            pmt_upd: c[2],
            pmt_wp: c[3],
            bit_upd: c[4],
            bit_wp: c[5],
            victims: [c[6], c[7]],
            free_total: c[8],
            drift: c[9],
            plog_upd: c[10],
            plog_wp: c[11],
            blog_upd: c[12],
            blog_wp: c[13],
            free_q,
            bsi,
            sp_part: sp_part.into_iter().map(|x| x as u8).collect(),
            pmd,
            bid,
            plid,
            blid,
        })
    }
}

/// Reads a GXT's fields in order (the length was checked against the shape first, so
/// every read is in bounds).
struct Cursor<'a> {
    body: &'a [u8],
    at: usize,
    /// Bytes per block number (2, with `0xFFFF` for none, or 4).
    w: usize,
}

impl Cursor<'_> {
    fn u16(&mut self) -> u16 {
        let v = u16::from_le_bytes([self.body[self.at], self.body[self.at + 1]]);
        self.at += 2;
        v
    }

    fn u32(&mut self) -> u32 {
        let v = u32::from_le_bytes(self.body[self.at..self.at + 4].try_into().expect("4 bytes"));
        self.at += 4;
        v
    }

    /// A block number (`NONE` for none).
    fn block(&mut self) -> u32 {
        if self.w == 2 {
            match self.u16() {
                0xFFFF => NONE,
                v => v as u32,
            }
        } else {
            self.u32()
        }
    }
}
