//! Per-block and per-page state the chip tracks: wear, write pointer, mode, age.
//!
//! These records are what a persistent backend stores; their fixed-size encodings (with a
//! CRC32) are defined here so that every backend writes the same bytes.

use crate::time::Nanos;

/// How a block has been programmed since its last erase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Usage {
    /// Nothing programmed since erase.
    #[default]
    Fresh,
    /// Full-page (or NOP partial-page) programs.
    FullPage,
    /// An SP block using subpage partition `n` (SPFTL §III.B).
    Subpage(u8),
}

impl Usage {
    fn encode(self) -> u8 {
        match self {
            Usage::Fresh => 0,
            Usage::FullPage => 1,
            Usage::Subpage(p) => 2 + p,
        }
    }

    fn decode(v: u8) -> Usage {
        match v {
            0 => Usage::Fresh,
            1 => Usage::FullPage,
            p => Usage::Subpage(p - 2),
        }
    }
}

/// Block flag: bad from the factory (every operation fails).
pub const FLAG_FACTORY_BAD: u8 = 1;
/// Block flag: grown bad (program/erase failure or marked by the FTL); reads still work.
pub const FLAG_GROWN_BAD: u8 = 2;
/// Block flag: caught in an interrupted erase; must be erased before programming.
pub const FLAG_NEEDS_ERASE: u8 = 4;
/// Block flag: used in SLC mode (multi-level chips only: only LSB pages are programmed).
pub const FLAG_SLC_MODE: u8 = 8;

/// Injected failure: the next program of the block fails.
pub const INJECT_PROGRAM_FAIL: u8 = 1;
/// Injected failure: the next erase of the block fails.
pub const INJECT_ERASE_FAIL: u8 = 2;

/// State of one erase block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockMeta {
    /// Completed (or interrupted) erase cycles.
    pub erase_count: u32,
    /// Write pointer: the lowest page still programmable (pages below it that were skipped
    /// stay unprogrammable until erase).
    pub next_page: u32,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// How the block is being programmed.
    pub usage: Usage,
    /// `INJECT_*` bits: failures armed for the next program/erase.
    pub inject: u8,
    /// Page reads since the last erase (for read disturb).
    pub reads_since_erase: u32,
    /// Time of the last erase.
    pub erased_at: Nanos,
}

/// Size of an encoded [`BlockMeta`] record.
pub const BLOCK_RECORD: usize = 32;
/// Size of an encoded [`PageMeta`] record.
pub const PAGE_RECORD: usize = 24;

impl BlockMeta {
    /// Whether a flag bit is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The fixed-size record (all zero for the default state, else CRC32-protected).
    pub fn encode(&self) -> [u8; BLOCK_RECORD] {
        let mut r = [0u8; BLOCK_RECORD];
        if *self == BlockMeta::default() {
            return r;
        }
        r[0..4].copy_from_slice(&self.erase_count.to_le_bytes());
        r[4..8].copy_from_slice(&self.next_page.to_le_bytes());
        r[8] = self.flags;
        r[9] = self.usage.encode();
        r[10] = self.inject;
        r[12..16].copy_from_slice(&self.reads_since_erase.to_le_bytes());
        r[16..24].copy_from_slice(&self.erased_at.0.to_le_bytes());
        let crc = crc32fast::hash(&r[..BLOCK_RECORD - 4]);
        r[BLOCK_RECORD - 4..].copy_from_slice(&crc.to_le_bytes());
        r
    }

    /// Decodes a record; `None` if its checksum fails.
    pub fn decode(r: &[u8; BLOCK_RECORD]) -> Option<BlockMeta> {
        if r.iter().all(|&b| b == 0) {
            return Some(BlockMeta::default());
        }
        if !crc_ok(r) {
            return None;
        }
        Some(BlockMeta {
            erase_count: u32::from_le_bytes(r[0..4].try_into().unwrap()),
            next_page: u32::from_le_bytes(r[4..8].try_into().unwrap()),
            flags: r[8],
            usage: Usage::decode(r[9]),
            inject: r[10],
            reads_since_erase: u32::from_le_bytes(r[12..16].try_into().unwrap()),
            erased_at: Nanos(u64::from_le_bytes(r[16..24].try_into().unwrap())),
        })
    }
}

fn crc_ok(r: &[u8]) -> bool {
    let n = r.len();
    crc32fast::hash(&r[..n - 4]).to_le_bytes() == r[n - 4..]
}

/// Page flag: the page's last program was cut short (torn) or damaged by a paired-page cut.
pub const PAGE_DAMAGED: u8 = 1;

/// State of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageMeta {
    /// Time of the last program (retention is `now − programmed_at`).
    pub programmed_at: Nanos,
    /// Reads since the page was programmed (read disturb).
    pub reads: u32,
    /// Programs since erase (0 = erased; >1 only for NOP partial programs).
    pub programs: u8,
    /// `PAGE_*` flags.
    pub flags: u8,
    /// Bit mask of subpages programmed (SP blocks only).
    pub subpages: u16,
}

impl PageMeta {
    /// Whether the page is in the erased state.
    pub fn is_erased(&self) -> bool {
        self.programs == 0
    }

    /// The fixed-size record (all zero for the default state, else CRC32-protected).
    pub fn encode(&self) -> [u8; PAGE_RECORD] {
        let mut r = [0u8; PAGE_RECORD];
        if *self == PageMeta::default() {
            return r;
        }
        r[0..8].copy_from_slice(&self.programmed_at.0.to_le_bytes());
        r[8..12].copy_from_slice(&self.reads.to_le_bytes());
        r[12] = self.programs;
        r[13] = self.flags;
        r[14..16].copy_from_slice(&self.subpages.to_le_bytes());
        let crc = crc32fast::hash(&r[..PAGE_RECORD - 4]);
        r[PAGE_RECORD - 4..].copy_from_slice(&crc.to_le_bytes());
        r
    }

    /// Decodes a record; `None` if its checksum fails.
    pub fn decode(r: &[u8; PAGE_RECORD]) -> Option<PageMeta> {
        if r.iter().all(|&b| b == 0) {
            return Some(PageMeta::default());
        }
        if !crc_ok(r) {
            return None;
        }
        Some(PageMeta {
            programmed_at: Nanos(u64::from_le_bytes(r[0..8].try_into().unwrap())),
            reads: u32::from_le_bytes(r[8..12].try_into().unwrap()),
            programs: r[12],
            flags: r[13],
            subpages: u16::from_le_bytes(r[14..16].try_into().unwrap()),
        })
    }
}
