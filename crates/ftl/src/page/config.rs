//! [`PageFtlConfig`]: the page-level FTL's settings (over-provisioning, policies, ECC,
//! metadata region and map), and the region and map block lists derived from them.

use super::{paged, replica};
use crate::policy::{CopyOrderKind, PacingKind, PlacementKind};
use crate::substrate::WearLevelConfig;
use crate::victim::VictimKind;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// Configuration of [`PageFtl`](super::PageFtl).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageFtlConfig {
    /// Fraction of the physical capacity hidden from the host (0 < op < 1).
    pub over_provisioning: f64,
    /// With a real-time pacing (WAO-GC), a format that finds `over_provisioning` too small
    /// for the bound raises it in steps of 0.01 (up to 0.9) to the first value the bound
    /// holds at, instead of refusing (the combined profile's default; a mount keeps the
    /// size its checkpoint records). Off: the value is taken as given or refused.
    pub auto_over_provisioning: bool,
    /// Foreground GC runs on a die while it has fewer free blocks than this (≥ 2). With 2,
    /// a GC job may take a die's last free block, and a power cut in that job can leave a
    /// full volume with nothing to copy into after recovery; 3 (the default) keeps one in
    /// reserve across any cut (the crash tests run with 3).
    pub gc_threshold: u32,
    /// Victim policy.
    pub victim: VictimKind,
    /// Placement policy (`"striped"`, `"hint-streams"` or AP's `"msb-critical"`).
    pub placement: PlacementKind,
    /// Which valid page of a victim GC copies next (`"ascending"` or AP's
    /// `"asymmetric"`).
    pub copy_order: CopyOrderKind,
    /// GC pacing (`"foreground"`, or `{ incremental = { steps = N } }`).
    pub gc_pacing: PacingKind,
    /// With `gc_pacing = "wao-gc"`, how its α (copies per partial step) is derived:
    /// `"array"` (the paper's eq. 4, the default) or `"charged"` (each copy's transfers and
    /// decode counted too, so a step never outlasts an erase; see
    /// [`AlphaRule`](crate::rt_bounds::AlphaRule)).
    pub wao_alpha: crate::rt_bounds::AlphaRule,
    /// Static wear levelling (off when `None`; in a file `wear_leveling = false`).
    #[serde(with = "crate::substrate::wear_leveling_toggle")]
    pub wear_leveling: Option<WearLevelConfig>,
    /// BCH correction capability of every page (with `ecc = "fixed"`), of metadata pages
    /// (with FLARES).
    pub ecc_t: u32,
    /// The ECC-strength policy: `"fixed"` (every page at `ecc_t`) or
    /// `{ flares = { … } }` (FLARES: per-page strength, rewrite alarms, scrub).
    pub ecc: crate::policy::EccKind,
    /// A GC or relocation read that does not decode is retried (the page sensed again, as
    /// a controller's read-retry does) up to this many times before its page counts as
    /// lost; each retry is a charged read (`read_retries`). Host reads are not retried:
    /// their failures are reported as they happen (what AP and FLARES count).
    pub read_retries: u32,
    /// Meta-Cure: every critical host write also programs this many backup copies, each
    /// in another block (the next dies' cold frontiers); a read whose page does not decode
    /// reads them; GC moves them; recovery restores them (see the `replica` module). 0 (the
    /// default): none; at most [`MAX_REPLICAS`](super::MAX_REPLICAS).
    pub replicas: u32,
    /// Meta-Cure: when a critical read reads its replicas (see [`ReplicaReads`]).
    pub replica_reads: ReplicaReads,
    /// A flush writes a new checkpoint once this many blocks have been opened since the
    /// last one (bounds roll-forward recovery; with a real-time pacing, on any one die:
    /// the young blocks its bound leaves out of σ per die — more while the die's free
    /// blocks or the valid pages outside them allow (`Substrate::settle_young`) —, and a
    /// checkpoint is also written in steps beside the writes before a die would open more
    /// than that); 0 = automatic: 4 per die, or as many
    /// blocks as hold 4 checkpoint bodies if that is more (a checkpoint then costs at most
    /// a fifth of the pages programmed between two, and roll-forward reads at most ~4×
    /// what loading it reads).
    pub checkpoint_interval: u32,
    /// Blocks per die reserved for checkpoints; 0 = enough for two checkpoints and a trim
    /// log, computed from the geometry.
    pub region_blocks_per_die: u32,
    /// How [`PageFtl::mount`](super::PageFtl::mount) rebuilds the volume.
    pub recovery: crate::RecoveryKind,
    /// The flush buffer (multi-level chips): while flushes come on average every fewer host
    /// pages than the pairing window, new host blocks open in SLC mode — nothing exposed,
    /// so a flush pads nothing — and GC later folds what survives into native blocks (an
    /// SLC cache for small synchronous writes). Off: every flush pads MLC blocks. With a
    /// real-time pacing (one destination for writes and copies) an SLC-mode destination
    /// opens only while the die keeps a free block beyond the reserve once it is taken, so
    /// GC always collects into a native block (`Substrate::opens_slc`).
    pub flush_buffer: bool,
    /// How the checkpoint region's units (checkpoints, trim and roll-forward log) reach
    /// flash: `"whole-page"` (a page each) or `"subpage"` (SPFTL's subpage programming: a
    /// subpage each, on chips with subpages; the region takes that many times the blocks).
    pub meta_writer: crate::policy::MetaWriterKind,
    /// The map store: 0 (the default) keeps the whole logical-to-physical map in RAM;
    /// N > 0 pages it on demand (DFTL's translation pages, see the `paged` module): N
    /// translation pages (a metadata unit of entries each) cached in RAM, every one in the
    /// map partition's blocks, read on a miss and written back when a dirty one is evicted
    /// (both charged as metadata operations); a checkpoint then carries the directory and
    /// the dirty cached pages instead of the map.
    pub map_cache_pages: u32,
    /// Blocks per die reserved for translation pages (with `map_cache_pages` > 0); 0 =
    /// automatic: room for the map twice, plus three blocks, plus the write-backs of one
    /// automatic checkpoint interval (4 blocks per die of pages, at most 1/16 of the die).
    pub map_blocks_per_die: u32,
    /// Entries per translation page; 0 = as many as a metadata unit holds (4 bytes each).
    /// Fewer make a finer-grained cache (a miss loads, an eviction writes, fewer
    /// neighbours; each translation page still takes a unit), and let small test chips hold
    /// many translation pages.
    pub map_tp_entries: u32,
    /// SPFTL_log over the demand-paged map (with `map_cache_pages` > 0, on chips with
    /// subpages): a dirty translation page whose changed entries (with those its current
    /// log holds) fit a subpage is written back as a *log* — a subpage of (index, entry)
    /// pairs in the map-log partition's SP blocks — instead of a whole page; a miss reads
    /// the page and its log (see the `paged` module).
    pub map_log: bool,
    /// A deliberate bug (test builds with the `sabotage` feature only).
    #[cfg(feature = "sabotage")]
    #[serde(skip)]
    pub sabotage: crate::sabotage::Sabotage,
}

