//! What every scheme's mount shares: which recovery procedure it runs
//! ([`RecoveryKind`]: the version-based full scan or DCR's roll-forward) and what it
//! reports ([`RecoveryReport`]). Each kernel implements the procedures for its own
//! on-flash layout (`page::recovery`, `block::recovery`, `dftl::recover`,
//! `rtblock::mount`).

use nand::Nanos;
use serde::{Deserialize, Serialize};

/// Sequence numbers above this are never written; a chip that holds one is rejected at mount.
pub const SEQ_LIMIT: u64 = 1 << 62;

/// Which recovery procedure a mount runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryKind {
    /// Read every page's OOB record.
    #[serde(alias = "full_scan", alias = "version-based")]
    FullScan,
    /// Checkpoint plus the blocks opened since.
    #[default]
    #[serde(alias = "roll_forward", alias = "dcr")]
    RollForward,
}

impl RecoveryKind {
    /// Name in reports, files and on the command line (`--recovery full-scan`); the
    /// snake-case spellings are accepted in files too.
    pub const fn name(self) -> &'static str {
        match self {
            RecoveryKind::FullScan => "full-scan",
            RecoveryKind::RollForward => "roll-forward",
        }
    }
}

/// What a mount did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Procedure name.
    pub procedure: alloc::string::String,
    /// Checkpoint generation loaded (0: none found).
    pub checkpoint_gen: u64,
    /// Checkpoint-region pages read.
    pub checkpoint_pages: u64,
    /// Data blocks whose pages were read.
    pub blocks_scanned: u64,
    /// Data-block pages read (OOB records and verification reads).
    pub pages_scanned: u64,
    /// All page reads.
    pub pages_read: u64,
    /// Simulated recovery time.
    pub time: Nanos,
    /// Logical pages mapped after recovery.
    pub mapped_pages: u64,
}
