//! Allocation: write frontiers per (die, stream), MLC sealing, closing and retiring
//! blocks. (The program and erase path they use is `program`.)
//!
//! **Frontiers.** Each die has a host and a cold (GC copy) frontier; an exhausted frontier
//! takes the least-worn free block of its die (dynamic wear levelling). A block found free
//! by recovery ("suspect") is erased again before its first use.
//!
//! **Sealing (MLC).** Programming an upper page can destroy its word line's lower page if
//! power fails mid-program. A lower page is *exposed* while an upper partner is
//! unprogrammed; [`Substrate::seal`] programs padding pages until no page up to a given
//! sequence number is exposed.
//!
//! **Failures.** Every program goes through [`Substrate::program_page`] and every erase
//! through [`Substrate::erase_block`]: a program failure retires the block (its valid pages
//! are relocated by a background job, a checkpoint-region block is simply marked bad), an
//! erase failure marks the block bad; a block resumed after a crash whose next page turns
//! out not programmable is closed.

use super::{BState, Frontier, Job, Payload, Substrate};
use crate::bounded::Cap;
use crate::policy::{SlotChoice, WriteKind};
use crate::{Cause, FtlError};
use controller::{OobRecord, PageKind};
use core::cmp::Reverse;
use nand::{ErrorModel, NandError, Nanos, Storage};

