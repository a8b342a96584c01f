//! The test tier: `NANDLAB_TEST_TIER=fast` runs the property tests at a tenth of their case
//! counts (at least 16) for the inner loop; unset (the full tier: README's command, CI) runs them in full.

/// `full` cases, or a tenth of them in the fast tier.
#[allow(dead_code)]
pub fn cases(full: u32) -> u32 {
    if std::env::var("NANDLAB_TEST_TIER").is_ok_and(|t| t == "fast") {
        (full / 10).max(16).min(full)
    } else {
        full
    }
}
