//! A partition of the demand-paged map: reserved blocks holding one kind of unit per
//! translation page (its version, or its log), written in slot order, each unit's record
//! naming its TP; a directory entry per TP says where its current unit is, and the units a
//! checkpoint names are pinned (see the parent module).

use super::NONE;
use crate::substrate::meta::MetaWriter;
use crate::substrate::{BState, Substrate};
use crate::{Cause, FtlError};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use controller::{MetaTag, OobRecord, PageKind};
use nand::{ErrorModel, Nanos, Storage};

/// `next` of a block whose content is unknown (erased before it is opened).
const UNKNOWN: u32 = u32::MAX;

/// One partition: its blocks, the directory of its current units and their pins.
pub(super) struct Partition<S: Storage, M: ErrorModel> {
    writer: Box<dyn MetaWriter<S, M>>,
    /// Record kind of its units.
    kind: MetaTag,
    /// Name in messages.
    pub name: &'static str,
    /// The partition's blocks (flat indices).
    blocks: Vec<u32>,
    /// Unit slots per block.
    pub slots: u32,
    /// Per TP: location (`block index · slots + slot`) of its current unit, or `NONE`.
    pub dir: Vec<u32>,
    /// Per TP: the location the committed checkpoint names (pinned), or `NONE`.
    pub held: Vec<u32>,
    /// While a checkpoint is written in steps: the locations its snapshot names (pinned
    /// too, until it commits or is abandoned).
    held_next: Option<Vec<u32>>,
    /// Per location: the TP whose current unit it holds, or `NONE`.
    owner: Vec<u32>,
    /// Per block: current units in it.
    live: Vec<u32>,
    /// Per block: pinned units in it.
    pinned: Vec<u32>,
    /// Per block: next slot since its erase (`UNKNOWN`: erase it first).
    next: Vec<u32>,
    /// Per block: whether it is free ([`is_free`](Self::is_free) as of its last change,
    /// kept by [`mark`](Self::mark) wherever a block's state changes; `verify` checks it).
    free: Vec<bool>,
    /// Free blocks: the count of `free` (so the per-operation questions — is a compaction
    /// due, would a checkpoint give room — cost no scan of the partition).
    free_n: usize,
    /// The block being filled.
    open: Option<u32>,
    /// Bounded mode: blocks are erased only by [`prepare`](Self::prepare), which keeps
    /// this one ready for the next unit.
    ready: Option<u32>,
    /// Bounded mode (see `ready`).
    pub bounded: bool,
    /// Scratch unit: what [`program`](Self::program) writes and [`read`](Self::read) fills.
    pub unit: Vec<u8>,
}

impl<S: Storage, M: ErrorModel> Partition<S, M> {
    /// A partition over `blocks` of `sub`'s chip, its units of record kind `kind` written by
    /// `writer`.
    pub fn new(
        sub: &Substrate<S, M>,
        writer: Box<dyn MetaWriter<S, M>>,
        kind: MetaTag,
        name: &'static str,
        blocks: Vec<u32>,
    ) -> Self {
        let slots = writer.slots();
        let n = blocks.len();
        let mut p = Partition {
            unit: vec![0; writer.unit_bytes(sub)],
            writer,
            kind,
            name,
            slots,
            dir: Vec::new(),
            held: Vec::new(),
            held_next: None,
            owner: vec![NONE; n * slots as usize],
            live: vec![0; n],
            pinned: vec![0; n],
            next: vec![UNKNOWN; n],
            free: vec![false; n],
            free_n: 0,
            open: None,
            ready: None,
            bounded: false,
            blocks,
        };
        p.mark_all(sub);
        p
    }

    /// Sizes the directory for `ntp` TPs.
    pub fn resize(&mut self, ntp: usize) {
        self.dir.resize(ntp, NONE);
        self.held.resize(ntp, NONE);
    }

    // ----- pins ----------------------------------------------------------------------------

