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
//! program or an interrupted erase can look erased). Erase counts and bad-block marks come
//! from charged block-header reads (what UBI keeps in its erase-counter headers) or, for
//! blocks roll-forward has no reason to read, from the checkpoint.
//!
//! Reported time is simulated: the per-die sum of array, transfer and decode time of the
//! reads issued, or the per-channel transfer sum if larger (reads of different dies
//! overlap; those on one die or channel do not).

use super::snapshot::Loaded;
use super::snapshot::{code, Snapshot};
use super::{INVALID, LOST};
use crate::substrate::Kernel;
use crate::substrate::{BState, Frontier};
use crate::{Cause, FtlError, OpKind};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;
use controller::{CtlError, PageKind, PageRead};
use core::cmp::Reverse;
use nand::{BlockInfo, BlockStatus, Nanos};
use serde::{Deserialize, Serialize};

/// Sequence numbers above this are never written; a chip that holds one is rejected at mount.
pub const SEQ_LIMIT: u64 = 1 << 62;

/// Which recovery procedure a mount runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryKind {
    /// Read every page's OOB record.
    #[serde(alias = "full_scan", alias = "version-based")]
    FullScan,
    /// Checkpoint plus the blocks opened since.
    #[default]
    #[serde(alias = "roll_forward", alias = "dcr")]
    RollForward,
}

impl RecoveryKind {
    /// Name in reports, files and on the command line (`--recovery full-scan`); the
    /// snake-case spellings are accepted in files too.
    pub const fn name(self) -> &'static str {
        match self {
            RecoveryKind::FullScan => "full-scan",
            RecoveryKind::RollForward => "roll-forward",
        }
    }
}

/// What a mount did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Procedure name.
    pub procedure: alloc::string::String,
    /// Checkpoint generation loaded (0: none found).
    pub checkpoint_gen: u64,
    /// Checkpoint-region pages read.
    pub checkpoint_pages: u64,
    /// Data blocks whose pages were read.
    pub blocks_scanned: u64,
    /// Data-block pages read (OOB records and verification reads).
    pub pages_scanned: u64,
    /// All page reads.
    pub pages_read: u64,
    /// Simulated recovery time.
    pub time: Nanos,
    /// Logical pages mapped after recovery.
    pub mapped_pages: u64,
}

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
        for b in 0..ftl.sub_mut().geo.total_blocks() {
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
        if r.snap.l2p.iter().any(|&p| !ftl.entry_ok(p)) {
            return Err(FtlError::Corrupt("checkpoint maps outside the chip"));
        }
        let c = r.snap.seq;
        let ppb = ftl.sub().ppb;
        for (lpn, &p) in r.snap.l2p.iter().enumerate() {
            ftl.set_entry(now, lpn as u64, p)?;
            if p != INVALID && p != LOST {
                ftl.sub_mut().valid[(p / ppb) as usize] += 1;
            }
            let critical = r.snap.critical[lpn / 64] >> (lpn % 64) & 1 == 1;
            if critical {
                ftl.set_critical(lpn as u64, true);
            }
        }
        r.apply_trims(ftl)?;
        let ndies = ftl.sub_mut().dies.len();
        let bpd = ftl.sub_mut().blocks_per_die;
        let mut work: Vec<u32> = Vec::new();
        // Blocks whose erase count moved since the checkpoint were erased (and maybe reused):
        // their headers tell (a charged read each).
        let erased_since = |ftl: &mut K, r: &mut Rebuild, b: u32| {
            let ec = r.header(ftl, now, b)?.erase_count;
            Ok::<bool, FtlError>(ec != r.snap.erase[b as usize])
        };
        for die in 0..ndies {
            // The checkpoint's frontier blocks, from their next page.
            for s in 0..2 {
                let (b, next) = r.snap.frontiers[die][s];
                if b >= ftl.sub_mut().geo.total_blocks() {
                    continue;
                }
                if erased_since(ftl, &mut r, b)? {
                    work.push(b);
                } else {
                    let ppb = ftl.sub().ppb;
                    r.scan_block(ftl, now, b, next.min(ppb), c)?;
                }
            }
            // The checkpoint's free blocks, in the order the allocator opens them.
            let lo = die as u32 * bpd;
            let mut free: Vec<u32> = (lo..lo + bpd)
                .filter(|&b| r.snap.states[b as usize] == code::FREE)
                .collect();
            free.sort_unstable_by_key(|&b| (r.snap.erase[b as usize], b));
            // A free block the region took since the checkpoint is not the allocator's.
            free.retain(|&b| !ftl.sub().state[b as usize].reserved());
            // (The index serves the sabotage build only.)
            #[cfg_attr(not(feature = "sabotage"), allow(clippy::unused_enumerate_index))]
            for (_i, b) in free.into_iter().enumerate() {
                #[cfg(feature = "sabotage")]
                if _i == 0 && ftl.sub().cfg.sabotage == crate::sabotage::Sabotage::SkipRecoveryBlock
                {
                    continue;
                }
                let moved = erased_since(ftl, &mut r, b)?;
                let wp = r.scan_block(ftl, now, b, 0, c)?;
                if wp == 0 {
                    r.free.insert(b);
                    if !moved {
                        break;
                    }
                }
            }
        }
        // Blocks that left the region since the checkpoint went to the free pool, and may
        // hold data written since.
        for b in r.left_region.clone() {
            if r.header(ftl, now, b)?.status == BlockStatus::FactoryBad {
                continue;
            }
            if r.scan_block(ftl, now, b, 0, c)? == 0 {
                r.free.insert(b);
            }
        }
        // Blocks left without a valid page (at the checkpoint, or by newer records) may
        // have been erased since, and reused: their erase count and first page tell.
        work.extend((0..ftl.sub_mut().geo.total_blocks()).filter(|&b| {
            r.snap.states[b as usize] == code::FULL && ftl.sub_mut().valid[b as usize] == 0
        }));
        let mut taken = 0;
        loop {
            work.extend(r.emptied[taken..].iter().copied());
            taken = r.emptied.len();
            let Some(b) = work.pop() else { break };
            if r.scanned.contains(&b)
                || !matches!(r.snap.states[b as usize], code::FULL | code::OPEN)
                || !erased_since(ftl, &mut r, b)?
            {
                continue;
            }
            if r.scan_block(ftl, now, b, 0, c)? == 0 {
                r.free.insert(b);
            }
        }
        // Every other block keeps its checkpoint state.
        for b in 0..ftl.sub_mut().geo.total_blocks() {
            if r.scanned.contains(&b) || r.free.contains(&b) {
                continue;
            }
            match r.snap.states[b as usize] {
                code::FREE => {
                    r.free.insert(b);
                }
                code::FULL | code::OPEN | code::RETIRING => {
                    r.full.insert(b);
                }
                _ => {}
            }
        }
        r.finish(ftl, now, self.name())
    }
}

