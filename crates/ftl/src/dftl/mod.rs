//! The demand-paged page-mapping FTLs of SPFTL (Ref. 001): **DFTL_por** (§IV-A, the
//! baseline), **SPFTL** (§IV-B: every metadata unit a subpage of an SP block) and
//! **SPFTL_log** (§IV-C: DFTL_por's whole metadata pages, their updates logged by subpages
//! in SP logging blocks — coalesced per unit, merged into the unit when a log subpage
//! fills; see `log`). One kernel, [`DftlFtl`]; the three differ only in how metadata is
//! written ([`MetaMode`]).
//!
//! ## What lives where
//!
//! - **Internal memory** (the memory budget, [`MemoryBudget`], the paper's 26 KiB by
//!   default): the **CPMT** (cached page-map entries, 8 bytes each: logical page and
//!   physical page) and the **CBIT** (cached block-information entries, 12 bytes each:
//!   block, valid count, state, erase count), least recently used evicted first; the
//!   **GXT**, always whole: the **PMD** (where each PMT unit is), the **BID** (where each
//!   BIT unit is), the **BSI** (block status information: the greedy victim candidates,
//!   below) and the **UFP** (update-block pointers of every partition, the free user
//!   blocks known, the free-block count, the victim being collected, each metadata
//!   block's subpage partition; SPFTL_log: the **LID**, each unit's log address, and the
//!   logging partitions' update blocks); a page buffer and a copy-back buffer; SPFTL_log's
//!   merge buffer (a log subpage being coalesced).
//! - **Flash**, fixed partitions at the start of the chip, every block in SLC mode (LSB
//!   pages only on multi-level chips): the GXT partition, the PMT partition and the BIT
//!   partition; SPFTL_log's PMT-log, BIT-log and GXT-log partitions of SP blocks; then the
//!   user partition (multi-level mode). Each metadata partition is log-structured with its own update block and its
//!   own greedy GC (victim: fewest live units; its live units copied into the update
//!   block, counted as PMT-GC or BIT-GC bytes).
//! - A **metadata unit** is a page's data area (DFTL_por) or one subpage (SPFTL: programmed
//!   only by subpage programming, through the controller's subpage
//!   path, in SP blocks whose subpage partition is used in the pong-pong order — the
//!   partition advances at the block's next erase after a unit of it failed to decode).
//!   A PMT unit holds `unit / 4` entries (4-byte physical page, `u32::MAX`: unmapped); a
//!   BIT unit `unit / 8` entries (valid count u16, state u8, reserved u8, erase count u32)
//!   for every block of the chip. Each unit's OOB record names its kind and index; its
//!   sequence number is the unit's **stamp**.
//!
//! ## Host paths
//!
//! A write programs the next page of the user **update block** with a record naming the
//! logical page and the physical page it supersedes, then updates the CPMT (a miss reads
//! the PMT unit: a charged read) and the CBIT (the old page's block −1, the update block
//! +1). Evicting a dirty entry reads its unit, applies **every** dirty entry of that unit
//! (DFTL's batch update), programs the unit anew and marks them clean. A read looks up
//! the CPMT (a miss is a charged unit read). A trim programs a tombstone page (record
//! only) in the update block, so a trim is as durable as a write; its logical page then
//! maps to nothing.
//!
//! When the update block is full: a free block becomes the update block; every dirty CPMT
//! and CBIT entry is written back; the GXT is written (naming the new update block); and,
//! when fewer than `gc_threshold` free user blocks are left, one **victim** (greedy: the
//! BSI's fewest valid pages) is collected — each page's record read, its logical page
//! looked up, the valid ones copied into the new update block — then the copies sealed
//! (multi-level chips: padded until no copy sits in an exposed lower page) and the victim
//! erased. The BSI holds the `bsi_entries` blocks of fewest valid pages seen: every valid
//! count decrement passes through it, so its minimum is the global minimum; when it runs
//! empty, a charged scan of every BIT unit refills it and the free-block queue.
//!
//! ## Power-off recovery
//!
//! The newest complete GXT (records of the GXT partition's pages read; then its units
//! whole; SPFTL_log: with the newest readable GXT log extending it applied), then the PMT
//! and BIT update blocks' units (SPFTL_log: and the logging update blocks' logs) written
//! after the GXT's write pointers (newest per unit; a log whose unit was written later
//! with a newer stamp was merged into it and is dropped), then the user update block from its first page. A
//! scanned user page whose sequence number is above its PMT unit's stamp updates the map;
//! above the stamp of the BIT unit of the block it superseded, that block's valid count
//! drops — so effects already written back are never applied twice. The update block's
//! own valid count is recounted. A victim the GXT names whose erase count on the chip
//! (its header, a charged read) is above the BIT's was erased: its entry is reset. Every
//! metadata block's header is read (erase count; which blocks hold nothing). The update
//! block is sealed. Multi-level chips: a lower page a power cut corrupted is lost with
//! its unflushed write; if that write's decrement had been written back, the superseded
//! block's count stays one low (`drift`, bounded and checked by `verify`; GC identifies
//! valid pages by their records and the map, never by counts, and an erase resets them).
//!
//! `flush` seals the update block (every page written is then found by the scan).
//! Sealing also runs before a PMT unit is written that would point at an exposed page.
//!
//! ## What it takes from the substrate, and what it keeps
//!
//! From the substrate (`Substrate::block_level`): the one flash path (`sense` for every
//! page, record and metadata-unit read; `program_classified` for every program, with the
//! substrate's one classification of failures and refusals; `erase_block`; header
//! reads), the op log and counters, and the erase-count mirror. Of its own: its
//! partitions (the metadata partitions PMT, BIT, GXT and SPFTL_log's logs, each with its
//! update block and free list; the user partition with its update block, free queue and
//! BIT) and what a failed program means in them (a metadata block leaves its partition;
//! a user block goes bad in the BIT) — DFTL_por's and SPFTL's metadata layout is the
//! scheme being measured (NWI counts its erases), and its recovery reads the GXT and BIT,
//! not a region checkpoint.

