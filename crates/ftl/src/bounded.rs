//! Explicit caps on the loops whose end depends on progress rather than a counter (a GC
//! job's steps, a program retried on another block after a failure, an allocation that
//! opens blocks): every such loop states its cap where it runs, as TigerBeetle's rule asks.
//!
//! A cap is an upper bound the loop cannot reach on a correct volume (each iteration
//! consumes a finite resource: a page of a victim, a block of a die). Reaching it is a bug
//! or a volume damaged in a way no check caught: debug builds panic, release builds return
//! [`FtlError::Corrupt`] naming the loop rather than spin.

use crate::FtlError;

/// An iteration budget for one run of a loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cap {
    left: u64,
    what: &'static str,
}

impl Cap {
    /// At most `max` iterations of the loop `what` (its error message).
    #[inline]
    pub(crate) const fn new(max: u64, what: &'static str) -> Self {
        Self { left: max, what }
    }

    /// Counts one iteration: `Err` (and a panic in debug builds) past the cap.
    #[inline]
    pub(crate) fn tick(&mut self) -> Result<(), FtlError> {
        debug_assert!(self.left > 0, "loop past its cap: {}", self.what);
        match self.left.checked_sub(1) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(FtlError::Corrupt(self.what)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cap;

    #[test]
    fn a_cap_allows_exactly_its_iterations() {
        let mut c = Cap::new(2, "test loop");
        assert!(c.tick().is_ok());
        assert!(c.tick().is_ok());
    }

    #[test]
    #[cfg_attr(
        debug_assertions,
        should_panic(expected = "loop past its cap: test loop")
    )]
    fn past_the_cap_is_an_error() {
        let mut c = Cap::new(1, "test loop");
        c.tick().unwrap();
        assert!(matches!(
            c.tick(),
            Err(crate::FtlError::Corrupt("test loop"))
        ));
    }
}
