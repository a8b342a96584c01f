//! Typed errors. Every violation of the chip's rules is one of these, never a silent success.

use crate::addr::{BlockAddr, PhysAddr};
use alloc::string::String;
use thiserror::Error;

/// A configuration value that is missing, out of range or inconsistent. `field` is the
/// dotted key as written in a TOML chip file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// The offending key, e.g. `geometry.page_size`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Failure of a storage backend (I/O, corrupt or truncated image).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StorageError {
    /// The backing file could not be read or written.
    #[error("I/O error on chip image: {0}")]
    Io(String),
    /// The image is not a nandlab chip image, or its header is damaged.
    #[error("bad chip image header: {0}")]
    BadHeader(String),
    /// The image was written by an incompatible format version.
    #[error("chip image format version {found} is not supported (this build reads {supported})")]
    Version {
        /// Version in the file.
        found: u32,
        /// Version this build reads and writes.
        supported: u32,
    },
    /// The image is shorter or longer than its header says.
    #[error("chip image is truncated or has the wrong size: {found} bytes, expected {expected}")]
    Size {
        /// Bytes found.
        found: u64,
        /// Bytes the header implies.
        expected: u64,
    },
    /// A metadata record fails its checksum.
    #[error("chip image is corrupted: {what} record {index} fails its checksum")]
    Corrupt {
        /// Which table.
        what: &'static str,
        /// Record index.
        index: u64,
    },
    /// The image is locked by another process.
    #[error("chip image is in use by another process ({0})")]
    Locked(String),
}

/// Why a chip operation was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NandError {
    /// Power is off (a power cut happened); call `power_on` first.
    #[error("power loss: the chip is unpowered")]
    PowerLoss,
    /// The address is outside the chip's geometry.
    #[error("address {0} is outside the chip geometry")]
    PageOutOfRange(PhysAddr),
    /// The block address is outside the chip's geometry.
    #[error("block {0} is outside the chip geometry")]
    BlockOutOfRange(BlockAddr),
    /// A subpage index past the subpages of a page.
    #[error("subpage {index} does not exist (pages have {count} subpages)")]
    SubpageOutOfRange {
        /// Requested subpage.
        index: u32,
        /// Subpages per page.
        count: u32,
    },
    /// A data or spare buffer of the wrong length.
    #[error("{what} buffer is {got} bytes, expected {expected}")]
    BufferSize {
        /// Which buffer (data / spare).
        what: &'static str,
        /// Length given.
        got: usize,
        /// Length required.
        expected: usize,
    },
    /// The block is factory-bad (every operation fails) or grown-bad (program/erase fail).
    #[error("block {0} is bad")]
    BadBlock(BlockAddr),
    /// Program of a page that is not in the erased state.
    #[error("page {0} is not erased: program before erase")]
    NotErased(PhysAddr),
    /// A data transfer from the page register of a page the last operation did not read.
    #[error("page {0} is not in the page register: read it first")]
    NotInRegister(PhysAddr),
    /// A copy program whose source page holds no data.
    #[error("page {0} holds no data to copy")]
    CopyFromErased(PhysAddr),
    /// Program of a page below the block's write pointer (pages are programmed in ascending
    /// order; a skipped page cannot be programmed until the block is erased).
    #[error("page {page} programmed out of order: the block's next programmable page is {next}")]
    OutOfOrder {
        /// The page refused.
        page: PhysAddr,
        /// The lowest page still programmable.
        next: u32,
    },
    /// Program of an upper page (CSB/MSB) whose lower page on the same word line holds no
    /// data.
    #[error("page {page} is an upper page; its lower page {lower} must be programmed first")]
    LowerPageNotProgrammed {
        /// The page refused.
        page: PhysAddr,
        /// Its unprogrammed lower page number.
        lower: u32,
    },
    /// A second (partial) program of a page of a multi-level block.
    #[error("page {0} is on a multi-level block: partial programs are forbidden")]
    PartialProgramOnMlc(PhysAddr),
    /// More partial programs than the chip's NOP allows.
    #[error("page {page} already took {limit} programs (NOP limit)")]
    NopExceeded {
        /// The page refused.
        page: PhysAddr,
        /// The chip's NOP.
        limit: u8,
    },
    /// A partial program that would reprogram already-programmed bytes.
    #[error("partial program of page {0} overlaps bytes already programmed")]
    PartialOverlap(PhysAddr),
    /// A partial program of a page that is neither the last programmed page of its block nor
    /// the next one in order.
    #[error(
        "partial program of page {page}: only the last programmed page {last} may be reprogrammed"
    )]
    PartialNotLast {
        /// The page refused.
        page: PhysAddr,
        /// The block's last programmed page.
        last: u32,
    },
    /// Upper-page program on a block in SLC mode (only LSB pages are used there).
    #[error("page {0} is an upper page and its block is in SLC mode")]
    UpperPageInSlcMode(PhysAddr),
    /// Subpage programming requested but pages have a single subpage.
    #[error("the chip has no subpages (subpages_per_page = 1)")]
    NoSubpages,
    /// Subpage programming on a multi-level block (it corrupts the paired page on real MLC).
    #[error("block {0} is a multi-level block: subpage programming needs SLC or SLC mode")]
    SubpageOnMlc(BlockAddr),
    /// Full-page program on a block that is in subpage-programming (SP) use.
    #[error("block {0} is an SP block: full-page programs are forbidden until it is erased")]
    FullPageInSpBlock(BlockAddr),
    /// Subpage program on a block that already took full-page programs.
    #[error(
        "block {0} holds full-page programs: subpage programs are forbidden until it is erased"
    )]
    SubpageInFullPageBlock(BlockAddr),
    /// Subpage program in a partition other than the one the SP block is using.
    #[error("block {block} uses subpage partition {active}; partition {requested} is available only after erase")]
    PartitionInUse {
        /// The block.
        block: BlockAddr,
        /// The partition in use since the last erase.
        active: u32,
        /// The partition requested.
        requested: u32,
    },
    /// Block-mode change on a block that is not erased.
    #[error("block {0} is not erased: its mode can change only between erase and first program")]
    ModeChangeNotErased(BlockAddr),
    /// SLC mode on a chip that is already SLC.
    #[error("SLC mode needs a multi-level chip")]
    SlcModeOnSlc,
    /// The block was caught in an interrupted erase and must be erased before programming.
    #[error("block {0} was caught mid-erase; erase it before programming")]
    NeedsErase(BlockAddr),
    /// The program operation failed (status FAIL); the block is now grown-bad and the page
    /// holds undefined data.
    #[error("program of page {0} failed; the block is now grown-bad")]
    ProgramFailed(PhysAddr),
    /// The erase operation failed (status FAIL); the block is now grown-bad.
    #[error("erase of block {0} failed; the block is now grown-bad")]
    EraseFailed(BlockAddr),
    /// The storage backend failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The chip configuration is invalid.
    #[error("invalid chip configuration: {0}")]
    Config(#[from] ConfigError),
}