/// Shared state of a rebuild.
struct Rebuild {
    snap: Snapshot,
    trims: Vec<(u32, u64)>,
    /// Newest sequence number applied per logical page.
    best: Vec<u64>,
    /// Highest sequence number seen anywhere.
    max_seq: u64,
    scanned: BTreeSet<u32>,
    free: BTreeSet<u32>,
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
    headers: BTreeMap<u32, BlockInfo>,
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

impl Rebuild {
    fn start<K: Rebuildable>(ftl: &mut K, now: Nanos) -> Result<Self, FtlError> {
        // Block modes are learnt from the headers recovery reads; the rest are set when
        // a block is next opened.
        ftl.sub_mut().slc.fill(None);
        let Some((snap, trims)) = ftl.load_checkpoint(now)? else {
            return Err(FtlError::Corrupt(
                "no valid checkpoint in the region: not a formatted nandlab volume",
            ));
        };
        let checkpoint_pages = ftl.sub_mut().log.ops.len() as u64;
        if snap.logical == 0 || snap.logical >= ftl.sub_mut().geo.total_pages() {
            return Err(FtlError::Corrupt("checkpoint volume size out of range"));
        }
        if snap.erase.len() != ftl.sub_mut().state.len()
            || snap.frontiers.len() != ftl.sub_mut().dies.len()
        {
            return Err(FtlError::Corrupt("checkpoint does not match the geometry"));
        }
        // Blocks in use at the checkpoint in SLC mode (the flush buffer's): known without
        // a header read (a block erased and reopened since has its header read anyway).
        for (b, &slc) in snap.slc.iter().enumerate() {
            if slc
                && !ftl.sub().state[b].reserved()
                && matches!(snap.states[b], code::FULL | code::OPEN | code::RETIRING)
            {
                ftl.sub_mut().slc[b] = Some(true);
            }
        }
        // Region blocks the checkpoint knows as bad stay bad.
        for (b, &st) in snap.states.iter().enumerate() {
            if ftl.sub_mut().state[b].reserved() && st == code::BAD {
                ftl.sub_mut().state[b] = BState::Bad;
            }
        }
        ftl.resize(snap.logical)?;
        let logical = ftl.logical() as usize;
        if snap.l2p.len() != logical {
            return Err(FtlError::Corrupt("checkpoint map size mismatch"));
        }
        let max_seq = snap.seq.max(
            trims
                .iter()
                .map(|t| t.1.saturating_add(1))
                .max()
                .unwrap_or(0),
        );
        let page = vec![
            0u8;
            if ftl.sub_mut().digest {
                0
            } else {
                ftl.sub_mut().geo.page_size as usize
            }
        ];
        let left_region = snap
            .states
            .iter()
            .enumerate()
            .filter(|&(b, &st)| st == code::REGION && !ftl.sub().state[b].reserved())
            .map(|(b, _)| b as u32)
            .collect();
        Ok(Rebuild {
            left_region,
            trims,
            best: vec![0; logical],
            max_seq,
            snap,
            scanned: BTreeSet::new(),
            free: BTreeSet::new(),
            full: BTreeSet::new(),
            emptied: Vec::new(),
            checkpoint_pages,
            pages_scanned: 0,
            page,
            partial: Vec::new(),
            young: BTreeSet::new(),
            headers: BTreeMap::new(),
            versions: BTreeMap::new(),
            replicas: Vec::new(),
            full_scan: false,
            now,
        })
    }

