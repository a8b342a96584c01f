//! Deliberate bugs, for testing the crash harness and the verdicts themselves (feature
//! `sabotage`; never part of a product build). A harness that stops catching any of these
//! has lost its teeth; the self-test in `crates/sim/tests/harness_self_test.rs` swaps each
//! recovery and GC bug in and requires the harness to report contract violations, and
//! `crates/sim/tests/flares_zone_sabotage.rs` swaps in the broken zone rule and requires
//! the `flares-alg2` comparison to fail.

/// Which bug the FTL carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sabotage {
    /// None: the real FTL.
    #[default]
    None,
    /// Roll-forward recovery skips the first block the allocator would have opened since
    /// the checkpoint (its pages are never found).
    SkipRecoveryBlock,
    /// GC erases a victim as soon as its pages are copied, without waiting for the copies'
    /// word lines to be sealed (an MLC paired-page cut can then destroy both copies).
    EraseVictimEarly,
    /// Recovery believes the OOB record of the pages at a block's write point without
    /// reading them in full and checking their data CRC (a torn page can win).
    NoTornCheck,
    /// GC erases a victim while a trim that superseded one of its pages is still only in
    /// RAM (a cut then loses the trim and the newer version it discarded: the older one
    /// comes back).
    EraseBeforeTrimLog,
    /// FLARES's Alg. 2 ignores the errors its window measured (the projection is the
    /// model's alone, whatever MIX says): a chip worse than the model is never flagged.
    ZoneIgnoresMeasuredErrors,
}
