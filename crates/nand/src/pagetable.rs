//! The chip's per-page state ([`PageMeta`]) held in 8 bytes a page instead of 16.
//!
//! A page's program time is the one wide field. Pages of a block are programmed in order
//! after the block's first program, so each block keeps a base time (its first program
//! since the erase) and each page the offset from it in nanoseconds, in 40 bits: 18
//! minutes. Reads since the program take 16 bits; the program count (7 bits) and the
//! damage flag share a byte. Subpage masks exist only in SP blocks, which keep a row of
//! them beside. A page whose state does not fit (a block filled over more than 18
//! simulated minutes, 65,535 reads of one page, 127 partial programs) is kept whole in a
//! side table, so every [`PageTable::get`] returns exactly what [`PageTable::set`] stored:
//! the packing changes memory, never a result. On a 1 TiB chip (268 M pages) the 8 bytes
//! saved per page are 2 GiB.

use crate::state::{PageMeta, PAGE_DAMAGED};
use crate::time::Nanos;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;

/// One page's state, packed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Packed {
    /// Low and high bits of the offset `at`: 0, programmed at time zero (or never); else
    /// the program time is the block's base plus `at − 1` nanoseconds.
    at_lo: u32,
    /// Reads since the program; [`SPILLED`]: the whole state is in the side table.
    reads: u16,
    at_hi: u8,
    /// [`PageMeta::programs`] (low 7 bits; also for a spilled page, so that erased pages
    /// are told apart without a look-up) and [`PAGE_DAMAGED`] (the high bit).
    programs_damaged: u8,
}

/// `Packed::reads` of a page whose state is in the side table.
const SPILLED: u16 = u16::MAX;
/// Offsets up to this fit `at` (40 bits, one value for time zero).
const MAX_AT: u64 = (1 << 40) - 1;
/// `Packed::programs_damaged`'s damage bit.
const DAMAGED_BIT: u8 = 0x80;
/// Program counts up to this fit.
const MAX_PROGRAMS: u8 = 0x7F;

/// The chip's page states, block by block; a block's records are allocated at its first
/// program and freed by its erase.
#[derive(Debug, Clone)]
pub(crate) struct PageTable {
    ppb: usize,
    /// One row per block: a page's look-up touches its block's row and its record only.
    rows: Vec<Row>,
    /// States that do not fit [`Packed`], by flat page index.
    spilled: BTreeMap<u64, PageMeta>,
}

/// A block's page states.
#[derive(Debug, Clone)]
struct Row {
    /// The pages' records (`None` until the first program after an erase).
    pages: Option<Box<[Packed]>>,
    /// The base time: the block's first nonzero program time since the erase.
    base: u64,
    /// The pages' subpage masks (an SP block's; `None` elsewhere).
    subpages: Option<Box<[u16]>>,
}

impl Row {
    const EMPTY: Row = Row {
        pages: None,
        base: NO_BASE,
        subpages: None,
    };
}

/// `Row::base` of a block that has no base yet.
const NO_BASE: u64 = u64::MAX;

impl PageTable {
    /// All pages erased: `blocks` blocks of `ppb` pages.
    pub(crate) fn new(blocks: usize, ppb: u32) -> Self {
        PageTable {
            ppb: ppb as usize,
            rows: vec![Row::EMPTY; blocks],
            spilled: BTreeMap::new(),
        }
    }

    fn flat(&self, bi: usize, page: u32) -> u64 {
        bi as u64 * self.ppb as u64 + page as u64
    }

    /// The state of page `page` of block `bi`.
    #[inline(always)]
    pub(crate) fn get(&self, bi: usize, page: u32) -> PageMeta {
        let row = &self.rows[bi];
        let Some(p) = row.pages.as_ref().map(|b| b[page as usize]) else {
            return PageMeta::default();
        };
        if p.reads == SPILLED {
            return self.spilled[&self.flat(bi, page)];
        }
        let at = p.at_lo as u64 | (p.at_hi as u64) << 32;
        let programmed_at = match at {
            0 => 0,
            d => row.base + (d - 1),
        };
        PageMeta {
            programmed_at: Nanos(programmed_at),
            reads: p.reads as u32,
            programs: p.programs_damaged & MAX_PROGRAMS,
            flags: if p.programs_damaged & DAMAGED_BIT != 0 {
                PAGE_DAMAGED
            } else {
                0
            },
            subpages: row.subpages.as_ref().map_or(0, |s| s[page as usize]),
        }
    }

