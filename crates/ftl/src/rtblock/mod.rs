//! The real-time block-level kernels of WAO-GC's Table I (Ref. 003): **GFTL** (Choudhuri
//! and Givargis) and **RFTL** (Qin et al.), the two partial-GC schemes WAO-GC is compared
//! with besides the page-level ones. Both map logical blocks to physical blocks, bound every
//! request by one partial GC step (at most α = ⌊t_er / (t_rd + t_wr)⌋ page visits, or one
//! erase) and recover by a full scan. What each keeps in RAM and what it must read from
//! flash follows Table I, and every such read is a charged chip operation.
//!
//! Logical page `l` is offset `l % π` of logical block `l / π` (π pages per block).
//!
//! ## GFTL (`gftl`)
//!
//! - RAM: logical block → its **data block** and that block's write pointer; the central
//!   **write buffer**'s page map (logical page → buffer page) and each buffer block's
//!   pages' owners; the **GC queue**.
//! - A data block is filled in write order, each page naming its logical page in its OOB
//!   record (no per-page RAM): a host read that the buffer does not hold scans the data
//!   block's records from its write pointer down until one names the offset (at most π
//!   record reads, Table I's `U(e_r) = t_rdpg + π·t_rdoob`), then reads that page.
//! - A write goes to the data block while it has room and its logical block is not waiting
//!   for or under GC; otherwise to the write buffer. The write that fills a data block
//!   puts its logical block on the GC queue.
//! - After **every** request (reads too), one partial step of the queue's head job. A job
//!   is `k = ⌈π/α⌉ + 2` steps: the old data block's records read from its write pointer
//!   down (π record reads, so the newest page of each offset is known: the job's own
//!   π-entry table), then α copies a step — each offset's newest copy, the buffer's if it
//!   holds one, else the old block's — into a fresh data block, then the old block's
//!   erase. Each offset is copied once; writes to the logical block during its job go to
//!   the buffer, and stay there if their offset was already copied. The paper's
//!   `k = ⌈π/α⌉ + 1` has no scan step.
//! - The buffer is `N(k+1)` pages (`N` logical blocks), in blocks: twice the paper's
//!   `N(k+1)/2`. The paper counts live pages — with every logical block queued each holds
//!   the writes since its last job, k/2 on average — but a buffer block is erased only when
//!   every page in it is dead, and a block written at one moment holds pages of many
//!   logical blocks: it lives a whole round of the queue (measured: the paper's length ran
//!   dry within 1,300 random writes on a full 48-blocks-per-plane `k9k8g08u0b`). A buffer
//!   block whose pages are all superseded or copied is erased as a step of its own (before
//!   the head job's next step). When the buffer is down to its last block, the owners of
//!   the oldest block's live pages are queued. A write that finds no buffer page at all
//!   runs jobs inside itself and counts an overrun (`rt_overruns`).
//! - Step sizes: a copy step is α copies (read, transfers, decode, program), the scan π
//!   record reads (64 × 27 µs on the paper's chip, shorter than the erase), so the bound
//!   is a request's own work plus `max(t_er, α copies, π record reads)`.