mod cache;
mod fallback;
mod gxt;
mod host;
mod log;
mod meta;
mod mount;
mod recover;
mod sizing;
pub use sizing::metadata_blocks;
use sizing::Plan;
#[cfg(test)]
mod tests;
mod verify;

use crate::recovery::RecoveryReport;
use crate::substrate::{Substrate, SubstrateConfig};
use crate::{Ftl, FtlError, Invariant};
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use cache::EntryCache;
use controller::{Controller, DataClass, MetaTag};
use nand::{ErrorModel, Lpn, Nanos, PhysAddr, Storage};
use serde::{Deserialize, Serialize};

/// No page / block / unit.
pub(crate) const NONE: u32 = u32::MAX;

/// Record tags of this kernel's metadata pages.
pub(crate) const PMT_TAG: MetaTag = MetaTag::new(40);
pub(crate) const BIT_TAG: MetaTag = MetaTag::new(41);
pub(crate) const GXT_TAG: MetaTag = MetaTag::new(42);
pub(crate) const PAD_TAG: MetaTag = MetaTag::new(43);
pub(crate) const TOMB_TAG: MetaTag = MetaTag::new(44);
pub(crate) const PMT_LOG_TAG: MetaTag = MetaTag::new(45);
pub(crate) const BIT_LOG_TAG: MetaTag = MetaTag::new(46);
pub(crate) const GXT_LOG_TAG: MetaTag = MetaTag::new(47);

/// How metadata units are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetaMode {
    /// DFTL_por: whole pages.
    Page,
    /// SPFTL: subpages of SP blocks.
    Subpage,
    /// SPFTL_log: whole pages, updated through logs in subpages of SP blocks.
    Log,
}

impl MetaMode {
    /// The scheme's name in reports.
    pub const fn scheme(self) -> &'static str {
        match self {
            MetaMode::Page => "dftl-por",
            MetaMode::Subpage => "spftl",
            MetaMode::Log => "spftl-log",
        }
    }
}