impl PageFtlConfig {
    /// The checkpoint region of a chip: flat block indices, in use order (block `i` of every
    /// die, then `i + 1`, …). Depends only on the chip and FTL configuration, so format and
    /// mount agree; a simulator in digest mode keeps these blocks' bytes.
    pub fn region_blocks(&self, chip: &nand::ChipConfig) -> Vec<u32> {
        let geo = chip.geometry;
        let ndies = geo.total_dies() as u64;
        let blocks = geo.total_blocks() as u64;
        let logical =
            (geo.total_pages() as f64 * (1.0 - self.over_provisioning.clamp(0.0, 1.0))) as u64;
        // Header, frontiers, block states and erase counts, the map, the critical pages (at
        // most a bitmap).
        let bytes = 32
            + ndies * 16
            + blocks * 5
            + logical * 4
            + 8
            + logical / 8
            + replica::worst_case_bytes(geo.total_pages(), self.replicas)
            + match self.ecc {
                // FLARES's stash at shutdown: 3 bytes per physical page, and the (then
                // always written) replica section's count.
                crate::policy::EccKind::Flares(_) => 12 + 3 * geo.total_pages(),
                crate::policy::EccKind::Fixed => 0,
            };
        // A unit is a page, or a subpage (one per page of an SP block per erase).
        let unit = geo.page_size as u64 / self.meta_writer.units_per_page(&geo) as u64;
        // Two generations, a block of trim log, a spare for a bad block.
        let per_die = self.region_blocks_per_die;
        crate::substrate::region::layout(chip, per_die, bytes, unit, 2)
    }

    /// The map partition of a chip (translation pages of a demand-paged map; empty with the
    /// map in RAM): flat block indices, the blocks after the configured region on every die.
    /// Depends only on the chip and FTL configuration, like [`region_blocks`](Self::region_blocks).
    pub fn map_blocks(&self, chip: &nand::ChipConfig) -> Vec<u32> {
        if self.map_cache_pages == 0 {
            return Vec::new();
        }
        let geo = chip.geometry;
        let ndies = geo.total_dies().max(1);
        let bpd = geo.planes_per_die * geo.blocks_per_plane;
        let region = self.region_blocks_per_die_effective(chip);
        let per_die = if self.map_blocks_per_die > 0 {
            self.map_blocks_per_die
        } else {
            self.auto_map_partition_per_die(chip)
        };
        let per_die = per_die.min(bpd.saturating_sub(region));
        (0..per_die)
            .flat_map(|i| (0..ndies).map(move |d| d * bpd + region + i))
            .collect()
    }

