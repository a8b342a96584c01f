//! The emulated chip: the rules of NAND enforced on every operation.
//!
//! Contract of each operation (in the spirit of dhara's NAND interface):
//!
//! - [`Chip::read`], [`Chip::read_spare`], [`Chip::read_subpage`]: return the bytes last
//!   programmed, or 0xFF for a page never programmed since erase. Fail only on a
//!   factory-bad block, an address outside the geometry, a wrong buffer size or power loss.
//!   Each read counts toward the page's and the block's read-disturb counters.
//! - [`Chip::program`]: programs a whole page (data + spare) of an erased page at or above
//!   the block's write pointer. Skipped pages stay unprogrammable until erase. On a
//!   multi-level block an upper page (CSB/MSB) needs its lower pages programmed first; a block
//!   in SLC mode takes LSB pages only; a block in subpage (SP) use takes no full-page
//!   programs.
//! - [`Chip::program_partial`]: NOP partial program of an SLC page (SLC chip, or an SLC-mode
//!   block): bytes given as 0xFF are left alone; programmed bytes must still be erased; at
//!   most `nop` programs per page; only the block's newest page may be reprogrammed.
//!   Forbidden on multi-level blocks.
//! - [`Chip::program_subpage`]: SPFTL §III.B subpage programming on SLC or SLC-mode blocks:
//!   the first subpage program after an erase makes the block an SP block using that
//!   subpage partition; it then takes no full-page programs and no other partition until
//!   erased; pages are programmed in ascending order within the partition, once each.
//! - [`Chip::erase`]: erases a good block, incrementing its P/E count.
//!
//! Every operation returns the latency it occupies the die for ([`OpTiming`]). Program and
//! erase may fail with `ProgramFailed` / `EraseFailed` (injected, or drawn from the wear
//! model past rated endurance); the block then turns grown-bad: its data stays readable but
//! it takes no more programs or erases.

use crate::addr::{BlockAddr, PhysAddr};
use crate::backend::{RamStorage, Storage};
use crate::config::ChipConfig;
use crate::error::{NandError, StorageError};
use crate::fault::{self, rng_for, stream, CutEffect, CutMode, CutRecord, CutTarget, TornFill};
use crate::geometry::{CellType, Geometry};
use crate::pagetable::PageTable;
use crate::pairing::{BitKind, PairingTable};
use crate::state::*;
use crate::time::Nanos;
use alloc::vec;
use alloc::vec::Vec;
use rand_core::RngCore;

#[path = "aging.rs"]
mod aging;
pub use aging::AgeReport;

/// Time an operation keeps its die (and channel) busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpTiming {
    /// Time in the array (tR, tPROG, tBERS).
    pub array: Nanos,
    /// Time on the bus moving bytes.
    pub transfer: Nanos,
}

impl OpTiming {
    /// Array plus transfer time.
    pub fn total(&self) -> Nanos {
        self.array + self.transfer
    }
}

/// Usability of a block, after the `embedded-storage` NAND proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockStatus {
    /// Usable.
    Good,
    /// Bad from the factory: every operation fails.
    FactoryBad,
    /// Went bad in use (failure or marked): readable, not programmable or erasable.
    GrownBad,
}

/// A summary of one block's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockInfo {
    /// Good or bad.
    pub status: BlockStatus,
    /// P/E cycles so far.
    pub erase_count: u32,
    /// Whether the block is in SLC mode.
    pub slc_mode: bool,
    /// How it is being programmed since erase.
    pub usage: Usage,
    /// Lowest page still programmable.
    pub next_page: u32,
    /// Caught in an interrupted erase.
    pub needs_erase: bool,
    /// Time of the last erase.
    pub erased_at: Nanos,
    /// Page reads since the last erase.
    pub reads_since_erase: u32,
}

/// A summary of one page's state (simulator introspection, not a real chip command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageState {
    /// No program since erase.
    pub erased: bool,
    /// Word line within its block.
    pub wordline: u32,
    /// Which bit of its cells it stores.
    pub kind: BitKind,
    /// Time of the last program.
    pub programmed_at: Nanos,
    /// Reads since that program.
    pub reads: u32,
    /// Programs since erase.
    pub programs: u8,
    /// Subpages programmed (bit mask; SP blocks).
    pub subpages: u16,
    /// Last program torn, or scrambled by a paired-page cut or interrupted erase.
    pub damaged: bool,
    /// P/E cycles of its block.
    pub erase_count: u32,
}

impl PageState {
    /// The page's age at `now`, as an error model sees it.
    pub fn age(&self, now: Nanos) -> crate::rber::PageAge {
        crate::rber::PageAge {
            pe_cycles: self.erase_count,
            retention: now.saturating_sub(self.programmed_at),
            kind: self.kind,
            reads: self.reads,
        }
    }
}

/// Counts of operations executed (rejected operations are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpCounters {
    /// Page, spare and subpage reads.
    pub reads: u64,
    /// Full-page programs.
    pub programs: u64,
    /// NOP partial programs.
    pub partial_programs: u64,
    /// Subpage programs.
    pub subpage_programs: u64,
    /// Erases.
    pub erases: u64,
    /// Program failures.
    pub program_failures: u64,
    /// Erase failures.
    pub erase_failures: u64,
    /// Power cuts fired.
    pub power_cuts: u64,
}

/// Which kind of failure to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The next program of the block fails.
    Program,
    /// The next erase of the block fails.
    Erase,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Prog {
    Full,
    Partial,
    Subpage(u32),
}

/// Where a program's data area comes from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// Bytes the caller passes.
    Bytes(&'a [u8]),
    /// The data area stored at a flat page index (see [`Chip::program_copy`]).
    Page(u64),
}

/// (data offset, data length), (offset within the spare area, spare length).
type Regions = ((usize, usize), (usize, usize));

#[derive(Clone, Copy)]
enum ReadPart {
    Page,
    Spare,
    Subpage(u32),
}