/// The internal-memory budget (bytes). The paper's 26 KiB: 2 KiB of cached PMT/BIT entries
/// (one update block's worth), 4 KiB of GXT, an 8 KiB copy-back buffer and an 8 KiB page
/// buffer, and SPFTL_log's 4 KiB merge buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryBudget {
    /// Everything below together may not exceed this.
    pub total: u32,
    /// CPMT: 8 bytes per cached page-map entry.
    pub cpmt: u32,
    /// CBIT: 12 bytes per cached block-information entry.
    pub cbit: u32,
    /// The GXT (PMD, BID, BSI, UFP), held whole.
    pub gxt: u32,
    /// Copy-back buffer (a GC copy's page).
    pub copyback: u32,
    /// Page buffer (a metadata unit being read, patched and rewritten).
    pub page_buffer: u32,
    /// SPFTL_log's merge buffer (a log subpage being read, coalesced and rewritten); the
    /// other schemes leave it unused.
    pub merge_buffer: u32,
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget {
            total: 26 * 1024,
            cpmt: 1024,
            cbit: 1024,
            gxt: 4096,
            copyback: 8192,
            page_buffer: 8192,
            merge_buffer: 4096,
        }
    }
}

/// Configuration of the DFTL_por / SPFTL kernel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DftlConfig {
    /// Share of the chip's blocks outside the logical space (the paper's 5 %): the
    /// volume is `⌊blocks × (1 − overprovision)⌋` blocks of pages.
    pub overprovision: f64,
    /// BCH correction capability of user pages.
    pub ecc_t: u32,
    /// BCH correction capability of metadata units (a subpage's sectors in SPFTL).
    pub meta_ecc_t: u32,
    /// The internal-memory budget.
    pub memory: MemoryBudget,
    /// Blocks of the GXT partition (≥ 2: a GXT is written into one while the other
    /// holds the last complete one).
    pub gxt_blocks: u32,
    /// Spare room of the PMT and BIT partitions: each holds `(1 + meta_spare)` times the
    /// blocks its units fill, plus two.
    pub meta_spare: f64,
    /// A full update block is followed by collecting a victim when fewer free user
    /// blocks than this are left.
    pub gc_threshold: u32,
    /// Greedy victim candidates the BSI holds.
    pub bsi_entries: u32,
    /// Free user blocks the UFP lists (refilled by a scan of the BIT when it runs out).
    pub free_queue: u32,
    /// NWI weight of an SP block's erase (eq. 1: 1/1.71, SP2O_SLC's endurance gain).
    pub sp_weight: f64,
    /// SPFTL_log: blocks of each of the PMT-log and BIT-log partitions. 0 (the default):
    /// sized like the partition it logs for, so every unit can keep a live log and their
    /// GC only copies logs forward. The paper names one logging block per type; `2` is
    /// that block and the one it switches into while it is reclaimed: a victim whose live
    /// logs do not fit the block being written is *merged* — each of its logs applied to
    /// its unit, a page write — instead of copied (see `dftl::log`).
    pub log_blocks: u32,
}

impl Default for DftlConfig {
    fn default() -> Self {
        DftlConfig {
            overprovision: 0.05,
            ecc_t: 8,
            meta_ecc_t: 8,
            memory: MemoryBudget::default(),
            gxt_blocks: 2,
            meta_spare: 1.0,
            gc_threshold: 4,
            bsi_entries: 8,
            free_queue: 8,
            sp_weight: 1.0 / 1.71,
            log_blocks: 0,
        }
    }
}

/// Bytes of one CPMT entry in the budget.
pub const CPMT_ENTRY_BYTES: u32 = 8;
/// Bytes of one CBIT entry in the budget.
pub const CBIT_ENTRY_BYTES: u32 = 12;
/// Bytes of one PMT entry on flash.
pub(crate) const PMT_ENTRY: usize = 4;
/// Bytes of one BIT entry on flash.
pub(crate) const BIT_ENTRY: usize = 8;

/// A block's information (a BIT entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BitEntry {
    pub valid: u16,
    pub state: u8,
    pub erase: u32,
}

/// BIT entry states.
pub(crate) mod bst {
    /// Erased, in no use.
    pub const FREE: u8 = 0;
    /// A user block holding data (or the update block).
    pub const USED: u8 = 1;
    /// A metadata-partition block (its entry is not used).
    pub const META: u8 = 2;
    /// Bad.
    pub const BAD: u8 = 3;
}

