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
    /// The entry of `lpn` if it is resident, without I/O.
    fn peek(&self, lpn: u64) -> Option<u32>;
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
