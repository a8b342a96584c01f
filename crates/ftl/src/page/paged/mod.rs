//! The demand-paged map store (`map_cache_pages` > 0): DFTL's translation pages as a
//! map-store policy of the page kernel (Ref. 001's demand-based page map, here under the
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
//! **SPFTL_log's logs** (`map_log`, Ref. 001 §IV-C, on chips with subpages). A second
//! partition of SP blocks (state `Map`, SLC mode, one subpage partition per erase cycle:
//! the subpage writer's) holds *logs*: a log is one subpage of (index in its TP u16,
//! entry u32) pairs, ascending, after a count, its record naming the TP (kind
//! `MAP_LOG_KIND`); a second directory (the LID) says where each TP's current log is. A
//! TP's flash state is its version with its log applied. Each cached TP knows which
//! entries changed since its flash state and which its log holds; a write-back whose
//! changed and logged entries fit a log (340 on a 2 KiB subpage, and at most half the
//! TP's entries: past that a miss would rather read one unit than two) programs them as
//! the TP's new log — coalesced: the line already holds every logged value, so nothing is
//! read — and otherwise *merges*: the whole TP is written and its log dropped. A miss
//! reads the version and, if it has one, the log (two charged reads; the paper's LID
//! look-up on the critical path). The log partition is compacted like the map partition
//! (a log copied out, or the cached TP's write-back), and compacting the map partition
//! merges a cached TP (an uncached one's version is copied; its log stays valid over it).
//! Checkpoints carry the LID beside the directory and pin both; a mount reads each clean
//! TP's pinned version and log. Firmware choices the paper leaves open: one log per TP
//! (not per log block), the whole TP merged when its log overflows (no partial merge),
//! and the logs' own partition with the map partition's compaction. With subpage
//! translation pages (`meta_writer = "subpage"`) a log is as large as the TP it logs,
//! so it saves nothing: SPFTL_log's logs are for whole-page translation pages.
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
use crate::substrate::meta::writer_for;
use crate::substrate::Substrate;
use crate::{Cause, FtlError};
use alloc::collections::BTreeSet;
use alloc::vec;
use alloc::vec::Vec;
use controller::MetaTag;
use nand::{ErrorModel, Nanos, Storage};
use part::Partition;

mod log;
mod part;
mod store;

pub(crate) use log::PagedPart;

/// Page kind of translation pages in the OOB record.
pub(crate) const MAP_KIND: MetaTag = MetaTag::new(5);
/// Page kind of translation-page logs (`map_log`) in the OOB record.
pub(crate) const MAP_LOG_KIND: MetaTag = MetaTag::new(6);

/// No location / no line / no TP.
const NONE: u32 = u32::MAX;

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

/// Entries of TP `tp` inside a volume of `logical` pages.
fn tp_len(per_tp: u32, logical: u64, tp: u32) -> u32 {
    (logical - tp as u64 * per_tp as u64).min(per_tp as u64) as u32
}

/// A bit set over a TP's entries.
type Bits = Vec<u64>;

fn bit(b: &Bits, i: usize) -> bool {
    b[i / 64] >> (i % 64) & 1 == 1
}

fn set_bit(b: &mut Bits, i: usize) {
    b[i / 64] |= 1 << (i % 64);
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
    /// With logs: the entries changed since the TP's flash state (its version and log).
    changed: Bits,
    /// With logs: the entries its current log holds.
    logged: Bits,
}

/// The map while a mount rebuilds it: every entry in RAM.
#[derive(Debug)]
struct Mounting {
    /// The map the recovery procedure builds (from nothing, like a RAM map's: it sets
    /// every entry it takes from the checkpoint).
    all: Vec<u32>,
    /// The map at the checkpoint (its dirty pages and the pinned versions and logs).
    base: Vec<u32>,
    /// Per TP: the checkpoint carried it dirty (its pinned version is older).
    dirty: Vec<bool>,
}

