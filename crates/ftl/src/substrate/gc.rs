//! The GC job machine, shared by every mapping kernel.
//!
//! A job reclaims one victim block, one valid-page copy or the final erase per
//! [`gc_step`], so a scheduler can run GC all at once (foreground, today's pacing), in
//! bounded slices between requests or in idle time. Background jobs (relocation of
//! grown-bad blocks at the front, static wear levelling at the back) run only while the die
//! has free blocks to spare. A collected victim waits in state `Dirty` until the pages that
//! superseded or copied its data are sealed (MLC), then is erased.
//!
//! What depends on the mapping is asked of the [`Kernel`]: which logical page a physical
//! page holds, where a copy went, what to persist before an erase, and a checkpoint when
//! only blocks written since the last one are left to collect.

use super::{BState, Job, Payload, Pending, Sense, Sensed, Substrate, COLD, NIL};
use crate::bounded::Cap;
use crate::policy::{Alarm, Ascending, CopyCursor, ReadFeedback, Slot, VictimPage, WriteKind};
use crate::victim::{Candidate, SelectContext};
use crate::{Cause, FtlError};
use ::alloc::boxed::Box;
use controller::{OobRecord, PageKind};
use nand::{ErrorModel, Nanos, Storage};

/// How many pages ahead of a GC copy its map entry is prefetched.
const PREFETCH_AHEAD: u32 = 4;

