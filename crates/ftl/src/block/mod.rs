//! The block-level mapping kernel (DCR's setting, Ref. 004; also what GFTL and RFTL build
//! on): a tiny RAM map for the small controllers of embedded devices.
//!
//! ## Mapping
//!
//! Logical page `l` is offset `l % ppb` of logical block `l / ppb`. Each mapped logical
//! block has a **primary** block, whose page `o` holds offset `o` (fixed offsets), and at
//! most one **replacement** block, whose pages are appended in order, each naming its
//! offset in its OOB record: the newest copy of an offset in the replacement wins over the
//! primary. A host write of offset `o` goes to the primary when the chip lets it (its
//! ascending-program rule: `o` at or after the primary's write pointer; on multi-level
//! chips the primary fills without gaps — the pages between its write pointer and `o`,
//! at most the pairing window of them, are padded — because an upper page needs its lower
//! partners programmed), else it is appended to the replacement. A trim appends a
//! *tombstone* (a page whose record marks the offset trimmed) to the replacement.
//!
//! **Merge** (GC): when the replacement is full, every valid offset (the replacement's
//! newest copy, else the primary's page) is copied, in offset order and together with the
//! host page that triggered it, into a new primary; the last page copied carries a *last*
//! flag, the commit point recovery looks for; then the old primary and replacement go.
//!
//! **Block allocation is deterministic** (what DCR replays). At every checkpoint the free
//! blocks, sorted by (erase count, index), are split into three lists: the **hot block
//! list** (the `hot_blocks` most worn, which only wear levelling takes), the **spare free
//! block list** (the `spare_blocks` before them, which only a merge takes, and only when
//! the regular list is exhausted — the paper's *special GC*), and the **regular list**
//! (the rest, least worn first: dynamic wear levelling). Until the next checkpoint each
//! list is consumed in order; a block freed in between is not reused before it.
//!
//! **Erases.** A merge or wear-levelling victim allocated before the last checkpoint is
//! erased at once (recovery infers that erase: Alg. 3.1/3.2's "+1"). One allocated since
//! (*young*) is not: it becomes *dead* until the next checkpoint, which lists it free with
//! a *needs-erase* flag (erased when next allocated). So no list has an erased block
//! before its last allocated one, and recovery may stop each list at its first empty
//! block (the paper scans the two reserved lists to their ends). A merge that finds no
//! valid page leaves no new block to say so: its victims are kept dead as well (a
//! recovery that maps the logical block to them again reads the same tombstones).
//!
//! **Wear levelling** (static): every `check_every` erases, if the spread of erase counts
//! exceeds `spread`, the least-worn primary (allocated before the checkpoint, no
//! replacement) is copied into the next hot-list block and erased: cold data onto a worn
//! block, a little-worn block back into the pool.
//!
//! **Checkpoints** (periodic: every `checkpoint_interval` block allocations, and when the
//! regular list runs out) store every block's role, logical block, write pointer, erase
//! count and needs-erase flag, the pages known torn, and the sequence counter, in the
//! substrate's checkpoint region; the map and the lists are derived from them.
//!
//! **Page state inside blocks is derived on demand.** The checkpoint does not record
//! which offsets a replacement holds; after a mount every mapped block is *unresolved*
//! and is scanned (charged spare reads, cause `mount`) the first time it is touched: the
//! replacement's records give its offset table, the write pointer is found, and the last
//! programmed page (and, on multi-level chips, its lower partners) is read in full — a
//! page that fails is the one a power cut tore, and reads as never written.
//!
//! **Durability.** A data page is durable when programmed (its record names logical page,
//! role and sequence); `flush` only seals multi-level blocks (pads the upper partners of
//! lower pages programmed since, so a later upper-page program cannot scramble them).
//!
//! Recovery (`recovery`): DCR (checkpoint + the three lists in allocation order) or the
//! version-based full scan; both end in the same replay and agree block for block.
//!
//! RAM: 8 bytes per logical block (primary, replacement), 8 per physical block (role and
//! flags, logical block, write pointer; plus the substrate's erase count), and `2 · ppb`
//! bytes per replacement's offset table.
//!
//! ## What it takes from the substrate, and what it keeps
//!
//! From the substrate (`Substrate::block_level`): the one flash path (`sense`,
//! `program_kept` — a failed program marks the block bad, a refused one is skipped —
//! `erase_block`, charged header reads), the op log and counters, the
//! erase-count mirror and block states (through the asserted mutators: `adopt_*` at
//! mount, `set_state` to `Bad`), sealing's pairing tables, and the checkpoint region
//! (a checkpoint is a region generation). Of its own: allocation from DCR's lists (the
//! spare free list, the hot list and the free pool, in the order its checkpoint records —
//! DCR's recovery replays exactly that order, which the substrate's erase-count heaps do
//! not keep), merges in place of GC (validity is per offset, in a replacement's table,
//! not a per-block count a victim index could order), and its role table (`blk`).