/// The demand-paged map store (see the module docs).
pub(crate) struct PagedMap<S: Storage, M: ErrorModel> {
    /// The map partition: every TP's current version.
    tps: Partition<S, M>,
    /// With `map_log`: the log partition (SP blocks), every TP's current log.
    logs: Option<Partition<S, M>>,
    /// Entries per TP.
    per_tp: u32,
    /// Entries a log holds.
    log_cap: usize,
    /// Cached TPs at most (the RAM budget).
    cap: usize,
    logical: u64,
    lines: Vec<Line>,
    /// The occupied lines by last use, `(used, line)`: the least recently used first (ties,
    /// as after a mount, by line index) — an eviction costs no scan of the cache.
    lru: BTreeSet<(u64, u32)>,
    /// Per TP: its line, or `NONE`.
    line_of: Vec<u32>,
    clock: u64,
    /// Simulator bookkeeping (never read by the store's decisions): the entries of every
    /// TP's current flash state (its version with its log applied), for `audit`.
    flash: Vec<u32>,
    mount: Option<Mounting>,
    /// Scratch entries.
    tmp: Vec<u32>,
    /// Times the cache grew past its budget: a dirty TP found no room to be written back,
    /// or a mount recovered more dirty TPs than the budget (written back by `maintain`).
    pub overflows: u64,
}

impl<S: Storage, M: ErrorModel> PagedMap<S, M> {
    /// A store over the partition `blocks` of `sub`'s chip, caching `cap` TPs of at most
    /// `entries` entries (0: a unit's worth), its units written by a `kind` writer; with
    /// `log_blocks`, SPFTL_log's logs in them (subpage units).
    pub fn new(
        sub: &Substrate<S, M>,
        kind: MetaWriterKind,
        blocks: Vec<u32>,
        log_blocks: Option<Vec<u32>>,
        cap: u32,
        entries: u32,
    ) -> Self {
        let tps = Partition::new(sub, writer_for(kind, sub), MAP_KIND, "map", blocks);
        let per_tp = per_tp(tps.unit.len(), entries);
        let logs = log_blocks.map(|b| {
            Partition::new(
                sub,
                writer_for(MetaWriterKind::Subpage, sub),
                MAP_LOG_KIND,
                "map log",
                b,
            )
        });
        // A log holds at most half its TP's entries: past that the TP is merged (a miss
        // then reads one unit, not two).
        let log_cap = logs
            .as_ref()
            .map_or(0, |l| log::capacity(l.unit.len()).min(per_tp as usize / 2));
        PagedMap {
            tps,
            logs,
            per_tp,
            log_cap,
            cap: cap.max(1) as usize,
            logical: 0,
            lines: Vec::new(),
            lru: BTreeSet::new(),
            line_of: Vec::new(),
            clock: 0,
            flash: Vec::new(),
            mount: None,
            tmp: vec![INVALID; per_tp as usize],
            overflows: 0,
        }
    }

    /// Whether updates are logged (`map_log`): a miss then reads a log too.
    pub fn has_logs(&self) -> bool {
        self.logs.is_some()
    }

    fn ntp(&self) -> usize {
        self.logical.div_ceil(self.per_tp as u64) as usize
    }

    fn range(&self, tp: u32) -> core::ops::Range<usize> {
        let a = tp as usize * self.per_tp as usize;
        a..a + tp_len(self.per_tp, self.logical, tp) as usize
    }

    fn parts(&mut self) -> impl Iterator<Item = &mut Partition<S, M>> {
        core::iter::once(&mut self.tps).chain(self.logs.as_mut())
    }

