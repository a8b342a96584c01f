//! Rebuilding the page-level FTL's state after a clean shutdown or a crash.
//!
//! Two procedures behind one [`Recovery`] trait; both start by loading the newest complete
//! checkpoint generation (which gives the volume size, the trim history and, for
//! roll-forward, the map) and both apply versions by sequence number: for every logical
//! page the newest of (data page records, trim-log entries, the checkpoint's knowledge)
//! wins.
//!
//! - [`FullScan`] — DCR's "version-based" baseline: read the OOB record of every page of
//!   every data block (up to each block's first erased page). The checkpoint contributes
//!   only what no page can show: that a logical page was unmapped (trimmed) or lost at the
//!   checkpoint's sequence number.
//! - [`RollForward`] — the page-level form of DCR: start from the checkpoint's map and scan
//!   only the blocks the allocator can have programmed since. The allocator opens free
//!   blocks per die in a fixed order (least erase count, then block index) and blocks freed
//!   after a checkpoint are only reused once erased, so the candidates are: the checkpoint's
//!   open frontier blocks (from their next page); the checkpoint's free blocks, in
//!   allocation order, up to the first one still erased with an unchanged erase count; and
//!   — found as the scan proceeds — every block left without a valid page, which may have
//!   been erased and reused (its first page and erase count tell).
//!
//! That candidate set is complete because a block opened after a checkpoint is never
//! erased before the next one (GC skips such "young" blocks, and writes a checkpoint when
//! nothing else is left): every record newer than the checkpoint is still on the chip, in a
//! candidate block, and every block erased since held only data superseded by such records.
//!
//! Pages that may have been caught by the cut (the last `window + 1` pages before a block's
//! first erased page: the torn page and the lower pages an upper-page cut can scramble)
//! are read in full and their data CRC checked before they may win; OOB records alone
//! decide everywhere else. A half-written block is resumed as a frontier (up to two per
//! die, newest first) only if every page it holds decoded and the pages at its write point
//! verified in full ("clean"); its lower pages written before the cut count as exposed
//! until sealed, so they are protected exactly as before the cut. If its next page turns
//! out not programmable (a program torn to all-ones reads as erased), the program is
//! refused and the block is closed then. Any other half-written block is closed (never
//! programmed again). Blocks found free are erased again before their first use (a torn
//! program or an interrupted erase can look erased) — by a real-time scheme inside the
//! mount, so that no write after it carries the erase beside its GC step (decision 016). Erase counts and bad-block marks come
//! from charged block-header reads (what UBI keeps in its erase-counter headers) or, for
//! blocks roll-forward has no reason to read, from the checkpoint.
//!
//! Reported time is simulated: the per-die sum of array, transfer and decode time of the
//! reads issued and the mount's erases, or the per-channel transfer sum if larger
//! (operations of different dies overlap; those on one die or channel do not).

use super::snapshot::Loaded;
use super::snapshot::{code, Snapshot};
use super::{INVALID, LOST};
pub(crate) use crate::recovery::SEQ_LIMIT;
use crate::recovery::{RecoveryKind, RecoveryReport};
use crate::substrate::Kernel;
use crate::FtlError;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use nand::{BlockStatus, Nanos};

mod rebuild;