    /// A checkpoint committed: the units the directory names now are pinned.
    pub fn committed(&mut self, sub: &Substrate<S, M>) {
        self.held.clone_from(&self.dir);
        self.held_next = None;
        self.count_pins(sub);
    }

    /// A checkpoint is being written in steps: the units the directory names now are
    /// pinned beside the committed one's.
    pub fn begin_pin(&mut self, sub: &Substrate<S, M>) {
        self.held_next = Some(self.dir.clone());
        self.count_pins(sub);
    }

    /// The checkpoint written in steps committed.
    pub fn commit_pin(&mut self, sub: &Substrate<S, M>) {
        if let Some(h) = self.held_next.take() {
            self.held = h;
        }
        self.count_pins(sub);
    }

    /// The checkpoint written in steps was abandoned.
    pub fn drop_pin(&mut self, sub: &Substrate<S, M>) {
        self.held_next = None;
        self.count_pins(sub);
    }

    fn count_pins(&mut self, sub: &Substrate<S, M>) {
        self.pinned.fill(0);
        for h in core::iter::once(&self.held).chain(self.held_next.as_ref()) {
            for &loc in h {
                if loc != NONE {
                    self.pinned[(loc / self.slots) as usize] += 1;
                }
            }
        }
        self.mark_all(sub);
    }

    // ----- blocks --------------------------------------------------------------------------

    fn usable(&self, sub: &Substrate<S, M>, bi: usize) -> bool {
        sub.state[self.blocks[bi] as usize] == BState::Map
    }

    fn is_free(&self, sub: &Substrate<S, M>, bi: usize) -> bool {
        self.open != Some(bi as u32)
            && self.ready != Some(bi as u32)
            && self.live[bi] == 0
            && self.pinned[bi] == 0
            && self.usable(sub, bi)
    }

    /// Block `bi`'s state changed: its `free` mark and the count follow.
    fn mark(&mut self, sub: &Substrate<S, M>, bi: usize) {
        let f = self.is_free(sub, bi);
        if f != self.free[bi] {
            self.free[bi] = f;
            if f {
                self.free_n += 1;
            } else {
                self.free_n -= 1;
            }
        }
    }

    /// Every block's `free` mark recomputed (after the pins or the live counts changed at
    /// once).
    fn mark_all(&mut self, sub: &Substrate<S, M>) {
        for bi in 0..self.blocks.len() {
            self.mark(sub, bi);
        }
    }

    /// The least-worn free block.
    fn free_block(&self, sub: &Substrate<S, M>) -> Option<usize> {
        (0..self.blocks.len())
            .filter(|&bi| self.free[bi])
            .min_by_key(|&bi| (sub.erase[self.blocks[bi] as usize], bi))
    }

