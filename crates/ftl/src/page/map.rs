//! Map stores: where the page kernel keeps its logical-to-physical map.
//!
//! [`RamMap`] (today's store) holds every entry in RAM, 4 bytes per logical page. A
//! demand-cached store (DFTL's CPMT over map pages in flash) keeps a subset and loads the
//! map page holding an entry on a miss — a charged flash read through the substrate — and
//! writes back what it evicts; the trait's signatures carry the substrate and the time for
//! that. Entries are flat physical page indices, or `INVALID` (unmapped) / `LOST`.

use crate::substrate::Substrate;
use crate::FtlError;
use alloc::vec::Vec;
use nand::hint::prefetch;
use nand::{ErrorModel, Nanos, Storage};

/// A logical-to-physical map.
///
/// Contract: `get` returns the entry last `set` (or `INVALID` for a page never set since
/// `resize`); both may perform flash operations through `sub` (logged and charged there) and
/// fail only with what those fail with. `peek` never does I/O: it answers for resident
/// entries and `None` for the others. `resize` keeps entries below the new size and makes
/// new ones `INVALID`.
pub(crate) trait MapStore<S: Storage, M: ErrorModel>: Send {
    /// Name in reports.
    fn name(&self) -> &'static str;
    /// Entries (logical pages).
    fn len(&self) -> u64;
    /// Changes the number of entries.
    fn resize(&mut self, logical: u64);
    /// The entry of `lpn`.
    fn get(&mut self, sub: &mut Substrate<S, M>, now: Nanos, lpn: u64) -> Result<u32, FtlError>;
    /// Sets the entry of `lpn`.
    fn set(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<(), FtlError>;
    /// Sets the entry of `lpn` and returns the one it replaces (a write's lookup and
    /// update; a store may do both at once).
    fn replace(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<u32, FtlError> {
        let old = self.get(sub, now, lpn)?;
        self.set(sub, now, lpn, phys)?;
        Ok(old)
    }
    /// The entry of `lpn` if it is resident, without I/O.
    fn peek(&self, lpn: u64) -> Option<u32>;
    /// The entry of `lpn` without I/O, resident or not (for `verify` and inspection: a
    /// demand-cached store answers from the simulator's record of its flash units).
    fn audit(&self, lpn: u64) -> Option<u32> {
        self.peek(lpn)
    }
    /// A hint that `lpn`'s entry will be needed soon.
    fn prefetch(&self, _lpn: u64) {}
    /// Every entry, if the whole map is resident (what a checkpoint snapshot copies).
    fn entries(&self) -> Option<&[u32]>;
}

/// Today's store: the whole map in RAM.
#[derive(Debug, Clone, Default)]
pub(crate) struct RamMap(Vec<u32>);

impl<S: Storage, M: ErrorModel> MapStore<S, M> for RamMap {
    fn name(&self) -> &'static str {
        "ram"
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn resize(&mut self, logical: u64) {
        self.0.resize(logical as usize, super::INVALID);
    }

    #[inline]
    fn get(&mut self, _: &mut Substrate<S, M>, _: Nanos, lpn: u64) -> Result<u32, FtlError> {
        Ok(self.0[lpn as usize])
    }

    #[inline]
    fn set(
        &mut self,
        _: &mut Substrate<S, M>,
        _: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<(), FtlError> {
        self.0[lpn as usize] = phys;
        Ok(())
    }

    #[inline]
    fn replace(
        &mut self,
        _: &mut Substrate<S, M>,
        _: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<u32, FtlError> {
        Ok(core::mem::replace(&mut self.0[lpn as usize], phys))
    }

    #[inline]
    fn peek(&self, lpn: u64) -> Option<u32> {
        self.0.get(lpn as usize).copied()
    }

    #[inline]
    fn prefetch(&self, lpn: u64) {
        prefetch(&self.0, lpn as usize);
    }

    fn entries(&self) -> Option<&[u32]> {
        Some(&self.0)
    }
}

/// The map store a page kernel holds: today's RAM map inline (its lookups compile to plain
/// indexing on the hot paths), or any other store behind the trait.
pub(crate) enum MapSlot<S: Storage, M: ErrorModel> {
    /// [`RamMap`].
    Ram(RamMap),
    /// The demand-paged map ([`PagedMap`](super::paged::PagedMap)).
    Paged(alloc::boxed::Box<super::paged::PagedMap<S, M>>),
    /// Another store (a test's).
    #[cfg_attr(not(test), allow(dead_code))]
    Other(alloc::boxed::Box<dyn MapStore<S, M>>),
}

impl<S: Storage, M: ErrorModel> MapStore<S, M> for MapSlot<S, M> {
    fn name(&self) -> &'static str {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::name(m),
            MapSlot::Paged(m) => MapStore::<S, M>::name(&**m),
            MapSlot::Other(m) => m.name(),
        }
    }

    #[inline]
    fn len(&self) -> u64 {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::len(m),
            MapSlot::Paged(m) => MapStore::<S, M>::len(&**m),
            MapSlot::Other(m) => m.len(),
        }
    }

    fn resize(&mut self, logical: u64) {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::resize(m, logical),
            MapSlot::Paged(m) => MapStore::<S, M>::resize(&mut **m, logical),
            MapSlot::Other(m) => m.resize(logical),
        }
    }

    #[inline]
    fn get(&mut self, sub: &mut Substrate<S, M>, now: Nanos, lpn: u64) -> Result<u32, FtlError> {
        match self {
            MapSlot::Ram(m) => m.get(sub, now, lpn),
            MapSlot::Paged(m) => m.get(sub, now, lpn),
            MapSlot::Other(m) => m.get(sub, now, lpn),
        }
    }

