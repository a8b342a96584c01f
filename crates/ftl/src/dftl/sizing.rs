//! Sizing from the geometry and the configuration alone (so that format, mount and the
//! digest store's whole-block list agree): the volume, the metadata units, the partitions.

use super::{DftlConfig, MetaMode, BIT_ENTRY, PMT_ENTRY};
use alloc::vec::Vec;

/// The LSB pages of a block (every page on one-bit-per-cell chips): the slots of an
/// SLC-mode metadata block.
pub(crate) fn lsb_pages(chip: &nand::ChipConfig) -> Vec<u32> {
    let ppb = chip.geometry.pages_per_block;
    if chip.cell == nand::CellType::Slc {
        return (0..ppb).collect();
    }
    match nand::PairingTable::new(chip.layout, chip.cell, ppb) {
        Ok(t) => (0..ppb)
            .filter(|&p| t.kind(p) == nand::BitKind::Lsb)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The volume's and the partitions' sizes: from the geometry and the configuration
/// alone, so that format, mount and the digest store's whole-block list agree.
pub(crate) struct Sizes {
    pub(crate) logical_blocks: u64,
    pub(crate) lpns: u64,
    pub(crate) pmt_per_unit: u64,
    pub(crate) bit_per_unit: u64,
    pub(crate) pmt_units: u64,
    pub(crate) bit_units: u64,
    pub(crate) part_len: [u32; 6],
}

impl Sizes {
    /// `log`: SPFTL_log (its logging partitions sized like the partitions they log for:
    /// at most one live log per unit; the GXT-log partition `gxt_blocks` long).
    pub(crate) fn of(
        nblocks: u64,
        ppb: u32,
        slots: u64,
        unit: usize,
        log: bool,
        cfg: &DftlConfig,
    ) -> Sizes {
        let logical_blocks = libm::floor(nblocks as f64 * (1.0 - cfg.overprovision)) as u64;
        let lpns = logical_blocks * ppb as u64;
        let pmt_per_unit = (unit / PMT_ENTRY) as u64;
        let bit_per_unit = (unit / BIT_ENTRY) as u64;
        let pmt_units = lpns.div_ceil(pmt_per_unit.max(1));
        let bit_units = nblocks.div_ceil(bit_per_unit.max(1));
        let part_blocks = |units: u64| -> u32 {
            libm::ceil(units.div_ceil(slots.max(1)) as f64 * (1.0 + cfg.meta_spare)) as u32 + 2
        };
        Sizes {
            logical_blocks,
            lpns,
            pmt_per_unit,
            bit_per_unit,
            pmt_units,
            bit_units,
            part_len: [
                cfg.gxt_blocks,
                part_blocks(pmt_units),
                part_blocks(bit_units),
                if log { part_blocks(pmt_units) } else { 0 },
                if log { part_blocks(bit_units) } else { 0 },
                if log { cfg.gxt_blocks } else { 0 },
            ],
        }
    }
}

/// The metadata partitions' blocks (flat indices from 0) of a chip and configuration:
/// what a digest-mode store keeps whole.
pub fn metadata_blocks(chip: &nand::ChipConfig, mode: MetaMode, cfg: &DftlConfig) -> Vec<u32> {
    let g = chip.geometry;
    let unit = match mode {
        MetaMode::Page | MetaMode::Log => g.page_size as usize,
        MetaMode::Subpage => g.subpage_size(),
    };
    let sz = Sizes::of(
        g.total_blocks() as u64,
        g.pages_per_block,
        lsb_pages(chip).len() as u64,
        unit,
        mode == MetaMode::Log,
        cfg,
    );
    let n: u32 = sz.part_len.iter().sum();
    (0..n.min(g.total_blocks())).collect()
}

/// What `plan` sized.
pub(crate) struct Plan {
    pub unit: usize,
    pub log_unit: usize,
    pub lsb: Vec<u32>,
    pub lpns: u32,
    pub pmt_per_unit: u32,
    pub bit_per_unit: u32,
    pub pmt_units: u32,
    pub bit_units: u32,
    pub part_len: [u32; 6],
    pub cpmt: usize,
    pub cbit: usize,
}
