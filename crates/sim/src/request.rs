//! Host requests as the engine sees them.

use ftl::DataClass;
use nand::Nanos;
use serde::{Deserialize, Serialize};

/// What a host request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReqKind {
    /// Read bytes.
    Read,
    /// Write bytes.
    Write,
    /// Discard bytes.
    Trim,
    /// Make earlier writes durable.
    Flush,
}

impl ReqKind {
    /// Every kind, in report order.
    pub const ALL: [ReqKind; 4] = [ReqKind::Read, ReqKind::Write, ReqKind::Trim, ReqKind::Flush];

    /// Index into per-kind arrays.
    pub const fn index(self) -> usize {
        match self {
            ReqKind::Read => 0,
            ReqKind::Write => 1,
            ReqKind::Trim => 2,
            ReqKind::Flush => 3,
        }
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            ReqKind::Read => "read",
            ReqKind::Write => "write",
            ReqKind::Trim => "trim",
            ReqKind::Flush => "flush",
        }
    }
}

/// One host request: a byte range (empty for a flush) arriving at a simulated time, with
/// the write hint its source gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Arrival time (open-loop); overwritten by the engine in closed-loop mode.
    pub arrival: Nanos,
    /// What it does.
    pub kind: ReqKind,
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Write hint (critical, hot/cold); the engine adds the experiment's critical ranges.
    pub class: DataClass,
    /// A host idle period before this request: no I/O for this long (closed loop: after
    /// every outstanding request has completed; open loop: already part of `arrival`).
    /// Data ages meanwhile, and the FTL's background work runs.
    pub idle_before: Nanos,
}