    /// Block `b`'s header (bad-block marker, erase counter): read from the chip once, as a
    /// charged read, then remembered.
    fn header<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
    ) -> Result<BlockInfo, FtlError> {
        if let Some(h) = self.headers.get(&b) {
            return Ok(*h);
        }
        let h = ftl.sub_mut().read_header(now, b, Cause::Mount)?;
        if !ftl.sub().state[b as usize].reserved() {
            ftl.sub_mut().slc[b as usize] = Some(h.slc_mode && ftl.sub().window > 0);
        }
        // A block leaves the factory bad or good, never turns factory-bad later: a record
        // saying so of a block the checkpoint has in use (free, open, full, retiring) is a
        // damaged block table. Both procedures report it rather than skip the block (a full
        // scan would otherwise serve older versions of its pages, or zeros).
        let in_use = matches!(
            self.snap.states.get(b as usize),
            Some(&(code::FREE | code::FULL | code::OPEN | code::RETIRING))
        );
        if h.status == BlockStatus::FactoryBad && in_use {
            return Err(FtlError::Corrupt(
                "a block the checkpoint has in use is recorded factory-bad: the block table is damaged",
            ));
        }
        self.headers.insert(b, h);
        Ok(h)
    }

    fn apply_trims<K: Rebuildable>(&mut self, ftl: &mut K) -> Result<(), FtlError> {
        let trims = core::mem::take(&mut self.trims);
        for &(lpn, seq) in &trims {
            if (lpn as u64) < ftl.logical() {
                let v = self.versions.entry(lpn).or_insert(0);
                *v = (*v).max(seq);
                self.apply(ftl, lpn as u64, INVALID, seq, false)?;
            }
        }
        self.trims = trims;
        Ok(())
    }

