//! A pure page-level mapping FTL: the whole logical-to-physical map in RAM.
//!
//! - Out-of-place updates into a write frontier per (stream, die): host writes and GC copies
//!   go to different open blocks (hot/cold separation); host writes rotate over dies.
//! - Free blocks per die in a min-heap by erase count (dynamic wear levelling: the least
//!   worn free block is opened next).
//! - Garbage collection is the substrate's step machine (`substrate::gc`): a job reclaims
//!   one victim, one page copy or one erase per [`step`](PageFtl::gc_step). The foreground
//!   scheduler runs jobs before a host write while a die has fewer free blocks than
//!   `gc_threshold`.
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
//! - **Checkpoints** ([`snapshot`], over the substrate's checkpoint region): a reserved region of SLC-mode blocks holds snapshots
//!   (map, block states, frontiers, sequence counter) in two or more generations, plus a
//!   trim log. Written at format, on [`Ftl::shutdown`], and on a flush once
//!   `checkpoint_interval` blocks have been opened since the last one (by default 4 per
//!   die, or enough blocks to hold 4 checkpoint bodies if that is more). With a real-time
//!   pacing and roll-forward recovery also in bounded steps beside the writes
//!   ([`cpstep`]), before a die would open more blocks than the bound leaves out of σ.
//! - **Recovery** ([`recovery`]): `FullScan` reads every page's OOB;
//!   `RollForward` loads the checkpoint and scans only the blocks the
//!   allocator can have opened since (free blocks are opened in a fixed order, so the
//!   candidates are known).
//! - **Paired pages** (MLC): programming an upper page can destroy its word line's lower
//!   page if power fails mid-program. A lower page is *exposed* while an upper partner is
//!   unprogrammed. Flushed data is never left exposed: `flush` (and every checkpoint)
//!   *seals* each open block by programming padding pages until no lower page written so
//!   far is exposed. A GC or wear-levelling victim is not erased while a page that
//!   superseded its data, or a copy of its data, is exposed (the victim waits in state
//!   `Dirty`; when space runs out the offending frontier is sealed): an old version is never
//!   destroyed before its replacement is safe. A block found half-written at mount is
//!   resumed only if all its pages decode and those at its write point verify in full; its
//!   lower pages then count as exposed until sealed (as before the cut), and a next page
//!   that is not programmable closes it. Any other half-written block is closed: nothing
//!   damaged at a crash is ever built upon.
//! - **Trims** are appended to the trim log on flush and before any erase.

mod attach;
mod config;
mod cpstep;
mod hooks;
mod map;
mod paged;
mod realtime;
pub(crate) mod recovery;
mod replica;
mod snapshot;
mod trimlog;
mod verify;

use crate::bounded::Cap;
use crate::policy::{FixedStrength, Policies, Stream, WriteKind};
use crate::substrate::gc::{erase_dirty, gc_step};
use crate::substrate::pace::{finish_jobs, paced, run_pending, run_refresh};
use crate::substrate::region::Region;
use crate::substrate::{BState, Payload, Sense, Sensed, Substrate, SubstrateConfig, COLD, HOST};
use crate::{Cause, Ftl, FtlError};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use controller::{Controller, DataClass, OobRecord, PageKind};
use map::{MapSlot, MapStore, RamMap};
use nand::hint::prefetch;
use nand::{ErrorModel, Lpn, Nanos, PhysAddr, Storage};

pub use crate::substrate::WearLevelConfig;
pub use config::{PageFtlConfig, ReplicaReads};
pub use replica::MAX_REPLICAS;

/// Page rewrites per die per idle-time `tick` (bounds one call's work).
const TICK_REFRESH: usize = 64;

/// No mapping / no valid data.
const INVALID: u32 = u32::MAX;
/// The logical page's only copy became unreadable.
const LOST: u32 = u32::MAX - 1;

/// A failed mount: why, and the controller it was given.
pub struct MountFailure<S: Storage, M: ErrorModel> {
    /// What went wrong.
    pub error: FtlError,
    /// The controller, with its chip as the failed mount left it.
    pub controller: Controller<S, M>,
}