mod io;
mod merge;
pub(crate) mod recovery;
mod resolve;
mod snapshot;
#[cfg(test)]
mod tests;

use crate::recovery::{RecoveryKind, RecoveryReport};
use crate::substrate::meta::WholePage;
use crate::substrate::region::Region;
use crate::substrate::{BState, Substrate, SubstrateConfig};
use crate::{Ftl, FtlError, Invariant, MountFailure, WearLevelConfig};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use controller::{Controller, DataClass};
use nand::{ErrorModel, Lpn, Nanos, PhysAddr, Storage};
use serde::{Deserialize, Serialize};

/// No block.
pub(crate) const NONE: u32 = u32::MAX;

/// Packing of a data page's record `lpn` field: the logical page in the low 40 bits and
/// these flags above it.
pub(crate) mod rec {
    /// The logical page.
    pub const LPN: u64 = (1 << 40) - 1;
    /// The page is in a replacement block (appended; it names its offset).
    pub const REPL: u64 = 1 << 40;
    /// Written by a merge or wear-levelling copy into a new primary.
    pub const MERGE: u64 = 1 << 41;
    /// The last page of that copy (its commit point).
    pub const LAST: u64 = 1 << 42;
    /// A trim: the offset holds nothing.
    pub const TOMB: u64 = 1 << 43;
}

/// Entry of a replacement's offset table: the flag of a tombstone.
pub(crate) const ROFF_TOMB: u16 = 0x8000;

/// Configuration of [`BlockFtl`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlockFtlConfig {
    /// Fraction of the data blocks not mapped to logical blocks (0 < op < 1): they hold
    /// replacements, the two reserved lists and the free pool.
    pub over_provisioning: f64,
    /// Share of the data blocks the spare free block list and the hot block list take
    /// together when their lengths are not given (the paper: about 1 %), split evenly.
    pub lists: f64,
    /// Length of the spare free block list (phase 2; at least 1).
    pub spare_blocks: Option<u32>,
    /// Length of the hot block list (phase 3; at least 1).
    pub hot_blocks: Option<u32>,
    /// A checkpoint is written after this many block allocations (≥ 1).
    pub checkpoint_interval: u32,
    /// Static wear levelling (off when `None`).
    pub wear_leveling: Option<WearLevelConfig>,
    /// BCH correction capability of every page.
    pub ecc_t: u32,
    /// How a mount rebuilds the volume: `roll-forward` (alias `dcr`) is DCR, `full-scan`
    /// (alias `version-based`) the version-based scan.
    pub recovery: RecoveryKind,
    /// Blocks per die reserved for checkpoints; 0 = computed from the geometry.
    pub region_blocks_per_die: u32,
}

impl Default for BlockFtlConfig {
    fn default() -> Self {
        BlockFtlConfig {
            over_provisioning: 0.1,
            lists: 0.01,
            spare_blocks: None,
            hot_blocks: None,
            checkpoint_interval: 32,
            wear_leveling: Some(WearLevelConfig {
                spread: 64,
                check_every: 64,
            }),
            ecc_t: 8,
            recovery: RecoveryKind::RollForward,
            region_blocks_per_die: 0,
        }
    }
}

