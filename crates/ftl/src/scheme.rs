//! The scheme factory: one place that formats and mounts any FTL scheme from its
//! configuration, so simulators, harnesses and servers never name a scheme's type.
//!
//! A [`SchemeConfig`] names a scheme and carries its settings (and through them its policy
//! objects: victim choice, recovery procedure, …). [`SchemeConfig::format`] and
//! [`SchemeConfig::mount`] return a boxed [`Volume`]: the [`Ftl`] interface plus what a
//! harness needs around it (the controller, the mount's recovery report, invariant checks).
//! A new scheme is a new variant here and an implementation of [`Volume`]; no consumer
//! changes.

use crate::page::recovery::{RecoveryKind, RecoveryReport};
use crate::{
    BlockFtl, BlockFtlConfig, DftlConfig, DftlFtl, Ftl, FtlError, Invariant, MetaMode,
    MountFailure, PageFtl, PageFtlConfig, RtBlockConfig, RtBlockFtl, RtKind,
};
use alloc::boxed::Box;
use alloc::vec::Vec;
use controller::Controller;
use nand::{ChipConfig, ErrorModel, Nanos, PhysAddr, Storage};
use serde::{Deserialize, Serialize};

/// A formatted or mounted volume of any scheme.
pub trait Volume<S: Storage, M: ErrorModel>: Ftl {
    /// The scheme's name in reports.
    fn scheme(&self) -> &'static str;
    /// The controller (ECC statistics, chip).
    fn controller(&self) -> &Controller<S, M>;
    /// The controller, mutably (fault injection in tests and harnesses).
    fn controller_mut(&mut self) -> &mut Controller<S, M>;
    /// Consumes the volume, returning its controller (to remount the same chip).
    fn into_controller(self: Box<Self>) -> Controller<S, M>;
    /// What the last mount did, if this volume was mounted.
    fn recovery_report(&self) -> Option<&RecoveryReport>;
    /// Where logical page `lpn` lives (`None` if unmapped, trimmed or lost).
    fn mapping(&self, lpn: u64) -> Option<PhysAddr>;
    /// Free blocks on each die.
    fn free_blocks(&self) -> Vec<usize>;
    /// The checkpoint region's current blocks, for schemes that keep one (page and block
    /// level; empty for the others): where its rotation has taken it.
    fn region_blocks(&self) -> Vec<u32> {
        Vec::new()
    }
    /// Checks every invariant the scheme states; `Err` names the first one broken. A pass
    /// over the scheme's tables: for tests, harnesses and debug builds.
    fn verify(&self) -> Result<(), Invariant>;
}

impl<S: Storage, M: ErrorModel> Volume<S, M> for PageFtl<S, M> {
    fn scheme(&self) -> &'static str {
        "page"
    }
    fn controller(&self) -> &Controller<S, M> {
        PageFtl::controller(self)
    }
    fn controller_mut(&mut self) -> &mut Controller<S, M> {
        PageFtl::controller_mut(self)
    }
    fn into_controller(self: Box<Self>) -> Controller<S, M> {
        PageFtl::into_controller(*self)
    }
    fn recovery_report(&self) -> Option<&RecoveryReport> {
        PageFtl::recovery_report(self)
    }
    fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        PageFtl::mapping(self, lpn)
    }
    fn free_blocks(&self) -> Vec<usize> {
        PageFtl::free_blocks(self)
    }
    fn region_blocks(&self) -> Vec<u32> {
        PageFtl::region_blocks(self)
    }
    fn verify(&self) -> Result<(), Invariant> {
        PageFtl::verify(self)
    }
}

impl<S: Storage, M: ErrorModel> Volume<S, M> for BlockFtl<S, M> {
    fn scheme(&self) -> &'static str {
        "block"
    }
    fn controller(&self) -> &Controller<S, M> {
        BlockFtl::controller(self)
    }
    fn controller_mut(&mut self) -> &mut Controller<S, M> {
        BlockFtl::controller_mut(self)
    }
    fn into_controller(self: Box<Self>) -> Controller<S, M> {
        BlockFtl::into_controller(*self)
    }
    fn recovery_report(&self) -> Option<&RecoveryReport> {
        BlockFtl::recovery_report(self)
    }
    fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        BlockFtl::mapping(self, lpn)
    }
    fn free_blocks(&self) -> Vec<usize> {
        BlockFtl::free_blocks(self)
    }
    fn region_blocks(&self) -> Vec<u32> {
        BlockFtl::region_blocks(self)
    }
    fn verify(&self) -> Result<(), Invariant> {
        BlockFtl::verify(self)
    }
}

