//! The demand-paged map store (`map_cache_pages` > 0): DFTL's translation pages as a
//! map-store policy of the page kernel (paper 001's demand-based page map, here under the
//! page kernel's checkpoint and roll-forward recovery).
//!
//! **Translation pages.** The logical-to-physical map is cut into *translation pages*
//! (TPs) of `per_tp` entries, one metadata unit each (a page's data area, or a subpage
//! with SPFTL's subpage writer: the configured `meta_writer`). Every TP with a mapped
//! entry has a version in the *map partition*: blocks reserved at format after the
//! checkpoint region on every die (state `Map`, in SLC mode like the region, never data),
//! written a unit at a time in slot order, each unit's record naming its TP. The *global
//! translation directory* (`gtd`, in RAM: 4 bytes per TP) says where each TP's current
//! version is. At most `map_cache_pages` TPs are cached in RAM (the CMT, least recently
//! used evicted first); a miss reads the TP (a charged metadata read), evicting a dirty
//! TP writes it back (a charged metadata program), and hits and misses are counted
//! (`cpmt_hits`, `cpmt_misses`; bytes written back in `meta_bytes_by_kind.pmt`, copies by
//! the partition's compaction in `pmt_gc`).
//!
//! **Checkpoints.** A checkpoint carries the directory and the *dirty* cached TPs (their
//! entries), not the map: its size follows the cache, not the volume. The TP versions the
//! committed checkpoint's directory names are *pinned*: a partition block holding one is
//! not erased before the next checkpoint commits, even when a newer version superseded it.
//! So recovery needs nothing written to the partition after the checkpoint: the map at
//! the checkpoint is its dirty TPs plus the pinned versions of the others (read at mount,
//! charged), and both recovery procedures roll it forward from the data blocks' records
//! exactly as they roll the RAM map forward. A TP written back after the checkpoint may
//! point at a lower page a power cut later damages; recovery never reads such versions.
//!
//! **The partition.** A block is free when it holds no current and no pinned version; the
//! next one opened is the least-worn free block, erased first. When fewer than two blocks
//! are free, `maintain` (run before each host operation, at most one block's units per
//! call) copies the current versions out of the block with the fewest (compaction), so it
//! frees at the next checkpoint; the kernel writes that checkpoint when the partition asks
//! for it (`wants_checkpoint`: a block is held only by pinned versions and fewer than two
//! are free, or the cache is over its budget). A dirty TP that finds no room to be
//! written is kept (a clean one is evicted instead, or the cache grows past its budget by
//! one page, counted) until a checkpoint frees room. The automatic partition size is
//! twice the map's units plus three blocks, plus what one automatic checkpoint interval
//! can write back (4 blocks per die of pages, at most 1/16 of the die): with only the
//! first part, 4 KiB random writes made the partition ask for 3.7× the checkpoints.
//!
//! **Under WAO-GC** (`set_bounded`, a real-time pacing) the store is bounded: partition
//! blocks are erased only by the upkeep step, which keeps one erased and ready (a
//! write-back never erases; with none ready it fails like a full partition and the page
//! stays cached past the budget), `maintain` does one operation per request (that erase,
//! one write-back of a page past the budget, or one compaction copy), and the checkpoint
//! the partition asks for is written in steps beside the writes: the snapshot's directory
//! is pinned when it is encoded (`begin_pin`), beside the committed one's, until it
//! commits (`commit_pin`) or is abandoned (`drop_pin`). The latency bound adds a miss and a
//! write-back per map update and the upkeep step per request (`WaoBounds::with_map`).
//!
//! **Mount.** From the checkpoint the store rebuilds the whole map in RAM for the recovery
//! procedure (the mount's working set, as the recovery's own per-page sequence table is),
//! then keeps as dirty cached TPs those the recovery changed or the checkpoint carried
//! dirty, and the mount writes a checkpoint. A volume is mounted with the map store it was
//! formatted with (the partition's blocks are data blocks without it): the other is
//! refused by key.
//!
//! The reverse map (`p2l`, what GC asks a page's owner) stays in RAM: 4 bytes per physical
//! page. `audit` answers any entry without I/O from the simulator's record of what each
//! TP's flash version holds (`flash`): for `verify` and inspection only, never for the
//! kernel's decisions.

use super::INVALID;
use crate::policy::MetaWriterKind;
use crate::substrate::meta::{writer_for, MetaWriter};
use crate::substrate::{BState, Substrate};
use crate::{Cause, FtlError};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use controller::{MetaTag, OobRecord, PageKind};
use nand::{ErrorModel, Nanos, Storage};