/// Which metadata partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartKind {
    Gxt = 0,
    Pmt = 1,
    Bit = 2,
    /// SPFTL_log's logging partitions (empty in the other modes).
    PmtLog = 3,
    BitLog = 4,
    GxtLog = 5,
}

impl PartKind {
    /// Every partition, in chip order.
    pub const ALL: [PartKind; 6] = [
        PartKind::Gxt,
        PartKind::Pmt,
        PartKind::Bit,
        PartKind::PmtLog,
        PartKind::BitLog,
        PartKind::GxtLog,
    ];
}

/// A metadata partition.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// First block of its range.
    pub first: u32,
    /// Blocks in its range (bad ones included).
    pub len: u32,
    /// The update block (`NONE`: none open).
    pub upd: u32,
    /// The next slot of the update block.
    pub wp: u32,
    /// Erased blocks, in the order they are taken.
    pub free: VecDeque<u32>,
    /// Bad blocks of the range.
    pub bad: Vec<bool>,
}

impl Part {
    pub fn contains(&self, b: u32) -> bool {
        b >= self.first && b < self.first + self.len
    }
}

/// The DFTL_por / SPFTL kernel (see the module docs).
pub struct DftlFtl<S: Storage, M: ErrorModel> {
    pub(crate) s: Substrate<S, M>,
    pub(crate) cfg: DftlConfig,
    pub(crate) mode: MetaMode,
    pub(crate) ppb: u32,
    /// Bytes of a metadata unit.
    pub(crate) unit: usize,
    /// Bytes of a log unit (SPFTL_log: a subpage; the other modes: `unit`).
    pub(crate) log_unit: usize,
    /// Slot → page of an SLC-mode block (its LSB pages, ascending).
    pub(crate) lsb: Vec<u32>,
    /// Logical pages.
    pub(crate) lpns: u32,
    pub(crate) pmt_per_unit: u32,
    pub(crate) bit_per_unit: u32,
    pub(crate) pmt_units: u32,
    pub(crate) bit_units: u32,
    /// The partitions: GXT, PMT, BIT, then SPFTL_log's PMT-log, BIT-log and GXT-log.
    pub(crate) parts: [Part; 6],
    /// First block of the user partition.
    pub(crate) user_first: u32,
    /// PMD / BID: unit → slot address (`block × slots + slot`), `NONE`: never written.
    pub(crate) pmd: Vec<u32>,
    pub(crate) bid: Vec<u32>,
    /// SPFTL_log's LID: PMT / BIT unit → its log's address (`NONE`: no log).
    pub(crate) plid: Vec<u32>,
    pub(crate) blid: Vec<u32>,
    /// SPFTL_log: the sequence number and cells of the last whole GXT written (the base
    /// GXT logs extend). A firmware keeps a changed bit per cell instead (≤ 1 bit per
    /// directory entry); the changes a log holds are the same.
    pub(crate) gxt_base: Option<(u64, Vec<u32>)>,
    pub(crate) cpmt: EntryCache<u32>,
    /// CPMT capacity in entries.
    pub(crate) cpmt_cap: u32,
    pub(crate) cbit: EntryCache<BitEntry>,
    /// The user update block and its next page.
    pub(crate) u: u32,
    pub(crate) u_wp: u32,
    /// Per page of the update block: it holds data, a tombstone or a GC copy (not
    /// padding): what sealing protects.
    pub(crate) u_data: Vec<bool>,
    /// Free user blocks known (UFP), taken front first.
    pub(crate) free_q: VecDeque<u32>,
    /// Free user blocks in all.
    pub(crate) free_total: u32,
    /// BSI: victim candidates (block, valid pages).
    pub(crate) bsi: Vec<(u32, u32)>,
    /// The victims the last switch collected (named in the GXT), and whether every
    /// valid page of each was copied (then it is erased at the next switch).
    pub(crate) victims: Vec<(u32, bool)>,
    /// Per block: its subpage partition (SP blocks), advanced at the next erase when
    /// `sp_bump` is set.
    pub(crate) sp_part: Vec<u8>,
    pub(crate) sp_bump: Vec<bool>,
    /// Valid-count drift recovery allows: lower pages lost to power cuts since format
    /// (kept in the GXT; see the module docs).
    pub(crate) drift: u64,
    /// The simulator's record of every logical page's physical page (what the FTL's map
    /// says), for `verify` and `mapping`; never consulted by the scheme.
    pub(crate) truth: Vec<u32>,
    /// The simulator's record of what the PMT and BIT units on flash hold (kept by every
    /// write-back, rebuilt by raw reads at mount): `verify` checks the caches against it.
    pub(crate) flash_pmt: Vec<u32>,
    pub(crate) flash_bit: Vec<BitEntry>,
    pub(crate) recovery: Option<RecoveryReport>,
    pub(crate) zeros: Vec<u8>,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for DftlFtl<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DftlFtl")
            .field("mode", &self.mode)
            .field("lpns", &self.lpns)
            .field("cfg", &self.cfg)
            .finish()
    }
}

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// An empty kernel sized from the chip and `cfg` (errors name the key).
    pub(crate) fn empty(
        mut ctl: Controller<S, M>,
        mode: MetaMode,
        cfg: DftlConfig,
    ) -> Result<Self, Box<crate::MountFailure<S, M>>> {
        match Self::plan(&mut ctl, mode, &cfg) {
            Ok(plan) => Ok(Self::build(ctl, mode, cfg, plan)),
            Err(error) => Err(crate::MountFailure::boxed(error, ctl)),
        }
    }

    fn build(ctl: Controller<S, M>, mode: MetaMode, cfg: DftlConfig, plan: Plan) -> Self {
        let geo = *ctl.chip().geometry();
        let scfg = SubstrateConfig::block_level(cfg.ecc_t);
        let s = Substrate::block_level(ctl, scfg);
        let nblocks = geo.total_blocks();
        let mut first = 0;
        let parts = plan.part_len.map(|len| {
            let p = Part {
                first,
                len,
                upd: NONE,
                wp: 0,
                free: VecDeque::new(),
                bad: vec![false; len as usize],
            };
            first += len;
            p
        });
        let digest = s.digest;
        DftlFtl {
            zeros: vec![0; if digest { 0 } else { geo.page_size as usize }],
            ppb: geo.pages_per_block,
            unit: plan.unit,
            log_unit: plan.log_unit,
            lsb: plan.lsb,
            lpns: plan.lpns,
            pmt_per_unit: plan.pmt_per_unit,
            bit_per_unit: plan.bit_per_unit,
            pmt_units: plan.pmt_units,
            bit_units: plan.bit_units,
            user_first: first,
            parts,
            pmd: vec![NONE; plan.pmt_units as usize],
            bid: vec![NONE; plan.bit_units as usize],
            plid: vec![
                NONE;
                if mode == MetaMode::Log {
                    plan.pmt_units as usize
                } else {
                    0
                }
            ],
            blid: vec![
                NONE;
                if mode == MetaMode::Log {
                    plan.bit_units as usize
                } else {
                    0
                }
            ],
            gxt_base: None,
            cpmt: EntryCache::new(plan.cpmt),
            cpmt_cap: plan.cpmt as u32,
            cbit: EntryCache::new(plan.cbit),
            u: NONE,
            u_wp: 0,
            u_data: vec![false; geo.pages_per_block as usize],
            free_q: VecDeque::new(),
            free_total: 0,
            bsi: Vec::new(),
            victims: Vec::new(),
            sp_part: vec![0; nblocks as usize],
            sp_bump: vec![false; nblocks as usize],
            drift: 0,
            truth: vec![NONE; plan.lpns as usize],
            flash_pmt: vec![NONE; plan.lpns as usize],
            flash_bit: vec![BitEntry::default(); nblocks as usize],
            recovery: None,
            s,
            cfg,
            mode,
        }
    }

    /// The partition holding metadata block `b`, if any.
    pub(crate) fn part_of(&self, b: u32) -> Option<PartKind> {
        PartKind::ALL
            .into_iter()
            .find(|&k| self.parts[k as usize].contains(b))
    }

    /// Whether metadata block `b` is an SP block (programmed by subpages).
    pub(crate) fn is_sub(&self, b: u32) -> bool {
        match self.mode {
            MetaMode::Page => false,
            MetaMode::Subpage => true,
            MetaMode::Log => {
                b >= self.parts[PartKind::PmtLog as usize].first && b < self.user_first
            }
        }
    }

    /// Bytes of a unit of metadata block `b`.
    pub(crate) fn unit_len(&self, b: u32) -> usize {
        if self.mode == MetaMode::Log && self.is_sub(b) {
            self.log_unit
        } else {
            self.unit
        }
    }

    /// Slots (units) per metadata block.
    pub(crate) fn slots(&self) -> u32 {
        self.lsb.len() as u32
    }

    /// Which metadata writer.
    pub fn mode(&self) -> MetaMode {
        self.mode
    }

    /// Where logical page `lpn` lives (`None`: unmapped or trimmed).
    pub fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        let p = *self.truth.get(lpn as usize)?;
        (p != NONE).then(|| self.s.phys_addr(p))
    }

    /// Free user blocks on each die.
    pub fn free_blocks(&self) -> Vec<usize> {
        let mut v = vec![0; self.s.geo().total_dies() as usize];
        if let Some(x) = v.first_mut() {
            *x = self.free_total as usize;
        }
        v
    }

    /// The logical page `lpn` as an index, or `OutOfRange`.
    fn check_lpn(&self, lpn: Lpn) -> Result<u32, FtlError> {
        if lpn.get() >= self.lpns as u64 {
            return Err(FtlError::OutOfRange {
                lpn: lpn.get(),
                count: self.lpns as u64,
            });
        }
        Ok(lpn.get() as u32)
    }

    /// Checks every invariant (`dftl::verify`).
    pub fn verify(&self) -> Result<(), Invariant> {
        self.check().map_err(Invariant::Structure)?;
        self.s.verify_erase_counts().map_err(Invariant::Mirror)?;
        self.check_chip().map_err(Invariant::Mirror)?;
        self.check_counts().map_err(Invariant::Mirror)
    }

    /// NWI (SPFTL eq. 1) so far: full-page blocks' erases plus SP blocks' erases times
    /// `sp_weight`.
    pub fn nwi(&self) -> f64 {
        let c = self.s.counters();
        let all: u64 = c.erases.iter().sum();
        (all - c.sp_erases) as f64 + c.sp_erases as f64 * self.cfg.sp_weight
    }
}