/// What a recovery procedure may do to the kernel it rebuilds, instead of writing the
/// kernel's fields: reach the substrate (block table, controller, op log: [`Kernel`]), load
/// the kernel's checkpoint, size the volume, read and set map entries, and rebuild the
/// reverse map and the valid counts from the map. A kernel whose checkpoint is a map
/// snapshot ([`Snapshot`]) gets both procedures by implementing it.
pub(crate) trait Rebuildable: Kernel {
    /// The newest complete checkpoint: its snapshot and trim log.
    fn load_checkpoint(&mut self, now: Nanos) -> Result<Option<Loaded>, FtlError>;
    /// Sizes the volume to `logical` pages (the checkpoint's), keeping mappings found.
    fn resize(&mut self, logical: u64) -> Result<(), FtlError>;
    /// Logical pages.
    fn logical(&self) -> u64;
    /// The map entry of `lpn` (a flat page, `INVALID` or `LOST`).
    fn entry(&self, lpn: u64) -> u32;
    /// Sets the map entry of `lpn` (a map store may write map pages: `now`).
    fn set_entry(&mut self, now: Nanos, lpn: u64, phys: u32) -> Result<(), FtlError>;
    /// Whether a map entry from a checkpoint names a page of the chip (or none).
    fn entry_ok(&self, phys: u32) -> bool;
    /// Rebuilds the reverse map and every block's valid count from the map (a physical page
    /// claimed twice makes the later claimant `LOST`).
    fn rebuild_reverse(&mut self, now: Nanos) -> Result<(), FtlError>;
    /// Records whether `lpn`'s newest version (the one its map entry names) is critical.
    fn set_critical(&mut self, lpn: u64, critical: bool);
    /// Backup copies a critical page keeps (Meta-Cure; 0: none).
    fn replica_limit(&self) -> usize;
    /// Makes `pages` the replicas of `lpn` (version `version`): claimed in the reverse map,
    /// counted valid. After `rebuild_reverse`.
    fn install_replicas(&mut self, lpn: u64, version: u64, pages: Vec<u32>);
    /// The generation of the checkpoint loaded.
    fn checkpoint_gen(&self) -> u64;
}

/// A procedure that rebuilds a kernel's volatile state from its chip.
pub(crate) trait Recovery {
    /// Name in reports.
    fn name(&self) -> &'static str;
    /// Rebuilds `ftl` (built empty over the chip) and reports what it read.
    fn recover<K: Rebuildable>(&self, ftl: &mut K, now: Nanos) -> Result<RecoveryReport, FtlError>;
}

/// Version-based full scan.
#[derive(Debug, Clone, Copy, Default)]
pub struct FullScan;

/// Checkpoint plus deterministic roll-forward (DCR).
#[derive(Debug, Clone, Copy, Default)]
pub struct RollForward;

impl Recovery for FullScan {
    fn name(&self) -> &'static str {
        RecoveryKind::FullScan.name()
    }

    fn recover<K: Rebuildable>(&self, ftl: &mut K, now: Nanos) -> Result<RecoveryReport, FtlError> {
        let mut r = Rebuild::start(ftl, now)?;
        r.full_scan = true;
        let c = r.snap.seq;
        // What only the checkpoint knows: pages unmapped or lost at its sequence number.
        for (lpn, &p) in r.snap.l2p.iter().enumerate() {
            if p == INVALID || p == LOST {
                r.best[lpn] = c.saturating_sub(1);
                ftl.set_entry(now, lpn as u64, p)?;
            }
        }
        r.apply_trims(ftl)?;
        for b in 0..ftl.sub_mut().geo().total_blocks() {
            if ftl.sub_mut().state[b as usize].reserved() {
                continue;
            }
            if r.header(ftl, now, b)?.status == BlockStatus::FactoryBad {
                continue;
            }
            let wp = r.scan_block(ftl, now, b, 0, 0)?;
            if wp == 0 {
                r.free.insert(b);
            }
        }
        r.finish(ftl, now, self.name())
    }
}

impl Recovery for RollForward {
    fn name(&self) -> &'static str {
        RecoveryKind::RollForward.name()
    }

    fn recover<K: Rebuildable>(&self, ftl: &mut K, now: Nanos) -> Result<RecoveryReport, FtlError> {
        let mut r = Rebuild::start(ftl, now)?;
        r.adopt_checkpoint_map(ftl, now)?;
        r.apply_trims(ftl)?;
        let mut work: Vec<u32> = Vec::new();
        for die in 0..ftl.sub().dies.len() {
            r.scan_frontiers(ftl, now, die, &mut work)?;
            r.scan_free_in_order(ftl, now, die)?;
        }
        r.scan_left_region(ftl, now)?;
        r.scan_emptied(ftl, now, work)?;
        r.keep_checkpoint_states(ftl);
        r.finish(ftl, now, self.name())
    }
}