    /// Bounded mode: erases a free block to be opened next when none is ready.
    /// `Ok(false)`: nothing to do.
    pub fn prepare(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<bool, FtlError> {
        if !self.bounded || self.ready.is_some() {
            return Ok(false);
        }
        let Some(bi) = self.free_block(sub) else {
            return Ok(false);
        };
        if sub.erase_block(now, self.blocks[bi], Cause::Meta)? {
            self.next[bi] = 0;
            self.ready = Some(bi as u32);
        }
        self.mark(sub, bi);
        Ok(true)
    }

    /// The next slot to program (opening, after its erase, a free block when the open one
    /// is full; in bounded mode only the ready block); `None` when there is no room.
    fn next_loc(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<Option<u32>, FtlError> {
        for _ in 0..=self.blocks.len() {
            if let Some(bi) = self.open {
                let i = bi as usize;
                if self.usable(sub, i) && self.next[i] < self.slots {
                    return Ok(Some(bi * self.slots + self.next[i]));
                }
                self.open = None;
                self.mark(sub, i);
            }
            if self.bounded {
                let Some(bi) = self.ready.take() else {
                    return Ok(None);
                };
                self.open = Some(bi);
                self.mark(sub, bi as usize);
                continue;
            }
            let Some(bi) = self.free_block(sub) else {
                return Ok(None);
            };
            // A failed erase marks the block bad: another is tried.
            if sub.erase_block(now, self.blocks[bi], Cause::Meta)? {
                self.next[bi] = 0;
                self.open = Some(bi as u32);
            }
            self.mark(sub, bi);
        }
        Ok(None)
    }

    /// Programs the scratch unit as TP `tp`'s new current unit. `Ok(false)`: no room.
    pub fn program(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        tp: u32,
    ) -> Result<bool, FtlError> {
        for _ in 0..=self.blocks.len() {
            let Some(loc) = self.next_loc(sub, now)? else {
                return Ok(false);
            };
            let (bi, slot) = ((loc / self.slots) as usize, loc % self.slots);
            self.next[bi] = slot + 1;
            // (The record's sequence number is the data sequence at the write; recovery
            // does not order by it.)
            let rec = OobRecord::new(tp as u64, sub.seq, PageKind::Meta(self.kind));
            if self
                .writer
                .program(sub, now, self.blocks[bi], slot, &self.unit, rec)?
            {
                self.release(sub, tp);
                self.dir[tp as usize] = loc;
                self.owner[loc as usize] = tp;
                // (The open block: not free before or after.)
                self.live[bi] += 1;
                let c = sub.counters_mut();
                c.meta_bytes += self.unit.len() as u64;
                c.meta_programs += 1;
                return Ok(true);
            }
            // The program failed: the block is retired (never opened again); its other
            // units stay readable until rewritten.
            self.open = None;
            self.mark(sub, bi);
        }
        Ok(false)
    }

    /// TP `tp` has no current unit here any more (its old one becomes garbage).
    pub fn release(&mut self, sub: &Substrate<S, M>, tp: u32) {
        let old = core::mem::replace(&mut self.dir[tp as usize], NONE);
        if old != NONE {
            self.owner[old as usize] = NONE;
            let bi = (old / self.slots) as usize;
            self.live[bi] -= 1;
            self.mark(sub, bi);
        }
    }

    /// Reads the unit at `loc` (TP `tp`'s) into the scratch unit, charged to `cause`.
    pub fn read_at(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        tp: u32,
        loc: u32,
        cause: Cause,
    ) -> Result<(), FtlError> {
        let (bi, slot) = ((loc / self.slots) as usize, loc % self.slots);
        let rec = self
            .writer
            .read(sub, now, self.blocks[bi], slot, &mut self.unit, cause)?
            .record();
        match rec {
            Some(r) if r.kind == PageKind::Meta(self.kind) && r.lpn == tp as u64 => Ok(()),
            _ => Err(FtlError::Corrupt(
                "a unit of the demand-paged map does not decode",
            )),
        }
    }

    // ----- compaction ----------------------------------------------------------------------

    /// With fewer than two free blocks: a TP whose current unit is in the block holding
    /// the fewest (not open, not full of current units) — copying it out frees the block
    /// at the next checkpoint.
    pub fn compaction_victim(&self, sub: &Substrate<S, M>) -> Option<u32> {
        if self.free_n >= 2 {
            return None;
        }
        let v = (0..self.blocks.len())
            .filter(|&bi| {
                self.open != Some(bi as u32)
                    && self.live[bi] > 0
                    && self.live[bi] < self.slots
                    && self.usable(sub, bi)
            })
            .min_by_key(|&bi| (self.live[bi], bi))?;
        (0..self.slots)
            .map(|slot| self.owner[v * self.slots as usize + slot as usize])
            .find(|&tp| tp != NONE)
    }

    /// Whether a checkpoint would give room: a block held only by pinned units while fewer
    /// than two are free (or `short` says the cache needs room).
    pub fn wants_checkpoint(&self, sub: &Substrate<S, M>, short: bool) -> bool {
        (short || self.free_n < 2)
            && (0..self.blocks.len()).any(|bi| {
                self.open != Some(bi as u32)
                    && self.live[bi] == 0
                    && self.pinned[bi] > 0
                    && self.usable(sub, bi)
            })
    }

    // ----- mount ---------------------------------------------------------------------------

    /// Takes a checkpoint's directory `dir` (checked: every place inside the partition and
    /// named once).
    pub fn load_dir(&mut self, dir: &[u32]) -> Result<(), FtlError> {
        let nloc = self.owner.len() as u32;
        self.owner.fill(NONE);
        for (tp, &loc) in dir.iter().enumerate() {
            if loc != NONE && (loc >= nloc || self.owner[loc as usize] != NONE) {
                return Err(FtlError::Corrupt(
                    "the checkpoint's map directory names a place twice or outside the partition",
                ));
            }
            if loc != NONE {
                self.owner[loc as usize] = tp as u32;
            }
        }
        self.dir.clear();
        self.dir.extend_from_slice(dir);
        Ok(())
    }

    /// After a mount: the directory's units are current and pinned; the blocks are opened
    /// afresh (erased first).
    pub fn settle(&mut self, sub: &Substrate<S, M>) {
        self.live.fill(0);
        for &loc in &self.dir {
            if loc != NONE {
                self.live[(loc / self.slots) as usize] += 1;
            }
        }
        self.next.fill(UNKNOWN);
        self.open = None;
        self.ready = None;
        self.committed(sub);
    }

    // ----- invariants ----------------------------------------------------------------------

    /// Directory ↔ owners ↔ counts, block states, the open and ready blocks.
    pub fn verify(&self, sub: &Substrate<S, M>, ntp: usize) -> Result<(), String> {
        let name = self.name;
        if self.dir.len() != ntp || self.held.len() != ntp {
            return Err(format!("{name} directory sized for the wrong volume"));
        }
        let mut live = vec![0u32; self.blocks.len()];
        let mut pinned = vec![0u32; self.blocks.len()];
        for tp in 0..ntp {
            let loc = self.dir[tp];
            if loc != NONE {
                if self.owner.get(loc as usize) != Some(&(tp as u32)) {
                    return Err(format!("{name}: TP {tp} at {loc}, which another owns"));
                }
                live[(loc / self.slots) as usize] += 1;
            }
            for h in core::iter::once(&self.held).chain(self.held_next.as_ref()) {
                if h[tp] != NONE {
                    pinned[(h[tp] / self.slots) as usize] += 1;
                }
            }
        }
        if live != self.live || pinned != self.pinned {
            return Err(format!(
                "{name} partition counts disagree with the directory"
            ));
        }
        let owned = self.owner.iter().filter(|&&t| t != NONE).count();
        if owned != self.dir.iter().filter(|&&l| l != NONE).count() {
            return Err(format!(
                "a {name} partition slot is owned by no directory entry"
            ));
        }
        for (bi, &b) in self.blocks.iter().enumerate() {
            let st = sub.state[b as usize];
            if !matches!(st, BState::Map | BState::Bad) {
                return Err(format!("{name} partition block {b} is {st:?}"));
            }
            if self.open == Some(bi as u32)
                && (self.next[bi] == UNKNOWN || self.next[bi] > self.slots)
            {
                return Err(format!("open {name} block {b} has no write point"));
            }
            if self.free[bi] != self.is_free(sub, bi) {
                return Err(format!(
                    "{name} block {b} marked {} but it is {}",
                    if self.free[bi] { "free" } else { "in use" },
                    if self.free[bi] { "in use" } else { "free" }
                ));
            }
            if self.ready == Some(bi as u32)
                && (self.next[bi] != 0 || self.live[bi] > 0 || self.pinned[bi] > 0)
            {
                return Err(format!("{name} block {b}, ready to open, is not empty"));
            }
        }
        if self.free_n != self.free.iter().filter(|&&f| f).count() {
            return Err(format!(
                "{name} partition's free count disagrees with its marks"
            ));
        }
        Ok(())
    }
}