    #[inline]
    fn set(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<(), FtlError> {
        match self {
            MapSlot::Ram(m) => m.set(sub, now, lpn, phys),
            MapSlot::Paged(m) => m.set(sub, now, lpn, phys),
            MapSlot::Other(m) => m.set(sub, now, lpn, phys),
        }
    }

    #[inline]
    fn replace(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        lpn: u64,
        phys: u32,
    ) -> Result<u32, FtlError> {
        match self {
            MapSlot::Ram(m) => m.replace(sub, now, lpn, phys),
            MapSlot::Paged(m) => m.replace(sub, now, lpn, phys),
            MapSlot::Other(m) => m.replace(sub, now, lpn, phys),
        }
    }

    #[inline]
    fn peek(&self, lpn: u64) -> Option<u32> {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::peek(m, lpn),
            MapSlot::Paged(m) => MapStore::<S, M>::peek(&**m, lpn),
            MapSlot::Other(m) => m.peek(lpn),
        }
    }

    #[inline]
    fn prefetch(&self, lpn: u64) {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::prefetch(m, lpn),
            MapSlot::Paged(m) => MapStore::<S, M>::prefetch(&**m, lpn),
            MapSlot::Other(m) => m.prefetch(lpn),
        }
    }

    fn audit(&self, lpn: u64) -> Option<u32> {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::peek(m, lpn),
            MapSlot::Paged(m) => m.audit(lpn),
            MapSlot::Other(m) => m.audit(lpn),
        }
    }

    fn entries(&self) -> Option<&[u32]> {
        match self {
            MapSlot::Ram(m) => MapStore::<S, M>::entries(m),
            MapSlot::Paged(m) => MapStore::<S, M>::entries(&**m),
            MapSlot::Other(m) => m.entries(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ftl, PageFtl, PageFtlConfig};
    use alloc::boxed::Box;
    use alloc::vec;
    use controller::{Controller, ControllerConfig};
    use nand::{Chip, ChipConfig, ConstantRber, Lpn, RamStorage};

    /// A store that keeps a few entries "cached" and charges a read (a real chip operation
    /// through the substrate's controller, logged as metadata) for every miss: the
    /// shape of a demand-cached map, to show the kernel goes through the store for every
    /// lookup and update and that such a store's I/O lands in the op log.
    struct Paged {
        all: Vec<u32>,
        cached: Vec<u64>,
        misses: u64,
    }

    impl<S: Storage, M: ErrorModel> MapStore<S, M> for Paged {
        fn name(&self) -> &'static str {
            "paged-test"
        }
        fn len(&self) -> u64 {
            self.all.len() as u64
        }
        fn resize(&mut self, logical: u64) {
            self.all.resize(logical as usize, super::super::INVALID);
        }
        fn get(
            &mut self,
            sub: &mut Substrate<S, M>,
            now: Nanos,
            lpn: u64,
        ) -> Result<u32, FtlError> {
            if !self.cached.contains(&lpn) {
                self.misses += 1;
                // A charged read stands in for the map page's (any block's header will do).
                sub.read_header(now, sub.blocks_per_die - 1, crate::Cause::Meta)?;
                self.cached.insert(0, lpn);
                self.cached.truncate(4);
            }
            Ok(self.all[lpn as usize])
        }
        fn set(
            &mut self,
            sub: &mut Substrate<S, M>,
            now: Nanos,
            lpn: u64,
            phys: u32,
        ) -> Result<(), FtlError> {
            self.get(sub, now, lpn)?;
            self.all[lpn as usize] = phys;
            Ok(())
        }
        fn peek(&self, lpn: u64) -> Option<u32> {
            self.all.get(lpn as usize).copied()
        }
        fn entries(&self) -> Option<&[u32]> {
            Some(&self.all)
        }
    }

    #[test]
    fn the_kernel_goes_through_its_map_store() {
        let mut cfg = ChipConfig::preset("tiny-slc").unwrap();
        cfg.geometry.blocks_per_plane = 32;
        let ctl: Controller<RamStorage, ConstantRber> = Controller::new(
            Chip::ram(cfg).unwrap(),
            ConstantRber(0.0),
            ControllerConfig::default(),
        )
        .unwrap();
        let fcfg = PageFtlConfig {
            over_provisioning: 0.3,
            ecc_t: 4,
            ..PageFtlConfig::default()
        };
        let store = Box::new(Paged {
            all: Vec::new(),
            cached: Vec::new(),
            misses: 0,
        });
        let mut dev = PageFtl::format_with_map(ctl, fcfg, store, Nanos::ZERO).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        let meta_reads =
            |d: &PageFtl<RamStorage, ConstantRber>| d.counters().reads[crate::Cause::Meta.index()];
        let before = meta_reads(&dev);
        let mut last = vec![0u8; n as usize];
        for v in 0..(4 * n) {
            let l = (v * 7) % n;
            let byte = (v % 251) as u8;
            dev.write(Nanos(v), Lpn::checked(l, n).unwrap(), &vec![byte; ps])
                .unwrap();
            last[l as usize] = byte;
        }
        dev.verify().unwrap();
        assert!(dev.counters().gc_victims > 0);
        // Misses were charged as metadata reads.
        assert!(meta_reads(&dev) > before + n);
        let mut buf = vec![0u8; ps];
        for l in 0..n {
            dev.read(Nanos(9), Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap();
            assert!(buf.iter().all(|&b| b == last[l as usize]), "lpn {l}");
        }
        let MapSlot::Other(m) = &dev.map else {
            panic!("the store given")
        };
        assert_eq!(m.name(), "paged-test");
    }
}
