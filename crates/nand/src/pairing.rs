//! Page pairing: which word line each page of a block lives on and which bit of the cells it
//! is. Pairing is data, built once per chip into a [`PairingTable`], never branches scattered
//! through the code.
//!
//! Layouts shipped:
//!
//! - [`PairingLayout::Slc`]: one page per word line.
//! - [`PairingLayout::Dist3`]: the Linux MTD `dist3` scheme for MLC
//!   (`nand_pairing_dist3_get_info`): word line 0 holds pages 0 (LSB) and 2 (MSB); for
//!   k ≥ 1 word line k holds LSB page 2k−1 and MSB page 2k+2, except the last word line,
//!   which holds pages n−3 (LSB) and n−1 (MSB) of an n-page block (distance 2).
//! - [`PairingLayout::Mod2`]: the alternating layout of MQSim and SimpleSSD: page 2w is the
//!   LSB and page 2w+1 the MSB of word line w.
//! - [`PairingLayout::Mod3`]: the TLC analogue: pages 3w, 3w+1, 3w+2 are the LSB, CSB and MSB
//!   of word line w.

use crate::error::ConfigError;
use crate::geometry::CellType;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// Which bit of a multi-level cell a page stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BitKind {
    /// Least significant bit (the only kind on SLC); programmed first on its word line.
    Lsb,
    /// Centre bit (TLC only).
    Csb,
    /// Most significant bit; programmed last on its word line.
    Msb,
}

impl BitKind {
    /// Index 0, 1, 2 for LSB, CSB, MSB (for per-kind tables).
    pub const fn index(self) -> usize {
        match self {
            BitKind::Lsb => 0,
            BitKind::Csb => 1,
            BitKind::Msb => 2,
        }
    }

    /// Upper-case short name.
    pub const fn name(self) -> &'static str {
        match self {
            BitKind::Lsb => "LSB",
            BitKind::Csb => "CSB",
            BitKind::Msb => "MSB",
        }
    }
}

/// A named pairing layout; a preset names its layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PairingLayout {
    /// One page per word line (SLC).
    Slc,
    /// Linux MTD `dist3` (MLC).
    Dist3,
    /// MQSim/SimpleSSD alternating `page % 2` (MLC).
    Mod2,
    /// Consecutive triples `page % 3` (TLC).
    Mod3,
}

impl PairingLayout {
    /// Lower-case name as used in configuration files.
    pub const fn name(self) -> &'static str {
        match self {
            PairingLayout::Slc => "slc",
            PairingLayout::Dist3 => "dist3",
            PairingLayout::Mod2 => "mod2",
            PairingLayout::Mod3 => "mod3",
        }
    }

    /// The cell type this layout describes.
    pub const fn cell_type(self) -> CellType {
        match self {
            PairingLayout::Slc => CellType::Slc,
            PairingLayout::Dist3 | PairingLayout::Mod2 => CellType::Mlc,
            PairingLayout::Mod3 => CellType::Tlc,
        }
    }
}

/// Where one page sits: its word line, its bit and the other pages on that word line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageInfo {
    /// Word line index within the block.
    pub wordline: u32,
    /// Which bit of the cells the page stores.
    pub kind: BitKind,
    partners: [u32; 2],
    partner_count: u8,
}

impl PageInfo {
    /// The other pages sharing this page's word line (empty on SLC).
    pub fn partners(&self) -> &[u32] {
        &self.partners[..self.partner_count as usize]
    }
}

/// The pairing of every page of a block (all blocks of a chip share it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingTable {
    layout: PairingLayout,
    pages: Vec<PageInfo>,
    /// Per word line, its pages ordered LSB, (CSB,) MSB.
    wordlines: Vec<[u32; 3]>,
}