/// An emulated NAND chip over a storage backend. A clone is a second chip in the same
/// state (a simulator's copy of a crash image, to recover it more than one way).
#[derive(Clone)]
pub struct Chip<S: Storage = RamStorage> {
    config: ChipConfig,
    pairing: PairingTable,
    blocks: Vec<BlockMeta>,
    pages: PageTable,
    storage: S,
    powered: bool,
    ops: u64,
    cut: Option<(u64, CutMode)>,
    last_cut: Option<CutRecord>,
    buf: Vec<u8>,
    /// Flat index of the page the last operation read (the page register), if it was a
    /// successful read: what [`data_out`](Chip::data_out) may transfer.
    register: Option<u64>,
    counters: OpCounters,
}

impl<S: Storage> core::fmt::Debug for Chip<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Chip")
            .field("config", &self.config.name)
            .field("powered", &self.powered)
            .field("ops", &self.ops)
            .finish_non_exhaustive()
    }
}

impl Chip<RamStorage> {
    /// A fresh chip in sparse RAM.
    pub fn ram(config: ChipConfig) -> Result<Self, NandError> {
        let storage = RamStorage::new(&config.geometry);
        Chip::new(config, storage)
    }
}

impl<S: Storage> Chip<S> {
    /// A chip on `storage`. A persistent backend that already holds a chip (a reopened
    /// image) supplies its state; otherwise the chip is new: all blocks erased, factory-bad
    /// blocks drawn from the seed.
    pub fn new(config: ChipConfig, mut storage: S) -> Result<Self, NandError> {
        config.validate()?;
        let g = config.geometry;
        let pairing = PairingTable::new(config.layout, config.cell, g.pages_per_block)?;
        let n = g.total_blocks() as usize;
        let mut pages = PageTable::new(n, g.pages_per_block);
        let blocks = match storage.stored_state()? {
            Some(state) => {
                if state.blocks.len() != n {
                    return Err(StorageError::BadHeader("block table size mismatch".into()).into());
                }
                let ppb = g.pages_per_block as u64;
                for (index, meta) in state.pages {
                    pages.set((index / ppb) as usize, (index % ppb) as u32, &meta);
                }
                state.blocks
            }
            None => {
                let mut blocks = vec![BlockMeta::default(); n];
                let rate = config.reliability.factory_bad_rate;
                if rate > 0.0 {
                    let mut rng = rng_for(config.seed, &[stream::FACTORY_BAD]);
                    for (i, b) in blocks.iter_mut().enumerate().skip(1) {
                        if fault::unit(&mut rng) < rate {
                            b.flags |= FLAG_FACTORY_BAD;
                            storage.save_block(i as u32, b)?;
                        }
                    }
                }
                blocks
            }
        };
        Ok(Chip {
            buf: vec![0xFF; g.raw_page_size()],
            register: None,
            config,
            pairing,
            blocks,
            pages,
            storage,
            powered: true,
            ops: 0,
            cut: None,
            last_cut: None,
            counters: OpCounters::default(),
        })
    }

    /// The chip's configuration.
    pub fn config(&self) -> &ChipConfig {
        &self.config
    }

