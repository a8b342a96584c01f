//! The test tier: `NANDLAB_TEST_TIER=fast` runs the property tests at a tenth of their case
//! counts (at least 16), and the longest plans shorter, for the inner loop; unset (the full
//! tier: README's command, CI) runs them in full.

/// Whether this is the fast tier.
pub fn fast() -> bool {
    std::env::var("NANDLAB_TEST_TIER").is_ok_and(|t| t == "fast")
}

/// `full` cases, or a tenth of them in the fast tier.
pub fn cases(full: u32) -> u32 {
    if fast() {
        (full / 10).max(16).min(full)
    } else {
        full
    }
}