impl BlockFtlConfig {
    /// The checkpoint region (flat block indices, in use order: block `i` of every die,
    /// then `i + 1`, …); depends only on the chip and this configuration.
    pub fn region_blocks(&self, chip: &nand::ChipConfig) -> Vec<u32> {
        let geo = chip.geometry;
        let bytes = snapshot::worst_case_bytes(geo.total_blocks() as u64);
        // Two generations and a spare for a block gone bad.
        let unit = geo.page_size as u64;
        crate::substrate::region::layout(chip, self.region_blocks_per_die, bytes, unit, 1)
    }

    /// (spare, hot) list lengths for `data_blocks` data blocks.
    fn list_lengths(&self, data_blocks: u64) -> (u32, u32) {
        let share = libm::round(data_blocks as f64 * self.lists.max(0.0) / 2.0) as u32;
        (
            self.spare_blocks.unwrap_or(share.max(1)),
            self.hot_blocks.unwrap_or(share.max(1)),
        )
    }
}

/// What a physical block is to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// In the free pool (erased, unless `needs_erase`).
    Free,
    /// A logical block's primary.
    Primary,
    /// A logical block's replacement.
    Replacement,
    /// Collected since the last checkpoint but not erased (allocated since it, or an
    /// emptied merge's victim): free at the next checkpoint.
    Dead,
    /// Bad (factory or grown).
    Bad,
    /// Checkpoint region.
    Region,
}

/// Per physical block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Blk {
    pub role: Role,
    /// Logical block (primaries and replacements).
    pub lbn: u32,
    /// Write pointer: the lowest page the chip still lets the kernel program.
    pub next: u16,
    /// Free but holding data: erased when allocated.
    pub needs_erase: bool,
    /// Allocated since the last checkpoint.
    pub young: bool,
    /// Not scanned since the mount: write pointer and offsets unknown.
    pub unresolved: bool,
}

impl Blk {
    const FREE: Blk = Blk {
        role: Role::Free,
        lbn: NONE,
        next: 0,
        needs_erase: false,
        young: false,
        unresolved: false,
    };
}

/// A logical block's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub p: u32,
    pub r: u32,
}

/// Which list an allocation may take from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// A new primary or replacement: the regular list.
    Fresh,
    /// A merge's new primary: the regular list, else the spare free block list.
    Merge,
    /// Wear levelling: the hot block list.
    Wl,
}

/// The three allocation lists of the current checkpoint, and how far each is used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lists {
    pub q: Vec<u32>,
    pub s: Vec<u32>,
    pub h: Vec<u32>,
    pub qi: usize,
    pub si: usize,
    pub hi: usize,
}

impl Lists {
    /// The lists a checkpoint with these block states and erase counts defines.
    pub fn derive(blk: &[Blk], erase: &[u32], spare: u32, hot: u32) -> Lists {
        let mut free: Vec<u32> = (0..blk.len() as u32)
            .filter(|&b| blk[b as usize].role == Role::Free)
            .collect();
        free.sort_unstable_by_key(|&b| (erase[b as usize], b));
        // When blocks have gone bad and few are free, the reserved lists shrink first: the
        // regular list keeps one block, the spare list one, before the hot list takes any.
        let n = free.len();
        let h_len = (hot as usize).min(n.saturating_sub(2));
        let h = free.split_off(n - h_len);
        let s_len = (spare as usize).min(free.len().saturating_sub(1));
        let s = free.split_off(free.len() - s_len);
        Lists {
            q: free,
            s,
            h,
            qi: 0,
            si: 0,
            hi: 0,
        }
    }

    /// Blocks still to be handed out to host writes and merges.
    pub fn left(&self) -> usize {
        (self.q.len() - self.qi) + (self.s.len() - self.si)
    }
}

