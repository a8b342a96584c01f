//! # nand — a NAND flash chip emulator faithful to the physics
//!
//! The bottom layer of nandlab. A [`Chip`] enforces what real NAND forbids and reports, for
//! every operation, the latency it costs:
//!
//! - program only erased pages, in ascending order within a block (skipped pages are lost
//!   until erase);
//! - on MLC/TLC, a word line's upper pages only after its lower pages ([`pairing`]); no
//!   partial or subpage programs on multi-level blocks; SLC-mode blocks use LSB pages only;
//! - NOP partial programs on SLC pages, and SPFTL subpage programming in SP blocks;
//! - wear (P/E counts, rated endurance, wear-out failures), age (program time, reads since
//!   program), factory-bad and grown-bad blocks;
//! - power cuts at a chosen operation, with torn programs, interrupted erases and MLC
//!   paired-page corruption ([`fault`]).
//!
//! Time is simulated: callers pass [`Nanos`] in; the chip never reads a clock. Randomness
//! is derived from the config's seed, so the same seed and the same operations give the same
//! chip, byte for byte. The crate is `no_std` + `alloc`; the `std` feature adds the
//! file-backed image ([`backend::FileStorage`]) and TOML chip files.
//!
//! ```
//! use nand::{Chip, ChipConfig, Nanos};
//! let mut chip = Chip::ram(ChipConfig::preset("tiny-mlc").unwrap()).unwrap();
//! let g = *chip.geometry();
//! let page = chip.geometry().block_at(1).unwrap().page(0).unwrap();
//! let data = vec![0x5A; g.page_size as usize];
//! let spare = vec![0xFF; g.spare_size as usize];
//! let t = chip.program(Nanos::ZERO, page, &data, &spare).unwrap();
//! assert!(t.total() > Nanos::ZERO);
//! // A second program of the same page is refused: program before erase.
//! assert!(chip.program(Nanos::ZERO, page, &data, &spare).is_err());
//! ```
#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod addr;
pub mod backend;
mod chip;
pub mod config;
pub mod error;
pub mod fault;
pub mod geometry;
pub mod hint;
mod pagetable;
pub mod pairing;
pub mod pattern;
pub mod rber;
pub mod state;
mod time;

pub use addr::{AddrError, BlockAddr, Lpn, LpnOutOfRange, PhysAddr};
pub use backend::{RamStorage, Storage};
pub use chip::{AgeReport, BlockInfo, BlockStatus, Chip, Failure, OpCounters, OpTiming, PageState};
pub use config::{ChipConfig, Reliability, Timing, PRESET_NAMES};
pub use error::{ConfigError, NandError, StorageError};
pub use fault::{CutEffect, CutMode, CutRecord, CutTarget, TornFill};
pub use geometry::{CellType, Geometry};
pub use pairing::{BitKind, PageInfo, PairingLayout, PairingTable};
pub use rber::{
    CachedFlares, ConstantRber, ErrorModel, FlaresRber, KindRatio, PageAge, ReadDisturb, Scaled,
    WearExp,
};
pub use state::Usage;
pub use time::Nanos;