    /// Whether page `page` of block `bi` is erased (cheaper than [`get`](Self::get)).
    #[inline(always)]
    pub(crate) fn is_erased(&self, bi: usize, page: u32) -> bool {
        self.rows[bi]
            .pages
            .as_ref()
            .is_none_or(|b| b[page as usize].programs_damaged & MAX_PROGRAMS == 0)
    }

    /// Stores the state of page `page` of block `bi`.
    #[inline]
    pub(crate) fn set(&mut self, bi: usize, page: u32, m: &PageMeta) {
        let t = m.programmed_at.0;
        let pi = self.flat(bi, page);
        let ppb = self.ppb;
        let row = &mut self.rows[bi];
        if t != 0 && row.base == NO_BASE {
            row.base = t;
        }
        let base = row.base;
        let at = match t {
            0 => Some(0),
            t if t >= base && t - base < MAX_AT => Some(t - base + 1),
            _ => None,
        };
        let reads = u16::try_from(m.reads).ok().filter(|&r| r != SPILLED);
        let flags_fit = m.flags & !PAGE_DAMAGED == 0;
        let programs = m.programs.min(MAX_PROGRAMS);
        let damaged = if m.flags & PAGE_DAMAGED != 0 {
            DAMAGED_BIT
        } else {
            0
        };
        if m.subpages != 0 || row.subpages.is_some() {
            row.subpages.get_or_insert_with(|| vec![0; ppb].into())[page as usize] = m.subpages;
        }
        let slot = &mut row
            .pages
            .get_or_insert_with(|| vec![Packed::default(); ppb].into())[page as usize];
        let was_spilled = slot.reads == SPILLED;
        let fits = at
            .zip(reads)
            .filter(|_| flags_fit && m.programs <= MAX_PROGRAMS);
        let (at, reads) = fits.unwrap_or((0, SPILLED));
        *slot = Packed {
            at_lo: at as u32,
            at_hi: (at >> 32) as u8,
            reads,
            programs_damaged: programs | damaged,
        };
        if fits.is_none() {
            self.spilled.insert(pi, *m);
        } else if was_spilled {
            self.spilled.remove(&pi);
        }
        debug_assert_eq!(self.get(bi, page), *m, "page state packs losslessly");
    }

    /// Counts a read of page `page` of block `bi` (a programmed page): its reads since the
    /// program, saturating, as [`set`](Self::set) of the incremented state would; returns
    /// the new state.
    #[inline]
    pub(crate) fn count_read(&mut self, bi: usize, page: u32) -> PageMeta {
        if let Some(p) = self.rows[bi].pages.as_mut().map(|b| &mut b[page as usize]) {
            // In place while the count stays below the spill mark.
            if p.reads < SPILLED - 1 {
                p.reads += 1;
                return self.get(bi, page);
            }
        }
        let mut m = self.get(bi, page);
        m.reads = m.reads.saturating_add(1);
        self.set(bi, page, &m);
        m
    }

    /// Erases block `bi`'s page states (every page reads as erased again).
    pub(crate) fn clear(&mut self, bi: usize) {
        let row = core::mem::replace(&mut self.rows[bi], Row::EMPTY);
        if row.pages.is_some() {
            let first = self.flat(bi, 0);
            let last = first + self.ppb as u64;
            while let Some((&pi, _)) = self.spilled.range(first..last).next() {
                self.spilled.remove(&pi);
            }
        }
    }

    /// Whether block `bi` holds any page state (some page programmed since its erase).
    pub(crate) fn has_block(&self, bi: usize) -> bool {
        self.rows.get(bi).is_some_and(|r| r.pages.is_some())
    }

