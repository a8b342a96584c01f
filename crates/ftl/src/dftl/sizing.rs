//! Sizing from the geometry and the configuration alone (so that format, mount and the
//! digest store's whole-block list agree): the volume, the metadata units, the partitions;
//! and `plan`, which checks the configuration against the chip (errors name the key).

use super::{
    gxt, DftlConfig, DftlFtl, MetaMode, BIT_ENTRY, CBIT_ENTRY_BYTES, CPMT_ENTRY_BYTES, PMT_ENTRY,
};
use crate::FtlError;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use controller::Controller;
use nand::{ErrorModel, Storage};

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
    /// at most one live log per unit — or `log_blocks` long; the GXT-log partition
    /// `gxt_blocks` long).
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
        // A logging partition: `log_blocks` long, or sized like the partition it logs for.
        let log_blocks = |units: u64| match (log, cfg.log_blocks) {
            (false, _) => 0,
            (true, 0) => part_blocks(units),
            (true, n) => n,
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
                log_blocks(pmt_units),
                log_blocks(bit_units),
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

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// Checks the configuration against the chip and sizes every structure.
    pub(crate) fn plan(
        ctl: &mut Controller<S, M>,
        mode: MetaMode,
        cfg: &DftlConfig,
    ) -> Result<Plan, FtlError> {
        let name = mode.scheme();
        let key = |k: &str| format!("[ftl.{name}] {k}");
        let chip = ctl.chip().config().clone();
        let g = chip.geometry;
        check_ranges(cfg, &key)?;
        ctl.layout(cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("{} = {}: {e}", key("ecc_t"), cfg.ecc_t)))?;
        let (unit, log_unit) = Self::unit_sizes(ctl, mode, cfg, &key)?;
        let ppb = g.pages_per_block;
        let lsb = lsb_pages(&chip);
        let slots = lsb.len() as u64;
        let nblocks = g.total_blocks() as u64;
        let sz = Sizes::of(nblocks, ppb, slots, unit, mode == MetaMode::Log, cfg);
        let lpns = sz.lpns;
        if lpns >= (1 << 31) {
            return Err(FtlError::Config(format!(
                "{lpns} logical pages exceed the kernel's 31-bit logical pages"
            )));
        }
        let meta = check_partitions(&sz, nblocks, slots, mode, cfg, &key)?;
        let (cpmt, cbit) = check_memory(cfg, mode, g.page_size as usize, unit, log_unit, &key)?;
        let plan = Plan {
            unit,
            log_unit,
            lsb,
            lpns: lpns as u32,
            pmt_per_unit: sz.pmt_per_unit as u32,
            bit_per_unit: sz.bit_per_unit as u32,
            pmt_units: sz.pmt_units as u32,
            bit_units: sz.bit_units as u32,
            part_len: sz.part_len,
            cpmt: cpmt as usize,
            cbit: cbit as usize,
        };
        let m = &cfg.memory;
        let gxt = gxt::encoded_len(&plan, nblocks as u32, cfg, mode == MetaMode::Log);
        if gxt > m.gxt as usize {
            return Err(FtlError::Config(format!(
                "{} = {} bytes cannot hold the GXT: {gxt} bytes ({} PMD and {} BID entries of 2 bytes (twice with SPFTL_log's LIDs), {} BSI and {} free-block entries, {meta} metadata blocks' subpage partitions)",
                key("memory.gxt"),
                m.gxt,
                plan.pmt_units,
                plan.bit_units,
                cfg.bsi_entries,
                cfg.free_queue
            )));
        }
        Ok(plan)
    }

    /// The metadata unit and the log unit in bytes: a page (`MetaMode::Page`), a subpage
    /// (`Subpage`), a page and a subpage log (`Log`); each checked against the chip.
    fn unit_sizes(
        ctl: &mut Controller<S, M>,
        mode: MetaMode,
        cfg: &DftlConfig,
        key: &dyn Fn(&str) -> String,
    ) -> Result<(usize, usize), FtlError> {
        let name = mode.scheme();
        let chip = ctl.chip().config().clone();
        let g = chip.geometry;
        let mut page_unit = || -> Result<usize, FtlError> {
            ctl.layout(cfg.meta_ecc_t).map_err(|e| {
                FtlError::Config(format!("{} = {}: {e}", key("meta_ecc_t"), cfg.meta_ecc_t))
            })?;
            Ok(g.page_size as usize)
        };
        let (unit, log_unit) = match mode {
            MetaMode::Page => {
                let u = page_unit()?;
                (u, u)
            }
            MetaMode::Subpage | MetaMode::Log => {
                let page = if mode == MetaMode::Log {
                    Some(page_unit()?)
                } else {
                    None
                };
                if g.subpages_per_page < 2 {
                    return Err(FtlError::Config(format!(
                        "scheme = \"{name}\" needs subpage programming: chip {} has geometry.subpages_per_page = 1",
                        chip.name
                    )));
                }
                ctl.subpage_layout(cfg.meta_ecc_t).map_err(|e| {
                    FtlError::Config(format!(
                        "{} = {}: a subpage of chip {} ({} data + {} spare bytes, geometry.subpages_per_page = {}) cannot hold it: {e}",
                        key("meta_ecc_t"),
                        cfg.meta_ecc_t,
                        chip.name,
                        g.subpage_size(),
                        g.subpage_spare_size(),
                        g.subpages_per_page
                    ))
                })?;
                let sub = g.subpage_size();
                (page.unwrap_or(sub), sub)
            }
        };
        Ok((unit, log_unit))
    }
}

