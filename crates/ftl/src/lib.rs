//! # ftl — flash translation layers
//!
//! The [`Ftl`] interface (read, write, trim, flush of logical pages; mount; `tick` for
//! background work) and its first scheme, [`PageFtl`]: a pure page-level mapping FTL with the
//! whole map in RAM, out-of-place updates, a write frontier per stream and die, garbage
//! collection as a step machine (`substrate::gc`), pluggable victim policies ([`victim`]),
//! static wear levelling and bad-block retirement.
//!
//! Every flash operation an FTL performs is logged as a [`FlashOp`] (die, channel, array and
//! bus time, ECC time, dependency); a simulation engine drains the log after each call and
//! places the operations on per-die and per-channel timelines. The FTL itself keeps no clock:
//! `now` is passed in.
//!
//! ## Durability contract
//!
//! For every [`Ftl`] and every sequence of operations cut short by a power failure at any
//! point (including inside a program or an erase, and on MLC chips an upper-page program
//! that scrambles its word line's lower page), after power-on and mount:
//!
//! - every logical page whose last write or trim was followed by a completed
//!   [`flush`](Ftl::flush) reads back exactly that value (zeros after a trim);
//! - every other logical page reads back its value at the last completed flush or the
//!   value of one of the writes (or trims) issued since — never anything else, and never an
//!   error;
//! - mounting never panics, whatever the chip holds: it returns a volume or an error.
//!
//! [`PageFtl`] meets it with checkpoints, per-page OOB records, sealing of exposed MLC lower
//! pages and deferred erases (see its module docs); `sim::crash` and `nandlab crashtest`
//! check it by cutting power at every chip operation.
//!
//! `no_std` + `alloc`.
#![no_std]
#![warn(missing_docs)]

extern crate alloc;

mod block;
mod bounded;
mod bytes;
pub mod combined;
pub mod dftl;
mod page;
pub mod policy;
mod recovery;
pub mod rt_bounds;
pub mod rtblock;
#[cfg(feature = "sabotage")]
pub mod sabotage;
pub mod scheme;
mod substrate;
#[cfg(test)]
mod testkit;
pub mod timeline;
pub mod victim;

pub use block::{BlockFtl, BlockFtlConfig};
pub use dftl::{DftlConfig, DftlFtl, MemoryBudget, MetaMode};
pub use page::{MountFailure, PageFtl, PageFtlConfig, ReplicaReads, WearLevelConfig, MAX_REPLICAS};
pub use policy::{flares, Policies};
pub use recovery::{RecoveryKind, RecoveryReport};
pub use rtblock::{GftlBuffer, RtBlockConfig, RtBlockFtl, RtKind};
pub use scheme::{BoxedVolume, SchemeConfig, SchemeKind, Volume, PACK_SPARE_FROM_PAGES};
pub use substrate::region::meta_tag_name;
pub use victim::{
    ApWeighted, Candidate, CostBenefit, Greedy, SelectContext, VictimKind, VictimPolicy,
};

use controller::CtlError;
pub use controller::{DataClass, Temperature};
use nand::{Lpn, NandError, Nanos};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a flash operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// Page (or spare) read.
    Read,
    /// Page program.
    Program,
    /// Block erase.
    Erase,
}

/// Why a flash operation was issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Serving a host request.
    Host,
    /// Garbage collection.
    Gc,
    /// Static wear levelling.
    WearLevel,
    /// Moving data off a block that went bad.
    Relocate,
    /// FTL metadata.
    Meta,
    /// Mount-time scanning.
    Mount,
    /// Rewriting pages the ECC-strength policy raised an alarm for (FLARES's page
    /// refresh).
    Refresh,
}

impl Cause {
    /// Every cause, in report order.
    pub const ALL: [Cause; Cause::COUNT] = [
        Cause::Host,
        Cause::Gc,
        Cause::WearLevel,
        Cause::Relocate,
        Cause::Meta,
        Cause::Mount,
        Cause::Refresh,
    ];

    /// Number of causes.
    pub const COUNT: usize = 7;

