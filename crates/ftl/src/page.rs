//! A pure page-level mapping FTL: the whole logical-to-physical map in RAM.
//!
//! - Out-of-place updates into a write frontier per (stream, die): host writes and GC copies
//!   go to different open blocks (hot/cold separation); host writes rotate over dies.
//! - Free blocks per die in a min-heap by erase count (dynamic wear levelling: the least
//!   worn free block is opened next).
//! - Garbage collection is a step machine: a job reclaims one victim, one page copy or one
//!   erase per [`step`](PageFtl::gc_step). The foreground scheduler runs jobs before a host
//!   write while a die has fewer free blocks than `gc_threshold`.
//! - Victims come from a [`VictimPolicy`]; greedy is answered in O(1) from per-die lists of
//!   full blocks bucketed by valid count.
//! - Static wear levelling: every `check_every` erases on a die, if the spread between the
//!   most worn block and the least worn full block exceeds `spread`, that cold block is
//!   migrated (its data moves to the GC frontier; the block returns to the free pool).
//! - Bad blocks: a program failure retires the block (its valid pages are relocated, it is
//!   never erased again) and the write is retried elsewhere; an erase failure retires the
//!   victim. Data is never lost to a failure.
//! - Every page carries an OOB record (logical page, sequence number, kind), so
//!   [`PageFtl::mount`] can rebuild the map from the chip alone by a full scan. Trims are
//!   not yet durable across a remount (the crash-safety work adds trim records).

use crate::gc::{Candidate, SelectContext, VictimKind, VictimPolicy};
use crate::{Cause, FlashOp, Ftl, FtlCounters, FtlError, OpKind};
use alloc::boxed::Box;
use alloc::collections::{BinaryHeap, VecDeque};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use controller::{Controller, CtlError, OobRecord, PageKind, PageRead, PayloadMode};
use core::cmp::Reverse;
use nand::{
    BlockAddr, BlockStatus, ErrorModel, Geometry, Lpn, NandError, Nanos, OpTiming, PhysAddr,
    Storage,
};
use serde::{Deserialize, Serialize};

/// No mapping / no valid data.
const INVALID: u32 = u32::MAX;
/// The logical page's only copy became unreadable.
const LOST: u32 = u32::MAX - 1;
/// End of an intrusive list.
const NIL: u32 = u32::MAX;

/// Streams with their own write frontier.
const HOST: usize = 0;
const COLD: usize = 1;

/// Static wear-levelling settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WearLevelConfig {
    /// Largest tolerated difference between the most and the least worn block of a die.
    pub spread: u32,
    /// Erases on a die between two checks.
    pub check_every: u32,
}

/// Configuration of [`PageFtl`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageFtlConfig {
    /// Fraction of the physical capacity hidden from the host (0 < op < 1).
    pub over_provisioning: f64,
    /// Foreground GC runs on a die while it has fewer free blocks than this (≥ 2).
    pub gc_threshold: u32,
    /// Victim policy.
    pub victim: VictimKind,
    /// Static wear levelling (off when `None`).
    pub wear_leveling: Option<WearLevelConfig>,
    /// BCH correction capability of every page.
    pub ecc_t: u32,
}