/// The block-level mapping FTL (see the module docs).
pub struct BlockFtl<S: Storage, M: ErrorModel> {
    pub(crate) s: Substrate<S, M>,
    pub(crate) cfg: BlockFtlConfig,
    pub(crate) region: Region<S, M>,
    /// Logical blocks.
    pub(crate) lbns: u32,
    pub(crate) map: Vec<Entry>,
    pub(crate) blk: Vec<Blk>,
    /// Replacement block → per offset: its newest page there + 1 (0: none), with
    /// [`ROFF_TOMB`] for a tombstone.
    pub(crate) roff: BTreeMap<u32, Vec<u16>>,
    /// Flat pages a power cut tore (read as never written) in blocks not erased since.
    pub(crate) torn: BTreeSet<u32>,
    pub(crate) lists: Lists,
    pub(crate) spare_len: u32,
    pub(crate) hot_len: u32,
    pub(crate) allocs_since_cp: u32,
    /// Blocks collected since the last checkpoint (a checkpoint returns them to the lists).
    pub(crate) freed_since_cp: u32,
    /// Blocks programmed since the last flush (multi-level sealing).
    pub(crate) touched: Vec<u32>,
    pub(crate) erases_since_wl: u32,
    pub(crate) recovery: Option<RecoveryReport>,
    /// Zeros: tombstones and pads.
    pub(crate) zeros: Vec<u8>,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for BlockFtl<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BlockFtl")
            .field("lbns", &self.lbns)
            .field("cfg", &self.cfg)
            .finish()
    }
}

impl<S: Storage, M: ErrorModel> BlockFtl<S, M> {
    /// Formats the chip behind `ctl` and builds an empty volume.
    pub fn format(
        ctl: Controller<S, M>,
        cfg: BlockFtlConfig,
        now: Nanos,
    ) -> Result<Self, FtlError> {
        let mut ctl = ctl;
        Self::check_config(&mut ctl, &cfg)?;
        let mut ftl = Self::empty(ctl, cfg);
        let multi = ftl.s.controller().chip().config().cell != nand::CellType::Slc;
        for b in 0..ftl.s.geo().total_blocks() {
            let in_region = ftl.blk[b as usize].role == Role::Region;
            let Some(info) = ftl.s.format_block(now, b)? else {
                ftl.set_bad(b);
                continue;
            };
            if multi && info.slc_mode != in_region {
                ftl.s.set_slc_mode(b, in_region)?;
            }
        }
        ftl.size_volume(None)?;
        ftl.region.init_anchor(&mut ftl.s, now)?;
        ftl.write_checkpoint(now, false)?;
        crate::debug_verify("format", || ftl.verify());
        Ok(ftl)
    }

    /// Mounts a volume with the configured recovery procedure.
    pub fn mount(ctl: Controller<S, M>, cfg: BlockFtlConfig, now: Nanos) -> Result<Self, FtlError> {
        Self::try_mount(ctl, cfg, now).map_err(|f| f.error)
    }

    /// Like [`mount`](BlockFtl::mount), handing the controller back on failure.
    pub fn try_mount(
        ctl: Controller<S, M>,
        cfg: BlockFtlConfig,
        now: Nanos,
    ) -> Result<Self, alloc::boxed::Box<MountFailure<S, M>>> {
        let mut ctl = ctl;
        if let Err(error) = Self::check_config(&mut ctl, &cfg) {
            return Err(MountFailure::boxed(error, ctl));
        }
        let mut ftl = Self::empty(ctl, cfg);
        let recovered = recovery::recover(&mut ftl, now, cfg.recovery);
        ftl.mounted(recovered, true)
    }

