//! The sector codes a crash test's cases share.

use controller::Controller;
use nand::{ConstantRber, RamStorage};
use std::fmt;

/// Sector codes shared by a configuration's cases. A code is a pure function of the
/// sector size and t, so sharing one changes no result; building them was a fifth of a
/// crash test's time (each case formats a new controller, and FLARES's strengths need a
/// code each).
#[derive(Clone, Default)]
pub(super) struct CodeCache(std::sync::Arc<std::sync::Mutex<Codes>>);

/// A sector size and the codes for it, by strength (index t).
type Codes = (usize, Vec<Option<std::sync::Arc<ecc::Bch>>>);

impl fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let built = g.1.iter().filter(|c| c.is_some()).count();
        write!(f, "CodeCache({built} codes of {}-byte sectors)", g.0)
    }
}

impl CodeCache {
    /// Gives `ctl` the codes built so far (for its sector size).
    pub(super) fn lend(&self, ctl: &mut Controller<RamStorage, ConstantRber>) {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ctl.adopt_codes(g.0, &g.1);
    }

    /// Keeps the codes `ctl` built (the first sector size seen; others are not kept).
    pub(super) fn keep(&self, ctl: &Controller<RamStorage, ConstantRber>) {
        let size = ctl.built_codes().0;
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.1.is_empty() {
            g.0 = size;
        }
        if g.0 == size {
            ctl.share_codes(&mut g.1);
        }
    }
}