/// Page kind of translation pages in the OOB record.
pub(crate) const MAP_KIND: MetaTag = MetaTag::new(5);

/// No location / no line / no TP.
const NONE: u32 = u32::MAX;
/// `next` of a partition block whose content is unknown (erased before it is opened).
const UNKNOWN: u32 = u32::MAX;

/// Entries per translation page (at most `entries` when it is not 0) and unit slots per
/// partition block for `chip` and a metadata writer of kind `kind` (sizing only; the
/// writer itself is authoritative).
pub(crate) fn shape(chip: &nand::ChipConfig, kind: MetaWriterKind, entries: u32) -> (u32, u32) {
    let geo = chip.geometry;
    let unit = geo.page_size / kind.units_per_page(&geo);
    let slots = (geo.pages_per_block / chip.cell.bits_per_cell()).max(1);
    (per_tp(unit as usize, entries), slots)
}

/// Entries of a translation page in a unit of `unit` bytes, at most `entries` if not 0.
fn per_tp(unit: usize, entries: u32) -> u32 {
    let whole = (unit / 4).max(1) as u32;
    if entries == 0 {
        whole
    } else {
        entries.min(whole)
    }
}

/// One cached translation page.
#[derive(Debug, Clone)]
struct Line {
    /// Its TP (`NONE`: the line is free).
    tp: u32,
    /// Changed since its flash version was written (or the checkpoint carried it dirty).
    dirty: bool,
    /// Clock of its last use (least recently used is evicted).
    used: u64,
    /// Its entries (`per_tp`; past the volume's end `INVALID`).
    entries: Vec<u32>,
}

/// What a checkpoint holds of a paged map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PagedPart {
    /// Entries per TP.
    pub per_tp: u32,
    /// The directory: each TP's location in the partition, or `NONE`.
    pub gtd: Vec<u32>,
    /// Dirty cached TPs: (TP, entries).
    pub dirty: Vec<(u32, Vec<u32>)>,
}