/// What the GC machine asks of a mapping kernel.
pub(crate) trait Kernel {
    /// Storage of the chip.
    type S: Storage;
    /// Error model of the controller.
    type M: ErrorModel;
    /// The substrate.
    fn sub(&self) -> &Substrate<Self::S, Self::M>;
    /// The substrate, mutably.
    fn sub_mut(&mut self) -> &mut Substrate<Self::S, Self::M>;
    /// The logical page whose valid copy is flat page `phys`, if any.
    fn owner(&self, phys: u32) -> Option<u64>;
    /// Whether logical page `lpn` is critical (its last write's class, kept in RAM: what an
    /// asymmetric copy order sorts by without reading the page).
    fn critical(&self, lpn: u64) -> bool;
    /// A hint that `phys` will be copied soon: start loading its map entry. Returns whether
    /// it holds a valid page (then the substrate prefetches the chip's state of it too).
    fn prefetch_owner(&self, phys: u32) -> bool;
    /// `lpn`'s data moved from `src` to `dst` (a GC copy): the kernel updates its map,
    /// un-counts the source (`Substrate::drop_valid(_, 0)`: a copy supersedes nothing) and
    /// counts the copy (`Substrate::add_valid`).
    fn moved(&mut self, now: Nanos, lpn: u64, src: u32, dst: u32) -> Result<(), FtlError>;
    /// Other pages holding the same data as `src`, `lpn`'s page GC could not read
    /// (Meta-Cure's replicas of a primary); empty for most kernels.
    fn alternates(&self, _lpn: u64, _src: u32) -> ::alloc::vec::Vec<u32> {
        ::alloc::vec::Vec::new()
    }
    /// `lpn`'s only copy at `src` is unreadable: remember it as lost (the substrate has
    /// already dropped it from its block's valid count).
    fn lost(&mut self, now: Nanos, lpn: u64, src: u32) -> Result<(), FtlError>;
    /// Called before any erase: persist what an erase would otherwise make unrecoverable
    /// (trims whose only witness is the stale copy the erase destroys).
    fn before_erase(&mut self, now: Nanos) -> Result<(), FtlError>;
    /// The sequence number of the oldest trim not in the log yet (`None`: none pending, or
    /// a kernel that logs no trims). An erase of a block whose pages were superseded at or
    /// after it needs [`before_erase`](Kernel::before_erase) first.
    fn oldest_pending_trim(&self) -> Option<u64> {
        None
    }
    /// Writes a checkpoint (blocks opened since the last one become collectable).
    fn checkpoint(&mut self, now: Nanos) -> Result<(), FtlError>;
}

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    /// Picks a victim on `die` with the configured policy (never a block written since the
    /// last checkpoint, never a block full of valid pages under greedy).
    pub fn select_victim(&self, die: usize, now: Nanos) -> Option<u32> {
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

    /// The slot a GC copy on `die` is offered first: the cold frontier's next page, `None`
    /// when a new block opens for it.
    pub fn cold_slot(&self, die: usize) -> Option<Slot> {
        let f = self.dies[die].frontier[self.copy_stream]?;
        (f.next < self.ppb).then(|| self.slot(f.block * self.ppb + f.next))
    }

    /// Tells the ECC-strength policy how a read of flat page `phys` decoded, and acts on
    /// its alarm: a refresh queues the block for background relocation (if it is full and
    /// not written since the last checkpoint) and is counted.
    #[inline]
    pub fn read_feedback(
        &mut self,
        now: Nanos,
        phys: u32,
        corrected: u32,
        failed: bool,
        info: Option<&controller::ReadInfo>,
    ) {
        if self.fixed_t.is_some() {
            return;
        }
        let (block, page) = self.split(phys);
        let fb = ReadFeedback {
            block,
            page,
            phys,
            corrected,
            failed,
            t: info.map_or(0, |i| i.record.t as u32),
            erase_count: self.erase[block as usize],
            pprof: info.and_then(|i| i.pprof),
            now,
        };
        match self.ecc.on_read(&fb, &mut self.log.counters.ecc_policy) {
            Some(Alarm::Refresh { block }) => {
                self.log.counters.refresh_alarms += 1;
                let i = block as usize;
                if self.real_time && i < self.state.len() && self.state[i] == BState::Full {
                    // A shared destination has no block for a relocation job: the block's
                    // pages are rewritten one by one instead, as writes are.
                    for p in 0..self.ppb {
                        self.queue_rewrite(block * self.ppb + p);
                    }
                } else if i < self.state.len() && self.state[i] == BState::Full && !self.young[i] {
                    let die = self.die_of(block) as usize;
                    let job = self.claim_victim(block, Cause::Relocate);
                    self.dies[die].background.push_back(job);
                }
            }
            Some(Alarm::Rewrite { page }) => {
                self.log.counters.refresh_alarms += 1;
                self.queue_rewrite(page);
            }
            None => {}
        }
    }

    /// Queues flat page `phys` for a background rewrite on its die (once).
    pub fn queue_rewrite(&mut self, phys: u32) {
        let die = self.die_of(self.block_of(phys)) as usize;
        if self.rewrite_queued.is_empty() {
            self.rewrite_queued =
                alloc::vec![0; (self.state.len() * self.ppb as usize).div_ceil(64)];
        }
        let (w, bit) = (phys as usize / 64, 1u64 << (phys % 64));
        let q = &mut self.dies[die].refresh;
        if q.len() < REFRESH_QUEUE && self.rewrite_queued[w] & bit == 0 {
            self.rewrite_queued[w] |= bit;
            q.push_back(phys);
        }
    }

    /// Takes flat page `phys` off the set of queued rewrites.
    pub fn unqueue_rewrite(&mut self, phys: u32) {
        if let Some(w) = self.rewrite_queued.get_mut(phys as usize / 64) {
            *w &= !(1u64 << (phys % 64));
        }
    }

    /// Takes full block `victim` out of the index for a job.
    pub fn claim_victim(&mut self, victim: u32, cause: Cause) -> Job {
        if cause == Cause::Gc {
            let c = &mut self.log.counters;
            c.max_victim_valid = c.max_victim_valid.max(self.valid[victim as usize] as u64);
        }
        self.index_remove(victim);
        self.set_state(victim, BState::Collecting);
        Job {
            victim,
            next: 0,
            next_critical: 0,
            cause,
            erase: true,
            pads: true,
        }
    }

    /// The frontier holding an exposed page that a pending victim's erase must wait for.
    fn blocking_frontier(&self, die: usize, p: &Pending) -> Option<(usize, usize)> {
        if self.window == 0 {
            return None;
        }
        (0..self.dies.len())
            .flat_map(|d| [(d, super::HOST), (d, COLD)])
            .find(|&(d, s)| {
                let e = self.exposed_min(d, s);
                e <= p.superseded || (d == die && e <= p.copied)
            })
    }

    /// Static wear levelling after an erase on `die`: every `check_every` erases, migrate
    /// the least worn full block if the die's spread exceeds `spread`.
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
}

