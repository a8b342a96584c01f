//! The FTL substrate: what every mapping kernel (page-level today, block-level next) runs on.
//!
//! A [`Substrate`] owns the controller and everything about physical blocks that does not
//! depend on how logical addresses are mapped:
//!
//! - addressing (flat block and page indices ↔ packed chip addresses, multiply-shift splits);
//! - the op log and counters ([`oplog`]): every flash operation the FTL issues, with its
//!   cause, for the engine's timelines;
//! - the per-block table and its indexes ([`blocks`]): state, valid-page count, erase
//!   count, last write, "young" and "suspect" flags, per-die free heaps ordered by erase
//!   count and the full-block index bucketed by valid count (O(1) greedy victim);
//! - allocation ([`alloc`]): write frontiers per (die, stream), MLC sealing of exposed lower
//!   pages, closing and retiring blocks, and the **one** program-or-retire and
//!   erase-or-retire path every program and erase of the FTL goes through;
//! - the GC job machine ([`gc`]): victim selection through a [`VictimPolicy`], one copy or
//!   one erase per step, background relocation and wear-levelling jobs, deferred erases of
//!   victims whose replacements are not sealed yet; the mapping kernel answers a few
//!   questions through the [`Kernel`] trait (who owns a page, where a copy went);
//! - the checkpoint region ([`region`]): generations of an opaque byte stream plus an
//!   append-only log of fixed-size entries, in SLC-mode blocks reserved at format, written
//!   through a metadata writer ([`meta`]: whole pages today).
//!
//! ## Invariants (checked by [`Substrate::verify`])
//!
//! - every block is in exactly one state; a `Free` block is in its die's free heap exactly
//!   once (with its current erase count) and no other block is;
//! - a `Full` block is in the full-block index under its die and valid count, and no other
//!   block is; the index's lists are consistent (`next`/`prev` agree);
//! - a live frontier (`next` < pages per block) points at an `Open` block of its die, every
//!   `Open` block is a live frontier, and no block is the live frontier of two streams (an
//!   exhausted frontier points at a block that has since become full);
//! - a GC job's victim is `Collecting`, a relocation job's `Retiring`, a pending erase's
//!   `Dirty`;
//! - the erase-count mirror equals the chip's count of every good block.
//!
//! The mapping kernel states its own (map ↔ reverse map ↔ valid counts) on top.

pub(crate) mod alloc;
pub(crate) mod blocks;
pub(crate) mod gc;
pub(crate) mod meta;
pub(crate) mod oplog;
pub(crate) mod pace;
pub(crate) mod program;
pub(crate) mod region;
pub(crate) mod sense;
pub(crate) mod table;

use crate::policy::{CopyOrder, EccStrength, GcPacing, Placement, Policies, Slot};
use crate::victim::VictimPolicy;
use crate::FtlError;
use ::alloc::boxed::Box;
use ::alloc::collections::{BinaryHeap, VecDeque};
use ::alloc::vec;
use ::alloc::vec::Vec;
use controller::{Controller, PayloadMode};
use core::cmp::Reverse;
use nand::{BlockAddr, ErrorModel, Geometry, Nanos, PhysAddr, Storage};
use serde::{Deserialize, Serialize};
use strength_reduce::StrengthReducedU32;

pub(crate) use self::alloc::{COLD, HOST};
pub(crate) use self::gc::Kernel;
pub(crate) use self::oplog::OpLog;
pub use self::program::Header;
pub(crate) use self::program::{Payload, Prog, Programmed};
pub(crate) use self::sense::{Sense, Sensed};

/// End of an intrusive list.
pub(crate) const NIL: u32 = u32::MAX;
/// "No upper partner" in the per-page pairing table.
pub(crate) const NO_UPPER: u32 = u32::MAX;

/// Static wear-levelling settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WearLevelConfig {
    /// Largest tolerated difference between the most and the least worn block of a die.
    pub spread: u32,
    /// Erases on a die between two checks.
    pub check_every: u32,
}