    /// Index into per-cause arrays.
    pub const fn index(self) -> usize {
        match self {
            Cause::Host => 0,
            Cause::Gc => 1,
            Cause::WearLevel => 2,
            Cause::Relocate => 3,
            Cause::Meta => 4,
            Cause::Mount => 5,
            Cause::Refresh => 6,
        }
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Cause::Host => "host",
            Cause::Gc => "gc",
            Cause::WearLevel => "wear_level",
            Cause::Relocate => "relocate",
            Cause::Meta => "meta",
            Cause::Mount => "mount",
            Cause::Refresh => "refresh",
        }
    }
}

/// One flash operation, as an engine needs it to account for time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlashOp {
    /// Flat die index.
    pub die: u32,
    /// Channel of that die.
    pub channel: u32,
    /// Read, program or erase.
    pub kind: OpKind,
    /// Why.
    pub cause: Cause,
    /// Time in the array.
    pub array: Nanos,
    /// Time on the channel.
    pub transfer: Nanos,
    /// Decode time in the controller after the transfer (reads).
    pub ecc: Nanos,
    /// Index (in the same batch) of an operation this one must wait for (a GC copy's
    /// program waits for its read).
    pub after: Option<u32>,
}

/// A scheme's guaranteed worst latencies of one page request on an idle die, in ns, and
/// the Table I quantities they follow from (WAO-GC, Ref. 003).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LatencyBound {
    /// A write: its transfer and program plus one GC step with every copy charged in full
    /// (read, transfers, decode at the strength's limit, program).
    pub write_ns: u64,
    /// A read: its array read, transfer and worst decode.
    pub read_ns: u64,
    /// The same bound in array times only, as WAO-GC's Table I states U(t) (for WAO-GC
    /// t_er + t_wr, eq. 1; for full GC on demand t_wr + U(λ)(t_rd + t_wr) + t_er).
    pub array_write_ns: u64,
    /// The most valid pages a victim can hold (U(λ)).
    pub u_lambda: u32,
    /// Table I's L_buf: pages of the destination block writes take while a victim is
    /// collected (k for WAO-GC; 0 when GC completes inside one write).
    pub l_buf: u32,
    /// Valid-page copies per partial step (α: eq. 4's, or the charged copy's under
    /// `AlphaRule::Charged`; 0 when GC completes inside one write).
    #[serde(default)]
    pub alpha: u32,
    /// A trim's flash work: at most one trim-log page, with the region-block erase and the
    /// region swap opening a log block may take (0: not derived for this scheme). The map
    /// work per discarded page is the firmware's, charged on top by the caller.
    #[serde(default)]
    pub trim_ns: u64,
    /// A flush's flash work: the running GC jobs finished, every frontier sealed, the
    /// pending trims' log page, and a due checkpoint — whole or the rest of one in steps —
    /// with a region swap (0: not derived for this scheme). It grows with the map.
    #[serde(default)]
    pub flush_ns: u64,
}

