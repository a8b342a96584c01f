//! Chip organisation: cell type and the channel / die / plane / block / page hierarchy.

use crate::addr::{BlockAddr, PhysAddr};
use crate::error::ConfigError;
use alloc::format;
use serde::{Deserialize, Serialize};

/// How many bits each cell stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    /// One bit per cell: every page is its own word line.
    Slc,
    /// Two bits per cell: each word line holds an LSB and an MSB page.
    Mlc,
    /// Three bits per cell: each word line holds an LSB, a CSB and an MSB page.
    Tlc,
}

impl CellType {
    /// Bits stored per cell (= pages per word line).
    pub const fn bits_per_cell(self) -> u32 {
        match self {
            CellType::Slc => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
        }
    }

    /// Lower-case name as used in configuration files.
    pub const fn name(self) -> &'static str {
        match self {
            CellType::Slc => "slc",
            CellType::Mlc => "mlc",
            CellType::Tlc => "tlc",
        }
    }
}

pub use crate::addr::limits;

/// The shape of a NAND device: how many of each unit, and how large a page is.
///
/// Blocks are numbered flat across the device in the order channel, die, plane, block
/// (channel-major), so flat block `b` of a 2-plane die is plane `b % blocks_per_plane`…; see
/// [`Geometry::block_index`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Geometry {
    /// Independent channels (buses).
    pub channels: u32,
    /// Dies on each channel.
    pub dies_per_channel: u32,
    /// Planes in each die.
    pub planes_per_die: u32,
    /// Erase blocks in each plane.
    pub blocks_per_plane: u32,
    /// Pages in each block (the program unit).
    pub pages_per_block: u32,
    /// Bytes of user data per page.
    pub page_size: u32,
    /// Bytes of spare (out-of-band) area per page.
    pub spare_size: u32,
    /// Subpages per page for subpage programming (1 = none).
    pub subpages_per_page: u32,
}

