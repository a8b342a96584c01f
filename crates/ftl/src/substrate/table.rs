//! [`Table`]: a per-block column that the whole crate reads and only the substrate writes.
//!
//! The block state and erase-count columns carry the substrate's invariants (a `Free` block
//! is in its die's heap exactly once, a `Full` one in the full-block index, the erase count
//! mirrors the chip's). Kernels read them by index like a slice; they change them only
//! through [`Substrate`](super::Substrate)'s mutators (`blocks.rs`), which state and
//! `debug_assert!` their preconditions.

use ::alloc::vec::Vec;
use core::ops::Deref;

/// A per-block column: a slice to read, written through `set` inside the substrate only.
#[derive(Debug, Clone)]
pub(crate) struct Table<T>(Vec<T>);

impl<T: Copy> Table<T> {
    /// `n` entries of `v`.
    pub(super) fn filled(v: T, n: usize) -> Self {
        Table(::alloc::vec![v; n])
    }

    /// Sets entry `i` (the substrate's mutators only: they assert the transition).
    #[inline]
    pub(super) fn set(&mut self, i: usize, v: T) {
        self.0[i] = v;
    }
}

impl<T> Deref for Table<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        &self.0
    }
}
