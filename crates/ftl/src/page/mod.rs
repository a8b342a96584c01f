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
//! - Every page carries an OOB record (logical page, sequence number, kind), so the map can
//!   be rebuilt from the chip alone.
//!
//! ## Crash safety (see the crate docs for the contract)
//!
//! - **Checkpoints** ([`checkpoint`]): a reserved region of SLC-mode blocks holds snapshots
//!   (map, block states, frontiers, sequence counter) in two or more generations, plus a
//!   trim log. Written at format, on [`Ftl::shutdown`], and on a flush once
//!   `checkpoint_interval` blocks have been opened since the last one.
//! - **Recovery** ([`recovery`]): [`FullScan`](crate::FullScan) reads every page's OOB;
//!   [`RollForward`](crate::RollForward) loads the checkpoint and scans only the blocks the
//!   allocator can have opened since (free blocks are opened in a fixed order, so the
//!   candidates are known).
//! - **Paired pages** (MLC): programming an upper page can destroy its word line's lower
//!   page if power fails mid-program. A lower page is *exposed* while an upper partner is
//!   unprogrammed. Flushed data is never left exposed: `flush` (and every checkpoint)
//!   *seals* each open block by programming padding pages until no lower page written so
//!   far is exposed. A GC or wear-levelling victim is not erased while a page that
//!   superseded its data, or a copy of its data, is exposed (the victim waits in state
//!   `Dirty`; when space runs out the offending frontier is sealed): an old version is never
//!   destroyed before its replacement is safe. Blocks found half-written at mount are not
//!   programmed again (closed), so nothing exposed at a crash is ever put at risk again.
//! - **Trims** are appended to the trim log on flush and before any erase.

mod checkpoint;
pub(crate) mod recovery;

use crate::gc::{Candidate, SelectContext, VictimKind, VictimPolicy};
use crate::{Cause, FlashOp, Ftl, FtlCounters, FtlError, OpKind};
use alloc::boxed::Box;
use alloc::collections::{BinaryHeap, VecDeque};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use controller::{Controller, CtlError, DataClass, OobRecord, PageKind, PageRead, PayloadMode};
use core::cmp::Reverse;
use nand::hint::prefetch;
use nand::{
    BlockAddr, BlockStatus, ErrorModel, Geometry, Lpn, NandError, Nanos, OpTiming, PhysAddr,
    Storage,
};
use serde::{Deserialize, Serialize};
use strength_reduce::StrengthReducedU32;

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
    /// Foreground GC runs on a die while it has fewer free blocks than this (≥ 2). With 2,
    /// a GC job may take a die's last free block, and a power cut in that job can leave a
    /// full volume with nothing to copy into after recovery; 3 (the default) keeps one in
    /// reserve across any cut (the crash tests run with 3).
    pub gc_threshold: u32,
    /// Victim policy.
    pub victim: VictimKind,
    /// Static wear levelling (off when `None`).
    pub wear_leveling: Option<WearLevelConfig>,
    /// BCH correction capability of every page.
    pub ecc_t: u32,
    /// A flush writes a new checkpoint once this many blocks have been opened since the
    /// last one (bounds roll-forward recovery); 0 = 4 per die.
    pub checkpoint_interval: u32,
    /// Blocks per die reserved for checkpoints; 0 = enough for two checkpoints and a trim
    /// log, computed from the geometry.
    pub region_blocks_per_die: u32,
    /// How [`PageFtl::mount`] rebuilds the volume.
    pub recovery: recovery::RecoveryKind,
}

impl PageFtlConfig {
    /// The checkpoint region of a chip: flat block indices, in use order (block `i` of every
    /// die, then `i + 1`, …). Depends only on the chip and FTL configuration, so format and
    /// mount agree; a simulator in digest mode keeps these blocks' bytes.
    pub fn region_blocks(&self, chip: &nand::ChipConfig) -> Vec<u32> {
        let geo = chip.geometry;
        let ndies = geo.total_dies();
        let bpd = geo.planes_per_die * geo.blocks_per_plane;
        let per_die = if self.region_blocks_per_die > 0 {
            self.region_blocks_per_die
        } else {
            let usable = (geo.pages_per_block / chip.cell.bits_per_cell()).max(1) as u64;
            let blocks = geo.total_blocks() as u64;
            let logical =
                (geo.total_pages() as f64 * (1.0 - self.over_provisioning.clamp(0.0, 1.0))) as u64;
            let bytes = 32 + ndies as u64 * 16 + blocks * 5 + logical * 4;
            let payload = (geo.page_size as u64)
                .saturating_sub(checkpoint::HEADER as u64)
                .max(1);
            let body_blocks = bytes.div_ceil(payload).div_ceil(usable);
            // Two generations, a block of trim log, a spare for a bad block.
            (2 * body_blocks + 2).div_ceil(ndies as u64) as u32
        };
        let per_die = per_die.min(bpd);
        (0..per_die)
            .flat_map(|i| (0..ndies).map(move |d| d * bpd + i))
            .collect()
    }