    /// Rejects what this kernel cannot run with, naming the key.
    fn check_config(ctl: &mut Controller<S, M>, cfg: &BlockFtlConfig) -> Result<(), FtlError> {
        if !(cfg.over_provisioning > 0.0 && cfg.over_provisioning < 1.0) {
            return Err(FtlError::Config(format!(
                "over_provisioning = {} must be in (0, 1)",
                cfg.over_provisioning
            )));
        }
        if cfg.checkpoint_interval == 0 {
            return Err(FtlError::Config(
                "checkpoint_interval = 0: a checkpoint must come after at least one block allocation"
                    .into(),
            ));
        }
        for (key, v) in [
            ("spare_blocks", cfg.spare_blocks),
            ("hot_blocks", cfg.hot_blocks),
        ] {
            if v == Some(0) {
                return Err(FtlError::Config(format!(
                    "{key} = 0: DCR's list needs at least one block"
                )));
            }
        }
        if let Some(wl) = cfg.wear_leveling {
            if wl.check_every == 0 {
                return Err(FtlError::Config(
                    "wear_leveling.check_every = 0 must be at least 1".into(),
                ));
            }
        }
        ctl.layout(cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("ecc_t = {}: {e}", cfg.ecc_t)))?;
        let ppb = ctl.chip().geometry().pages_per_block;
        if ppb >= ROFF_TOMB as u32 {
            return Err(FtlError::Config(format!(
                "{ppb} pages per block exceed the block-level kernel's 15-bit offsets"
            )));
        }
        Ok(())
    }

    fn empty(ctl: Controller<S, M>, cfg: BlockFtlConfig) -> Self {
        let geo = *ctl.chip().geometry();
        let chip_cfg = ctl.chip().config().clone();
        let scfg = SubstrateConfig {
            gc_threshold: 2,
            young_rule: true,
            ..SubstrateConfig::block_level(cfg.ecc_t)
        };
        let mut s = Substrate::block_level(ctl, scfg);
        let writer = alloc::boxed::Box::new(WholePage::new(&s));
        let mut region = Region::new(cfg.region_blocks(&chip_cfg), writer);
        region.fit_anchor(&s);
        let nblocks = geo.total_blocks() as usize;
        let mut blk = vec![Blk::FREE; nblocks];
        for b in 0..nblocks {
            // Data blocks are `Free` to the substrate (its own indexes stay empty: the
            // kernel allocates), region blocks `Region`.
            s.adopt_state(b as u32, BState::Free);
        }
        for b in region.all_blocks() {
            s.adopt_state(b, BState::Region);
            blk[b as usize].role = Role::Region;
        }
        let digest = s.digest;
        BlockFtl {
            zeros: vec![0; if digest { 0 } else { geo.page_size as usize }],
            s,
            cfg,
            region,
            lbns: 0,
            map: Vec::new(),
            blk,
            roff: BTreeMap::new(),
            torn: BTreeSet::new(),
            lists: Lists::default(),
            spare_len: 0,
            hot_len: 0,
            allocs_since_cp: 0,
            freed_since_cp: 0,
            touched: Vec::new(),
            erases_since_wl: 0,
            recovery: None,
        }
    }

    /// Marks block `b` bad (kernel and substrate).
    pub(crate) fn set_bad(&mut self, b: u32) {
        self.blk[b as usize] = Blk {
            role: Role::Bad,
            ..Blk::FREE
        };
        self.s.set_state(b, BState::Bad);
    }

    /// Good data blocks.
    fn data_blocks(&self) -> u64 {
        self.blk
            .iter()
            .filter(|b| !matches!(b.role, Role::Bad | Role::Region))
            .count() as u64
    }

    /// Sizes the volume from the good data blocks (or to `fixed` logical blocks, a
    /// mounted volume's) and the list lengths; errors name the key.
    pub(crate) fn size_volume(&mut self, fixed: Option<u32>) -> Result<(), FtlError> {
        let data = self.data_blocks();
        let (spare, hot) = self.cfg.list_lengths(data);
        let lbns = fixed.unwrap_or((data as f64 * (1.0 - self.cfg.over_provisioning)) as u32);
        // A merge needs a block to copy into, one more should it fail, and a new
        // replacement another.
        const MIN_FREE: u64 = 3;
        let pool = data.saturating_sub(lbns as u64);
        if lbns == 0 || pool < MIN_FREE + 1 {
            return Err(FtlError::Config(format!(
                "over_provisioning = {}: a block-level FTL on {data} good data blocks needs at least {} blocks beside its {lbns} logical blocks",
                self.cfg.over_provisioning,
                MIN_FREE + 1
            )));
        }
        if (spare + hot) as u64 + MIN_FREE > pool {
            let key = if self.cfg.spare_blocks.is_some() || self.cfg.hot_blocks.is_none() {
                "spare_blocks"
            } else {
                "hot_blocks"
            };
            return Err(FtlError::Config(format!(
                "{key}: spare_blocks = {spare} and hot_blocks = {hot} exceed the free pool of {pool} blocks (less {MIN_FREE} a merge needs); raise over_provisioning or shorten the lists"
            )));
        }
        self.lbns = lbns;
        self.map = vec![Entry { p: NONE, r: NONE }; lbns as usize];
        self.spare_len = spare;
        self.hot_len = hot;
        Ok(())
    }

    /// Pages per block.
    #[inline]
    pub(crate) fn ppb(&self) -> u32 {
        self.s.ppb()
    }

    /// Where logical page `lpn` lives, as far as RAM knows (`None` if unmapped, trimmed,
    /// or in a block not scanned since the mount).
    pub fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        let ppb = self.ppb() as u64;
        let x = lpn / ppb;
        if x >= self.lbns as u64 {
            return None;
        }
        self.where_is(x as u32, (lpn % ppb) as u32)
            .map(|p| self.s.phys_addr(p))
    }

    /// Blocks allocated since the last checkpoint (DCR's "updated blocks").
    pub fn allocated_since_checkpoint(&self) -> u32 {
        self.allocs_since_cp
    }

    /// RAM the block map takes, in bytes: the map (primary and replacement per logical
    /// block), the per-block table (role and flags, logical block, write pointer, erase
    /// count) and the replacements' offset tables.
    pub fn map_ram_bytes(&self) -> u64 {
        self.map.len() as u64 * 8
            + self.blk.len() as u64 * 12
            + self.roff.len() as u64 * (2 * self.ppb() as u64 + 8)
    }

    /// The checkpoint region's current blocks (the anchor's two first, then the rotating
    /// ones in use order): where its rotation has taken it, not the configured list.
    pub fn region_blocks(&self) -> Vec<u32> {
        self.region.all_blocks().collect()
    }

    /// Free blocks on each die (unallocated list blocks and unlisted free blocks).
    pub fn free_blocks(&self) -> Vec<usize> {
        let mut out = vec![0; self.s.dies.len()];
        for (b, k) in self.blk.iter().enumerate() {
            if k.role == Role::Free {
                out[self.s.die_of(b as u32) as usize] += 1;
            }
        }
        out
    }

    /// Checks the kernel's invariants: every mapped logical block's primary (and
    /// replacement) is a block of that role naming it, every such block is mapped once, a
    /// replacement has a primary and (when resolved) an offset table, write pointers are
    /// within the block, list cursors within their lists and list blocks free or
    /// allocated since the checkpoint; the erase-count mirror equals the chip's.
    pub fn verify(&self) -> Result<(), Invariant> {
        let bad = |m: String| Err(Invariant::Structure(m));
        let ppb = self.ppb();
        let mut owner = vec![false; self.blk.len()];
        for (x, e) in self.map.iter().enumerate() {
            if e.r != NONE && e.p == NONE {
                return bad(format!(
                    "logical block {x} has a replacement but no primary"
                ));
            }
            for (b, role) in [(e.p, Role::Primary), (e.r, Role::Replacement)] {
                if b == NONE {
                    continue;
                }
                let k = self.blk.get(b as usize);
                if k.is_none_or(|k| k.role != role || k.lbn != x as u32) {
                    return bad(format!(
                        "logical block {x}: block {b} is {k:?}, not its {role:?}"
                    ));
                }
                if owner[b as usize] {
                    return bad(format!("block {b} mapped twice"));
                }
                owner[b as usize] = true;
            }
            if e.r != NONE && !self.blk[e.r as usize].unresolved && !self.roff.contains_key(&e.r) {
                return bad(format!("replacement {} of {x} has no offset table", e.r));
            }
        }
        for (b, k) in self.blk.iter().enumerate() {
            if matches!(k.role, Role::Primary | Role::Replacement) && !owner[b] {
                return bad(format!(
                    "block {b} is {:?} of {} but not mapped",
                    k.role, k.lbn
                ));
            }
            if k.next as u32 > ppb {
                return bad(format!(
                    "block {b}: write pointer {} past the block",
                    k.next
                ));
            }
            let region = self.s.state[b] == BState::Region;
            if region != (k.role == Role::Region) && !(k.role == Role::Bad) {
                return bad(format!(
                    "block {b}: role {:?}, substrate {:?}",
                    k.role, self.s.state[b]
                ));
            }
        }
        for r in self.roff.keys() {
            if self.blk[*r as usize].role != Role::Replacement {
                return bad(format!(
                    "offset table of block {r}, which is not a replacement"
                ));
            }
        }
        let l = &self.lists;
        if l.qi > l.q.len() || l.si > l.s.len() || l.hi > l.h.len() {
            return bad("list cursor past its list".into());
        }
        for (list, i) in [(&l.q, l.qi), (&l.s, l.si), (&l.h, l.hi)] {
            for &b in &list[i..] {
                let k = self.blk[b as usize];
                if !matches!(k.role, Role::Free | Role::Bad) {
                    return bad(format!("unallocated list block {b} is {:?}", k.role));
                }
            }
        }
        self.region.verify(&self.s).map_err(Invariant::Structure)?;
        // (Bad blocks are `Bad` to the substrate too: it skips them.)
        self.s.verify_erase_counts().map_err(Invariant::Mirror)?;
        Ok(())
    }

    /// The logical block and offset of `lpn`, or `OutOfRange`.
    fn locate(&self, lpn: Lpn) -> Result<(u32, u32), FtlError> {
        let count = self.logical_pages();
        if lpn.get() >= count {
            return Err(FtlError::OutOfRange {
                lpn: lpn.get(),
                count,
            });
        }
        let ppb = self.ppb() as u64;
        Ok(((lpn.get() / ppb) as u32, (lpn.get() % ppb) as u32))
    }
}