/// (De)serializes an optional [`WearLevelConfig`] so a configuration file can turn wear
/// levelling off: `wear_leveling = false` is `None`, `true` the defaults (spread 64, a
/// check every 32 erases), a table the given settings.
pub mod wear_leveling_toggle {
    use super::WearLevelConfig;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(
        untagged,
        expecting = "wear_leveling: expected false, true or a table { spread = N, check_every = N }"
    )]
    enum Toggle {
        On(bool),
        With(WearLevelConfig),
    }

    /// Serializes `None` as `false`.
    pub fn serialize<S: Serializer>(v: &Option<WearLevelConfig>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            None => Toggle::On(false).serialize(s),
            Some(c) => Toggle::With(*c).serialize(s),
        }
    }

    /// Reads `false`, `true` or a table.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<WearLevelConfig>, D::Error> {
        Ok(match Toggle::deserialize(d)? {
            Toggle::On(false) => None,
            Toggle::On(true) => Some(WearLevelConfig {
                spread: 64,
                check_every: 32,
            }),
            Toggle::With(c) => Some(c),
        })
    }
}

/// What the substrate needs from a scheme's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SubstrateConfig {
    /// BCH correction capability of every data and metadata page.
    pub ecc_t: u32,
    /// Re-reads of a GC or relocation read that does not decode.
    pub read_retries: u32,
    /// Foreground GC runs on a die while it has fewer free blocks than this.
    pub gc_threshold: u32,
    /// Static wear levelling.
    pub wear_leveling: Option<WearLevelConfig>,
    /// Blocks opened since the last checkpoint are "young" and kept from GC until the
    /// next one (what roll-forward recovery needs; a full-scan recovery does not).
    pub young_rule: bool,
    /// A deliberate bug (test builds only).
    #[cfg(feature = "sabotage")]
    pub sabotage: crate::sabotage::Sabotage,
}

impl SubstrateConfig {
    /// A block-level kernel's (block, GFTL/RFTL, DFTL): every page at `ecc_t`, no read
    /// retries, no static wear levelling, GC thresholds and young blocks the kernel's own.
    pub(crate) fn block_level(ecc_t: u32) -> Self {
        SubstrateConfig {
            ecc_t,
            read_retries: 0,
            gc_threshold: 1,
            wear_leveling: None,
            young_rule: false,
            #[cfg(feature = "sabotage")]
            sabotage: Default::default(),
        }
    }
}

/// State of a physical block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BState {
    Free,
    Open,
    Full,
    Collecting,
    Retiring,
    Bad,
    /// Reserved for checkpoints.
    Region,
    /// Reserved for the demand-paged map's translation pages (`page::paged`).
    Map,
    /// Collected (no valid page) and waiting for its erase until the pages that replaced
    /// its data are sealed.
    Dirty,
}

impl BState {
    /// Whether a running volume may move a block from state `self` to `to` (the substrate's
    /// lifecycle; a mount or format sets what it finds instead: [`Substrate::adopt_state`]):
    ///
    /// - any block may go `Bad` (a program, erase or mode change failed);
    /// - `Free` → `Open` (allocation), `Region` or `Map` (the region or map takes it);
    /// - `Open` → `Full` (its last page programmed, or closed early);
    /// - `Full` → `Collecting` (a GC or wear-levelling victim);
    /// - `Open`, `Full` or `Collecting` → `Retiring` (it went bad holding valid pages);
    /// - `Collecting` → `Dirty` (its pages copied; the erase waits for their sealing);
    /// - `Dirty` → `Free` (erased), `Region` → `Free` (the region let it go).
    ///
    /// Block-level kernels erase and reuse blocks of their own pools outside this cycle
    /// ([`Substrate::release_erased`], [`Substrate::reopen`]).
    pub(crate) fn may_become(self, to: BState) -> bool {
        use BState::*;
        matches!(
            (self, to),
            (_, Bad)
                | (Free, Open | Region | Map)
                | (Open, Full)
                | (Full, Collecting)
                | (Open | Full | Collecting, Retiring)
                | (Collecting, Dirty)
                | (Dirty | Region, Free)
        )
    }

    /// Reserved for metadata (the checkpoint region or the map's translation pages): never
    /// data, never free, kept in SLC mode.
    #[inline]
    pub(crate) fn reserved(self) -> bool {
        matches!(self, BState::Region | BState::Map)
    }
}

/// A victim waiting in state `Dirty` for its erase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub block: u32,
    pub cause: crate::Cause,
    /// Highest sequence number of a write that superseded one of its pages.
    pub superseded: u64,
    /// Highest sequence number of a copy made from it.
    pub copied: u64,
    /// A real-time pacing already gave the trim log a step before this erase.
    pub trims_logged: bool,
}

/// An open block and its next page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frontier {
    pub block: u32,
    pub next: u32,
}