/// Counts an FTL keeps (flash operations by kind and cause, GC and wear-levelling work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FtlCounters {
    /// Logical pages written by the host.
    pub host_writes: u64,
    /// Logical pages read by the host.
    pub host_reads: u64,
    /// Host reads of never-written (or trimmed) pages, served without flash access.
    pub unmapped_reads: u64,
    /// Logical pages the host asked to trim (a page trimmed twice counts twice).
    pub trims: u64,
    /// Mapped logical pages a trim dropped (distinct: a page already unmapped is not
    /// counted again).
    #[serde(default)]
    pub trimmed_pages: u64,
    /// Trim records written to the metadata log (a range of pages is one record; a
    /// scheme that logs no trims counts none).
    #[serde(default)]
    pub trim_records: u64,
    /// Flushes.
    pub flushes: u64,
    /// NAND page reads per cause (see [`Cause::index`]).
    pub reads: [u64; Cause::COUNT],
    /// NAND page programs per cause.
    pub programs: [u64; Cause::COUNT],
    /// NAND block erases per cause.
    pub erases: [u64; Cause::COUNT],
    /// Valid pages copied by GC, wear levelling and relocation.
    pub valid_copies: u64,
    /// Victim blocks reclaimed by GC.
    pub gc_victims: u64,
    /// Blocks migrated by static wear levelling.
    pub wl_migrations: u64,
    /// Blocks retired as bad (program/erase failures).
    pub retired_blocks: u64,
    /// Program failures retried elsewhere.
    pub program_retries: u64,
    /// Logical pages whose only copy became unreadable during GC/relocation.
    pub lost_pages: u64,
    /// Checkpoints written.
    #[serde(default)]
    pub checkpoints: u64,
    /// Steps of checkpoints written in steps beside host writes (an erase, a checkpoint
    /// page or a sealing pad each; a real-time pacing with roll-forward recovery).
    #[serde(default)]
    pub checkpoint_steps: u64,
    /// Padding pages programmed to seal exposed lower pages of MLC blocks.
    #[serde(default)]
    pub pad_pages: u64,
    /// Bytes of FTL metadata programmed: the data areas of the pages that carry it
    /// (checkpoint pages, a whole page each in the page-level FTL; padding pages carry
    /// nothing and are counted in `pad_pages` only).
    #[serde(default)]
    pub meta_bytes: u64,
    /// `meta_bytes` by kind of metadata.
    #[serde(default)]
    pub meta_bytes_by_kind: MetaBytes,
    /// Refresh alarms raised by the ECC-strength policy.
    #[serde(default)]
    pub refresh_alarms: u64,
    /// Metadata units programmed (pages or subpages; `meta_bytes` is their bytes).
    #[serde(default)]
    pub meta_programs: u64,
    /// Erases of SP blocks (blocks programmed by subpages: SPFTL's metadata blocks), a
    /// part of `erases` (NWI, SPFTL eq. 1).
    #[serde(default)]
    pub sp_erases: u64,
    /// Demand-paged map (DFTL_por, SPFTL): CPMT look-ups that hit and that missed (a
    /// charged read of the PMT unit).
    #[serde(default)]
    pub cpmt_hits: u64,
    /// See `cpmt_hits`.
    #[serde(default)]
    pub cpmt_misses: u64,
    /// CBIT look-ups that hit and that missed (a charged read of the BIT unit).
    #[serde(default)]
    pub cbit_hits: u64,
    /// See `cbit_hits`.
    #[serde(default)]
    pub cbit_misses: u64,
    /// SPFTL_log: logs merged into their metadata unit (a log that outgrew its subpage).
    #[serde(default)]
    pub log_merges: u64,
    /// What the ECC-strength policy counted (FLARES zones, alarms, scrub, strengths).
    #[serde(default)]
    pub ecc_policy: policy::EccPolicyCounters,
    /// Host blocks opened in SLC mode by the flush buffer.
    #[serde(default)]
    pub slc_blocks: u64,
    /// Checkpoint-region blocks swapped for less-worn free blocks (region wear levelling).
    #[serde(default)]
    pub region_swaps: u64,
    /// Searches of the chip's shared-pages (pairing) table: one per slot judged for a
    /// critical page, one per page an asymmetric GC places (AP; the simulator charges each
    /// `[controller] pairing_lookup_ns`).
    #[serde(default)]
    pub pairing_lookups: u64,
    /// Padding pages programmed because the placement refused a slot (AP: an LSB page a
    /// critical page skipped); also counted in `pad_pages`.
    #[serde(default)]
    pub placement_pads: u64,
    /// Critical pages placed in an unreliable slot the placement would have padded, because
    /// a real-time pacing's shared destination had no pad to spare (its eq. 6 slack) while
    /// a victim was being collected (AP under WAO-GC: the combined profile), or, under the
    /// other pacings, because a GC copy's job could no longer finish if every copy left took
    /// a pad.
    #[serde(default)]
    pub placement_lapses: u64,
    /// GC and relocation reads retried after a page did not decode (each a charged read).
    #[serde(default)]
    pub read_retries: u64,
    /// Replica pages programmed (Meta-Cure's backup copies of critical host writes; also
    /// counted as host programs).
    #[serde(default)]
    pub replica_programs: u64,
    /// Replica pages read because a primary did not decode.
    #[serde(default)]
    pub replica_reads: u64,
    /// Reads answered by a replica, and primaries GC could not read replaced by one.
    #[serde(default)]
    pub replica_rescues: u64,
    /// The most valid pages a GC victim held when it was chosen (λ; WAO-GC bounds it by
    /// U(λ)).
    #[serde(default)]
    pub max_victim_valid: u64,
    /// Partial GC steps run (real-time pacing).
    #[serde(default)]
    pub partial_steps: u64,
    /// The most write-buffer pages in use at once (GFTL: its central buffer's blocks
    /// times π; RFTL: the pages of one logical block's buffer block): Table I's L_buf,
    /// measured. 0 for schemes without a buffer.
    #[serde(default)]
    pub max_buffer_pages: u64,
    /// Times a real-time pacing could not keep its bound and collected a whole victim
    /// inside one write (its destination full with no free block: blocks gone bad since
    /// the bound was checked). 0 whenever the bound holds.
    #[serde(default)]
    pub rt_overruns: u64,
}