/// Runs one step of `die`'s GC job (or, with none, of its first background job): one
/// valid-page copy, or the final erase. Returns `Ok(true)` when that finished the job (or
/// there was no job), `Ok(false)` if the job continues.
pub(crate) fn gc_step<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<bool, FtlError> {
    let s = k.sub();
    let from_gc = s.dies[die].gc.is_some();
    let job = if from_gc {
        s.dies[die].gc
    } else {
        s.dies[die].background.front().copied()
    };
    let Some(mut job) = job else {
        return Ok(true);
    };
    let ppb = s.ppb;
    let base = job.victim * ppb;
    // The cursors before this step: a copy that fails goes back to them (below).
    let rewind = (job.next, job.next_critical);
    if s.ascending {
        while job.next < ppb && k.owner(base + job.next).is_none() {
            job.next += 1;
        }
    }
    let chosen = if s.ascending {
        job.next
    } else {
        let dest = s.cold_slot(die);
        let asymmetric = s.asymmetric;
        let mut order = core::mem::replace(&mut k.sub_mut().copy_order, Box::new(Ascending));
        let mut cursor = CopyCursor {
            next: job.next,
            next_critical: job.next_critical,
        };
        let chosen = order
            .next(&mut cursor, ppb, dest, &mut |p| match k.owner(base + p) {
                None => VictimPage::Invalid,
                Some(lpn) => VictimPage::Valid {
                    critical: k.critical(lpn),
                },
            })
            .unwrap_or(ppb);
        let s = k.sub_mut();
        s.copy_order = order;
        if asymmetric && chosen < ppb {
            // Alg. 2 searches the shared-pages table once per valid page it places.
            s.log.counters.pairing_lookups += 1;
        }
        (job.next, job.next_critical) = (cursor.next, cursor.next_critical);
        if chosen == ppb {
            // Both cursors exhausted: the job is done.
            job.next = ppb;
        }
        chosen
    };
    if chosen < ppb {
        let src = base + chosen;
        // The copy updates the map entry of the page's logical page, a random place in a
        // large table: start loading the entry of a page a few copies ahead. Likewise the
        // chip's state and stored spare area of the page it will read.
        if chosen + PREFETCH_AHEAD < ppb && k.prefetch_owner(src + PREFETCH_AHEAD) {
            let s = k.sub();
            s.ctl
                .chip()
                .prefetch_page(s.phys_addr(src + PREFETCH_AHEAD));
        }
        if k.sub().ascending {
            job.next += 1;
        }
        // Save progress first: the copy may retire blocks and queue more jobs.
        let s = k.sub_mut();
        if from_gc {
            s.dies[die].gc = Some(job);
        } else if let Some(j) = s.dies[die].background.front_mut() {
            *j = job;
        }
        let lpn = k.owner(src).expect("the scan stopped at a valid page");
        if let Err(e) = relocate(k, now, die, src, lpn, job.cause) {
            // Not copied (no page for it — NoSpace — or a hard error): the job must visit
            // the page again, or finishing it would erase the page's only copy.
            if k.owner(src) == Some(lpn) {
                let s = k.sub_mut();
                let slot = if from_gc {
                    s.dies[die].gc.as_mut()
                } else {
                    s.dies[die].background.front_mut()
                };
                if let Some(j) = slot.filter(|j| j.victim == job.victim) {
                    (j.next, j.next_critical) = rewind;
                }
            }
            return Err(e);
        }
        return Ok(false);
    }
    let s = k.sub_mut();
    if from_gc {
        s.dies[die].gc = None;
    } else {
        s.dies[die].background.pop_front();
    }
    finish_job(k, now, die, job)?;
    Ok(true)
}

fn finish_job<K: Kernel>(k: &mut K, now: Nanos, die: usize, job: Job) -> Result<(), FtlError> {
    let s = k.sub_mut();
    let v = job.victim;
    if !job.erase {
        s.set_state(v, BState::Bad);
        return Ok(());
    }
    match job.cause {
        Cause::WearLevel => s.log.counters.wl_migrations += 1,
        _ => s.log.counters.gc_victims += 1,
    }
    s.set_state(v, BState::Dirty);
    let pending = Pending {
        block: v,
        cause: job.cause,
        superseded: s.superseded[v as usize],
        copied: s.seq.saturating_sub(1),
        trims_logged: false,
    };
    s.dies[die].dirty.push_back(pending);
    erase_dirty(k, now, die, false)
}