impl<S: Storage, M: ErrorModel> Volume<S, M> for RtBlockFtl<S, M> {
    fn scheme(&self) -> &'static str {
        self.kind().name()
    }
    fn controller(&self) -> &Controller<S, M> {
        RtBlockFtl::controller(self)
    }
    fn controller_mut(&mut self) -> &mut Controller<S, M> {
        RtBlockFtl::controller_mut(self)
    }
    fn into_controller(self: Box<Self>) -> Controller<S, M> {
        RtBlockFtl::into_controller(*self)
    }
    fn recovery_report(&self) -> Option<&RecoveryReport> {
        RtBlockFtl::recovery_report(self)
    }
    fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        RtBlockFtl::mapping(self, lpn)
    }
    fn free_blocks(&self) -> Vec<usize> {
        RtBlockFtl::free_blocks(self)
    }
    fn verify(&self) -> Result<(), Invariant> {
        RtBlockFtl::verify(self)
    }
}

impl<S: Storage, M: ErrorModel> Volume<S, M> for DftlFtl<S, M> {
    fn scheme(&self) -> &'static str {
        self.mode().scheme()
    }
    fn controller(&self) -> &Controller<S, M> {
        DftlFtl::controller(self)
    }
    fn controller_mut(&mut self) -> &mut Controller<S, M> {
        DftlFtl::controller_mut(self)
    }
    fn into_controller(self: Box<Self>) -> Controller<S, M> {
        DftlFtl::into_controller(*self)
    }
    fn recovery_report(&self) -> Option<&RecoveryReport> {
        DftlFtl::recovery_report(self)
    }
    fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        DftlFtl::mapping(self, lpn)
    }
    fn free_blocks(&self) -> Vec<usize> {
        DftlFtl::free_blocks(self)
    }
    fn verify(&self) -> Result<(), Invariant> {
        DftlFtl::verify(self)
    }
}

/// A boxed volume over controller `Controller<S, M>` (`Send`: a server may hand it to
/// another thread behind a lock).
pub type BoxedVolume<S, M> = Box<dyn Volume<S, M> + Send>;

/// Every scheme by name, with its settings.
///
/// In an experiment file: `[ftl] scheme = "page"` and the scheme's table (`[ftl.page]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeConfig {
    /// The page-level mapping FTL ([`PageFtl`]).
    Page(PageFtlConfig),
    /// The block-level mapping FTL ([`BlockFtl`]; DCR's setting).
    Block(BlockFtlConfig),
    /// GFTL ([`RtBlockFtl`], WAO-GC's Table I): block-level map, central write buffer and
    /// GC queue, partial steps after every request.
    Gftl(RtBlockConfig),
    /// RFTL ([`RtBlockFtl`], WAO-GC's Table I): primary, replacement and buffer block per
    /// logical block, distributed partial GC.
    Rftl(RtBlockConfig),
    /// DFTL_por ([`DftlFtl`], SPFTL's baseline): demand-paged page map (CPMT), block
    /// information (CBIT), GXT, metadata in whole SLC-mode pages.
    DftlPor(DftlConfig),
    /// SPFTL ([`DftlFtl`]): DFTL_por with every metadata unit a subpage of an SP block.
    Spftl(DftlConfig),
    /// SPFTL_log ([`DftlFtl`]): DFTL_por whose metadata updates are logged by subpages in
    /// SP logging blocks (coalesced per unit, merged when a log subpage fills).
    SpftlLog(DftlConfig),
    /// The combined profile ([`PageFtl`] configured by [`crate::combined`]: AP, FLARES,
    /// WAO-GC and roll-forward recovery together), fitted to the chip at format and mount.
    Combined(PageFtlConfig),
}

impl Default for SchemeConfig {
    fn default() -> Self {
        SchemeConfig::Page(PageFtlConfig::default())
    }
}