/// Metadata bytes programmed, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MetaBytes {
    /// Checkpoint (snapshot) pages.
    pub checkpoint: u64,
    /// Log pages appended after a checkpoint (the page-level FTL's trim log).
    pub log: u64,
    /// DFTL_por / SPFTL: page-map (PMT) units written back from the CPMT.
    #[serde(default)]
    pub pmt: u64,
    /// DFTL_por / SPFTL: block-information (BIT) units written back from the CBIT.
    #[serde(default)]
    pub bit: u64,
    /// DFTL_por / SPFTL: global-context (GXT) units.
    #[serde(default)]
    pub gxt: u64,
    /// DFTL_por / SPFTL: PMT units copied by the PMT partition's GC.
    #[serde(default)]
    pub pmt_gc: u64,
    /// DFTL_por / SPFTL: BIT units copied by the BIT partition's GC.
    #[serde(default)]
    pub bit_gc: u64,
}

impl FtlCounters {
    /// NAND programs of all causes.
    pub fn total_programs(&self) -> u64 {
        self.programs.iter().sum()
    }

    /// NAND operations of all kinds and causes: page reads, page programs and block erases.
    pub fn total_chip_ops(&self) -> u64 {
        self.reads
            .iter()
            .chain(&self.programs)
            .chain(&self.erases)
            .sum()
    }

    /// Write amplification: NAND programs per host page write.
    pub fn waf(&self) -> f64 {
        if self.host_writes == 0 {
            0.0
        } else {
            self.total_programs() as f64 / self.host_writes as f64
        }
    }
}

/// A broken invariant, as `verify` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Invariant {
    /// The FTL's own structures disagree (block states, indexes, frontiers, jobs, map and
    /// reverse map, valid counts): a bug.
    #[error("{0}")]
    Structure(alloc::string::String),
    /// The FTL's mirror of what the flash holds differs from it: the erase-count mirror
    /// from the chip's counters, or (DFTL) the block table's valid counts from the map. A
    /// bug too — unless the image was damaged behind the FTL's back (blocks erased, records
    /// forged into an update block), which it cannot know.
    #[error("{0}")]
    Mirror(alloc::string::String),
}

/// Debug builds check a volume's structure where its state settles — at every flush,
/// committed checkpoint and mount — and panic naming the first broken invariant; release
/// builds do nothing (`check` is not even called: a pass over every block and page).
///
/// Only [`Invariant::Structure`] panics. A mirror ([`Invariant::Mirror`]) may legitimately
/// differ from the flash after a mount of a damaged image: blocks erased behind the FTL's
/// back leave the erase-count mirror behind (roll-forward takes counts from the checkpoint
/// for blocks it has no reason to read), and DFTL's recovery takes a record forged into an
/// update block for a write and decrements the count of the page it claims to supersede.
/// Those checks stay with the tests and harnesses that know their image is undamaged.
#[inline(always)]
pub(crate) fn debug_verify(at: &str, check: impl FnOnce() -> Result<(), Invariant>) {
    #[cfg(debug_assertions)]
    if let Err(Invariant::Structure(e)) = check() {
        panic!("invariant broken at {at}: {e}");
    }
    #[cfg(not(debug_assertions))]
    let _ = (at, check);
}