//! ## RFTL (`rftl`)
//!
//! - Per logical block a **primary** (fixed offsets: offset `o` in page `o`; the chip's
//!   ascending rule lets a write take page `o` only at or after the write pointer), a
//!   **replacement** (appended, each page naming its offset) and, while the block is
//!   collected, a **buffer** block (appended too). RAM: the three block numbers, write
//!   pointers, and the replacement's and buffer's offset tables (2 bytes per page) — the
//!   hybrid map of RFTL.
//! - A write takes the primary's page `o` when the chip allows it and no appended copy of
//!   `o` exists; else it is appended to the replacement. When the replacement is full
//!   (`isFull(LBN)`), partial GC of that logical block starts: a fresh primary is taken,
//!   the write and every later write of the block go to its buffer block, and each write
//!   of the block runs one step (distributed partial GC: no other request pays for it):
//!   α offsets copied (newest copy: buffer, replacement, primary) into the new primary at
//!   their offsets, then the old primary's erase, then the replacement's. The buffer then
//!   becomes the replacement (its copies taken by the new primary dropped from its table).
//!   A job is `⌈π/α⌉ + 2` steps, fewer than the π writes the buffer holds.
//! - Four blocks are set aside per logical block (primary, replacement, and while it is
//!   collected its buffer and new primary), where the paper counts three: with three, a
//!   sequential fill followed by random writes starts most logical blocks' jobs together
//!   and the pool runs dry (34 of 62 collecting on a 48-blocks-per-plane `k9k8g08u0b`);
//!   with four every logical block can be collected at once.
//! - Reads run no step. With the replacement's offsets in RAM a read needs no OOB read:
//!   ours is `t_rdpg` where Table I's RFTL (mapping partly in OOB) pays `t_rdoob` more, and
//!   a write needs none either (the write pointer answers whether the primary's page is
//!   free on a chip that programs pages in order).
//!
//! ## Both
//!
//! - Every program carries a sequence number; trims are tombstones (pages written like
//!   data, flagged); GC copies tombstones too, so an erase never brings back an older copy.
//! - Blocks come from one free pool, least worn first, erased: a victim is erased by a
//!   step and then returned.
//! - The volume size depends only on the chip and the configuration (no superblock): the
//!   geometry's blocks less `bad_block_reserve`, less the buffer (GFTL) or three more blocks
//!   per logical block (RFTL), less the blocks a job takes.
//! - **Durability.** Every write is programmed before it returns, so a flush has nothing
//!   to do. **Recovery** (`mount`) reads every good block's header and every programmed
//!   page's record: the newest sequence number of each logical page wins (a record that
//!   does not decode — a torn program — is no version, and its page reads as never
//!   written). A logical block whose newest copies lie outside the places its read path
//!   looks (a job cut short) is merged into a fresh block at mount; blocks left holding no
//!   newest copy are erased. Only SLC chips: fixed offsets in multi-level blocks would need
//!   padding the schemes do not define (refused, naming the key).
//! - Program failures: the block is treated as full (its data stay readable until its
//!   erase), and a job's target that fails is replaced and the job restarts.
//!
//! ## What it takes from the substrate, and what it keeps
//!
//! From the substrate (`Substrate::block_level`): the one flash path (`sense`,
//! `program_kept` — a failed program marks the block bad, a refused one is skipped —
//! `erase_block`, charged header reads), the op log and counters, the erase-count mirror
//! and block states through the asserted mutators (`release_erased`, `set_state`). No checkpoint region: every page's record names its logical
//! page. Of its own: the free pool (least-worn first) and the per-logical-block
//! allocation of Table I's schemes (GFTL's data blocks and central buffer, RFTL's
//! primary, replacement and buffer per logical block) with their partial-GC queues —
//! fixed offsets per logical block, which the substrate's per-die write frontiers and
//! valid-count victim index do not model.

mod gftl;
mod io;
mod mount;
mod rftl;
#[cfg(test)]
mod tests;
mod verify;

use crate::recovery::RecoveryReport;
use crate::rt_bounds::WaoBounds;
use crate::substrate::{BState, Payload, Prog, Sense, Sensed, Substrate, SubstrateConfig};
use crate::{Cause, Ftl, FtlError, Invariant, LatencyBound};
use alloc::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use controller::{Controller, DataClass, PageKind};
use core::cmp::Reverse;
use nand::{ErrorModel, Lpn, Nanos, PhysAddr, Storage};
use serde::{Deserialize, Serialize};

/// No block / no page.
pub(crate) const NONE: u32 = u32::MAX;

/// Packing of a page's record `lpn` field: the logical page in the low 40 bits, flags above.
pub(crate) mod rec {
    /// The logical page.
    pub const LPN: u64 = (1 << 40) - 1;
    /// The page is in an appended block (GFTL's write buffer; RFTL's replacement or buffer).
    pub const APPEND: u64 = 1 << 40;
    /// Written by a GC copy.
    pub const COPY: u64 = 1 << 41;
    /// A trim: the offset holds nothing.
    pub const TOMB: u64 = 1 << 43;
    /// Every flag this kernel writes.
    pub const FLAGS: u64 = APPEND | COPY | TOMB;
}

