//! The block-level kernel's checkpoint: per block its role, logical block, write pointer,
//! erase count and needs-erase flag; the pages known torn; the sequence counter and
//! whether a clean shutdown wrote it. The map and the three allocation lists are derived
//! from it (so DCR and the live kernel derive the same lists).
//!
//! Layout (little-endian): magic `BKCP`, version, logical blocks, pages per block, blocks,
//! sequence counter, clean flag; per block `role | flags` (1 byte), logical block (4), write
//! pointer (2), erase count (4); torn-page count and pages (4 each); CRC32C of all before.

use super::{Blk, BlockFtl, Role, NONE};
use crate::bytes::Reader;
use alloc::vec::Vec;
use nand::{ErrorModel, Storage};

const MAGIC: &[u8; 4] = b"BKCP";
/// The snapshot format this build writes and reads (offset 4; see FORMAT.md).
pub(crate) const VERSION: u8 = 1;

/// The format version of a whole snapshot stream (its CRC checks and its magic is the
/// block kernel's): what a mount reports when it is not one this build reads.
pub(crate) fn stream_version(bytes: &[u8], crc: fn(&[u8]) -> u32) -> Option<u8> {
    let n = bytes.len().checked_sub(4)?;
    (n >= 5 && crc(&bytes[..n]).to_le_bytes() == bytes[n..] && &bytes[..4] == MAGIC)
        .then(|| bytes[4])
}
/// Role codes.
const FREE: u8 = 0;
const PRIMARY: u8 = 1;
const REPLACEMENT: u8 = 2;
const BAD: u8 = 3;
const REGION: u8 = 4;
/// Flag: free but holding data (erase before use).
const NEEDS_ERASE: u8 = 0x80;
/// Bytes per block.
const PER_BLOCK: u64 = 11;

/// Bytes of the largest snapshot of a chip of `blocks` blocks (the torn list bounded by
/// one page per block: a power cut tears at most one page and its lower partners, and an
/// erase forgets a block's).
pub(crate) fn worst_case_bytes(blocks: u64) -> u64 {
    24 + blocks * PER_BLOCK + 4 + 4 * blocks + 4
}

/// A checkpoint, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub lbns: u32,
    pub seq: u64,
    pub clean: bool,
    /// Per block (no `Dead`, nothing young or unresolved).
    pub blk: Vec<Blk>,
    pub erase: Vec<u32>,
    pub torn: Vec<u32>,
}

impl Snapshot {
    /// Encodes it, CRC last.
    pub fn encode(&self, crc: fn(&[u8]) -> u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(worst_case_bytes(self.blk.len() as u64) as usize);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.push(self.clean as u8);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.lbns.to_le_bytes());
        out.extend_from_slice(&(self.blk.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        for (k, e) in self.blk.iter().zip(&self.erase) {
            let role = match k.role {
                Role::Free | Role::Dead => FREE,
                Role::Primary => PRIMARY,
                Role::Replacement => REPLACEMENT,
                Role::Bad => BAD,
                Role::Region => REGION,
            };
            let ne = k.needs_erase || k.role == Role::Dead;
            out.push(role | if ne { NEEDS_ERASE } else { 0 });
            out.extend_from_slice(&k.lbn.to_le_bytes());
            out.extend_from_slice(&k.next.to_le_bytes());
            out.extend_from_slice(&e.to_le_bytes());
        }
        out.extend_from_slice(&(self.torn.len() as u32).to_le_bytes());
        for p in &self.torn {
            out.extend_from_slice(&p.to_le_bytes());
        }
        let c = crc(&out);
        out.extend_from_slice(&c.to_le_bytes());
        out
    }

    /// Parses and checks a snapshot for a chip of `blocks` blocks of `ppb` pages: roles
    /// known, every primary and replacement naming a logical block in range, one primary
    /// per mapped logical block and a replacement only beside one, write pointers within
    /// the block, torn pages on the chip. `None` otherwise.
    pub fn decode(bytes: &[u8], blocks: usize, ppb: u32, crc: fn(&[u8]) -> u32) -> Option<Self> {
        let n = bytes.len().checked_sub(4)?;
        if crc(&bytes[..n]) != u32::from_le_bytes(bytes[n..].try_into().ok()?) {
            return None;
        }
        let mut r = Reader(&bytes[..n]);
        if r.take(4)? != MAGIC || r.u8()? != VERSION {
            return None;
        }
        let clean = match r.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        r.take(2)?;
        let lbns = r.u32()?;
        if r.u32()? as usize != blocks {
            return None;
        }
        let seq = r.u64()?;
        if seq > crate::recovery::SEQ_LIMIT {
            return None;
        }
        let (blk, erase) = decode_blocks(&mut r, blocks, lbns, ppb)?;
        let count = r.u32()? as usize;
        if count > blocks * ppb as usize {
            return None;
        }
        let mut torn = Vec::with_capacity(count);
        for _ in 0..count {
            let p = r.u32()?;
            if p as u64 >= blocks as u64 * ppb as u64 {
                return None;
            }
            torn.push(p);
        }
        if !r.is_empty() {
            return None;
        }
        Some(Snapshot {
            lbns,
            seq,
            clean,
            blk,
            erase,
            torn,
        })
    }
}

/// The per-block entries of a snapshot (role and flags, logical block, write pointer,
/// erase count): roles known, write pointers within the block, one primary per logical
/// block in range and a replacement only beside one. `None` otherwise.
fn decode_blocks(
    r: &mut Reader<'_>,
    blocks: usize,
    lbns: u32,
    ppb: u32,
) -> Option<(Vec<Blk>, Vec<u32>)> {
    let mut blk = Vec::with_capacity(blocks);
    let mut erase = Vec::with_capacity(blocks);
    let mut primary = alloc::vec![false; lbns as usize];
    let mut replacement = alloc::vec![false; lbns as usize];
    for _ in 0..blocks {
        let code = r.u8()?;
        let lbn = r.u32()?;
        let next = r.u16()?;
        erase.push(r.u32()?);
        let role = match code & !NEEDS_ERASE {
            FREE => Role::Free,
            PRIMARY => Role::Primary,
            REPLACEMENT => Role::Replacement,
            BAD => Role::Bad,
            REGION => Role::Region,
            _ => return None,
        };
        if next as u32 > ppb {
            return None;
        }
        match role {
            Role::Primary | Role::Replacement => {
                let seen = if role == Role::Primary {
                    &mut primary
                } else {
                    &mut replacement
                };
                if core::mem::replace(seen.get_mut(lbn as usize)?, true) {
                    return None;
                }
            }
            _ if lbn != NONE => return None,
            _ => {}
        }
        blk.push(Blk {
            role,
            lbn,
            next,
            needs_erase: code & NEEDS_ERASE != 0,
            young: false,
            unresolved: false,
        });
    }
    if primary.iter().zip(&replacement).any(|(p, r)| *r && !*p) {
        return None;
    }
    Some((blk, erase))
}

impl<S: Storage, M: ErrorModel> BlockFtl<S, M> {
    /// The kernel's state as a checkpoint.
    pub(crate) fn snapshot(&self, clean: bool) -> Snapshot {
        Snapshot {
            lbns: self.lbns,
            seq: self.s.seq,
            clean,
            blk: self.blk.clone(),
            erase: self.s.erase.to_vec(),
            torn: self.torn.iter().copied().collect(),
        }
    }
}