impl Geometry {
    /// Checks that the geometry is representable and self-consistent. Errors name the field.
    pub fn validate(&self, cell: CellType) -> Result<(), ConfigError> {
        use limits::*;
        let check = |field: &'static str, v: u32, max: u32| {
            if v == 0 || v > max {
                Err(ConfigError::new(
                    field,
                    format!("{v} is out of range (1..={max})"),
                ))
            } else {
                Ok(())
            }
        };
        check("geometry.channels", self.channels, MAX_CHANNELS)?;
        check("geometry.dies_per_channel", self.dies_per_channel, MAX_DIES)?;
        check("geometry.planes_per_die", self.planes_per_die, MAX_PLANES)?;
        check(
            "geometry.blocks_per_plane",
            self.blocks_per_plane,
            MAX_BLOCKS,
        )?;
        check("geometry.pages_per_block", self.pages_per_block, MAX_PAGES)?;
        check("geometry.page_size", self.page_size, 1 << 20)?;
        check(
            "geometry.subpages_per_page",
            self.subpages_per_page,
            MAX_SUBPAGES,
        )?;
        if self.spare_size > 1 << 16 {
            return Err(ConfigError::new(
                "geometry.spare_size",
                format!("{} is out of range (0..=65536)", self.spare_size),
            ));
        }
        if self.total_blocks_u64() > u32::MAX as u64 {
            return Err(ConfigError::new(
                "geometry",
                format!(
                    "{} blocks in total; at most {} are supported",
                    self.total_blocks_u64(),
                    u32::MAX
                ),
            ));
        }
        if !self.page_size.is_multiple_of(self.subpages_per_page) {
            return Err(ConfigError::new(
                "geometry.page_size",
                format!(
                    "{} is not divisible into {} subpages",
                    self.page_size, self.subpages_per_page
                ),
            ));
        }
        if !self.spare_size.is_multiple_of(self.subpages_per_page) {
            return Err(ConfigError::new(
                "geometry.spare_size",
                format!(
                    "{} is not divisible into {} subpage spare areas",
                    self.spare_size, self.subpages_per_page
                ),
            ));
        }
        let bits = cell.bits_per_cell();
        if !self.pages_per_block.is_multiple_of(bits) {
            return Err(ConfigError::new(
                "geometry.pages_per_block",
                format!(
                    "{} is not a multiple of {} pages per word line ({})",
                    self.pages_per_block,
                    bits,
                    cell.name()
                ),
            ));
        }
        Ok(())
    }

    fn total_blocks_u64(&self) -> u64 {
        self.channels as u64
            * self.dies_per_channel as u64
            * self.planes_per_die as u64
            * self.blocks_per_plane as u64
    }

    /// Number of dies on the device.
    pub fn total_dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }

    /// Number of erase blocks on the device.
    pub fn total_blocks(&self) -> u32 {
        self.total_blocks_u64() as u32
    }

    /// Number of pages on the device.
    pub fn total_pages(&self) -> u64 {
        self.total_blocks() as u64 * self.pages_per_block as u64
    }

    /// User-data capacity in bytes (spare areas excluded).
    pub fn capacity_bytes(&self) -> u64 {
        self.total_pages() * self.page_size as u64
    }

    /// Bytes of data + spare in one page.
    pub fn raw_page_size(&self) -> usize {
        (self.page_size + self.spare_size) as usize
    }

    /// Bytes of user data in one subpage.
    pub fn subpage_size(&self) -> usize {
        (self.page_size / self.subpages_per_page) as usize
    }

    /// Bytes of spare area belonging to one subpage.
    pub fn subpage_spare_size(&self) -> usize {
        (self.spare_size / self.subpages_per_page) as usize
    }

    /// Bytes in one erase block (data only).
    pub fn block_bytes(&self) -> u64 {
        self.pages_per_block as u64 * self.page_size as u64
    }

    /// Whether `addr` names a page inside this geometry.
    pub fn contains(&self, addr: PhysAddr) -> bool {
        addr.channel() < self.channels
            && addr.die() < self.dies_per_channel
            && addr.plane() < self.planes_per_die
            && addr.block() < self.blocks_per_plane
            && addr.page() < self.pages_per_block
    }

    /// Whether `addr` names a block inside this geometry.
    pub fn contains_block(&self, addr: BlockAddr) -> bool {
        addr.channel() < self.channels
            && addr.die() < self.dies_per_channel
            && addr.plane() < self.planes_per_die
            && addr.block() < self.blocks_per_plane
    }

    /// Flat index (0..total_blocks) of a block, or `None` outside the geometry.
    pub fn block_index(&self, addr: BlockAddr) -> Option<u32> {
        if !self.contains_block(addr) {
            return None;
        }
        let die = addr.channel() * self.dies_per_channel + addr.die();
        let plane = die * self.planes_per_die + addr.plane();
        Some(plane * self.blocks_per_plane + addr.block())
    }

    /// The block with flat index `index`, or `None` past the end.
    pub fn block_at(&self, index: u32) -> Option<BlockAddr> {
        if index >= self.total_blocks() {
            return None;
        }
        let block = index % self.blocks_per_plane;
        let plane_flat = index / self.blocks_per_plane;
        let plane = plane_flat % self.planes_per_die;
        let die_flat = plane_flat / self.planes_per_die;
        let die = die_flat % self.dies_per_channel;
        let channel = die_flat / self.dies_per_channel;
        BlockAddr::new(channel, die, plane, block).ok()
    }

    /// Flat index (0..total_pages) of a page, or `None` outside the geometry.
    pub fn page_index(&self, addr: PhysAddr) -> Option<u64> {
        if addr.page() >= self.pages_per_block {
            return None;
        }
        let b = self.block_index(addr.block_addr())?;
        Some(b as u64 * self.pages_per_block as u64 + addr.page() as u64)
    }

    /// The page with flat index `index`, or `None` past the end.
    pub fn page_at(&self, index: u64) -> Option<PhysAddr> {
        let ppb = self.pages_per_block as u64;
        let block = self.block_at(u32::try_from(index / ppb).ok()?)?;
        block.page((index % ppb) as u32).ok()
    }

    /// Flat index of the die (0..total_dies) that holds `addr`; an engine keeps one timeline
    /// per die.
    pub fn die_index(&self, addr: BlockAddr) -> u32 {
        addr.channel() * self.dies_per_channel + addr.die()
    }
}