    /// The map-log partition of a chip (SPFTL_log's logs of a demand-paged map with
    /// `map_log`; empty otherwise): flat block indices, the blocks after the map partition
    /// on every die, sized like the automatic map partition (a log at most per translation
    /// page; `map_blocks_per_die` sizes the map partition only).
    pub fn map_log_blocks(&self, chip: &nand::ChipConfig) -> Vec<u32> {
        if self.map_cache_pages == 0 || !self.map_log {
            return Vec::new();
        }
        let geo = chip.geometry;
        let ndies = geo.total_dies().max(1);
        let bpd = geo.planes_per_die * geo.blocks_per_plane;
        let before =
            self.region_blocks_per_die_effective(chip) + self.map_blocks(chip).len() as u32 / ndies;
        let per_die = self
            .auto_map_partition_per_die(chip)
            .min(bpd.saturating_sub(before));
        (0..per_die)
            .flat_map(|i| (0..ndies).map(move |d| d * bpd + before + i))
            .collect()
    }

    /// The automatic size of a map partition per die (the map's, or its logs'; one slot per
    /// translation page or log, whose slots are LSB pages either way): room for every
    /// translation page twice, plus three blocks, plus what one automatic checkpoint
    /// interval (4 blocks per die) can write back — a translation page per page written at
    /// most — before the next checkpoint frees the versions the last one pins (at most 1/16
    /// of the die).
    fn auto_map_partition_per_die(&self, chip: &nand::ChipConfig) -> u32 {
        let geo = chip.geometry;
        let ndies = geo.total_dies().max(1);
        let bpd = geo.planes_per_die * geo.blocks_per_plane;
        let (per_tp, slots) = paged::shape(chip, self.meta_writer, self.map_tp_entries);
        let logical =
            (geo.total_pages() as f64 * (1.0 - self.over_provisioning.clamp(0.0, 1.0))) as u64;
        let tps = logical.div_ceil(per_tp as u64);
        let blocks = (2 * tps).div_ceil(slots as u64) + 3;
        let interval = (4 * geo.pages_per_block).div_ceil(slots).min(bpd / 16);
        blocks.div_ceil(ndies as u64) as u32 + interval
    }

    /// Blocks per die the checkpoint region takes on `chip` (the configured number, or the
    /// computed default).
    pub fn region_blocks_per_die_effective(&self, chip: &nand::ChipConfig) -> u32 {
        self.region_blocks(chip).len() as u32 / chip.geometry.total_dies().max(1)
    }
}

impl PageFtlConfig {
    /// The strongest t any page of this volume is programmed with: `ecc_t`, or an adaptive
    /// policy's upper limit (FLARES's `t_max`) — what a copy's decode is bounded by.
    pub fn strongest_t(&self) -> u32 {
        match self.ecc {
            crate::policy::EccKind::Fixed => self.ecc_t,
            crate::policy::EccKind::Flares(f) => f.t_max.max(self.ecc_t),
        }
    }
}

impl Default for PageFtlConfig {
    fn default() -> Self {
        PageFtlConfig {
            over_provisioning: 0.125,
            auto_over_provisioning: false,
            gc_threshold: 3,
            victim: VictimKind::Greedy,
            placement: PlacementKind::Striped,
            copy_order: CopyOrderKind::Ascending,
            gc_pacing: PacingKind::Foreground,
            wao_alpha: crate::rt_bounds::AlphaRule::Array,
            wear_leveling: Some(WearLevelConfig {
                spread: 64,
                check_every: 32,
            }),
            ecc_t: 8,
            ecc: crate::policy::EccKind::Fixed,
            read_retries: 2,
            replicas: 0,
            replica_reads: ReplicaReads::OnFailure,
            checkpoint_interval: 0,
            region_blocks_per_die: 0,
            recovery: crate::RecoveryKind::RollForward,
            flush_buffer: true,
            meta_writer: crate::policy::MetaWriterKind::WholePage,
            map_cache_pages: 0,
            map_blocks_per_die: 0,
            map_tp_entries: 0,
            map_log: false,
            #[cfg(feature = "sabotage")]
            sabotage: crate::sabotage::Sabotage::None,
        }
    }
}

/// When a read of a critical page with replicas (Meta-Cure) reads them.
///
/// The AP paper (§5.3, Fig. 12) describes Meta-Cure as reading "one or more redundant backup
/// pages for critical pages to restore the damaged metadata", with read response "over two
/// times longer" than the Baseline's at 1000 P/E, where few reads fail: its backups are read
/// on every critical read, not only after a failure. Meta-Cure's own paper (Wang et al.,
/// DAC 2012) is not available to us; `always` follows the AP paper's account of it, and
/// `on-failure` is the cheaper reading a firmware engineer would try first. Either way the
/// read succeeds when any copy decodes (copies are compared whole pages, not sector by
/// sector).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplicaReads {
    /// Replicas are read only when the primary does not decode.
    #[default]
    OnFailure,
    /// Every critical read reads the primary and every replica (each read charged).
    Always,
}
