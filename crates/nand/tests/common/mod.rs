//! Helpers shared by the nand integration tests.
#![allow(dead_code)]

pub mod image;

use nand::{BlockAddr, Chip, ChipConfig, PhysAddr};

pub fn config(preset: &str) -> ChipConfig {
    ChipConfig::preset(preset).expect("preset")
}

pub fn chip(preset: &str) -> Chip {
    Chip::ram(config(preset)).expect("chip")
}

pub fn block(chip: &Chip<impl nand::Storage>, index: u32) -> BlockAddr {
    chip.geometry().block_at(index).expect("block in range")
}

pub fn page(chip: &Chip<impl nand::Storage>, block_index: u32, page: u32) -> PhysAddr {
    block(chip, block_index).page(page).expect("page in range")
}

/// A deterministic data pattern for a tag.
pub fn pattern(len: usize, tag: u64) -> Vec<u8> {
    nand::pattern::bytes(len, tag)
}

pub fn buffers(chip: &Chip<impl nand::Storage>, tag: u64) -> (Vec<u8>, Vec<u8>) {
    let g = chip.geometry();
    (
        pattern(g.page_size as usize, tag),
        pattern(g.spare_size as usize, tag ^ 0xABCD),
    )
}

pub fn read_page(chip: &mut Chip<impl nand::Storage>, addr: PhysAddr) -> (Vec<u8>, Vec<u8>) {
    let g = *chip.geometry();
    let mut d = vec![0u8; g.page_size as usize];
    let mut s = vec![0u8; g.spare_size as usize];
    chip.read(nand::Nanos::ZERO, addr, &mut d, &mut s)
        .expect("read");
    (d, s)
}