    /// Hints the CPU to load page `page` of block `bi`'s record.
    #[inline]
    pub(crate) fn prefetch(&self, bi: usize, page: u32) {
        if let Some(Row { pages: Some(p), .. }) = self.rows.get(bi) {
            crate::hint::prefetch(p, page as usize);
        }
    }

    /// Page states kept whole in the side table (they did not fit the packed form).
    pub(crate) fn spilled(&self) -> usize {
        self.spilled.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(t: u64, reads: u32) -> PageMeta {
        PageMeta {
            programmed_at: Nanos(t),
            reads,
            programs: 1,
            flags: 1,
            subpages: 0b1010,
        }
    }

    #[test]
    fn eight_bytes_a_page() {
        assert_eq!(core::mem::size_of::<Packed>(), 8);
    }

    /// Every value round-trips: near the base, far after it, before it, zero; a spilled
    /// page rewritten near the base leaves the side table; an erase empties it.
    #[test]
    fn states_round_trip_exactly() {
        let mut t = PageTable::new(3, 16);
        assert!(t.is_erased(1, 0));
        assert_eq!(t.get(1, 0), PageMeta::default());
        let base = 5_000_000_000_000u64;
        let cases = [
            (0, meta(base, 0)),
            (1, meta(base + 1, 7)),
            (2, meta(base + MAX_AT - 1, 1)),
            (3, meta(base + MAX_AT, 2)),
            (4, meta(base + (1 << 40), u32::MAX)),
            (7, meta(base + 3, 65_534)),
            (
                8,
                PageMeta {
                    programs: 127,
                    ..meta(base + 4, 0)
                },
            ),
            (
                9,
                PageMeta {
                    programs: 128,
                    flags: 0,
                    subpages: 0,
                    ..meta(base + 4, 0)
                },
            ),
            (
                10,
                PageMeta {
                    flags: 2,
                    ..meta(base + 4, 0)
                },
            ),
            (5, meta(base - 1, 3)),
            (6, meta(0, 4)),
        ];
        for (p, m) in &cases {
            t.set(1, *p, m);
        }
        for (p, m) in &cases {
            assert_eq!(t.get(1, *p), *m, "page {p}");
            assert!(!t.is_erased(1, *p));
        }
        assert_eq!(
            t.spilled(),
            5,
            "pages 3 (late), 4 (reads), 5 (early), 9 (programs), 10 (flags)"
        );
        t.set(1, 4, &meta(base + 9, 0));
        assert_eq!(t.spilled(), 4);
        assert_eq!(t.get(1, 4), meta(base + 9, 0));
        t.set(1, 7, &meta(base + 3, 65_535));
        assert_eq!(t.get(1, 7), meta(base + 3, 65_535));
        assert_eq!(t.spilled(), 5);
        // Reads counted in place up to the spill mark, then beside.
        t.set(1, 11, &meta(base + 5, 65_533));
        assert_eq!(t.count_read(1, 11), meta(base + 5, 65_534));
        assert_eq!(t.spilled(), 5);
        assert_eq!(t.count_read(1, 11), meta(base + 5, 65_535));
        assert_eq!(t.spilled(), 6);
        assert_eq!(t.count_read(1, 11), meta(base + 5, 65_536));
        assert_eq!(t.get(1, 11), meta(base + 5, 65_536));
        t.set(1, 11, &meta(base + 5, 0));
        // Subpage masks only where some page has one; an erase drops them.
        assert!(t.rows[1].subpages.is_some() && t.rows[0].subpages.is_none());
        assert_eq!(t.get(1, 4), meta(base + 9, 0));
        assert!(t.is_erased(0, 0) && t.is_erased(2, 15));
        t.clear(1);
        assert_eq!(t.spilled(), 0);
        assert!(t.rows[1].subpages.is_none());
        assert!(t.is_erased(1, 0) && !t.has_block(1));
        // A new base after the erase.
        t.set(1, 0, &meta(7, 0));
        assert_eq!(t.get(1, 0), meta(7, 0));
        assert_eq!(t.spilled(), 0);
    }
}
