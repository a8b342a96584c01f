//! Helpers shared by the test modules.

use ftl::Ftl;
use nand::ChipConfig;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

/// `preset` cut to `blocks_per_plane` blocks per plane, seeded, with no wear failures and
/// no factory-bad blocks (a test of timing or placement that no bad block may disturb).
pub fn healthy_chip(preset: &str, blocks_per_plane: u32, seed: u64) -> ChipConfig {
    let mut cfg = ChipConfig::preset(preset).unwrap();
    cfg.geometry.blocks_per_plane = blocks_per_plane;
    cfg.reliability.wear_fail_rate = 0.0;
    cfg.reliability.wear_fail_growth = 0.0;
    cfg.reliability.factory_bad_rate = 0.0;
    cfg.seed = seed;
    cfg
}

/// The time the operations of the last call took on the (single) die.
pub fn took(dev: &mut impl Ftl) -> u64 {
    let mut ops = Vec::new();
    dev.take_ops(&mut ops);
    ops_time(&ops)
}

/// The time `ops` take one after another on one die.
pub fn ops_time(ops: &[ftl::FlashOp]) -> u64 {
    ops.iter().map(|o| o.array.0 + o.transfer.0 + o.ecc.0).sum()
}

/// Where a stream of test writes goes.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// Uniformly at random.
    Random,
    /// Every write to one block's worth of pages.
    HotBlock,
    /// A sequential fill, then writes that rarely touch the same page twice.
    Cold,
    /// Sequential fills, one after another.
    Sequential,
    /// Hot and cold writes alternating.
    Alternating,
}

/// The logical page of write `i` of `shape` on `n` pages, `ppb` pages per block.
pub fn next_lpn(shape: Shape, i: u64, n: u64, ppb: u64, rng: &mut ChaCha8Rng) -> u64 {
    match shape {
        Shape::Random => rng.next_u64() % n,
        Shape::HotBlock => rng.next_u64() % ppb.min(n),
        Shape::Cold => {
            if i < n {
                i
            } else {
                // Far apart: a stride coprime with n.
                (i * 7919) % n
            }
        }
        Shape::Sequential => i % n,
        Shape::Alternating => {
            if i.is_multiple_of(2) {
                rng.next_u64() % (n / 16).max(1)
            } else {
                rng.next_u64() % n
            }
        }
    }
}