impl SchemeConfig {
    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        match self {
            SchemeConfig::Page(_) => "page",
            SchemeConfig::Block(_) => "block",
            SchemeConfig::Gftl(_) => "gftl",
            SchemeConfig::Rftl(_) => "rftl",
            SchemeConfig::DftlPor(_) => "dftl-por",
            SchemeConfig::Spftl(_) => "spftl",
            SchemeConfig::SpftlLog(_) => "spftl-log",
            SchemeConfig::Combined(_) => "combined",
        }
    }

    /// Formats the chip behind `ctl` with this scheme.
    pub fn format<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
    ) -> Result<BoxedVolume<S, M>, FtlError> {
        match *self {
            SchemeConfig::Page(cfg) => Ok(Box::new(PageFtl::format(ctl, cfg, now)?)),
            SchemeConfig::Block(cfg) => Ok(Box::new(BlockFtl::format(ctl, cfg, now)?)),
            SchemeConfig::Gftl(cfg) => {
                Ok(Box::new(RtBlockFtl::format(ctl, RtKind::Gftl, cfg, now)?))
            }
            SchemeConfig::Rftl(cfg) => {
                Ok(Box::new(RtBlockFtl::format(ctl, RtKind::Rftl, cfg, now)?))
            }
            SchemeConfig::DftlPor(cfg) => {
                Ok(Box::new(DftlFtl::format(ctl, MetaMode::Page, cfg, now)?))
            }
            SchemeConfig::Spftl(cfg) => {
                Ok(Box::new(DftlFtl::format(ctl, MetaMode::Subpage, cfg, now)?))
            }
            SchemeConfig::SpftlLog(cfg) => {
                Ok(Box::new(DftlFtl::format(ctl, MetaMode::Log, cfg, now)?))
            }
            SchemeConfig::Combined(cfg) => {
                let mut ctl = ctl;
                let cfg = crate::combined::fit(cfg, &mut ctl)?;
                Ok(Box::new(PageFtl::format(ctl, cfg, now)?))
            }
        }
    }

    /// Mounts a volume of this scheme after a clean shutdown or a crash.
    pub fn mount<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
    ) -> Result<BoxedVolume<S, M>, FtlError> {
        self.try_mount(ctl, now).map_err(|f| f.error)
    }

    /// Like [`mount`](SchemeConfig::mount), but a failed mount hands the controller back
    /// (to power the chip on again after a cut during recovery, or to inspect it).
    pub fn try_mount<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
    ) -> Result<BoxedVolume<S, M>, Box<MountFailure<S, M>>> {
        match *self {
            SchemeConfig::Page(cfg) => Ok(Box::new(PageFtl::try_mount(ctl, cfg, now)?)),
            SchemeConfig::Block(cfg) => Ok(Box::new(BlockFtl::try_mount(ctl, cfg, now)?)),
            SchemeConfig::Gftl(cfg) => Ok(Box::new(RtBlockFtl::try_mount(
                ctl,
                RtKind::Gftl,
                cfg,
                now,
            )?)),
            SchemeConfig::Rftl(cfg) => Ok(Box::new(RtBlockFtl::try_mount(
                ctl,
                RtKind::Rftl,
                cfg,
                now,
            )?)),
            SchemeConfig::DftlPor(cfg) => {
                Ok(Box::new(DftlFtl::try_mount(ctl, MetaMode::Page, cfg, now)?))
            }
            SchemeConfig::Spftl(cfg) => Ok(Box::new(DftlFtl::try_mount(
                ctl,
                MetaMode::Subpage,
                cfg,
                now,
            )?)),
            SchemeConfig::SpftlLog(cfg) => {
                Ok(Box::new(DftlFtl::try_mount(ctl, MetaMode::Log, cfg, now)?))
            }
            SchemeConfig::Combined(cfg) => {
                let mut ctl = ctl;
                match crate::combined::fit(cfg, &mut ctl) {
                    Ok(cfg) => Ok(Box::new(PageFtl::try_mount(ctl, cfg, now)?)),
                    Err(error) => Err(Box::new(MountFailure {
                        error,
                        controller: ctl,
                    })),
                }
            }
        }
    }

    /// The recovery procedure a mount runs (GFTL and RFTL: always the full scan; DFTL_por
    /// and SPFTL: always the GXT and the blocks written after it, reported as roll-forward).
    pub fn recovery(&self) -> RecoveryKind {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.recovery,
            SchemeConfig::Block(cfg) => cfg.recovery,
            SchemeConfig::Gftl(_) | SchemeConfig::Rftl(_) => RecoveryKind::FullScan,
            SchemeConfig::DftlPor(_) | SchemeConfig::Spftl(_) | SchemeConfig::SpftlLog(_) => {
                RecoveryKind::RollForward
            }
        }
    }

    /// Chooses the recovery procedure a mount runs (GFTL and RFTL have only the full
    /// scan: ignored).
    pub fn set_recovery(&mut self, kind: RecoveryKind) {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.recovery = kind,
            SchemeConfig::Block(cfg) => cfg.recovery = kind,
            SchemeConfig::Gftl(_)
            | SchemeConfig::Rftl(_)
            | SchemeConfig::DftlPor(_)
            | SchemeConfig::Spftl(_)
            | SchemeConfig::SpftlLog(_) => {}
        }
    }

    /// The BCH correction capability the scheme programs data pages with.
    pub fn ecc_t(&self) -> u32 {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.ecc_t,
            SchemeConfig::Block(cfg) => cfg.ecc_t,
            SchemeConfig::Gftl(cfg) | SchemeConfig::Rftl(cfg) => cfg.ecc_t,
            SchemeConfig::DftlPor(cfg) | SchemeConfig::Spftl(cfg) | SchemeConfig::SpftlLog(cfg) => {
                cfg.ecc_t
            }
        }
    }

    /// Sets the BCH correction capability of data pages.
    pub fn set_ecc_t(&mut self, t: u32) {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.ecc_t = t,
            SchemeConfig::Block(cfg) => cfg.ecc_t = t,
            SchemeConfig::Gftl(cfg) | SchemeConfig::Rftl(cfg) => cfg.ecc_t = t,
            SchemeConfig::DftlPor(cfg) | SchemeConfig::Spftl(cfg) | SchemeConfig::SpftlLog(cfg) => {
                cfg.ecc_t = t
            }
        }
    }

    /// Flat indices of the blocks whose bytes the scheme reads back as data even in a
    /// digest-mode simulation (its checkpoint region): a digest-mode store must keep them
    /// whole. Depends only on the chip and the scheme's configuration.
    pub fn keep_whole_blocks(&self, chip: &ChipConfig) -> Vec<u32> {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => {
                // The region, and a demand-paged map's partitions (its logs' too).
                let mut v = cfg.region_blocks(chip);
                v.extend(cfg.map_blocks(chip));
                v.extend(cfg.map_log_blocks(chip));
                v
            }
            SchemeConfig::Block(cfg) => cfg.region_blocks(chip),
            // No checkpoint region: records only.
            SchemeConfig::Gftl(_) | SchemeConfig::Rftl(_) => Vec::new(),
            // The metadata partitions (fixed, at the start of the chip).
            SchemeConfig::DftlPor(cfg) => crate::dftl::metadata_blocks(chip, MetaMode::Page, cfg),
            SchemeConfig::Spftl(cfg) => crate::dftl::metadata_blocks(chip, MetaMode::Subpage, cfg),
            SchemeConfig::SpftlLog(cfg) => crate::dftl::metadata_blocks(chip, MetaMode::Log, cfg),
        }
    }

    /// A digest-mode store for `chip` (a spare prefix of each page) that keeps the pages of
    /// [`keep_whole_blocks`](SchemeConfig::keep_whole_blocks) whole; blocks that join or
    /// leave the region later are switched by the scheme itself.
    pub fn digest_storage(&self, chip: &ChipConfig) -> nand::RamStorage {
        let g = chip.geometry;
        let mut mask = alloc::vec![false; g.total_blocks() as usize];
        for b in self.keep_whole_blocks(chip) {
            mask[b as usize] = true;
        }
        let prefix = match self {
            SchemeConfig::Page(p) | SchemeConfig::Combined(p)
                if matches!(p.ecc, crate::policy::EccKind::Flares(_)) =>
            {
                controller::layout::DIGEST_SPARE_BYTES_PPROF
            }
            _ => controller::layout::DIGEST_SPARE_BYTES,
        };
        nand::RamStorage::digest(&g, prefix).with_full_blocks(&g, mask)
    }
}
