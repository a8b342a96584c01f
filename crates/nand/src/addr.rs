//! Typed addresses: a packed physical page address, a packed block address and a logical
//! page number. No raw integer crosses a crate boundary as an address.
//!
//! Bit layout of the packed `u64` (least significant first):
//!
//! | bits  | field   | width |
//! |-------|---------|-------|
//! | 0–15  | page    | 16    |
//! | 16–39 | block   | 24 (within its plane) |
//! | 40–43 | plane   | 4     |
//! | 44–51 | die     | 8 (within its channel) |
//! | 52–59 | channel | 8     |
//! | 60–63 | zero    |       |
//!
//! A [`BlockAddr`] is the same packing with the page field zero.

use core::fmt;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Largest values the packed address format can carry (see [`PhysAddr`]).
pub mod limits {
    /// Channels per chip (8 address bits).
    pub const MAX_CHANNELS: u32 = 1 << 8;
    /// Dies per channel (8 address bits).
    pub const MAX_DIES: u32 = 1 << 8;
    /// Planes per die (4 address bits).
    pub const MAX_PLANES: u32 = 1 << 4;
    /// Blocks per plane (24 address bits).
    pub const MAX_BLOCKS: u32 = 1 << 24;
    /// Pages per block (16 address bits).
    pub const MAX_PAGES: u32 = 1 << 16;
    /// Subpages per page.
    pub const MAX_SUBPAGES: u32 = 16;
}

const PAGE_SHIFT: u32 = 0;
const BLOCK_SHIFT: u32 = 16;
const PLANE_SHIFT: u32 = 40;
const DIE_SHIFT: u32 = 44;
const CHANNEL_SHIFT: u32 = 52;
const PAGE_MASK: u64 = 0xFFFF;
const BLOCK_MASK: u64 = 0xFF_FFFF;
const PLANE_MASK: u64 = 0xF;
const DIE_MASK: u64 = 0xFF;
const CHANNEL_MASK: u64 = 0xFF;
const USED_BITS: u64 = (1 << 60) - 1;

/// An address field that does not fit the packed format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("address field {field} = {value} does not fit (limit {limit})")]
pub struct AddrError {
    /// Which field.
    pub field: &'static str,
    /// The rejected value.
    pub value: u64,
    /// The exclusive upper bound.
    pub limit: u64,
}

fn fit(field: &'static str, value: u32, limit: u32) -> Result<u64, AddrError> {
    if value < limit {
        Ok(value as u64)
    } else {
        Err(AddrError {
            field,
            value: value as u64,
            limit: limit as u64,
        })
    }
}

/// A physical page: channel, die, plane, block, page, packed into a `u64`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct PhysAddr(u64);

impl PhysAddr {
    /// Packs the fields, rejecting any that overflow its bit width.
    pub fn new(
        channel: u32,
        die: u32,
        plane: u32,
        block: u32,
        page: u32,
    ) -> Result<Self, AddrError> {
        BlockAddr::new(channel, die, plane, block)?.page(page)
    }

    /// Unpacks a raw value, rejecting one with bits outside the format.
    pub fn from_raw(raw: u64) -> Result<Self, AddrError> {
        if raw & !USED_BITS != 0 {
            return Err(AddrError {
                field: "raw",
                value: raw,
                limit: USED_BITS + 1,
            });
        }
        Ok(PhysAddr(raw))
    }

    /// The packed value.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Channel number.
    pub const fn channel(self) -> u32 {
        ((self.0 >> CHANNEL_SHIFT) & CHANNEL_MASK) as u32
    }
    /// Die number within the channel.
    pub const fn die(self) -> u32 {
        ((self.0 >> DIE_SHIFT) & DIE_MASK) as u32
    }
    /// Plane number within the die.
    pub const fn plane(self) -> u32 {
        ((self.0 >> PLANE_SHIFT) & PLANE_MASK) as u32
    }
    /// Block number within the plane.
    pub const fn block(self) -> u32 {
        ((self.0 >> BLOCK_SHIFT) & BLOCK_MASK) as u32
    }
    /// Page number within the block.
    pub const fn page(self) -> u32 {
        ((self.0 >> PAGE_SHIFT) & PAGE_MASK) as u32
    }
    /// The block holding this page.
    pub const fn block_addr(self) -> BlockAddr {
        BlockAddr(self.0 & !(PAGE_MASK << PAGE_SHIFT))
    }
}

