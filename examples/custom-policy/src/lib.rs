//! Policies of your own, outside nandlab's crates: a GC victim policy and a placement
//! policy written against the public `ftl` API and registered by name, so experiment files
//! and sweep axes can name them beside the built-in ones (see `src/main.rs` for the sweep
//! and `docs/guide/custom-policy.md` for the walk-through).

use ftl::policy::{Placement, Registry};
use ftl::{Candidate, DataClass, FtlError, SelectContext, VictimPolicy};

/// FIFO cleaning: the full block written longest ago, whatever its valid pages (the
/// cleaner of early log-structured file systems). Ties go to the fewer valid pages, then
/// the lower block number, so the choice is deterministic.
#[derive(Debug, Clone, Copy, Default)]
pub struct OldestFirst;

impl VictimPolicy for OldestFirst {
    fn name(&self) -> &'static str {
        "oldest-first"
    }

    fn select(
        &self,
        _ctx: &SelectContext,
        candidates: &mut dyn Iterator<Item = Candidate>,
    ) -> Option<u32> {
        candidates
            .min_by_key(|c| (c.last_write, c.valid, c.block))
            .map(|c| c.block)
    }
}

/// Logical pages per stripe of [`ByAddress`].
pub const STRIPE_PAGES: u64 = 64;

/// Static placement by address: logical pages `[k·64, (k+1)·64)` go to die `k mod dies`
/// first (the FTL tries the other dies after it when that one has no room). A die's load
/// follows the addresses written, as in a controller that maps address ranges to dies.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByAddress;

impl Placement for ByAddress {
    fn name(&self) -> &'static str {
        "by-address"
    }

    fn host_die(&mut self, dies: usize, lpn: u64, class: DataClass) -> usize {
        self.peek_die(dies, lpn, class)
    }

    fn peek_die(&self, dies: usize, lpn: u64, _class: DataClass) -> usize {
        ((lpn / STRIPE_PAGES) % dies.max(1) as u64) as usize
    }
}

/// A registry with this crate's policies: victim `oldest-first`, placement `by-address`.
pub fn registry() -> Result<Registry, FtlError> {
    let mut r = Registry::new();
    r.register_victim("oldest-first", || Box::new(OldestFirst))?;
    r.register_placement("by-address", || Box::new(ByAddress))?;
    Ok(r)
}