/// Physical blocks set aside per RFTL logical block (primary, replacement, and while it
/// is collected its buffer and new primary).
pub(crate) const RFTL_BLOCKS: u64 = 4;

/// An offset-table entry's tombstone flag (the rest: page + 1; 0 = none).
pub(crate) const TOMB_BIT: u16 = 0x8000;

/// Which real-time block-level scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtKind {
    /// GFTL: data blocks, a central write buffer and GC queue; steps after every request.
    Gftl,
    /// RFTL: primary, replacement and buffer block per logical block; steps after the
    /// block's own writes.
    Rftl,
}

impl RtKind {
    /// Name in reports.
    pub const fn name(self) -> &'static str {
        match self {
            RtKind::Gftl => "gftl",
            RtKind::Rftl => "rftl",
        }
    }
}

/// Configuration of [`RtBlockFtl`] (both schemes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RtBlockConfig {
    /// Share of the chip's blocks never mapped, kept for blocks that are or go bad
    /// (0 ≤ x < 0.5).
    pub bad_block_reserve: f64,
    /// BCH correction capability of every page (1: the 64-byte spare of 2 KiB SLC chips
    /// holds one bit per 512-byte sector).
    pub ecc_t: u32,
    /// GFTL's write buffer in pages; 0 = sized by `buffer` for `N` logical blocks. (RFTL's
    /// buffers are one block per collected logical block.)
    pub buffer_pages: u64,
    /// GFTL's write buffer when `buffer_pages` is 0: `"round"` (the default, `N(k + 1)`
    /// pages: a buffer block lives a whole round of the GC queue) or `"paper"` (the
    /// paper's `N(k + 1)/2`, which counts live pages only: buffer blocks run out, and jobs
    /// then run inside writes, counted as overruns). See [`GftlBuffer`].
    pub buffer: GftlBuffer,
    /// RFTL's blocks per logical block: 4 (the default: primary, replacement, and while
    /// it is collected a buffer and the new primary) or the paper's 3. With 3 the pool can
    /// run dry when many logical blocks are collected at once; a request then finishes
    /// another block's job (an overrun) or, when none can, fails with `NoSpace`.
    pub rftl_blocks: u32,
    /// Where RFTL keeps its replacement and buffer blocks' offset tables: `false` (the
    /// default) in RAM, 2 bytes per page; `true` as the paper's Table I counts them, in
    /// the OOB area — every request to a logical block that has one pays a charged OOB read
    /// (the record of that block's last written page, where the table is kept; the
    /// kernel's RAM copy stands in for its content), and its bounds add t_rdoob.
    pub rftl_oob_offsets: bool,
    /// How α, the copies of one partial step, is derived: `"array"` (eq. 4 of Ref. 003,
    /// the default) or `"charged"` (each copy's transfers and decode counted; see
    /// [`AlphaRule`](crate::rt_bounds::AlphaRule)).
    pub alpha: crate::rt_bounds::AlphaRule,
}

impl Default for RtBlockConfig {
    fn default() -> Self {
        RtBlockConfig {
            bad_block_reserve: 0.02,
            ecc_t: 1,
            buffer_pages: 0,
            buffer: GftlBuffer::Round,
            rftl_blocks: RFTL_BLOCKS as u32,
            rftl_oob_offsets: false,
            alpha: crate::rt_bounds::AlphaRule::Array,
        }
    }
}

/// How GFTL's write buffer is sized (`[ftl.gftl] buffer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GftlBuffer {
    /// `N(k + 1)` pages: what the buffer takes (measured), twice the paper's length.
    #[default]
    Round,
    /// `N(k + 1)/2` pages, the paper's length (Ref. 003, §V-C).
    Paper,
}