/// Erases the victims waiting on `die` whose replacements are sealed; with `force`, seals
/// what they wait for first.
pub(crate) fn erase_dirty<K: Kernel>(
    k: &mut K,
    now: Nanos,
    die: usize,
    force: bool,
) -> Result<(), FtlError> {
    // Each round erases the front victim, or seals one frontier (of any die, either
    // stream) that blocks it: at most every frontier once per victim.
    let s = k.sub();
    let per_victim = 2 * s.dies.len() as u64 + 1;
    let rounds = s.dies[die].dirty.len() as u64 * per_victim + 1;
    let mut cap = Cap::new(rounds, "erasing victims sealed past every frontier");
    while let Some(p) = k.sub().dies[die].dirty.front().copied() {
        cap.tick()?;
        let blocked = k.sub().blocking_frontier(die, &p);
        #[cfg(feature = "sabotage")]
        let blocked =
            blocked.filter(|_| k.sub().cfg.sabotage != crate::sabotage::Sabotage::EraseVictimEarly);
        if let Some((d, s)) = blocked {
            if !force {
                return Ok(());
            }
            let upto = if d == die {
                p.superseded.max(p.copied)
            } else {
                p.superseded
            };
            k.sub_mut().seal(now, d, s, upto)?;
            continue;
        }
        // A trim the log does not hold yet could resurrect a stale copy this erase would
        // otherwise be the only witness against (a page it superseded here, the older
        // version elsewhere): such trims are persisted first. Only trims taken before the
        // block's last page was superseded can concern it (none touches a victim after
        // its collection), so most erases need no log write.
        let needs_log = k.oldest_pending_trim().is_some_and(|q| q <= p.superseded);
        #[cfg(feature = "sabotage")]
        let needs_log =
            needs_log && k.sub().cfg.sabotage != crate::sabotage::Sabotage::EraseBeforeTrimLog;
        if needs_log && k.sub().real_time && !force {
            // A real-time pacing: a partial step takes one erase *or* one page operation,
            // so the log write is this step, and the erase the next one (the victim waits,
            // as it does for sealing). Trims taken since are newer than the block's pages,
            // so a second wait cannot happen; were it to, the log goes with the erase and
            // the overrun is counted.
            let p = k.sub_mut().dies[die]
                .dirty
                .front_mut()
                .expect("front exists");
            if !p.trims_logged {
                p.trims_logged = true;
                return k.before_erase(now);
            }
            k.sub_mut().log.counters.rt_overruns += 1;
        }
        k.sub_mut().dies[die].dirty.pop_front();
        if needs_log {
            k.before_erase(now)?;
        }
        let s = k.sub_mut();
        if s.erase_block(now, p.block, p.cause)? {
            s.push_free(p.block);
            s.after_erase(die);
        }
    }
    Ok(())
}

/// Reads flat page `phys` for a copy, retrying a read that does not decode up to
/// `read_retries` times (every read charged). `None`: unreadable (or erased).
fn read_for_copy<S: Storage, M: ErrorModel>(
    s: &mut Substrate<S, M>,
    now: Nanos,
    phys: u32,
    cause: Cause,
) -> Result<Option<(u32, OobRecord)>, FtlError> {
    let mut retries = s.cfg.read_retries;
    loop {
        match s.sense(now, phys, Sense::Relocate, cause)? {
            (Sensed::Data(info), op) => {
                s.read_feedback(now, phys, info.corrected, false, Some(&info));
                return Ok(Some((op, info.record)));
            }
            (Sensed::Erased, _) => {
                s.read_feedback(now, phys, 0, true, None);
                return Ok(None);
            }
            (Sensed::Failed, _) => {
                s.read_feedback(now, phys, 0, true, None);
                if retries == 0 {
                    return Ok(None);
                }
                // Sense the page again (read-retry).
                retries -= 1;
                s.log.counters.read_retries += 1;
            }
        }
    }
}

/// Copies the valid page `src` to the cold frontier of `die`. The controller moves the
/// corrected data with its parity (no re-encoding); only the record is rewritten, keeping
/// the page's class.
pub(super) fn relocate<K: Kernel>(
    k: &mut K,
    now: Nanos,
    die: usize,
    src: u32,
    lpn: u64,
    cause: Cause,
) -> Result<(), FtlError> {
    let mut got = read_for_copy(k.sub_mut(), now, src, cause)?;
    if got.is_none() {
        // Another copy of the same data (a Meta-Cure replica) stands in for it: its data go
        // to the copy, which becomes the page's primary.
        for alt in k.alternates(lpn, src) {
            got = read_for_copy(k.sub_mut(), now, alt, cause)?;
            if let Some((_, rec)) = &mut got {
                if let PageKind::Replica(c) = rec.kind {
                    rec.kind = PageKind::GcCopy(c);
                    k.sub_mut().log.counters.replica_rescues += 1;
                    break;
                }
                got = None;
            }
        }
    }
    let s = k.sub_mut();
    let b = s.block_of(src);
    let Some((read_op, src_rec)) = got else {
        // The only copy is gone: remember it, so reads fail rather than return stale or
        // zero data.
        let by = s.seq;
        s.drop_valid(b, by);
        s.log.counters.lost_pages += 1;
        return k.lost(now, lpn, src);
    };
    // A replica stays a replica (its record's packed page and version kept).
    let (class, replica) = match src_rec.kind {
        PageKind::Replica(c) => (c, Some(src_rec.lpn)),
        k => (k.data_class().unwrap_or_default(), None),
    };
    let mut cap = Cap::new(
        s.die_blocks_cap(),
        "a GC copy retried past its die's blocks",
    );
    let dst = loop {
        cap.tick()?;
        let phys = s.allocate_for(now, die, s.copy_stream, WriteKind::Copy(class))?;
        let seq = s.next_seq();
        let rec = match replica {
            Some(packed) => OobRecord::new(packed, seq, PageKind::Replica(class)),
            None => OobRecord::new(lpn, seq, PageKind::GcCopy(class)),
        };
        if s.program_page(now, phys, Payload::Relocated, rec, cause, Some(read_op))?
            .is_some()
        {
            let pb = s.block_of(phys);
            s.last_write[pb as usize] = now;
            s.note_program(die, phys, seq);
            break phys;
        }
    };
    s.log.counters.valid_copies += 1;
    // A copy does not count as superseding its source: the victim's wait for its copies is
    // tracked per job (`Pending::copied`), on this die only.
    k.moved(now, lpn, src, dst)?;
    k.sub_mut().close_if_full(dst);
    Ok(())
}

