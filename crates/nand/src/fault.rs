//! Power cuts and seeded randomness.
//!
//! A [`CutMode`] armed on a chip fires at a chosen operation. From then on every operation
//! fails with [`NandError::PowerLoss`](crate::NandError::PowerLoss) until
//! [`Chip::power_on`](crate::Chip::power_on). What the cut leaves behind depends on the mode
//! and on the operation it hit:
//!
//! | mode | program | erase | read |
//! |---|---|---|---|
//! | `Before` | nothing happens | nothing happens | nothing |
//! | `After` | the page is programmed | the block is erased | the read counts (disturb) |
//! | `TornProgram` | a prefix of the page image lands; the rest stays erased (`Erased`) or takes random bits (`Random`) | as `Before` | as `Before` |
//! | `InterruptedErase` | as `Before` | cells are partly erased: programmed pages read back with random bits set; the block must be erased again | as `Before` |
//! | `PairedPage` | on an upper (CSB/MSB) page of a multi-level block: the page is torn (random) **and** a random span of each lower page on its word line is scrambled; elsewhere as `Before` | as `Before` | as `Before` |
//!
//! In every mode the interrupted operation itself returns `PowerLoss`: the caller never
//! learns whether it completed, as on real hardware. The [`CutRecord`] says what happened.

use crate::addr::{BlockAddr, PhysAddr};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// What the rest of a torn page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TornFill {
    /// Still erased (0xFF).
    Erased,
    /// Random partially-programmed bits.
    Random,
}

/// How a power cut interrupts the operation it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutMode {
    /// Power fails before the operation starts.
    Before,
    /// Power fails right after the operation completes.
    After,
    /// A program is cut short.
    TornProgram(TornFill),
    /// An erase is cut short.
    InterruptedErase,
    /// An upper-page program is cut short and damages its lower page(s).
    PairedPage,
}

impl CutMode {
    /// Every mode, for harnesses that try them all.
    pub const ALL: [CutMode; 6] = [
        CutMode::Before,
        CutMode::After,
        CutMode::TornProgram(TornFill::Erased),
        CutMode::TornProgram(TornFill::Random),
        CutMode::InterruptedErase,
        CutMode::PairedPage,
    ];

    /// Short stable name (used in replay ids).
    pub const fn name(self) -> &'static str {
        match self {
            CutMode::Before => "before",
            CutMode::After => "after",
            CutMode::TornProgram(TornFill::Erased) => "torn-erased",
            CutMode::TornProgram(TornFill::Random) => "torn-random",
            CutMode::InterruptedErase => "interrupted-erase",
            CutMode::PairedPage => "paired-page",
        }
    }

    /// Parses a [`name`](CutMode::name).
    pub fn from_name(name: &str) -> Option<CutMode> {
        CutMode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The operation a cut hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutTarget {
    /// A page or subpage read.
    Read(PhysAddr),
    /// A page, partial-page or subpage program.
    Program(PhysAddr),
    /// A block erase.
    Erase(BlockAddr),
}

/// What a cut left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutEffect {
    /// The operation did not start.
    NotStarted,
    /// The operation completed.
    Completed,
    /// `landed` bytes of the programmed region landed before power failed.
    Torn {
        /// Bytes of the programmed region (data then spare) that landed.
        landed: usize,
    },
    /// The erase was interrupted; `pages` programmed pages now hold partly erased bits.
    PartialErase {
        /// Pages whose content was damaged.
        pages: u32,
    },
    /// An upper page was torn and `lower_pages` lower pages on its word line scrambled.
    PairedCorruption {
        /// Lower pages damaged.
        lower_pages: u32,
    },
}

/// The account of a power cut, for test reports and replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutRecord {
    /// The chip's operation number the cut fired at (1-based).
    pub op: u64,
    /// The mode armed.
    pub mode: CutMode,
    /// The operation hit.
    pub target: CutTarget,
    /// What happened to it.
    pub effect: CutEffect,
}

/// Purposes of derived random streams (kept stable: they define the chip's behaviour).
pub(crate) mod stream {
    pub const FACTORY_BAD: u64 = 1;
    pub const WEAR_FAIL: u64 = 2;
    pub const CUT: u64 = 3;
}

/// SplitMix64 finaliser: mixes words into well-distributed seeds.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random stream determined by the chip seed and the event it serves, so that the chip's
/// random choices do not depend on how many other random choices came before (and so stay
/// the same across a reopen of a file image).
pub(crate) fn rng_for(seed: u64, words: &[u64]) -> ChaCha8Rng {
    let mut h = mix(seed ^ 0x6e61_6e64_6c61_6221);
    for &w in words {
        h = mix(h ^ w.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }
    ChaCha8Rng::seed_from_u64(h)
}

/// A uniform draw in [0, 1).
pub(crate) fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform draw in [0, n) (n > 0).
pub(crate) fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}