/// What a physical block is to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// In the free pool (erased).
    Free,
    /// GFTL's data block or RFTL's primary (or a job's target) of `lbn`.
    Data,
    /// RFTL's replacement or buffer block of `lbn`.
    Append,
    /// A block of GFTL's write buffer.
    Buffer,
    /// Collected, waiting for its erase step.
    Victim,
    /// Bad (factory or grown).
    Bad,
}

/// Per physical block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Blk {
    pub role: Role,
    /// Logical block (data and appended blocks).
    pub lbn: u32,
    /// Write pointer: the lowest page the chip still lets the kernel program.
    pub next: u32,
}

impl Blk {
    const FREE: Blk = Blk {
        role: Role::Free,
        lbn: NONE,
        next: 0,
    };
}

/// A logical block's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lb {
    /// GFTL's data block, RFTL's primary.
    pub d: u32,
    /// RFTL's replacement.
    pub r: u32,
    /// RFTL's buffer (while collected).
    pub b: u32,
}

impl Lb {
    const EMPTY: Lb = Lb {
        d: NONE,
        r: NONE,
        b: NONE,
    };
}

/// A GFTL buffer page's map entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BufEntry {
    /// Flat page.
    pub phys: u32,
    /// A tombstone.
    pub tomb: bool,
}

/// GFTL's running job.
#[derive(Debug, Clone)]
pub(crate) struct GJob {
    /// The logical block collected.
    pub x: u32,
    /// Its old data block.
    pub old: u32,
    /// The new data block.
    pub new: u32,
    /// The old block's records were read (the job's first step).
    pub scanned: bool,
    /// Next offset to copy (π: the erase).
    pub o: u32,
    /// Per offset: its newest page in the old block + 1 (0: none), with [`TOMB_BIT`].
    pub dtab: Vec<u16>,
    /// Buffer pages copied (logical page, page): dropped from the buffer when the job ends.
    pub consumed: Vec<(u64, u32)>,
    /// Every copy made (logical page, source page, target page or `NONE` for a
    /// tombstone): the read path moves to them when the job ends.
    pub placed: Vec<(u64, u32, u32)>,
}

/// RFTL's running job of one logical block.
#[derive(Debug, Clone)]
pub(crate) struct RJob {
    /// The new primary.
    pub new: u32,
    /// Next offset to copy (π: the erases).
    pub o: u32,
    /// The old primary's erase is done.
    pub erased: bool,
    /// Per offset: the buffer's table entry the copy took (0: none), so the buffer keeps
    /// only what was written after its offset was copied.
    pub taken: Vec<u16>,
}

/// A primary page's state in RFTL's RAM.
pub(crate) mod pst {
    /// Never programmed (or skipped).
    pub const NONE: u8 = 0;
    /// Data.
    pub const DATA: u8 = 1;
    /// A tombstone.
    pub const TOMB: u8 = 2;
}

