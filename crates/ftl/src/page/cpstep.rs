//! Checkpoints written in bounded steps beside host writes (a real-time pacing with
//! roll-forward recovery: WAO-GC's bound has room for one more operation per write, not for
//! a whole checkpoint).
//!
//! **Point.** Once some die has no more than one destination block's worth of pages (and
//! a write's) left before it would open a block past roll-forward's young-block budget
//! (`young_budget`: the rest of its destination plus the blocks it may still open), the
//! snapshot is encoded in RAM at that point P (sequence number S0):
//! the map, block states, frontiers and erase counts as they are then. Nothing is
//! programmed yet.
//!
//! **Steps.** Every host write then runs `cp_steps_per_write` steps after its own program
//! and GC step: each an erase of a region block or the program of one checkpoint page
//! ([`Region::step`](crate::substrate::region::Region::step)), or — just before the last
//! page — a padding page sealing a frontier's lower page written before P that is still
//! exposed (so no page the new snapshot maps can be scrambled by a later cut). Meanwhile
//! the committed generation stays committed: recovery from it is exactly as before,
//! since every block opened after it — those opened after P too — is still young.
//!
//! **Commit.** The last page is a trailer carrying the trims taken since P that were logged
//! before it (in the committed generation's log): its program makes the new generation the
//! one recovery loads, with those trims in its log. Trims taken before P are in the
//! snapshot: they never go in the trailer, and those still pending in RAM are dropped at
//! the commit, so every record in a generation's log is at least as new as its snapshot
//! (one older would unmap a newer write the snapshot maps). Then, in RAM, the
//! young blocks become those opened since P (and the frontiers of P, whose pages from the
//! recorded `next` on are newer than the snapshot): blocks young at P become collectable.
//! A trim that would overflow the trailer finishes the checkpoint first (inside that trim).
//!
//! **Rate.** `cp_steps_per_write` is sized when the volume is: a checkpoint must finish
//! before its die opens the block past the budget, and at least one destination block lies
//! between the point and that opening. A write takes its own page, and GC copies only
//! while the die is down to its reserve — at most α per write, their pads and the writes'
//! then within eq. 6's slack per destination (`pad_slack`, AP's placement) — or, with no
//! victim being collected, its page and up to `pads` pads. So W writes take at most
//! W·max(1 + α, 1 + pads) pages plus the slack of the (at most two) destinations they
//! touch, and the steps per write are the checkpoint's steps over the W that fit a block.
//! The write bound grows by that many steps (`WaoBounds::with_checkpoint_steps`). A
//! checkpoint not done in time (a region block going bad costs steps the rate did not
//! count) is replaced by a whole one inside the write that needs it, counted as an
//! overrun, as before. Flushes finish a due checkpoint, idle time finishes any; a clean
//! shutdown abandons it for a whole one.

use super::snapshot::max_snapshot_len;
use super::trimlog::{encode_trims, TrimRange, TRIM_ENTRY};
use super::PageFtl;
use crate::substrate::region::Step;
use crate::substrate::{COLD, HOST};
use crate::FtlError;
use alloc::vec::Vec;
use nand::{ErrorModel, Nanos, Storage};