/// FTL errors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FtlError {
    /// The logical page is outside the volume.
    #[error("logical page {lpn} is out of range (volume has {count} pages)")]
    OutOfRange {
        /// The rejected page.
        lpn: u64,
        /// Volume size in pages.
        count: u64,
    },
    /// A data buffer of the wrong size.
    #[error("buffer is {got} bytes, expected {expected}")]
    BufferSize {
        /// Given.
        got: usize,
        /// Required.
        expected: usize,
    },
    /// The data of this logical page cannot be read back (uncorrectable).
    #[error("logical page {0} is unreadable (uncorrectable)")]
    Unreadable(Lpn),
    /// No free space left even after garbage collection (too many bad blocks).
    #[error("device is out of space: no reclaimable block left")]
    NoSpace,
    /// The chip does not hold a volume this FTL can mount.
    #[error("cannot mount: {0}")]
    Corrupt(&'static str),
    /// Configuration error.
    #[error("FTL configuration: {0}")]
    Config(alloc::string::String),
    /// The chip holds a structure in a format version this build does not read (written
    /// by a newer nandlab); nothing was changed.
    #[error("cannot mount: the {what} is format version {version}; this build reads versions up to {newest} (FORMAT.md)")]
    UnknownFormat {
        /// Which structure.
        what: &'static str,
        /// The version found.
        version: u32,
        /// The newest version this build reads.
        newest: u32,
    },
    /// The controller or chip failed (power loss, …).
    #[error(transparent)]
    Controller(#[from] CtlError),
}

impl From<NandError> for FtlError {
    fn from(e: NandError) -> Self {
        FtlError::Controller(CtlError::Nand(e))
    }
}

/// One past the last page of the range `first .. first + count` of a volume of `logical`
/// pages, or [`FtlError::OutOfRange`] naming the range's last page.
pub fn check_range(logical: u64, first: Lpn, count: u64) -> Result<u64, FtlError> {
    match first.get().checked_add(count) {
        Some(end) if end <= logical => Ok(end),
        _ => Err(FtlError::OutOfRange {
            lpn: first.get().saturating_add(count.saturating_sub(1)),
            count: logical,
        }),
    }
}

/// The interface every FTL scheme implements. Logical pages are the FTL's page size; `data`
/// buffers are one logical page in bytes mode and empty in digest mode.
///
/// Power: once a power cut fires on the chip (the request it fired in fails with
/// [`NandError::PowerLoss`]), every request — write, read, trim, flush, shutdown, tick —
/// fails the same way and changes nothing, until the chip is powered on and mounted again
/// (a real controller has lost its RAM; the built-in schemes check it first, through the
/// substrate's `powered`).
pub trait Ftl {
    /// Logical pages the volume exposes.
    fn logical_pages(&self) -> u64;
    /// Bytes per logical page.
    fn page_size(&self) -> usize;
    /// Writes one logical page with no hint.
    fn write(&mut self, now: Nanos, lpn: Lpn, data: &[u8]) -> Result<(), FtlError> {
        self.write_with(now, lpn, data, DataClass::NORMAL)
    }
    /// Writes one logical page with a write hint (critical, hot/cold stream). The class is
    /// kept in the page's OOB record: it survives GC, power cuts and mount.
    fn write_with(
        &mut self,
        now: Nanos,
        lpn: Lpn,
        data: &[u8],
        hint: DataClass,
    ) -> Result<(), FtlError>;
    /// Reads one logical page (zeros if never written or trimmed).
    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError>;
    /// Discards one logical page.
    fn trim(&mut self, now: Nanos, lpn: Lpn) -> Result<(), FtlError>;
    /// Discards logical pages `first .. first + count` as one operation (a host's discard
    /// request). A scheme that logs trims logs the range as one record; the default
    /// discards page by page. `count = 0` does nothing; a range past the volume's end is
    /// rejected whole ([`FtlError::OutOfRange`] names its last page) before anything is
    /// discarded.
    fn trim_range(&mut self, now: Nanos, first: Lpn, count: u64) -> Result<(), FtlError> {
        let logical = self.logical_pages();
        let end = check_range(logical, first, count)?;
        for l in first.get()..end {
            self.trim(
                now,
                Lpn::checked(l, logical).expect("inside the checked range"),
            )?;
        }
        Ok(())
    }
    /// Makes everything written (and trimmed) so far durable.
    fn flush(&mut self, now: Nanos) -> Result<(), FtlError>;
    /// Flushes and leaves the volume in its fastest state to mount (a clean shutdown).
    fn shutdown(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.flush(now)
    }
    /// When each die is next free (the engine's timeline), before a request is dispatched.
    /// An FTL then issues each flash operation at the time it will run on its die — no
    /// earlier than the `now` it is given — so the chip records program and erase times,
    /// and ages reads, by die time rather than dispatch time. Without a call, operations
    /// run at the time they are issued.
    fn sync_dies(&mut self, _free: &[Nanos]) {}
    /// AP's request feedback: true if a host write of `class` to logical page `lpn` would
    /// now be offered a slot its placement refuses (a critical page meeting an LSB page,
    /// which would be padded). A scheduler may then serve a queued write that can take
    /// that slot first. Changes no state; `false` for placements that take every slot.
    fn feedback_wanted(&self, _lpn: u64, _class: DataClass) -> bool {
        false
    }
    /// A hint that logical page `lpn` will be read or written soon: an implementation may
    /// start loading what it will look up (its map entry) so the access does not wait on
    /// memory. Changes no state; out-of-range pages are ignored.
    fn prefetch(&self, _lpn: u64) {}
    /// The second stage of [`prefetch`](Ftl::prefetch), a little later: an implementation
    /// may read the (by now loaded) map entry and start loading what the access will update
    /// through it (the old physical page's reverse entry, its block's counters).
    fn prefetch_mapped(&self, _lpn: u64) {}
    /// The last stage for a read, just before it: an implementation may start loading the
    /// stored data the read will copy out (its map entry and the chip's state of the page
    /// are expected to be cached by the earlier stages).
    fn prefetch_data(&self, _lpn: u64) {}
    /// Background work at time `now` (idle-time GC, …); returns whether work was done.
    fn tick(&mut self, now: Nanos) -> Result<bool, FtlError>;
    /// Moves the flash operations performed since the last call into `out` (appending).
    fn take_ops(&mut self, out: &mut alloc::vec::Vec<FlashOp>);
    /// Counters.
    fn counters(&self) -> &FtlCounters;
    /// The latency bound the scheme guarantees for one page request on an idle die, if it
    /// guarantees one (WAO-GC).
    fn latency_bound(&self) -> Option<LatencyBound> {
        None
    }
    /// The over-provisioning the volume was sized with, where the scheme may choose it
    /// (the page kernel raises the configured value for WAO-GC's bound when
    /// `auto_over_provisioning` is on); `None` for schemes that take it as configured.
    fn over_provisioning(&self) -> Option<f64> {
        None
    }
    /// Whether the controller writes FLARES's PPROF codeword in every page's spare area.
    fn controller_pprof(&self) -> bool {
        false
    }
    /// Controller RAM the ECC-strength policy's per-page state takes (FLARES's cached
    /// profiles; 0 for a fixed strength).
    fn policy_ram_bytes(&self) -> u64 {
        0
    }
    /// The controller's ECC statistics.
    fn ecc_stats(&self) -> controller::EccStats;
    /// The analytic failure probability of the last page the controller decoded (a
    /// simulator's measurement; see `controller::Controller::last_read_risk`).
    fn last_read_risk(&self) -> Option<controller::ReadRisk> {
        None
    }
    /// P/E cycles of every block (flat index).
    fn erase_counts(&self) -> &[u32];
}