impl TryFrom<u64> for PhysAddr {
    type Error = AddrError;
    fn try_from(raw: u64) -> Result<Self, AddrError> {
        PhysAddr::from_raw(raw)
    }
}

impl From<PhysAddr> for u64 {
    fn from(a: PhysAddr) -> u64 {
        a.0
    }
}

impl fmt::Debug for PhysAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for PhysAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ch{}/die{}/pl{}/blk{}/pg{}",
            self.channel(),
            self.die(),
            self.plane(),
            self.block(),
            self.page()
        )
    }
}

/// A physical erase block: channel, die, plane, block, packed into a `u64`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct BlockAddr(u64);

impl BlockAddr {
    /// Packs the fields, rejecting any that overflow its bit width.
    pub fn new(channel: u32, die: u32, plane: u32, block: u32) -> Result<Self, AddrError> {
        Ok(BlockAddr(
            fit("channel", channel, limits::MAX_CHANNELS)? << CHANNEL_SHIFT
                | fit("die", die, limits::MAX_DIES)? << DIE_SHIFT
                | fit("plane", plane, limits::MAX_PLANES)? << PLANE_SHIFT
                | fit("block", block, limits::MAX_BLOCKS)? << BLOCK_SHIFT,
        ))
    }

    /// Unpacks a raw value, rejecting one with bits outside the format or a page field.
    pub fn from_raw(raw: u64) -> Result<Self, AddrError> {
        if raw & !USED_BITS != 0 || raw & PAGE_MASK != 0 {
            return Err(AddrError {
                field: "raw",
                value: raw,
                limit: USED_BITS + 1,
            });
        }
        Ok(BlockAddr(raw))
    }

    /// The packed value.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Page `page` of this block.
    pub fn page(self, page: u32) -> Result<PhysAddr, AddrError> {
        Ok(PhysAddr(
            self.0 | fit("page", page, limits::MAX_PAGES)? << PAGE_SHIFT,
        ))
    }

    /// Channel number.
    pub const fn channel(self) -> u32 {
        PhysAddr(self.0).channel()
    }
    /// Die number within the channel.
    pub const fn die(self) -> u32 {
        PhysAddr(self.0).die()
    }
    /// Plane number within the die.
    pub const fn plane(self) -> u32 {
        PhysAddr(self.0).plane()
    }
    /// Block number within the plane.
    pub const fn block(self) -> u32 {
        PhysAddr(self.0).block()
    }
}

impl TryFrom<u64> for BlockAddr {
    type Error = AddrError;
    fn try_from(raw: u64) -> Result<Self, AddrError> {
        BlockAddr::from_raw(raw)
    }
}

impl From<BlockAddr> for u64 {
    fn from(a: BlockAddr) -> u64 {
        a.0
    }
}

impl fmt::Debug for BlockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for BlockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ch{}/die{}/pl{}/blk{}",
            self.channel(),
            self.die(),
            self.plane(),
            self.block()
        )
    }
}

/// A logical page number, as seen by the host side of an FTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Lpn(u64);

/// A logical page number at or past the end of a volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("logical page {lpn} is out of range (volume has {count} pages)")]
pub struct LpnOutOfRange {
    /// The rejected page number.
    pub lpn: u64,
    /// Pages in the volume.
    pub count: u64,
}

impl Lpn {
    /// A logical page number checked against a volume of `count` pages.
    pub fn checked(lpn: u64, count: u64) -> Result<Self, LpnOutOfRange> {
        if lpn < count {
            Ok(Lpn(lpn))
        } else {
            Err(LpnOutOfRange { lpn, count })
        }
    }

    /// The number, for indexing a map.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Lpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lpn{}", self.0)
    }
}