    /// Blocks per die the checkpoint region takes on `chip` (the configured number, or the
    /// computed default).
    pub fn region_blocks_per_die_effective(&self, chip: &nand::ChipConfig) -> u32 {
        self.region_blocks(chip).len() as u32 / chip.geometry.total_dies().max(1)
    }
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
            checkpoint_interval: 0,
            region_blocks_per_die: 0,
            recovery: recovery::RecoveryKind::RollForward,
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
    /// Reserved for checkpoints.
    Region,
    /// Collected (no valid page) and waiting for its erase until the pages that replaced
    /// its data are sealed.
    Dirty,
}

/// A failed mount: why, and the controller it was given.
pub struct MountFailure<S: Storage, M: ErrorModel> {
    /// What went wrong.
    pub error: FtlError,
    /// The controller, with its chip as the failed mount left it.
    pub controller: Controller<S, M>,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for MountFailure<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MountFailure")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// A victim waiting in state `Dirty` for its erase.
#[derive(Debug, Clone, Copy)]
struct Pending {
    block: u32,
    cause: Cause,
    /// Highest sequence number of a write that superseded one of its pages.
    superseded: u64,
    /// Highest sequence number of a copy made from it.
    copied: u64,
}

/// Program errors that mean a block resumed after a crash cannot take its next page.
fn resume_conflict(e: &NandError) -> bool {
    matches!(
        e,
        NandError::NotErased(_)
            | NandError::OutOfOrder { .. }
            | NandError::LowerPageNotProgrammed { .. }
            | NandError::NeedsErase(_)
    )
}

/// How many pages ahead of a GC copy its map entry is prefetched.
const PREFETCH_AHEAD: u32 = 4;

/// "No upper partner" in the per-page pairing table.
const NO_UPPER: u32 = u32::MAX;

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
    /// Victims waiting for their erase.
    dirty: VecDeque<Pending>,
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
    /// `ppb` and `blocks_per_die` as multiply-shift divisors: the hot paths split flat page
    /// indices into (block, page) several times per operation, and a hardware division is
    /// ten times slower than the multiplication that replaces it.
    ppb_div: StrengthReducedU32,
    die_div: StrengthReducedU32,
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
    /// Region blocks in use order (interleaved over dies).
    region: Vec<u32>,
    /// Page indices programmable in a region block (its LSB pages in SLC mode).
    region_pages: Vec<u32>,
    /// Per page index: the highest upper partner on its word line (multi-level chips).
    upper: Vec<u32>,
    /// Largest distance from a lower page to its upper partner (0: nothing is ever exposed).
    window: u32,
    /// Sequence number of each page programmed in the open frontier blocks, by
    /// (die, stream, page).
    fseq: Vec<u64>,
    /// Per block: highest sequence number of a write that superseded one of its pages.
    superseded: Vec<u64>,
    /// Per block: found free by recovery; erased before its first use (it may hold a
    /// program torn to all-ones or an interrupted erase).
    suspect: Vec<bool>,
    /// Trims not yet in the trim log.
    pending_trims: Vec<(u32, u64)>,
    /// The committed checkpoint.
    cp: checkpoint::CpState,
    /// Blocks opened since the last checkpoint.
    opened_since_cp: u32,
    /// Zeros for padding pages.
    pad: Vec<u8>,
    /// What the last mount did.
    recovery: Option<recovery::RecoveryReport>,
    /// Per block: opened since the last checkpoint. Such a block is not erased before the
    /// next checkpoint: its records are what roll-forward recovery finds newer versions in.
    young: Vec<bool>,
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
        let multi = ftl.ctl.chip().config().cell != nand::CellType::Slc;
        for b in 0..ftl.geo.total_blocks() {
            let addr = ftl.block_addr(b);
            let info = ftl.ctl.chip().block_info(addr)?;
            ftl.erase[b as usize] = info.erase_count;
            let in_region = ftl.state[b as usize] == BState::Region;
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
                    // Data blocks in native mode, region blocks in SLC mode.
                    if multi && info.slc_mode != in_region {
                        ftl.ctl.chip_mut().set_slc_mode(addr, in_region)?;
                    }
                    if in_region {
                        continue;
                    }
                    ftl.state[b as usize] = BState::Free;
                    let d = ftl.die_of(b) as usize;
                    ftl.dies[d].free.push(Reverse((ftl.erase[b as usize], b)));
                }
                _ => ftl.state[b as usize] = BState::Bad,
            }
        }
        ftl.size_volume()?;
        ftl.write_checkpoint(now)?;
        Ok(ftl)
    }

    /// Mounts a volume after a clean shutdown or a crash, with the recovery procedure the
    /// configuration names (see [`RecoveryKind`](crate::RecoveryKind)).
    pub fn mount(ctl: Controller<S, M>, cfg: PageFtlConfig, now: Nanos) -> Result<Self, FtlError> {
        Self::try_mount(ctl, cfg, now).map_err(|f| f.error)
    }

    /// Like [`mount`](PageFtl::mount), but a failed mount hands the controller back (to
    /// power the chip on again after a cut during recovery, or to inspect it).
    pub fn try_mount(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        match cfg.recovery {
            recovery::RecoveryKind::FullScan => {
                Self::try_mount_with(ctl, cfg, now, &recovery::FullScan)
            }
            recovery::RecoveryKind::RollForward => {
                Self::try_mount_with(ctl, cfg, now, &recovery::RollForward)
            }
        }
    }

    /// Mounts with a given recovery procedure.
    pub fn mount_with<R: recovery::Recovery>(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
        procedure: &R,
    ) -> Result<Self, FtlError> {
        Self::try_mount_with(ctl, cfg, now, procedure).map_err(|f| f.error)
    }

    /// [`mount_with`](PageFtl::mount_with), handing the controller back on failure.
    pub fn try_mount_with<R: recovery::Recovery>(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
        procedure: &R,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        let mut ctl = ctl;
        if let Err(error) = Self::check_config(&mut ctl, &cfg) {
            return Err(Box::new(MountFailure {
                error,
                controller: ctl,
            }));
        }
        let mut ftl = Self::empty_checked(ctl, cfg);
        match procedure.recover(&mut ftl, now) {
            Ok(report) => {
                ftl.recovery = Some(report);
                Ok(ftl)
            }
            Err(error) => Err(Box::new(MountFailure {
                error,
                controller: ftl.ctl,
            })),
        }
    }

    /// What the last mount did (procedure, pages and blocks read, simulated time).
    pub fn recovery_report(&self) -> Option<&recovery::RecoveryReport> {
        self.recovery.as_ref()
    }

    fn empty(ctl: Controller<S, M>, cfg: PageFtlConfig) -> Result<Self, FtlError> {
        let mut ctl = ctl;
        Self::check_config(&mut ctl, &cfg)?;
        Ok(Self::empty_checked(ctl, cfg))
    }

    /// Rejects configurations this FTL cannot run with on `ctl`'s chip.
    fn check_config(ctl: &mut Controller<S, M>, cfg: &PageFtlConfig) -> Result<(), FtlError> {
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
        ctl.layout(cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("ecc_t = {}: {e}", cfg.ecc_t)))?;
        let geo = *ctl.chip().geometry();
        if geo.total_pages() >= LOST as u64 {
            return Err(FtlError::Config(format!(
                "{} pages exceed the page-level map's 32-bit entries",
                geo.total_pages()
            )));
        }
        Ok(())
    }

    fn empty_checked(ctl: Controller<S, M>, cfg: PageFtlConfig) -> Self {
        let geo = *ctl.chip().geometry();
        let ppb = geo.pages_per_block;
        let nblocks = geo.total_blocks() as usize;
        let ndies = geo.total_dies() as usize;
        let digest = ctl.config().mode == PayloadMode::Digest;
        let chip_cfg = ctl.chip().config().clone();
        let region = cfg.region_blocks(&chip_cfg);
        let multi = chip_cfg.cell != nand::CellType::Slc;
        let pairing = ctl.chip().pairing();
        let region_pages: Vec<u32> = if multi {
            pairing.pages_of_kind(nand::BitKind::Lsb).collect()
        } else {
            (0..ppb).collect()
        };
        let upper: Vec<u32> = (0..ppb)
            .map(|q| {
                if multi {
                    pairing.upper_pages(q).max().unwrap_or(NO_UPPER)
                } else {
                    NO_UPPER
                }
            })
            .collect();
        let window = upper
            .iter()
            .enumerate()
            .filter(|(_, &u)| u != NO_UPPER)
            .map(|(q, &u)| u - q as u32)
            .max()
            .unwrap_or(0);
        let mut state = vec![BState::Bad; nblocks];
        for &b in &region {
            state[b as usize] = BState::Region;
        }
        PageFtl {
            policy: cfg.victim.policy(),
            cfg,
            addrs: (0..geo.total_blocks())
                .map(|b| geo.block_at(b).expect("block in range"))
                .collect(),
            geo,
            ppb,
            blocks_per_die: geo.planes_per_die * geo.blocks_per_plane,
            ppb_div: StrengthReducedU32::new(ppb),
            die_div: StrengthReducedU32::new(geo.planes_per_die * geo.blocks_per_plane),
            logical: 0,
            digest,
            l2p: Vec::new(),
            p2l: vec![INVALID; geo.total_pages() as usize],
            state,
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
                    dirty: VecDeque::new(),
                    erases_since_check: 0,
                })
                .collect(),
            rr_die: 0,
            seq: 1,
            ops: Vec::new(),
            counters: FtlCounters::default(),
            region,
            region_pages,
            upper,
            window,
            fseq: vec![0; ndies * 2 * ppb as usize],
            superseded: vec![0; nblocks],
            suspect: vec![false; nblocks],
            pending_trims: Vec::new(),
            cp: checkpoint::CpState::default(),
            opened_since_cp: 0,
            pad: vec![0; if digest { 0 } else { geo.page_size as usize }],
            recovery: None,
            young: vec![false; nblocks],
            ctl,
        }
    }

    fn size_volume(&mut self) -> Result<(), FtlError> {
        self.size_volume_to(None)
    }

    /// Sizes the volume: from the good blocks, or to `fixed` logical pages (a mounted
    /// volume keeps the size its checkpoint records, whatever blocks went bad since).
    fn size_volume_to(&mut self, fixed: Option<u64>) -> Result<(), FtlError> {
        let good = self
            .state
            .iter()
            .filter(|s| !matches!(s, BState::Bad | BState::Region))
            .count() as u64;
        let ndies = self.dies.len() as u64;
        let physical = good * self.ppb as u64;
        let logical = (physical as f64 * (1.0 - self.cfg.over_provisioning)) as u64;
        let reserve = ndies * (self.cfg.gc_threshold as u64 + 2);
        let max = good.saturating_sub(reserve + 1) * self.ppb as u64;
        let logical = fixed.unwrap_or(logical);
        if logical == 0 || logical > max.max(fixed.unwrap_or(0)) {
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
                let b = self.block_of(p);
                self.valid[b as usize] -= 1;
            }
        }
        self.l2p = l2p;
        Ok(())
    }

    /// Where logical page `lpn` lives (`None` if unmapped, trimmed or lost).
    pub fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        let p = *self.l2p.get(lpn as usize)?;
        (p != INVALID && p != LOST).then(|| self.phys_addr(p))
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
        self.state
            .iter()
            .filter(|s| !matches!(s, BState::Bad | BState::Region))
            .count() as u64
            * self.ppb as u64
    }

    // ----- addressing ------------------------------------------------------------------

    fn block_addr(&self, b: u32) -> BlockAddr {
        self.addrs[b as usize]
    }

    fn phys_addr(&self, phys: u32) -> PhysAddr {
        let (b, page) = self.split(phys);
        self.block_addr(b).page(page).expect("page in range")
    }

    /// Block of flat page `phys`.
    fn block_of(&self, phys: u32) -> u32 {
        phys / self.ppb_div
    }

    /// (block, page in block) of flat page `phys`.
    fn split(&self, phys: u32) -> (u32, u32) {
        StrengthReducedU32::div_rem(phys, self.ppb_div)
    }

    fn die_of(&self, b: u32) -> u32 {
        b / self.die_div
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

    /// Marks physical page `phys` as no longer holding valid data, superseded by the write
    /// (or trim) with sequence number `by`.
    fn invalidate(&mut self, phys: u32, by: u64) {
        let b = self.block_of(phys);
        self.superseded[b as usize] = self.superseded[b as usize].max(by);
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

    fn map(&mut self, lpn: u64, phys: u32, seq: u64) {
        let old = self.l2p[lpn as usize];
        if old != INVALID && old != LOST {
            self.invalidate(old, seq);
        }
        self.l2p[lpn as usize] = phys;
        self.p2l[phys as usize] = lpn as u32;
        let b = self.block_of(phys);
        self.valid[b as usize] += 1;
    }

    // ----- allocation --------------------------------------------------------------------

    fn allocate(&mut self, now: Nanos, die: usize, stream: usize) -> Result<u32, FtlError> {
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
            if self.suspect[b as usize] {
                // Found free by recovery: make sure it really is erased.
                self.suspect[b as usize] = false;
                let addr = self.block_addr(b);
                match self.ctl.chip_mut().erase(now, addr) {
                    Ok(t) => {
                        self.push_erase(b, Cause::Mount, t);
                        self.erase[b as usize] += 1;
                    }
                    Err(NandError::EraseFailed(_)) => {
                        self.state[b as usize] = BState::Bad;
                        self.counters.retired_blocks += 1;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            self.state[b as usize] = BState::Open;
            self.young[b as usize] = true;
            self.superseded[b as usize] = 0;
            self.opened_since_cp += 1;
            self.dies[die].frontier[stream] = Some(Frontier { block: b, next: 0 });
        }
    }

    /// Records the sequence number of a page just programmed in a frontier block.
    fn note_program(&mut self, die: usize, phys: u32, seq: u64) {
        let (b, page) = self.split(phys);
        for s in [HOST, COLD] {
            if self.dies[die].frontier[s].is_some_and(|f| f.block == b) {
                let i = (die * 2 + s) * self.ppb as usize + page as usize;
                self.fseq[i] = seq;
            }
        }
    }

    /// The lowest sequence number among the exposed lower pages of a frontier (a lower
    /// page whose upper partner is not programmed yet), or `u64::MAX`.
    fn exposed_min(&self, die: usize, stream: usize) -> u64 {
        let Some(f) = self.dies[die].frontier[stream] else {
            return u64::MAX;
        };
        let base = (die * 2 + stream) * self.ppb as usize;
        (f.next.saturating_sub(self.window)..f.next)
            .filter(|&q| {
                let u = self.upper[q as usize];
                u != NO_UPPER && u >= f.next
            })
            .map(|q| self.fseq[base + q as usize])
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Programs padding pages on a frontier until none of its exposed lower pages has a
    /// sequence number ≤ `upto` (or the block is full).
    fn seal(&mut self, now: Nanos, die: usize, stream: usize, upto: u64) -> Result<(), FtlError> {
        while self.exposed_min(die, stream) <= upto {
            let f = self.dies[die].frontier[stream].expect("exposed frontier is open");
            let phys = f.block * self.ppb + f.next;
            self.dies[die].frontier[stream] = Some(Frontier {
                block: f.block,
                next: f.next + 1,
            });
            let seq = self.seq;
            let rec = OobRecord::new(u64::MAX, seq, PageKind::Meta(checkpoint::PAD_KIND));
            self.seq += 1;
            let pad = core::mem::take(&mut self.pad);
            let r = self
                .ctl
                .program(now, self.phys_addr(phys), &pad, rec, self.cfg.ecc_t);
            self.pad = pad;
            match r {
                Ok(t) => {
                    self.push_op(f.block, OpKind::Program, Cause::Meta, t, Nanos::ZERO, None);
                    self.counters.pad_pages += 1;
                    // A padding page holds nothing to protect: never exposed itself.
                    self.note_program(die, phys, u64::MAX);
                    if f.next + 1 == self.ppb {
                        self.dies[die].frontier[stream] = None;
                        self.close_if_full(phys);
                    }
                }
                Err(CtlError::Nand(NandError::ProgramFailed(_))) => {
                    self.counters.program_retries += 1;
                    self.retire(f.block, die);
                }
                Err(CtlError::Nand(e)) if resume_conflict(&e) => self.close_block(f.block, die),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Seals every frontier: no page written so far stays exposed.
    fn seal_all(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.window == 0 {
            return Ok(());
        }
        for die in 0..self.dies.len() {
            for s in [HOST, COLD] {
                self.seal(now, die, s, u64::MAX - 1)?;
            }
        }
        Ok(())
    }

    fn close_if_full(&mut self, phys: u32) {
        let (b, page) = self.split(phys);
        if page == self.ppb - 1 && self.state[b as usize] == BState::Open {
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
        class: DataClass,
    ) -> Result<Option<(u32, u64)>, FtlError> {
        let phys = self.allocate(now, die, HOST)?;
        let addr = self.phys_addr(phys);
        let seq = self.seq;
        let rec = OobRecord::new(lpn, seq, PageKind::User(class));
        self.seq += 1;
        let r = self.ctl.program(now, addr, data, rec, self.cfg.ecc_t);
        let b = self.block_of(phys);
        match r {
            Ok(t) => {
                self.push_op(b, OpKind::Program, Cause::Host, t, Nanos::ZERO, None);
                self.last_write[b as usize] = now;
                if self.window > 0 {
                    self.note_program(die, phys, seq);
                }
                Ok(Some((phys, seq)))
            }
            Err(CtlError::Nand(NandError::ProgramFailed(_))) => {
                self.counters.program_retries += 1;
                self.retire(b, die);
                Ok(None)
            }
            Err(CtlError::Nand(e)) if resume_conflict(&e) => {
                self.close_block(b, die);
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Stops writing to a frontier block (resumed after a crash, its next page turned out
    /// not programmable: a torn program that reads as erased).
    fn close_block(&mut self, b: u32, die: usize) {
        for f in self.dies[die].frontier.iter_mut() {
            if f.is_some_and(|f| f.block == b) {
                *f = None;
            }
        }
        if self.state[b as usize] == BState::Open {
            self.state[b as usize] = BState::Full;
            self.index_insert(b);
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
        self.retire_or_relocate(b, die);
    }

    /// A bad block: `Bad` if it holds nothing valid, else `Retiring` with a relocation job
    /// at the front of its die's queue.
    fn retire_or_relocate(&mut self, b: u32, die: usize) {
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
            for v in 0..self.ppb as usize {
                let mut b = self.head[base + v];
                while b != NIL {
                    if !self.young[b as usize] {
                        return Some(b);
                    }
                    b = self.next[b as usize];
                }
            }
            return None;
        }
        let lo = die as u32 * self.blocks_per_die;
        let ctx = SelectContext {
            now,
            pages_per_block: self.ppb,
            max_erase_count: self.erase.iter().copied().max().unwrap_or(0),
        };
        let mut cands = (lo..lo + self.blocks_per_die)
            .filter(|&b| {
                self.state[b as usize] == BState::Full
                    && self.valid[b as usize] < self.ppb
                    && !self.young[b as usize]
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
            // The copy updates the map entry of the page's logical page, a random place in
            // a large table: start loading the entry of a page a few copies ahead.
            // Likewise the chip's state and stored spare area of the page it will read.
            if let Some(&ahead) = self.p2l.get((src + PREFETCH_AHEAD) as usize) {
                if ahead < LOST && job.next + PREFETCH_AHEAD < self.ppb {
                    prefetch(&self.l2p, ahead as usize);
                    self.ctl
                        .chip()
                        .prefetch_page(self.phys_addr(src + PREFETCH_AHEAD));
                }
            }
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
        self.state[v as usize] = BState::Dirty;
        self.dies[die].dirty.push_back(Pending {
            block: v,
            cause: job.cause,
            superseded: self.superseded[v as usize],
            copied: self.seq.saturating_sub(1),
        });
        self.erase_dirty(now, die, false)
    }

    /// The frontier holding an exposed page that a pending victim's erase must wait for.
    fn blocking_frontier(&self, die: usize, p: &Pending) -> Option<(usize, usize)> {
        if self.window == 0 {
            return None;
        }
        (0..self.dies.len())
            .flat_map(|d| [(d, HOST), (d, COLD)])
            .find(|&(d, s)| {
                let e = self.exposed_min(d, s);
                e <= p.superseded || (d == die && e <= p.copied)
            })
    }

    /// Erases the victims waiting on `die` whose replacements are sealed; with `force`,
    /// seals what they wait for first.
    fn erase_dirty(&mut self, now: Nanos, die: usize, force: bool) -> Result<(), FtlError> {
        while let Some(p) = self.dies[die].dirty.front().copied() {
            if let Some((d, s)) = self.blocking_frontier(die, &p) {
                if !force {
                    return Ok(());
                }
                let upto = if d == die {
                    p.superseded.max(p.copied)
                } else {
                    p.superseded
                };
                self.seal(now, d, s, upto)?;
                continue;
            }
            self.dies[die].dirty.pop_front();
            self.erase_victim(now, die, p.block, p.cause)?;
        }
        Ok(())
    }

    fn erase_victim(
        &mut self,
        now: Nanos,
        die: usize,
        v: u32,
        cause: Cause,
    ) -> Result<(), FtlError> {
        // A trim the log does not hold yet could resurrect a stale copy this erase would
        // otherwise be the only witness against: persist trims first.
        self.persist_trims(now)?;
        let addr = self.block_addr(v);
        match self.ctl.chip_mut().erase(now, addr) {
            Ok(t) => {
                self.push_erase(v, cause, t);
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
        let b = self.block_of(src);
        let (read_op, class) = match self.ctl.read_for_relocation(now, addr) {
            Ok(PageRead::Data(info)) => (
                self.push_op(b, OpKind::Read, cause, info.timing, info.ecc, None),
                // The copy keeps the class its writer gave (critical pages stay critical).
                info.record.kind.data_class().unwrap_or_default(),
            ),
            Ok(PageRead::Erased { .. }) | Err(CtlError::Uncorrectable { .. }) => {
                // The only copy is gone: remember it, so reads fail rather than return
                // stale or zero data.
                self.invalidate(src, self.seq);
                self.l2p[lpn as usize] = LOST;
                self.counters.lost_pages += 1;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let (dst, seq) = loop {
            let phys = self.allocate(now, die, COLD)?;
            let seq = self.seq;
            let rec = OobRecord::new(lpn as u64, seq, PageKind::GcCopy(class));
            self.seq += 1;
            let pb = self.block_of(phys);
            match self.ctl.program_relocated(now, self.phys_addr(phys), rec) {
                Ok(t) => {
                    self.push_op(pb, OpKind::Program, cause, t, Nanos::ZERO, Some(read_op));
                    self.last_write[pb as usize] = now;
                    if self.window > 0 {
                        self.note_program(die, phys, seq);
                    }
                    break (phys, seq);
                }
                Err(CtlError::Nand(NandError::ProgramFailed(_))) => {
                    self.counters.program_retries += 1;
                    self.retire(pb, die);
                }
                Err(CtlError::Nand(e)) if resume_conflict(&e) => self.close_block(pb, die),
                Err(e) => return Err(e.into()),
            }
        };
        self.counters.valid_copies += 1;
        // A copy does not count as superseding its source: the victim's wait for its copies
        // is tracked per job (`Pending::copied`), on this die only.
        self.map(lpn as u64, dst, 0);
        let _ = seq;
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
            .filter(|&b| self.state[b as usize] == BState::Full && !self.young[b as usize])
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
        // Collecting more victims than the die has blocks without reaching the threshold
        // means GC no longer gains space (too many bad blocks): stop, let allocation decide.
        let mut budget = self.blocks_per_die;
        while self.dies[die].free.len() < self.cfg.gc_threshold as usize {
            if budget == 0 {
                return Ok(());
            }
            budget -= 1;
            if !self.dies[die].dirty.is_empty() {
                // Wait for the natural sealing while there is slack; with one free block
                // left (enough for one more GC job), seal and erase now.
                let force = self.dies[die].free.len() <= 1;
                self.erase_dirty(now, die, force)?;
                if self.dies[die].free.len() >= self.cfg.gc_threshold as usize {
                    break;
                }
            }
            if self.dies[die].gc.is_none() {
                let mut victim = self.select_victim(die, now);
                if victim.is_none() && self.young.iter().any(|&y| y) {
                    // Only blocks written since the last checkpoint are left: checkpoint,
                    // which makes them collectable.
                    self.write_checkpoint(now)?;
                    victim = self.select_victim(die, now);
                }
                match victim {
                    Some(v) => self.dies[die].gc = Some(self.claim_victim(v, Cause::Gc)),
                    None if !self.dies[die].dirty.is_empty() => {
                        self.erase_dirty(now, die, true)?;
                        continue;
                    }
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

    fn write_inner(
        &mut self,
        now: Nanos,
        lpn: u64,
        data: &[u8],
        class: DataClass,
    ) -> Result<(), FtlError> {
        let ndies = self.dies.len();
        let first = self.rr_die as usize;
        self.rr_die = ((first + 1) % ndies) as u32;
        for k in 0..ndies {
            let die = (first + k) % ndies;
            loop {
                // Space first (again after a failed program retired a block).
                self.ensure_space(now, die)?;
                match self.program_host(now, die, data, lpn, class) {
                    Ok(Some((phys, seq))) => {
                        self.map(lpn, phys, seq);
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

    fn write_with(
        &mut self,
        now: Nanos,
        lpn: Lpn,
        data: &[u8],
        hint: DataClass,
    ) -> Result<(), FtlError> {
        let lpn = self.check_lpn(lpn)?;
        self.check_buf(data.len())?;
        self.counters.host_writes += 1;
        self.write_inner(now, lpn, data, hint)
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
                    self.block_of(phys),
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
        if old == INVALID {
            // Nothing to discard (never written, or trimmed already and logged).
            return Ok(());
        }
        let seq = self.seq;
        self.seq += 1;
        if old != LOST {
            self.invalidate(old, seq);
        }
        self.l2p[l as usize] = INVALID;
        self.pending_trims.push((l as u32, seq));
        Ok(())
    }

    fn flush(&mut self, now: Nanos) -> Result<(), FtlError> {
        // Every write is programmed before it returns; what remains is to seal exposed MLC
        // lower pages, persist trims, and bound the roll-forward work.
        self.counters.flushes += 1;
        let interval = if self.cfg.checkpoint_interval > 0 {
            self.cfg.checkpoint_interval
        } else {
            4 * self.dies.len() as u32
        };
        if self.opened_since_cp >= interval {
            return self.write_checkpoint(now);
        }
        self.seal_all(now)?;
        self.persist_trims(now)
    }

    fn shutdown(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.counters.flushes += 1;
        self.write_checkpoint(now)
    }

    fn tick(&mut self, now: Nanos) -> Result<bool, FtlError> {
        let mut worked = false;
        for die in 0..self.dies.len() {
            if !self.dies[die].background.is_empty() {
                self.run_pending(now, die)?;
                worked = true;
            }
            if !self.dies[die].dirty.is_empty() {
                let before = self.dies[die].dirty.len();
                self.erase_dirty(now, die, false)?;
                worked |= self.dies[die].dirty.len() < before;
            }
        }
        Ok(worked)
    }

    fn prefetch(&self, lpn: u64) {
        prefetch(&self.l2p, lpn as usize);
    }

    fn prefetch_mapped(&self, lpn: u64) {
        if let Some(&old) = self.l2p.get(lpn as usize) {
            if old < LOST {
                let b = self.block_of(old) as usize;
                prefetch(&self.p2l, old as usize);
                prefetch(&self.valid, b);
                prefetch(&self.superseded, b);
                prefetch(&self.next, b);
                prefetch(&self.prev, b);
            }
        }
    }

    fn prefetch_data(&self, lpn: u64) {
        if let Some(&p) = self.l2p.get(lpn as usize) {
            if p < LOST {
                let (b, page) = self.split(p);
                // (A digest-mode store holds no data area: the data hint is a no-op there.)
                self.ctl.chip().prefetch_flat(b as usize, page, true);
            }
        }
    }

    fn take_ops(&mut self, out: &mut Vec<FlashOp>) {
        if out.is_empty() {
            // Hand over the buffer (and take the caller's empty one back): no copy.
            core::mem::swap(out, &mut self.ops);
        } else {
            out.append(&mut self.ops);
        }
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