impl<S: Storage, M: ErrorModel> Ftl for BlockFtl<S, M> {
    crate::substrate::substrate_ftl_methods!();

    fn logical_pages(&self) -> u64 {
        self.lbns as u64 * self.ppb() as u64
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
        self.host_write(now, x, o, data, hint)
    }

    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError> {
        self.s.powered()?;
        let (x, o) = self.locate(lpn)?;
        self.s.check_buf(data.len())?;
        self.s.counters_mut().host_reads += 1;
        self.host_read(now, x, o, lpn, data)
    }

    fn trim(&mut self, now: Nanos, lpn: Lpn) -> Result<(), FtlError> {
        self.s.powered()?;
        let (x, o) = self.locate(lpn)?;
        self.s.counters_mut().trims += 1;
        self.host_trim(now, x, o)
    }

    fn flush(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.s.powered()?;
        self.s.counters_mut().flushes += 1;
        self.seal(now)?;
        crate::debug_verify("flush", || self.verify());
        Ok(())
    }

    fn shutdown(&mut self, now: Nanos) -> Result<(), FtlError> {
        self.s.powered()?;
        self.s.counters_mut().flushes += 1;
        self.seal(now)?;
        self.write_checkpoint(now, true)
    }

    fn tick(&mut self, now: Nanos) -> Result<bool, FtlError> {
        self.s.powered()?;
        if self.allocs_since_cp >= self.cfg.checkpoint_interval {
            self.write_checkpoint(now, false)?;
            return Ok(true);
        }
        if self.region.scrub_due(&mut self.s, now)? {
            // The metadata's own scrub (see `substrate::region`, "Idle-time scrub"): the
            // committed generation's oldest page needed half its code, so a new one is
            // written (and with it the anchor record). A region with no room left for one
            // (blocks gone bad) is left as it is; the next probe tries again.
            return match self.write_checkpoint(now, false) {
                Ok(()) => Ok(true),
                Err(FtlError::NoSpace) => Ok(false),
                Err(e) => Err(e),
            };
        }
        Ok(false)
    }
}