/// Starts a GC job on `die` if none runs: the policy's victim (after a checkpoint if only
/// blocks written since the last one are left). `Ok(false)`: nothing to collect (pending
/// erases were forced instead if there were any: the caller looks at the space again).
pub(super) fn start_job<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<Started, FtlError> {
    if k.sub().dies[die].gc.is_some() {
        return Ok(Started::Job);
    }
    let mut victim = k.sub().select_victim(die, now);
    if victim.is_none() && k.sub().young.iter().any(|&y| y) {
        // Only blocks written since the last checkpoint are left: checkpoint, which makes
        // them collectable. A real-time scheme's bound has no room for it (it counts on
        // the host's flushes writing checkpoints): an overrun.
        if k.sub().real_time {
            k.sub_mut().log.counters.rt_overruns += 1;
        }
        k.checkpoint(now)?;
        victim = k.sub().select_victim(die, now);
    }
    match victim {
        Some(v) => {
            let pads = pads_gain(k, v);
            let s = k.sub_mut();
            let mut job = s.claim_victim(v, Cause::Gc);
            job.pads = pads;
            s.dies[die].gc = Some(job);
            Ok(Started::Job)
        }
        None if !k.sub().dies[die].dirty.is_empty() => {
            erase_dirty(k, now, die, true)?;
            Ok(Started::Erased)
        }
        None => Ok(Started::Nothing),
    }
}

/// Whether collecting `victim` with AP's pads still frees space: its valid pages plus the
/// pads their copies would need stay below a block. The copy order puts critical pages in
/// reliable slots and non-critical ones in the others; a reliable slot comes once every
/// `ppb / reliable` slots, so `c` critical copies need about `c · unreliable / reliable`
/// unreliable slots, which the victim's `n` non-critical pages fill before pads do. One
/// pass over the victim's pages in RAM (its map entries and classes), once per victim; no
/// flash. Always true for a placement that does not pad, and under a real-time pacing
/// (whose pads are bounded by WAO-GC's slack instead, and never ask `Job::pads`).
fn pads_gain<K: Kernel>(k: &K, victim: u32) -> bool {
    let s = k.sub();
    if !s.placement.protects_critical() || s.real_time {
        return true;
    }
    let reliable = s.bits.iter().filter(|&&b| b == nand::BitKind::Msb).count() as u64;
    let ppb = s.ppb as u64;
    if reliable == 0 || reliable == ppb {
        return true;
    }
    let base = victim * s.ppb;
    let (mut c, mut n) = (0u64, 0u64);
    for p in 0..s.ppb {
        if let Some(lpn) = k.owner(base + p) {
            if k.critical(lpn) {
                c += 1;
            } else {
                n += 1;
            }
        }
    }
    let pads = (c * (ppb - reliable)).div_ceil(reliable).saturating_sub(n);
    c + n + pads < ppb
}

/// What [`start_job`] did.
#[derive(PartialEq, Eq)]
pub(super) enum Started {
    Job,
    Erased,
    Nothing,
}

/// Most pages waiting for a rewrite per die; alarms beyond it are dropped (the page
/// alarms again at its next read or scrub visit). Bounds the queue's RAM.
pub(crate) const REFRESH_QUEUE: usize = 4096;
