//! How the page kernel answers the substrate's GC machine ([`Kernel`]) and the recovery
//! procedures ([`Rebuildable`](super::recovery::Rebuildable)).

use super::map::MapStore;
use super::{snapshot, PageFtl, INVALID, LOST};
use crate::substrate::{Kernel, Substrate};
use crate::FtlError;
use alloc::vec::Vec;
use nand::{ErrorModel, Nanos, Storage};

impl<S: Storage, M: ErrorModel> super::recovery::Rebuildable for PageFtl<S, M> {
    fn load_checkpoint(&mut self, now: Nanos) -> Result<Option<snapshot::Loaded>, FtlError> {
        PageFtl::load_checkpoint(self, now)
    }

    fn resize(&mut self, logical: u64) -> Result<(), FtlError> {
        self.size_volume_to(Some(logical))
    }

    fn logical(&self) -> u64 {
        self.logical
    }

    #[inline]
    fn entry(&self, lpn: u64) -> u32 {
        self.map.peek(lpn).unwrap_or(INVALID)
    }

    #[inline]
    fn set_entry(&mut self, now: Nanos, lpn: u64, phys: u32) -> Result<(), FtlError> {
        self.map.set(&mut self.s, now, lpn, phys)
    }

    fn entry_ok(&self, phys: u32) -> bool {
        self.snapshot_entry_ok(phys)
    }

    fn rebuild_reverse(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.p2l.fill(INVALID);
        self.s.reset_valid();
        for lpn in 0..self.map.len() {
            let p = self.map.get(&mut self.s, now, lpn)?;
            if p == INVALID || p == LOST {
                continue;
            }
            if self.p2l[p as usize] != INVALID {
                // Two logical pages claim one physical page: only a forged or corrupted
                // image does this. Neither can be trusted to be right; report the second
                // as unreadable rather than serve another page's data.
                self.map.set(&mut self.s, now, lpn, LOST)?;
                continue;
            }
            self.p2l[p as usize] = lpn as u32;
            let b = self.s.block_of(p);
            self.s.adopt_valid(b, true);
        }
        Ok(())
    }

    fn set_critical(&mut self, lpn: u64, critical: bool) {
        PageFtl::set_critical(self, lpn, critical)
    }

    fn replica_limit(&self) -> usize {
        self.cfg.replicas as usize
    }

    fn install_replicas(&mut self, lpn: u64, version: u64, pages: Vec<u32>) {
        for &p in &pages {
            self.p2l[p as usize] = lpn as u32;
            let b = self.s.block_of(p);
            self.s.adopt_valid(b, true);
        }
        self.replicas
            .insert(lpn as u32, super::replica::ReplicaSet { version, pages });
    }

    fn checkpoint_gen(&self) -> u64 {
        self.region.cp.gen
    }
}

impl<S: Storage, M: ErrorModel> Kernel for PageFtl<S, M> {
    type S = S;
    type M = M;

    #[inline]
    fn sub(&self) -> &Substrate<S, M> {
        &self.s
    }

    #[inline]
    fn sub_mut(&mut self) -> &mut Substrate<S, M> {
        &mut self.s
    }

    #[inline]
    fn owner(&self, phys: u32) -> Option<u64> {
        let l = self.p2l[phys as usize];
        (l != INVALID).then_some(l as u64)
    }

    #[inline]
    fn critical(&self, lpn: u64) -> bool {
        self.is_critical(lpn)
    }

    #[inline]
    fn prefetch_owner(&self, phys: u32) -> bool {
        match self.p2l.get(phys as usize) {
            Some(&l) if l < LOST => {
                self.map.prefetch(l as u64);
                true
            }
            _ => false,
        }
    }

    #[inline]
    fn moved(&mut self, now: Nanos, lpn: u64, src: u32, dst: u32) -> Result<(), FtlError> {
        if !self.replicas.is_empty() && self.moved_replica(lpn, src, dst) {
            return Ok(());
        }
        self.map(now, lpn, dst, 0)
    }

    fn alternates(&self, lpn: u64, src: u32) -> Vec<u32> {
        if self.replicas.is_empty() {
            return Vec::new();
        }
        self.replicas_of_primary(lpn, src)
    }

    fn lost(&mut self, now: Nanos, lpn: u64, src: u32) -> Result<(), FtlError> {
        if self.lost_with_replicas(lpn, src) {
            return Ok(());
        }
        self.p2l[src as usize] = INVALID;
        self.map.set(&mut self.s, now, lpn, LOST)
    }

    fn before_erase(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.persist_trims(now)
    }

    fn oldest_pending_trim(&self) -> Option<u64> {
        self.pending_trims.first().map(|t| t.seq)
    }

    fn checkpoint(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.write_checkpoint(now)
    }
}