    /// Bytes a checkpoint's paged section may take beyond the whole map's 4 bytes per
    /// page, for a volume of `logical` pages (its counts, the directories, each dirty
    /// page's index).
    pub fn section_overhead(&self, logical: u64) -> usize {
        let ntp = logical.div_ceil(self.per_tp as u64) as usize;
        16 + 12 * ntp
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
            gtd: self.tps.dir.clone(),
            lid: self.logs.as_ref().map_or(Vec::new(), |l| l.dir.clone()),
            dirty,
        }
    }

    /// A checkpoint carrying [`part`](Self::part) committed: the units its directories
    /// name are pinned until the next one.
    pub fn committed(&mut self, sub: &Substrate<S, M>) {
        self.parts().for_each(|p| p.committed(sub));
    }

    /// A checkpoint is being written in steps from [`part`](Self::part) as it is now: the
    /// units its directories name are pinned too until it commits (the committed one's
    /// stay pinned, recovery may still need them).
    pub fn begin_pin(&mut self, sub: &Substrate<S, M>) {
        self.parts().for_each(|p| p.begin_pin(sub));
    }

    /// The checkpoint written in steps committed: its directories' pins replace the old.
    pub fn commit_pin(&mut self, sub: &Substrate<S, M>) {
        self.parts().for_each(|p| p.commit_pin(sub));
    }

    /// The checkpoint written in steps was abandoned: only the committed one pins.
    pub fn drop_pin(&mut self, sub: &Substrate<S, M>) {
        self.parts().for_each(|p| p.drop_pin(sub));
    }

    /// Sets bounded mode: partition blocks are erased only by the upkeep step, which
    /// keeps one ready; `maintain` does one step per call.
    pub fn set_bounded(&mut self, bounded: bool) {
        self.parts().for_each(|p| p.bounded = bounded);
    }

    // ----- units -------------------------------------------------------------------------

    /// Reads TP `tp`'s flash state into `out` (its version, then its log applied: each a
    /// charged read to `cause`), at the directories' locations `loc` and `lid`; returns
    /// the entries the log held (`logged`, if given, gets their bits).
    #[allow(clippy::too_many_arguments)]
    fn read_state(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        tp: u32,
        (loc, lid): (u32, u32),
        cause: Cause,
        out: &mut [u32],
        mut logged: Option<&mut Bits>,
    ) -> Result<(), FtlError> {
        if loc == NONE {
            out.fill(INVALID);
        } else {
            self.tps.read_at(sub, now, tp, loc, cause)?;
            for (x, c) in out.iter_mut().zip(self.tps.unit.chunks_exact(4)) {
                *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        if let (Some(logs), true) = (&mut self.logs, lid != NONE) {
            logs.read_at(sub, now, tp, lid, cause)?;
            let n = tp_len(self.per_tp, self.logical, tp);
            let entries = log::decode(&logs.unit, n, self.log_cap)
                .ok_or(FtlError::Corrupt("a translation page's log does not parse"))?;
            for (i, v) in entries {
                out[i as usize] = v;
                if let Some(b) = logged.as_deref_mut() {
                    set_bit(b, i as usize);
                }
            }
        }
        Ok(())
    }

    /// TP `tp`'s current directory locations (version, log).
    fn locs(&self, tp: u32) -> (u32, u32) {
        let lid = self.logs.as_ref().map_or(NONE, |l| l.dir[tp as usize]);
        (self.tps.dir[tp as usize], lid)
    }

    /// Counts a write-back's or a compaction copy's bytes.
    fn count_bytes(sub: &mut Substrate<S, M>, n: usize, compaction: bool) {
        let k = &mut sub.counters_mut().meta_bytes_by_kind;
        if compaction {
            k.pmt_gc += n as u64;
        } else {
            k.pmt += n as u64;
        }
    }

    // ----- the cache -------------------------------------------------------------------

    /// Writes line `i` back: as a log (with `map_log`, unless `merge`, when its changed
    /// and logged entries fit one), else as the TP's new version (its log dropped).
    /// `Ok(false)`: no room.
    fn write_back(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        i: usize,
        merge: bool,
        compaction: bool,
    ) -> Result<bool, FtlError> {
        let tp = self.lines[i].tp;
        let r = self.range(tp);
        let line = &mut self.lines[i];
        if let (Some(logs), false) = (&mut self.logs, merge) {
            let keys = (0..r.len()).filter(|&e| bit(&line.changed, e) || bit(&line.logged, e));
            if keys.clone().count() <= self.log_cap {
                log::encode(&mut logs.unit, keys.map(|e| (e as u16, line.entries[e])));
                if logs.program(sub, now, tp)? {
                    Self::count_bytes(sub, logs.unit.len(), compaction);
                    for (l, c) in line.logged.iter_mut().zip(&mut line.changed) {
                        *l |= core::mem::take(c);
                    }
                    line.dirty = false;
                    self.flash[r.clone()].copy_from_slice(&line.entries[..r.len()]);
                    return Ok(true);
                }
                // No room for a log: the whole page goes instead.
            }
            // The log outgrew its subpage (or found no room): merged.
            sub.counters_mut().log_merges += 1;
        }
        let unit = &mut self.tps.unit;
        unit.fill(0xFF);
        for (d, x) in unit.chunks_exact_mut(4).zip(&line.entries) {
            d.copy_from_slice(&x.to_le_bytes());
        }
        if !self.tps.program(sub, now, tp)? {
            return Ok(false);
        }
        Self::count_bytes(sub, self.tps.unit.len(), compaction);
        if let Some(logs) = &mut self.logs {
            logs.release(sub, tp);
        }
        line.changed.fill(0);
        line.logged.fill(0);
        line.dirty = false;
        self.flash[r.clone()].copy_from_slice(&line.entries[..r.len()]);
        Ok(true)
    }

    fn drop_line(&mut self, i: usize) {
        let tp = self.lines[i].tp;
        if tp != NONE {
            self.line_of[tp as usize] = NONE;
            self.lru.remove(&(self.lines[i].used, i as u32));
        }
        self.lines[i].tp = NONE;
        self.lines[i].dirty = false;
    }

    fn new_line(&mut self) -> usize {
        let words = (self.per_tp as usize).div_ceil(64);
        self.lines.push(Line {
            tp: NONE,
            dirty: false,
            used: 0,
            entries: vec![INVALID; self.per_tp as usize],
            changed: vec![0; words],
            logged: vec![0; words],
        });
        self.lines.len() - 1
    }

    /// A line to load a TP into: a free one, a new one under the budget, or the least
    /// recently used (written back if dirty; if it cannot be, the least recently used
    /// clean one; if there is none, one past the budget).
    fn free_line(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<usize, FtlError> {
        if self.lru.len() < self.lines.len() {
            // A free line (the first).
            if let Some(i) = self.lines.iter().position(|l| l.tp == NONE) {
                return Ok(i);
            }
        }
        if self.lines.len() < self.cap {
            return Ok(self.new_line());
        }
        let lru = self.lru.first().expect("a full cache has lines").1 as usize;
        if !self.lines[lru].dirty || self.write_back(sub, now, lru, false, false)? {
            self.drop_line(lru);
            return Ok(lru);
        }
        if let Some(&(_, i)) = self
            .lru
            .iter()
            .find(|&&(_, i)| !self.lines[i as usize].dirty)
        {
            self.drop_line(i as usize);
            return Ok(i as usize);
        }
        self.overflows += 1;
        Ok(self.new_line())
    }

    /// The line holding `tp`, loading it on a miss.
    fn line(&mut self, sub: &mut Substrate<S, M>, now: Nanos, tp: u32) -> Result<usize, FtlError> {
        self.clock += 1;
        let i = self.line_of[tp as usize];
        if i != NONE {
            sub.counters_mut().cpmt_hits += 1;
            let used = core::mem::replace(&mut self.lines[i as usize].used, self.clock);
            self.lru.remove(&(used, i));
            self.lru.insert((self.clock, i));
            return Ok(i as usize);
        }
        sub.counters_mut().cpmt_misses += 1;
        let i = self.free_line(sub, now)?;
        let mut entries = core::mem::take(&mut self.lines[i].entries);
        let mut logged = core::mem::take(&mut self.lines[i].logged);
        logged.fill(0);
        let locs = self.locs(tp);
        let r = self.read_state(
            sub,
            now,
            tp,
            locs,
            Cause::Meta,
            &mut entries,
            Some(&mut logged),
        );
        let line = &mut self.lines[i];
        line.entries = entries;
        line.logged = logged;
        r?;
        line.tp = tp;
        line.dirty = false;
        line.changed.fill(0);
        line.used = self.clock;
        self.line_of[tp as usize] = i as u32;
        self.lru.insert((self.clock, i as u32));
        Ok(i)
    }

    /// Sets entry `lpn` of its (cached) line `i` to `phys`; returns the old value.
    fn put(&mut self, i: usize, lpn: u64, phys: u32) -> u32 {
        let e = (lpn % self.per_tp as u64) as usize;
        let line = &mut self.lines[i];
        let old = core::mem::replace(&mut line.entries[e], phys);
        if old != phys {
            line.dirty = true;
            set_bit(&mut line.changed, e);
        }
        old
    }

    // ----- upkeep ------------------------------------------------------------------------

    /// Upkeep before a host operation: pages past the budget written back (while there is
    /// room) and, with fewer than two free blocks in a partition, current units copied out
    /// of its block holding the fewest — at most a block's units and the cache's pages;
    /// in bounded mode one operation (see the module docs).
    pub fn maintain(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<(), FtlError> {
        if self.mount.is_some() {
            return Ok(());
        }
        let bounded = self.tps.bounded;
        let limit = if bounded {
            1
        } else {
            self.lines.len() + self.tps.slots as usize * (1 + self.logs.is_some() as usize)
        };
        for _ in 0..limit {
            if !self.upkeep_op(sub, now)? {
                break;
            }
        }
        Ok(())
    }

    /// One upkeep operation — in bounded mode first an erase of a free block to be the
    /// next one opened (the map partition's, then the log partition's), then the
    /// write-back of a page past the budget, then one compaction copy when fewer than two
    /// blocks of a partition are free. `Ok(false)`: nothing to do, or no room.
    fn upkeep_op(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<bool, FtlError> {
        for p in self.parts() {
            if p.prepare(sub, now)? {
                return Ok(true);
            }
        }
        if self.lines.len() > self.cap {
            // The least recently used (a free line first) leaves the cache.
            let i = (0..self.lines.len())
                .min_by_key(|&i| (self.lines[i].tp != NONE, self.lines[i].used))
                .expect("lines");
            if self.lines[i].dirty && !self.write_back(sub, now, i, false, false)? {
                return Ok(false);
            }
            self.drop_line(i);
            self.lines.swap_remove(i);
            if i < self.lines.len() && self.lines[i].tp != NONE {
                // The last line moved to `i`.
                let used = self.lines[i].used;
                self.lru.remove(&(used, self.lines.len() as u32));
                self.lru.insert((used, i as u32));
                self.line_of[self.lines[i].tp as usize] = i as u32;
            }
            return Ok(true);
        }
        if let Some(tp) = self.tps.compaction_victim(sub) {
            // A cached TP is written whole (merged with its log); another's version is
            // copied as it is (its log stays valid over it).
            let i = self.line_of[tp as usize];
            if i != NONE {
                return self.write_back(sub, now, i as usize, true, true);
            }
            let loc = self.tps.dir[tp as usize];
            self.tps.read_at(sub, now, tp, loc, Cause::Meta)?;
            let ok = self.tps.program(sub, now, tp)?;
            if ok {
                Self::count_bytes(sub, self.tps.unit.len(), true);
            }
            return Ok(ok);
        }
        let Some(logs) = &mut self.logs else {
            return Ok(false);
        };
        let Some(tp) = logs.compaction_victim(sub) else {
            return Ok(false);
        };
        let i = self.line_of[tp as usize];
        if i != NONE {
            return self.write_back(sub, now, i as usize, false, true);
        }
        let lid = logs.dir[tp as usize];
        logs.read_at(sub, now, tp, lid, Cause::Meta)?;
        let ok = logs.program(sub, now, tp)?;
        if ok {
            Self::count_bytes(sub, logs.unit.len(), true);
        }
        Ok(ok)
    }

    /// Whether a checkpoint would give a partition room: a block held only by pinned
    /// units while fewer than two are free or the cache is over its budget.
    pub fn wants_checkpoint(&self, sub: &Substrate<S, M>) -> bool {
        if self.mount.is_some() {
            return false;
        }
        let short = self.lines.len() > self.cap;
        self.tps.wants_checkpoint(sub, short)
            || self
                .logs
                .as_ref()
                .is_some_and(|l| l.wants_checkpoint(sub, short))
    }

    // ----- mount -------------------------------------------------------------------------

    /// Rebuilds the map a checkpoint names (its dirty TPs, the pinned versions and logs of
    /// the others: each a charged read) for a volume of `logical` pages and enters mount
    /// mode (every entry in RAM until [`settle`](Self::settle)). Returns the map.
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
        if part.lid.is_empty() != self.logs.is_none() {
            return Err(FtlError::Config(if self.logs.is_some() {
                "the volume's demand-paged map has no logs: mount it with map_log = false".into()
            } else {
                "the volume's demand-paged map logs its updates: mount it with map_log = true"
                    .into()
            }));
        }
        self.set_logical(logical);
        let ntp = self.ntp();
        self.tps.load_dir(&part.gtd)?;
        if let Some(logs) = &mut self.logs {
            logs.load_dir(&part.lid)?;
        }
        let mut all = vec![INVALID; logical as usize];
        let mut changed = vec![false; ntp];
        for (tp, e) in &part.dirty {
            let r = self.range(*tp);
            all[r].copy_from_slice(e);
            changed[*tp as usize] = true;
        }
        let mut tmp = core::mem::take(&mut self.tmp);
        for tp in 0..ntp as u32 {
            if changed[tp as usize] {
                continue;
            }
            let locs = self.locs(tp);
            if let Err(e) = self.read_state(sub, now, tp, locs, Cause::Mount, &mut tmp, None) {
                self.tmp = tmp;
                return Err(e);
            }
            let r = self.range(tp);
            let n = r.len();
            all[r].copy_from_slice(&tmp[..n]);
        }
        self.tmp = tmp;
        self.flash.clone_from(&all);
        self.mount = Some(Mounting {
            all: vec![INVALID; logical as usize],
            base: all.clone(),
            dirty: changed,
        });
        Ok(all)
    }

    /// Leaves mount mode: the TPs recovery changed (or the checkpoint carried dirty) become
    /// dirty cached TPs, every entry changed (past the budget if need be: written back by
    /// `maintain`), the others are read on demand from their pinned versions and logs; the
    /// partitions' blocks are opened afresh (erased first). The caller writes a checkpoint
    /// next.
    pub fn settle(&mut self, sub: &Substrate<S, M>) {
        let Some(m) = self.mount.take() else {
            return;
        };
        self.lines.clear();
        self.lru.clear();
        self.line_of.fill(NONE);
        for tp in 0..self.ntp() as u32 {
            let r = self.range(tp);
            if !m.dirty[tp as usize] && m.all[r.clone()] == m.base[r.clone()] {
                continue;
            }
            let i = self.new_line();
            let line = &mut self.lines[i];
            line.tp = tp;
            line.dirty = true;
            for e in 0..r.len() {
                set_bit(&mut line.changed, e);
            }
            line.entries[..r.len()].copy_from_slice(&m.all[r]);
            self.line_of[tp as usize] = i as u32;
            self.lru.insert((line.used, i as u32));
        }
        self.parts().for_each(|p| p.settle(sub));
        // Past the budget until `maintain` writes them back (the mount runs it next).
        self.overflows += self.lines.len().saturating_sub(self.cap) as u64;
    }

    fn set_logical(&mut self, logical: u64) {
        self.logical = logical;
        let ntp = self.ntp();
        self.parts().for_each(|p| p.resize(ntp));
        self.line_of.resize(ntp, NONE);
        self.flash.resize(logical as usize, INVALID);
    }
}
