//! The GXT's byte form (what a GXT write programs and a mount parses), fixed-length for a
//! given chip and configuration:
//!
//! ```text
//! magic "GXT1" u32 | mode u8 | block width w u8 | free-queue entries u8 | BSI entries u8
//! | update block (user) w | PMT update block w | PMT write pointer u16
//! | BIT update block w | BIT write pointer u16 | victims 2 × w | free user blocks u32 | drift u32
//! | free queue: free_queue × w | BSI: bsi_entries × (w + valid u16)
//! | subpage partitions: 2 bits per metadata block | PMD: u16 per PMT unit
//! | BID: u16 per BIT unit | CRC32C u32 of everything before
//! ```
//!
//! Block numbers take `w` = 2 bytes on chips of up to 65,535 blocks, else 4 (all ones:
//! none); PMD and BID entries are partition-local unit addresses (block index in the
//! partition × slots + slot; `0xFFFF`: never written), as §IV-B suggests to keep the GXT
//! small.

use super::{DftlConfig, Plan, NONE};
use alloc::vec::Vec;

const MAGIC: u32 = u32::from_le_bytes(*b"GXT1");

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
}

fn width(nblocks: u32) -> usize {
    if nblocks <= 0xFFFF {
        2
    } else {
        4
    }
}

/// Bytes of the GXT of a chip of `nblocks` blocks sized by `plan`.
pub(crate) fn encoded_len(plan: &Plan, nblocks: u32, cfg: &DftlConfig) -> usize {
    let meta: u32 = plan.part_len.iter().sum();
    byte_len(nblocks, meta, plan.pmt_units, plan.bit_units, cfg)
}

/// Bytes of the GXT: the layout in the module docs.
fn byte_len(
    nblocks: u32,
    meta_blocks: u32,
    pmt_units: u32,
    bit_units: u32,
    cfg: &DftlConfig,
) -> usize {
    let w = width(nblocks);
    8 + w * 5
        + 2 * 2
        + 8
        + cfg.free_queue as usize * w
        + cfg.bsi_entries as usize * (w + 2)
        + (meta_blocks as usize).div_ceil(4)
        + 2 * pmt_units as usize
        + 2 * bit_units as usize
        + 4
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
        let c = crc(&out);
        out.extend_from_slice(&c.to_le_bytes());
        out
    }

    /// Parses a GXT of the given shape; `None` if it is not one (wrong magic, length or
    /// CRC).
    pub fn decode(
        bytes: &[u8],
        nblocks: u32,
        meta_blocks: u32,
        pmt_units: u32,
        bit_units: u32,
        cfg: &DftlConfig,
        crc: fn(&[u8]) -> u32,
    ) -> Option<Gxt> {
        let w = width(nblocks);
        let len = byte_len(nblocks, meta_blocks, pmt_units, bit_units, cfg);
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
        let mut at = 8;
        let u16_at = |at: &mut usize| {
            let v = u16::from_le_bytes([body[*at], body[*at + 1]]);
            *at += 2;
            v
        };
        let block = |at: &mut usize| -> u32 {
            let v = if w == 2 {
                let v = u16::from_le_bytes([body[*at], body[*at + 1]]);
                if v == 0xFFFF {
                    NONE
                } else {
                    v as u32
                }
            } else {
                u32::from_le_bytes(body[*at..*at + 4].try_into().expect("4 bytes"))
            };
            *at += w;
            v
        };
        let u = block(&mut at);
        let pmt_upd = block(&mut at);
        let pmt_wp = u16_at(&mut at) as u32;
        let bit_upd = block(&mut at);
        let bit_wp = u16_at(&mut at) as u32;
        let victims = [block(&mut at), block(&mut at)];
        let free_total = u32::from_le_bytes(body[at..at + 4].try_into().ok()?);
        at += 4;
        let drift = u32::from_le_bytes(body[at..at + 4].try_into().ok()?);
        at += 4;
        let mut free_q = Vec::new();
        for i in 0..cfg.free_queue as usize {
            let b = block(&mut at);
            if i < body[6] as usize {
                free_q.push(b);
            }
        }
        let mut bsi = Vec::new();
        for i in 0..cfg.bsi_entries as usize {
            let b = block(&mut at);
            let v = u16_at(&mut at) as u32;
            if i < body[7] as usize {
                bsi.push((b, v));
            }
        }
        let mut sp_part = Vec::with_capacity(meta_blocks as usize);
        for i in 0..meta_blocks as usize {
            sp_part.push((body[at + i / 4] >> (2 * (i % 4))) & 3);
        }
        at += (meta_blocks as usize).div_ceil(4);
        let pmd = (0..pmt_units).map(|_| u16_at(&mut at)).collect();
        let bid = (0..bit_units).map(|_| u16_at(&mut at)).collect();
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
        })
    }
}