/// A real-time block-level FTL: GFTL or RFTL (see the module docs).
pub struct RtBlockFtl<S: Storage, M: ErrorModel> {
    pub(crate) s: Substrate<S, M>,
    pub(crate) cfg: RtBlockConfig,
    pub(crate) kind: RtKind,
    /// Logical blocks.
    pub(crate) lbns: u32,
    pub(crate) ppb: u32,
    /// α: page visits per partial step.
    pub(crate) alpha: u32,
    pub(crate) map: Vec<Lb>,
    pub(crate) blk: Vec<Blk>,
    /// Free blocks by (erase count, index).
    pub(crate) free: BinaryHeap<Reverse<(u32, u32)>>,
    /// Flat pages a power cut tore (read as never written) in blocks not erased since.
    pub(crate) torn: BTreeSet<u32>,
    // ----- GFTL -----
    /// The write buffer's map.
    pub(crate) buf: BTreeMap<u64, BufEntry>,
    /// Buffer blocks, oldest first; the last is the one written.
    pub(crate) buf_blocks: VecDeque<u32>,
    /// Per buffer block: the logical page of each programmed page (`u64::MAX`: none).
    pub(crate) buf_pages: BTreeMap<u32, Vec<u64>>,
    /// Per block: live buffer entries in it.
    pub(crate) buf_live: Vec<u32>,
    /// Buffer blocks the buffer may hold.
    pub(crate) buf_limit: u32,
    /// Buffer blocks waiting for their erase step.
    pub(crate) erase_q: VecDeque<u32>,
    /// The GC queue and who is on it (or collected).
    pub(crate) queue: VecDeque<u32>,
    pub(crate) queued: Vec<bool>,
    pub(crate) job: Option<GJob>,
    // ----- RFTL -----
    /// Offset tables of appended blocks (replacements and buffers).
    pub(crate) tab: BTreeMap<u32, Vec<u16>>,
    /// Running jobs by logical block.
    pub(crate) rjobs: BTreeMap<u32, RJob>,
    /// Per primary (and job target): each offset's page state ([`pst`]), one byte each.
    pub(crate) pstate: BTreeMap<u32, Vec<u8>>,
    // ----- both -----
    /// Where each logical page's newest copy is (flat page, `NONE`: none or trimmed): the
    /// simulator's record for `verify` and `mapping`, never consulted by the scheme.
    pub(crate) shadow: Vec<u32>,
    pub(crate) recovery: Option<RecoveryReport>,
    pub(crate) bound: LatencyBound,
    /// Zeros: tombstones.
    pub(crate) zeros: Vec<u8>,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for RtBlockFtl<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RtBlockFtl")
            .field("kind", &self.kind)
            .field("lbns", &self.lbns)
            .field("cfg", &self.cfg)
            .finish()
    }
}

