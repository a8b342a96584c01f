//! Helpers shared by the test modules.

use ftl::Ftl;
use nand::ChipConfig;

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
    ops.iter().map(|o| o.array.0 + o.transfer.0 + o.ecc.0).sum()
}