    /// The chip's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.config.geometry
    }

    /// The page pairing of every block.
    pub fn pairing(&self) -> &PairingTable {
        &self.pairing
    }

    /// Operation counters.
    pub fn counters(&self) -> &OpCounters {
        &self.counters
    }

    /// Pages whose state the packed page table keeps whole in its side table (it did not
    /// fit the packed form): memory accounting of huge chips.
    pub fn page_states_aside(&self) -> usize {
        self.pages.spilled()
    }

    /// The storage backend, mutably (tools: an image's clock record).
    pub fn storage_mut(&mut self) -> &mut S {
        &mut self.storage
    }

    /// The storage backend.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Consumes the chip, returning its backend (e.g. to reopen it).
    pub fn into_storage(self) -> S {
        self.storage
    }

    /// Makes all state durable in the backend.
    pub fn sync(&mut self) -> Result<(), NandError> {
        Ok(self.storage.sync()?)
    }

    // ----- power -----------------------------------------------------------------------

    /// Whether the chip has power.
    pub fn is_powered(&self) -> bool {
        self.powered
    }

    /// Array operations executed (or interrupted) so far by this chip value.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// Arms a power cut at the `n`-th operation from now (`n` ≥ 1; 0 counts as 1) and
    /// returns its absolute operation number. Replaces any cut already armed.
    pub fn arm_cut(&mut self, n: u64, mode: CutMode) -> u64 {
        let at = self.ops + n.max(1);
        self.cut = Some((at, mode));
        at
    }

    /// Disarms a pending cut.
    pub fn disarm_cut(&mut self) {
        self.cut = None;
    }

    /// The most recent power cut that fired.
    pub fn last_cut(&self) -> Option<&CutRecord> {
        self.last_cut.as_ref()
    }

    /// Restores power after a cut. The chip's nonvolatile state is as the cut left it.
    pub fn power_on(&mut self) {
        self.powered = true;
    }

    fn ensure_power(&self) -> Result<(), NandError> {
        if self.powered {
            Ok(())
        } else {
            Err(NandError::PowerLoss)
        }
    }

    /// Counts an operation and fires an armed cut on it.
    fn next_op(&mut self) -> Option<CutMode> {
        self.ops += 1;
        self.register = None;
        match self.cut {
            Some((at, mode)) if at == self.ops => {
                self.cut = None;
                self.powered = false;
                self.counters.power_cuts += 1;
                Some(mode)
            }
            _ => None,
        }
    }

    fn record_cut(&mut self, mode: CutMode, target: CutTarget, effect: CutEffect) -> NandError {
        self.last_cut = Some(CutRecord {
            op: self.ops,
            mode,
            target,
            effect,
        });
        NandError::PowerLoss
    }

    // ----- state queries ---------------------------------------------------------------

    fn block_index(&self, block: BlockAddr) -> Result<usize, NandError> {
        self.config
            .geometry
            .block_index(block)
            .map(|b| b as usize)
            .ok_or(NandError::BlockOutOfRange(block))
    }

    /// (flat block index, page in block, flat page index) of `addr` — what
    /// `Geometry::page_index` checks, without dividing the flat index back.
    fn locate(&self, addr: PhysAddr) -> Result<(usize, u32, u64), NandError> {
        let g = &self.config.geometry;
        let page = addr.page();
        if page >= g.pages_per_block {
            return Err(NandError::PageOutOfRange(addr));
        }
        let b = g
            .block_index(addr.block_addr())
            .ok_or(NandError::PageOutOfRange(addr))?;
        Ok((
            b as usize,
            page,
            b as u64 * g.pages_per_block as u64 + page as u64,
        ))
    }

    fn page_meta(&self, bi: usize, page: u32) -> PageMeta {
        self.pages.get(bi, page)
    }

    /// Applies `f` to page `page` of block `bi`'s state; returns the new state.
    fn update_page(&mut self, bi: usize, page: u32, f: impl FnOnce(&mut PageMeta)) -> PageMeta {
        let mut m = self.pages.get(bi, page);
        f(&mut m);
        self.pages.set(bi, page, &m);
        m
    }

    /// Status of a block.
    pub fn block_status(&self, block: BlockAddr) -> Result<BlockStatus, NandError> {
        Ok(status_of(&self.blocks[self.block_index(block)?]))
    }

    /// Full state of a block.
    pub fn block_info(&self, block: BlockAddr) -> Result<BlockInfo, NandError> {
        let b = &self.blocks[self.block_index(block)?];
        Ok(BlockInfo {
            status: status_of(b),
            erase_count: b.erase_count,
            slc_mode: b.has(FLAG_SLC_MODE),
            usage: b.usage,
            next_page: b.next_page,
            needs_erase: b.has(FLAG_NEEDS_ERASE),
            erased_at: b.erased_at,
            reads_since_erase: b.reads_since_erase,
        })
    }

    /// Reads a block's header: what firmware learns from the spare area of the block's first
    /// page — its bad-block marker, its erase counter (what UBI keeps in an erase-counter
    /// header), whether it holds data, its SLC mode — charged as one spare read (an
    /// operation: it counts, takes time and can be cut). Works on bad blocks too: that is
    /// how firmware finds them. [`block_info`](Chip::block_info) is the same knowledge
    /// without the read, for tests and tools.
    pub fn read_block_header(
        &mut self,
        _now: Nanos,
        block: BlockAddr,
    ) -> Result<(BlockInfo, OpTiming), NandError> {
        self.ensure_power()?;
        let info = self.block_info(block)?;
        let g = self.config.geometry;
        let timing = OpTiming {
            array: self.config.timing.read(self.pairing.kind(0)),
            transfer: self.config.timing.transfer(g.spare_size as usize),
        };
        if let Some(mode) = self.next_op() {
            let effect = if mode == CutMode::After {
                CutEffect::Completed
            } else {
                CutEffect::NotStarted
            };
            let target = CutTarget::Read(block.page(0).expect("every block has a page 0"));
            return Err(self.record_cut(mode, target, effect));
        }
        self.counters.reads += 1;
        Ok((info, timing))
    }

    /// State of a page: age, reads, kind (what an error model needs).
    pub fn page_state(&self, addr: PhysAddr) -> Result<PageState, NandError> {
        let (bi, page, _) = self.locate(addr)?;
        Ok(self.state_of(bi, page))
    }

    fn state_of(&self, bi: usize, page: u32) -> PageState {
        self.state_from(bi, page, self.page_meta(bi, page))
    }

    fn state_from(&self, bi: usize, page: u32, m: PageMeta) -> PageState {
        let info = self.pairing.info(page);
        PageState {
            erased: m.is_erased(),
            wordline: info.wordline,
            kind: info.kind,
            programmed_at: m.programmed_at,
            reads: m.reads,
            programs: m.programs,
            subpages: m.subpages,
            damaged: m.flags & PAGE_DAMAGED != 0,
            erase_count: self.blocks[bi].erase_count,
        }
    }

    /// What an error model needs to know about a page read at `now`.
    pub fn page_age(&self, addr: PhysAddr, now: Nanos) -> Result<crate::rber::PageAge, NandError> {
        Ok(self.page_state(addr)?.age(now))
    }

    /// Every block that is not good, with its status.
    pub fn bad_blocks(&self) -> impl Iterator<Item = (BlockAddr, BlockStatus)> + '_ {
        let g = self.config.geometry;
        self.blocks.iter().enumerate().filter_map(move |(i, b)| {
            let s = status_of(b);
            (s != BlockStatus::Good).then(|| (g.block_at(i as u32).expect("in range"), s))
        })
    }

    /// Erase counts of all blocks, by flat index.
    pub fn erase_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().map(|b| b.erase_count)
    }

    // ----- management ------------------------------------------------------------------

    fn save_block(&mut self, bi: usize) -> Result<(), NandError> {
        let meta = self.blocks[bi];
        Ok(self.storage.save_block(bi as u32, &meta)?)
    }

    /// Marks a block bad (writes the bad-block marker). Reads still work.
    pub fn mark_bad(&mut self, block: BlockAddr) -> Result<(), NandError> {
        self.ensure_power()?;
        let bi = self.block_index(block)?;
        self.blocks[bi].flags |= FLAG_GROWN_BAD;
        self.save_block(bi)
    }

    /// Overwrites `block`'s persisted record flags (fault injection: a damaged or forged
    /// block-table entry whose checksum is valid, e.g. a good block recorded as
    /// factory-bad). Flags are the `nand::state::FLAG_*` bits.
    pub fn forge_block_flags(&mut self, block: BlockAddr, flags: u8) -> Result<(), NandError> {
        let bi = self.block_index(block)?;
        self.blocks[bi].flags = flags;
        self.save_block(bi)
    }

    /// Arms a failure of the next program or erase of `block` (fault injection).
    pub fn inject_failure(&mut self, block: BlockAddr, failure: Failure) -> Result<(), NandError> {
        let bi = self.block_index(block)?;
        self.blocks[bi].inject |= match failure {
            Failure::Program => INJECT_PROGRAM_FAIL,
            Failure::Erase => INJECT_ERASE_FAIL,
        };
        self.save_block(bi)
    }

    /// Puts a block of a multi-level chip in SLC mode (only LSB pages are then programmed)
    /// or back to native mode. Only an erased block with nothing programmed may change mode;
    /// the mode persists across erases until changed again.
    pub fn set_slc_mode(&mut self, block: BlockAddr, slc: bool) -> Result<(), NandError> {
        self.ensure_power()?;
        if self.config.cell == CellType::Slc {
            return Err(NandError::SlcModeOnSlc);
        }
        let bi = self.block_index(block)?;
        let b = &mut self.blocks[bi];
        if b.has(FLAG_FACTORY_BAD) {
            return Err(NandError::BadBlock(block));
        }
        if b.usage != Usage::Fresh || b.next_page != 0 || b.has(FLAG_NEEDS_ERASE) {
            return Err(NandError::ModeChangeNotErased(block));
        }
        if slc {
            b.flags |= FLAG_SLC_MODE;
        } else {
            b.flags &= !FLAG_SLC_MODE;
        }
        self.save_block(bi)
    }

    /// Whether page `page` of block `bi` is in a multi-level (native MLC/TLC) block.
    fn multi_level(&self, bi: usize) -> bool {
        self.config.cell != CellType::Slc && !self.blocks[bi].has(FLAG_SLC_MODE)
    }

    fn wear_fails(&self, bi: usize, op_tag: u64) -> bool {
        let b = &self.blocks[bi];
        let p = self.config.reliability.failure_probability(b.erase_count);
        if p <= 0.0 {
            return false;
        }
        let mut rng = rng_for(
            self.config.seed,
            &[stream::WEAR_FAIL, bi as u64, b.erase_count as u64, op_tag],
        );
        fault::unit(&mut rng) < p
    }

    // ----- reads -----------------------------------------------------------------------

    /// Reads a whole page: `data` (page size) and `spare` (spare size).
    pub fn read(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<OpTiming, NandError> {
        self.read_op(now, addr, ReadPart::Page, data, spare)
            .map(|(t, _)| t)
    }

    /// [`read`](Chip::read), also returning the page's state after the read (what
    /// [`page_state`](Chip::page_state) would then say, without a second lookup).
    pub fn read_with_state(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<(OpTiming, PageState), NandError> {
        self.read_op(now, addr, ReadPart::Page, data, spare)
    }

    /// Reads only the spare area of a page (same array time, less transfer).
    pub fn read_spare(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        spare: &mut [u8],
    ) -> Result<OpTiming, NandError> {
        self.read_op(now, addr, ReadPart::Spare, &mut [], spare)
            .map(|(t, _)| t)
    }

    /// [`read_spare`](Chip::read_spare), also returning the page's state after the read.
    pub fn read_spare_with_state(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        spare: &mut [u8],
    ) -> Result<(OpTiming, PageState), NandError> {
        self.read_op(now, addr, ReadPart::Spare, &mut [], spare)
    }

    /// Reads subpage `sub` of a page: its data slice and its slice of the spare area.
    pub fn read_subpage(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        sub: u32,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<OpTiming, NandError> {
        self.read_op(now, addr, ReadPart::Subpage(sub), data, spare)
            .map(|(t, _)| t)
    }

    fn read_op(
        &mut self,
        _now: Nanos,
        addr: PhysAddr,
        part: ReadPart,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<(OpTiming, PageState), NandError> {
        self.ensure_power()?;
        let (bi, page, pi) = self.locate(addr)?;
        let g = self.config.geometry;
        let ((doff, dlen), (soff, slen)) = self.regions(part_prog(part), &g)?;
        let (doff, dlen) = match part {
            ReadPart::Spare => (0, 0),
            _ => (doff, dlen),
        };
        check_len("data", data.len(), dlen)?;
        check_len("spare", spare.len(), slen)?;
        if self.blocks[bi].has(FLAG_FACTORY_BAD) {
            return Err(NandError::BadBlock(addr.block_addr()));
        }
        let timing = OpTiming {
            array: self.config.timing.read(self.pairing.kind(page)),
            transfer: self.config.timing.transfer(dlen + slen),
        };
        let cut = self.next_op();
        if let Some(mode) = cut {
            let effect = if mode == CutMode::After {
                self.count_read(bi, page, pi)?;
                CutEffect::Completed
            } else {
                CutEffect::NotStarted
            };
            return Err(self.record_cut(mode, CutTarget::Read(addr), effect));
        }
        let meta = self.page_meta(bi, page);
        if meta.is_erased() {
            data.fill(0xFF);
            spare.fill(0xFF);
        } else if let ReadPart::Page = part {
            self.storage.read_split(pi, data, spare)?;
        } else if let ReadPart::Spare = part {
            self.storage.read_spare(pi, g.page_size as usize, spare)?;
        } else {
            let mut buf = core::mem::take(&mut self.buf);
            let r = self.storage.read(pi, &mut buf);
            if r.is_ok() {
                data.copy_from_slice(&buf[doff..doff + dlen]);
                let s = g.page_size as usize + soff;
                spare.copy_from_slice(&buf[s..s + slen]);
            }
            self.buf = buf;
            r?;
        }
        let m = self.count_read(bi, page, pi)?;
        self.register = Some(pi);
        Ok((timing, self.state_from(bi, page, m)))
    }

    /// Whether the page register holds page `addr` (the last operation read it).
    pub fn register_holds(&self, addr: PhysAddr) -> bool {
        self.locate(addr)
            .is_ok_and(|(_, _, pi)| self.register == Some(pi))
    }

    /// Hints the CPU to load what a read of `addr` will touch first (the page's state and
    /// the start of its stored image). Changes nothing; out-of-range addresses are ignored.
    pub fn prefetch_page(&self, addr: PhysAddr) {
        if let Ok((bi, page, _)) = self.locate(addr) {
            self.prefetch_flat(bi, page, false);
        }
    }

    /// [`prefetch_page`](Chip::prefetch_page) by flat block index (that of
    /// [`Geometry::block_at`]) and page, for callers that keep flat indices; with `data`
    /// also the whole stored data area, for a read that will transfer it. Out-of-range
    /// indices are ignored.
    pub fn prefetch_flat(&self, block: usize, page: u32, data: bool) {
        let ppb = self.config.geometry.pages_per_block;
        if page >= ppb {
            return;
        }
        let pi = block as u64 * ppb as u64 + page as u64;
        if self.pages.has_block(block) {
            self.pages.prefetch(block, page);
            self.storage.prefetch(pi);
            if data {
                self.storage.prefetch_data(pi);
            }
        }
    }

    /// Transfers the data area of page `addr` from the page register into `data` (page
    /// size): real NAND reads a whole page into its register and the controller clocks out
    /// the columns it wants, so a controller may read the spare area first
    /// ([`read_spare`](Chip::read_spare)) and fetch the data only when it needs it. No
    /// operation is counted. Fails unless the chip's last operation was a read of `addr`.
    pub fn data_out(&mut self, addr: PhysAddr, data: &mut [u8]) -> Result<(), NandError> {
        self.ensure_power()?;
        let (bi, page, pi) = self.locate(addr)?;
        let g = self.config.geometry;
        check_len("data", data.len(), g.page_size as usize)?;
        if self.register != Some(pi) {
            return Err(NandError::NotInRegister(addr));
        }
        if self.pages.is_erased(bi, page) {
            data.fill(0xFF);
            return Ok(());
        }
        self.stored_data(pi, data)
    }

    /// The stored data area of flat page `pi` (written since its erase), into `data`.
    fn stored_data(&mut self, pi: u64, data: &mut [u8]) -> Result<(), NandError> {
        // The spare area lands in the scratch page image; no caller needs it.
        let spare = &mut self.buf[self.config.geometry.page_size as usize..];
        Ok(self.storage.read_split(pi, data, spare)?)
    }

    /// Counts a read of page `page` of block `bi`; returns the page's state afterwards.
    fn count_read(&mut self, bi: usize, page: u32, pi: u64) -> Result<PageMeta, NandError> {
        self.counters.reads += 1;
        let b = &mut self.blocks[bi];
        b.reads_since_erase = b.reads_since_erase.saturating_add(1);
        self.save_block(bi)?;
        if self.pages.is_erased(bi, page) {
            return Ok(self.page_meta(bi, page));
        }
        let m = self.pages.count_read(bi, page);
        self.storage.save_page(pi, &m)?;
        Ok(m)
    }

    /// (data offset, data length), (spare offset within spare, spare length) of a program
    /// or read region.
    fn regions(&self, prog: Prog, g: &Geometry) -> Result<Regions, NandError> {
        Ok(match prog {
            Prog::Full | Prog::Partial => ((0, g.page_size as usize), (0, g.spare_size as usize)),
            Prog::Subpage(s) => {
                if g.subpages_per_page == 1 {
                    return Err(NandError::NoSubpages);
                }
                if s >= g.subpages_per_page {
                    return Err(NandError::SubpageOutOfRange {
                        index: s,
                        count: g.subpages_per_page,
                    });
                }
                let (d, sp) = (g.subpage_size(), g.subpage_spare_size());
                ((s as usize * d, d), (s as usize * sp, sp))
            }
        })
    }

    // ----- programs --------------------------------------------------------------------

    /// Programs a whole erased page with `data` and `spare`.
    pub fn program(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &[u8],
        spare: &[u8],
    ) -> Result<OpTiming, NandError> {
        self.program_op(now, addr, Prog::Full, Source::Bytes(data), spare)
    }

    /// Programs a whole erased page `addr` with the data area page `from` holds and with
    /// `spare`: exactly [`program`](Chip::program) with `data` = what a read of `from`
    /// returns before any bit error, for a controller that has just read `from` without
    /// error and moves it (GC relocation). Same rules, timing and faults as `program`; the
    /// emulator only skips the round trip of the bytes through the caller's memory (a RAM
    /// backend shares them). `from` must hold data and be in the page register: the last
    /// operation must have been a read of it (a copy-back program); otherwise
    /// [`NandError::NotInRegister`].
    pub fn program_copy(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        from: PhysAddr,
        spare: &[u8],
    ) -> Result<OpTiming, NandError> {
        let (fbi, fpage, fpi) = self.locate(from)?;
        if self.pages.is_erased(fbi, fpage) {
            return Err(NandError::CopyFromErased(from));
        }
        if self.register != Some(fpi) {
            return Err(NandError::NotInRegister(from));
        }
        self.program_op(now, addr, Prog::Full, Source::Page(fpi), spare)
    }

    /// NOP partial program of an SLC page: full-size buffers in which 0xFF bytes are left
    /// unprogrammed.
    pub fn program_partial(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &[u8],
        spare: &[u8],
    ) -> Result<OpTiming, NandError> {
        self.program_op(now, addr, Prog::Partial, Source::Bytes(data), spare)
    }

    /// Programs subpage `sub` of a page (subpage data and its spare slice); see the module
    /// docs for the SP-block rules.
    pub fn program_subpage(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        sub: u32,
        data: &[u8],
        spare: &[u8],
    ) -> Result<OpTiming, NandError> {
        self.program_op(now, addr, Prog::Subpage(sub), Source::Bytes(data), spare)
    }

    /// Checks that page `page` (flat page `pi`) of block `bi`, at `addr`, may take `prog`.
    fn check_program(
        &mut self,
        addr: PhysAddr,
        (bi, page, pi): (usize, u32, u64),
        prog: Prog,
    ) -> Result<(), NandError> {
        let block = addr.block_addr();
        let b = self.blocks[bi];
        if b.has(FLAG_FACTORY_BAD) || b.has(FLAG_GROWN_BAD) {
            return Err(NandError::BadBlock(block));
        }
        if b.has(FLAG_NEEDS_ERASE) {
            return Err(NandError::NeedsErase(block));
        }
        let multi = self.multi_level(bi);
        let meta = self.page_meta(bi, page);
        let in_order = || {
            if page < b.next_page {
                Err(NandError::OutOfOrder {
                    page: addr,
                    next: b.next_page,
                })
            } else {
                Ok(())
            }
        };
        match prog {
            Prog::Full => {
                if let Usage::Subpage(_) = b.usage {
                    return Err(NandError::FullPageInSpBlock(block));
                }
                if !meta.is_erased() {
                    return Err(NandError::NotErased(addr));
                }
                in_order()?;
            }
            Prog::Partial => {
                if multi {
                    return Err(NandError::PartialProgramOnMlc(addr));
                }
                if let Usage::Subpage(_) = b.usage {
                    return Err(NandError::FullPageInSpBlock(block));
                }
                if meta.is_erased() {
                    in_order()?;
                } else {
                    if page + 1 != b.next_page {
                        return Err(NandError::PartialNotLast {
                            page: addr,
                            last: b.next_page - 1,
                        });
                    }
                    let nop = self.config.reliability.nop;
                    if meta.programs >= nop {
                        return Err(NandError::NopExceeded {
                            page: addr,
                            limit: nop,
                        });
                    }
                    let mut buf = core::mem::take(&mut self.buf);
                    let r = self.storage.read(pi, &mut buf);
                    self.buf = buf;
                    r?;
                }
            }
            Prog::Subpage(s) => {
                if multi {
                    return Err(NandError::SubpageOnMlc(block));
                }
                match b.usage {
                    Usage::FullPage => return Err(NandError::SubpageInFullPageBlock(block)),
                    Usage::Subpage(p) if p as u32 != s => {
                        return Err(NandError::PartitionInUse {
                            block,
                            active: p as u32,
                            requested: s,
                        })
                    }
                    _ => {}
                }
                if !meta.is_erased() {
                    return Err(NandError::NotErased(addr));
                }
                in_order()?;
            }
        }
        let kind = self.pairing.kind(page);
        if self.config.cell != CellType::Slc && b.has(FLAG_SLC_MODE) && kind != BitKind::Lsb {
            return Err(NandError::UpperPageInSlcMode(addr));
        }
        if multi {
            if let Some(lower) = self
                .pairing
                .lower_pages(page)
                .find(|&q| self.pages.is_erased(bi, q))
            {
                return Err(NandError::LowerPageNotProgrammed { page: addr, lower });
            }
        }
        Ok(())
    }

    fn program_op(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        prog: Prog,
        source: Source<'_>,
        spare: &[u8],
    ) -> Result<OpTiming, NandError> {
        self.ensure_power()?;
        let (bi, page, pi) = self.locate(addr)?;
        if prog == Prog::Full {
            if let Some(t) = self.program_plain(now, bi, page, pi, source, spare)? {
                return Ok(t);
            }
        }
        let g = self.config.geometry;
        let ((doff, dlen), (soff, slen)) = self.regions(prog, &g)?;
        if let Source::Bytes(data) = source {
            check_len("data", data.len(), dlen)?;
        }
        check_len("spare", spare.len(), slen)?;
        // `check_program` leaves the page's current image in `buf` for a partial program.
        let fresh = self.pages.is_erased(bi, page);
        self.check_program(addr, (bi, page, pi), prog)?;
        // The whole-page program of an erased page without a fault needs no merge buffer;
        // every other path starts from the page's current image (erased = all ones).
        let fast = fresh && prog == Prog::Full && self.cut.is_none() && self.blocks[bi].inject == 0;
        // (Decided here, used below if no cut fires: a wear failure is a per-event draw.)
        let fails =
            self.blocks[bi].inject & INJECT_PROGRAM_FAIL != 0 || self.wear_fails(bi, page as u64);
        // A copy's bytes are fetched only where they are merged into the page image: on
        // the fast path the storage copies (or shares) them itself.
        let fetched: Vec<u8>;
        let data: &[u8] = match source {
            Source::Bytes(data) => data,
            Source::Page(from) if !fast || fails => {
                let mut d = vec![0u8; dlen];
                self.stored_data(from, &mut d)?;
                fetched = d;
                &fetched
            }
            Source::Page(_) => &[],
        };
        if fresh && !fast {
            self.buf.fill(0xFF);
        } else if prog == Prog::Partial {
            let overlap =
                |cur: &[u8], new: &[u8]| cur.iter().zip(new).any(|(&c, &n)| n != 0xFF && c != 0xFF);
            let sp = g.page_size as usize;
            if overlap(&self.buf[..sp], data) || overlap(&self.buf[sp..], spare) {
                return Err(NandError::PartialOverlap(addr));
            }
        }
        let kind = self.pairing.kind(page);
        let timing = self.program_timing(page, dlen + slen);
        let segments = [(doff, data), (g.page_size as usize + soff, spare)];
        let total = dlen + slen;

        if let Some(mode) = self.next_op() {
            let target = CutTarget::Program(addr);
            let mut rng = rng_for(self.config.seed, &[stream::CUT, self.ops]);
            let effect = match mode {
                CutMode::After => {
                    self.land(&segments, total, None, &mut rng);
                    self.commit_program(bi, page, pi, now, prog, false)?;
                    CutEffect::Completed
                }
                CutMode::TornProgram(fill) => {
                    let landed = fault::below(&mut rng, total as u64) as usize;
                    let random = (fill == TornFill::Random).then_some(());
                    self.land(&segments, landed, random, &mut rng);
                    self.commit_program(bi, page, pi, now, prog, true)?;
                    CutEffect::Torn { landed }
                }
                CutMode::PairedPage if self.multi_level(bi) && kind != BitKind::Lsb => {
                    let landed = fault::below(&mut rng, total as u64) as usize;
                    self.land(&segments, landed, Some(()), &mut rng);
                    self.commit_program(bi, page, pi, now, prog, true)?;
                    let lower: Vec<u32> = self.pairing.lower_pages(page).collect();
                    for &q in &lower {
                        self.scramble_page(bi, q, &mut rng)?;
                    }
                    CutEffect::PairedCorruption {
                        lower_pages: lower.len() as u32,
                    }
                }
                _ => CutEffect::NotStarted,
            };
            return Err(self.record_cut(mode, target, effect));
        }

        let b = self.blocks[bi];
        if fails {
            // A failed program leaves the page partly programmed.
            if fresh {
                self.buf.fill(0xFF);
            }
            let mut rng = rng_for(
                self.config.seed,
                &[stream::WEAR_FAIL, pi, b.erase_count as u64],
            );
            let landed = fault::below(&mut rng, total as u64) as usize;
            self.land(&segments, landed, Some(()), &mut rng);
            self.commit_program(bi, page, pi, now, prog, true)?;
            let b = &mut self.blocks[bi];
            b.inject &= !INJECT_PROGRAM_FAIL;
            b.flags |= FLAG_GROWN_BAD;
            self.save_block(bi)?;
            self.counters.program_failures += 1;
            return Err(NandError::ProgramFailed(addr));
        }
        if fast {
            // Whole-page program of an erased page: nothing to merge.
            self.store_fresh(now, (bi, page, pi), source, spare)?;
        } else {
            self.land(&segments, total, None, &mut rng_for(0, &[]));
            self.commit_program(bi, page, pi, now, prog, false)?;
        }
        Ok(timing)
    }

    /// The common program in one pass: a whole page with whole-size buffers into an erased
    /// page of a good, full-page block, in order, its lower pages programmed, with no cut
    /// armed, no failure injected and no wear failure drawn. `None` when any of that does
    /// not hold: the general path then checks every rule, reports the violation or applies
    /// the fault. (Same state changes, counters and timing as the general path.)
    #[inline]
    fn program_plain(
        &mut self,
        now: Nanos,
        bi: usize,
        page: u32,
        pi: u64,
        source: Source<'_>,
        spare: &[u8],
    ) -> Result<Option<OpTiming>, NandError> {
        let g = &self.config.geometry;
        let b = &self.blocks[bi];
        if self.cut.is_some()
            || b.flags != 0
            || b.inject != 0
            || matches!(b.usage, Usage::Subpage(_))
            || page < b.next_page
            || spare.len() != g.spare_size as usize
            || matches!(source, Source::Bytes(d) if d.len() != g.page_size as usize)
        {
            return Ok(None);
        }
        let programmed = |q: u32| !self.pages.is_erased(bi, q);
        if programmed(page)
            || self.config.cell != CellType::Slc
                && self.pairing.lower_pages(page).any(|q| !programmed(q))
            || self.wear_fails(bi, page as u64)
        {
            return Ok(None);
        }
        let timing = self.program_timing(page, g.page_size as usize + g.spare_size as usize);
        let fired = self.next_op();
        debug_assert!(fired.is_none(), "no cut is armed");
        self.store_fresh(now, (bi, page, pi), source, spare)?;
        Ok(Some(timing))
    }

    /// Array and bus time of a program of `bytes` into `page`.
    #[inline(always)]
    fn program_timing(&self, page: u32, bytes: usize) -> OpTiming {
        OpTiming {
            array: self.config.timing.program(self.pairing.kind(page)),
            transfer: self.config.timing.transfer(bytes),
        }
    }

    /// Stores a whole-page program of an erased page (nothing to merge) and records it.
    #[inline(always)]
    fn store_fresh(
        &mut self,
        now: Nanos,
        (bi, page, pi): (usize, u32, u64),
        source: Source<'_>,
        spare: &[u8],
    ) -> Result<(), NandError> {
        match source {
            Source::Bytes(data) => self.storage.write_split(pi, data, spare)?,
            Source::Page(from) => {
                let dlen = self.config.geometry.page_size as usize;
                self.storage.write_copy(pi, from, dlen, spare)?
            }
        }
        self.commit_meta(bi, page, pi, now, Prog::Full, false)
    }

    /// Programs the first `landed` bytes of `segments` into `buf` (cells only go 1 → 0); the
    /// rest stay as they are, or take random bits when `random` is set.
    fn land(
        &mut self,
        segments: &[(usize, &[u8]); 2],
        landed: usize,
        random: Option<()>,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) {
        let mut left = landed;
        for &(off, bytes) in segments {
            let n = left.min(bytes.len());
            for (c, &d) in self.buf[off..off + n].iter_mut().zip(&bytes[..n]) {
                *c &= d;
            }
            if random.is_some() && n < bytes.len() {
                let mut noise = vec![0u8; bytes.len() - n];
                rng.fill_bytes(&mut noise);
                for (c, r) in self.buf[off + n..off + bytes.len()].iter_mut().zip(noise) {
                    *c &= r;
                }
            }
            left -= n;
        }
    }

    fn commit_program(
        &mut self,
        bi: usize,
        page: u32,
        pi: u64,
        now: Nanos,
        prog: Prog,
        damaged: bool,
    ) -> Result<(), NandError> {
        self.storage.write(pi, &self.buf)?;
        self.commit_meta(bi, page, pi, now, prog, damaged)
    }

    /// Records a program in the page and block state (the bytes are already stored).
    fn commit_meta(
        &mut self,
        bi: usize,
        page: u32,
        pi: u64,
        now: Nanos,
        prog: Prog,
        damaged: bool,
    ) -> Result<(), NandError> {
        let m = self.update_page(bi, page, |m| {
            m.programs = m.programs.saturating_add(1);
            m.programmed_at = now;
            m.reads = 0;
            if damaged {
                m.flags |= PAGE_DAMAGED;
            } else {
                m.flags &= !PAGE_DAMAGED;
            }
            if let Prog::Subpage(s) = prog {
                m.subpages |= 1 << s;
            }
        });
        self.storage.save_page(pi, &m)?;
        let b = &mut self.blocks[bi];
        b.next_page = b.next_page.max(page + 1);
        b.usage = match prog {
            Prog::Subpage(s) => Usage::Subpage(s as u8),
            _ => Usage::FullPage,
        };
        self.save_block(bi)?;
        match prog {
            Prog::Full => self.counters.programs += 1,
            Prog::Partial => self.counters.partial_programs += 1,
            Prog::Subpage(_) => self.counters.subpage_programs += 1,
        }
        Ok(())
    }

    /// Overwrites a random span (at least an eighth of the page) of a programmed page with
    /// random bits: what an interrupted upper-page program does to its lower page.
    fn scramble_page(
        &mut self,
        bi: usize,
        page: u32,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> Result<(), NandError> {
        if self.pages.is_erased(bi, page) {
            return Ok(());
        }
        let pi = bi as u64 * self.config.geometry.pages_per_block as u64 + page as u64;
        let mut buf = vec![0u8; self.buf.len()];
        self.storage.read(pi, &mut buf)?;
        let n = buf.len();
        let len = (n / 8 + fault::below(rng, (n - n / 8) as u64 + 1) as usize).min(n);
        let start = fault::below(rng, (n - len) as u64 + 1) as usize;
        rng.fill_bytes(&mut buf[start..start + len]);
        self.storage.write(pi, &buf)?;
        let m = self.update_page(bi, page, |m| m.flags |= PAGE_DAMAGED);
        Ok(self.storage.save_page(pi, &m)?)
    }

    // ----- erase -----------------------------------------------------------------------

    /// Erases a block.
    pub fn erase(&mut self, now: Nanos, block: BlockAddr) -> Result<OpTiming, NandError> {
        self.ensure_power()?;
        let bi = self.block_index(block)?;
        let b = self.blocks[bi];
        if b.has(FLAG_FACTORY_BAD) || b.has(FLAG_GROWN_BAD) {
            return Err(NandError::BadBlock(block));
        }
        let timing = OpTiming {
            array: self.config.timing.erase(),
            transfer: Nanos::ZERO,
        };
        if let Some(mode) = self.next_op() {
            let target = CutTarget::Erase(block);
            let effect = match mode {
                CutMode::After => {
                    self.do_erase(bi, now)?;
                    CutEffect::Completed
                }
                CutMode::InterruptedErase => {
                    let pages = self.partial_erase(bi)?;
                    CutEffect::PartialErase { pages }
                }
                _ => CutEffect::NotStarted,
            };
            return Err(self.record_cut(mode, target, effect));
        }
        if b.inject & INJECT_ERASE_FAIL != 0 || self.wear_fails(bi, u64::MAX) {
            let b = &mut self.blocks[bi];
            b.inject &= !INJECT_ERASE_FAIL;
            b.flags |= FLAG_GROWN_BAD;
            b.erase_count = b.erase_count.saturating_add(1);
            self.save_block(bi)?;
            self.counters.erase_failures += 1;
            return Err(NandError::EraseFailed(block));
        }
        self.do_erase(bi, now)?;
        Ok(timing)
    }

    fn do_erase(&mut self, bi: usize, now: Nanos) -> Result<(), NandError> {
        let ppb = self.config.geometry.pages_per_block;
        let first = bi as u64 * ppb as u64;
        self.storage.discard(first, ppb)?;
        self.storage.reset_pages(first, ppb)?;
        self.pages.clear(bi);
        let b = &mut self.blocks[bi];
        b.erase_count = b.erase_count.saturating_add(1);
        b.flags &= !FLAG_NEEDS_ERASE;
        self.counters.erases += 1;
        self.mark_erased(bi, now)
    }

    /// Block `bi`'s state after an erase at `now` (its erase count already advanced): empty,
    /// fresh, its read-disturb count reset; saved.
    fn mark_erased(&mut self, bi: usize, now: Nanos) -> Result<(), NandError> {
        let b = &mut self.blocks[bi];
        b.next_page = 0;
        b.usage = Usage::Fresh;
        b.erased_at = now;
        b.reads_since_erase = 0;
        self.save_block(bi)
    }

    /// An erase cut short: programmed cells are partly erased (random bits set to 1), the
    /// block is flagged as needing an erase, and the cycle counts as wear.
    fn partial_erase(&mut self, bi: usize) -> Result<u32, NandError> {
        let ppb = self.config.geometry.pages_per_block;
        let mut rng = rng_for(self.config.seed, &[stream::CUT, self.ops]);
        let mut damaged = 0;
        let mut buf = vec![0u8; self.buf.len()];
        let mut noise = vec![0u8; self.buf.len()];
        for page in 0..ppb {
            if self.pages.is_erased(bi, page) {
                continue;
            }
            let pi = bi as u64 * ppb as u64 + page as u64;
            self.storage.read(pi, &mut buf)?;
            rng.fill_bytes(&mut noise);
            for (c, r) in buf.iter_mut().zip(&noise) {
                *c |= r;
            }
            self.storage.write(pi, &buf)?;
            let m = self.update_page(bi, page, |m| m.flags |= PAGE_DAMAGED);
            self.storage.save_page(pi, &m)?;
            damaged += 1;
        }
        let b = &mut self.blocks[bi];
        b.flags |= FLAG_NEEDS_ERASE;
        b.erase_count = b.erase_count.saturating_add(1);
        self.save_block(bi)?;
        Ok(damaged)
    }
}

fn part_prog(part: ReadPart) -> Prog {
    match part {
        ReadPart::Page | ReadPart::Spare => Prog::Full,
        ReadPart::Subpage(s) => Prog::Subpage(s),
    }
}

fn status_of(b: &BlockMeta) -> BlockStatus {
    if b.has(FLAG_FACTORY_BAD) {
        BlockStatus::FactoryBad
    } else if b.has(FLAG_GROWN_BAD) {
        BlockStatus::GrownBad
    } else {
        BlockStatus::Good
    }
}

fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), NandError> {
    if got == expected {
        Ok(())
    } else {
        Err(NandError::BufferSize {
            what,
            got,
            expected,
        })
    }
}