impl PagedPart {
    /// Appends the section to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.per_tp.to_le_bytes());
        out.extend_from_slice(&(self.gtd.len() as u32).to_le_bytes());
        for g in &self.gtd {
            out.extend_from_slice(&g.to_le_bytes());
        }
        out.extend_from_slice(&(self.dirty.len() as u32).to_le_bytes());
        for (tp, e) in &self.dirty {
            out.extend_from_slice(&tp.to_le_bytes());
            for x in e {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }

    /// Parses the section for a volume of `logical` pages; `None` if malformed.
    pub fn decode(r: &mut crate::bytes::Reader, logical: u64) -> Option<Self> {
        let per_tp = r.u32()?;
        if per_tp == 0 {
            return None;
        }
        let ntp = r.u32()? as u64;
        if ntp != logical.div_ceil(per_tp as u64) {
            return None;
        }
        let gtd = (0..ntp).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
        let n = r.u32()? as u64;
        if n > ntp {
            return None;
        }
        let mut dirty = Vec::with_capacity(n as usize);
        let mut seen = vec![false; ntp as usize];
        for _ in 0..n {
            let tp = r.u32()?;
            if tp as u64 >= ntp || seen[tp as usize] {
                return None;
            }
            seen[tp as usize] = true;
            let len = tp_len(per_tp, logical, tp);
            let e = (0..len).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
            dirty.push((tp, e));
        }
        Some(PagedPart { per_tp, gtd, dirty })
    }
}

/// Entries of TP `tp` inside a volume of `logical` pages.
fn tp_len(per_tp: u32, logical: u64, tp: u32) -> u32 {
    (logical - tp as u64 * per_tp as u64).min(per_tp as u64) as u32
}

/// The map while a mount rebuilds it: every entry in RAM.
#[derive(Debug)]
struct Mounting {
    /// The map the recovery procedure builds (from nothing, like a RAM map's: it sets
    /// every entry it takes from the checkpoint).
    all: Vec<u32>,
    /// The map at the checkpoint (its dirty pages and the pinned versions).
    base: Vec<u32>,
    /// Per TP: the checkpoint carried it dirty (its pinned version is older).
    dirty: Vec<bool>,
}

/// The demand-paged map store (see the module docs).
pub(crate) struct PagedMap<S: Storage, M: ErrorModel> {
    writer: Box<dyn MetaWriter<S, M>>,
    /// The partition's blocks (flat indices).
    blocks: Vec<u32>,
    /// Unit slots per partition block.
    slots: u32,
    /// Entries per TP.
    per_tp: u32,
    /// Cached TPs at most (the RAM budget).
    cap: usize,
    logical: u64,
    /// Per TP: location (`block index · slots + slot`) of its current version, or `NONE`.
    gtd: Vec<u32>,
    /// Per TP: the location the committed checkpoint names (pinned), or `NONE`.
    held: Vec<u32>,
    /// While a checkpoint is written in steps: the locations its snapshot names (pinned
    /// too, until it commits or is abandoned).
    held_next: Option<Vec<u32>>,
    /// Per location: the TP whose current version it holds, or `NONE`.
    owner: Vec<u32>,
    /// Per partition block: current versions in it.
    live: Vec<u32>,
    /// Per partition block: pinned versions in it.
    pinned: Vec<u32>,
    /// Per partition block: next slot since its erase (`UNKNOWN`: erase it first).
    next: Vec<u32>,
    /// The partition block being filled.
    open: Option<u32>,
    /// Bounded mode (a real-time pacing): partition blocks are erased only by the upkeep
    /// step, which keeps this one ready for the next write-back; `maintain` does one
    /// step per call.
    bounded: bool,
    /// An erased partition block waiting to be opened (bounded mode).
    ready: Option<u32>,
    lines: Vec<Line>,
    /// Per TP: its line, or `NONE`.
    line_of: Vec<u32>,
    clock: u64,
    /// Simulator bookkeeping (never read by the store's decisions): the entries of every
    /// TP's current flash version, for `audit`.
    flash: Vec<u32>,
    mount: Option<Mounting>,
    /// Scratch unit.
    unit: Vec<u8>,
    /// Times the cache grew past its budget: a dirty TP found no room to be written back,
    /// or a mount recovered more dirty TPs than the budget (written back by `maintain`).
    pub overflows: u64,
}

impl<S: Storage, M: ErrorModel> PagedMap<S, M> {
    /// A store over the partition `blocks` of `sub`'s chip, caching `cap` TPs of at most
    /// `entries` entries (0: a unit's worth), its units written by a `kind` writer.
    pub fn new(
        sub: &Substrate<S, M>,
        kind: MetaWriterKind,
        blocks: Vec<u32>,
        cap: u32,
        entries: u32,
    ) -> Self {
        let writer = writer_for(kind, sub);
        let unit = writer.unit_bytes(sub);
        let slots = writer.slots();
        let n = blocks.len();
        PagedMap {
            writer,
            slots,
            per_tp: per_tp(unit, entries),
            cap: cap.max(1) as usize,
            logical: 0,
            gtd: Vec::new(),
            held: Vec::new(),
            held_next: None,
            owner: vec![NONE; n * slots as usize],
            live: vec![0; n],
            pinned: vec![0; n],
            next: vec![UNKNOWN; n],
            open: None,
            bounded: false,
            ready: None,
            lines: Vec::new(),
            line_of: Vec::new(),
            clock: 0,
            flash: Vec::new(),
            mount: None,
            unit: vec![0; unit],
            overflows: 0,
            blocks,
        }
    }

    fn ntp(&self) -> usize {
        self.logical.div_ceil(self.per_tp as u64) as usize
    }

    fn range(&self, tp: u32) -> core::ops::Range<usize> {
        let a = tp as usize * self.per_tp as usize;
        a..a + tp_len(self.per_tp, self.logical, tp) as usize
    }

    /// Bytes a checkpoint's paged section may take beyond the whole map's 4 bytes per
    /// page, for a volume of `logical` pages (its counts, the directory, each dirty
    /// page's index).
    pub fn section_overhead(&self, logical: u64) -> usize {
        let ntp = logical.div_ceil(self.per_tp as u64) as usize;
        12 + 8 * ntp
    }

    /// The section a checkpoint carries now.
    pub fn part(&self) -> PagedPart {
        let mut dirty: Vec<(u32, Vec<u32>)> = self
            .lines
            .iter()
            .filter(|l| l.tp != NONE && l.dirty)
            .map(|l| {
                let n = tp_len(self.per_tp, self.logical, l.tp) as usize;
                (l.tp, l.entries[..n].to_vec())
            })
            .collect();
        dirty.sort_unstable_by_key(|d| d.0);
        PagedPart {
            per_tp: self.per_tp,
            gtd: self.gtd.clone(),
            dirty,
        }
    }

    /// A checkpoint carrying [`part`](Self::part) committed: the versions its directory
    /// names are pinned until the next one.
    pub fn committed(&mut self) {
        self.held.clone_from(&self.gtd);
        self.held_next = None;
        self.count_pins();
    }