impl Default for PageFtlConfig {
    fn default() -> Self {
        PageFtlConfig {
            over_provisioning: 0.125,
            gc_threshold: 3,
            victim: VictimKind::Greedy,
            wear_leveling: Some(WearLevelConfig {
                spread: 64,
                check_every: 32,
            }),
            ecc_t: 8,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BState {
    Free,
    Open,
    Full,
    Collecting,
    Retiring,
    Bad,
}

#[derive(Debug, Clone, Copy)]
struct Frontier {
    block: u32,
    next: u32,
}

#[derive(Debug, Clone, Copy)]
struct Job {
    victim: u32,
    next: u32,
    cause: Cause,
    /// Erase the victim at the end (false for a retiring block).
    erase: bool,
}

#[derive(Debug)]
struct DieState {
    free: BinaryHeap<Reverse<(u32, u32)>>,
    frontier: [Option<Frontier>; 2],
    /// The reclaiming GC job (at most one per die).
    gc: Option<Job>,
    /// Relocation (front) and wear-levelling (back) jobs, run when space allows.
    background: VecDeque<Job>,
    erases_since_check: u32,
}

/// The page-level mapping FTL over a controller.
pub struct PageFtl<S: Storage, M: ErrorModel> {
    ctl: Controller<S, M>,
    cfg: PageFtlConfig,
    policy: Box<dyn VictimPolicy>,
    geo: Geometry,
    /// Packed address of every flat block index (cached: the hot paths convert often).
    addrs: Vec<BlockAddr>,
    ppb: u32,
    blocks_per_die: u32,
    logical: u64,
    digest: bool,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    state: Vec<BState>,
    valid: Vec<u32>,
    /// P/E cycles per block: a mirror of the chip's counts, kept so that victim selection,
    /// wear levelling and free-block ordering need no chip queries.
    erase: Vec<u32>,
    last_write: Vec<Nanos>,
    // Intrusive lists of full blocks per (die, valid count).
    next: Vec<u32>,
    prev: Vec<u32>,
    head: Vec<u32>,
    dies: Vec<DieState>,
    rr_die: u32,
    seq: u64,
    ops: Vec<FlashOp>,
    counters: FtlCounters,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for PageFtl<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageFtl")
            .field("logical_pages", &self.logical)
            .field("cfg", &self.cfg)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Formats the chip behind `ctl` (erasing every good block that holds data) and builds an
    /// empty volume.
    pub fn format(ctl: Controller<S, M>, cfg: PageFtlConfig, now: Nanos) -> Result<Self, FtlError> {
        let mut ftl = Self::empty(ctl, cfg)?;
        for b in 0..ftl.geo.total_blocks() {
            let addr = ftl.block_addr(b);
            let info = ftl.ctl.chip().block_info(addr)?;
            ftl.erase[b as usize] = info.erase_count;
            match info.status {
                BlockStatus::Good => {
                    if info.next_page > 0 || info.needs_erase {
                        match ftl.ctl.chip_mut().erase(now, addr) {
                            Ok(t) => {
                                ftl.push_erase(b, Cause::Mount, t);
                                ftl.erase[b as usize] += 1;
                            }
                            Err(NandError::EraseFailed(_)) => {
                                ftl.state[b as usize] = BState::Bad;
                                continue;
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    ftl.state[b as usize] = BState::Free;
                    let d = ftl.die_of(b) as usize;
                    ftl.dies[d].free.push(Reverse((ftl.erase[b as usize], b)));
                }
                _ => ftl.state[b as usize] = BState::Bad,
            }
        }
        ftl.size_volume()?;
        Ok(ftl)
    }

    /// Rebuilds the volume from the chip alone: every page's OOB record is read and the
    /// newest version (highest sequence number) of each logical page wins. Blocks found
    /// partly programmed are closed (their remaining pages are reclaimed by GC later). The
    /// scan of a block stops at the chip's write pointer; firmware without that
    /// introspection scans to the end of the block (erased pages read as erased).
    pub fn mount(ctl: Controller<S, M>, cfg: PageFtlConfig, now: Nanos) -> Result<Self, FtlError> {
        let mut ftl = Self::empty(ctl, cfg)?;
        let mut seq_of: Vec<u64> = Vec::new();
        for b in 0..ftl.geo.total_blocks() {
            let addr = ftl.block_addr(b);
            let info = ftl.ctl.chip().block_info(addr)?;
            ftl.erase[b as usize] = info.erase_count;
            if info.status != BlockStatus::Good {
                ftl.state[b as usize] = BState::Bad;
                continue;
            }
            if info.next_page == 0 && !info.needs_erase {
                ftl.state[b as usize] = BState::Free;
                let d = ftl.die_of(b) as usize;
                ftl.dies[d].free.push(Reverse((info.erase_count, b)));
                continue;
            }
            ftl.state[b as usize] = BState::Full;
            for p in 0..info.next_page.min(ftl.ppb) {
                let pa = addr.page(p).expect("page in block");
                match ftl.ctl.read_record(now, pa) {
                    Ok(PageRead::Data(ri)) => {
                        ftl.push_op(b, OpKind::Read, Cause::Mount, ri.timing, ri.ecc, None);
                        let lpn = ri.record.lpn;
                        if lpn >= ftl.logical_capacity_bound() || ri.record.kind.is_meta() {
                            continue;
                        }
                        ftl.seq = ftl.seq.max(ri.record.seq + 1);
                        if seq_of.len() <= lpn as usize {
                            seq_of.resize(lpn as usize + 1, 0);
                        }
                        let phys = b * ftl.ppb + p;
                        let cur = ftl.l2p_get(lpn);
                        if cur == INVALID || ri.record.seq >= seq_of[lpn as usize] {
                            if cur != INVALID {
                                ftl.p2l[cur as usize] = INVALID;
                                ftl.valid[(cur / ftl.ppb) as usize] -= 1;
                            }
                            ftl.l2p_set(lpn, phys);
                            ftl.p2l[phys as usize] = lpn as u32;
                            ftl.valid[b as usize] += 1;
                            seq_of[lpn as usize] = ri.record.seq;
                        }
                    }
                    Ok(PageRead::Erased { timing }) => {
                        ftl.push_op(b, OpKind::Read, Cause::Mount, timing, Nanos::ZERO, None);
                    }
                    // A torn or garbage page holds nothing valid.
                    Err(CtlError::Uncorrectable { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        // Size the volume (dropping mappings past its end), then index the full blocks.
        ftl.size_volume()?;
        for b in 0..ftl.geo.total_blocks() {
            if ftl.state[b as usize] == BState::Full {
                ftl.index_insert(b);
            }
        }
        Ok(ftl)
    }

    fn empty(ctl: Controller<S, M>, cfg: PageFtlConfig) -> Result<Self, FtlError> {
        if !(cfg.over_provisioning > 0.0 && cfg.over_provisioning < 1.0) {
            return Err(FtlError::Config(format!(
                "over_provisioning = {} must be in (0, 1)",
                cfg.over_provisioning
            )));
        }
        if cfg.gc_threshold < 2 {
            return Err(FtlError::Config(format!(
                "gc_threshold = {} must be at least 2",
                cfg.gc_threshold
            )));
        }
        let mut ctl = ctl;
        ctl.layout(cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("ecc_t = {}: {e}", cfg.ecc_t)))?;
        let geo = *ctl.chip().geometry();
        if geo.total_pages() >= LOST as u64 {
            return Err(FtlError::Config(format!(
                "{} pages exceed the page-level map's 32-bit entries",
                geo.total_pages()
            )));
        }
        let ppb = geo.pages_per_block;
        let nblocks = geo.total_blocks() as usize;
        let ndies = geo.total_dies() as usize;
        let digest = ctl.config().mode == PayloadMode::Digest;
        Ok(PageFtl {
            policy: cfg.victim.policy(),
            cfg,
            addrs: (0..geo.total_blocks())
                .map(|b| geo.block_at(b).expect("block in range"))
                .collect(),
            geo,
            ppb,
            blocks_per_die: geo.planes_per_die * geo.blocks_per_plane,
            logical: 0,
            digest,
            l2p: Vec::new(),
            p2l: vec![INVALID; geo.total_pages() as usize],
            state: vec![BState::Bad; nblocks],
            valid: vec![0; nblocks],
            erase: vec![0; nblocks],
            last_write: vec![Nanos::ZERO; nblocks],
            next: vec![NIL; nblocks],
            prev: vec![NIL; nblocks],
            head: vec![NIL; ndies * (ppb as usize + 1)],
            dies: (0..ndies)
                .map(|_| DieState {
                    free: BinaryHeap::new(),
                    frontier: [None; 2],
                    gc: None,
                    background: VecDeque::new(),
                    erases_since_check: 0,
                })
                .collect(),
            rr_die: 0,
            seq: 1,
            ops: Vec::new(),
            counters: FtlCounters::default(),
            ctl,
        })
    }

    /// An upper bound on logical pages before the volume is sized (for mount).
    fn logical_capacity_bound(&self) -> u64 {
        self.geo.total_pages()
    }

    fn size_volume(&mut self) -> Result<(), FtlError> {
        let good = self.state.iter().filter(|s| **s != BState::Bad).count() as u64;
        let ndies = self.dies.len() as u64;
        let physical = good * self.ppb as u64;
        let logical = (physical as f64 * (1.0 - self.cfg.over_provisioning)) as u64;
        let reserve = ndies * (self.cfg.gc_threshold as u64 + 2);
        let max = good.saturating_sub(reserve + 1) * self.ppb as u64;
        if logical == 0 || logical > max {
            return Err(FtlError::Config(format!(
                "over_provisioning = {} leaves {logical} logical pages; with {good} good blocks and {reserve} reserved for GC at most {max} fit",
                self.cfg.over_provisioning
            )));
        }
        self.logical = logical;
        // Keep mappings found by mount within the new volume.
        let mut l2p = vec![INVALID; logical as usize];
        for (lpn, &p) in self.l2p.iter().enumerate() {
            if (lpn as u64) < logical {
                l2p[lpn] = p;
            } else if p != INVALID && p != LOST {
                self.p2l[p as usize] = INVALID;
                self.valid[(p / self.ppb) as usize] -= 1;
            }
        }
        self.l2p = l2p;
        Ok(())
    }

    fn l2p_get(&self, lpn: u64) -> u32 {
        self.l2p.get(lpn as usize).copied().unwrap_or(INVALID)
    }

    fn l2p_set(&mut self, lpn: u64, p: u32) {
        if self.l2p.len() <= lpn as usize {
            self.l2p.resize(lpn as usize + 1, INVALID);
        }
        self.l2p[lpn as usize] = p;
    }

    /// The controller (ECC statistics, chip).
    pub fn controller(&self) -> &Controller<S, M> {
        &self.ctl
    }

    /// The controller, mutably (fault injection in tests and harnesses).
    pub fn controller_mut(&mut self) -> &mut Controller<S, M> {
        &mut self.ctl
    }

    /// Consumes the FTL, returning its controller (to remount the same chip).
    pub fn into_controller(self) -> Controller<S, M> {
        self.ctl
    }

    /// The configuration.
    pub fn config(&self) -> &PageFtlConfig {
        &self.cfg
    }

    /// Free blocks on each die.
    pub fn free_blocks(&self) -> Vec<usize> {
        self.dies.iter().map(|d| d.free.len()).collect()
    }

    /// Physical pages available to data (good blocks × pages per block).
    pub fn physical_pages(&self) -> u64 {
        self.state.iter().filter(|s| **s != BState::Bad).count() as u64 * self.ppb as u64
    }

    // ----- addressing ------------------------------------------------------------------

    fn block_addr(&self, b: u32) -> BlockAddr {
        self.addrs[b as usize]
    }

    fn phys_addr(&self, phys: u32) -> PhysAddr {
        self.block_addr(phys / self.ppb)
            .page(phys % self.ppb)
            .expect("page in range")
    }

    fn die_of(&self, b: u32) -> u32 {
        b / self.blocks_per_die
    }

    fn check_lpn(&self, lpn: Lpn) -> Result<u64, FtlError> {
        if lpn.get() < self.logical {
            Ok(lpn.get())
        } else {
            Err(FtlError::OutOfRange {
                lpn: lpn.get(),
                count: self.logical,
            })
        }
    }

    fn check_buf(&self, len: usize) -> Result<(), FtlError> {
        let expected = if self.digest {
            0
        } else {
            self.geo.page_size as usize
        };
        if len == expected {
            Ok(())
        } else {
            Err(FtlError::BufferSize { got: len, expected })
        }
    }

    // ----- op log ----------------------------------------------------------------------

    fn push_op(
        &mut self,
        block: u32,
        kind: OpKind,
        cause: Cause,
        t: OpTiming,
        ecc: Nanos,
        after: Option<u32>,
    ) -> u32 {
        let die = self.die_of(block);
        let c = cause.index();
        match kind {
            OpKind::Read => self.counters.reads[c] += 1,
            OpKind::Program => self.counters.programs[c] += 1,
            OpKind::Erase => self.counters.erases[c] += 1,
        }
        self.ops.push(FlashOp {
            die,
            channel: die / self.geo.dies_per_channel,
            kind,
            cause,
            array: t.array,
            transfer: t.transfer,
            ecc,
            after,
        });
        (self.ops.len() - 1) as u32
    }

    fn push_erase(&mut self, block: u32, cause: Cause, t: OpTiming) {
        self.push_op(block, OpKind::Erase, cause, t, Nanos::ZERO, None);
    }

    // ----- full-block index (greedy buckets) -------------------------------------------

    fn bucket(&self, b: u32) -> usize {
        self.die_of(b) as usize * (self.ppb as usize + 1) + self.valid[b as usize] as usize
    }

    fn index_insert(&mut self, b: u32) {
        let h = self.bucket(b);
        let old = self.head[h];
        self.next[b as usize] = old;
        self.prev[b as usize] = NIL;
        if old != NIL {
            self.prev[old as usize] = b;
        }
        self.head[h] = b;
    }

    fn index_remove(&mut self, b: u32) {
        let (n, p) = (self.next[b as usize], self.prev[b as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            let h = self.bucket(b);
            self.head[h] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
        self.next[b as usize] = NIL;
        self.prev[b as usize] = NIL;
    }

    /// Marks physical page `phys` as no longer holding valid data.
    fn invalidate(&mut self, phys: u32) {
        let b = phys / self.ppb;
        self.p2l[phys as usize] = INVALID;
        let full = self.state[b as usize] == BState::Full;
        if full {
            self.index_remove(b);
        }
        self.valid[b as usize] -= 1;
        if full {
            self.index_insert(b);
        }
    }

    fn map(&mut self, lpn: u64, phys: u32) {
        let old = self.l2p[lpn as usize];
        if old != INVALID && old != LOST {
            self.invalidate(old);
        }
        self.l2p[lpn as usize] = phys;
        self.p2l[phys as usize] = lpn as u32;
        self.valid[(phys / self.ppb) as usize] += 1;
    }

    // ----- allocation --------------------------------------------------------------------

    fn allocate(&mut self, die: usize, stream: usize) -> Result<u32, FtlError> {
        loop {
            if let Some(f) = self.dies[die].frontier[stream].as_mut() {
                if f.next < self.ppb {
                    let phys = f.block * self.ppb + f.next;
                    f.next += 1;
                    return Ok(phys);
                }
                self.dies[die].frontier[stream] = None;
            }
            let Some(Reverse((_, b))) = self.dies[die].free.pop() else {
                // GC copies may finish in the host frontier rather than fail.
                if stream == COLD {
                    if let Some(f) = self.dies[die].frontier[HOST].as_mut() {
                        if f.next < self.ppb {
                            let phys = f.block * self.ppb + f.next;
                            f.next += 1;
                            return Ok(phys);
                        }
                    }
                }
                return Err(FtlError::NoSpace);
            };
            self.state[b as usize] = BState::Open;
            self.dies[die].frontier[stream] = Some(Frontier { block: b, next: 0 });
        }
    }

    fn close_if_full(&mut self, phys: u32) {
        let b = phys / self.ppb;
        if phys % self.ppb == self.ppb - 1 && self.state[b as usize] == BState::Open {
            self.state[b as usize] = BState::Full;
            self.index_insert(b);
        }
    }

    /// Programs host data for `lpn` on `die`'s host frontier. `Ok(None)` means the program
    /// failed and the block was retired: the caller retries (after making space if it can).
    fn program_host(
        &mut self,
        now: Nanos,
        die: usize,
        data: &[u8],
        lpn: u64,
    ) -> Result<Option<u32>, FtlError> {
        let phys = self.allocate(die, HOST)?;
        let addr = self.phys_addr(phys);
        let rec = OobRecord::new(lpn, self.seq, PageKind::User);
        self.seq += 1;
        let r = self.ctl.program(now, addr, data, rec, self.cfg.ecc_t);
        let b = phys / self.ppb;
        match r {
            Ok(t) => {
                self.push_op(b, OpKind::Program, Cause::Host, t, Nanos::ZERO, None);
                self.last_write[b as usize] = now;
                Ok(Some(phys))
            }
            Err(CtlError::Nand(NandError::ProgramFailed(_))) => {
                self.counters.program_retries += 1;
                self.retire(b, die);
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A block went bad: stop writing to it and relocate its valid pages.
    fn retire(&mut self, b: u32, die: usize) {
        for f in self.dies[die].frontier.iter_mut() {
            if f.is_some_and(|f| f.block == b) {
                *f = None;
            }
        }
        if self.state[b as usize] == BState::Full {
            self.index_remove(b);
        }
        self.counters.retired_blocks += 1;
        if self.valid[b as usize] > 0 {
            self.state[b as usize] = BState::Retiring;
            self.dies[die].background.push_front(Job {
                victim: b,
                next: 0,
                cause: Cause::Relocate,
                erase: false,
            });
        } else {
            self.state[b as usize] = BState::Bad;
        }
    }

    // ----- garbage collection -----------------------------------------------------------

    /// Picks a victim on `die` with the configured policy.
    fn select_victim(&self, die: usize, now: Nanos) -> Option<u32> {
        if self.policy.is_greedy() {
            let base = die * (self.ppb as usize + 1);
            // A block full of valid pages gains nothing.
            return (0..self.ppb as usize)
                .map(|v| self.head[base + v])
                .find(|&b| b != NIL);
        }
        let lo = die as u32 * self.blocks_per_die;
        let ctx = SelectContext {
            now,
            pages_per_block: self.ppb,
            max_erase_count: self.erase.iter().copied().max().unwrap_or(0),
        };
        let mut cands = (lo..lo + self.blocks_per_die)
            .filter(|&b| {
                self.state[b as usize] == BState::Full && self.valid[b as usize] < self.ppb
            })
            .map(|b| Candidate {
                block: b,
                valid: self.valid[b as usize],
                erase_count: self.erase[b as usize],
                last_write: self.last_write[b as usize],
            });
        self.policy.select(&ctx, &mut cands)
    }

    fn claim_victim(&mut self, victim: u32, cause: Cause) -> Job {
        self.index_remove(victim);
        self.state[victim as usize] = BState::Collecting;
        Job {
            victim,
            next: 0,
            cause,
            erase: true,
        }
    }

    /// Runs one step of `die`'s GC job (or, with none, of its first background job): one
    /// valid-page copy, or the final erase. Returns `Ok(true)` when that finished the job
    /// (or there was no job), `Ok(false)` if the job continues.
    pub fn gc_step(&mut self, now: Nanos, die: usize) -> Result<bool, FtlError> {
        let from_gc = self.dies[die].gc.is_some();
        let job = if from_gc {
            self.dies[die].gc
        } else {
            self.dies[die].background.front().copied()
        };
        let Some(mut job) = job else {
            return Ok(true);
        };
        let base = job.victim * self.ppb;
        while job.next < self.ppb && self.p2l[(base + job.next) as usize] == INVALID {
            job.next += 1;
        }
        let done = job.next >= self.ppb;
        if !done {
            let src = base + job.next;
            job.next += 1;
            // Save progress first: the copy may retire blocks and queue more jobs.
            if from_gc {
                self.dies[die].gc = Some(job);
            } else if let Some(j) = self.dies[die].background.front_mut() {
                *j = job;
            }
            self.copy_page(now, die, src, job.cause)?;
            return Ok(false);
        }
        if from_gc {
            self.dies[die].gc = None;
        } else {
            self.dies[die].background.pop_front();
        }
        self.finish_job(now, die, job)?;
        Ok(true)
    }

    fn finish_job(&mut self, now: Nanos, die: usize, job: Job) -> Result<(), FtlError> {
        let v = job.victim;
        if !job.erase {
            self.state[v as usize] = BState::Bad;
            return Ok(());
        }
        match job.cause {
            Cause::WearLevel => self.counters.wl_migrations += 1,
            _ => self.counters.gc_victims += 1,
        }
        let addr = self.block_addr(v);
        match self.ctl.chip_mut().erase(now, addr) {
            Ok(t) => {
                self.push_erase(v, job.cause, t);
                self.erase[v as usize] += 1;
                self.state[v as usize] = BState::Free;
                self.dies[die]
                    .free
                    .push(Reverse((self.erase[v as usize], v)));
                self.after_erase(die);
            }
            Err(NandError::EraseFailed(_)) => {
                self.state[v as usize] = BState::Bad;
                self.counters.retired_blocks += 1;
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Copies the valid page `src` to the cold frontier of `die`. The controller moves the
    /// corrected data with its parity (no re-encoding); only the record is rewritten.
    fn copy_page(
        &mut self,
        now: Nanos,
        die: usize,
        src: u32,
        cause: Cause,
    ) -> Result<(), FtlError> {
        let lpn = self.p2l[src as usize];
        let addr = self.phys_addr(src);
        let b = src / self.ppb;
        let read_op = match self.ctl.read_for_relocation(now, addr) {
            Ok(PageRead::Data(info)) => {
                self.push_op(b, OpKind::Read, cause, info.timing, info.ecc, None)
            }
            Ok(PageRead::Erased { .. }) | Err(CtlError::Uncorrectable { .. }) => {
                // The only copy is gone: remember it, so reads fail rather than return
                // stale or zero data.
                self.invalidate(src);
                self.l2p[lpn as usize] = LOST;
                self.counters.lost_pages += 1;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let dst = loop {
            let phys = self.allocate(die, COLD)?;
            let rec = OobRecord::new(lpn as u64, self.seq, PageKind::GcCopy);
            self.seq += 1;
            let pb = phys / self.ppb;
            match self.ctl.program_relocated(now, self.phys_addr(phys), rec) {
                Ok(t) => {
                    self.push_op(pb, OpKind::Program, cause, t, Nanos::ZERO, Some(read_op));
                    self.last_write[pb as usize] = now;
                    break phys;
                }
                Err(CtlError::Nand(NandError::ProgramFailed(_))) => {
                    self.counters.program_retries += 1;
                    self.retire(pb, die);
                }
                Err(e) => return Err(e.into()),
            }
        };
        self.counters.valid_copies += 1;
        self.map(lpn as u64, dst);
        self.close_if_full(dst);
        Ok(())
    }

    fn after_erase(&mut self, die: usize) {
        let Some(wl) = self.cfg.wear_leveling else {
            return;
        };
        let d = &mut self.dies[die];
        d.erases_since_check += 1;
        if d.erases_since_check < wl.check_every
            || d.background.iter().any(|j| j.cause == Cause::WearLevel)
        {
            return;
        }
        d.erases_since_check = 0;
        let lo = die as u32 * self.blocks_per_die;
        let range = lo..lo + self.blocks_per_die;
        let max = range
            .clone()
            .filter(|&b| self.state[b as usize] != BState::Bad)
            .map(|b| self.erase[b as usize])
            .max()
            .unwrap_or(0);
        let coldest = range
            .filter(|&b| self.state[b as usize] == BState::Full)
            .min_by_key(|&b| (self.erase[b as usize], b));
        if let Some(c) = coldest {
            if max - self.erase[c as usize] > wl.spread {
                let job = self.claim_victim(c, Cause::WearLevel);
                self.dies[die].background.push_back(job);
            }
        }
    }

    /// Foreground GC: reclaim on `die` until it has `gc_threshold` free blocks (or nothing
    /// can be reclaimed).
    fn ensure_space(&mut self, now: Nanos, die: usize) -> Result<(), FtlError> {
        while self.dies[die].free.len() < self.cfg.gc_threshold as usize {
            if self.dies[die].gc.is_none() {
                match self.select_victim(die, now) {
                    Some(v) => self.dies[die].gc = Some(self.claim_victim(v, Cause::Gc)),
                    None => return Ok(()),
                }
            }
            while !self.gc_step(now, die)? {}
        }
        Ok(())
    }

    /// Runs relocation and wear-levelling jobs on `die` while it has free blocks to spare
    /// (a step takes at most one block; below the GC threshold they wait for GC).
    fn run_pending(&mut self, now: Nanos, die: usize) -> Result<(), FtlError> {
        while self.dies[die].gc.is_none()
            && !self.dies[die].background.is_empty()
            && self.dies[die].free.len() >= self.cfg.gc_threshold as usize
        {
            self.gc_step(now, die)?;
        }
        Ok(())
    }

    fn write_inner(&mut self, now: Nanos, lpn: u64, data: &[u8]) -> Result<(), FtlError> {
        let ndies = self.dies.len();
        let first = self.rr_die as usize;
        self.rr_die = ((first + 1) % ndies) as u32;
        for k in 0..ndies {
            let die = (first + k) % ndies;
            loop {
                // Space first (again after a failed program retired a block).
                self.ensure_space(now, die)?;
                match self.program_host(now, die, data, lpn) {
                    Ok(Some(phys)) => {
                        self.map(lpn, phys);
                        self.close_if_full(phys);
                        self.run_pending(now, die)?;
                        return Ok(());
                    }
                    Ok(None) => continue,
                    Err(FtlError::NoSpace) => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Err(FtlError::NoSpace)
    }
}

impl<S: Storage, M: ErrorModel> Ftl for PageFtl<S, M> {
    fn logical_pages(&self) -> u64 {
        self.logical
    }

    fn page_size(&self) -> usize {
        self.geo.page_size as usize
    }

    fn write(&mut self, now: Nanos, lpn: Lpn, data: &[u8]) -> Result<(), FtlError> {
        let lpn = self.check_lpn(lpn)?;
        self.check_buf(data.len())?;
        self.counters.host_writes += 1;
        self.write_inner(now, lpn, data)
    }

    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError> {
        let l = self.check_lpn(lpn)?;
        self.check_buf(data.len())?;
        self.counters.host_reads += 1;
        let phys = self.l2p[l as usize];
        if phys == INVALID {
            self.counters.unmapped_reads += 1;
            data.fill(0);
            return Ok(());
        }
        if phys == LOST {
            return Err(FtlError::Unreadable(lpn));
        }
        let addr = self.phys_addr(phys);
        match self.ctl.read(now, addr, data) {
            Ok(PageRead::Data(info)) => {
                self.push_op(
                    phys / self.ppb,
                    OpKind::Read,
                    Cause::Host,
                    info.timing,
                    info.ecc,
                    None,
                );
                Ok(())
            }
            Ok(PageRead::Erased { .. }) | Err(CtlError::Uncorrectable { .. }) => {
                Err(FtlError::Unreadable(lpn))
            }
            Err(e) => Err(e.into()),
        }
    }

    fn trim(&mut self, _now: Nanos, lpn: Lpn) -> Result<(), FtlError> {
        let l = self.check_lpn(lpn)?;
        self.counters.trims += 1;
        let old = self.l2p[l as usize];
        if old != INVALID && old != LOST {
            self.invalidate(old);
        }
        self.l2p[l as usize] = INVALID;
        Ok(())
    }

    fn flush(&mut self, _now: Nanos) -> Result<(), FtlError> {
        // Every write is programmed before it returns; there is no volatile write cache.
        self.counters.flushes += 1;
        Ok(())
    }

    fn tick(&mut self, now: Nanos) -> Result<bool, FtlError> {
        let mut worked = false;
        for die in 0..self.dies.len() {
            if !self.dies[die].background.is_empty() {
                self.run_pending(now, die)?;
                worked = true;
            }
        }
        Ok(worked)
    }

    fn take_ops(&mut self, out: &mut Vec<FlashOp>) {
        out.append(&mut self.ops);
    }

    fn counters(&self) -> &FtlCounters {
        &self.counters
    }

    fn ecc_stats(&self) -> controller::EccStats {
        *self.ctl.stats()
    }

    fn erase_counts(&self) -> &[u32] {
        &self.erase
    }
}