impl<S: Storage, M: ErrorModel> MountFailure<S, M> {
    /// A failed mount: `error`, and the controller handed back.
    pub(crate) fn boxed(error: FtlError, controller: Controller<S, M>) -> Box<Self> {
        Box::new(MountFailure { error, controller })
    }
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for MountFailure<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MountFailure")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// The page-level mapping FTL over a controller: the map (`l2p`, `p2l`) on the shared
/// substrate (the crate-private `substrate` module, shared with future kernels).
pub struct PageFtl<S: Storage, M: ErrorModel> {
    pub(crate) s: Substrate<S, M>,
    cfg: PageFtlConfig,
    logical: u64,
    /// The logical-to-physical map (a map-store policy: the whole map in RAM today).
    map: MapSlot<S, M>,
    /// The reverse map, in RAM (what GC asks which logical page a physical page holds).
    p2l: Vec<u32>,
    /// The checkpoint region.
    region: Region<S, M>,
    /// Trims not yet in the trim log, oldest first.
    pending_trims: Vec<trimlog::TrimRange>,
    /// One bit per logical page: its last write was critical (the class in its page's
    /// record, kept in RAM for GC's copy order and the placement invariant; checkpointed
    /// as ranges, rebuilt from records by recovery).
    critical: Vec<u64>,
    /// Meta-Cure's replica sets (empty unless `replicas` > 0).
    replicas: replica::Replicas,
    /// Buffer for replica reads whose data are discarded (`ReplicaReads::Always`).
    replica_buf: Vec<u8>,
    /// What the last mount did.
    pub(crate) recovery: Option<crate::RecoveryReport>,
    /// WAO-GC's bounds (real-time pacing only), checked when the volume is sized.
    rt: Option<crate::rt_bounds::WaoBounds>,
    /// WAO-GC's copies per partial step under `wao_alpha` (1 with other pacings).
    alpha: u32,
    /// The latency bound they give with this controller's costs.
    rt_latency: Option<crate::LatencyBound>,
    /// The checkpoint encoder's buffer, kept between checkpoints (the snapshot of a
    /// checkpoint being written in steps; scratch otherwise).
    cp_buf: Vec<u8>,
    /// A checkpoint being written in steps ([`cpstep`]).
    steps: Option<cpstep::CpSteps>,
    /// Its steps per host write (sized with the volume).
    cp_steps_per_write: u32,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for PageFtl<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageFtl")
            .field("logical_pages", &self.logical)
            .field("cfg", &self.cfg)
            .field("map", &self.map.name())
            .field("counters", self.s.counters())
            .finish_non_exhaustive()
    }
}

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Whether logical page `lpn`'s last write was critical.
    #[inline]
    pub(crate) fn is_critical(&self, lpn: u64) -> bool {
        self.critical
            .get((lpn / 64) as usize)
            .is_some_and(|w| w >> (lpn % 64) & 1 == 1)
    }

    /// Records the class of `lpn`'s last write.
    #[inline]
    pub(crate) fn set_critical(&mut self, lpn: u64, critical: bool) {
        if let Some(w) = self.critical.get_mut((lpn / 64) as usize) {
            let bit = 1u64 << (lpn % 64);
            if critical {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
    }

    /// A demand-paged map's upkeep before a host operation (bounded: see
    /// `PagedMap::maintain`), and the checkpoint its partition asks for. That checkpoint
    /// is wanted, not needed (the cache can hold a dirty page past its budget): one the
    /// data blocks have no room for (sealing pads) is left for later, and the operation
    /// goes on.
    fn map_upkeep(&mut self, now: Nanos) -> Result<(), FtlError> {
        let stepped = self.steps_enabled();
        let MapSlot::Paged(p) = &mut self.map else {
            return Ok(());
        };
        p.maintain(&mut self.s, now)?;
        if !p.wants_checkpoint(&self.s) {
            return Ok(());
        }
        if stepped {
            // A real-time pacing: the checkpoint goes in steps beside the writes.
            if self.steps.is_none() {
                self.begin_checkpoint();
            }
            return Ok(());
        }
        match self.write_checkpoint(now) {
            Ok(()) | Err(FtlError::NoSpace) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Where logical page `lpn` lives (`None` if unmapped, trimmed or lost). With a
    /// demand-paged map this is an inspection (no flash read charged: see `PagedMap`).
    pub fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        let p = self.map.audit(lpn)?;
        (p != INVALID && p != LOST).then(|| self.s.phys_addr(p))
    }

    /// The configuration.
    pub fn config(&self) -> &PageFtlConfig {
        &self.cfg
    }

    /// Free blocks on each die.
    pub fn free_blocks(&self) -> Vec<usize> {
        self.s.dies.iter().map(|d| d.free.len()).collect()
    }

    /// The checkpoint region's current blocks (the anchor's two first, then the rotating
    /// ones in use order): where its rotation has taken it, not the configured list.
    pub fn region_blocks(&self) -> Vec<u32> {
        self.region.all_blocks().collect()
    }

    /// Physical pages available to data (good blocks × pages per block).
    pub fn physical_pages(&self) -> u64 {
        self.s.data_blocks() * self.s.ppb() as u64
    }

    /// Runs one step of `die`'s GC job (or, with none, of its first background job): one
    /// valid-page copy, or the final erase. Returns `Ok(true)` when that finished the job
    /// (or there was no job), `Ok(false)` if the job continues.
    pub fn gc_step(&mut self, now: Nanos, die: usize) -> Result<bool, FtlError> {
        gc_step(self, now, die)
    }

    // ----- map ---------------------------------------------------------------------------

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

    /// Adds trim record `t` to the pending ones, merged into the last one when the two
    /// ranges touch or overlap and their sequence numbers are consecutive (no write, copy or
    /// pad carries a number between the two trims, so the earlier number speaks for both:
    /// every version older than either is older than it).
    fn note_trim(&mut self, t: trimlog::TrimRange) {
        // Never across the point of a checkpoint being written in steps (the merged record
        // would be older than that snapshot while holding a trim newer than it).
        let point = self.steps_point().unwrap_or(0);
        if let Some(last) = self.pending_trims.last_mut() {
            let adjacent = t.first as u64 <= last.end() && last.first as u64 <= t.end();
            if adjacent && last.seq + 1 == t.seq && (last.seq >= point || t.seq < point) {
                let lo = last.first.min(t.first);
                let hi = last.end().max(t.end());
                last.first = lo;
                last.count = (hi - lo as u64) as u32;
                return;
            }
        }
        self.pending_trims.push(t);
    }

    /// Marks physical page `phys` as no longer holding valid data, superseded by the write
    /// (or trim) with sequence number `by`.
    fn invalidate(&mut self, phys: u32, by: u64) {
        let b = self.s.block_of(phys);
        self.p2l[phys as usize] = INVALID;
        self.s.drop_valid(b, by);
    }

    #[inline]
    fn map(&mut self, now: Nanos, lpn: u64, phys: u32, seq: u64) -> Result<(), FtlError> {
        let old = self.map.replace(&mut self.s, now, lpn, phys)?;
        if old != INVALID && old != LOST {
            self.invalidate(old, seq);
        }
        self.p2l[phys as usize] = lpn as u32;
        let b = self.s.block_of(phys);
        self.s.add_valid(b);
        Ok(())
    }

    /// Programs host data for `lpn` on `die`'s host frontier. `Ok(None)` means the program
    /// failed and the block was retired (or closed): the caller retries (after making space
    /// if it can).
    fn program_host(
        &mut self,
        now: Nanos,
        die: usize,
        data: &[u8],
        lpn: u64,
        class: DataClass,
    ) -> Result<Option<(u32, u64)>, FtlError> {
        let s = &mut self.s;
        let stream = match s.placement.host_stream(class) {
            Stream::Host => HOST,
            Stream::Cold => COLD,
        };
        let phys = s.allocate_for(now, die, stream, WriteKind::Host(class))?;
        let seq = s.next_seq();
        let rec = OobRecord::new(lpn, seq, PageKind::User(class));
        let r = s.program_page(now, phys, Payload::Data(data), rec, Cause::Host, None)?;
        if r.is_none() {
            return Ok(None);
        }
        let b = s.block_of(phys);
        s.last_write[b as usize] = now;
        s.note_program(die, phys, seq);
        Ok(Some((phys, seq)))
    }

    fn write_inner(
        &mut self,
        now: Nanos,
        lpn: u64,
        data: &[u8],
        class: DataClass,
    ) -> Result<(), FtlError> {
        let ndies = self.s.dies.len();
        // A real-time scheme keeps each logical page on one die (its bound is per die and
        // counts the die's share of the logical pages).
        let (first, tries) = if self.s.real_time {
            ((lpn % ndies as u64) as usize, 1)
        } else {
            (self.s.placement.host_die(ndies, lpn, class) % ndies, ndies)
        };
        for k in 0..tries {
            let die = (first + k) % ndies;
            // Each failed program retires a block of the die.
            let mut cap = Cap::new(self.s.die_blocks_cap(), "a host write retried every block");
            loop {
                cap.tick()?;
                // Space first (again after a failed program retired a block).
                paced(self, now, die, false)?;
                match self.program_host(now, die, data, lpn, class) {
                    Ok(Some((phys, seq))) => {
                        self.map(now, lpn, phys, seq)?;
                        self.set_critical(lpn, class.critical);
                        if self.cfg.replicas > 0 {
                            self.drop_replicas(lpn, seq);
                            if class.critical {
                                self.s.close_if_full(phys);
                                self.write_replicas(now, die, lpn, data, class, seq)?;
                            }
                        }
                        self.s.close_if_full(phys);
                        paced(self, now, die, true)?;
                        run_pending(self, now, die)?;
                        self.checkpoint_steps_after_write(now, die)?;
                        if !self.s.real_time && !self.s.dies[die].refresh.is_empty() {
                            // Rewrites wait for idle time, but at most one per host write
                            // also runs here, so they cannot starve under a busy host.
                            // (Not under a real-time pacing: the write's bound has no
                            // room for one; its rewrites run in idle time only.)
                            run_refresh(self, now, die, 1)?;
                        }
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
    crate::substrate::substrate_ftl_methods!();

    fn logical_pages(&self) -> u64 {
        self.logical
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
        let lpn = self.check_lpn(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_writes += 1;
        self.map_upkeep(now)?;
        self.write_inner(now, lpn, data, hint)
    }

    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError> {
        self.s.powered()?;
        let l = self.check_lpn(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_reads += 1;
        self.map_upkeep(now)?;
        let phys = self.map.get(&mut self.s, now, l)?;
        if phys == INVALID {
            self.s.counters_mut().unmapped_reads += 1;
            data.fill(0);
            return Ok(());
        }
        if phys == LOST {
            return Err(FtlError::Unreadable(lpn));
        }
        // A read that finds nothing happened all the same: `sense` charges it.
        match self.s.sense(now, phys, Sense::Page(data), Cause::Host)?.0 {
            Sensed::Data(info) => {
                self.s
                    .read_feedback(now, phys, info.corrected, false, Some(&info));
                if self.cfg.replica_reads == ReplicaReads::Always {
                    self.read_every_replica(now, l, data.len())?;
                }
                Ok(())
            }
            Sensed::Erased | Sensed::Failed => {
                self.s.read_feedback(now, phys, 0, true, None);
                if self.read_replicas(now, l, data)? {
                    return Ok(());
                }
                Err(FtlError::Unreadable(lpn))
            }
        }
    }

    fn trim(&mut self, now: Nanos, lpn: Lpn) -> Result<(), FtlError> {
        self.s.powered()?;
        self.trim_range(now, lpn, 1)
    }

    fn trim_range(&mut self, now: Nanos, first: Lpn, count: u64) -> Result<(), FtlError> {
        self.s.powered()?;
        let end = crate::check_range(self.logical, first, count)?;
        if count == 0 {
            return Ok(());
        }
        self.s.counters_mut().trims += count;
        self.map_upkeep(now)?;
        // The map work is per page (in RAM for a resident map); the record is one per
        // range: the span from the first to the last page that was mapped, under one
        // sequence number. Pages already unmapped need no record (never written, or
        // trimmed already and logged or pending).
        let mut seq = None;
        let mut span: Option<(u64, u64)> = None;
        for l in first.get()..end {
            let old = self.map.get(&mut self.s, now, l)?;
            if old == INVALID {
                continue;
            }
            let q = *seq.get_or_insert_with(|| self.s.next_seq());
            if old != LOST {
                self.invalidate(old, q);
            }
            self.drop_replicas(l, q);
            self.map.set(&mut self.s, now, l, INVALID)?;
            self.s.counters_mut().trimmed_pages += 1;
            span = Some((span.map_or(l, |s| s.0), l + 1));
        }
        let (Some(q), Some((lo, hi))) = (seq, span) else {
            return Ok(());
        };
        self.note_trim(trimlog::TrimRange {
            first: lo as u32,
            count: (hi - lo) as u32,
            seq: q,
        });
        // Trims wait in RAM for the next flush, at most a log page of them: the trim that
        // fills one writes it (its cost on that trim: one log unit), so RAM stays bounded.
        // Before an erase they are written first — under a real-time pacing as a partial
        // step of their own, the erase in the next (`substrate::gc::erase_dirty`). (They
        // were once logged at once under a real-time pacing: one log page per discard
        // filled the region's log, and each full log cost a whole-map checkpoint —
        // PostMark on ext4 with discard: 123 checkpoints and 220 MB of metadata for 35,598
        // host pages.)
        if self.pending_trims.len() >= self.region.payload(&self.s) / trimlog::TRIM_RECORD {
            self.persist_trims(now)?;
        }
        Ok(())
    }

    fn flush(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.s.powered()?;
        // Every write is programmed before it returns; what remains is to seal exposed MLC
        // lower pages, persist trims, and bound the roll-forward work.
        self.s.counters_mut().flushes += 1;
        if self.s.real_time {
            finish_jobs(self, now)?;
        }
        self.s.note_flush(self.cfg.flush_buffer);
        let mut begin = false;
        if self.checkpoint_due() {
            if self.steps_enabled() && !self.young_room_short() {
                // Due by the flush rule while every die still has room for its steps: the
                // checkpoint only bounds recovery (what the flush makes durable already
                // is, by roll-forward), so it goes in steps beside the next writes (or
                // in idle time) rather than inside the flush.
                begin = self.steps.is_none();
            } else {
                if self.steps.is_some() {
                    // The one being written in steps is the cheaper way to the next.
                    self.finish_checkpoint(now)?;
                }
                if self.checkpoint_due() {
                    return self.write_checkpoint(now);
                }
            }
        }
        if self.steps_enabled() {
            // Checkpoints in steps never swap a worn region block: a flush does, ahead of
            // the generation that would open it (`Region::rotate_ahead`).
            self.region.rotate_ahead(&mut self.s, now)?;
        }
        self.s.seal_all(now)?;
        self.persist_trims(now)?;
        if begin {
            self.begin_checkpoint();
        }
        crate::debug_verify("flush", || self.verify());
        Ok(())
    }

    fn shutdown(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.s.powered()?;
        self.s.counters_mut().flushes += 1;
        if self.s.real_time {
            finish_jobs(self, now)?;
        }
        let stash = self.s.ecc.stash();
        self.write_checkpoint_with(now, stash)
    }

    fn tick(&mut self, now: Nanos) -> Result<bool, FtlError> {
        self.s.powered()?;
        let mut worked = false;
        if self.steps.is_some() {
            // Idle time finishes a checkpoint being written in steps.
            finish_jobs(self, now)?;
            self.finish_checkpoint(now)?;
            worked = true;
        }
        if self.s.young_budget > 0 && (0..self.s.dies.len()).any(|d| self.s.young_left(d) <= 1) {
            // A real-time pacing with roll-forward recovery: the checkpoint that makes the
            // young blocks collectable again, in idle time before a write has to write it
            // (running jobs first, so sealing takes no page a job counted on).
            finish_jobs(self, now)?;
            self.write_checkpoint(now)?;
            worked = true;
        }
        if self.steps_enabled() && self.region.rotate_ahead(&mut self.s, now)? {
            // As at a flush: the swap a stepped checkpoint does not make.
            worked = true;
        }
        if self.steps.is_none() && self.region.scrub_due(&mut self.s, now)? {
            // The metadata's own scrub (see `substrate::region`, "Idle-time scrub"): the
            // committed generation's oldest page needed half its code, so a new generation
            // is written. A region with no room left for one (blocks gone bad) is left as
            // it is; the next probe tries again.
            finish_jobs(self, now)?;
            match self.write_checkpoint(now) {
                Ok(()) => worked = true,
                Err(FtlError::NoSpace) => {}
                Err(e) => return Err(e),
            }
        }
        if self.s.fixed_t.is_none() {
            // FLARES's idle-time scrub: pages past their retention queue for a rewrite.
            let mut due = Vec::new();
            self.s.scrub(now, &mut due);
            worked |= !due.is_empty();
            for phys in due {
                self.s.queue_rewrite(phys);
            }
        }
        for die in 0..self.s.dies.len() {
            if !self.s.dies[die].background.is_empty() {
                run_pending(self, now, die)?;
                worked = true;
            }
            if !self.s.dies[die].refresh.is_empty() {
                worked |= run_refresh(self, now, die, TICK_REFRESH)? > 0;
            }
            if !self.s.dies[die].dirty.is_empty() {
                let before = self.s.dies[die].dirty.len();
                erase_dirty(self, now, die, false)?;
                worked |= self.s.dies[die].dirty.len() < before;
            }
        }
        Ok(worked)
    }

    fn prefetch(&self, lpn: u64) {
        self.map.prefetch(lpn);
    }

    fn feedback_wanted(&self, lpn: u64, class: DataClass) -> bool {
        if !self.s.judge_slots || lpn >= self.logical {
            return false;
        }
        let s = &self.s;
        let ndies = s.dies.len();
        let die = s.placement.peek_die(ndies, lpn, class) % ndies;
        let stream = match s.placement.host_stream(class) {
            Stream::Host => HOST,
            Stream::Cold => COLD,
        };
        // The slot the write would be offered first: its frontier's next page, or the
        // first page of the block that opens next (page 0, or the first LSB page of an
        // SLC-mode host block).
        let slot = match s.dies[die].frontier[stream] {
            Some(f) if f.next < s.ppb() => s.slot(f.block * s.ppb() + f.next),
            _ => {
                let free = s.dies[die].free.len().saturating_sub(1);
                let slc = s.window == 0 || s.opens_slc(die, stream, free);
                crate::policy::Slot {
                    die: die as u32,
                    block: u32::MAX,
                    page: 0,
                    bit: s.bits[0],
                    slc,
                }
            }
        };
        s.placement.slot(&slot, WriteKind::Host(class)) == crate::policy::SlotChoice::Pad
    }

    fn prefetch_mapped(&self, lpn: u64) {
        if let Some(old) = self.map.peek(lpn) {
            if old < LOST {
                let b = self.s.block_of(old) as usize;
                prefetch(&self.p2l, old as usize);
                prefetch(&self.s.valid, b);
                prefetch(&self.s.superseded, b);
                prefetch(&self.s.next, b);
                prefetch(&self.s.prev, b);
            }
        }
    }

    fn prefetch_data(&self, lpn: u64) {
        if let Some(p) = self.map.peek(lpn) {
            if p < LOST {
                let (b, page) = self.s.split(p);
                // (A digest-mode store holds no data area: the data hint is a no-op there.)
                self.s
                    .controller()
                    .chip()
                    .prefetch_flat(b as usize, page, true);
                if self.s.fixed_t.is_none() {
                    // The read's feedback will touch the page's cached profile.
                    self.s.ecc.prefetch(p);
                }
            }
        }
    }

    fn over_provisioning(&self) -> Option<f64> {
        Some(self.cfg.over_provisioning)
    }

    fn latency_bound(&self) -> Option<crate::LatencyBound> {
        self.rt_latency
    }

    fn policy_ram_bytes(&self) -> u64 {
        self.s.ecc.ram_bytes()
    }

    fn controller_pprof(&self) -> bool {
        self.s.controller().pprof_enabled()
    }
}