/// A GC, relocation or wear-levelling job: a victim and the next page to look at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    pub victim: u32,
    pub next: u32,
    /// The copy order's cursor over critical pages (see `policy::CopyCursor`).
    pub next_critical: u32,
    pub cause: crate::Cause,
    /// Erase the victim at the end (false for a retiring block).
    pub erase: bool,
    /// Its copies may take padding pages (AP's placement). Off for a victim so dense in
    /// critical pages that its copies plus their pads would fill a whole block: collecting
    /// it would then free nothing, and greedy would choose it again (see
    /// `gc::start_job`); its critical copies take unreliable slots instead, counted as
    /// lapses.
    pub pads: bool,
}

/// Per-die allocation and GC state.
#[derive(Debug)]
pub(crate) struct DieState {
    pub free: BinaryHeap<Reverse<(u32, u32)>>,
    pub frontier: [Option<Frontier>; 2],
    /// The reclaiming GC job (at most one per die).
    pub gc: Option<Job>,
    /// Relocation (front) and wear-levelling (back) jobs, run when space allows.
    pub background: VecDeque<Job>,
    /// Pages the ECC-strength policy asked to rewrite (flat indices), relocated as
    /// background work like `background` jobs.
    pub refresh: VecDeque<u32>,
    /// Victims waiting for their erase.
    pub dirty: VecDeque<Pending>,
    pub erases_since_check: u32,
    /// Padding pages the open shared destination may still take while the die has no free
    /// block beyond the reserve (a real-time pacing with a placement that pads: eq. 6's
    /// slack, [`Substrate::pad_slack`]); reset when a destination opens.
    pub pads_left: u32,
}