impl PairingTable {
    /// Builds the table of `layout` for blocks of `pages_per_block` pages, checking that the
    /// layout fits the cell type and block size.
    pub fn new(
        layout: PairingLayout,
        cell: CellType,
        pages_per_block: u32,
    ) -> Result<Self, ConfigError> {
        if layout.cell_type() != cell {
            return Err(ConfigError::new(
                "layout",
                format!(
                    "layout {} is for {} cells, the chip is {}",
                    layout.name(),
                    layout.cell_type().name(),
                    cell.name()
                ),
            ));
        }
        let bits = cell.bits_per_cell();
        if !pages_per_block.is_multiple_of(bits)
            || (layout == PairingLayout::Dist3 && pages_per_block < 4)
        {
            return Err(ConfigError::new(
                "geometry.pages_per_block",
                format!(
                    "{pages_per_block} pages do not fit layout {}",
                    layout.name()
                ),
            ));
        }
        let n = pages_per_block;
        let wl_count = n / bits;
        // (wordline, kind) for every page.
        let mut placement: Vec<(u32, BitKind)> = vec![(0, BitKind::Lsb); n as usize];
        for p in 0..n {
            placement[p as usize] = match layout {
                PairingLayout::Slc => (p, BitKind::Lsb),
                PairingLayout::Mod2 => (
                    p / 2,
                    if p % 2 == 0 {
                        BitKind::Lsb
                    } else {
                        BitKind::Msb
                    },
                ),
                PairingLayout::Mod3 => (
                    p / 3,
                    [BitKind::Lsb, BitKind::Csb, BitKind::Msb][(p % 3) as usize],
                ),
                PairingLayout::Dist3 => dist3(p, n),
            };
        }
        let mut wordlines = vec![[u32::MAX; 3]; wl_count as usize];
        for (p, &(wl, kind)) in placement.iter().enumerate() {
            let slot = match (bits, kind) {
                (2, BitKind::Msb) => 1,
                (_, k) => k.index(),
            };
            let cell = &mut wordlines[wl as usize][slot];
            debug_assert_eq!(*cell, u32::MAX, "two pages in one slot");
            *cell = p as u32;
        }
        let pages = placement
            .iter()
            .enumerate()
            .map(|(p, &(wl, kind))| {
                let mut partners = [0u32; 2];
                let mut count = 0u8;
                for &q in &wordlines[wl as usize][..bits as usize] {
                    if q != p as u32 {
                        partners[count as usize] = q;
                        count += 1;
                    }
                }
                PageInfo {
                    wordline: wl,
                    kind,
                    partners,
                    partner_count: count,
                }
            })
            .collect();
        Ok(PairingTable {
            layout,
            pages,
            wordlines,
        })
    }

    /// The layout this table was built from.
    pub fn layout(&self) -> PairingLayout {
        self.layout
    }

    /// Pages per block.
    pub fn pages_per_block(&self) -> u32 {
        self.pages.len() as u32
    }

    /// Number of word lines per block.
    pub fn wordline_count(&self) -> u32 {
        self.wordlines.len() as u32
    }

    /// Placement of page `page` (panics past the block end: callers check addresses first).
    pub fn info(&self, page: u32) -> &PageInfo {
        &self.pages[page as usize]
    }

    /// Bit kind of page `page`.
    pub fn kind(&self, page: u32) -> BitKind {
        self.pages[page as usize].kind
    }

    /// The pages of word line `wl`, in programming order LSB, (CSB,) MSB.
    pub fn wordline_pages(&self, wl: u32) -> &[u32] {
        let bits = self.layout.cell_type().bits_per_cell() as usize;
        &self.wordlines[wl as usize][..bits]
    }

    /// The pages on the same word line as `page` that must be programmed before it
    /// (its lower bits).
    pub fn lower_pages(&self, page: u32) -> impl Iterator<Item = u32> + '_ {
        let info = &self.pages[page as usize];
        let kind = info.kind;
        info.partners()
            .iter()
            .copied()
            .filter(move |&q| self.pages[q as usize].kind < kind)
    }

    /// The pages on the same word line as `page` that an interrupted program of `page` can
    /// corrupt (its lower bits, already holding data).
    pub fn upper_pages(&self, page: u32) -> impl Iterator<Item = u32> + '_ {
        let info = &self.pages[page as usize];
        let kind = info.kind;
        info.partners()
            .iter()
            .copied()
            .filter(move |&q| self.pages[q as usize].kind > kind)
    }

    /// How many pages of each kind (LSB, CSB, MSB) a block has.
    pub fn kind_counts(&self) -> [u32; 3] {
        let mut c = [0u32; 3];
        for p in &self.pages {
            c[p.kind.index()] += 1;
        }
        c
    }

    /// Pages of the given kind, in ascending order.
    pub fn pages_of_kind(&self, kind: BitKind) -> impl Iterator<Item = u32> + '_ {
        self.pages
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.kind == kind)
            .map(|(i, _)| i as u32)
    }
}

/// Linux MTD `dist3`: page 0 and odd pages are LSB; an even page p > 0 is the MSB of the word
/// line whose LSB is p − 3, except the last page, which pairs at distance 2.
fn dist3(page: u32, pages_per_block: u32) -> (u32, BitKind) {
    let last = pages_per_block - 1;
    if page == 0 || (page % 2 == 1 && page != last) {
        (page.div_ceil(2), BitKind::Lsb)
    } else {
        let dist = if page == last { 2 } else { 3 };
        ((page + 1 - dist) / 2, BitKind::Msb)
    }
}