/// Roll-forward's phases, in the order `RollForward::recover` runs them.
impl Rebuild {
    /// Phase 1: the checkpoint's map, valid counts and critical pages, as they were.
    fn adopt_checkpoint_map<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
    ) -> Result<(), FtlError> {
        if self.snap.l2p.iter().any(|&p| !ftl.entry_ok(p)) {
            return Err(FtlError::Corrupt("checkpoint maps outside the chip"));
        }
        let ppb = ftl.sub().ppb();
        for (lpn, &p) in self.snap.l2p.iter().enumerate() {
            ftl.set_entry(now, lpn as u64, p)?;
            if p != INVALID && p != LOST {
                ftl.sub_mut().adopt_valid(p / ppb, true);
            }
            let critical = self.snap.critical[lpn / 64] >> (lpn % 64) & 1 == 1;
            if critical {
                ftl.set_critical(lpn as u64, true);
            }
        }
        Ok(())
    }

    /// Whether block `b`'s erase count moved since the checkpoint: it was erased (and maybe
    /// reused). Its header tells (a charged read).
    fn erased_since<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
    ) -> Result<bool, FtlError> {
        let ec = self.header(ftl, now, b)?.erase_count;
        Ok(ec != self.snap.erase[b as usize])
    }

    /// Phase 2a: die `die`'s checkpoint frontier blocks, from their next page (one erased
    /// since goes to `work`, the blocks phase 4 looks at).
    fn scan_frontiers<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        die: usize,
        work: &mut Vec<u32>,
    ) -> Result<(), FtlError> {
        for s in 0..2 {
            let (b, next) = self.snap.frontiers[die][s];
            if b >= ftl.sub().geo().total_blocks() {
                continue;
            }
            if self.erased_since(ftl, now, b)? {
                work.push(b);
            } else {
                let (ppb, c) = (ftl.sub().ppb(), self.snap.seq);
                self.scan_block(ftl, now, b, next.min(ppb), c)?;
            }
        }
        Ok(())
    }

    /// Phase 2b: die `die`'s checkpoint free blocks, in the order the allocator opens them
    /// (least erase count, then index), up to the first still erased with an unchanged
    /// erase count.
    fn scan_free_in_order<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        die: usize,
    ) -> Result<(), FtlError> {
        let bpd = ftl.sub().blocks_per_die;
        let lo = die as u32 * bpd;
        let mut free: Vec<u32> = (lo..lo + bpd)
            .filter(|&b| self.snap.states[b as usize] == code::FREE)
            .collect();
        free.sort_unstable_by_key(|&b| (self.snap.erase[b as usize], b));
        // A free block the region took since the checkpoint is not the allocator's.
        free.retain(|&b| !ftl.sub().state[b as usize].reserved());
        // (The index serves the sabotage build only.)
        #[cfg_attr(not(feature = "sabotage"), allow(clippy::unused_enumerate_index))]
        for (_i, b) in free.into_iter().enumerate() {
            #[cfg(feature = "sabotage")]
            if _i == 0 && ftl.sub().cfg.sabotage == crate::sabotage::Sabotage::SkipRecoveryBlock {
                continue;
            }
            let moved = self.erased_since(ftl, now, b)?;
            let wp = self.scan_block(ftl, now, b, 0, self.snap.seq)?;
            if wp == 0 {
                self.free.insert(b);
                if !moved {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Phase 3: blocks that left the region since the checkpoint went to the free pool,
    /// and may hold data written since.
    fn scan_left_region<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
    ) -> Result<(), FtlError> {
        for b in self.left_region.clone() {
            if self.header(ftl, now, b)?.status == BlockStatus::FactoryBad {
                continue;
            }
            if self.scan_block(ftl, now, b, 0, self.snap.seq)? == 0 {
                self.free.insert(b);
            }
        }
        Ok(())
    }

    /// Phase 4: blocks left without a valid page (at the checkpoint, or by newer records
    /// as the scans proceed) may have been erased since, and reused: their erase count and
    /// first page tell. `work` holds the frontier blocks found erased.
    fn scan_emptied<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        mut work: Vec<u32>,
    ) -> Result<(), FtlError> {
        let n = ftl.sub().geo().total_blocks();
        work.extend((0..n).filter(|&b| {
            self.snap.states[b as usize] == code::FULL && ftl.sub().valid[b as usize] == 0
        }));
        let mut taken = 0;
        // Bounded: a block is scanned at most once (`scanned`), and only a scan adds to
        // `emptied`.
        loop {
            work.extend(self.emptied[taken..].iter().copied());
            taken = self.emptied.len();
            let Some(b) = work.pop() else { break };
            if self.scanned.contains(&b)
                || !matches!(self.snap.states[b as usize], code::FULL | code::OPEN)
                || !self.erased_since(ftl, now, b)?
            {
                continue;
            }
            if self.scan_block(ftl, now, b, 0, self.snap.seq)? == 0 {
                self.free.insert(b);
            }
        }
        Ok(())
    }

    /// Phase 5: every block no phase read keeps its checkpoint state.
    fn keep_checkpoint_states<K: Rebuildable>(&mut self, ftl: &K) {
        for b in 0..ftl.sub().geo().total_blocks() {
            if self.scanned.contains(&b) || self.free.contains(&b) {
                continue;
            }
            match self.snap.states[b as usize] {
                code::FREE => {
                    self.free.insert(b);
                    self.kept_free.insert(b);
                }
                code::FULL | code::OPEN | code::RETIRING => {
                    self.full.insert(b);
                }
                _ => {}
            }
        }
    }
}

/// Shared state of a rebuild.
struct Rebuild {
    snap: Snapshot,
    trims: Vec<crate::page::trimlog::TrimRange>,
    /// Newest sequence number applied per logical page.
    best: Vec<u64>,
    /// Highest sequence number seen anywhere.
    max_seq: u64,
    scanned: BTreeSet<u32>,
    free: BTreeSet<u32>,
    /// Of `free`: blocks no phase read, free at the checkpoint and kept so (roll-forward's
    /// phase 5; see `adopt_block` for when they are trusted to be erased).
    kept_free: BTreeSet<u32>,
    /// Blocks known to hold programmed pages.
    full: BTreeSet<u32>,
    /// Blocks whose valid count dropped to zero while applying records.
    emptied: Vec<u32>,
    checkpoint_pages: u64,
    pages_scanned: u64,
    page: Vec<u8>,
    /// Half-written blocks: (block, first erased page, sequence number of every page
    /// before it; 0 where unreadable).
    partial: Vec<(u32, u32, Vec<u64>)>,
    /// Blocks holding a record newer than the checkpoint: written since, so not erasable
    /// before the next checkpoint (a later roll-forward from the same checkpoint needs them).
    young: BTreeSet<u32>,
    /// Block headers read so far (each read once, charged).
    headers: BTreeMap<u32, crate::substrate::Header>,
    /// Blocks the checkpoint has in the region that the anchor no longer lists (swapped
    /// out since: free, or reused for data); scanned like data blocks.
    left_region: BTreeSet<u32>,
    /// Time of the mount.
    now: Nanos,
    /// Newest host write or trim since the checkpoint, per logical page: the version its
    /// replicas must copy.
    versions: BTreeMap<u32, u64>,
    /// Replica records found: (flat page, logical page, version's low 32 bits, sequence
    /// number).
    replicas: Vec<(u32, u32, u32, u64)>,
    /// A full scan (every replica is found by reading it; the checkpoint's list is not
    /// needed).
    full_scan: bool,
}

/// A data or replica record a block scan found.
struct Found {
    page: u32,
    lpn: u64,
    seq: u64,
    critical: bool,
    /// Written by the host (not a GC copy).
    user: bool,
    /// A replica of this version (low 32 bits).
    replica_of: Option<u32>,
}