    /// A checkpoint is being written in steps from [`part`](Self::part) as it is now: the
    /// versions its directory names are pinned too until it commits (the committed one's
    /// stay pinned, recovery may still need them).
    pub fn begin_pin(&mut self) {
        self.held_next = Some(self.gtd.clone());
        self.count_pins();
    }

    /// The checkpoint written in steps committed: its directory's pins replace the old.
    pub fn commit_pin(&mut self) {
        if let Some(h) = self.held_next.take() {
            self.held = h;
        }
        self.count_pins();
    }

    /// The checkpoint written in steps was abandoned: only the committed one pins.
    pub fn drop_pin(&mut self) {
        self.held_next = None;
        self.count_pins();
    }

    /// Sets bounded mode (see the field).
    pub fn set_bounded(&mut self, bounded: bool) {
        self.bounded = bounded;
    }

    fn count_pins(&mut self) {
        self.pinned.fill(0);
        for h in core::iter::once(&self.held).chain(self.held_next.as_ref()) {
            for &loc in h {
                if loc != NONE {
                    self.pinned[(loc / self.slots) as usize] += 1;
                }
            }
        }
    }

    // ----- the partition ---------------------------------------------------------------

    fn free_block(&self, sub: &Substrate<S, M>) -> Option<usize> {
        (0..self.blocks.len())
            .filter(|&bi| self.is_free(sub, bi))
            .min_by_key(|&bi| (sub.erase[self.blocks[bi] as usize], bi))
    }

    fn is_free(&self, sub: &Substrate<S, M>, bi: usize) -> bool {
        self.open != Some(bi as u32)
            && self.ready != Some(bi as u32)
            && self.live[bi] == 0
            && self.pinned[bi] == 0
            && sub.state[self.blocks[bi] as usize] == BState::Map
    }

    fn free_blocks(&self, sub: &Substrate<S, M>) -> usize {
        (0..self.blocks.len())
            .filter(|&bi| self.is_free(sub, bi))
            .count()
    }