/// The settings' own ranges (before any is checked against the chip).
fn check_ranges(cfg: &DftlConfig, key: &dyn Fn(&str) -> String) -> Result<(), FtlError> {
    if !(cfg.overprovision > 0.0 && cfg.overprovision < 0.5) {
        return Err(FtlError::Config(format!(
            "{} = {} must be in (0, 0.5)",
            key("overprovision"),
            cfg.overprovision
        )));
    }
    if !(cfg.meta_spare >= 0.0 && cfg.meta_spare <= 16.0) {
        return Err(FtlError::Config(format!(
            "{} = {} must be in [0, 16]",
            key("meta_spare"),
            cfg.meta_spare
        )));
    }
    if !(cfg.sp_weight > 0.0 && cfg.sp_weight <= 1.0) {
        return Err(FtlError::Config(format!(
            "{} = {} must be in (0, 1]",
            key("sp_weight"),
            cfg.sp_weight
        )));
    }
    if cfg.log_blocks == 1 {
        return Err(FtlError::Config(format!(
            "{} = 1: a logging partition needs a block to write while another is reclaimed (2 is the paper's one logging block and that one; 0 sizes it like the partition it logs for)",
            key("log_blocks")
        )));
    }
    if cfg.gxt_blocks < 2 {
        return Err(FtlError::Config(format!(
            "{} = {} must be at least 2",
            key("gxt_blocks"),
            cfg.gxt_blocks
        )));
    }
    if cfg.gc_threshold < 2 {
        return Err(FtlError::Config(format!(
            "{} = {} must be at least 2",
            key("gc_threshold"),
            cfg.gc_threshold
        )));
    }
    if cfg.bsi_entries == 0 || cfg.bsi_entries > 255 || cfg.free_queue == 0 || cfg.free_queue > 255
    {
        return Err(FtlError::Config(format!(
            "{} and {} must be in 1..=255",
            key("bsi_entries"),
            key("free_queue")
        )));
    }
    Ok(())
}

/// The metadata partitions fit the device, their units the GXT's 16-bit addresses, and the
/// user partition the volume; returns the metadata blocks.
fn check_partitions(
    sz: &Sizes,
    nblocks: u64,
    slots: u64,
    mode: MetaMode,
    cfg: &DftlConfig,
    key: &dyn Fn(&str) -> String,
) -> Result<u64, FtlError> {
    let user_blocks_logical = sz.logical_blocks;
    let [gb, pb, bb, plb, blb, glb] = sz.part_len.map(|x| x as u64);
    let meta = gb + pb + bb + plb + blb + glb;
    if meta >= nblocks {
        let logs = if mode == MetaMode::Log {
            format!(" + {plb} PMT-log + {blb} BIT-log + {glb} GXT-log")
        } else {
            alloc::string::String::new()
        };
        return Err(FtlError::Config(format!(
                "the metadata partitions ({gb} GXT + {pb} PMT + {bb} BIT{logs} blocks, {}) are larger than the device ({nblocks} blocks)",
                key("meta_spare")
            )));
    }
    for (n, what) in [(pb, "PMT"), (bb, "BIT"), (plb, "PMT-log"), (blb, "BIT-log")] {
        if n * slots > 0xFFFF {
            return Err(FtlError::Config(format!(
                    "the {what} partition ({n} blocks of {slots} units) exceeds the GXT's 16-bit unit addresses: lower {}",
                    key("meta_spare")
                )));
        }
    }
    let user = nblocks - meta;
    let need = user_blocks_logical + cfg.gc_threshold as u64 + 2;
    if user < need {
        return Err(FtlError::Config(format!(
                "{} = {}: the user partition has {user} blocks, the volume needs {need} ({user_blocks_logical} logical, {} to collect into, 2 spare) beside {meta} metadata blocks",
                key("overprovision"),
                cfg.overprovision,
                cfg.gc_threshold
            )));
    }
    Ok(meta)
}

/// The controller RAM budget: its parts fit its total and their minimum sizes; returns
/// the CPMT's and CBIT's entries.
fn check_memory(
    cfg: &DftlConfig,
    mode: MetaMode,
    page_size: usize,
    unit: usize,
    log_unit: usize,
    key: &dyn Fn(&str) -> String,
) -> Result<(u64, u64), FtlError> {
    let m = &cfg.memory;
    let sum = m.cpmt as u64
        + m.cbit as u64
        + m.gxt as u64
        + m.copyback as u64
        + m.page_buffer as u64
        + m.merge_buffer as u64;
    if sum > m.total as u64 {
        return Err(FtlError::Config(format!(
                "{}: cpmt + cbit + gxt + copyback + page_buffer + merge_buffer = {sum} bytes exceed total = {}",
                key("memory"),
                m.total
            )));
    }
    if mode == MetaMode::Log && (m.merge_buffer as usize) < log_unit {
        return Err(FtlError::Config(format!(
            "{}: merge_buffer = {} must hold a log subpage ({log_unit} bytes)",
            key("memory"),
            m.merge_buffer
        )));
    }
    if (m.copyback as usize) < page_size || (m.page_buffer as usize) < unit {
        return Err(FtlError::Config(format!(
                "{}: copyback must hold a page ({} bytes) and page_buffer a metadata unit ({unit} bytes)",
                key("memory"),
                page_size
            )));
    }
    let cpmt = m.cpmt / CPMT_ENTRY_BYTES;
    let cbit = m.cbit / CBIT_ENTRY_BYTES;
    if cpmt < 2 || cbit < 2 {
        return Err(FtlError::Config(format!(
                "{}: cpmt = {} and cbit = {} must hold at least two entries ({CPMT_ENTRY_BYTES} and {CBIT_ENTRY_BYTES} bytes each)",
                key("memory"),
                m.cpmt,
                m.cbit
            )));
    }
    Ok((cpmt as u64, cbit as u64))
}
