//! The per-block table's indexes: the full-block index (intrusive lists per die and valid
//! count, so a greedy victim is found in O(1)), valid-page accounting, free heaps, and the
//! substrate's `verify`.

use super::{BState, Substrate, NIL};
use crate::Invariant;
use ::alloc::format;
use ::alloc::string::String;
use ::alloc::vec;
use ::alloc::vec::Vec;
use core::cmp::Reverse;
use nand::{BlockStatus, ErrorModel, Storage};

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    fn bucket(&self, b: u32) -> usize {
        self.die_of(b) as usize * (self.ppb as usize + 1) + self.valid[b as usize] as usize
    }

    /// Puts full block `b` in the index under its current valid count.
    ///
    /// Requires: `b` is `Full` and not indexed yet.
    pub fn index_insert(&mut self, b: u32) {
        debug_assert_eq!(self.state[b as usize], BState::Full, "block {b} indexed");
        debug_assert!(!self.indexed(b), "block {b} indexed twice");
        let h = self.bucket(b);
        let old = self.head[h];
        self.next[b as usize] = old;
        self.prev[b as usize] = NIL;
        if old != NIL {
            self.prev[old as usize] = b;
        }
        self.head[h] = b;
    }

    /// Takes block `b` out of the index.
    ///
    /// Requires: `b` is indexed.
    pub fn index_remove(&mut self, b: u32) {
        debug_assert!(
            self.indexed(b),
            "block {b} removed from the index it is not in"
        );
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

    /// One valid page fewer in block `b`, superseded by the write (or trim) with sequence
    /// number `by` (0 for a GC copy, which does not count as superseding).
    #[inline]
    pub fn drop_valid(&mut self, b: u32, by: u64) {
        self.superseded[b as usize] = self.superseded[b as usize].max(by);
        let full = self.state[b as usize] == BState::Full;
        if full {
            self.index_remove(b);
        }
        debug_assert!(
            self.valid[b as usize] > 0,
            "block {b}: no valid page to drop"
        );
        self.valid.set(b as usize, self.valid[b as usize] - 1);
        if full {
            self.index_insert(b);
        }
    }

    /// One valid page more in block `b` (a page just programmed there: the block is open,
    /// so not in the index).
    #[inline]
    pub fn add_valid(&mut self, b: u32) {
        debug_assert!(
            !self.indexed(b),
            "block {b} gains a valid page inside the index"
        );
        self.valid.set(b as usize, self.valid[b as usize] + 1);
    }

    /// A mount's count: one valid page more (`true`) or fewer in block `b`, as the map it
    /// rebuilds claims or releases a page there.
    ///
    /// Requires: `b` is out of the full index (a mount indexes blocks once their counts
    /// are final), and a count never goes below zero.
    pub fn adopt_valid(&mut self, b: u32, more: bool) {
        debug_assert!(
            !self.indexed(b),
            "block {b}: count changed inside the index"
        );
        let v = self.valid[b as usize];
        debug_assert!(more || v > 0, "block {b}: no valid page to release");
        self.valid.set(b as usize, if more { v + 1 } else { v - 1 });
    }

    /// A mount's fresh start of every valid count (before the map is walked again).
    ///
    /// Requires: the full index is empty.
    pub fn reset_valid(&mut self) {
        debug_assert!(
            self.head.iter().all(|&h| h == NIL),
            "counts reset under an index"
        );
        for b in 0..self.valid.len() {
            self.valid.set(b, 0);
        }
    }

    /// Whether block `b` is linked into the full-block index (O(1): its links, or the head
    /// of the bucket its valid count names).
    fn indexed(&self, b: u32) -> bool {
        let i = b as usize;
        self.next[i] != NIL
            || self.prev[i] != NIL
            || self.valid[i] <= self.ppb && self.head.get(self.bucket(b)) == Some(&b)
    }

    /// Moves block `b` to state `to` on a running volume.
    ///
    /// Requires: the move is one of the lifecycle's ([`BState::may_become`]), and `b` is
    /// out of the full-block index (a caller leaving `Full` removes it first, one entering
    /// `Full` inserts it after).
    #[inline]
    pub fn set_state(&mut self, b: u32, to: BState) {
        let from = self.state[b as usize];
        debug_assert!(from.may_become(to), "block {b}: {from:?} -> {to:?}");
        debug_assert!(
            !self.indexed(b),
            "block {b} changes state inside the full index"
        );
        self.state.set(b as usize, to);
    }

    /// Sets block `b`'s state to what a mount or format found (on flash, in a checkpoint,
    /// or by the scheme's layout), whatever it was before.
    ///
    /// Requires: `b` is out of the full-block index and its die's free heap (an adopted
    /// `Free` block goes in through [`adopt_free`](Self::adopt_free)), and `to` is a resting
    /// state: `Collecting` and `Dirty` exist only with their jobs.
    pub fn adopt_state(&mut self, b: u32, to: BState) {
        debug_assert!(
            !matches!(to, BState::Collecting | BState::Dirty),
            "block {b}: {to:?} adopted without its job"
        );
        debug_assert!(!self.indexed(b), "block {b} adopted inside the full index");
        debug_assert!(
            self.state[b as usize] != BState::Free
                || self.dies[self.die_of(b) as usize].free.is_empty(),
            "block {b} adopted while possibly in its die's free heap"
        );
        self.state.set(b as usize, to);
    }

    /// Sets block `b`'s erase count to what a mount found (its header, the checkpoint, or
    /// an erase the mount inferred).
    ///
    /// Requires: `b` is not in a free heap (whose order is by erase count): a mount adopts
    /// counts before it fills the heaps.
    pub fn adopt_erase_count(&mut self, b: u32, count: u32) {
        debug_assert!(
            self.state[b as usize] != BState::Free
                || self.dies[self.die_of(b) as usize].free.is_empty(),
            "block {b}: erase count changed while possibly in its die's free heap"
        );
        self.erase.set(b as usize, count);
    }

    /// One more erase of block `b` in the mirror (the chip just erased it).
    pub(super) fn count_erase(&mut self, b: u32) {
        self.erase.set(b as usize, self.erase[b as usize] + 1);
    }

    /// A block-level kernel erased block `b` of its own pool: `Free` to the substrate,
    /// which does not index it (the kernel keeps its own free list).
    ///
    /// Requires: `b` was the kernel's (`Open`, `Full` or `Free`) and is out of the index.
    pub fn release_erased(&mut self, b: u32) {
        let from = self.state[b as usize];
        debug_assert!(
            matches!(from, BState::Open | BState::Full | BState::Free),
            "block {b} released from {from:?}"
        );
        debug_assert!(!self.indexed(b), "block {b} released inside the full index");
        self.state.set(b as usize, BState::Free);
    }

    /// Keeps writing block `b` after the substrate closed it (a mount resumes the frontier
    /// block it found: [`resume_frontier`](Self::resume_frontier)): `Open`, out of the index.
    ///
    /// Requires: `b` is `Open` or `Full`.
    fn reopen(&mut self, b: u32) {
        let from = self.state[b as usize];
        debug_assert!(
            matches!(from, BState::Open | BState::Full),
            "block {b} reopened from {from:?}"
        );
        if from == BState::Full && self.indexed(b) {
            self.index_remove(b);
        }
        self.state.set(b as usize, BState::Open);
    }

    /// Resumes block `b` as `die`'s frontier of `stream` at page `wp` (a mount found it
    /// partly written): `Open`, out of the index, with `seqs` the sequence numbers of its
    /// pages (what sealing reads).
    ///
    /// Requires: `b` is on `die`, `Open` or `Full`; the frontier slot is empty; `seqs` has a
    /// block's pages.
    pub fn resume_frontier(&mut self, die: usize, stream: usize, b: u32, wp: u32, seqs: &[u64]) {
        debug_assert_eq!(
            self.die_of(b) as usize,
            die,
            "block {b} resumed on another die"
        );
        debug_assert!(
            self.dies[die].frontier[stream].is_none(),
            "die {die}: frontier {stream} resumed while open"
        );
        debug_assert_eq!(seqs.len(), self.ppb as usize, "a block's sequence numbers");
        self.reopen(b);
        self.dies[die].frontier[stream] = Some(super::Frontier { block: b, next: wp });
        let base = (die * 2 + stream) * self.ppb as usize;
        self.fseq[base..base + self.ppb as usize].copy_from_slice(seqs);
    }

    /// Returns block `b` to its die's free heap (a running volume: its erase done).
    ///
    /// Requires: the move to `Free` is the lifecycle's (from `Dirty` or `Region`).
    pub fn push_free(&mut self, b: u32) {
        self.set_state(b, BState::Free);
        self.heap_push(b);
    }

    /// Adopts block `b` as free (a mount found it so) and puts it in its die's heap.
    ///
    /// Requires: `b` is not already in a heap (a mount adopts each block once).
    pub fn adopt_free(&mut self, b: u32) {
        debug_assert!(
            !self.indexed(b),
            "block {b} adopted free inside the full index"
        );
        self.state.set(b as usize, BState::Free);
        self.heap_push(b);
    }

    /// Puts free block `b` (state `Free`) in its die's heap.
    pub(super) fn heap_push(&mut self, b: u32) {
        let d = self.die_of(b) as usize;
        self.dies[d].free.push(Reverse((self.erase[b as usize], b)));
    }

    /// Checks the substrate's invariants (see the module docs); `Err` names the first one
    /// broken. Costs a pass over every block: for tests and debug builds.
    pub fn verify(&self) -> Result<(), Invariant> {
        self.verify_structure().map_err(Invariant::Structure)?;
        self.verify_erase_counts().map_err(Invariant::Mirror)
    }

    /// The structural part of [`verify`](Substrate::verify).
    fn verify_structure(&self) -> Result<(), String> {
        let in_heap = self.verify_heaps()?;
        let in_index = self.verify_index()?;
        self.verify_states(&in_heap, &in_index)?;
        self.verify_frontiers_and_jobs()
    }

    /// Free heaps: each `Free` block exactly once, with its erase count, on its die.
    /// Returns which blocks are in one.
    fn verify_heaps(&self) -> Result<Vec<bool>, String> {
        let nblocks = self.state.len();
        let mut in_heap = vec![false; nblocks];
        for (d, die) in self.dies.iter().enumerate() {
            for &Reverse((ec, b)) in die.free.iter() {
                let i = b as usize;
                if in_heap[i] {
                    return Err(format!("block {b} twice in the free heaps"));
                }
                in_heap[i] = true;
                if self.state[i] != BState::Free {
                    return Err(format!("block {b} in a free heap but {:?}", self.state[i]));
                }
                if self.die_of(b) as usize != d {
                    return Err(format!("block {b} in the free heap of die {d}"));
                }
                if ec != self.erase[i] {
                    return Err(format!(
                        "block {b} free with erase count {ec}, table says {}",
                        self.erase[i]
                    ));
                }
            }
        }
        Ok(in_heap)
    }

    /// The full-block index: consistent lists, each block in the bucket of its die and
    /// valid count. Returns which blocks are in it.
    fn verify_index(&self) -> Result<Vec<bool>, String> {
        let nblocks = self.state.len();
        let mut in_index = vec![false; nblocks];
        for (h, &first) in self.head.iter().enumerate() {
            let mut b = first;
            let mut prev = NIL;
            let mut steps = 0;
            while b != NIL {
                let i = b as usize;
                steps += 1;
                if steps > nblocks || in_index[i] {
                    return Err(format!("full-block index list {h} loops at block {b}"));
                }
                in_index[i] = true;
                if self.prev[i] != prev {
                    return Err(format!("block {b}: index prev link broken"));
                }
                if self.bucket(b) != h {
                    return Err(format!(
                        "block {b} indexed under bucket {h}, its die and valid count give {}",
                        self.bucket(b)
                    ));
                }
                prev = b;
                b = self.next[i];
            }
        }
        Ok(in_index)
    }

    /// Every block: `Free` exactly when in a heap, `Full` exactly when indexed, and a valid
    /// count that fits its block and its state.
    fn verify_states(&self, in_heap: &[bool], in_index: &[bool]) -> Result<(), String> {
        let (nblocks, ppb) = (self.state.len(), self.ppb);
        for b in 0..nblocks {
            let st = self.state[b];
            if (st == BState::Free) != in_heap[b] {
                return Err(format!(
                    "block {b} is {st:?}; in a free heap: {}",
                    in_heap[b]
                ));
            }
            if (st == BState::Full) != in_index[b] {
                return Err(format!(
                    "block {b} is {st:?}; in the full index: {}",
                    in_index[b]
                ));
            }
            if self.valid[b] > ppb {
                return Err(format!("block {b} counts {} valid pages", self.valid[b]));
            }
            if matches!(
                st,
                BState::Free | BState::Dirty | BState::Region | BState::Map
            ) && self.valid[b] != 0
            {
                return Err(format!(
                    "{st:?} block {b} counts {} valid pages",
                    self.valid[b]
                ));
            }
        }
        Ok(())
    }

    /// Frontiers and jobs (see the comments inside).
    fn verify_frontiers_and_jobs(&self) -> Result<(), String> {
        let (nblocks, ppb) = (self.state.len(), self.ppb);
        // Frontiers: a live frontier (next < pages per block) is an Open block of its die,
        // each block at most once; an exhausted one (next = pages per block, dropped at the
        // next allocation) still points at its die's block, which became Full when its
        // last page was programmed (and may have moved on: collected, retired).
        let mut frontier_of = vec![false; nblocks];
        for (d, die) in self.dies.iter().enumerate() {
            for f in die.frontier.iter().flatten() {
                let i = f.block as usize;
                if i >= nblocks || self.die_of(f.block) as usize != d || f.next > ppb {
                    return Err(format!(
                        "frontier of die {d} at block {} page {}",
                        f.block, f.next
                    ));
                }
                if f.next == ppb {
                    if matches!(
                        self.state[i],
                        BState::Free | BState::Open | BState::Region | BState::Map
                    ) {
                        return Err(format!(
                            "exhausted frontier of die {d} at {:?} block {}",
                            self.state[i], f.block
                        ));
                    }
                    continue;
                }
                if frontier_of[i] {
                    return Err(format!("block {} is two frontiers", f.block));
                }
                frontier_of[i] = true;
                if self.state[i] != BState::Open {
                    return Err(format!(
                        "frontier of die {d} at {:?} block {}",
                        self.state[i], f.block
                    ));
                }
            }
            if let Some(j) = die.gc {
                if self.state[j.victim as usize] != BState::Collecting {
                    return Err(format!(
                        "GC victim {} is {:?}",
                        j.victim, self.state[j.victim as usize]
                    ));
                }
            }
            for j in &die.background {
                let want = if j.erase {
                    BState::Collecting
                } else {
                    BState::Retiring
                };
                if self.state[j.victim as usize] != want {
                    return Err(format!(
                        "{:?} job on block {} in state {:?}",
                        j.cause, j.victim, self.state[j.victim as usize]
                    ));
                }
            }
            for p in &die.dirty {
                if self.state[p.block as usize] != BState::Dirty {
                    return Err(format!(
                        "pending erase of block {} in state {:?}",
                        p.block, self.state[p.block as usize]
                    ));
                }
            }
        }
        for (b, &is_frontier) in frontier_of.iter().enumerate() {
            if self.state[b] == BState::Open && !is_frontier {
                return Err(format!("block {b} is open but no frontier"));
            }
        }
        Ok(())
    }

    /// Checks that no GC or background job has moved its cursors past a page it still has
    /// to copy (finishing the job would erase that page's only copy). `valid(p)` is the
    /// kernel's view of flat page `p`: `Some(critical)` while it holds the current copy of
    /// a logical page. An ascending job has copied every valid page below `next`; another
    /// copy order every non-critical one below `next` and every critical one below
    /// `next_critical`.
    pub fn verify_job_cursors(&self, valid: impl Fn(u32) -> Option<bool>) -> Result<(), String> {
        for die in &self.dies {
            for j in die.gc.iter().chain(die.background.iter()) {
                let base = j.victim * self.ppb;
                for page in 0..self.ppb {
                    let Some(critical) = valid(base + page) else {
                        continue;
                    };
                    let cursor = if critical && !self.ascending {
                        j.next_critical
                    } else {
                        j.next
                    };
                    if page < cursor {
                        return Err(format!(
                            "{:?} job on block {} is past its valid page {page} (cursor {cursor})",
                            j.cause, j.victim
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks the erase-count mirror against the chip's counters (no I/O: the chip's block
    /// table, a test oracle).
    pub fn verify_erase_counts(&self) -> Result<(), String> {
        for b in 0..self.state.len() as u32 {
            if self.state[b as usize] == BState::Bad {
                continue;
            }
            let info = self
                .ctl
                .chip()
                .block_info(self.block_addr(b))
                .map_err(|e| format!("{e}"))?;
            if info.status == BlockStatus::Good && info.erase_count != self.erase[b as usize] {
                return Err(format!(
                    "block {b}: erase count {} in the table, {} on the chip",
                    self.erase[b as usize], info.erase_count
                ));
            }
        }
        Ok(())
    }
}
