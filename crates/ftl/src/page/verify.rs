//! The page kernel's invariants ([`PageFtl::verify`]): the substrate's, the checkpoint
//! region's and the stepped checkpoint's, the map against the reverse map and the valid
//! counts, and no GC job's cursor past a page it has yet to copy.

use super::map::MapStore;
use super::{PageFtl, INVALID, LOST};
use crate::substrate::BState;
use crate::Invariant;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use nand::{ErrorModel, Storage};

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Checks the volume's invariants: the substrate's (block states, free heaps, full-block
    /// index, frontiers, jobs, erase counts) and the map's — `l2p` and `p2l` are inverse
    /// on every mapped page, every mapped page lies in a block that holds data (open, full,
    /// being collected or retiring), every block's valid count is the number of mapped
    /// pages in it, no GC job's cursor is past a page it has yet to copy, and no die holds
    /// more valid pages outside its young blocks than its young allowance was sized by. A pass over
    /// the whole map: for tests and debug builds.
    pub fn verify(&self) -> Result<(), Invariant> {
        self.s.verify()?;
        self.region.verify(&self.s).map_err(Invariant::Structure)?;
        self.verify_steps().map_err(Invariant::Structure)?;
        self.s.verify_settled().map_err(Invariant::Structure)?;
        self.verify_map().map_err(Invariant::Structure)?;
        if let super::map::MapSlot::Paged(p) = &self.map {
            p.verify(&self.s).map_err(Invariant::Structure)?;
        }
        self.s
            .verify_job_cursors(|p| {
                use crate::substrate::gc::Kernel;
                self.owner(p).map(|lpn| self.critical(lpn))
            })
            .map_err(Invariant::Structure)
    }

    /// The map's part of [`verify`](PageFtl::verify).
    fn verify_map(&self) -> Result<(), String> {
        if self.map.len() != self.logical {
            return Err(format!(
                "map has {} entries for {} pages",
                self.map.len(),
                self.logical
            ));
        }
        let mut valid = vec![0u32; self.s.state.len()];
        // No critical page in an LSB page (AP), for placements that promise it, but the
        // counted lapses of a real-time pacing (`Substrate::lapsed`).
        let protect = self.s.placement.protects_critical();
        if self.critical.len() as u64 != self.logical.div_ceil(64) {
            return Err(format!(
                "the critical-page bitmap has {} words for {} pages",
                self.critical.len(),
                self.logical
            ));
        }
        for lpn in 0..self.logical {
            let Some(p) = self.map.audit(lpn) else {
                return Err(format!("logical page {lpn} has no map entry"));
            };
            if p == INVALID || p == LOST {
                continue;
            }
            if p as usize >= self.p2l.len() || self.p2l[p as usize] != lpn as u32 {
                return Err(format!(
                    "logical page {lpn} maps to {p}, which maps back elsewhere"
                ));
            }
            let b = self.s.block_of(p);
            if protect
                && self.is_critical(lpn)
                && !self.s.slot(p).reliable()
                && !self.s.is_lapsed(p)
            {
                return Err(format!(
                    "critical logical page {lpn} sits in page {} of block {b}, an unreliable ({:?}) page",
                    p % self.s.ppb(),
                    self.s.slot(p).bit
                ));
            }
            let st = self.s.state[b as usize];
            if !matches!(
                st,
                BState::Open | BState::Full | BState::Collecting | BState::Retiring
            ) {
                return Err(format!("logical page {lpn} maps into {st:?} block {b}"));
            }
            valid[b as usize] += 1;
        }
        self.verify_replicas(&mut valid)?;
        for (p, &l) in self.p2l.iter().enumerate() {
            if l != INVALID
                && self.map.audit(l as u64).is_some_and(|m| m != p as u32)
                && !self.is_replica(l, p as u32)
            {
                return Err(format!(
                    "physical page {p} claims logical page {l}, which maps elsewhere"
                ));
            }
        }
        for (b, (&counted, &want)) in self.s.valid.iter().zip(&valid).enumerate() {
            if counted != want {
                return Err(format!(
                    "block {b} counts {counted} valid pages, the map has {want}"
                ));
            }
        }
        Ok(())
    }
}