impl<S: Storage, M: ErrorModel> RtBlockFtl<S, M> {
    /// Rejects what these kernels cannot run with, naming the key.
    pub(crate) fn check_config(
        ctl: &mut Controller<S, M>,
        kind: RtKind,
        cfg: &RtBlockConfig,
    ) -> Result<u32, FtlError> {
        let name = kind.name();
        if kind == RtKind::Rftl && !(3..=4).contains(&cfg.rftl_blocks) {
            return Err(FtlError::Config(format!(
                "[ftl.rftl] rftl_blocks = {} must be 3 (the paper's primary, replacement and buffer) or 4",
                cfg.rftl_blocks
            )));
        }
        if !(cfg.bad_block_reserve >= 0.0 && cfg.bad_block_reserve < 0.5) {
            return Err(FtlError::Config(format!(
                "[ftl.{name}] bad_block_reserve = {} must be in [0, 0.5)",
                cfg.bad_block_reserve
            )));
        }
        let chip = ctl.chip().config().clone();
        if chip.cell != nand::CellType::Slc {
            return Err(FtlError::Config(format!(
                "scheme = \"{name}\" needs a one-bit-per-cell chip: chip {} is {:?} (fixed page offsets in multi-level blocks would need padding the scheme does not define)",
                chip.name, chip.cell
            )));
        }
        ctl.layout(cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("[ftl.{name}] ecc_t = {}: {e}", cfg.ecc_t)))?;
        let ppb = chip.geometry.pages_per_block;
        if ppb >= TOMB_BIT as u32 {
            return Err(FtlError::Config(format!(
                "{ppb} pages per block exceed the kernel's 15-bit offsets"
            )));
        }
        cfg.alpha.alpha(ctl, cfg.ecc_t).map_err(|e| {
            FtlError::Config(format!(
                "scheme = \"{name}\" with alpha = \"{}\": {e}",
                cfg.alpha.name()
            ))
        })
    }

    /// An empty kernel (every block `Bad` until format or mount says otherwise).
    pub(crate) fn empty(
        ctl: Controller<S, M>,
        kind: RtKind,
        cfg: RtBlockConfig,
        alpha: u32,
    ) -> Self {
        let geo = *ctl.chip().geometry();
        let scfg = SubstrateConfig::block_level(cfg.ecc_t);
        let s = Substrate::block_level(ctl, scfg);
        let nblocks = geo.total_blocks() as usize;
        let digest = s.digest;
        RtBlockFtl {
            zeros: vec![0; if digest { 0 } else { geo.page_size as usize }],
            ppb: geo.pages_per_block,
            s,
            cfg,
            kind,
            lbns: 0,
            alpha,
            map: Vec::new(),
            blk: vec![
                Blk {
                    role: Role::Bad,
                    ..Blk::FREE
                };
                nblocks
            ],
            free: BinaryHeap::new(),
            torn: BTreeSet::new(),
            buf: BTreeMap::new(),
            buf_blocks: VecDeque::new(),
            buf_pages: BTreeMap::new(),
            buf_live: vec![0; nblocks],
            buf_limit: 0,
            erase_q: VecDeque::new(),
            queue: VecDeque::new(),
            queued: Vec::new(),
            job: None,
            tab: BTreeMap::new(),
            rjobs: BTreeMap::new(),
            pstate: BTreeMap::new(),
            shadow: Vec::new(),
            recovery: None,
            bound: LatencyBound::default(),
        }
    }

    /// GFTL's steps per job: the scan of the old block's records, ⌈π/α⌉ copy steps and
    /// the erase (the paper's k = ⌈π/α⌉ + 1 has no scan step).
    pub(crate) fn gftl_k(&self) -> u64 {
        self.ppb.div_ceil(self.alpha) as u64 + 2
    }

    /// GFTL's buffer length in pages for `n` logical blocks: by default `N(k + 1)`, twice the
    /// paper's `N(k + 1)/2` (this kernel's k, [`gftl_k`](Self::gftl_k)). The paper's count
    /// is the live buffer pages: with every logical block queued, each holds the writes
    /// since its last job, k/2 of them on average. But a buffer block is erased only when
    /// every page in it is dead, and a block written at one moment holds pages of many
    /// logical blocks, so it lives until all of them had their job — a whole round of the
    /// queue: N·k pages written (measured: random writes on a full 48-blocks-per-plane
    /// `k9k8g08u0b` exhausted a buffer of the paper's length within 1,300 writes).
    pub(crate) fn buffer_pages_for(&self, n: u64) -> u64 {
        match self.cfg.buffer {
            GftlBuffer::Round => n * (self.gftl_k() + 1),
            GftlBuffer::Paper => (n * (self.gftl_k() + 1)).div_ceil(2),
        }
    }

    /// Sizes the volume from the geometry and the configuration alone (so every mount
    /// agrees) and checks the good blocks can hold it; errors name the key.
    pub(crate) fn size_volume(&mut self) -> Result<(), FtlError> {
        let total = self.s.geo().total_blocks() as u64;
        let name = self.kind.name();
        let usable = (total as f64 * (1.0 - self.cfg.bad_block_reserve)) as u64;
        let ppb = self.ppb as u64;
        // A job's target, and one more block should a target fail.
        const JOB_BLOCKS: u64 = 2;
        let (lbns, buf_blocks) = match self.kind {
            RtKind::Gftl => {
                // The largest N with N + ⌈L_buf(N)/π⌉ + JOB_BLOCKS ≤ usable.
                let fits = |n: u64, me: &Self| {
                    let l = if me.cfg.buffer_pages > 0 {
                        me.cfg.buffer_pages
                    } else {
                        me.buffer_pages_for(n)
                    };
                    n + l.div_ceil(ppb).max(2) + JOB_BLOCKS <= usable
                };
                let (mut lo, mut hi) = (0u64, usable);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if fits(mid, self) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                let l = if self.cfg.buffer_pages > 0 {
                    self.cfg.buffer_pages
                } else {
                    self.buffer_pages_for(lo)
                };
                (lo, l.div_ceil(ppb).max(2))
            }
            // Primary and replacement per logical block, and while it is collected its
            // buffer and new primary: four blocks each, so that every logical block can
            // be collected at once (with the paper's three, a sequential fill followed by
            // random writes starts most jobs together: 34 of 62 logical blocks were
            // collecting when the pool ran dry on a 48-blocks-per-plane `k9k8g08u0b`).
            RtKind::Rftl => (
                usable.saturating_sub(JOB_BLOCKS) / self.cfg.rftl_blocks as u64,
                0,
            ),
        };
        if lbns == 0 {
            let key = if self.kind == RtKind::Gftl && self.cfg.buffer_pages > 0 {
                format!("[ftl.gftl] buffer_pages = {}", self.cfg.buffer_pages)
            } else {
                format!(
                    "[ftl.{name}] bad_block_reserve = {}",
                    self.cfg.bad_block_reserve
                )
            };
            return Err(FtlError::Config(format!(
                "{key}: the chip's {total} blocks ({usable} usable) leave no logical block for scheme = \"{name}\" (write buffer {buf_blocks} blocks, {JOB_BLOCKS} for a job; RFTL takes {} per logical block)",
                self.cfg.rftl_blocks
            )));
        }
        let good = self.blk.iter().filter(|b| b.role != Role::Bad).count() as u64;
        let need = match self.kind {
            RtKind::Gftl => lbns + buf_blocks + JOB_BLOCKS,
            RtKind::Rftl => self.cfg.rftl_blocks as u64 * lbns + JOB_BLOCKS,
        };
        if good < need {
            return Err(FtlError::Config(format!(
                "scheme = \"{name}\": {good} good blocks, the volume needs {need} (bad_block_reserve = {} is too small for this chip's bad blocks)",
                self.cfg.bad_block_reserve
            )));
        }
        if self.cfg.buffer_pages > 0 && self.kind == RtKind::Gftl && buf_blocks < 2 {
            return Err(FtlError::Config(format!(
                "[ftl.gftl] buffer_pages = {}: the buffer needs at least two blocks",
                self.cfg.buffer_pages
            )));
        }
        self.lbns = lbns as u32;
        self.buf_limit = buf_blocks as u32;
        self.map = vec![Lb::EMPTY; lbns as usize];
        self.queued = vec![false; lbns as usize];
        self.shadow = vec![NONE; (lbns * ppb) as usize];
        self.bound = self.compute_bound()?;
        Ok(())
    }

    /// The scheme's latency bound with this controller's transfers and decodes.
    fn compute_bound(&mut self) -> Result<LatencyBound, FtlError> {
        let chip = self.s.controller().chip().config().clone();
        let geo = self.s.geo();
        let t = chip.timing;
        let xfer = chip.page_transfer().0;
        let xfer_spare = t.transfer(geo.spare_size as usize).0;
        let decode = self
            .s
            .worst_decode(self.cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("ecc_t = {}: {e}", self.cfg.ecc_t)))?
            .0;
        let rec_decode = self
            .s
            .controller()
            .config()
            .latency
            .decode(
                controller::layout::RECORD_BYTES,
                controller::layout::RECORD_T,
                controller::layout::RECORD_T,
            )
            .0;
        let b = WaoBounds::new(&chip, 0.01).map_err(FtlError::Config)?;
        let (t_rd, t_wr, t_er) = (b.t_rd, b.t_wr, b.t_er);
        let copy = t_rd + xfer + decode + xfer + t_wr;
        let step = t_er.max(self.alpha as u64 * copy);
        let page_read = t_rd + xfer + decode;
        let write = t_wr + xfer;
        let oob = t_rd + xfer_spare + rec_decode;
        Ok(match self.kind {
            RtKind::Gftl => {
                let scan = self.ppb as u64 * oob;
                let step = step.max(scan);
                let read = scan + page_read;
                LatencyBound {
                    write_ns: write + step,
                    read_ns: read + step,
                    array_write_ns: t_er + t_wr.max(t_rd + self.ppb as u64 * t_rd),
                    u_lambda: self.ppb,
                    l_buf: self.buf_limit * self.ppb,
                    alpha: self.alpha,
                    ..LatencyBound::default()
                }
            }
            RtKind::Rftl => {
                // Table I's RFTL: an OOB read per request when the offsets live there.
                let (oob, oob_array) = if self.cfg.rftl_oob_offsets {
                    (oob, t_rd)
                } else {
                    (0, 0)
                };
                LatencyBound {
                    write_ns: oob + write + step,
                    read_ns: oob + page_read,
                    array_write_ns: (t_rd + oob_array).max(t_er + t_wr + oob_array),
                    u_lambda: self.ppb,
                    l_buf: 2 * self.ppb,
                    alpha: self.alpha,
                    ..LatencyBound::default()
                }
            }
        })
    }

    /// Which scheme.
    pub fn kind(&self) -> RtKind {
        self.kind
    }

    /// Where logical page `lpn`'s newest copy lives (`None` if unmapped or trimmed).
    pub fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        let p = *self.shadow.get(lpn as usize)?;
        (p != NONE).then(|| self.s.phys_addr(p))
    }

    /// Free blocks on each die.
    pub fn free_blocks(&self) -> Vec<usize> {
        let mut v = vec![0; self.s.geo().total_dies() as usize];
        for Reverse((_, b)) in self.free.iter() {
            v[self.s.die_of(*b) as usize] += 1;
        }
        v
    }

    /// The flat page the scheme's read path would read for `lpn` without charging
    /// anything (RAM tables; GFTL's data block by the shadow's block) — for `verify`.
    fn lookup(&self, lpn: u64) -> Option<u32> {
        let (x, o) = (
            (lpn / self.ppb as u64) as u32,
            (lpn % self.ppb as u64) as u32,
        );
        match self.kind {
            RtKind::Gftl => self.gftl_lookup(x, o, lpn),
            RtKind::Rftl => self
                .rftl_where(x, o)
                .and_then(|(p, tomb)| (!tomb).then_some(p)),
        }
    }
}