impl<S: Storage, M: ErrorModel> Ftl for DftlFtl<S, M> {
    crate::substrate::substrate_ftl_methods!();

    fn logical_pages(&self) -> u64 {
        self.lpns as u64
    }

    fn page_size(&self) -> usize {
        self.s.geo().page_size as usize
    }

    fn write_with(
        &mut self,
        now: Nanos,
        lpn: Lpn,
        data: &[u8],
        hint: DataClass,
    ) -> Result<(), FtlError> {
        self.s.powered()?;
        let l = self.check_lpn(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_writes += 1;
        self.host_write(now, l, Some((data, hint)))
    }

    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError> {
        self.s.powered()?;
        let l = self.check_lpn(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_reads += 1;
        self.host_read(now, l, lpn, data)
    }

    fn trim(&mut self, now: Nanos, lpn: Lpn) -> Result<(), FtlError> {
        self.s.powered()?;
        let l = self.check_lpn(lpn)?;
        self.s.counters_mut().trims += 1;
        if self.pmt_get(now, l)? == NONE {
            return Ok(());
        }
        self.s.counters_mut().trimmed_pages += 1;
        self.host_write(now, l, None)
    }

    fn flush(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.s.powered()?;
        self.s.counters_mut().flushes += 1;
        self.seal(now)?;
        crate::debug_verify("flush", || self.verify());
        Ok(())
    }

    fn tick(&mut self, _now: Nanos) -> Result<bool, FtlError> {
        self.s.powered()?;
        Ok(false)
    }
}