/// A checkpoint being written in steps: what its commit changes.
#[derive(Debug, Clone)]
pub(crate) struct CpSteps {
    /// The snapshot's sequence number (every page and trim below it is reflected).
    seq: u64,
    /// Blocks opened per die before P (since the committed checkpoint).
    opened_at: Vec<u32>,
    /// Their total.
    opened_total_at: u32,
    /// Blocks young at P and not a frontier then: collectable once this commits.
    retire: Vec<u32>,
    /// Trims taken since P (the trailer's entries).
    trims: Vec<TrimRange>,
}

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Whether checkpoints go in steps: a real-time pacing with roll-forward's young-block
    /// budget.
    pub(super) fn steps_enabled(&self) -> bool {
        self.s.young_budget > 0
    }

    /// Steps of a whole checkpoint of a volume of `logical` pages written in steps: its
    /// region erases and pages (the anchor's refresh included) and the seal pads, up to a
    /// pairing window on each frontier.
    pub(super) fn checkpoint_steps_total(&self, logical: u64) -> u32 {
        let (programs, erases) = self.checkpoint_steps_split(logical);
        programs + erases
    }

    /// [`checkpoint_steps_total`](Self::checkpoint_steps_total) as (page programs — the
    /// seal pads included —, region-block erases).
    pub(super) fn checkpoint_steps_split(&self, logical: u64) -> (u32, u32) {
        let mut len = max_snapshot_len(self.s.dies.len(), self.s.state.len(), logical);
        if let super::map::MapSlot::Paged(p) = &self.map {
            // A paged map's section in place of the map: its directory and, at worst,
            // every translation page dirty (each with its index).
            len += p.section_overhead(logical);
        }
        let seal = self.s.dies.len() as u32 * 2 * self.s.window;
        let (programs, erases) = self.region.steps_split(&self.s, len);
        (programs + seal, erases)
    }

    /// Steps per host write that finish a checkpoint of a volume of `logical` pages before
    /// its die opens the block past the young budget, with `alpha` copies per partial step,
    /// `pads` padding pages per program and eq. 6's `pad_slack` (see the module docs).
    pub(super) fn steps_per_write(
        &self,
        logical: u64,
        alpha: u32,
        pads: u32,
        pad_slack: u32,
    ) -> u32 {
        let steps = self.checkpoint_steps_total(logical);
        let ppb = self.s.ppb();
        // Every write at its worst (its pads and α copies with theirs), or amortised: the
        // pads of a collection within the slack of the two destinations it may touch.
        let worst = ppb / ((1 + pads) * (1 + alpha));
        let amortised = ppb.saturating_sub(2 * pad_slack) / (1 + alpha).max(1 + pads);
        let writes = worst.max(amortised).max(1);
        steps.div_ceil(writes).max(1)
    }

    /// After a host write on `die`: begins a checkpoint at this point when the die is
    /// short of room before its young budget (only the written die's room shrank: the
    /// write and its partial step took its pages), and runs this write's steps of the one
    /// being written.
    pub(super) fn checkpoint_steps_after_write(
        &mut self,
        now: Nanos,
        die: usize,
    ) -> Result<(), FtlError> {
        if !self.steps_enabled() {
            return Ok(());
        }
        if self.steps.is_none() {
            if !self.young_room_short_on(die) {
                return Ok(());
            }
            self.begin_checkpoint();
        }
        for _ in 0..self.cp_steps_per_write {
            if self.checkpoint_step(now)? {
                break;
            }
        }
        Ok(())
    }

    /// Whether some die has at most a destination block and a write's pages left before
    /// it would open a block past the young budget (see the module docs).
    pub(super) fn young_room_short(&self) -> bool {
        (0..self.s.dies.len()).any(|die| self.young_room_short_on(die))
    }

    /// [`young_room_short`](Self::young_room_short) for one die.
    #[inline]
    fn young_room_short_on(&self, die: usize) -> bool {
        let s = &self.s;
        let ppb = s.ppb() as u64;
        let (pads, alpha) = self.rt.map_or((0, 0), |b| (b.pads, b.alpha));
        let write = ((1 + pads) * (1 + alpha)) as u64;
        let threshold = ppb + write + 2 * s.window as u64;
        let rest = s.frontier_room(die, s.copy_stream) as u64;
        let more = s.young_left(die) as u64;
        // The last young block opens multi-level (`Substrate::opens_slc`); the others may
        // open in SLC mode with the flush buffer, holding only their LSB pages.
        let per_block = if self.cfg.flush_buffer {
            s.lsb_from[0] as u64
        } else {
            ppb
        };
        let room = match more {
            0 => rest,
            m => rest + ppb + (m - 1) * per_block,
        };
        room <= threshold
    }

    /// After a mount: a checkpoint cut half-written may have left a die with less room
    /// before its young budget than a checkpoint in steps needs; a whole one is written
    /// then, before any write (mount time, outside the write bound; its programs are not
    /// in the recovery report's time, which counts the reads that rebuilt the state).
    pub(super) fn checkpoint_at_mount_if_short(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.steps_enabled() && self.young_room_short() {
            self.write_checkpoint(now)?;
        }
        Ok(())
    }

    /// Encodes the snapshot at this point and starts its generation.
    pub(super) fn begin_checkpoint(&mut self) {
        let mut bytes = core::mem::take(&mut self.cp_buf);
        self.encode_snapshot(None, &mut bytes);
        if let super::map::MapSlot::Paged(p) = &mut self.map {
            p.begin_pin(&self.s);
        }
        self.region.begin(&self.s, bytes.len());
        self.cp_buf = bytes;
        let frontier = |s: &crate::substrate::Substrate<S, M>, b: u32| {
            s.dies.iter().any(|d| {
                [HOST, COLD]
                    .iter()
                    .any(|&k| d.frontier[k].is_some_and(|f| f.block == b))
            })
        };
        let retire = (0..self.s.state.len() as u32)
            .filter(|&b| self.s.young[b as usize] && !frontier(&self.s, b))
            .collect();
        self.steps = Some(CpSteps {
            seq: self.s.seq,
            opened_at: self.s.opened_per_die.clone(),
            opened_total_at: self.s.opened_since_cp,
            retire,
            trims: Vec::new(),
        });
    }

    /// One step of the checkpoint being written; `Ok(true)` once it is committed (or when
    /// none is being written).
    fn checkpoint_step(&mut self, now: Nanos) -> Result<bool, FtlError> {
        let Some(st) = &self.steps else {
            return Ok(true);
        };
        self.s.counters_mut().checkpoint_steps += 1;
        if self.region.at_trailer() {
            // Before the commit: no page written before P may stay exposed.
            let upto = st.seq.saturating_sub(1);
            for die in 0..self.s.dies.len() {
                for stream in [HOST, COLD] {
                    if self.s.seal_one(now, die, stream, upto)? {
                        return Ok(false);
                    }
                }
            }
        }
        // The trailer's entries, encoded only for the step that writes it.
        let trailer = if self.region.at_trailer() {
            encode_trims(&st.trims)
        } else {
            Vec::new()
        };
        match self.region.step(&mut self.s, now, &self.cp_buf, &trailer)? {
            Step::More => Ok(false),
            Step::Committed => {
                self.commit_steps();
                crate::debug_verify("checkpoint (in steps)", || self.verify());
                Ok(true)
            }
        }
    }

    /// The sequence number of the point a checkpoint being written in steps was encoded
    /// at (`None`: none is being written).
    pub(super) fn steps_point(&self) -> Option<u64> {
        self.steps.as_ref().map(|st| st.seq)
    }

    /// The generation is committed: the young blocks become those opened since P.
    fn commit_steps(&mut self) {
        let st = self.steps.take().expect("a checkpoint was being written");
        // Trims still pending from before P are in the new snapshot: logged after it, they
        // would be older than it (a record older than the snapshot could unmap a newer
        // write the snapshot maps). Every record in a generation's log is at least as new
        // as its snapshot.
        self.pending_trims.retain(|t| t.seq >= st.seq);
        if let super::map::MapSlot::Paged(p) = &mut self.map {
            p.commit_pin(&self.s);
        }
        for b in st.retire {
            self.s.young[b as usize] = false;
        }
        for (now, at) in self.s.opened_per_die.iter_mut().zip(&st.opened_at) {
            *now -= at;
        }
        self.s.opened_since_cp -= st.opened_total_at;
        self.s.settle_young();
        self.s.counters_mut().checkpoints += 1;
    }

    /// Runs the checkpoint being written to its commit (at a flush, in idle time, or when
    /// its trailer is full).
    pub(super) fn finish_checkpoint(&mut self, now: Nanos) -> Result<(), FtlError> {
        // Bounded: every step erases or programs towards a finite generation, or pads a
        // frontier towards sealing it; retired blocks are finite too.
        let limit = 4 * (self.region.blocks.len() as u64 + 1) * self.s.ppb() as u64
            + (self.s.dies.len() as u64 * 2 + 1) * self.s.ppb() as u64;
        for _ in 0..limit {
            if self.checkpoint_step(now)? {
                return Ok(());
            }
        }
        Err(FtlError::Corrupt(
            "a checkpoint written in steps did not finish within its bound",
        ))
    }

    /// A trim is being logged while a checkpoint is written in steps: it goes into the
    /// trailer too, or — the trailer being full — the checkpoint is finished first.
    pub(super) fn note_trims_for_steps(&mut self, now: Nanos) -> Result<(), FtlError> {
        let cap = self.region.trailer_entries(&self.s, TRIM_ENTRY);
        let Some(st) = &mut self.steps else {
            return Ok(());
        };
        // Only trims taken since P: older ones (pending at P) are in the snapshot, and a
        // trailer record older than the snapshot would unmap a newer write it maps.
        let since = self.pending_trims.iter().filter(|t| t.seq >= st.seq);
        if 2 * (st.trims.len() + since.clone().count()) <= cap {
            st.trims.extend(since);
            return Ok(());
        }
        self.finish_checkpoint(now)
    }

    /// Drops the checkpoint being written (a whole one replaces it).
    pub(super) fn abandon_steps(&mut self) {
        if self.steps.take().is_some() {
            if let super::map::MapSlot::Paged(p) = &mut self.map {
                p.drop_pin(&self.s);
            }
        }
        self.region.pending = None;
    }

    /// The stepped checkpoint's part of `verify`: it exists exactly when the region has a
    /// generation being written, and its counts fit the live ones.
    pub(super) fn verify_steps(&self) -> Result<(), alloc::string::String> {
        match (&self.steps, &self.region.pending) {
            (None, None) => Ok(()),
            (Some(st), Some(_)) => {
                if st.seq > self.s.seq
                    || st.opened_total_at > self.s.opened_since_cp
                    || st
                        .opened_at
                        .iter()
                        .zip(&self.s.opened_per_die)
                        .any(|(a, n)| a > n)
                {
                    return Err(alloc::format!(
                        "a stepped checkpoint's point is ahead of the FTL: {st:?}"
                    ));
                }
                if let Some(b) = st.retire.iter().find(|&&b| !self.s.young[b as usize]) {
                    return Err(alloc::format!(
                        "block {b}, young at a stepped checkpoint's point, was made collectable before it committed"
                    ));
                }
                Ok(())
            }
            _ => Err(
                "a stepped checkpoint and the region disagree on whether one is being written"
                    .into(),
            ),
        }
    }
}