/// The shared physical layer of every FTL scheme (see the module docs).
pub(crate) struct Substrate<S: Storage, M: ErrorModel> {
    /// The controller: private to the substrate, so every charged operation goes through
    /// its one sense, program and erase path ([`sense`], [`program`]); kernels get a
    /// read-only view ([`Substrate::controller`]) and the device settings below.
    ctl: Controller<S, M>,
    pub cfg: SubstrateConfig,
    /// Bits corrected in the last metadata unit read that decoded (`meta::read_with_retries`:
    /// what the region's idle-time probe judges).
    meta_corrected: u32,
    policy: Box<dyn VictimPolicy>,
    /// Where writes and copies go.
    pub placement: Box<dyn Placement>,
    /// The strength of each program; sees every read.
    pub ecc: Box<dyn EccStrength>,
    /// When GC runs.
    pacing: Box<dyn GcPacing>,
    /// Which valid page GC copies next.
    copy_order: Box<dyn CopyOrder>,
    /// Bit kind of every page index of a block (LSB on SLC chips).
    pub bits: Vec<nand::BitKind>,
    /// What the policies answered once, so the hot paths skip calls for the defaults:
    /// the ECC policy's fixed strength, whether placement judges slots, whether copies go
    /// in ascending order, whether pacing is the foreground rule.
    pub fixed_t: Option<u32>,
    pub judge_slots: bool,
    ascending: bool,
    /// The copy order sorts by destination slot and class (AP's Alg. 2).
    asymmetric: bool,
    foreground: bool,
    /// Host writes and GC copies share one destination block per die (WAO-GC, and the
    /// full-GC-on-demand schemes of its Table I): copies go to the host frontier, GC starts
    /// at the last free block, no safety collection before writes.
    pub real_time: bool,
    /// The frontier stream GC copies go to (`COLD`, or `HOST` under a real-time pacing).
    pub copy_stream: usize,
    geo: Geometry,
    /// Packed address of every flat block index (cached: the hot paths convert often).
    addrs: Vec<BlockAddr>,
    ppb: u32,
    pub blocks_per_die: u32,
    /// `ppb` and `blocks_per_die` as multiply-shift divisors: the hot paths split flat page
    /// indices into (block, page) several times per operation, and a hardware division is
    /// ten times slower than the multiplication that replaces it.
    ppb_div: StrengthReducedU32,
    die_div: StrengthReducedU32,
    pub digest: bool,
    /// Per block: its state (written through the mutators of [`blocks`]).
    pub state: table::Table<BState>,
    /// Per block: valid pages (written through the mutators of [`blocks`]).
    pub valid: table::Table<u32>,
    /// P/E cycles per block: a mirror of the chip's counts, kept so that victim selection,
    /// wear levelling and free-block ordering need no chip queries.
    pub erase: table::Table<u32>,
    pub last_write: Vec<Nanos>,
    // Intrusive lists of full blocks per (die, valid count).
    pub next: Vec<u32>,
    pub prev: Vec<u32>,
    head: Vec<u32>,
    pub dies: Vec<DieState>,
    /// One bit per flat page: queued in a die's `refresh` (allocated on first use).
    rewrite_queued: Vec<u64>,
    /// Padding pages a shared destination may take while a victim is collected (WAO-GC's
    /// π − k − U(λ) with a placement that pads; `u32::MAX`: no limit).
    pub pad_slack: u32,
    /// One bit per flat page: a critical page placed in an unreliable slot because the
    /// destination's `pad_slack` was spent (a counted lapse of AP's rule under a
    /// real-time pacing; allocated on first use). `verify` accepts exactly these.
    lapsed: Vec<u64>,
    /// Next sequence number (every data page, copy, pad and trim takes one).
    pub seq: u64,
    log: OpLog,
    /// Per page index: the highest upper partner on its word line (multi-level chips).
    pub upper: Vec<u32>,
    /// Largest distance from a lower page to its upper partner (0: nothing is ever exposed).
    pub window: u32,
    /// Per page index p (and `ppb`): the first LSB page at or after p (`ppb` if none) —
    /// the pages an SLC-mode block takes.
    pub next_lsb: Vec<u32>,
    /// Per page index p (and `ppb`): how many LSB pages lie at or after p — an SLC-mode
    /// block's room from its next page.
    pub lsb_from: Vec<u32>,
    /// Per block: its mode as far as the FTL knows (`Some(true)`: SLC mode), `None` until
    /// known (after a mount, for blocks whose header was not read). Region blocks aside.
    pub slc: Vec<Option<bool>>,
    /// Open the next host-stream block in SLC mode (the flush buffer: while flushes come
    /// every few pages, so a flush need not pad MLC blocks; see `note_flush`).
    host_slc: bool,
    /// Host pages written per flush interval, a moving average in eighths (the flush
    /// buffer's signal; 0 before the first flush that followed a write).
    flush_gap: u64,
    /// `host_writes` at the last flush.
    writes_at_flush: u64,
    /// Sequence number of each page programmed in the open frontier blocks, by
    /// (die, stream, page).
    fseq: Vec<u64>,
    /// Per block: highest sequence number of a write that superseded one of its pages.
    pub superseded: Vec<u64>,
    /// Per block: found free by recovery; erased before its first use (it may hold a
    /// program torn to all-ones or an interrupted erase).
    pub suspect: Vec<bool>,
    /// Per block: opened since the last checkpoint. Such a block is not erased before the
    /// next checkpoint: its records are what roll-forward recovery finds newer versions in.
    pub young: Vec<bool>,
    /// Blocks opened since the last checkpoint.
    pub opened_since_cp: u32,
    /// The same per die.
    pub opened_per_die: Vec<u32>,
    /// A real-time pacing with roll-forward recovery: at most this many blocks opened on a
    /// die since the last checkpoint (kept from GC) before the next checkpoint — the
    /// blocks its bound leaves out of σ on every die; 0: no such limit.
    pub young_budget: u32,
    /// WAO-GC's U(λ), the most valid pages the bound lets a victim hold (0 without a
    /// young budget): what [`settle_young`](Self::settle_young) sizes each die's young
    /// blocks by.
    pub young_lambda: u32,
    /// Per die: blocks that may be opened since the last checkpoint before GC could find
    /// no victim within U(λ) ([`settle_young`](Self::settle_young)); at least
    /// `young_budget`.
    young_allowed: Vec<u32>,
    /// Per die: valid pages in blocks that were not young when the die was last settled —
    /// an upper bound on the same count now (`verify` checks it).
    settled_valid: Vec<u64>,
    /// The checkpoint region's blocks (whichever they are now: the region rotates) are SP
    /// blocks (SPFTL's subpage metadata units): their erases are counted as `sp_erases`
    /// (NWI's eq. 1).
    pub sp_region: bool,
    /// Per block: an SP block outside the region (a demand-paged map's partition with the
    /// subpage writer, its log partition), counted the same.
    pub sp_blocks: Vec<bool>,
    /// Zeros for padding pages.
    pad: Vec<u8>,
    /// When each die is next free, as the engine's timeline last said (`Ftl::sync_dies`)
    /// and advanced by the operations issued since; empty until it says (then operations
    /// run at the time they are issued).
    die_clock: Vec<Nanos>,
}

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    /// The controller, read-only: the chip's configuration, timing and pairing, the ECC's
    /// latencies, the CRC (no charged operation goes around [`sense`] and [`program`]).
    #[inline]
    pub fn controller(&self) -> &Controller<S, M> {
        &self.ctl
    }

    /// Every request's first step: a chip whose power was cut (a fired cut, until
    /// [`Chip::power_on`](nand::Chip::power_on) and a mount) takes no request, and neither
    /// does this volume: [`NandError::PowerLoss`](nand::NandError::PowerLoss), with nothing
    /// changed. A real controller has lost its RAM at that moment; what this volume still
    /// holds in RAM (an operation interrupted half-way through its bookkeeping) must not
    /// serve reads, take writes or acknowledge a flush. The next mount starts from the chip.
    #[inline]
    pub fn powered(&self) -> Result<(), FtlError> {
        if self.ctl.chip().is_powered() {
            Ok(())
        } else {
            Err(nand::NandError::PowerLoss.into())
        }
    }

    /// The controller, mutably, for a harness's fault injection and power cuts (the
    /// volume's public `controller_mut`); no kernel calls it (the `no_raw_chip` test).
    pub fn controller_for_harness(&mut self) -> &mut Controller<S, M> {
        &mut self.ctl
    }

    /// Gives the controller back (a failed mount, a volume taken apart).
    pub fn into_controller(self) -> Controller<S, M> {
        self.ctl
    }

    /// The chip's geometry.
    #[inline]
    pub fn geo(&self) -> Geometry {
        self.geo
    }

    /// Pages per block.
    #[inline]
    pub fn ppb(&self) -> u32 {
        self.ppb
    }

    /// The counters (read-only).
    #[inline]
    pub fn counters(&self) -> &crate::FtlCounters {
        &self.log.counters
    }

    /// The counters, to count an event.
    #[inline]
    pub fn counters_mut(&mut self) -> &mut crate::FtlCounters {
        &mut self.log.counters
    }

    /// The op log (read-only): the operations of the running batch, the mount's reads.
    #[inline]
    pub fn log(&self) -> &OpLog {
        &self.log
    }

    /// Moves the batch's logged operations to `out`.
    #[inline]
    pub fn take_ops(&mut self, out: &mut Vec<crate::FlashOp>) {
        self.log.take(out);
    }

    /// FLARES's idle-time scrub: the pages past their retention, into `due`.
    pub fn scrub(&mut self, now: Nanos, due: &mut Vec<u32>) {
        self.ecc.scrub(now, due, &mut self.log.counters.ecc_policy);
    }

    /// The worst-case decode time at correction strength `t` (the bounds' input).
    pub fn worst_decode(&mut self, t: u32) -> Result<Nanos, FtlError> {
        Ok(self.ctl.worst_decode(t)?)
    }

    /// Sets block `b`'s programming mode (SLC or native) as a format or mount lays the
    /// volume out: a device setting, no operation.
    pub fn set_slc_mode(&mut self, b: u32, slc: bool) -> Result<(), FtlError> {
        let addr = self.block_addr(b);
        Ok(self.ctl.set_slc_mode(addr, slc)?)
    }

    /// Keeps block `b`'s pages whole in a digest-mode store (metadata units the kernel
    /// reads back byte for byte): a storage setting, no operation.
    pub fn keep_whole(&mut self, b: u32) {
        self.ctl.keep_whole(b, true);
    }

    /// The stored bytes of the page at `addr` with no charged read and no error model:
    /// simulator bookkeeping (DFTL's shadow tables at mount), never the scheme's input.
    pub fn inspect_stored(&mut self, addr: nand::PhysAddr, buf: &mut [u8]) -> bool {
        self.ctl.inspect_stored(addr, buf).is_ok()
    }

    /// A substrate for a block-level kernel, which allocates, collects and places its own
    /// blocks: the default policies (fixed strength at `cfg.ecc_t`, striped placement,
    /// foreground pacing, ascending copies, greedy victims), which such a kernel never
    /// calls but the substrate's shared paths (program, read, erase, region) consult.
    pub fn block_level(ctl: Controller<S, M>, cfg: SubstrateConfig) -> Self {
        let policies = Policies {
            placement: Box::new(crate::policy::Striped::default()),
            ecc: Box::new(crate::policy::FixedStrength(cfg.ecc_t)),
            pacing: crate::policy::PacingKind::Foreground.policy(0),
            copy_order: crate::policy::CopyOrderKind::Ascending.policy(),
        };
        Substrate::new(ctl, cfg, Box::new(crate::Greedy), policies)
    }

    /// A substrate over `ctl` with every block `Bad` until format or mount says otherwise.
    pub fn new(
        ctl: Controller<S, M>,
        cfg: SubstrateConfig,
        policy: Box<dyn VictimPolicy>,
        policies: Policies,
    ) -> Self {
        let geo = *ctl.chip().geometry();
        let ppb = geo.pages_per_block;
        let nblocks = geo.total_blocks() as usize;
        let ndies = geo.total_dies() as usize;
        let digest = ctl.config().mode == PayloadMode::Digest;
        let multi = ctl.chip().config().cell != nand::CellType::Slc;
        let pairing = ctl.chip().pairing();
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
        let bits = (0..ppb)
            .map(|q| {
                if multi {
                    pairing.kind(q)
                } else {
                    nand::BitKind::Lsb
                }
            })
            .collect();
        let mut next_lsb = vec![ppb; ppb as usize + 1];
        let mut lsb_from = vec![0; ppb as usize + 1];
        for q in (0..ppb).rev() {
            let lsb = !multi || pairing.kind(q) == nand::BitKind::Lsb;
            next_lsb[q as usize] = if lsb { q } else { next_lsb[q as usize + 1] };
            lsb_from[q as usize] = lsb_from[q as usize + 1] + u32::from(lsb);
        }
        Substrate {
            meta_corrected: 0,
            next_lsb,
            lsb_from,
            slc: vec![Some(false); nblocks],
            host_slc: false,
            flush_gap: 0,
            writes_at_flush: 0,
            cfg,
            policy,
            fixed_t: policies.ecc.fixed(),
            judge_slots: policies.placement.wants_slots(),
            ascending: policies.copy_order.ascending(),
            asymmetric: policies.copy_order.asymmetric(),
            foreground: policies.pacing.is_foreground(),
            real_time: policies.pacing.shares_destination(),
            copy_stream: if policies.pacing.shares_destination() {
                HOST
            } else {
                COLD
            },
            placement: policies.placement,
            ecc: policies.ecc,
            pacing: policies.pacing,
            copy_order: policies.copy_order,
            bits,
            addrs: (0..geo.total_blocks())
                .map(|b| geo.block_at(b).expect("block in range"))
                .collect(),
            geo,
            ppb,
            blocks_per_die: geo.planes_per_die * geo.blocks_per_plane,
            ppb_div: StrengthReducedU32::new(ppb),
            die_div: StrengthReducedU32::new(geo.planes_per_die * geo.blocks_per_plane),
            digest,
            state: table::Table::filled(BState::Bad, nblocks),
            valid: table::Table::filled(0, nblocks),
            erase: table::Table::filled(0, nblocks),
            last_write: vec![Nanos::ZERO; nblocks],
            next: vec![NIL; nblocks],
            prev: vec![NIL; nblocks],
            head: vec![NIL; ndies * (ppb as usize + 1)],
            rewrite_queued: Vec::new(),
            pad_slack: u32::MAX,
            lapsed: Vec::new(),
            dies: (0..ndies)
                .map(|_| DieState {
                    free: BinaryHeap::new(),
                    frontier: [None; 2],
                    gc: None,
                    background: VecDeque::new(),
                    refresh: VecDeque::new(),
                    dirty: VecDeque::new(),
                    erases_since_check: 0,
                    pads_left: u32::MAX,
                })
                .collect(),
            seq: 1,
            log: OpLog::new(geo.dies_per_channel),
            upper,
            window,
            fseq: vec![0; ndies * 2 * ppb as usize],
            superseded: vec![0; nblocks],
            suspect: vec![false; nblocks],
            young: vec![false; nblocks],
            young_budget: 0,
            young_lambda: 0,
            young_allowed: vec![0; ndies],
            settled_valid: vec![0; ndies],
            sp_region: false,
            sp_blocks: vec![false; nblocks],
            opened_since_cp: 0,
            opened_per_die: vec![0; ndies],
            pad: vec![0; if digest { 0 } else { geo.page_size as usize }],
            die_clock: Vec::new(),
            ctl,
        }
    }

    // ----- addressing ------------------------------------------------------------------

    /// Packed address of flat block `b`.
    #[inline]
    pub fn block_addr(&self, b: u32) -> BlockAddr {
        self.addrs[b as usize]
    }

    /// Packed address of flat page `phys`.
    #[inline]
    pub fn phys_addr(&self, phys: u32) -> PhysAddr {
        let (b, page) = self.split(phys);
        self.block_addr(b).page(page).expect("page in range")
    }

    /// Block of flat page `phys`.
    #[inline]
    pub fn block_of(&self, phys: u32) -> u32 {
        phys / self.ppb_div
    }

    /// (block, page in block) of flat page `phys`.
    #[inline]
    pub fn split(&self, phys: u32) -> (u32, u32) {
        StrengthReducedU32::div_rem(phys, self.ppb_div)
    }

    /// The cap on one GC job's steps ([`crate::bounded`]): a copy per page of its victim,
    /// a retried copy per block of the die that can fail under it, and the erase.
    #[inline]
    pub(crate) fn job_steps(&self) -> u64 {
        self.ppb as u64 + self.blocks_per_die as u64 + 2
    }

    /// The cap on a loop that consumes a block of one die per iteration (a program
    /// retried after a failure retired its block, an allocation that opens a block).
    #[inline]
    pub(crate) fn die_blocks_cap(&self) -> u64 {
        self.blocks_per_die as u64 + 2
    }

    /// Die of flat block `b`.
    #[inline]
    pub fn die_of(&self, b: u32) -> u32 {
        b / self.die_div
    }

    /// Whether a data buffer of `len` bytes is one logical page in this payload mode.
    pub fn check_buf(&self, len: usize) -> Result<(), FtlError> {
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

    /// The time an operation issued at `now` runs on die `die`: when the die is free, no
    /// earlier than `now` (what the chip records as program or erase time and ages reads
    /// by).
    #[inline(always)]
    pub fn op_time(&self, die: u32, now: Nanos) -> Nanos {
        match self.die_clock.get(die as usize) {
            Some(&c) if c > now => c,
            _ => now,
        }
    }

    /// When each die is next free (the engine's view, before each request): what
    /// [`op_time`](Self::op_time) issues operations at.
    #[inline]
    pub fn sync_dies(&mut self, free: &[Nanos]) {
        let c = &mut self.die_clock;
        if c.len() == free.len() {
            c.copy_from_slice(free);
        } else {
            c.clear();
            c.extend_from_slice(free);
        }
    }

    /// Die `die` is busy from `start` for `t`.
    #[inline(always)]
    pub fn occupy(&mut self, die: u32, start: Nanos, t: nand::OpTiming) {
        if let Some(c) = self.die_clock.get_mut(die as usize) {
            *c = start + t.array + t.transfer;
        }
    }

    /// Takes the next sequence number.
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    /// The slot flat page `phys` is.
    #[inline]
    pub fn slot(&self, phys: u32) -> Slot {
        let (b, page) = self.split(phys);
        Slot {
            die: self.die_of(b),
            block: b,
            page,
            bit: self.bits[page as usize],
            slc: self.window == 0 || self.slc[b as usize] == Some(true),
        }
    }

    /// Good data blocks (neither bad nor reserved for the checkpoint region).
    pub fn data_blocks(&self) -> u64 {
        self.state
            .iter()
            .filter(|s| !matches!(s, BState::Bad | BState::Region | BState::Map))
            .count() as u64
    }
}

/// The [`Ftl`](crate::Ftl) methods every kernel answers from its substrate `s` the same
/// way (die clocks, the op log, counters, ECC statistics, erase counts); expanded inside
/// each kernel's `impl Ftl`.
macro_rules! substrate_ftl_methods {
    () => {
        fn sync_dies(&mut self, free: &[Nanos]) {
            self.s.sync_dies(free);
        }

        fn take_ops(&mut self, out: &mut Vec<crate::FlashOp>) {
            self.s.take_ops(out);
        }

        fn counters(&self) -> &crate::FtlCounters {
            self.s.counters()
        }

        fn ecc_stats(&self) -> controller::EccStats {
            *self.s.controller().stats()
        }

        fn last_read_risk(&self) -> Option<controller::ReadRisk> {
            self.s.controller().last_read_risk()
        }

        fn erase_counts(&self) -> &[u32] {
            &self.s.erase
        }
    };
}
pub(crate) use substrate_ftl_methods;