    /// The next slot to program (opening, after its erase, a free block when the open one
    /// is full); `None` when the partition has no room.
    fn next_loc(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<Option<u32>, FtlError> {
        for _ in 0..=self.blocks.len() {
            if let Some(bi) = self.open {
                let i = bi as usize;
                if sub.state[self.blocks[i] as usize] == BState::Map && self.next[i] < self.slots {
                    return Ok(Some(bi * self.slots + self.next[i]));
                }
                self.open = None;
            }
            if self.bounded {
                // Only the block the upkeep erased: no erase inside a request.
                let Some(bi) = self.ready.take() else {
                    return Ok(None);
                };
                self.open = Some(bi);
                continue;
            }
            let Some(bi) = self.free_block(sub) else {
                return Ok(None);
            };
            // A failed erase marks the block bad: another is tried.
            if sub.erase_block(now, self.blocks[bi], Cause::Meta)? {
                self.next[bi] = 0;
                self.open = Some(bi as u32);
            }
        }
        Ok(None)
    }

    /// Programs `entries` as TP `tp`'s new version. `Ok(false)`: no room.
    fn program_tp(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        tp: u32,
        entries: &[u32],
        compaction: bool,
    ) -> Result<bool, FtlError> {
        for _ in 0..=self.blocks.len() {
            let Some(loc) = self.next_loc(sub, now)? else {
                return Ok(false);
            };
            let (bi, slot) = ((loc / self.slots) as usize, loc % self.slots);
            self.next[bi] = slot + 1;
            self.unit.fill(0xFF);
            for (d, x) in self.unit.chunks_exact_mut(4).zip(entries) {
                d.copy_from_slice(&x.to_le_bytes());
            }
            // (The record's sequence number is the data sequence at the write; recovery
            // does not order by it.)
            let rec = OobRecord::new(tp as u64, sub.seq, PageKind::Meta(MAP_KIND));
            if self
                .writer
                .program(sub, now, self.blocks[bi], slot, &self.unit, rec)?
            {
                let old = self.gtd[tp as usize];
                if old != NONE {
                    self.owner[old as usize] = NONE;
                    self.live[(old / self.slots) as usize] -= 1;
                }
                self.gtd[tp as usize] = loc;
                self.owner[loc as usize] = tp;
                self.live[bi] += 1;
                let r = self.range(tp);
                self.flash[r.clone()].copy_from_slice(&entries[..r.len()]);
                let c = &mut sub.log.counters;
                let n = self.unit.len() as u64;
                c.meta_bytes += n;
                c.meta_programs += 1;
                if compaction {
                    c.meta_bytes_by_kind.pmt_gc += n;
                } else {
                    c.meta_bytes_by_kind.pmt += n;
                }
                return Ok(true);
            }
            // The program failed: the block is retired (never opened again); its other
            // versions stay readable until rewritten.
            self.open = None;
        }
        Ok(false)
    }

    /// Reads TP `tp`'s current version into `out` (its `per_tp` entries), charged to
    /// `cause`.
    fn read_tp(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        tp: u32,
        cause: Cause,
        out: &mut [u32],
    ) -> Result<(), FtlError> {
        let loc = self.gtd[tp as usize];
        if loc == NONE {
            out.fill(INVALID);
            return Ok(());
        }
        let (bi, slot) = ((loc / self.slots) as usize, loc % self.slots);
        let rec = self
            .writer
            .read(sub, now, self.blocks[bi], slot, &mut self.unit, cause)?;
        match rec {
            Some(r) if r.kind == PageKind::Meta(MAP_KIND) && r.lpn == tp as u64 => {
                for (x, c) in out.iter_mut().zip(self.unit.chunks_exact(4)) {
                    *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
                Ok(())
            }
            _ => Err(FtlError::Corrupt(
                "a translation page of the map does not decode",
            )),
        }
    }

    // ----- the cache -------------------------------------------------------------------

    /// Writes line `i` back as its TP's new version. `Ok(false)`: no room.
    fn write_back(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        i: usize,
        compaction: bool,
    ) -> Result<bool, FtlError> {
        let tp = self.lines[i].tp;
        let entries = core::mem::take(&mut self.lines[i].entries);
        let ok = self.program_tp(sub, now, tp, &entries, compaction);
        self.lines[i].entries = entries;
        if ok? {
            self.lines[i].dirty = false;
            return Ok(true);
        }
        Ok(false)
    }

    fn drop_line(&mut self, i: usize) {
        let tp = self.lines[i].tp;
        if tp != NONE {
            self.line_of[tp as usize] = NONE;
        }
        self.lines[i].tp = NONE;
        self.lines[i].dirty = false;
    }

    /// A line to load a TP into: a free one, a new one under the budget, or the least
    /// recently used (written back if dirty; if it cannot be, the least recently used
    /// clean one; if there is none, one past the budget).
    fn free_line(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<usize, FtlError> {
        if let Some(i) = self.lines.iter().position(|l| l.tp == NONE) {
            return Ok(i);
        }
        if self.lines.len() < self.cap {
            self.lines.push(Line {
                tp: NONE,
                dirty: false,
                used: 0,
                entries: vec![INVALID; self.per_tp as usize],
            });
            return Ok(self.lines.len() - 1);
        }
        let lru = (0..self.lines.len())
            .min_by_key(|&i| self.lines[i].used)
            .expect("a full cache has lines");
        if !self.lines[lru].dirty || self.write_back(sub, now, lru, false)? {
            self.drop_line(lru);
            return Ok(lru);
        }
        if let Some(i) = (0..self.lines.len())
            .filter(|&i| !self.lines[i].dirty)
            .min_by_key(|&i| self.lines[i].used)
        {
            self.drop_line(i);
            return Ok(i);
        }
        self.overflows += 1;
        self.lines.push(Line {
            tp: NONE,
            dirty: false,
            used: 0,
            entries: vec![INVALID; self.per_tp as usize],
        });
        Ok(self.lines.len() - 1)
    }

    /// The line holding `tp`, loading it on a miss.
    fn line(&mut self, sub: &mut Substrate<S, M>, now: Nanos, tp: u32) -> Result<usize, FtlError> {
        self.clock += 1;
        let i = self.line_of[tp as usize];
        if i != NONE {
            sub.log.counters.cpmt_hits += 1;
            self.lines[i as usize].used = self.clock;
            return Ok(i as usize);
        }
        sub.log.counters.cpmt_misses += 1;
        let i = self.free_line(sub, now)?;
        let mut entries = core::mem::take(&mut self.lines[i].entries);
        let r = self.read_tp(sub, now, tp, Cause::Meta, &mut entries);
        self.lines[i].entries = entries;
        r?;
        let line = &mut self.lines[i];
        line.tp = tp;
        line.dirty = false;
        line.used = self.clock;
        self.line_of[tp as usize] = i as u32;
        Ok(i)
    }

    // ----- upkeep ------------------------------------------------------------------------

    /// Upkeep before a host operation: pages past the budget written back (while there is
    /// room) and, with fewer than two free partition blocks, current versions copied out
    /// of the block holding the fewest — at most a block's units and the cache's pages;
    /// in bounded mode one operation (see the module docs).
    pub fn maintain(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<(), FtlError> {
        if self.mount.is_some() {
            return Ok(());
        }
        let limit = if self.bounded {
            1
        } else {
            self.lines.len() + self.slots as usize
        };
        for _ in 0..limit {
            if !self.upkeep_op(sub, now)? {
                break;
            }
        }
        Ok(())
    }

    /// One upkeep operation — in bounded mode first an erase of a free block to be the
    /// next one opened, then the write-back of a page past the budget, then one compaction
    /// copy when fewer than two blocks are free. `Ok(false)`: nothing to do, or no room.
    fn upkeep_op(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<bool, FtlError> {
        if self.bounded && self.ready.is_none() {
            if let Some(bi) = self.free_block(sub) {
                if sub.erase_block(now, self.blocks[bi], Cause::Meta)? {
                    self.next[bi] = 0;
                    self.ready = Some(bi as u32);
                }
                return Ok(true);
            }
        }
        if self.lines.len() > self.cap {
            // The least recently used (a free line first) leaves the cache.
            let i = (0..self.lines.len())
                .min_by_key(|&i| (self.lines[i].tp != NONE, self.lines[i].used))
                .expect("lines");
            if self.lines[i].dirty && !self.write_back(sub, now, i, false)? {
                return Ok(false);
            }
            self.drop_line(i);
            self.lines.swap_remove(i);
            if i < self.lines.len() && self.lines[i].tp != NONE {
                self.line_of[self.lines[i].tp as usize] = i as u32;
            }
            return Ok(true);
        }
        if self.free_blocks(sub) >= 2 {
            return Ok(false);
        }
        let Some(v) = (0..self.blocks.len())
            .filter(|&bi| {
                self.open != Some(bi as u32)
                    && self.live[bi] > 0
                    && self.live[bi] < self.slots
                    && sub.state[self.blocks[bi] as usize] == BState::Map
            })
            .min_by_key(|&bi| (self.live[bi], bi))
        else {
            return Ok(false);
        };
        let Some(tp) = (0..self.slots)
            .map(|slot| self.owner[v * self.slots as usize + slot as usize])
            .find(|&tp| tp != NONE)
        else {
            return Ok(false);
        };
        let i = self.line_of[tp as usize];
        if i != NONE {
            return self.write_back(sub, now, i as usize, true);
        }
        let mut tmp = vec![INVALID; self.per_tp as usize];
        self.read_tp(sub, now, tp, Cause::Meta, &mut tmp)?;
        self.program_tp(sub, now, tp, &tmp, true)
    }

    /// Whether a checkpoint would give the partition room: a block held only by pinned
    /// versions while fewer than two are free or the cache is over its budget.
    pub fn wants_checkpoint(&self, sub: &Substrate<S, M>) -> bool {
        if self.mount.is_some() {
            return false;
        }
        let short = self.lines.len() > self.cap || self.free_blocks(sub) < 2;
        short
            && (0..self.blocks.len()).any(|bi| {
                self.open != Some(bi as u32)
                    && self.live[bi] == 0
                    && self.pinned[bi] > 0
                    && sub.state[self.blocks[bi] as usize] == BState::Map
            })
    }

    // ----- mount -------------------------------------------------------------------------

    /// Rebuilds the map a checkpoint names (its dirty TPs, the pinned versions of the
    /// others: each a charged read) for a volume of `logical` pages and enters mount mode
    /// (every entry in RAM until [`settle`](Self::settle)). Returns the map.
    pub fn load_base(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        logical: u64,
        part: &PagedPart,
    ) -> Result<Vec<u32>, FtlError> {
        if part.per_tp != self.per_tp {
            return Err(FtlError::Corrupt(
                "the checkpoint's translation pages are not this configuration's (meta_writer)",
            ));
        }
        self.set_logical(logical);
        let ntp = self.ntp();
        let nloc = self.owner.len() as u32;
        self.owner.fill(NONE);
        for (tp, &loc) in part.gtd.iter().enumerate() {
            if loc != NONE && (loc >= nloc || self.owner[loc as usize] != NONE) {
                return Err(FtlError::Corrupt(
                    "the checkpoint's map directory names a place twice or outside the partition",
                ));
            }
            if loc != NONE {
                self.owner[loc as usize] = tp as u32;
            }
        }
        self.gtd.clone_from(&part.gtd);
        let mut all = vec![INVALID; logical as usize];
        let mut changed = vec![false; ntp];
        for (tp, e) in &part.dirty {
            let r = self.range(*tp);
            all[r].copy_from_slice(e);
            changed[*tp as usize] = true;
        }
        let mut tmp = vec![INVALID; self.per_tp as usize];
        for tp in 0..ntp as u32 {
            if changed[tp as usize] || self.gtd[tp as usize] == NONE {
                continue;
            }
            self.read_tp(sub, now, tp, Cause::Mount, &mut tmp)?;
            let r = self.range(tp);
            let n = r.len();
            all[r].copy_from_slice(&tmp[..n]);
        }
        self.flash.clone_from(&all);
        self.mount = Some(Mounting {
            all: vec![INVALID; logical as usize],
            base: all.clone(),
            dirty: changed,
        });
        Ok(all)
    }

    /// Leaves mount mode: the TPs recovery changed (or the checkpoint carried dirty) become
    /// dirty cached TPs (past the budget if need be: written back by `maintain`), the
    /// others are read on demand from their pinned versions; the partition's blocks are
    /// opened afresh (erased first). The caller writes a checkpoint next.
    pub fn settle(&mut self) {
        let Some(m) = self.mount.take() else {
            return;
        };
        self.lines.clear();
        self.line_of.fill(NONE);
        for tp in 0..self.ntp() as u32 {
            let r = self.range(tp);
            if !m.dirty[tp as usize] && m.all[r.clone()] == m.base[r.clone()] {
                continue;
            }
            let mut entries = vec![INVALID; self.per_tp as usize];
            entries[..r.len()].copy_from_slice(&m.all[r]);
            self.line_of[tp as usize] = self.lines.len() as u32;
            self.lines.push(Line {
                tp,
                dirty: true,
                used: 0,
                entries,
            });
        }
        self.live.fill(0);
        for &loc in &self.gtd {
            if loc != NONE {
                self.live[(loc / self.slots) as usize] += 1;
            }
        }
        self.committed();
        self.next.fill(UNKNOWN);
        self.open = None;
        self.ready = None;
        // Past the budget until `maintain` writes them back (the mount runs it next).
        self.overflows += self.lines.len().saturating_sub(self.cap) as u64;
    }

    fn set_logical(&mut self, logical: u64) {
        self.logical = logical;
        let ntp = self.ntp();
        self.gtd.resize(ntp, NONE);
        self.held.resize(ntp, NONE);
        self.line_of.resize(ntp, NONE);
        self.flash.resize(logical as usize, INVALID);
    }

    // ----- invariants --------------------------------------------------------------------

    /// The store's invariants: directory ↔ owners ↔ counts, lines ↔ their index, the
    /// budget (but counted overflows), no current or pinned version in a free block.
    pub fn verify(&self, sub: &Substrate<S, M>) -> Result<(), String> {
        if self.mount.is_some() {
            return Err("the map store is still in mount mode".into());
        }
        let ntp = self.ntp();
        if self.gtd.len() != ntp || self.held.len() != ntp || self.line_of.len() != ntp {
            return Err(format!(
                "map directory sized for the wrong volume ({ntp} TPs)"
            ));
        }
        let mut live = vec![0u32; self.blocks.len()];
        let mut pinned = vec![0u32; self.blocks.len()];
        for tp in 0..ntp {
            let loc = self.gtd[tp];
            if loc != NONE {
                if self.owner.get(loc as usize) != Some(&(tp as u32)) {
                    return Err(format!("TP {tp} at {loc}, which another owns"));
                }
                live[(loc / self.slots) as usize] += 1;
            }
            for h in core::iter::once(&self.held).chain(self.held_next.as_ref()) {
                if h[tp] != NONE {
                    pinned[(h[tp] / self.slots) as usize] += 1;
                }
            }
        }
        if live != self.live || pinned != self.pinned {
            return Err("map partition counts disagree with the directory".into());
        }
        let owned = self.owner.iter().filter(|&&t| t != NONE).count();
        if owned != self.gtd.iter().filter(|&&l| l != NONE).count() {
            return Err("a map partition slot is owned by no directory entry".into());
        }
        for (bi, &b) in self.blocks.iter().enumerate() {
            let st = sub.state[b as usize];
            if !matches!(st, BState::Map | BState::Bad) {
                return Err(format!("map partition block {b} is {st:?}"));
            }
            if let Some(o) = self.open {
                if o as usize == bi && (self.next[bi] == UNKNOWN || self.next[bi] > self.slots) {
                    return Err(format!("open map block {b} has no write point"));
                }
            }
            if self.ready == Some(bi as u32)
                && (self.next[bi] != 0 || self.live[bi] > 0 || self.pinned[bi] > 0)
            {
                return Err(format!("map block {b}, ready to open, is not empty"));
            }
        }
        if self.lines.len() > self.cap + self.overflows as usize {
            return Err(format!(
                "{} cached TPs for a budget of {}",
                self.lines.len(),
                self.cap
            ));
        }
        for (i, l) in self.lines.iter().enumerate() {
            if l.tp == NONE {
                continue;
            }
            if self.line_of.get(l.tp as usize) != Some(&(i as u32)) {
                return Err(format!("cached TP {} is not indexed", l.tp));
            }
            let r = self.range(l.tp);
            if !l.dirty && l.entries[..r.len()] != self.flash[r] {
                return Err(format!(
                    "clean cached TP {} differs from its flash version",
                    l.tp
                ));
            }
        }
        for (tp, &i) in self.line_of.iter().enumerate() {
            if i != NONE && self.lines.get(i as usize).map(|l| l.tp) != Some(tp as u32) {
                return Err(format!("TP {tp} indexed at a line holding another"));
            }
        }
        Ok(())
    }
}

impl<S: Storage, M: ErrorModel> super::map::MapStore<S, M> for PagedMap<S, M> {
    fn name(&self) -> &'static str {
        "paged"
    }

    fn len(&self) -> u64 {
        self.logical
    }

    fn resize(&mut self, logical: u64) {
        if self.mount.is_some() {
            self.set_logical(logical);
            let ntp = self.ntp();
            if let Some(m) = &mut self.mount {
                m.all.resize(logical as usize, INVALID);
                m.base.resize(logical as usize, INVALID);
                m.dirty.resize(ntp, true);
            }
            return;
        }
        // Lines of TPs past the new end are dropped; entries past it become unmapped.
        let old = self.logical;
        self.set_logical(logical);
        for i in 0..self.lines.len() {
            let tp = self.lines[i].tp;
            if tp == NONE {
                continue;
            }
            if tp as usize >= self.ntp() {
                self.lines[i].tp = NONE;
                self.lines[i].dirty = false;
                continue;
            }
            let n = tp_len(self.per_tp, logical, tp) as usize;
            self.lines[i].entries[n..].fill(INVALID);
        }
        if logical < old {
            self.flash.truncate(logical as usize);
        }
    }

    fn get(&mut self, sub: &mut Substrate<S, M>, now: Nanos, lpn: u64) -> Result<u32, FtlError> {
        if let Some(m) = &self.mount {
            return Ok(m.all[lpn as usize]);
        }
        let tp = (lpn / self.per_tp as u64) as u32;
        let i = self.line(sub, now, tp)?;
        Ok(self.lines[i].entries[(lpn % self.per_tp as u64) as usize])
    }

    fn set(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<(), FtlError> {
        let tp = (lpn / self.per_tp as u64) as u32;
        if let Some(m) = &mut self.mount {
            m.all[lpn as usize] = phys;
            return Ok(());
        }
        let i = self.line(sub, now, tp)?;
        let e = &mut self.lines[i].entries[(lpn % self.per_tp as u64) as usize];
        if *e != phys {
            *e = phys;
            self.lines[i].dirty = true;
        }
        Ok(())
    }

    /// A write's look-up and update: one cache access (one hit or miss counted).
    fn replace(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<u32, FtlError> {
        if let Some(m) = &mut self.mount {
            return Ok(core::mem::replace(&mut m.all[lpn as usize], phys));
        }
        let i = self.line(sub, now, (lpn / self.per_tp as u64) as u32)?;
        let e = &mut self.lines[i].entries[(lpn % self.per_tp as u64) as usize];
        let old = core::mem::replace(e, phys);
        if old != phys {
            self.lines[i].dirty = true;
        }
        Ok(old)
    }

    fn peek(&self, lpn: u64) -> Option<u32> {
        if let Some(m) = &self.mount {
            return m.all.get(lpn as usize).copied();
        }
        let tp = (lpn / self.per_tp as u64) as usize;
        let i = *self.line_of.get(tp)?;
        (i != NONE).then(|| self.lines[i as usize].entries[(lpn % self.per_tp as u64) as usize])
    }

    fn audit(&self, lpn: u64) -> Option<u32> {
        if lpn >= self.logical {
            return None;
        }
        self.peek(lpn)
            .or_else(|| self.flash.get(lpn as usize).copied())
    }

    fn entries(&self) -> Option<&[u32]> {
        None
    }
}