    /// Makes `phys` (or INVALID for a trim) the mapping of `lpn` if `seq` is newer, with
    /// the class its record carries.
    fn apply<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        lpn: u64,
        phys: u32,
        seq: u64,
        critical: bool,
    ) -> Result<(), FtlError> {
        let i = lpn as usize;
        if seq <= self.best[i] {
            return Ok(());
        }
        self.best[i] = seq;
        let old = ftl.entry(lpn);
        if old != INVALID && old != LOST {
            let ob = (old / ftl.sub_mut().ppb) as usize;
            ftl.sub_mut().valid[ob] -= 1;
            if ftl.sub_mut().valid[ob] == 0 {
                self.emptied.push(ob as u32);
            }
        }
        ftl.set_entry(self.now, lpn, phys)?;
        ftl.set_critical(lpn, critical);
        if phys != INVALID {
            let ppb = ftl.sub().ppb;
            ftl.sub_mut().valid[(phys / ppb) as usize] += 1;
        }
        Ok(())
    }

    /// Reads block `b` from page `from` up to its first erased page, applying every data
    /// record with sequence number ≥ `min_seq`. Returns the first erased page (the write
    /// point; `ppb` if none).
    fn scan_block<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
        from: u32,
        min_seq: u64,
    ) -> Result<u32, FtlError> {
        self.scanned.insert(b);
        let ppb = ftl.sub_mut().ppb;
        let addr = ftl.sub_mut().block_addr(b);
        // An SLC-mode block (the flush buffer) holds its LSB pages only: the others are
        // skipped, and its write point is its first erased LSB page. The header says which
        // (read once, charged, and already read on every path that scans a block).
        let slc = self.header(ftl, now, b)?.slc_mode && ftl.sub().window > 0;
        let mut found: Vec<Found> = Vec::new();
        let mut seqs: Vec<u64> = vec![0; ppb as usize];
        let mut wp = ppb;
        // A page that does not decode, or fails verification, makes the block unfit to
        // resume: a later roll-forward would no longer see it at the write point.
        let mut clean = true;
        for p in from..ppb {
            if slc && ftl.sub().next_lsb[p as usize] != p {
                continue;
            }
            let pa = addr.page(p).expect("page in block");
            self.pages_scanned += 1;
            match ftl.sub_mut().ctl.read_record(now, pa) {
                Ok(PageRead::Data(ri)) => {
                    ftl.sub_mut()
                        .push_op(b, OpKind::Read, Cause::Mount, ri.timing, ri.ecc, None);
                    let rec = ri.record;
                    self.max_seq = self.max_seq.max(rec.seq.saturating_add(1));
                    seqs[p as usize] = rec.seq;
                    if rec.seq >= self.snap.seq {
                        self.young.insert(b);
                    }
                    if rec.seq >= min_seq {
                        if let Some(class) = rec.kind.data_class() {
                            if rec.lpn < ftl.logical() {
                                found.push(Found {
                                    page: p,
                                    lpn: rec.lpn,
                                    seq: rec.seq,
                                    critical: class.critical,
                                    user: matches!(rec.kind, PageKind::User(_)),
                                    replica_of: None,
                                });
                            }
                        } else if let Some((lpn, version)) = rec.replica_of() {
                            if lpn < ftl.logical() {
                                found.push(Found {
                                    page: p,
                                    lpn,
                                    seq: rec.seq,
                                    critical: true,
                                    user: false,
                                    replica_of: Some(version),
                                });
                            }
                        }
                    }
                }
                Ok(PageRead::Erased { timing }) => {
                    ftl.sub_mut()
                        .push_op(b, OpKind::Read, Cause::Mount, timing, Nanos::ZERO, None);
                    wp = p;
                    break;
                }
                // A torn or scrambled page holds nothing; later pages may.
                Err(CtlError::Uncorrectable { .. }) => clean = false,
                Err(e) => return Err(e.into()),
            }
        }
        if wp > 0 || from > 0 {
            self.full.insert(b);
        }
        let tail = wp.saturating_sub(ftl.sub_mut().window + 1);
        for Found {
            page: p,
            lpn,
            seq,
            critical,
            user,
            replica_of,
        } in found
        {
            // Pages at the write point are read in full whether or not they win: a damaged
            // one rules out resuming the block.
            #[cfg(feature = "sabotage")]
            let p_checked =
                p >= tail && ftl.sub().cfg.sabotage != crate::sabotage::Sabotage::NoTornCheck;
            #[cfg(not(feature = "sabotage"))]
            let p_checked = p >= tail;
            if p_checked && !self.verify(ftl, now, b, p)? {
                clean = false;
                continue;
            }
            if let Some(version) = replica_of {
                self.replicas.push((b * ppb + p, lpn as u32, version, seq));
                continue;
            }
            if user && seq >= self.snap.seq {
                // A host write since the checkpoint: the version replicas must copy.
                let v = self.versions.entry(lpn as u32).or_insert(0);
                *v = (*v).max(seq);
            }
            if seq > self.best[lpn as usize] {
                self.apply(ftl, lpn, b * ppb + p, seq, critical)?;
            }
        }
        self.partial.retain(|x| x.0 != b);
        if wp > from && wp < ppb && clean {
            self.partial.push((b, wp, seqs));
        }
        Ok(wp)
    }

    /// Meta-Cure's replica sets after the map is final (see the `replica` module): for each
    /// mapped critical page, the replicas of the version it ends up with — records found
    /// by the scans whose version matches, and (roll-forward) the checkpoint's replicas
    /// whose block was not erased since — newest first, at most the configured number.
    fn install_replicas<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
    ) -> Result<(), FtlError> {
        let limit = ftl.replica_limit();
        let snap_sets = core::mem::take(&mut self.snap.replicas);
        let mut lpns: BTreeSet<u32> = self.replicas.iter().map(|r| r.1).collect();
        lpns.extend(snap_sets.keys().copied());
        for l in lpns {
            let lpn = l as u64;
            let primary = ftl.entry(lpn);
            if lpn >= ftl.logical() || primary == INVALID || primary == LOST || !ftl.critical(lpn) {
                continue;
            }
            // The version the map ends up with.
            let version = match (self.versions.get(&l), snap_sets.get(&l)) {
                (Some(&v), _) => v,
                (None, Some(set)) => set.version,
                (None, None) => continue,
            };
            let tag = version as u32;
            let mut pages: Vec<(u64, u32)> = self
                .replicas
                .iter()
                .filter(|&&(_, rl, t, _)| rl == l && t == tag)
                .map(|&(p, _, _, seq)| (seq, p))
                .collect();
            if !self.full_scan {
                if let Some(set) = snap_sets.get(&l).filter(|s| s.version == version) {
                    for &p in &set.pages {
                        if !ftl.entry_ok(p) || p == INVALID || p == LOST {
                            continue;
                        }
                        let b = p / ftl.sub().ppb;
                        if self.headers.contains_key(&b) || self.scanned.contains(&b) {
                            let h = self.header(ftl, now, b)?;
                            if h.erase_count != self.snap.erase[b as usize] {
                                continue;
                            }
                        }
                        pages.push((0, p));
                    }
                }
            }
            pages.sort_unstable_by(|a, b| b.cmp(a));
            let mut kept: Vec<u32> = Vec::new();
            for (_, p) in pages {
                if kept.len() < limit
                    && p != primary
                    && !kept.contains(&p)
                    && ftl.owner(p).is_none()
                {
                    kept.push(p);
                }
            }
            ftl.install_replicas(lpn, version, kept);
        }
        Ok(())
    }

    /// Reads page `p` of block `b` in full: whether its data decodes and matches its CRC.
    fn verify<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
        p: u32,
    ) -> Result<bool, FtlError> {
        let pa = ftl.sub_mut().block_addr(b).page(p).expect("page in block");
        // A page that does not decode is sensed again (read-retry) before it is taken for
        // torn: dropping a good page here would bring back an older version of its data.
        let mut retries = ftl.sub().cfg.read_retries;
        loop {
            self.pages_scanned += 1;
            match ftl.sub_mut().ctl.read(now, pa, &mut self.page) {
                Ok(PageRead::Data(ri)) => {
                    ftl.sub_mut()
                        .push_op(b, OpKind::Read, Cause::Mount, ri.timing, ri.ecc, None);
                    return Ok(true);
                }
                Ok(PageRead::Erased { timing }) => {
                    ftl.sub_mut()
                        .push_op(b, OpKind::Read, Cause::Mount, timing, Nanos::ZERO, None);
                    return Ok(false);
                }
                Err(CtlError::Uncorrectable { timing, ecc, .. }) => {
                    ftl.sub_mut()
                        .push_op(b, OpKind::Read, Cause::Mount, timing, ecc, None);
                    if retries == 0 {
                        return Ok(false);
                    }
                    retries -= 1;
                    ftl.sub_mut().log.counters.read_retries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Sets block states from what was found, rebuilds the reverse map and the indexes.
    fn finish<K: Rebuildable>(
        mut self,
        ftl: &mut K,
        now: Nanos,
        name: &str,
    ) -> Result<RecoveryReport, FtlError> {
        let nblocks = ftl.sub_mut().geo.total_blocks();
        ftl.rebuild_reverse(now)?;
        if ftl.replica_limit() > 0 {
            self.install_replicas(ftl, now)?;
        }
        for b in 0..nblocks {
            let i = b as usize;
            // Erase count and bad-block status: from the header where it was read (every
            // block in a full scan; the candidates and the checkpoint region in a
            // roll-forward), else the checkpoint's (such a block was not erased since; one
            // that went bad since shows it at its next program or erase).
            let (status, erase_count) =
                if self.headers.contains_key(&b) || ftl.sub_mut().state[i].reserved() {
                    let h = self.header(ftl, now, b)?;
                    (h.status, h.erase_count)
                } else if self.snap.states[i] == code::BAD {
                    (BlockStatus::GrownBad, self.snap.erase[i])
                } else {
                    (BlockStatus::Good, self.snap.erase[i])
                };
            ftl.sub_mut().erase[i] = erase_count;
            if ftl.sub_mut().state[i].reserved() {
                if status != BlockStatus::Good {
                    ftl.sub_mut().state[i] = BState::Bad;
                }
                continue;
            }
            if ftl.sub_mut().state[i] == BState::Bad
                && self.snap.states[i] == code::REGION
                && !self.left_region.contains(&b)
            {
                continue;
            }
            let die = ftl.sub_mut().die_of(b) as usize;
            if status != BlockStatus::Good {
                ftl.sub_mut().retire_or_relocate(b);
            } else if self.free.contains(&b) && ftl.sub_mut().valid[i] == 0 {
                ftl.sub_mut().state[i] = BState::Free;
                ftl.sub_mut().suspect[i] = true;
                ftl.sub_mut().dies[die].free.push(Reverse((erase_count, b)));
            } else if self.full.contains(&b) || ftl.sub_mut().valid[i] > 0 {
                ftl.sub_mut().state[i] = BState::Full;
                ftl.sub_mut().index_insert(b);
            } else {
                ftl.sub_mut().state[i] = BState::Bad;
            }
        }
        // Half-written blocks become the frontiers again (up to two per die, newest first),
        // so the space a crash left in them is not lost: a full device may have nothing
        // else to copy into. Their lower pages written before the cut count as exposed.
        let mut partial = self.partial;
        partial.sort_by_key(|p| Reverse(p.2.iter().copied().max().unwrap_or(0)));
        for (b, wp, seqs) in partial {
            let i = b as usize;
            let die = ftl.sub_mut().die_of(b) as usize;
            // Only a block whose pages from the write point on map nothing (an image
            // whose checkpoint maps pages of an erased block fails this).
            let ppb = ftl.sub().ppb;
            let base = b * ppb;
            if ftl.sub().state[i] != BState::Full
                || (wp..ppb).any(|p| ftl.owner(base + p).is_some())
            {
                continue;
            }
            let Some(s) = ftl.sub_mut().dies[die]
                .frontier
                .iter()
                .position(|f| f.is_none())
            else {
                continue;
            };
            ftl.sub_mut().index_remove(b);
            ftl.sub_mut().state[i] = BState::Open;
            ftl.sub_mut().dies[die].frontier[s] = Some(Frontier { block: b, next: wp });
            let base = (die * 2 + s) * ppb as usize;
            ftl.sub_mut().fseq[base..base + ppb as usize].copy_from_slice(&seqs);
        }
        // What superseded each block's pages is unknown: no victim is erased while any
        // page is exposed (see `PageFtl::erase_dirty`).
        ftl.sub_mut().superseded.fill(u64::MAX - 1);
        if self.max_seq > SEQ_LIMIT {
            // No volume writes 2^62 pages (a century at a billion per second): a record or
            // trim this new is forged or corrupt, and adopting it would overflow the
            // counter on the next write.
            return Err(FtlError::Corrupt(
                "a sequence number on the chip is beyond any this FTL writes",
            ));
        }
        let seq = ftl.sub().seq.max(self.max_seq).max(1);
        ftl.sub_mut().seq = seq;
        let mapped = (0..ftl.logical())
            .filter(|&l| {
                let p = ftl.entry(l);
                p != INVALID && p != LOST
            })
            .count() as u64;
        let channels = ftl.sub().geo.channels;
        let (reads, time) = ftl.sub().log.read_time(Cause::Mount, channels);
        for &b in &self.young {
            let rule = ftl.sub().cfg.young_rule;
            ftl.sub_mut().young[b as usize] = rule;
        }
        ftl.sub_mut().opened_since_cp = self.young.len() as u32;
        for &b in &self.young {
            let die = ftl.sub().die_of(b) as usize;
            ftl.sub_mut().opened_per_die[die] += 1;
        }
        Ok(RecoveryReport {
            procedure: name.into(),
            checkpoint_gen: ftl.checkpoint_gen(),
            checkpoint_pages: self.checkpoint_pages,
            blocks_scanned: self.scanned.len() as u64,
            pages_scanned: self.pages_scanned,
            pages_read: reads,
            time,
            mapped_pages: mapped,
        })
    }
}