impl<S: Storage, M: ErrorModel> Ftl for RtBlockFtl<S, M> {
    crate::substrate::substrate_ftl_methods!();

    fn logical_pages(&self) -> u64 {
        self.lbns as u64 * self.ppb as u64
    }

    fn page_size(&self) -> usize {
        self.s.geo().page_size as usize
    }

    fn write_with(
        &mut self,
        now: Nanos,
        lpn: Lpn,
        data: &[u8],
        hint: DataClass,
    ) -> Result<(), FtlError> {
        self.s.powered()?;
        let (x, o) = self.locate(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_writes += 1;
        match self.kind {
            RtKind::Gftl => self.gftl_write(now, x, o, Some((data, hint))),
            RtKind::Rftl => self.rftl_write(now, x, o, Some((data, hint))),
        }
    }

    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError> {
        self.s.powered()?;
        let (x, o) = self.locate(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_reads += 1;
        match self.kind {
            RtKind::Gftl => self.gftl_read(now, x, lpn, data),
            RtKind::Rftl => self.rftl_read(now, x, o, lpn, data),
        }
    }

    fn trim(&mut self, now: Nanos, lpn: Lpn) -> Result<(), FtlError> {
        self.s.powered()?;
        let (x, o) = self.locate(lpn)?;
        self.s.counters_mut().trims += 1;
        // What RAM can tell is not mapped needs no tombstone (GFTL cannot tell what its
        // data block holds without reading it: it writes one whenever the block exists).
        let mapped = match self.kind {
            RtKind::Gftl => {
                self.map[x as usize].d != NONE || self.buf.get(&lpn.get()).is_some_and(|e| !e.tomb)
            }
            RtKind::Rftl => self.rftl_where(x, o).is_some_and(|(_, tomb)| !tomb),
        };
        if !mapped {
            return Ok(());
        }
        self.s.counters_mut().trimmed_pages += 1;
        match self.kind {
            RtKind::Gftl => self.gftl_write(now, x, o, None),
            RtKind::Rftl => self.rftl_write(now, x, o, None),
        }
    }

    fn flush(&mut self, _now: Nanos) -> Result<(), FtlError> {
        self.s.powered()?;
        // Every write was programmed before it returned (SLC: no exposed pages).
        self.s.counters_mut().flushes += 1;
        crate::debug_verify("flush", || self.verify());
        Ok(())
    }

    fn tick(&mut self, _now: Nanos) -> Result<bool, FtlError> {
        self.s.powered()?;
        Ok(false)
    }

    fn latency_bound(&self) -> Option<LatencyBound> {
        Some(self.bound)
    }
}