/// The host write stream's frontier.
pub(crate) const HOST: usize = 0;
/// The GC copy stream's frontier.
pub(crate) const COLD: usize = 1;

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    /// The next page of `die`'s frontier of `stream`, opening a free block when it is
    /// exhausted. GC copies may finish in the host frontier rather than fail.
    pub fn allocate(&mut self, now: Nanos, die: usize, stream: usize) -> Result<u32, FtlError> {
        // Each round returns a page or takes a block from the free heap.
        let mut cap = Cap::new(self.die_blocks_cap(), "an allocation opened every block");
        loop {
            cap.tick()?;
            if let Some(f) = self.dies[die].frontier[stream].as_mut() {
                if f.next < self.ppb {
                    let phys = f.block * self.ppb + f.next;
                    // An SLC-mode block takes its LSB pages only: `next` stays on one (or
                    // at the end).
                    f.next = if self.slc[f.block as usize] == Some(true) {
                        self.next_lsb[f.next as usize + 1]
                    } else {
                        f.next + 1
                    };
                    return Ok(phys);
                }
                self.dies[die].frontier[stream] = None;
            }
            let Some(Reverse((_, b))) = self.dies[die].free.pop() else {
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
                if !self.erase_block(now, b, Cause::Mount)? {
                    continue;
                }
            }
            // The flush buffer: host blocks in SLC mode while flushes come every few pages
            // (and, with a shared destination, while the die has room: `opens_slc`).
            let want = self.opens_slc(die, stream, self.dies[die].free.len());
            if self.slc[b as usize] != Some(want) && self.window > 0 {
                match self.ctl.set_slc_mode(self.block_addr(b), want) {
                    Ok(()) => self.slc[b as usize] = Some(want),
                    Err(NandError::BadBlock(_)) => {
                        self.set_state(b, BState::Bad);
                        self.log.counters.retired_blocks += 1;
                        continue;
                    }
                    Err(NandError::ModeChangeNotErased(_)) => {
                        // A free block a real-time mount trusted to be erased is not (an
                        // image written outside this FTL): erased now, inside the write —
                        // past its bound, counted — and back to the heap.
                        if self.real_time {
                            self.log.counters.rt_overruns += 1;
                        }
                        if self.erase_block(now, b, Cause::Mount)? {
                            self.heap_push(b);
                        }
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            self.set_state(b, BState::Open);
            self.young[b as usize] = self.cfg.young_rule;
            self.superseded[b as usize] = 0;
            self.opened_since_cp += 1;
            self.opened_per_die[die] += 1;
            let next = if want {
                self.log.counters.slc_blocks += 1;
                self.next_lsb[0]
            } else {
                0
            };
            self.dies[die].frontier[stream] = Some(Frontier { block: b, next });
            self.dies[die].pads_left = self.pad_slack;
        }
    }

    /// Whether the next block `die` opens for `stream` is in SLC mode, with `free` blocks
    /// left on the die once it is taken: the flush buffer's host blocks while flushes
    /// come every few pages (`note_flush`).
    ///
    /// With one destination shared by writes and GC copies (WAO-GC) an SLC-mode
    /// destination holds only its LSB pages, fewer than the π the bound counts per
    /// destination: it opens only while the die keeps a free block beyond the reserve once
    /// it is taken, so GC — which starts when the die is down to its reserve, i.e. just
    /// after a destination opened with that many left — always collects into a
    /// multi-level destination, and never as the last young block roll-forward allows
    /// (the checkpoint written in steps counts on a whole block's writes there). Like
    /// the SLC cache of a real drive it shrinks to nothing as the die fills; eq. 7's
    /// greedy argument is untouched (a victim's valid pages are at most the average over
    /// the data blocks whatever their modes).
    pub fn opens_slc(&self, die: usize, stream: usize, free: usize) -> bool {
        if stream != HOST || !self.host_slc {
            return false;
        }
        if !self.real_time {
            return true;
        }
        free > crate::policy::RESERVE
            && (self.young_budget == 0
                || Self::young_left_with(
                    self.young_allowed[die],
                    self.opened_per_die[die] + 1,
                    free,
                ) > 0)
    }

    /// With a young budget (a real-time pacing with roll-forward recovery): how many more
    /// blocks `die` may open before the next checkpoint must have been written; `u32::MAX`
    /// without one.
    ///
    /// The budget protects GC: when GC starts — the die down to its reserve, just after a
    /// destination opened — the blocks opened since the last checkpoint are kept from it,
    /// and the others must still hold a victim within U(λ) (see
    /// [`settle_young`](Self::settle_young) for how many that allows). Before that the
    /// die's free blocks cover any number: a block may open while the die keeps a free
    /// block beyond the reserve once it is taken, or while the allowance has room. So the
    /// limit is the larger of the two — a die with free blocks to spare checkpoints as the
    /// page kernel does (at flushes).
    pub fn young_left(&self, die: usize) -> u32 {
        if self.young_budget == 0 {
            return u32::MAX;
        }
        Self::young_left_with(
            self.young_allowed[die],
            self.opened_per_die[die],
            self.dies[die].free.len(),
        )
    }

    /// [`young_left`](Self::young_left) for a die with `opened` blocks opened since the
    /// last checkpoint and `free` free blocks, `allowed` of them allowed.
    fn young_left_with(allowed: u32, opened: u32, free: usize) -> u32 {
        let spare = free.saturating_sub(crate::policy::RESERVE + 1) as u32;
        allowed.saturating_sub(opened).max(spare)
    }

    /// Sizes each die's young blocks from the valid pages outside them (at a checkpoint's
    /// commit, at mount, when the volume is sized).
    ///
    /// Eq. 7's greedy argument, applied to the blocks GC may choose from: when GC starts
    /// the die holds `data` good data blocks, of which the destination, the reserve and
    /// `y` young blocks are not candidates; the candidates hold the valid pages outside
    /// the young blocks, `w`, so the greediest holds at most w / (data − 1 − RESERVE − y),
    /// which is within U(λ) while y ≤ data − 1 − RESERVE − ⌈w / U(λ)⌉. And `w` does not
    /// grow until the next checkpoint: every write and copy lands in a block opened since
    /// (or a frontier, young too), so it only loses pages to overwrites and trims. The
    /// allowance taken now therefore holds until then. With every logical page valid
    /// outside the young blocks it is the configured budget (σ was checked with that
    /// many left out); with fewer, more — a die whose young blocks hold the live data
    /// needs no checkpoint to collect the rest.
    pub fn settle_young(&mut self) {
        let ndies = self.dies.len();
        self.young_allowed.resize(ndies, 0);
        self.settled_valid.resize(ndies, 0);
        for d in 0..ndies {
            let (data, settled) = self.die_settled(d);
            self.settled_valid[d] = settled;
            self.young_allowed[d] = if self.young_budget == 0 || self.young_lambda == 0 {
                self.young_budget
            } else {
                let kept =
                    1 + crate::policy::RESERVE as u64 + settled.div_ceil(self.young_lambda as u64);
                (data.saturating_sub(kept).min(u32::MAX as u64) as u32).max(self.young_budget)
            };
        }
    }

    /// `die`'s good data blocks (not bad, not the region's or the map's) and the valid
    /// pages in those of them not young.
    fn die_settled(&self, die: usize) -> (u64, u64) {
        let per = self.blocks_per_die;
        let (mut data, mut settled) = (0u64, 0u64);
        for b in die as u32 * per..(die as u32 + 1) * per {
            let i = b as usize;
            if matches!(self.state[i], BState::Bad | BState::Region | BState::Map) {
                continue;
            }
            data += 1;
            if !self.young[i] {
                settled += self.valid[i] as u64;
            }
        }
        (data, settled)
    }

    /// Checks that no die holds more valid pages outside its young blocks than when it
    /// was last settled (the premise of [`settle_young`](Self::settle_young)).
    pub(crate) fn verify_settled(&self) -> Result<(), alloc::string::String> {
        if self.young_budget == 0 || self.young_lambda == 0 {
            return Ok(());
        }
        for d in 0..self.dies.len() {
            let (_, now) = self.die_settled(d);
            if now > self.settled_valid[d] {
                return Err(alloc::format!(
                    "die {d}: {now} valid pages outside its young blocks, {} when settled",
                    self.settled_valid[d]
                ));
            }
        }
        Ok(())
    }

    /// Pages left in `die`'s frontier of `stream` (its LSB pages only, in SLC mode); 0
    /// when none is open.
    pub fn frontier_room(&self, die: usize, stream: usize) -> u32 {
        self.dies[die].frontier[stream].map_or(0, |f| {
            if self.slc[f.block as usize] == Some(true) {
                self.lsb_from[f.next.min(self.ppb) as usize]
            } else {
                self.ppb.saturating_sub(f.next)
            }
        })
    }

    /// Records the sequence number of a page just programmed in a frontier block.
    pub fn note_program(&mut self, die: usize, phys: u32, seq: u64) {
        if self.window == 0 {
            return;
        }
        let (b, page) = self.split(phys);
        for s in [HOST, COLD] {
            if self.dies[die].frontier[s].is_some_and(|f| f.block == b) {
                let i = (die * 2 + s) * self.ppb as usize + page as usize;
                self.fseq[i] = seq;
            }
        }
    }

    /// Whether `die`'s frontier of `stream` is open with a page left.
    pub fn frontier_has_room(&self, die: usize, stream: usize) -> bool {
        self.dies[die].frontier[stream].is_some_and(|f| f.next < self.ppb)
    }

    /// The lowest sequence number among the exposed lower pages of a frontier (a lower
    /// page whose upper partner is not programmed yet), or `u64::MAX`.
    pub fn exposed_min(&self, die: usize, stream: usize) -> u64 {
        let Some(f) = self.dies[die].frontier[stream] else {
            return u64::MAX;
        };
        if self.slc[f.block as usize] == Some(true) {
            // Only LSB pages are programmed: nothing is ever exposed.
            return u64::MAX;
        }
        let base = (die * 2 + stream) * self.ppb as usize;
        (f.next.saturating_sub(self.window)..f.next)
            .filter(|&q| {
                let u = self.upper[q as usize];
                u != super::NO_UPPER && u >= f.next
            })
            .map(|q| self.fseq[base + q as usize])
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Programs padding pages on a frontier until none of its exposed lower pages has a
    /// sequence number ≤ `upto` (or the block is full).
    pub fn seal(
        &mut self,
        now: Nanos,
        die: usize,
        stream: usize,
        upto: u64,
    ) -> Result<(), FtlError> {
        // Each round pads one page of the frontier (or retires a block a pad failed in).
        let mut cap = Cap::new(self.job_steps(), "sealing padded past a block");
        while self.seal_one(now, die, stream, upto)? {
            cap.tick()?;
        }
        Ok(())
    }

    /// One padding page towards [`seal`](Self::seal): `Ok(false)` when none is needed.
    pub fn seal_one(
        &mut self,
        now: Nanos,
        die: usize,
        stream: usize,
        upto: u64,
    ) -> Result<bool, FtlError> {
        if self.exposed_min(die, stream) > upto {
            return Ok(false);
        }
        let f = self.dies[die].frontier[stream].expect("exposed frontier is open");
        let phys = f.block * self.ppb + f.next;
        self.dies[die].frontier[stream] = Some(Frontier {
            block: f.block,
            next: f.next + 1,
        });
        if self.pad_page(now, die, phys)? && f.next + 1 == self.ppb {
            self.dies[die].frontier[stream] = None;
        }
        Ok(true)
    }

    /// Programs a padding page at `phys` (a frontier's next page, just allocated): it holds
    /// nothing, is never exposed itself, and counts in `pad_pages`. `Ok(false)`: the
    /// program failed (the block was retired or closed).
    pub fn pad_page(&mut self, now: Nanos, die: usize, phys: u32) -> Result<bool, FtlError> {
        let seq = self.next_seq();
        let rec = OobRecord::new(u64::MAX, seq, PageKind::Meta(super::region::PAD_KIND));
        let pad = core::mem::take(&mut self.pad);
        let r = self.program_page(now, phys, Payload::Data(&pad), rec, Cause::Meta, None);
        self.pad = pad;
        if r?.is_none() {
            return Ok(false);
        }
        self.log.counters.pad_pages += 1;
        self.note_program(die, phys, u64::MAX);
        self.close_if_full(phys);
        Ok(true)
    }

    /// The next page of `die`'s frontier of `stream` for `write`, asking the placement
    /// policy (when it wants to be asked) whether to take each offered slot or pad it; at
    /// most a block's worth of slots is padded for one write.
    #[inline]
    pub fn allocate_for(
        &mut self,
        now: Nanos,
        die: usize,
        stream: usize,
        write: WriteKind,
    ) -> Result<u32, FtlError> {
        if !self.judge_slots {
            return self.allocate(now, die, stream);
        }
        self.allocate_judged(now, die, stream, write)
    }

    /// [`allocate_for`](Substrate::allocate_for) with a placement that judges slots.
    fn allocate_judged(
        &mut self,
        now: Nanos,
        die: usize,
        stream: usize,
        write: WriteKind,
    ) -> Result<u32, FtlError> {
        let mut phys = self.allocate(now, die, stream)?;
        let mut lapse = false;
        for _ in 0..self.ppb {
            let slot = self.slot(phys);
            if write.class().critical {
                // One search of the shared-pages table per slot judged for a critical page.
                self.log.counters.pairing_lookups += 1;
            }
            if self.placement.slot(&slot, write) == SlotChoice::Take {
                break;
            }
            // A shared destination (real-time pacing) while the die is down to its reserve:
            // a victim is being collected into it, and its pads must stay within eq. 6's
            // slack, or the collection could outgrow the block. With none left the page
            // takes the slot, counted as a lapse.
            let d = &mut self.dies[die];
            let tight = self.real_time && d.free.len() <= crate::policy::RESERVE;
            // Other pacings: a GC copy whose job could no longer finish if every copy left
            // took a pad (`job_cannot_pad`).
            let spent = !self.real_time
                && matches!(write, WriteKind::Copy(_))
                && self.job_cannot_pad(die, stream);
            let d = &mut self.dies[die];
            if (tight && d.pads_left == 0) || spent {
                self.log.counters.placement_lapses += 1;
                lapse = true;
                break;
            }
            if tight {
                d.pads_left -= 1;
            }
            if self.pad_page(now, die, phys)? {
                self.log.counters.placement_pads += 1;
            }
            phys = self.allocate(now, die, stream)?;
        }
        self.mark_lapse(phys, lapse);
        Ok(phys)
    }

    /// Whether `die`'s running job could run out of room if each of its remaining copies took a
    /// padding page too: the pages left on the die (free blocks and `stream`'s frontier)
    /// against twice the victim's valid pages. AP's placement pads an LSB slot a critical
    /// copy meets; a victim holding nothing but critical pages (in MSB pages, the LSB ones
    /// padded) would cost a whole block to collect and free none — greedy would choose it
    /// again and again until the die ran out of space. When this holds, the copy takes the
    /// slot instead (a counted lapse). Also true for the whole of a job whose victim was
    /// judged, when it was chosen, too dense in critical pages for its pads to leave any
    /// gain (`Job::pads`). One look at the job and the free list: no flash.
    fn job_cannot_pad(&self, die: usize, stream: usize) -> bool {
        let d = &self.dies[die];
        // The GC job, or a relocation or wear-levelling job (they run when none does).
        let Some(job) = d.gc.or_else(|| d.background.front().copied()) else {
            return false;
        };
        if !job.pads {
            return true;
        }
        let room = d.free.len() as u64 * self.ppb as u64 + self.frontier_room(die, stream) as u64;
        room < 2 * self.valid[job.victim as usize] as u64
    }

    /// Records whether the page at `phys` holds a lapsed critical page (see `lapsed`).
    pub fn mark_lapse(&mut self, phys: u32, lapse: bool) {
        if self.lapsed.is_empty() {
            if !lapse {
                return;
            }
            self.lapsed = alloc::vec![0; (self.state.len() * self.ppb as usize).div_ceil(64)];
        }
        let (w, bit) = (phys as usize / 64, 1u64 << (phys % 64));
        if lapse {
            self.lapsed[w] |= bit;
        } else {
            self.lapsed[w] &= !bit;
        }
    }

    /// Whether the page at `phys` holds a critical page placed by a counted lapse.
    pub fn is_lapsed(&self, phys: u32) -> bool {
        self.lapsed
            .get(phys as usize / 64)
            .is_some_and(|w| w & (1u64 << (phys % 64)) != 0)
    }

    /// At a flush: updates the moving average of host pages per flush interval (weight
    /// 1/8 on the newest) and, with the flush buffer `enabled`, whether new host blocks
    /// open in SLC mode — while the average is below the pairing window (multi-level chips
    /// only).
    pub fn note_flush(&mut self, enabled: bool) {
        let w = self.log.counters.host_writes;
        let gap = w - self.writes_at_flush;
        self.writes_at_flush = w;
        if gap == 0 {
            // A flush with nothing written since the last one says nothing about the rate.
            return;
        }
        let gap = gap.min(u64::MAX / 64);
        self.flush_gap = if self.flush_gap == 0 {
            8 * gap
        } else {
            self.flush_gap - self.flush_gap / 8 + gap
        };
        self.host_slc = enabled && self.window > 0 && self.flush_gap < 8 * self.window as u64;
    }

    /// Seals every frontier: no page written so far stays exposed.
    pub fn seal_all(&mut self, now: Nanos) -> Result<(), FtlError> {
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

    /// Marks the block of `phys` full when `phys` was its last page.
    #[inline]
    pub fn close_if_full(&mut self, phys: u32) {
        let (b, page) = self.split(phys);
        let last = if self.slc[b as usize] == Some(true) {
            self.next_lsb[page as usize + 1] == self.ppb
        } else {
            page == self.ppb - 1
        };
        if last && self.state[b as usize] == BState::Open {
            self.set_state(b, BState::Full);
            self.index_insert(b);
        }
    }

    /// Stops writing to a frontier block (resumed after a crash, its next page turned out
    /// not programmable: a torn program that reads as erased).
    pub fn close_block(&mut self, b: u32) {
        let die = self.die_of(b) as usize;
        for f in self.dies[die].frontier.iter_mut() {
            if f.is_some_and(|f| f.block == b) {
                *f = None;
            }
        }
        if self.state[b as usize] == BState::Open {
            self.set_state(b, BState::Full);
            self.index_insert(b);
        }
    }

    /// A block went bad: stop writing to it and relocate its valid pages (a checkpoint
    /// region block is simply marked bad: the region writes elsewhere).
    pub fn retire(&mut self, b: u32) {
        self.log.counters.retired_blocks += 1;
        if self.state[b as usize].reserved() {
            self.set_state(b, BState::Bad);
            return;
        }
        let die = self.die_of(b) as usize;
        for f in self.dies[die].frontier.iter_mut() {
            if f.is_some_and(|f| f.block == b) {
                *f = None;
            }
        }
        if self.state[b as usize] == BState::Full {
            self.index_remove(b);
        }
        self.retire_or_relocate(b);
    }

    /// A bad block: `Bad` if it holds nothing valid, else `Retiring` with a relocation job
    /// at the front of its die's queue.
    pub fn retire_or_relocate(&mut self, b: u32) {
        let to = self.retired_state(b);
        self.set_state(b, to);
    }

    /// The same for a block a mount found gone bad (its state is adopted, not moved).
    pub fn adopt_grown_bad(&mut self, b: u32) {
        let to = self.retired_state(b);
        self.adopt_state(b, to);
    }

    /// `Bad` for bad block `b` if it holds nothing valid, else `Retiring`, with its
    /// relocation job queued.
    fn retired_state(&mut self, b: u32) -> BState {
        if self.valid[b as usize] == 0 {
            return BState::Bad;
        }
        let die = self.die_of(b) as usize;
        self.dies[die].background.push_front(Job {
            pads: true,
            next_critical: 0,
            victim: b,
            next: 0,
            cause: Cause::Relocate,
            erase: false,
        });
        BState::Retiring
    }
}
